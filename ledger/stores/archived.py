"""Reading a task's archived events: what compaction (``ledger.app.archive``) moved to Parquet.

The Ledger reads positions before the live boundary from here (``Ledger.task``, ``Ledger.task_events``),
so the library's silent wrong answer for ``get(version=N)`` below deleted events (pitfall 9 in the
engineering note) cannot happen; verify, forget, migrate and the read model read archives here too.
This is the reader below the Ledger; the compaction operation above it stays in ``ledger.app.archive``.
Every function takes what it reads from as ``Source`` (the Ledger is one), not the Ledger.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import orjson
from eventsourcing.persistence import Mapper, StoredEvent

from ledger.base.errors import NotFound, TrailError
from ledger.stores.base import Archive, LedgerStore

if TYPE_CHECKING:
    import duckdb

    from ledger.domain import events as ev
    from ledger.domain.task import Task


class ArchiveError(TrailError):
    """An archive is missing, altered, or cannot be written."""

    exit_code = 6


class Source(Protocol):
    """What archives are read from: the ledger's store and the mapper that decodes its rows."""

    @property
    def store(self) -> LedgerStore: ...

    @property
    def mapper(self) -> Mapper[UUID]: ...


def archive_dir(ledger: Source) -> Path:
    """The local folder archive files are written to and read from."""
    return ledger.store.archive_dir()


def archives(ledger: Source, task_id: UUID | None) -> list[Archive]:
    """The task's archives (every task's when None), oldest first; none for a task never compacted."""
    return ledger.store.archives(task_id)


def live_from(ledger: Source, task_id: UUID) -> int:
    """The first position still in the live store (1 when nothing was archived)."""
    found = archives(ledger, task_id)
    return found[-1].last + 1 if found else 1


# -- reading archived events ---------------------------------------------------------


_duck: duckdb.DuckDBPyConnection | None = None
_duck_lock = threading.Lock()


def _cursor() -> duckdb.DuckDBPyConnection:
    """A cursor on one in-memory DuckDB per process: connecting costs ~20 ms, a cursor almost nothing."""
    from ledger.stores import duckdb_offline  # only tasks that were compacted pay for DuckDB (~20 ms)

    global _duck
    with _duck_lock:
        if _duck is None:
            _duck = duckdb_offline.connect()
            # Each read of an archive is 2-3 queries: without the cache each parses the file's footer again
            # (~3 ms at 200k events). DuckDB keys it by the file's modification time, as ``_checked`` is.
            _duck.execute("SET parquet_metadata_cache = true")
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
    ledger: Source, task_id: UUID, after: int, upto: int, found: list[Archive] | None = None
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


def task_at(ledger: Source, task_id: UUID, at: int) -> Task:
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


VIEW = "view"
"""The ``kind`` of an archive's view snapshots (``ledger.app.views``), beside its ``event`` and ``snapshot`` rows;
archives written before them hold none, and reads of those fold from the nearest live or archived one."""


def view_topic(fold_version: int) -> str:
    """What an archived view snapshot's ``topic`` names: the fold that made it (another fold's are passed over)."""
    return f"view:{fold_version}"


def archived_view(ledger: Source, task_id: UUID, upto: int, fold_version: int) -> tuple[int, bytes] | None:
    """The newest view snapshot of ``fold_version`` the task's archives hold at or before ``upto``, as
    stored (position, bytes); None when none does, or when ``upto`` is live (the live store has its own)."""
    found = archives(ledger, task_id)
    if not found or upto >= found[-1].last:
        return None
    found = [a for a in found if a.first <= upto]
    if not found:
        return None
    # The version first, then that one state: views are large, and a top-1 would read every candidate's.
    topic = view_topic(fold_version)
    nearest = _rows(
        found,
        f"SELECT max(originator_version) FROM ARCHIVE WHERE kind = '{VIEW}' AND topic = $topic"
        " AND originator_version <= $upto",
        [("topic", topic), ("upto", upto)],
    )[0][0]
    if nearest is None:
        return None
    rows = _rows(
        found,
        f"SELECT state FROM ARCHIVE WHERE kind = '{VIEW}' AND topic = $topic AND originator_version = $version",
        [("topic", topic), ("version", nearest)],
    )
    return (int(nearest), bytes(rows[0][0])) if rows else None


# -- verifying -------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    if file_sha256(found.path) != found.sha256:
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


# -- what the rules look up --------------------------------------------------------------


def archived_topic(ledger: Source, task_id: UUID, position: int) -> str | None:
    """The topic of the archived event at ``position``, None when no archive holds it."""
    found = [a for a in archives(ledger, task_id) if a.first <= position <= a.last]
    if not found:
        return None
    rows = _rows(found, "SELECT topic FROM ARCHIVE WHERE kind = 'event' AND originator_version = $position",
                 [("position", position)])
    return str(rows[0][0]) if rows else None


def archived_topics(ledger: Source, task_id: UUID, before: int) -> Iterator[tuple[int, str]]:
    """(position, topic) of the archived events below ``before``, latest first (no state is read)."""
    found = [a for a in archives(ledger, task_id) if a.first < before]
    if not found:
        return
    rows = _rows(found, "SELECT originator_version, topic FROM ARCHIVE WHERE kind = 'event'"
                 " AND originator_version < $before ORDER BY originator_version DESC", [("before", before)])
    for row in rows:
        yield int(row[0]), str(row[1])
