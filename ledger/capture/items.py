"""The unit every importer produces: an event class and its fields, plus shared builders.

Importers are pure: they turn transcript records into ``Item``s and never touch the ledger.
``capture.writer`` appends them, skipping source keys the task already holds.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ledger.capture.classify import Kind
from ledger.domain import bounds
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from ledger.domain.redact import redact_text

Item = tuple[type[ev.TaskEvent], dict[str, Any]]

LATEST_REQUIREMENT = -1
"""Placeholder for ``RequirementChanged.supersedes``: the writer resolves it to the task's latest
requirement at append time (an importer cannot know positions)."""

TITLE_MAX = 80

OWN_SERVERS = ("tasktrail", "trail")
"""Names ``trail install`` (and the docs) register ``trail mcp`` under: ``mcp__<server>__<tool>``."""
OWN_TOOLS = frozenset({"list_tasks", "resume_task", "record", "why", "log", "replay", "query"})


def own_tool(name: str) -> bool:
    """A call of tasktrail's own MCP server. Not captured as a tool call: a ``record`` is already in
    the ledger, appended by the server itself (capturing the call too made one fact three events),
    and the reads add nothing to the task."""
    server, _, tool = name.removeprefix("mcp__").partition("__")
    return name.startswith("mcp__") and server in OWN_SERVERS and tool in OWN_TOOLS


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


THROWAWAY = frozenset({
    "hi", "hello", "hey", "yo", "hi there", "hello there", "hey there", "good morning", "morning", "ping", "test",
    "ok", "okay", "yes", "y", "no", "thanks", "thank you", "go", "go on", "go ahead", "continue", "carry on",
    "proceed", "resume", "next", "start", "begin", "help", "status", "show tools", "list tools", "what tools",
    "what tools do you have", "which tools do you have", "what can you do", "who are you", "whats up",
})
"""Openers that say nothing of what the task is (lower case, punctuation dropped): a session's title waits
for a real request (``title_from``)."""
_PLACEHOLDER = re.compile(r"^(?:\[(?:Image|Pasted text)[^\]]*\]\s*)+")
_SLASH = re.compile(r"^/[\w:.-]+\s*")


def _first_line(text: str) -> str:
    """The prompt's first line that holds words: pasted-image placeholders and a slash command's name taken off
    (``/orchestrator create a TODO app`` is the request ``create a TODO app``), a line ending in ``\\`` joined to
    the next (a shell-style continuation)."""
    text = _SLASH.sub("", _PLACEHOLDER.sub("", text.strip()))
    lines = [ln.strip() for ln in text.splitlines()]
    line = ""
    for ln in lines:
        if not ln and not line:
            continue
        line = f"{line} {ln}".strip() if line else ln
        if not line.endswith("\\"):
            break
        line = line[:-1].rstrip()
    return line


def throwaway(text: str) -> bool:
    """Whether a prompt says nothing of what the task is: empty, a bare slash command, or an opener such as
    "hi", "continue" or "show tools"."""
    words = "".join(c for c in _first_line(text).lower() if c.isalnum() or c.isspace()).split()
    return not words or " ".join(words) in THROWAWAY


_OPENER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|now|please|alright|hey|hi)(?:[\s,.!:;]+|$)|(?:claude|codex)\s*[,:!]\s*|"
    r"(?:can|could|would)\s+you\s+(?:please\s+)?)+", re.IGNORECASE)
"""Steering words a prompt may open with ("ok so", "now", "please", "can you", "Hey Claude,"): they name nothing
of the task."""


def title_from(text: str) -> str:
    """A task title from a prompt: its first line of words (``_first_line``) past a steering opener (``_OPENER``:
    "ok lets get back to main" is titled "lets get back to main"), cut at a word near ``TITLE_MAX``."""
    line = _first_line(text)
    line = _OPENER.sub("", line, count=1) or line
    if len(line) > TITLE_MAX:
        line = line[:TITLE_MAX].rsplit(" ", 1)[0] + "…"
    return line or "untitled session"


def title_rank(text: str) -> int:
    """How well a prompt names its task: 0 a throw-away opener, 1 fewer than four words ("fix these"), 2 a
    request. A session's title is its first prompt of the highest rank it reaches."""
    if throwaway(text):
        return 0
    return 1 if len(_first_line(text).split()) < 4 else 2


