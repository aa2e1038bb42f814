"""The reads every front door shares: the task list, a point in a task's history, its timeline,
and `why` a file or line is as it is. ``cli/read.py``, ``cli/audit.py`` and the MCP server
(``cli/mcp.py``) call these and only format what they return.

Each refuses a task whose data is broken (``verify.LedgerBroken``, a one-line error) instead of
showing it, through the quick checks of ``ledger.app.verify``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ledger.app import refs, verify
from ledger.base.errors import BadInput
from ledger.domain import events as ev
from projections import points

if TYPE_CHECKING:
    from ledger.app.store import Ledger
    from ledger.base.location import Location
    from ledger.domain.registry import Entry
    from projections.find import Found
    from projections.state import TaskState
    from projections.timeline import EventFilter
    from projections.why import Change

LINE_SUFFIX = re.compile(r"^(?P<path>.+):(?P<line>\d+)$")


BROKEN = "BROKEN"
"""The status `trail list` shows for a task that does not pass a read's checks."""


def task_rows(
    ledger: Ledger, location: Location, project: str | None, statuses: Iterable[str] = (),
    only_project: str | None = None,
) -> list[dict[str, Any]]:
    """Every task (only those with one of ``statuses`` when given, and only those of ``only_project``),
    marking the active task of ``project``.

    A task that does not pass a read's checks is listed as ``BROKEN`` (whatever ``statuses``), with
    the refusal in ``broken`` and nothing shown from its events or its title (the entry may be the
    forgery), as `trail verify` lists each task; the others are listed as usual (``broken`` None).
    The caller exits 5 after listing them."""
    wanted = set(statuses)
    active = refs.active_task_id(location, project)
    rows: list[dict[str, Any]] = []
    for entry in ledger.entries():
        try:
            state = verify.checked_state(ledger, entry.task_id, entry=entry)
        except verify.LedgerBroken as exc:
            rows.append({"number": entry.number, "slug": entry.slug, "title": None, "project": None, "status": BROKEN,
                         "events": None, "updated_at": None, "next_step": None,
                         "active": entry.task_id == active, "broken": str(exc)})
            continue
        if (wanted and state.status not in wanted) or (only_project is not None and state.project != only_project):
            continue
        rows.append({
            "number": entry.number,
            "slug": entry.slug,
            "title": entry.title,
            "project": state.project,
            "status": state.status,
            "events": state.position,
            "updated_at": state.updated_at.isoformat() if state.updated_at else None,
            "next_step": state.next_step,
            "active": entry.task_id == active,
            "broken": None,
        })
    return rows


def check_tasks(ledger: Ledger, entries: Iterable[Entry] | None = None) -> None:
    """``LedgerBroken`` for the first of ``entries`` (every task when None) that does not pass a read's checks
    (``verify.checked_state``): the reads over the read model (`query`, `stats`, `export`, MCP `query`) show
    rows no task can be told apart in, so they refuse while any task they could show is broken."""
    for entry in ledger.entries() if entries is None else entries:
        verify.checked_state(ledger, entry.task_id, entry=entry)


def checked_found(
    ledger: Ledger, found: list[Found], entries: Mapping[int, Entry] | None = None,
) -> tuple[list[Found], list[verify.LedgerBroken]]:
    """The tasks `find` found in the read model, split into those that pass a read's checks and the refusals
    of those that do not. The read model is a copy: each task's view is checked (``verify.checked_state``)
    and every place shown is re-hashed with its row (``verify.rows_problem``), so no forged text is shown.
    ``entries`` (number -> entry) is the task list when the caller has read it already."""
    if entries is None:
        entries = {e.number: e for e in ledger.entries()}
    kept: list[Found] = []
    refused: list[verify.LedgerBroken] = []
    for task in found:
        entry = entries.get(task.number)
        if entry is None:
            continue  # forgotten since the read model last heard of it: nothing of it is shown
        try:
            verify.checked_state(ledger, entry.task_id, entry=entry)
            for position in sorted({1, *(m.position for m in task.matches)}):
                if (problem := verify.rows_problem(ledger, entry.task_id, position - 1, position)) is not None:
                    raise verify.refusal(entry.number, problem)
        except verify.LedgerBroken as exc:
            refused.append(exc)
            continue
        kept.append(task)
    return kept, refused


def state(ledger: Ledger, entry: Entry, at: int | None = None) -> TaskState:
    """The task's state after event ``at`` (the latest when None), checked (``verify.checked_state``)."""
    return verify.checked_state(ledger, entry.task_id, at, entry)


def position(ledger: Ledger, task_id: UUID, point: points.Point, number: int | None = None) -> int:
    """The position ``point`` (N, -N, a time, checkpoint:LABEL: ``points.parse``) names in a task."""
    last = verify.checked_state(ledger, task_id, number=number).position
    events = verify.load_events(ledger, task_id, number) if point.needs_events else ()
    return points.locate(point, last, events)


def event_types(types: Iterable[str], option: str = "--type") -> tuple[str, ...]:
    """Event type names to filter on; an unknown one is a BadInput naming ``option`` and the known types."""
    types = tuple(types)
    unknown = [t for t in types if t not in ev.BY_NAME]
    if unknown:
        raise BadInput(f"{option} {unknown[0]}: unknown event type; known: {', '.join(ev.BY_NAME)}")
    return types


def timeline(
    ledger: Ledger, task_id: UUID, keep: EventFilter, limit: int | None = None, number: int | None = None,
) -> list[ev.TaskEvent]:
    """The task's events that ``keep`` matches, oldest first; only the last ``limit`` when given.
    ``number`` names the task in a refusal."""
    selected = [e for e in verify.load_events(ledger, task_id, number) if keep.matches(e)]
    return selected[-limit:] if limit else selected


def why_target(target: str) -> tuple[str, int | None]:
    """PATH or PATH:LINE, as `why` takes it: the path and the line (None for the whole file)."""
    match = LINE_SUFFIX.match(target)
    path, line = (match["path"], int(match["line"])) if match else (target, None)
    if line is not None and line < 1:
        raise BadInput(f"{target}: line numbers start at 1")
    return path, line


def _check_line(path: str, line: int, lines: int | None) -> None:
    """A line past the end of the file names no line anyone can look at: refused, not answered. The end,
    ``lines``, is the one the recorded changes give (``why.line_count``), not the file in whatever folder
    asks (the MCP server runs elsewhere); where they do not tell it (None), the line is answered."""
    if lines is not None and line > lines:
        raise BadInput(f"{path}:{line}: the file has {lines} line{'s' if lines != 1 else ''}")


def why(ledger: Ledger, path: str, line: int | None, entries: Iterable[Entry]) -> list[Change]:
    """Every recorded change of ``path`` (of its line ``line``, followed through later diffs, when
    given) in ``entries``' tasks, with the attempt, decision and intent behind each, newest first."""
    from projections import why as why_projection  # unidiff loads for `why` only, not for `resume`

    found: list[Change] = []
    for entry in entries:
        found += why_projection.changes(verify.load_events(ledger, entry.task_id, entry.number), path)
    if line is not None:
        _check_line(path, line, why_projection.line_count(found))
        found = why_projection.follow_line(found, line)
    found.sort(key=lambda c: c.at, reverse=True)
    return found
