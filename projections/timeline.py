"""One line per event, for `trail log`: what happened, in the task's own words."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from ledger.base.oneline import one_line
from ledger.domain import events as ev
from projections.state import command_line


def _short(text: str | None, width: int = 100) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(event: ev.TaskEvent) -> str:
    """The event in one line; what it quotes (titles, paths, labels) can neither break the line nor
    restyle the terminal (``oneline``)."""
    return one_line(_said(event))


def _said(event: ev.TaskEvent) -> str:
    match event:
        case ev.TaskOpened():
            return f"opened #{event.number} {_short(event.title)}"
        case ev.TaskRetitled():
            return f"retitled: {_short(event.title)}"
        case ev.RequirementStated():
            return f"requirement: {_short(event.text)}"
        case ev.RequirementChanged():
            return f"requirement [{event.supersedes}] now: {_short(event.text)}"
        case ev.CorrectionMade():
            return f"correction: {_short(event.text)}"
        case ev.IntentReclassified():
            onto = f" of [{event.supersedes}]" if event.supersedes else ""
            return f"reclassified [{event.target}] as {event.kind}{onto}"
        case ev.DecisionRecorded():
            because = f" because {_short(event.reason, 60)}" if event.reason else ""
            return f"decision: {_short(event.text)}{because}"
        case ev.AttemptStarted():
            return f"attempt: {_short(event.text)}"
        case ev.AttemptEnded():
            reason = f": {_short(event.reason)}" if event.reason else ""
            return f"attempt [{event.attempt}] {event.outcome}{reason}"
        case ev.ToolCalled():
            return f"tool {event.tool} called: {_short(event.input.tail, 80)}"
        case ev.ToolResult():
            return f"tool {event.tool} {'ok' if event.ok else 'ERROR'}: {_short(event.output.tail, 80)}"
        case ev.CommandRan():
            code = " (exit code not reported)" if event.exit_code is None else f" -> exit {event.exit_code}"
            took = f" in {event.duration_ms} ms" if event.duration_ms is not None else ""
            return f"ran `{_short(command_line(event), 80)}`{code}{took}"
        case ev.FileChanged():
            size = f" ({event.diff.size} B diff{', collected' if event.diff.collected else ''})" if event.diff else ""
            return f"{event.operation} {event.path}{size}"
        case ev.TestResult():
            return f"test {event.name} {event.outcome}"
        case ev.CheckpointMarked():
            git = f" @ {event.git_head[:10]}" if event.git_head else ""
            return f"checkpoint '{event.label}'{git}"
        case ev.NextStepSet():
            return f"next: {_short(event.text)}"
        case ev.StatusChanged():
            reason = f": {_short(event.reason)}" if event.reason else ""
            return f"status -> {event.status}{reason}"
        case ev.NoteAdded():
            return f"note: {_short(event.text)}"
        case ev.AgentReplied():
            return f"replied: {_short(event.text.tail)}"
        case ev.ConversationLinked():
            return f"conversation {event.agent} {event.session_id}"
        case ev.TaskLinked():
            other = f"#{event.other_number}" if event.other_number else str(event.other)
            return f"linked {event.relation} {other}"
        case ev.EventsArchived():
            return f"archived events {event.first}-{event.last} to {event.archive}"
        case ev.OutputsCollected():
            return (f"collected output tails over {event.threshold} bytes of events before "
                    f"{event.before:%Y-%m-%d %H:%M:%S}")
    return type(event).__name__


def as_record(event: ev.TaskEvent) -> dict[str, Any]:
    """The machine form of one event: its type and every field (JSON-safe)."""
    data = event.model_dump(mode="json")
    return {
        "position": event.originator_version,
        "type": type(event).__name__,
        "timestamp": data.pop("timestamp"),
        "actor": data.pop("actor"),
        "summary": summary(event),
        **{k: v for k, v in data.items() if k not in ("originator_id", "originator_version", "originator_topic")},
    }


@dataclass(frozen=True)
class EventFilter:
    """The `trail log` filters; an event passes when it matches all that are set."""

    types: tuple[str, ...] = ()
    actors: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    path: str | None = None
    grep: str | None = None

    def matches(self, event: ev.TaskEvent) -> bool:
        if self.types and type(event).__name__ not in self.types:
            return False
        if self.actors and not any(
            event.actor == a or (a.endswith("*") and event.actor.startswith(a[:-1])) for a in self.actors
        ):
            return False
        if self.since and event.timestamp < self.since:
            return False
        if self.until and event.timestamp >= self.until:
            return False
        if self.path is None and self.grep is None:
            return True
        content = orjson.dumps(event.model_dump(mode="json")).decode() + " " + summary(event)
        if self.path is not None:
            from projections.why import same_path  # unidiff loads only for a path filter, not for `resume`

            named = isinstance(event, ev.FileChanged) and any(
                same_path(p, self.path) for p in (event.path, event.renamed_from) if p
            )
            if not named and self.path not in content:
                return False
        return self.grep is None or self.grep.lower() in content.lower()