PROMPT_KEY = "prompt:"


def prompt_record(text: str, seen: dict[str, int]) -> str:
    """The source record of a user prompt: its text's hash and how often that text came before.

    Derived from the prompt itself, so the hook (which never sees transcript line ids) and a
    later import of the same session's transcript give the k-th occurrence the same key, and
    the prompt lands once. ``seen`` counts earlier occurrences per hash and is updated.
    """
    digest = sha256(text)[:16]
    count = seen.get(digest, 0)
    seen[digest] = count + 1
    return f"{PROMPT_KEY}{digest}:{count}"


def prompt_item(kind: Kind, text: str, source: ev.SourceKey, timestamp: Any, wrong: str | None = None) -> Item:
    """A user prompt as the intent event its classification names."""
    base: dict[str, Any] = {"text": text, "actor": "user", "source": source, "timestamp": timestamp}
    if kind == "correction":
        return ev.CorrectionMade, {**base, "wrong": wrong}
    if kind == "change":
        return ev.RequirementChanged, {**base, "supersedes": LATEST_REQUIREMENT}
    if kind == "reply":
        return ev.NoteAdded, {**base, "text": f"user: {text}"}
    if kind == "question":
        return ev.NoteAdded, {**base, "text": f"user asked: {text}"}
    if kind == "output":
        return ev.NoteAdded, {**base, "text": f"user pasted output: {text}"}
    return ev.RequirementStated, base


def plan_items(steps: list[tuple[str, str]], actor: str, source: ev.SourceKey, timestamp: Any) -> list[Item]:
    """A plan (``(text, status)`` steps) as one ``PlanUpdated``; the fold derives the next step from it.

    Unknown statuses count as pending; an empty list is a cleared plan (it leaves no next step)."""
    known = ("pending", "in_progress", "completed")
    plan = [
        ev.PlanStep(text=" ".join(text.split()), status=status if status in known else "pending")  # type: ignore[arg-type]
        for text, status in steps
        if text.strip()
    ]
    return [
        (
            ev.PlanUpdated,
            {
                "steps": tuple(plan),
                "actor": actor,
                "timestamp": timestamp,
                "source": source.model_copy(update={"record": source.record + "#plan"}),
            },
        )
    ]


def bounded(text: str | None, limit: int = bounds.OUTPUT) -> ev.Bounded | None:
    return bound(text, limit) if text else None


REPLY_HEAD = 1500
"""Bytes of a long reply's opening kept beside its tail: a closing message names the work first."""


def reply_bound(text: str) -> ev.Bounded:
    """The agent's reply within ``bounds.REPLY`` bytes: all of it when it fits, else its opening and its end,
    each cut at a line end, with the cut said between them (a tail alone loses the title that frames it)."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= bounds.REPLY:
        return bound(text, bounds.REPLY)
    # Redacted before it is cut, as ``bound`` does: a token cut at either end is a fragment no rule can find.
    clean = redact_text(text)
    shown = clean.encode("utf-8", "replace")
    if len(shown) <= bounds.REPLY:
        return bound(clean, bounds.REPLY)
    head = shown[:REPLY_HEAD].decode("utf-8", "ignore")
    head = head[: head.rfind("\n")] if "\n" in head[len(head) // 3:] else head
    room = bounds.REPLY - len(head.encode("utf-8")) - 80
    tail = shown[-room:].decode("utf-8", "ignore")
    tail = tail[tail.find("\n") + 1:] if "\n" in tail[: len(tail) * 2 // 3] else tail
    cut = len(clean) - len(head) - len(tail)
    kept = f"{head.rstrip()}\n[… {cut:,} characters of the reply not kept …]\n{tail.lstrip()}"
    return bound(kept, bounds.REPLY, full_size=len(raw), full_sha256=hashlib.sha256(raw).hexdigest())
