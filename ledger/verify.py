"""Walking each task's hash chain over the raw stored rows, to find tampering.

Reads rows through the recorder (any backend) and never through the mapper, so
upcasting cannot mask a change. The first break is reported with its position:

- ``missing``: a position has no event (a row was deleted).
- ``altered``: the event's content no longer matches its hash, yet the next event
  still chains from that hash (the row was edited in place).
- ``out of place``: the chain breaks here and does not resume (an event was inserted,
  removed with the rest renumbered, or two events swapped).
- ``truncated``: a snapshot records a later position than the last event (events were
  cut off the end; without a snapshot past the cut, a shortened chain is
  indistinguishable from a shorter task, so `trail verify --json` also prints each head).
- ``archive``: an archive of compacted events (``trail compact``) is missing or altered.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, cast
from uuid import UUID

from eventsourcing.persistence import StoredEvent

from ledger import archive, chain
from ledger.mapper import PydanticMapper
from ledger.store import Ledger

Kind = Literal["missing", "altered", "out of place", "truncated", "undecodable", "archive"]


@dataclass(frozen=True)
class Break:
    position: int
    kind: Kind
    detail: str


@dataclass(frozen=True)
class Report:
    task_id: UUID
    events: int
    head: str
    first_break: Break | None

    @property
    def ok(self) -> bool:
        return self.first_break is None


def _decode(ledger: Ledger, stored: StoredEvent) -> dict[str, Any]:
    try:
        return cast(PydanticMapper, ledger.mapper).decode_state(stored.state)
    except Exception as exc:  # any decoding failure is a finding, not a crash
        raise ValueError(f"undecodable state: {exc}") from exc


def _link(previous: str, stored: StoredEvent, state: dict[str, Any]) -> str:
    """The hash the row should carry, in the chain version its own ``chain`` names (``ledger.chain``)."""
    return chain.recompute(previous, stored.topic, stored.originator_id, stored.originator_version, state)


def verify_task(ledger: Ledger, task_id: UUID) -> Report:
    # A compacted task's chain starts in its archives: check those files, then walk both.
    rows: list[StoredEvent] = []
    for found in archive.archives(ledger, task_id):
        problem = archive.check_file(found)
        if problem is not None:
            return Report(task_id, len(rows), "", Break(found.first, "archive", problem))
        rows += [stored for _, stored in archive.archived_rows(found, -1)]
    rows += ledger.recorder.select_events(task_id)
    previous = chain.GENESIS
    for index, row in enumerate(rows):
        expected_position = index + 1
        if row.originator_version != expected_position:
            return Report(task_id, len(rows), previous, Break(
                expected_position, "missing", f"no event at position {expected_position}; "
                f"the next stored is {row.originator_version}"))
        try:
            state = _decode(ledger, row)
            stored_hash = str(state.get("chain", ""))
        except ValueError as exc:
            return Report(task_id, len(rows), previous, Break(expected_position, "undecodable", str(exc)))
        if _link(previous, row, state) == stored_hash:
            previous = stored_hash
            continue
        kind: Kind = "out of place"
        if index + 1 < len(rows):
            try:
                following = _decode(ledger, rows[index + 1])
                if _link(stored_hash, rows[index + 1], following) == following.get("chain"):
                    kind = "altered"
            except ValueError:
                pass
        detail = "content does not match its hash" if kind == "altered" else "does not chain from the event before"
        return Report(task_id, len(rows), previous, Break(expected_position, kind, detail))
    snapshots = ledger.snapshots
    if snapshots is not None:
        latest = list(snapshots.get(task_id, desc=True, limit=1))
        if latest and latest[0].originator_version > len(rows):
            cut = len(rows) + 1
            return Report(task_id, len(rows), previous, Break(
                cut, "truncated", f"a snapshot records position {latest[0].originator_version}, "
                f"but the log ends at {len(rows)}"))
    return Report(task_id, len(rows), previous, None)


def verify_all(ledger: Ledger, task_ids: list[UUID]) -> Iterator[Report]:
    for task_id in task_ids:
        yield verify_task(ledger, task_id)
