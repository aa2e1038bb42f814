"""The unit every importer produces: an event class and its fields, plus shared builders.

Importers are pure: they turn transcript records into ``Item``s and never touch the ledger.
``capture.writer`` appends them, skipping source keys the task already holds.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ledger.capture.classify import Kind
from ledger.domain import bounds
from ledger.domain import events as ev
from ledger.domain.bounds import bound

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


def title_from(text: str) -> str:
    """A task title from a prompt: its first non-empty line, cut at a word near ``TITLE_MAX``."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(line) > TITLE_MAX:
        line = line[:TITLE_MAX].rsplit(" ", 1)[0] + "…"
    return line or "untitled session"


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
