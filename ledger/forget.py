"""Forgetting a task: its content leaves every store irreversibly; a tombstone stays.

Order, so that an interruption is finished by running the same command again:

1. the registry records a ``TaskForgotten`` tombstone (number, id, sha256 of the title,
   when, by whom): from here on the task is gone from `trail list`, and the ledger's
   own log says that, when and by whom it was forgotten;
2. in one transaction: the task's events and snapshots are deleted, its registry entry
   is rewritten without title or slug, the registry's snapshots (which hold titles) are
   deleted, its archive index rows go;
3. the bytes are scrubbed: SQLite deletes with ``secure_delete`` (freed pages are
   zeroed), the WAL is checkpointed and truncated, and the file is vacuumed;
   PostgreSQL tables are rewritten with ``VACUUM FULL``;
4. the files around the ledger: archives, the DuckDB read model (rebuilt on next use),
   the diff blob cache, capture inbox rows and dead letters of its sessions, and the
   active-task pointer.

Limits, in docs/lifecycle.md: branches of a task are tasks of their own (forget them
too); PostgreSQL's own write-ahead log and backups are the server's to expire.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import orjson

from ledger import archive, refs
from ledger import events as ev
from ledger.errors import NotFound
from ledger.location import Location
from ledger.registry import REGISTRY_ID, Entry, Tombstone
from ledger.store import Ledger

FORGOTTEN_TITLE = "[forgotten]"


@dataclass(frozen=True)
class Forgotten:
    tombstone: Tombstone
    events: int
    files_removed: int


@dataclass(frozen=True)
class _Traces:
    """What of the task lives outside its event rows, found before the rows go."""

    sessions: frozenset[str]
    blobs: frozenset[str]
    archives: tuple[Path, ...]


def _traces(ledger: Ledger, task_id: UUID) -> _Traces:
    sessions: set[str] = set()
    blobs: set[str] = set()
    for event in ledger.task_events(task_id):
        if isinstance(event, ev.ConversationLinked):
            sessions.add(event.session_id)
        elif isinstance(event, ev.FileChanged):
            blobs.update(h for h in (event.before_sha256, event.after_sha256) if h)
        if event.source is not None:
            sessions.add(event.source.session)
    paths: list[Path] = []
    for found in archive.archives(ledger, task_id) if _is_sqlite(ledger) else []:
        paths += [found.path, found.path.with_suffix(".manifest.json")]
    return _Traces(frozenset(sessions), frozenset(blobs), tuple(paths))


def _is_sqlite(ledger: Ledger) -> bool:
    return ledger.env.get("PERSISTENCE_MODULE") == "eventsourcing.sqlite"


def _tombstoned_entry(raw: bytes, number: int) -> bytes | None:
    """The registry row for task ``number`` rewritten without its title and slug (None: not that row)."""
    state = orjson.loads(raw)
    entry = state.get("entry") or {}
    if entry.get("number") != number:
        return None
    state["entry"] = {**entry, "title": FORGOTTEN_TITLE, "slug": f"forgotten-{number}"}
    return orjson.dumps(state)


def _wipe_sqlite(path: Path, task_id: UUID, number: int) -> int:
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        con.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
        con.execute("BEGIN IMMEDIATE")
        deleted = con.execute("DELETE FROM stored_events WHERE originator_id = ?", (task_id.hex,)).rowcount
        # Snapshots of the task, and of the registry (they hold titles); the task's archive index rows.
        doomed = (("stored_snapshots", task_id), ("stored_snapshots", REGISTRY_ID), (archive.TABLE, task_id))
        for table, owner in doomed:
            try:
                con.execute(f"DELETE FROM {table} WHERE originator_id = ?", (owner.hex,))
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
        rows = con.execute(
            "SELECT originator_version, state FROM stored_events WHERE originator_id = ? AND topic = ?",
            (REGISTRY_ID.hex, "tasktrail/TaskRegistered"),
        ).fetchall()
        for version, raw in rows:
            if (rewritten := _tombstoned_entry(raw, number)) is not None:
                con.execute(
                    "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                    (rewritten, REGISTRY_ID.hex, version),
                )
        con.execute("COMMIT")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("VACUUM")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(deleted)
    finally:
        con.close()


def _wipe_postgres(location: Location, task_id: UUID, number: int) -> int:
    from psycopg import sql

    from ledger import postgres

    target = location.postgres()
    with postgres.connect(target, location.display) as conn:
        schema = sql.Identifier(target.schema)
        events = sql.SQL("{}.{}").format(schema, sql.Identifier(postgres.EVENTS_TABLE))
        snapshots = sql.SQL("{}.{}").format(schema, sql.Identifier(postgres.SNAPSHOTS_TABLE))
        with conn.transaction():
            deleted = conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s").format(events),
                                   (task_id,)).rowcount
            conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s").format(snapshots), (task_id,))
            rows = conn.execute(
                sql.SQL("SELECT originator_version, state FROM {} WHERE originator_id = %s AND topic = %s")
                .format(events), (REGISTRY_ID, "tasktrail/TaskRegistered"),
            ).fetchall()
            for version, raw in rows:
                if (rewritten := _tombstoned_entry(bytes(raw), number)) is not None:  # type: ignore[call-overload]
                    conn.execute(
                        sql.SQL("UPDATE {} SET state = %s WHERE originator_id = %s AND originator_version = %s")
                        .format(events), (rewritten, REGISTRY_ID, version),
                    )
            conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s").format(snapshots), (REGISTRY_ID,))
        # Dead row versions keep the bytes until the table is rewritten.
        conn.execute(sql.SQL("VACUUM FULL {}").format(events))
        conn.execute(sql.SQL("VACUUM FULL {}").format(snapshots))
        return int(deleted or 0)


def _remove(path: Path) -> int:
    try:
        path.unlink()
        return 1
    except FileNotFoundError:
        return 0


def _scrub_files(ledger: Ledger, location: Location, traces: _Traces) -> int:
    removed = sum(_remove(p) for p in traces.archives)
    from projections.readmodel import readmodel_path

    model = readmodel_path(location)  # rebuilt from the ledger on next use: no forgotten row survives
    removed += sum(_remove(p) for p in (model, model.with_name(model.name + ".wal")))
    blobs = location.home / "blobs"
    removed += sum(_remove(blobs / digest[:2] / digest) for digest in traces.blobs)
    deadletters = location.home / "deadletter"
    if deadletters.is_dir():
        for letter in deadletters.glob("*.json"):
            text = letter.read_text(errors="replace")
            if any(session in text for session in traces.sessions):
                removed += _remove(letter)
    if location.is_sqlite and traces.sessions:
        con = sqlite3.connect(location.sqlite_path, timeout=30)
        try:
            with con:
                for session in traces.sessions:
                    con.execute(
                        "DELETE FROM capture_inbox WHERE json_extract(payload, '$.session_id') = ?", (session,)
                    )
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
        finally:
            con.close()
    return removed


def forget(
    ledger: Ledger, location: Location, entry: Entry | Tombstone, by: str,
    progress: Callable[[str], None] | None = None,
) -> Forgotten:
    """Forget one task (an ``Entry``, or a ``Tombstone`` whose wipe was interrupted)."""
    say = progress or (lambda _: None)
    traces = _traces(ledger, entry.task_id)
    if isinstance(entry, Entry):
        tombstone = Tombstone(
            number=entry.number, task_id=entry.task_id, at=datetime.now(UTC), by=by,
            title_sha256=hashlib.sha256(entry.title.encode()).hexdigest(),
        )
        ledger.mark_forgotten(tombstone)
        say(f"#{entry.number}: tombstone recorded")
    else:
        tombstone = entry
    if location.is_sqlite:
        deleted = _wipe_sqlite(location.sqlite_path, entry.task_id, entry.number)
    else:
        deleted = _wipe_postgres(location, entry.task_id, entry.number)
    say(f"#{entry.number}: {deleted} events deleted and scrubbed")
    removed = _scrub_files(ledger, location, traces)
    refs.clear(location, entry.task_id)
    say(f"#{entry.number}: {removed} files removed")
    return Forgotten(tombstone, deleted, removed)


def stale(ledger: Ledger, cutoff: datetime) -> list[Entry]:
    """Tasks whose last event is older than ``cutoff``."""
    found = []
    for entry in ledger.entries():
        updated = ledger.state(entry.task_id).updated_at
        if updated is not None and updated < cutoff:
            found.append(entry)
    return found


def pending(ledger: Ledger, number: int) -> Tombstone:
    """The tombstone of task ``number``, to finish a forget that was interrupted."""
    for tombstone in ledger.tombstones():
        if tombstone.number == number:
            return tombstone
    raise NotFound(f"no task #{number}, forgotten or not")
