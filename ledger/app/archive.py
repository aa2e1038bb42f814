"""Compaction: a task's oldest events move to a verifiable Parquet archive, on any backend.

``compact`` writes positions ``first..last`` (the snapshots among them, and the task's view every
``VIEWS_EVERY`` positions) to a Parquet file through DuckDB, with a manifest beside it, then in ONE transaction of the
ledger's store (``LedgerStore.commit_archive``): records the archive, stores a snapshot
at ``last``, appends an ``EventsArchived`` event and deletes the archived rows. A crash
before that commit leaves the old state (plus an unreferenced archive file that a
re-run overwrites); after it, the new state. Nothing in between is visible. Then the
store gives the space back (``reclaim_space``).

The views are what keeps time travel flat: compaction deletes the live view snapshots below the
boundary, and without the archive's a read of an archived point folds the task from its start. Archives
written before them hold none, and are read that way still.

Reading archived events is ``ledger.stores.archived``'s, below the Ledger (which reads through it);
this module is the operation above the Ledger that writes them.

Where archive files live is the store's: beside an SQLite ledger in ``<ledger file>.archive/``;
for PostgreSQL in the database, cached on each machine that reads them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson

from ledger.app.store import Draft
from ledger.app.verify import verify_task
from ledger.base import private
from ledger.base.crashpoints import CRASH_ENV as CRASH_ENV  # re-exported: the tests aim at the steps below
from ledger.base.crashpoints import crash_point
from ledger.base.errors import RuleBroken
from ledger.domain import events as ev
from ledger.domain.task import TaskSnapshot
from ledger.stores import duckdb_offline
from ledger.stores.archived import VIEW, ArchiveError, archive_dir, file_sha256, live_from, view_topic
from ledger.stores.base import Archive
from projections.state import FOLD_VERSION

if TYPE_CHECKING:
    from ledger.app.store import Ledger

STEPS = ("archive-started", "archive-written", "manifest-written", "before-commit", "committed")
"""Where ``compact`` kills its own process when ``TRAIL_CRASH_AT`` (``ledger.base.crashpoints``) names one: its
archive half-written (a temporary file), whole, then named by its manifest, inside the transaction
that swaps the rows for the marker, and after it."""

VIEWS_EVERY = 500
"""The archive keeps the task's view at each position that is a multiple of this: a read of an archived point
folds fewer events than this, as a live read folds fewer than K (500 by default, so each is the live store's
view snapshot, copied). A view is large (~250 KB as stored at 200k events on the bench workload) but the
archive's zstd takes the run of them to ~9 MB of a 44.5 MB archive there (p95 at 1,000: 133 ms, 500: 83 ms)."""


@dataclass(frozen=True)
class Plan:
    """What ``compact`` would move: positions ``first..last`` of the task."""

    task_id: UUID
    number: int
    first: int
    last: int
    events: int
    snapshots: int
    live_bytes: int
    """Bytes of stored state the live store gives up (rows' payloads, excluding SQLite overhead)."""


# -- compacting --------------------------------------------------------------------------


def plan(ledger: Ledger, task_id: UUID, before: int) -> Plan:
    """What compacting the task's events before position ``before`` would move (checked, not done)."""
    state = ledger.state(task_id)
    first = live_from(ledger, task_id)
    last = before - 1
    if before > state.position:
        raise RuleBroken(f"--before {before} is past the task's last event ({state.position}); keep at least one")
    if last < first:
        raise RuleBroken(f"positions before {before} are already archived (live from {first})")
    events, snapshots, live_bytes = ledger.store.range_size(task_id, first, last)
    assert state.number is not None
    return Plan(task_id, state.number, first, last, events, snapshots, live_bytes)


def boundary_older_than(ledger: Ledger, task_id: UUID, cutoff: datetime) -> int:
    """The first position whose event is at or after ``cutoff`` (positions are appended in time order)."""
    head = ledger.state(task_id).position
    low, high = live_from(ledger, task_id), head
    # Binary search on the live events: each probe decodes one event.
    while low < high:
        mid = (low + high) // 2
        event = next(iter(ledger.events.get(task_id, gt=mid - 1, lte=mid)))
        if event.timestamp < cutoff:  # type: ignore[attr-defined]
            low = mid + 1
        else:
            high = mid
    return low


