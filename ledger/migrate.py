"""Copying a ledger to another store (SQLite to PostgreSQL, or any way round) with its chains intact.

Stored rows are copied as they are, bytes and all, through the library's recorders, so
every hash chain carries over untouched and is recomputed on the target afterwards.
A re-run copies only what the target lacks; a target that holds different events under
the same ids is refused before anything is written. Task events go first and the
registry last, so an interrupted copy never lists a task whose events are not all there;
running the same command again finishes it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, StoredEvent

from ledger import verify
from ledger.errors import BadInput, Refused, StoreUnavailable
from ledger.location import Location
from ledger.registry import REGISTRY_ID
from ledger.store import Ledger, open_ledger

BATCH = 500
"""Events per write transaction on the target (and per progress line)."""

Key = tuple[UUID, int]


@dataclass(frozen=True)
class Report:
    source: str
    target: str
    events: int
    """Events in the source."""
    copied: int
    already_there: int
    snapshots_copied: int
    tasks_verified: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run(source: Location, target: Location, progress: Callable[[str], None]) -> Report:
    """Copy ``source`` into ``target`` (created on first use), verify, and report."""
    if source.key == target.key:
        raise BadInput(f"--from and --to are the same ledger ({source.display})")
    if source.is_sqlite and not source.sqlite_path.is_file():
        raise BadInput(f"--from {source.display}: no ledger file there")
    started = time.perf_counter()
    src = open_ledger(source)
    try:
        events = list(_all_events(src.recorder))
        if not events:
            raise BadInput(f"--from {source.display}: the ledger holds no events")
        if problems := _chain_problems(src, events):
            raise Refused(f"source {source.display} does not verify ({problems[0]}); nothing copied")
        # The target is opened (and so created) only once the source is known to be worth copying.
        dst = open_ledger(target)
        try:
            return _copy(src, dst, events, source, target, progress, started)
        finally:
            dst.close()
    finally:
        src.close()


def _copy(
    src: Ledger,
    dst: Ledger,
    events: list[StoredEvent],
    source: Location,
    target: Location,
    progress: Callable[[str], None],
    started: float,
) -> Report:
    have = {_key(e): _digest(e) for e in _all_events(dst.recorder)}
    clashes = [e for e in events if _key(e) in have and have[_key(e)] != _digest(e)]
    if clashes:
        first = clashes[0]
        raise Refused(
            f"target {target.display} already holds different events under the same ids "
            f"({len(clashes)}, first {first.originator_id} position {first.originator_version}); nothing copied"
        )
    missing = [e for e in events if _key(e) not in have]
    # The registry last: a task is listed only once all of its events are there.
    missing.sort(key=lambda e: _key(e)[0] == REGISTRY_ID)
    if missing:
        progress(f"copying {len(missing)} of {len(events)} events to {target.display}")
    else:
        progress(f"{target.display} already holds all {len(events)} events; nothing to copy")
    done = 0
    for batch in _batches(missing, BATCH):
        dst.recorder.insert_events(batch)
        done += len(batch)
        progress(f"  {done}/{len(missing)} events")

    snapshots = _copy_snapshots(src, dst, {_key(e)[0] for e in events})
    tasks = _verify(dst, events, target)
    progress(f"verified {tasks} task chains and {len(events)} events on {target.display}")
    return Report(
        source=source.display,
        target=target.display,
        events=len(events),
        copied=len(missing),
        already_there=len(events) - len(missing),
        snapshots_copied=snapshots,
        tasks_verified=tasks,
        seconds=round(time.perf_counter() - started, 3),
    )


def _copy_snapshots(src: Ledger, dst: Ledger, originators: set[UUID]) -> int:
    """Snapshots are derived, so one the target already has at a position (its own or ours) is kept."""
    if src.snapshots is None or dst.snapshots is None:
        return 0
    copied = 0
    for originator in sorted(originators):
        have = {s.originator_version for s in dst.snapshots.recorder.select_events(originator)}
        new = [s for s in src.snapshots.recorder.select_events(originator) if s.originator_version not in have]
        if new:
            dst.snapshots.recorder.insert_events(new)
            copied += len(new)
    return copied


def _verify(dst: Ledger, events: list[StoredEvent], target: Location) -> int:
    """Re-read the target: every source event there byte for byte, every task chain recomputed."""
    stored = {_key(e): _digest(e) for e in _all_events(dst.recorder)}
    lost = [e for e in events if stored.get(_key(e)) != _digest(e)]
    if lost:
        raise StoreUnavailable(f"after the copy {target.display} lacks {len(lost)} events; run migrate again")
    if problems := _chain_problems(dst, events):
        raise StoreUnavailable(f"after the copy {target.display} does not verify: {problems[0]}")
    return len(_task_ids(events))


def _task_ids(events: list[StoredEvent]) -> list[UUID]:
    return sorted({_key(e)[0] for e in events} - {REGISTRY_ID})


def _chain_problems(ledger: Ledger, events: list[StoredEvent]) -> list[str]:
    """Each task's chain recomputed over the rows ``ledger`` stores (``trail verify``'s walk)."""
    return [
        f"task {report.task_id}: chain broken at position {report.first_break.position} "
        f"({report.first_break.kind}: {report.first_break.detail})"
        for report in verify.verify_all(ledger, _task_ids(events))
        if report.first_break is not None
    ]


def _all_events(recorder: ApplicationRecorder) -> Iterator[StoredEvent]:
    """Every stored event in notification order, read a page at a time."""
    start = 1
    while True:
        page = recorder.select_notifications(start=start, limit=BATCH)
        if not page:
            return
        for n in page:
            yield StoredEvent(n.originator_id, n.originator_version, n.topic, bytes(n.state))
        start = page[-1].id + 1


def _batches(items: Sequence[StoredEvent], size: int) -> Iterator[Sequence[StoredEvent]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _key(event: StoredEvent) -> Key:
    return UUID(str(event.originator_id)), event.originator_version


def _digest(event: StoredEvent) -> str:
    return hashlib.sha256(event.topic.encode() + b"\0" + event.state).hexdigest()
