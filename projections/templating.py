"""The Jinja2 environment of the HTML pages (the report, the served index): templates under
``projections/templates``, autoescape on for every template, so a value is escaped unless it is Markup
(the Markdown of a reply, ``projections.markup``, or the page's own CSS and script)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from projections import markup

OUTPUT_CHARS = 4000
"""Characters of a command's output (its end), a reply or a compaction summary shown."""

# -- folding long texts: a rule of every page ---------------------------------------------------------

FOLD_CHARS = 240
"""A text longer than this, or of more than ``FOLD_LINES`` lines, is shown as its first line and a fold."""
FOLD_LINES = 3
HEAD_CHARS = 160
BLOB_CHARS = 20_000
"""Characters of a folded text the fold holds; the rest is named, not shown (`trail log --json` has it)."""


@dataclass(frozen=True)
class Folded:
    head: str
    note: str
    whole: str


def folded(text: str | None) -> Folded | None:
    """``text`` as a first line and a fold, when it is too long to read in a list; None when it is not."""
    text = text or ""
    lines = text.splitlines()
    if len(text) <= FOLD_CHARS and len(lines) <= FOLD_LINES:
        return None
    first = next((line.strip() for line in lines if line.strip()), "")
    head = first if len(first) <= HEAD_CHARS else first[: HEAD_CHARS - 1] + "…"
    size = len(text.encode())
    note = f"{len(lines)} lines, {size / 1024:.1f} KB" if size >= 1024 else f"{len(lines)} lines, {size} B"
    whole = text[:BLOB_CHARS]
    if len(text) > BLOB_CHARS:
        whole += f"\n… {len(text) - BLOB_CHARS} more characters (trail log --json has them)"
    return Folded(head=head, note=note, whole=whole)


def clip(text: str | None, width: int = HEAD_CHARS) -> str:
    """``text`` on one line of at most ``width`` characters."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"



def _when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if at else ""


@cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("projections", "templates"), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True, undefined=StrictUndefined)
    env.filters.update(when=_when, markdown=markup.markdown, clip=clip)
    env.globals.update(folded=folded, output_chars=OUTPUT_CHARS)
    return env


@cache
def static(name: str) -> Markup:
    """A file of the page's own (its CSS or script) under ``templates``, put in as it is."""
    return Markup(resources.files("projections").joinpath("templates", name).read_text())  # the page's own files
