"""The ``LedgerStore`` of an SQLite ledger file: raw SQL on the library's ``stored_events`` and
``stored_snapshots`` tables, plus tasktrail's own tables in the same file.

Each operation opens its own connection in autocommit mode and takes the write lock with
``BEGIN IMMEDIATE`` where it writes, so a change is one transaction; sqlite3 errors come out as
the library's persistence errors (an ``IntegrityError`` is a lost write race the caller
retries). Archive files live beside the ledger, in ``<ledger file>.archive/``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.persistence import IntegrityError, OperationalError, PersistenceError, StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteCursor

from ledger.base import private, upkeep
from ledger.base.crashpoints import crash_point
from ledger.base.location import Location
from ledger.base.schema import (
    ARCHIVES,
    CREATE_EDITS,
    CREATE_LINKS_INDEX,
    EDITS,
    FORGOTTEN_KEYS,
    HEADS,
    LINKED_SESSION_SQL,
    LINKS_INDEX,
    REWRITING,
    SOURCES,
    SOURCES_BY_TASK,
    SQLITE_GUARDS,
    VIEWS,
    Key,
)
from ledger.domain.registry import REGISTRY_ID, TaskRegistered
from ledger.stores.base import (
    UNBOUNDED,
    Archive,
    Head,
    LedgerStore,
    Plain,
    Range,
    Source,
    chain_of,
    heads_of,
    past_prefix,
    refill,
    source_in,
    sources_of,
)

if TYPE_CHECKING:
    from eventsourcing.sqlite import SQLiteDatastore

CREATE_ARCHIVES = f"""CREATE TABLE IF NOT EXISTS {ARCHIVES} (
    originator_id TEXT NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL, path TEXT NOT NULL,
    sha256 TEXT NOT NULL, head TEXT NOT NULL, events INTEGER NOT NULL, PRIMARY KEY (originator_id, first))"""
CREATE_FORGOTTEN = f"""CREATE TABLE IF NOT EXISTS {FORGOTTEN_KEYS} (
    key_sha256 TEXT PRIMARY KEY, task_number INTEGER NOT NULL) WITHOUT ROWID"""

CREATE_VIEWS = f"""CREATE TABLE IF NOT EXISTS {VIEWS} (
    originator_id TEXT NOT NULL, position INTEGER NOT NULL, fold_version INTEGER NOT NULL, state BLOB NOT NULL,
    PRIMARY KEY (originator_id, fold_version, position)) WITHOUT ROWID"""
CREATE_VIEWS_KEY = f"CREATE INDEX IF NOT EXISTS {VIEWS}_key ON {VIEWS} (originator_id, fold_version, position)"
"""The key alone, beside the rows. A view snapshot is 100-250 KB, and a seek in a WITHOUT ROWID table reads
the whole of each row it compares with when the row spills onto overflow pages: finding a task's newest
snapshot took 3-17 ms at 1M events (2,000 snapshots), 0.2 ms through this index (the brief cache's key)."""

CREATE_HEADS = f"""CREATE TABLE IF NOT EXISTS {HEADS} (
    originator_id TEXT PRIMARY KEY, version INTEGER NOT NULL, chain TEXT NOT NULL) WITHOUT ROWID"""
UPSERT_HEAD = f"""INSERT INTO {HEADS} VALUES (?, ?, ?) ON CONFLICT (originator_id) DO UPDATE
    SET version = excluded.version, chain = excluded.chain WHERE excluded.version > {HEADS}.version"""


CREATE_SOURCES = (
    # The table is its own index for the writer's dedupe and the record look-up (agent, record first): a key looked
    # up is one seek. Only events with a source have a row; a row costs two b-tree inserts, and no JSON is parsed.
    f"CREATE TABLE {SOURCES} (agent TEXT NOT NULL, record TEXT NOT NULL, session TEXT NOT NULL,"
    " originator_id TEXT NOT NULL, position INTEGER NOT NULL,"
    " PRIMARY KEY (agent, record, session, originator_id, position)) WITHOUT ROWID",
    f"CREATE INDEX {SOURCES_BY_TASK} ON {SOURCES} (originator_id, agent, session, record)",
)
INSERT_SOURCE = f"INSERT OR IGNORE INTO {SOURCES} VALUES (?, ?, ?, ?, ?)"
_SOURCE_OF = "json_extract(CAST(state AS TEXT), '$.source.{}')"
FILL_SOURCES = (
    f"INSERT OR IGNORE INTO {SOURCES} SELECT {_SOURCE_OF.format('agent')}, {_SOURCE_OF.format('record')},"
    f" {_SOURCE_OF.format('session')}, originator_id, originator_version FROM stored_events"
    " WHERE json_valid(CAST(state AS TEXT)) AND json_type(CAST(state AS TEXT), '$.source') = 'object'")
"""A ledger from before the capture index gets its rows from its events, once (an enciphered row is no JSON)."""


def _source_rows(found: Iterable[Source]) -> list[tuple[str, str, str, str, int]]:
    return [(agent, record, session, owner.hex, position) for owner, position, agent, session, record in found]


TABLE_NAMED = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
"""A row when the ledger has the table of this name (one from before it has not)."""


def _has_table(con: sqlite3.Connection | SQLiteCursor, name: str) -> bool:
    cursor = con.cursor() if isinstance(con, sqlite3.Connection) else con
    cursor.execute(TABLE_NAMED, (name,))
    return cursor.fetchone() is not None


INSERT_SNAPSHOT = "INSERT OR REPLACE INTO stored_snapshots VALUES (?, ?, ?, ?)"
"""A snapshot row as the library's snapshot recorder writes it; a row left at that position by events since
removed is replaced, not a conflict (the events' insert decides whether the position is free)."""


class AnchoredRecorder(SQLiteApplicationRecorder):
    """The library's recorder, plus the head anchor (``ledger.base.schema.HEADS``) in each insert's own transaction:
    one upsert per aggregate appended to, after its rows; and the snapshots taken at the rows' positions.

    ``insert_events`` takes two keywords, both optional (``Ledger._save`` passes them, through the
    library's ``save``): ``heads``, the anchor rows (id hex, position, chain) of the aggregates saved, so
    the last row's JSON is not read back for its chain; ``snapshots``, snapshot rows stored in the same
    transaction (one commit for a batch and its snapshots)."""

    plain: Plain | None = None
    """On an encrypted ledger, how a payload is read for its chain (``Ledger.__init__`` sets it)."""
    keyed = False
    """Whether the capture index (``schema.SOURCES``) was there: once it is, it stays."""

    def _create_table(self, c: SQLiteCursor) -> None:
        fresh = not _has_table(c, HEADS)
        super()._create_table(c)
        if fresh:
            # A ledger from before the anchor starts from the log as it is now (``base.refill``).
            c.execute(CREATE_HEADS)
            c.execute(
                "SELECT e.originator_id, e.originator_version, e.state FROM stored_events e JOIN"
                " (SELECT originator_id, max(originator_version) AS v FROM stored_events GROUP BY originator_id) m"
                " ON e.originator_id = m.originator_id AND e.originator_version = m.v"
            )
            last = [(str(r[0]), int(r[1]), chain_of(bytes(r[2]))) for r in c.fetchall()]
            c.executemany(UPSERT_HEAD, refill(last, REGISTRY_ID.hex))
        _install_guard(c)
        _index_links(c)
        _index_sources(c)

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        # One statement for all the rows (the library's executes one per row, to read each rowid):
        # under this transaction's write lock each row takes the next rowid, so the ids are the
        # last one's and the ones before it.
        hexes: dict[Any, str] = {}
        c.executemany(self.insert_events_statement, [
            (hexes.get(s.originator_id) or hexes.setdefault(s.originator_id, _hex(s.originator_id)),
             s.originator_version, s.topic, s.state)
            for s in stored_events
        ])
        c.execute("SELECT last_insert_rowid()")
        last = int(c.fetchone()[0])
        c.executemany(UPSERT_HEAD, kwargs.get("heads") or heads_of(stored_events, self.plain))
        if self.plain is None:  # an enciphered ledger keeps no keys in clear (``schema.SOURCES``)
            given: Sequence[Source] | None = kwargs.get("sources")
            found = given if given is not None else sources_of(stored_events, None)
            # Asked under this transaction's write lock while not yet seen: an open that builds the index
            # commits before this insert or after it, and its own read of the events holds these rows then.
            if found and (self.keyed or _has_table(c, SOURCES)):
                self.keyed = True
                crash_point("sources-insert")  # events in, keys not: what a kill here leaves (a test)
                c.executemany(INSERT_SOURCE, _source_rows(found))
        snapshots: Sequence[StoredEvent] = kwargs.get("snapshots") or ()
        if snapshots:
            c.executemany(INSERT_SNAPSHOT, [
                (_hex(s.originator_id), s.originator_version, s.topic, s.state) for s in snapshots
            ])
        return list(range(last - len(stored_events) + 1, last + 1))


VIEW_AT = (f"SELECT position, state FROM {VIEWS} WHERE originator_id = ? AND fold_version = ? AND position <= ?"
           " ORDER BY position DESC LIMIT 1")
"""A task's newest view snapshot of a fold version at or before a position: a range of the key, read from its end."""


def _create_views(con: sqlite3.Connection) -> None:
    con.execute(CREATE_VIEWS)
    con.execute(CREATE_VIEWS_KEY)


def _install_guard(c: SQLiteCursor) -> None:
    """The edit journal and its triggers (``schema.EDITS``), on a ledger that has no journal yet (new, or from
    before it). Never on one that has it: a trigger dropped since is a finding reads name, not one to mend
    quietly on the next open. A read-only file is left as it is (its reads check what it has)."""
    if _has_table(c, EDITS):
        return
    try:
        for statement in (*CREATE_EDITS, *SQLITE_GUARDS.values()):
            c.execute(statement)
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise


def _index_links(c: SQLiteCursor) -> None:
    """The session-link index (``schema.CREATE_LINKS_INDEX``): built once on a ledger from before it (one read
    of the table: about 3 s at a million events), not by a hook on a large one (``base.upkeep``), a no-op after.
    A read-only file is left as it is (its lookups read the table, as before)."""
    c.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (LINKS_INDEX,))
    if c.fetchone() is not None:
        return
    c.execute("SELECT coalesce(max(rowid), 0) FROM stored_events")
    if not upkeep.may_build(int(c.fetchone()[0])):
        return  # a hook on a large older ledger: its lookups read the table, as before, until a command builds it
    try:
        c.execute(CREATE_LINKS_INDEX)
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise


