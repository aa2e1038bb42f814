"""Why is this file (or line) like this? Every recorded change, with what led to it.

For each ``FileChanged`` of a path, the provenance recorded at append time (its
``because``) is resolved against the task's own events: the attempt and how it ended,
the decision and its reason, the requirement or correction behind it. Pure: callers
pass the events in.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from ledger.domain import events as ev
from projections import hunks


class Ref(BaseModel):
    model_config = ConfigDict(frozen=True)
    position: int
    kind: str
    text: str
    at: datetime
    actor: str
    detail: str | None = None
    """The decision's reason, the correction's 'was', the attempt's outcome and reason."""


class Change(BaseModel):
    model_config = ConfigDict(frozen=True)
    task: int
    task_title: str
    position: int
    at: datetime
    actor: str
    path: str
    operation: str
    before_sha256: str | None
    after_sha256: str | None
    diff_size: int | None
    diff_truncated: bool
    diff_collected: bool = False
    """The diff was dropped by `trail compact --gc-artifacts` (its size and hash remain)."""
    explicit: bool
    diff: str | None = Field(default=None, exclude=True)
    line: int | None = None
    """For `why PATH:LINE`: the line's number in the version this change produced."""
    attempt: Ref | None = None
    decision: Ref | None = None
    intent: Ref | None = None


def same_path(stored: str, asked: str) -> bool:
    a, b = posixpath.normpath(stored), posixpath.normpath(asked)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _ref(event: ev.TaskEvent | None, ended: dict[int, ev.AttemptEnded]) -> Ref | None:
    if event is None:
        return None
    kind, text, detail = "", "", None
    match event:
        case ev.AttemptStarted():
            end = ended.get(event.originator_version)
            kind, text = "attempt", event.text
            detail = (f"{end.outcome}" + (f": {end.reason}" if end.reason else "")) if end else "still open"
        case ev.DecisionRecorded():
            kind, text, detail = "decision", event.text, event.reason
        case ev.CorrectionMade():
            kind, text, detail = "correction", event.text, event.wrong
        case ev.RequirementStated():
            kind, text = "requirement", event.text
        case ev.RequirementChanged():
            kind, text, detail = "requirement change", event.text, f"rewords [{event.supersedes}]"
        case _:
            return None
    return Ref(position=event.originator_version, kind=kind, text=text, at=event.timestamp, actor=event.actor,
               detail=detail)


def changes(events: Iterable[ev.TaskEvent], path: str) -> list[Change]:
    """Every recorded change of ``path`` in one task, oldest first, with provenance resolved."""
    by_position: dict[int, ev.TaskEvent] = {}
    ended: dict[int, ev.AttemptEnded] = {}
    number, title = 0, ""
    found: list[Change] = []
    for event in events:
        by_position[event.originator_version] = event
        if isinstance(event, ev.TaskOpened):
            number, title = event.number, event.title
        elif isinstance(event, ev.AttemptEnded):
            ended[event.attempt] = event
        elif isinstance(event, ev.FileChanged) and (
            same_path(event.path, path) or (event.renamed_from and same_path(event.renamed_from, path))
        ):
            found.append(Change(
                task=number, task_title=title, position=event.originator_version, at=event.timestamp,
                actor=event.actor, path=event.path, operation=event.operation,
                before_sha256=event.before_sha256, after_sha256=event.after_sha256,
                diff_size=event.diff.size if event.diff else None,
                diff_truncated=bool(event.diff and event.diff.truncated),
                diff_collected=bool(event.diff and event.diff.collected),
                explicit=bool(event.because and event.because.explicit),
                diff=event.diff.tail if event.diff else None,
            ))
    # Resolve provenance after the pass, so attempts that ended later show how they ended.
    resolved = []
    for change in found:
        event = by_position[change.position]
        assert isinstance(event, ev.FileChanged)
        because = event.because or ev.Provenance()

        def at(position: int | None) -> ev.TaskEvent | None:
            return by_position.get(position) if position else None

        resolved.append(change.model_copy(update={
            "attempt": _ref(at(because.attempt), ended),
            "decision": _ref(at(because.decision), ended),
            "intent": _ref(at(because.intent), ended),
        }))
    return resolved


def line_count(found: list[Change]) -> int | None:
    """How many lines the file has after the newest of ``found``, as its recorded diffs tell, or None when
    they cannot: a file's length is known from its creation (or a diff from an empty file) on, each later
    diff adding its hunks' new lines and taking away their old ones; a change without a usable diff (cut,
    collected, or hunks that say no line) makes it unknown until the next creation."""
    count: int | None = None
    for change in sorted(found, key=lambda c: (c.at, c.position)):
        if change.operation == "deleted":
            count = 0
            continue
        if change.diff == "" and not change.diff_truncated and not change.diff_collected:
            continue  # the bytes were the same
        usable = change.diff and not change.diff_truncated and not change.diff_collected
        parsed = hunks.parse(change.diff) if usable and change.diff else []
        if not parsed or any(len(h) != h.source_length + h.target_length - sum(1 for x in h if x.is_context)
                             for h in parsed):
            count = None  # no numbered hunk, or one cut short: its extent is not known
            continue
        if change.operation == "created" or (parsed[0].source_start == 0 and parsed[0].source_length == 0):
            count = 0
        if count is not None:
            count += sum(h.target_length - h.source_length for h in parsed)
    return count


def follow_line(found: list[Change], line: int) -> list[Change]:
    """The changes that touched ``line`` (numbered in the newest version), newest first.

    The line is traced back through each older diff; a change without a usable diff
    (binary, cut) is kept, since it may have touched the line, and tracking goes on at
    the same number.
    """
    kept: list[Change] = []
    current: int | None = line
    for change in sorted(found, key=lambda c: c.at, reverse=True):
        if current is None:
            break
        if change.diff == "" and not change.diff_truncated and not change.diff_collected:
            continue  # an empty diff: the bytes were the same, so no line was touched
        usable = change.diff and not change.diff_truncated and not change.diff_collected
        parsed = hunks.parse(change.diff) if usable and change.diff else []
        if not parsed:
            kept.append(change.model_copy(update={"line": current}))
            continue
        step = hunks.trace(parsed, current)
        if step.touched:
            kept.append(change.model_copy(update={"line": current}))
        current = step.old_line
    return kept
