"""Compaction: a task's oldest events move to a verifiable Parquet archive, on any backend.

``compact`` writes positions ``first..last`` (and the snapshots among them) to a
Parquet file through DuckDB, with a manifest beside it, then in ONE transaction of the
ledger's store (``LedgerStore.commit_archive``): records the archive, stores a snapshot
at ``last``, appends an ``EventsArchived`` event and deletes the archived rows. A crash
before that commit leaves the old state (plus an unreferenced archive file that a
re-run overwrites); after it, the new state. Nothing in between is visible. Then the
store gives the space back (``reclaim_space``).

Reads before the boundary come from the archive (``Ledger.task`` and
``Ledger.task_events`` call in here), so the library's silent wrong answer for
``get(version=N)`` below deleted events (pitfall 9 in the engineering note) cannot
happen.

Where archive files live is the store's: beside an SQLite ledger in ``<ledger file>.archive/``;
for PostgreSQL in the database, cached on each machine that reads them.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from ledger.base.crashpoints import CRASH_ENV as CRASH_ENV  # re-exported: the tests aim at the steps below
from ledger.base.crashpoints import crash_point
from ledger.base.errors import NotFound, RuleBroken, TrailError
from ledger.domain import events as ev
from ledger.stores.base import Archive

if TYPE_CHECKING:
    import duckdb

    from ledger.app.store import Ledger
    from ledger.domain.task import Task

STEPS = ("archive-started", "archive-written", "manifest-written", "before-commit", "committed")
"""Where ``compact`` kills its own process when ``TRAIL_CRASH_AT`` (``ledger.base.crashpoints``) names one: its
archive half-written (a temporary file), whole, then named by its manifest, inside the transaction
that swaps the rows for the marker, and after it."""


class ArchiveError(TrailError):
    """An archive is missing, altered, or cannot be written."""

    exit_code = 6


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


def archive_dir(ledger: Ledger) -> Path:
    """The local folder archive files are written to and read from."""
    return ledger.store.archive_dir()


def archives(ledger: Ledger, task_id: UUID | None) -> list[Archive]:
    """The task's archives (every task's when None), oldest first; none for a task never compacted."""
    return ledger.store.archives(task_id)


def live_from(ledger: Ledger, task_id: UUID) -> int:
    """The first position still in the live store (1 when nothing was archived)."""
    found = archives(ledger, task_id)
    return found[-1].last + 1 if found else 1


# -- reading archived events ---------------------------------------------------------


_duck: duckdb.DuckDBPyConnection | None = None
_duck_lock = threading.Lock()


def _cursor() -> duckdb.DuckDBPyConnection:
    """A cursor on one in-memory DuckDB per process: connecting costs ~20 ms, a cursor almost nothing."""
    from ledger.stores import duckdb_offline  # only tasks that were compacted pay for DuckDB

    global _duck
    with _duck_lock:
        if _duck is None:
            _duck = duckdb_offline.connect()
        return _duck.cursor()


_checked: dict[tuple[Path, str], tuple[int, int]] = {}
"""Archive files this process found intact, with the (size, mtime) they had then: read again, one is
hashed again only when either changed."""


def _rows(found: list[Archive], sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    # Every read holds the file to its index row first, so a missing or altered archive is named, not shown.
    for archive in found:
        problem = check_file(archive)
        if problem is not None:
            raise ArchiveError(problem)
    files = [str(a.path) for a in found]
    with _cursor() as con:
        return con.execute(sql.replace("ARCHIVE", "read_parquet($files)"), {"files": files, **dict(params)}).fetchall()


def _stored(task_id: UUID, row: tuple[Any, ...]) -> StoredEvent:
    return StoredEvent(originator_id=task_id, originator_version=row[0], topic=row[1], state=bytes(row[2]))


def archived_rows(archive: Archive, after_notification: int) -> list[tuple[int, StoredEvent]]:
    """An archive's events whose notification id is past ``after_notification``, with those ids."""
    rows = _rows(
        [archive],
        "SELECT notification_id, originator_version, topic, state FROM ARCHIVE WHERE kind = 'event'"
        " AND notification_id > $after ORDER BY originator_version",
        [("after", after_notification)],
    )
    return [(row[0], _stored(archive.task_id, row[1:])) for row in rows]


def archived_snapshots(archive: Archive) -> list[StoredEvent]:
    """The snapshots an archive holds, by position."""
    rows = _rows([archive], "SELECT originator_version, topic, state FROM ARCHIVE WHERE kind = 'snapshot'"
                 " ORDER BY originator_version", [])
    return [_stored(archive.task_id, row) for row in rows]


def archived_events(
    ledger: Ledger, task_id: UUID, after: int, upto: int, found: list[Archive] | None = None
) -> Iterator[ev.TaskEvent]:
    """Archived events with ``after < position <= upto``, in order."""
    found = archives(ledger, task_id) if found is None else found
    if not found or after >= found[-1].last:
        return
    rows = _rows(
        found,
        "SELECT originator_version, topic, state FROM ARCHIVE WHERE kind = 'event'"
        " AND originator_version > $after AND originator_version <= $upto ORDER BY originator_version",
        [("after", after), ("upto", upto)],
    )
    for row in rows:
        yield ledger.mapper.to_domain_event(_stored(task_id, row))  # type: ignore[misc]