def _index_sources(c: SQLiteCursor) -> None:
    """The capture index (``schema.SOURCES``), made on a new ledger and built once on one from before it, from its
    events, in the open's transaction (so it is whole or absent); as for the links, not by a hook on a large one,
    and a read-only file is left as it is (its questions read the events, as before)."""
    if _has_table(c, SOURCES):
        return
    c.execute("SELECT coalesce(max(rowid), 0) FROM stored_events")
    if not upkeep.may_build(int(c.fetchone()[0])):
        return
    try:
        for statement in CREATE_SOURCES:
            c.execute(statement)
        c.execute(FILL_SOURCES)
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise


@contextmanager
def _rewriting(con: sqlite3.Connection) -> Iterator[None]:
    """tasktrail's own rewrite, inside the caller's write transaction: the journal's triggers record nothing
    of it (the marker row is gone again before the commit). A ledger without the journal has nothing to mark."""
    if not _has_table(con, REWRITING):
        yield
        return
    con.execute(f"INSERT OR IGNORE INTO {REWRITING} VALUES (1)")
    yield
    con.execute(f"DELETE FROM {REWRITING}")


def _hex(originator_id: UUID | str) -> str:
    return originator_id.hex if isinstance(originator_id, UUID) else originator_id


def _missing_table(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


@contextmanager
def _translated() -> Iterator[None]:
    """sqlite3's errors as the library's, so callers handle one family on every backend."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise IntegrityError(str(exc)) from exc
    except sqlite3.OperationalError as exc:
        raise OperationalError(str(exc)) from exc
    except sqlite3.Error as exc:
        raise PersistenceError(str(exc)) from exc


class SQLiteStore(LedgerStore):
    backend = "sqlite"

    def __init__(self, path: Path, datastore: SQLiteDatastore | None = None) -> None:
        self.path = path
        self.datastore = datastore
        """The open ledger's recorder's connections (``stores.for_ledger``): the rules' look-ups
        (``topics``, ``topics_before``, ``archives``: several per command) read on one of them, not a new
        connection each."""
        self._built = False

    def _connect(self) -> sqlite3.Connection:
        # Autocommit, so BEGIN IMMEDIATE is ours to issue.
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """A connection for reads, or None when there is no file yet (nothing to find)."""
        if not self.path.is_file():
            yield None
            return
        with _translated():
            con = self._connect()
            try:
                yield con
            finally:
                con.close()

    @contextmanager
    def _looking_up(self) -> Iterator[Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]]:
        """Rows of read-only queries in one read transaction: on the recorder's pooled connection where
        the store has one (opening a connection costs 2-5 ms on a busy machine), else (none, or the ledger
        closed) on a new one."""
        if self.datastore is None or self.datastore.pool.closed:
            with self._reading() as con:
                yield (lambda query, args: []) if con is None else (
                    lambda query, args: con.execute(query, args).fetchall())
            return
        with _translated(), self.datastore.transaction(commit=False) as cursor:

            def rows(query: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
                cursor.execute(query, args)
                return [tuple(row) for row in cursor.fetchall()]  # the library's rows are sqlite3.Row

            yield rows

    @contextmanager
    def _writing(self, con: sqlite3.Connection | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction (rolled back on any error)."""
        with _translated():
            own = con is None
            con = con or self._connect()
            try:
                con.execute("BEGIN IMMEDIATE")
                try:
                    yield con
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
            finally:
                if own:
                    con.close()

    # -- archives ------------------------------------------------------------------------

    def archive_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".archive")

    def archives(self, task_id: UUID | None) -> list[Archive]:
        # On the shared connection: every load and every rule's search of the log asks this.
        with self._looking_up() as rows_of:
            try:
                rows = rows_of(
                    f"SELECT originator_id, first, last, path, sha256, head, events FROM {ARCHIVES}"
                    " WHERE originator_id = coalesce(?, originator_id) ORDER BY originator_id, first",
                    (task_id.hex if task_id else None,),
                )
            except sqlite3.OperationalError as exc:
                if _missing_table(exc):
                    return []
                raise
        base = self.archive_dir()
        return [Archive(UUID(hex=r[0]), r[1], r[2], base / r[3], r[4], r[5], r[6]) for r in rows]

    def range_size(self, task_id: UUID, first: int, last: int) -> tuple[int, int, int]:
        with self._reading() as con:
            assert con is not None
            events = con.execute(
                "SELECT count(*), coalesce(sum(length(state)), 0) FROM stored_events"
                " WHERE originator_id = ? AND originator_version BETWEEN ? AND ?",
                (task_id.hex, first, last),
            ).fetchone()
            snaps = con.execute(
                "SELECT count(*), coalesce(sum(length(state)), 0) FROM stored_snapshots"
                " WHERE originator_id = ? AND originator_version < ?",
                (task_id.hex, last),
            ).fetchone()
        return events[0], snaps[0], events[1] + snaps[1]

    def read_range(self, task_id: UUID, first: int, last: int) -> Range:
        with self._reading() as con:
            assert con is not None
            events = con.execute(
                "SELECT rowid, originator_version, topic, state FROM stored_events"
                " WHERE originator_id = ? AND originator_version BETWEEN ? AND ? ORDER BY originator_version",
                (task_id.hex, first, last),
            ).fetchall()
            snapshots = con.execute(
                "SELECT originator_version, topic, state FROM stored_snapshots"
                " WHERE originator_id = ? AND originator_version < ? ORDER BY originator_version",
                (task_id.hex, last),
            ).fetchall()
        return Range(
            [(rowid, StoredEvent(task_id, v, t, bytes(s))) for rowid, v, t, s in events],
            [StoredEvent(task_id, v, t, bytes(s)) for v, t, s in snapshots],
        )

    def commit_archive(
        self, archive: Archive, snapshot: StoredEvent, marker: StoredEvent, before_commit: Callable[[], None]
    ) -> bool:
        owner = archive.task_id.hex
        with self._writing() as con:
            con.execute(CREATE_ARCHIVES)
            done = con.execute(
                f"SELECT 1 FROM {ARCHIVES} WHERE originator_id = ? AND last >= ?", (owner, archive.last)
            ).fetchone()
            if done:  # another process finished this compaction while we wrote the file
                return False
            self._insert_archive(con, archive)
            con.execute(
                "INSERT OR REPLACE INTO stored_snapshots VALUES (?, ?, ?, ?)",
                (owner, snapshot.originator_version, snapshot.topic, snapshot.state),
            )
            con.execute(
                "INSERT INTO stored_events VALUES (?, ?, ?, ?)",
                (owner, marker.originator_version, marker.topic, marker.state),
            )
            con.execute(CREATE_HEADS)
            con.executemany(UPSERT_HEAD, heads_of([marker], self._plain()))
            with _rewriting(con):
                con.execute(
                    "DELETE FROM stored_events WHERE originator_id = ? AND originator_version BETWEEN ? AND ?",
                    (owner, archive.first, archive.last),
                )
            if _has_table(con, SOURCES):  # the index holds live events only, as the questions read them
                con.execute(f"DELETE FROM {SOURCES} WHERE originator_id = ? AND position BETWEEN ? AND ?",
                            (owner, archive.first, archive.last))
            con.execute(
                "DELETE FROM stored_snapshots WHERE originator_id = ? AND originator_version < ?",
                (owner, archive.last),
            )
            _create_views(con)
            con.execute(f"DELETE FROM {VIEWS} WHERE originator_id = ? AND position < ?", (owner, archive.last))
            before_commit()
        return True

    def put_archive(self, archive: Archive) -> None:
        with self._writing() as con:
            con.execute(CREATE_ARCHIVES)
            self._insert_archive(con, archive)

    def _insert_archive(self, con: sqlite3.Connection, archive: Archive) -> None:
        con.execute(
            f"INSERT INTO {ARCHIVES} VALUES (?, ?, ?, ?, ?, ?, ?)",
            (archive.task_id.hex, archive.first, archive.last, archive.path.name, archive.sha256, archive.head,
             archive.events),
        )

    # -- the head anchor ---------------------------------------------------------------------

    def head(self, task_id: UUID) -> Head | None:
        with self._reading() as con:
            if con is None:
                return None
            try:
                row = con.execute(f"SELECT version, chain FROM {HEADS} WHERE originator_id = ?",
                                  (task_id.hex,)).fetchone()
            except sqlite3.OperationalError as exc:
                if _missing_table(exc):
                    return None
                raise
        return Head(int(row[0]), str(row[1])) if row else None

    # -- snapshots of the view --------------------------------------------------------------

    def view_snapshot(self, task_id: UUID, upto: int | None, fold_version: int) -> tuple[int, bytes] | None:
        with self._reading() as con:
            if con is None:
                return None
            try:
                row = con.execute(VIEW_AT, (task_id.hex, fold_version, UNBOUNDED if upto is None else upto)).fetchone()
            except sqlite3.OperationalError as exc:
                if _missing_table(exc):
                    return None
                raise
        return (int(row[0]), bytes(row[1])) if row else None

    def put_view_snapshot(self, task_id: UUID, position: int, fold_version: int, state: bytes) -> None:
        # No wait for the write lock: a read keeps its view snapshot when the file is free, else the next one does.
        with _translated():
            con = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        try:
            with self._writing(con):
                _create_views(con)
                con.execute(f"INSERT OR REPLACE INTO {VIEWS} VALUES (?, ?, ?, ?)",
                            (task_id.hex, position, fold_version, state))
        finally:
            con.close()

    def drop_view_snapshots(self, task_id: UUID, first: int = 0, last: int | None = None) -> int:
        with self._writing() as con:
            _create_views(con)
            return int(con.execute(
                f"DELETE FROM {VIEWS} WHERE originator_id = ? AND position >= ? AND position <= coalesce(?, position)",
                (task_id.hex, first, last),
            ).rowcount)

    # -- the edit journal ----------------------------------------------------------------------

    def changed_outside(self, task_id: UUID) -> tuple[int, str] | None:
        with self._reading() as con:
            if con is None:
                return None
            if not _has_table(con, EDITS):
                return None  # a ledger from before the journal, on a file this process could not add it to
            found = dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                                     " AND tbl_name = 'stored_events'").fetchall())
            if any(found.get(name) != text for name, text in SQLITE_GUARDS.items()) or con.execute(
                    f"SELECT 1 FROM {REWRITING}").fetchone():
                return 0, "guard"
            row = con.execute(f"SELECT position, change FROM {EDITS} WHERE originator_id = ?"
                              " ORDER BY position LIMIT 1", (task_id.hex,)).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    # -- rewriting and deleting --------------------------------------------------------------

    def rewrite_states(
        self, task_id: UUID | None, topics: Iterable[str], rewrite: Callable[[bytes], bytes | None], dry_run: bool
    ) -> dict[UUID, int]:
        wanted = list(topics)
        rewrite = self._through(rewrite)
        first_touched: dict[str, int] = {}
        latest: dict[UUID, int] = {}
        con = self._connect()
        try:
            with self._writing(con):
                rows = con.execute(
                    "SELECT rowid, originator_id, originator_version, state FROM stored_events"
                    f" WHERE originator_id = coalesce(?, originator_id) AND topic IN ({','.join('?' * len(wanted))})",
                    (task_id.hex if task_id else None, *wanted),
                ).fetchall()
                keyed = self.cipher is None and _has_table(con, SOURCES)
                with _rewriting(con):
                    for rowid, owner, position, raw in rows:
                        changed = rewrite(bytes(raw))
                        if changed is None:
                            continue
                        first_touched[owner] = min(position, first_touched.get(owner, position))
                        if not dry_run:
                            con.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (changed, rowid))
                            if keyed and (now := source_in(changed)) != source_in(bytes(raw)):
                                self._rekey(con, owner, position, now)
                _create_views(con)
                for owner, position in first_touched.items():
                    con.execute("DELETE FROM stored_snapshots WHERE originator_id = ? AND originator_version >= ?",
                                (owner, position))
                    # The views hold outputs too: those folded from a rewritten event go with it.
                    con.execute(f"DELETE FROM {VIEWS} WHERE originator_id = ? AND position >= ?", (owner, position))
                    latest[UUID(hex=owner)] = con.execute(
                        "SELECT max(originator_version) FROM stored_events WHERE originator_id = ?", (owner,)
                    ).fetchone()[0]
                if dry_run:
                    raise _DryRun
        except _DryRun:
            pass
        finally:
            con.close()
        return latest

    @staticmethod
    def _rekey(con: sqlite3.Connection, owner: str, position: int, source: Key | None) -> None:
        """A rewrite changed an event's source (none of tasktrail's do): its index row follows."""
        con.execute(f"DELETE FROM {SOURCES} WHERE originator_id = ? AND position = ?", (owner, position))
        if source is not None:
            con.executemany(INSERT_SOURCE, _source_rows([(UUID(hex=owner), position, *source)]))

    def delete_task(
        self, task_id: UUID, number: int, key_hashes: Iterable[str], registry_rewrite: Callable[[bytes], bytes | None]
    ) -> int:
        registry_rewrite = self._through(registry_rewrite)
        con = self._connect()
        try:
            con.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
            with self._writing(con):
                con.execute(CREATE_ARCHIVES)
                con.execute(CREATE_FORGOTTEN)
                con.executemany(
                    f"INSERT OR IGNORE INTO {FORGOTTEN_KEYS} VALUES (?, ?)", ((h, number) for h in key_hashes)
                )
                with _rewriting(con):
                    deleted = con.execute("DELETE FROM stored_events WHERE originator_id = ?",
                                          (task_id.hex,)).rowcount
                if _has_table(con, SOURCES):
                    con.execute(f"DELETE FROM {SOURCES} WHERE originator_id = ?", (task_id.hex,))
                # Snapshots of the task, and of the registry (they hold titles); the task's archive index rows.
                con.execute(CREATE_HEADS)
                _create_views(con)
                for table, owner in (("stored_snapshots", task_id), ("stored_snapshots", REGISTRY_ID),
                                     (ARCHIVES, task_id), (HEADS, task_id), (VIEWS, task_id)):
                    con.execute(f"DELETE FROM {table} WHERE originator_id = ?", (owner.hex,))
                rows = con.execute(
                    "SELECT originator_version, state FROM stored_events WHERE originator_id = ? AND topic = ?",
                    (REGISTRY_ID.hex, TaskRegistered.TOPIC),
                ).fetchall()
                with _rewriting(con):
                    for version, raw in rows:
                        if (rewritten := registry_rewrite(bytes(raw))) is not None:
                            con.execute(
                                "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                                (rewritten, REGISTRY_ID.hex, version),
                            )
            return int(deleted)
        finally:
            con.close()

    # -- tombstoned source keys -------------------------------------------------------------

    def forgotten(self, hashes: Iterable[str]) -> dict[str, int]:
        wanted = list(hashes)
        found: dict[str, int] = {}
        if not wanted:
            return found
        with self._reading() as con:
            if con is None:
                return found
            try:
                for start in range(0, len(wanted), 500):
                    chunk = wanted[start : start + 500]
                    found.update(con.execute(
                        f"SELECT key_sha256, task_number FROM {FORGOTTEN_KEYS}"
                        f" WHERE key_sha256 IN ({','.join('?' * len(chunk))})", chunk,
                    ).fetchall())
            except sqlite3.OperationalError as exc:
                if not _missing_table(exc):
                    raise
        return found

    def tombstoned_keys(self) -> dict[str, int]:
        with self._reading() as con:
            if con is None:
                return {}
            try:
                return dict(con.execute(f"SELECT key_sha256, task_number FROM {FORGOTTEN_KEYS}").fetchall())
            except sqlite3.OperationalError as exc:
                if _missing_table(exc):
                    return {}
                raise

    def tombstone_keys(self, hashes: dict[str, int]) -> None:
        with self._writing() as con:
            con.execute(CREATE_FORGOTTEN)
            con.executemany(f"INSERT OR IGNORE INTO {FORGOTTEN_KEYS} VALUES (?, ?)", hashes.items())

    # -- the capture index (``schema.SOURCES``; json_extract over the stored state without it) -----------

    def _indexed(self) -> bool:
        if not self._built:
            with self._looking_up() as rows:
                self._built = bool(rows(TABLE_NAMED, (SOURCES,)))
        return self._built

    def _held(self, task_id: UUID, upto: int, keys: set[Key]) -> set[Key]:
        by_session: dict[tuple[str, str], list[str]] = {}
        for agent, session, record in keys:
            by_session.setdefault((agent, session), []).append(record)
        found: set[Key] = set()
        with self._looking_up() as rows:
            for (agent, session), records in by_session.items():
                for at in range(0, len(records), 500):  # SQLite's bound on host parameters is 999 in old builds
                    chunk = records[at : at + 500]
                    found.update((agent, session, str(r)) for (r,) in rows(
                        f"SELECT record FROM {SOURCES} WHERE agent = ? AND record IN ({','.join('?' * len(chunk))})"
                        " AND session = ? AND originator_id = ? AND position <= ?",
                        (agent, *chunk, session, task_id.hex, upto)))
        return found

    def _records(self, task_id: UUID, upto: int, agent: str, session: str, prefix: str) -> set[str]:
        bound = past_prefix(prefix)
        with self._looking_up() as rows:
            return {str(r) for (r,) in rows(
                f"SELECT record FROM {SOURCES} INDEXED BY {SOURCES_BY_TASK} WHERE originator_id = ? AND agent = ?"
                " AND session = ? AND record >= ? AND position <= ?" + ("" if bound is None else " AND record < ?"),
                (task_id.hex, agent, session, prefix, upto, *([] if bound is None else [bound])))}

    def _task_of_records(self, agent: str, records: list[str], indexed: bool) -> UUID | None:
        if indexed:
            with self._looking_up() as rows:
                for at in range(0, len(records), 500):
                    chunk = records[at : at + 500]
                    found = rows(f"SELECT originator_id FROM {SOURCES} WHERE agent = ?"
                                 f" AND record IN ({','.join('?' * len(chunk))}) LIMIT 1", (agent, *chunk))
                    if found:
                        return UUID(str(found[0][0]))
            return None
        with self._reading() as con:
            if con is None:
                return None
            con.execute("CREATE TEMP TABLE wanted (record TEXT PRIMARY KEY)")
            con.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((r,) for r in records))
            row = con.execute(
                "SELECT originator_id FROM stored_events WHERE json_extract(state, '$.source.agent') = ? "
                "AND json_extract(state, '$.source.record') IN (SELECT record FROM wanted) LIMIT 1",
                (agent,),
            ).fetchone()
        return UUID(row[0]) if row else None

    def _source_keys(self, task_id: UUID, upto: int) -> set[Key]:
        with self._reading() as con:
            if con is None:
                return set()
            rows = con.execute(
                "SELECT json_extract(state, '$.source.agent'), json_extract(state, '$.source.session'), "
                "json_extract(state, '$.source.record') FROM stored_events WHERE originator_id = ? "
                "AND originator_version <= ? AND json_extract(state, '$.source') IS NOT NULL",
                (task_id.hex, upto),
            ).fetchall()
        return {(str(a), str(s), str(r)) for a, s, r in rows}

    def topics(self, task_id: UUID, positions: Iterable[int]) -> dict[int, str]:
        wanted, found = sorted(set(positions)), dict[int, str]()
        with self._looking_up() as rows:
            for at in range(0, len(wanted), 500):  # SQLite's bound on host parameters is 999 in old builds
                chunk = wanted[at : at + 500]
                found.update((int(v), str(t)) for v, t in rows(
                    "SELECT originator_version, topic FROM stored_events WHERE originator_id = ?"
                    f" AND originator_version IN ({','.join('?' * len(chunk))})", (task_id.hex, *chunk)))
        return found

    def topics_before(self, task_id: UUID, before: int, limit: int) -> list[tuple[int, str]]:
        with self._looking_up() as rows:
            return [(int(v), str(t)) for v, t in rows(
                "SELECT originator_version, topic FROM stored_events WHERE originator_id = ?"
                " AND originator_version < ? ORDER BY originator_version DESC LIMIT ?", (task_id.hex, before, limit))]

    def task_for_session(self, agent: str, session_id: str) -> UUID | None:
        if self.cipher is not None:
            return self._scanned_session(agent, session_id)
        with self._reading() as con:
            if con is None:
                return None
            row = con.execute(LINKED_SESSION_SQL, (agent, session_id)).fetchone()
        return UUID(row[0]) if row else None

    def _rows_newest_first(self, task_id: UUID | None, topic: str | None, upto: int | None
                           ) -> Iterator[tuple[str, bytes]]:
        with self._reading() as con:
            if con is None:
                return
            yield from ((str(owner), bytes(raw)) for owner, raw in con.execute(
                "SELECT originator_id, state FROM stored_events WHERE originator_id = coalesce(?, originator_id)"
                " AND topic = coalesce(?, topic) AND originator_version <= coalesce(?, originator_version)"
                " ORDER BY rowid DESC",
                (task_id.hex if task_id else None, topic, upto),
            ))

    # -- space ----------------------------------------------------------------------------------

    def reclaim_space(self, scrub: bool = False) -> None:
        """VACUUM rewrites the file without free pages; the WAL is checkpointed and truncated around
        it, so the file on disk shrinks now (``scrub``: freed pages were zeroed by ``secure_delete``
        when the rows were deleted, and VACUUM leaves no copy of them in the WAL)."""
        with _translated():
            con = self._connect()
            try:
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                con.execute("VACUUM")
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                con.close()

    def file_bytes(self) -> int | None:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    # -- whole ledgers -------------------------------------------------------------------------

    @classmethod
    def exists(cls, location: Location) -> bool:
        return location.sqlite_path.is_file()

    @classmethod
    def staging_for(cls, target: Location) -> Location:
        path = target.sqlite_path
        return Location(url=f"sqlite:{path.with_name(f'.{path.name}.migrating')}", home=target.home)

    @classmethod
    def publish(cls, staging: Location, target: Location) -> None:
        """Archive files first (unreferenced until the file is in place), then the file in one rename."""
        source, path = staging.sqlite_path, target.sqlite_path
        for one in (source, path):
            if one.exists():
                _single_file(one)  # no -wal/-shm may stay beside a file that is replaced
        staged = SQLiteStore(source).archive_dir()
        if staged.is_dir():
            archive_dir = SQLiteStore(path).archive_dir()
            private.folder(archive_dir)
            for found in staged.iterdir():
                os.replace(found, archive_dir / found.name)
        os.replace(source, path)
        cls.discard(staging)

    @classmethod
    def discard(cls, staging: Location) -> None:
        path = staging.sqlite_path
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(SQLiteStore(path).archive_dir(), ignore_errors=True)


class _DryRun(Exception):
    """Rolls a dry run's transaction back."""


def _single_file(path: Path) -> None:
    """Fold the WAL into the file and leave rollback-journal mode, so the file alone is the ledger."""
    con = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.execute("PRAGMA journal_mode=DELETE")
    finally:
        con.close()