def write_parquet(rows: list[tuple[Any, ...]], target: Path) -> None:
    """Rows (kind, notification_id, originator_version, topic, state) to ``target``, atomically."""
    tmp = target.with_name(f".{target.name}.tmp")

    columns = [list(c) for c in zip(*rows, strict=True)]
    with duckdb_offline.connect() as con:
        con.execute(
            "CREATE TABLE a AS SELECT unnest($1)::VARCHAR AS kind, unnest($2)::BIGINT AS notification_id,"
            " unnest($3)::BIGINT AS originator_version, unnest($4)::VARCHAR AS topic, unnest($5)::BLOB AS state",
            columns,
        )
        literal = str(tmp).replace("'", "''")
        # Small row groups, sorted by position: a read of a few positions skips the rest by their min/max.
        con.execute(
            f"COPY (SELECT * FROM a ORDER BY kind, originator_version) TO '{literal}'"
            " (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048, ROW_GROUP_SIZE_BYTES 2000000)"
        )
    crash_point("archive-started")
    with tmp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))
    with tmp.open("rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def view_rows(ledger: Ledger, task_id: UUID, first: int, last: int, every: int) -> list[tuple[Any, ...]]:
    """Archive rows of the task's view at each multiple of ``every`` in ``first..last`` (none when 0): the
    view snapshot the live store keeps there, else folded from the nearest one."""
    if every <= 0:
        return []
    start = -(-first // every) * every
    return [(VIEW, None, position, view_topic(FOLD_VERSION), ledger.views.sealed_at(task_id, position))
            for position in range(start, last + 1, every)]


def compact(
    ledger: Ledger,
    task_id: UUID,
    before: int,
    progress: Callable[[str], None] | None = None,
    views_every: int = VIEWS_EVERY,
) -> Archive:
    """Archive the task's live events before ``before`` (see the module docstring for the steps); with
    ``views_every`` 0 the archive holds no views (as an older release wrote it)."""
    say = progress or (lambda _: None)
    todo = plan(ledger, task_id, before)
    first, last = todo.first, todo.last
    directory = archive_dir(ledger)
    private.folder(directory)
    name = f"task-{todo.number}-{first}-{last}.parquet"
    target = directory / name

    say(f"reading positions {first}-{last} of task #{todo.number}")
    found = ledger.store.read_range(task_id, first, last)
    if len(found.events) != last - first + 1:
        raise ArchiveError(f"task #{todo.number} is missing live events between {first} and {last}")
    events = [("event", nid, e.originator_version, e.topic, e.state) for nid, e in found.events]
    snapshots = [("snapshot", None, s.originator_version, s.topic, s.state) for s in found.snapshots]
    head = ledger.mapper.to_domain_event(found.events[-1][1]).chain  # type: ignore[attr-defined]
    views = view_rows(ledger, task_id, first, last, views_every)
    say(f"writing {len(events)} events, {len(snapshots)} snapshots and {len(views)} views to {target}")
    write_parquet(events + snapshots + views, target)
    crash_point("archive-written")
    digest = file_sha256(target)
    manifest = {
        "task_id": str(task_id),
        "task_number": todo.number,
        "archive": name,
        "sha256": digest,
        "count": len(events),
        "snapshots": len(snapshots),
        "views": len(views),
        "first_position": first,
        "last_position": last,
        "first_notification": events[0][1],
        "last_notification": events[-1][1],
        "head": head,
        "created_at": datetime.now(UTC).isoformat(),
    }
    _write_json(target.with_suffix(".manifest.json"), manifest)
    crash_point("manifest-written")

    # The state at the boundary stays live as a snapshot, and its view as a view snapshot: reads
    # from `last` on need no archive. (The view is a cache, kept before the commit: the events up
    # to `last` are the same whether or not the commit lands.)
    boundary = ledger.task(task_id, at=last)
    snapshot = TaskSnapshot.take(boundary)
    ledger.views.keep(task_id, last, ledger.state_of(boundary))
    stored_snapshot = ledger.mapper.to_stored_event(snapshot)
    done = Archive(task_id, first, last, target, digest, head, len(events))

    def commit(recorded: list[ev.TaskEvent]) -> None:
        marker = ledger.mapper.to_stored_event(recorded[0])
        # A lost race with another writer raises IntegrityError: the write path re-reads and tries again.
        ledger.store.commit_archive(done, stored_snapshot, marker, before_commit=lambda: crash_point("before-commit"))

    archived = {"archive": name, "sha256": digest, "first": first, "last": last, "events": len(events),
                "head": head, "actor": "system"}
    ledger.write(task_id, [(ev.EventsArchived, archived)], Draft.record_all, persist=commit)
    crash_point("committed")
    say("giving the space of the archived rows back")
    ledger.store.reclaim_space()
    return done


def verify(ledger: Ledger, task_id: UUID) -> list[str]:
    """Problems with the task's archives or its hash chain across archive and live log (none: all good)."""
    report = verify_task(ledger, task_id)
    if report.first_break is None:
        return []
    found = report.first_break
    if found.kind == "archive":
        return [found.detail]
    return [f"position {found.position}: {found.kind} ({found.detail})"]
