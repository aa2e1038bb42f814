"""Which task, when a command was not told: a numbered list to pick from on a terminal, as `claude --resume` asks.

Only where a person can answer (stdin and stderr, where the list and the question go, both terminals);
anything else (an agent, a script, a pipe) gets the error it always got, naming the candidates, and its
non-zero exit. Numbers, not arrow keys: a keypress reader is a dependency for one prompt, and a number works
in every terminal and over ssh.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from ledger.base.oneline import one_line

if TYPE_CHECKING:
    from cli.context import Context
    from ledger.domain.registry import Entry

SHOWN = 20
"""At most this many are offered, the most recently updated first; a longer list is narrowed by a longer prefix."""


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def _rows(ctx: Context, numbers: set[int] | None, only_project: str | None) -> list[dict[str, Any]]:
    from ledger.app import reading
    from ledger.base.project import current_project

    rows = reading.task_rows(ctx.ledger(), ctx.location, current_project(), (), only_project)
    rows = [r for r in rows if not r["broken"] and (numbers is None or r["number"] in numbers)]
    return sorted(rows, key=lambda r: r["updated_at"] or "", reverse=True)[:SHOWN]


def choose_entry(ctx: Context, task: str | None) -> tuple[Entry, bool]:
    """``ctx.entry(task)``, or on a terminal the task picked from the candidates when ``task`` names several
    (a slug prefix) or none is named and this project has no active task but has tasks; and whether it was
    picked (a picked answer is not what ``task`` means, so nothing may keep it as that: the brief cache)."""
    from ledger.app import refs
    from ledger.base.errors import Ambiguous, NotFound
    from ledger.base.project import current_project

    try:
        return ctx.entry(task), False
    except (Ambiguous, NotFound) as exc:
        if not interactive():
            raise
        entries = ctx.ledger().entries()
        if isinstance(exc, Ambiguous) and task is not None:
            rows = _rows(ctx, {e.number for e in refs.candidates(task, entries)}, None)
        elif isinstance(exc, NotFound) and not task and (project := current_project()) is not None:
            rows = _rows(ctx, None, project)
        else:
            raise
        if not rows:
            raise
        picked = ask(rows, str(exc))
        return next(e for e in entries if e.number == picked), True


def ask(rows: list[dict[str, Any]], why: str) -> int:
    """The number of the task picked from ``rows``; Ctrl-C or Ctrl-D ends the command (exit 1, nothing done)."""
    click.echo(f"trail: {why}", err=True)
    width = len(str(len(rows)))
    for n, r in enumerate(rows, 1):
        where = os.path.basename((r["project"] or "").rstrip("/")) or "-"
        when = (r["updated_at"] or "")[:16].replace("T", " ")
        title = one_line(r["title"] or r["slug"], 60)
        click.echo(f"  {n:>{width}}) #{r['number']:<4} {r['status']:<8} {when:<16} {one_line(where, 16):<16} {title}",
                   err=True)
    choice: int = click.prompt("Which one?", type=click.IntRange(1, len(rows)), err=True)
    return int(rows[choice - 1]["number"])
