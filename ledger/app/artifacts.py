"""Collecting bulky payloads of old events (`trail compact --gc-artifacts`): the lossy step users opt into.

Command outputs, diffs and tool results whose kept tail is over a threshold lose the
tail; their size, full sha256 and ``tail_sha256`` stay, and so do the events, their
order and their links. The hash chain covers a tail only through its hash
(``ledger.domain.chain``), so `trail verify` still passes. The brief and `trail why` say what
was collected. Any backend (``LedgerStore.rewrite_states``), live store only: archived events
are already compressed in their Parquet files and stay whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson
from eventsourcing.persistence import PersistenceError

from ledger.app.store import Draft
from ledger.base.crashpoints import crash_point
from ledger.base.errors import StoreUnavailable
from ledger.base.location import Location
from ledger.domain import events as ev
from ledger.domain.chain import is_bounded
from ledger.stores.base import GC_TOPICS

if TYPE_CHECKING:
    from ledger.app.store import Ledger

THRESHOLD = 1024
"""Bytes of kept tail above which a payload is collected by default."""


@dataclass(frozen=True)
class Collected:
    events: int
    payloads: int
    bytes_freed: int


def _collect(value: Any, threshold: int, found: list[int]) -> Any:
    """``value`` with every bounded text whose tail is over ``threshold`` bytes collected."""
    if isinstance(value, dict):
        if is_bounded(value):
            tail = str(value["tail"])
            raw = tail.encode("utf-8", "surrogatepass")
            if value.get("collected") or len(raw) <= threshold:
                return value
            found.append(len(raw))
            return {**value, "tail": "", "collected": True, "tail_sha256": hashlib.sha256(raw).hexdigest()}
        return {k: _collect(v, threshold, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_collect(v, threshold, found) for v in value]
    return value


def collect(
    ledger: Ledger, location: Location, cutoff: datetime, task_id: UUID | None = None, threshold: int = THRESHOLD,
    dry_run: bool = False, progress: Callable[[str], None] | None = None,
) -> Collected:
    """Collect payloads of events recorded before ``cutoff`` (of one task, or of all), one transaction
    per task, each after an ``OutputsCollected`` event recorded in that task says so.

    Snapshots taken after a collected event hold what the fold made of the old payload, so
    they go in the same transaction (a snapshot plus its tail must equal a full fold), and a
    fresh snapshot of each task touched is taken afterwards.
    """
    say = progress or (lambda _: None)
    events = payloads = freed = looked = 0

    def rewrite(raw: bytes) -> bytes | None:
        nonlocal events, payloads, freed, looked
        looked += 1
        if looked % 10_000 == 0:
            say(f"gc-artifacts: {looked:,} events looked at")
        state = orjson.loads(raw)
        if datetime.fromisoformat(str(state["timestamp"]).replace("Z", "+00:00")) >= cutoff:
            return None
        found: list[int] = []
        changed = _collect(state, threshold, found)
        if not found:
            return None
        events, payloads, freed = events + 1, payloads + len(found), freed + sum(found)
        return orjson.dumps(changed)

    store = ledger.store
    try:
        # A dry pass first: the tasks it would touch get an ``OutputsCollected`` before any tail goes,
        # so no collected tail is ever without its record (a crash between leaves only the record).
        touched = store.rewrite_states(task_id, GC_TOPICS, rewrite, dry_run=True)
        if dry_run or not events:
            return Collected(events, payloads, freed)
        for owner in touched:
            ledger.write(owner, [(ev.OutputsCollected, {"before": cutoff, "threshold": threshold})],
                         Draft.record_all)
        crash_point("gc-artifacts:announced")
        events = payloads = freed = looked = 0
        latest: dict[UUID, int] = {}
        for owner in touched:  # only the tasks announced: one that gained old outputs since has no record
            latest.update(store.rewrite_states(owner, GC_TOPICS, rewrite, dry_run=False))
        if events:
            say("gc-artifacts: giving the space back")
            store.reclaim_space()
    except PersistenceError as exc:
        raise StoreUnavailable(f"gc-artifacts failed (tasks finished before it stay collected): {exc}") from exc
    if events:
        for owner, version in latest.items():
            # With a version the library reads the store, not its in-memory cache of the old state.
            ledger.take_snapshot(owner, version=version)
            ledger.views.forget(owner)  # this process's view held the outputs the store no longer does
        from projections.readmodel import readmodel_path

        model = readmodel_path(location)  # it held copies of the payloads; rebuilt on next use
        for path in (model, Path(str(model) + ".wal")):
            path.unlink(missing_ok=True)
    return Collected(events, payloads, freed)