def task_at(ledger: Ledger, task_id: UUID, at: int) -> Task:
    """The task after event ``at`` (before the live boundary): nearest archived snapshot plus events."""
    found = archives(ledger, task_id)
    # Find the version first, then read that one state: snapshots are large, and a top-1 over
    # the state column would read every candidate's.
    nearest = _rows(
        found,
        "SELECT max(originator_version) FROM ARCHIVE WHERE kind = 'snapshot' AND originator_version <= $at",
        [("at", at)],
    )[0][0]
    snapshot = (
        _rows(
            found,
            "SELECT originator_version, topic, state FROM ARCHIVE WHERE kind = 'snapshot'"
            " AND originator_version = $version",
            [("version", nearest)],
        )
        if nearest is not None
        else []
    )
    task: Any = None
    start = 0
    if snapshot:
        task = ledger.mapper.to_domain_event(_stored(task_id, snapshot[0])).mutate(None)  # type: ignore[attr-defined]
        start = snapshot[0][0]
    for event in archived_events(ledger, task_id, start, at, found):
        task = event.mutate(task)
    if task is None:
        raise NotFound(f"no task with id {task_id}")
    return task  # type: ignore[no-any-return]


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


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_parquet(rows: list[tuple[Any, ...]], target: Path) -> None:
    """Rows (kind, notification_id, originator_version, topic, state) to ``target``, atomically."""
    tmp = target.with_name(f".{target.name}.tmp")
    from ledger.stores import duckdb_offline

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


def compact(ledger: Ledger, task_id: UUID, before: int, progress: Callable[[str], None] | None = None) -> Archive:
    """Archive the task's live events before ``before`` (see the module docstring for the steps)."""
    from ledger.app.store import Draft
    from ledger.domain.task import TaskSnapshot

    say = progress or (lambda _: None)
    todo = plan(ledger, task_id, before)
    first, last = todo.first, todo.last
    directory = archive_dir(ledger)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"task-{todo.number}-{first}-{last}.parquet"
    target = directory / name

    say(f"reading positions {first}-{last} of task #{todo.number}")
    found = ledger.store.read_range(task_id, first, last)
    if len(found.events) != last - first + 1:
        raise ArchiveError(f"task #{todo.number} is missing live events between {first} and {last}")
    events = [("event", nid, e.originator_version, e.topic, e.state) for nid, e in found.events]
    snapshots = [("snapshot", None, s.originator_version, s.topic, s.state) for s in found.snapshots]
    head = ledger.mapper.to_domain_event(found.events[-1][1]).chain  # type: ignore[attr-defined]
    say(f"writing {len(events)} events and {len(snapshots)} snapshots to {target}")
    _write_parquet(events + snapshots, target)
    crash_point("archive-written")
    digest = _sha256(target)
    manifest = {
        "task_id": str(task_id),
        "task_number": todo.number,
        "archive": name,
        "sha256": digest,
        "count": len(events),
        "snapshots": len(snapshots),
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


# -- verifying -------------------------------------------------------------------------


def check_file(found: Archive) -> str | None:
    """What is wrong with an archive file (missing, not the bytes recorded, or its manifest
    disagreeing with the index), or None."""
    try:
        seen = found.path.stat()
    except OSError:
        return f"archive {found.path} (positions {found.first}-{found.last}) is missing"
    stamp = (seen.st_size, seen.st_mtime_ns)
    if _checked.get((found.path, found.sha256)) == stamp:
        return None
    if _sha256(found.path) != found.sha256:
        return f"archive {found.path} was altered (sha256 differs from the one recorded)"
    manifest = found.path.with_suffix(".manifest.json")
    if manifest.exists():  # absent where only the database holds the archive (a PostgreSQL ledger's cache)
        try:
            said = orjson.loads(manifest.read_bytes())
            agrees = (said["sha256"], said["first_position"], said["last_position"], said["head"]) == (
                found.sha256, found.first, found.last, found.head)
        except (orjson.JSONDecodeError, KeyError, TypeError):
            agrees = False
        if not agrees:
            return f"archive manifest {manifest} does not match the archive recorded for positions " \
                   f"{found.first}-{found.last}"
    _checked[(found.path, found.sha256)] = stamp
    return None


def verify(ledger: Ledger, task_id: UUID) -> list[str]:
    """Problems with the task's archives or its hash chain across archive and live log (none: all good)."""
    from ledger.app.verify import verify_task

    report = verify_task(ledger, task_id)
    if report.first_break is None:
        return []
    found = report.first_break
    if found.kind == "archive":
        return [found.detail]
    return [f"position {found.position}: {found.kind} ({found.detail})"]
