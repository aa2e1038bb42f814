"""The ``LedgerStore`` of a PostgreSQL ledger, and opening one: library settings from the URL, a fast first check.

The library's connection pool retries in the background and reports only
"couldn't get a connection after N sec", so one direct connection is made first:
it fails within the URL's ``connect_timeout`` and says why (refused, bad password,
no such database), and it creates the schema named in the URL on first use, as the
SQLite file is created on first use, and tasktrail's own tables beside the library's.

The store runs its SQL on the library's own connection pool (``PostgresDatastore``), so its
errors are the library's (an ``IntegrityError`` is a lost write race the caller retries).
Archives are kept in the database, Parquet bytes in ``tasktrail_archives.data``, so every
machine that shares the ledger reads them; each machine caches the files it reads under
``$TRAIL_HOME/archives/``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit
from uuid import UUID

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import sql
from psycopg.rows import DictRow, tuple_row

from ledger.base import private, upkeep
from ledger.base.crashpoints import crash_point
from ledger.base.errors import BadInput, PermissionDenied, StoreUnavailable
from ledger.base.location import Location, PostgresTarget
from ledger.base.oneline import one_line, reason
from ledger.base.schema import (
    ARCHIVES,
    EDITS,
    FORGOTTEN_KEYS,
    HEADS,
    LINKED_TOPIC,
    LINKS_INDEX,
    SOURCES,
    SOURCES_BY_TASK,
    VIEWS,
    Key,
)
from ledger.domain.registry import REGISTRY_ID, TaskRegistered
from ledger.stores import pgaccess
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

EVENTS_TABLE = "tasktrail_events"
"""The library names tables ``<application name>_events``; the application is called tasktrail."""
SNAPSHOTS_TABLE = "tasktrail_snapshots"
RECLAIM_LOCK_WAIT = 5
"""Seconds compaction's VACUUM FULL waits for a table's lock before settling for plain VACUUM."""
OWN_TABLES = (EVENTS_TABLE, SNAPSHOTS_TABLE, ARCHIVES, FORGOTTEN_KEYS, HEADS, VIEWS, pgaccess.TASK_PROJECTS, EDITS,
              SOURCES)
"""Every table of a ledger: what a migration moves into place."""

CREATE = (
    f"CREATE TABLE IF NOT EXISTS {{schema}}.{ARCHIVES} (originator_id uuid NOT NULL, first bigint NOT NULL,"
    " last bigint NOT NULL, path text NOT NULL, sha256 text NOT NULL, head text NOT NULL, events bigint NOT NULL,"
    " data bytea NOT NULL, PRIMARY KEY (originator_id, first))",
    f"CREATE TABLE IF NOT EXISTS {{schema}}.{FORGOTTEN_KEYS} (key_sha256 text PRIMARY KEY,"
    " task_number bigint NOT NULL)",
)
CREATE_VIEWS = (f"CREATE TABLE IF NOT EXISTS {{schema}}.{VIEWS} (originator_id uuid NOT NULL,"
                " position bigint NOT NULL, fold_version bigint NOT NULL, state bytea NOT NULL,"
                " PRIMARY KEY (originator_id, fold_version, position))")
CREATE_HEADS = (f"CREATE TABLE IF NOT EXISTS {{schema}}.{HEADS} (originator_id uuid PRIMARY KEY,"
                " version bigint NOT NULL, chain text NOT NULL)")
UPSERT_HEAD = (f"INSERT INTO {{schema}}.{HEADS} AS h VALUES (%s, %s, %s) ON CONFLICT (originator_id) DO UPDATE"
               " SET version = EXCLUDED.version, chain = EXCLUDED.chain WHERE EXCLUDED.version > h.version")


INSERT_PROJECT = (f"INSERT INTO {{schema}}.{pgaccess.TASK_PROJECTS} VALUES (%s, %s, %s, %s)"
                  " ON CONFLICT (originator_id, registry_version) DO NOTHING")

UPSERT_SNAPSHOT = (f"INSERT INTO {{schema}}.{SNAPSHOTS_TABLE} (originator_id, originator_version, topic, state)"
                   " VALUES (%s, %s, %s, %s) ON CONFLICT (originator_id, originator_version) DO UPDATE"
                   " SET topic = EXCLUDED.topic, state = EXCLUDED.state")


GUARD = "tasktrail_guard"
REWRITING = "tasktrail.rewriting"
"""The setting tasktrail's own rewrites turn on for their transaction (``_rewriting``): the guard records nothing."""
GUARD_BODY = (
    " BEGIN IF current_setting('" + REWRITING + "', true) = 'on' THEN RETURN NULL; END IF;"
    f" INSERT INTO {{schema}}.{EDITS} (originator_id, position, change)"
    " VALUES (OLD.originator_id, OLD.originator_version, lower(TG_OP));"
    " IF TG_OP = 'UPDATE' AND (NEW.originator_id, NEW.originator_version)"
    " IS DISTINCT FROM (OLD.originator_id, OLD.originator_version) THEN"
    f" INSERT INTO {{schema}}.{EDITS} (originator_id, position, change)"
    " VALUES (NEW.originator_id, NEW.originator_version, 'update'); END IF; RETURN NULL; END ")
"""The edit journal's trigger function (``schema.EDITS``), as ``pg_proc.prosrc`` holds it: reads hold it to this."""
GUARD_TYPE = 1 | 8 | 16
"""``pg_trigger.tgtype`` of the guard: for each row, after DELETE or UPDATE (an upsert's update included)."""
CREATE_GUARD = (
    f"CREATE TABLE {{schema}}.{EDITS} (id bigserial PRIMARY KEY, originator_id uuid NOT NULL,"
    " position bigint NOT NULL, change text NOT NULL, at timestamptz NOT NULL DEFAULT now())",
    f"CREATE INDEX ON {{schema}}.{EDITS} (originator_id, position)",
    f"CREATE OR REPLACE FUNCTION {{schema}}.{GUARD}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER"
    " SET search_path = pg_catalog, pg_temp AS $$" + GUARD_BODY + "$$",
    f"CREATE TRIGGER {GUARD} AFTER UPDATE OR DELETE ON {{schema}}.{EVENTS_TABLE} FOR EACH ROW"
    f" EXECUTE FUNCTION {{schema}}.{GUARD}()",
    # Fires in a replica session too (``session_replication_role``), which would skip an ordinary trigger.
    f"ALTER TABLE {{schema}}.{EVENTS_TABLE} ENABLE ALWAYS TRIGGER {GUARD}",
)


def _exists(db: Any, schema: str, name: str) -> bool:
    """Whether ``schema`` holds a table or index of this name (one from before it has not); ``db`` a connection or a
    cursor, of either row shape."""
    row = db.execute("SELECT to_regclass(%s) IS NOT NULL AS found", (f'"{schema}".{name}',)).fetchone()
    return bool(row["found"] if isinstance(row, dict) else row[0])


def _install_guard(curs: Any, schema: str) -> None:
    """The edit journal and its trigger, on a ledger without the journal (new, or from before it); never
    on one that has it (a guard dropped since is for reads to name, not to mend quietly on open). Its rows
    are shown to a grantee as the events are (``pgaccess.POLICIES``)."""
    if _exists(curs, schema, EDITS):
        return
    ident = sql.Identifier(schema)
    for statement in CREATE_GUARD:
        curs.execute(sql.SQL(statement).format(schema=ident))
    pgaccess.protect(curs.connection, schema, EDITS)


_LINK_ROWS = f"topic = '{LINKED_TOPIC}'"
"""The session links' rows, as a literal: the planner matches a partial index's WHERE only to a constant."""


def _index_links(curs: Any, schema: str) -> None:
    """A partial index of the session links (one row per link): the lookup of a session never linked reads
    those rows, not the whole table. Only on their JSON, not by it (``convert_from`` is not immutable, and an
    enciphered row is no JSON). Checked before it is made: a grantee's open need not own the table; not made by
    a hook on a large older ledger (``base.upkeep``)."""
    if _exists(curs, schema, LINKS_INDEX):
        return
    curs.execute(sql.SQL("SELECT coalesce(max(notification_id), 0) AS rows FROM {}.{}").format(
        sql.Identifier(schema), sql.Identifier(EVENTS_TABLE)))
    counted = curs.fetchone()
    if not upkeep.may_build(int(counted["rows"]) if counted else 0):
        return  # a hook on a large older ledger (``base.upkeep``): a command builds it
    curs.execute(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {}.{} (notification_id) WHERE " + _LINK_ROWS).format(
        sql.Identifier(LINKS_INDEX), sql.Identifier(schema), sql.Identifier(EVENTS_TABLE)))


CREATE_SOURCES = (
    # As SQLite's (``sqlite.CREATE_SOURCES``): the key first (agent, record) for the dedupe and the record look-up,
    # by task for a session's records and a task's rewrites. "C": byte order, so a prefix is a range of the index.
    f"CREATE TABLE {{schema}}.{SOURCES} (agent text COLLATE \"C\" NOT NULL, record text COLLATE \"C\" NOT NULL,"
    " session text COLLATE \"C\" NOT NULL, originator_id uuid NOT NULL, position bigint NOT NULL,"
    " PRIMARY KEY (agent, record, session, originator_id, position))",
    f"CREATE INDEX {SOURCES_BY_TASK} ON {{schema}}.{SOURCES} (originator_id, agent, session, record, position)",
)
INSERT_SOURCE = f"INSERT INTO {{schema}}.{SOURCES} VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
FILL_SOURCES = (
    f"INSERT INTO {{schema}}.{SOURCES} SELECT s->>'agent', s->>'record', s->>'session', originator_id,"
    " originator_version FROM (SELECT originator_id, originator_version, convert_from(state, 'UTF8')::json->'source'"
    f" AS s FROM {{schema}}.{EVENTS_TABLE} WHERE position('\"source\":{{{{' in convert_from(state, 'UTF8')) > 0) AS t"
    " WHERE json_typeof(s) = 'object' AND s->>'agent' IS NOT NULL AND s->>'record' IS NOT NULL"
    " AND s->>'session' IS NOT NULL ON CONFLICT DO NOTHING")
"""A ledger from before the capture index gets its rows from its events, once."""


def _source_rows(found: Iterable[Source]) -> list[tuple[str, str, str, UUID, int]]:
    return [(agent, record, session, owner, position) for owner, position, agent, session, record in found]


def _index_sources(curs: Any, schema: str) -> None:
    """The capture index (``schema.SOURCES``): made on a new ledger, built once from the events of one from before
    it, under the append's table lock (an append committed meanwhile would be missed by the read); not by a hook
    on a large older ledger (``base.upkeep``); empty on an enciphered one (its rows are no JSON, and its questions
    read the events). Its rows are shown to a grantee as the events are (``pgaccess.POLICIES``)."""
    if _exists(curs, schema, SOURCES):
        return
    events = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(EVENTS_TABLE))
    curs.execute(sql.SQL("SELECT coalesce(max(notification_id), 0) AS rows FROM {}").format(events))
    counted = curs.fetchone()
    if not upkeep.may_build(int(counted["rows"]) if counted else 0):
        return
    curs.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(events))
    ident = sql.Identifier(schema)
    for statement in CREATE_SOURCES:
        curs.execute(sql.SQL(statement).format(schema=ident))
    curs.execute(sql.SQL("SELECT state FROM {} ORDER BY notification_id LIMIT 1").format(events))
    first = curs.fetchone()
    if first is not None and bytes(first["state"])[:1] == b"{":  # JSON, not an enciphered ledger's bytes
        curs.execute(sql.SQL(FILL_SOURCES).format(schema=ident))
    if pgaccess.applied(curs.connection, schema):  # else ``pgaccess.apply`` gives it its policies with the rest
        pgaccess.protect(curs.connection, schema, SOURCES)


VIEW_AT = ("SELECT position, state FROM {} WHERE originator_id = %s AND fold_version = %s AND position <= %s"
           " ORDER BY position DESC LIMIT 1")
"""A task's newest view snapshot of a fold version at or before a position (``{}``: the views table)."""

LINKED_SESSION = (f"SELECT originator_id FROM {{}} WHERE {_LINK_ROWS}"
                  " AND convert_from(state, 'UTF8')::json->>'agent' = %s"
                  " AND convert_from(state, 'UTF8')::json->>'session_id' = %s ORDER BY notification_id DESC LIMIT 1")
"""The newest link of (agent, session); the events table as ``{}``. The topic is the constant the partial index
(``_index_links``) is made with, so the index serves it."""


class AnchoredRecorder(PostgresApplicationRecorder):
    """The library's recorder, plus the head anchor (``ledger.base.schema.HEADS``) in each insert's own transaction:
    one upsert per aggregate appended to, after its rows (under the library's table lock); and the snapshots
    taken at the rows' positions. The keywords ``heads`` and ``snapshots`` are as for SQLite's
    (``ledger.stores.sqlite.AnchoredRecorder``)."""

    plain: Plain | None = None
    """On an encrypted ledger, how a payload is read for its chain (``Ledger.__init__`` sets it)."""
    keyed = False
    """Whether the capture index (``schema.SOURCES``) was there: once it is, it stays."""

    def create_table(self) -> None:
        super().create_table()
        schema = sql.Identifier(self.datastore.schema)
        with self.datastore.transaction(commit=True) as curs:
            if _exists(curs, self.datastore.schema, HEADS):
                _install_guard(curs, self.datastore.schema)
                _index_links(curs, self.datastore.schema)
                _index_sources(curs, self.datastore.schema)
                return
            # A ledger from before the anchor starts from the log as it is now (``base.refill``).
            curs.execute(sql.SQL(CREATE_HEADS).format(schema=schema))
            curs.execute(sql.SQL(
                "SELECT DISTINCT ON (originator_id) originator_id, originator_version, state FROM {}.{}"
                " ORDER BY originator_id, originator_version DESC"
            ).format(schema, sql.Identifier(self.events_table_name)))
            last = [(r["originator_id"], r["originator_version"], chain_of(bytes(r["state"])))
                     for r in curs.fetchall()]
            if found := refill(last, REGISTRY_ID):
                curs.executemany(sql.SQL(UPSERT_HEAD).format(schema=schema), found)
            _install_guard(curs, self.datastore.schema)
            _index_links(curs, self.datastore.schema)
            _index_sources(curs, self.datastore.schema)

    def _insert_stored_events(self, curs: psycopg.Cursor[DictRow], stored_events: Sequence[StoredEvent],
                              **kwargs: Any) -> None:
        schema = sql.Identifier(self.datastore.schema)
        if projects := kwargs.get("projects"):
            # Before the events: the access policies (``pgaccess``) check a task's rows against its project.
            with curs.connection.cursor() as own:
                own.executemany(sql.SQL(INSERT_PROJECT).format(schema=schema), projects)
        super()._insert_stored_events(curs, stored_events, **kwargs)
        # Its own cursor: the library reads the notification ids from ``curs`` afterwards.
        with curs.connection.cursor() as own:
            heads = kwargs.get("heads") or heads_of(stored_events, self.plain)
            own.executemany(sql.SQL(UPSERT_HEAD).format(schema=schema), heads)
            if self.plain is None:  # an enciphered ledger keeps no keys in clear (``schema.SOURCES``)
                given: Sequence[Source] | None = kwargs.get("sources")
                found = given if given is not None else sources_of(stored_events, None)
                # Asked under the library's table lock while not yet seen: an open building the index holds it too.
                if found and (self.keyed or _exists(own, self.datastore.schema, SOURCES)):
                    self.keyed = True
                    crash_point("sources-insert")  # events in, keys not: what a kill here leaves (a test)
                    own.executemany(sql.SQL(INSERT_SOURCE).format(schema=schema), _source_rows(found))
            snapshots: Sequence[StoredEvent] = kwargs.get("snapshots") or ()
            if snapshots:
                own.executemany(sql.SQL(UPSERT_SNAPSHOT).format(schema=schema), [
                    (s.originator_id, s.originator_version, s.topic, s.state) for s in snapshots
                ])


def library_env(target: PostgresTarget, owner: bool = True) -> dict[str, str]:
    """Settings for ``eventsourcing.postgres`` (timeouts must be whole seconds). A role that does not own the
    ledger's tables (a grantee, ``pgaccess``) must not have the library create them: it replaces its insert
    function on every open, which only the owner may."""
    return {
        **({} if owner else {"CREATE_TABLE": "no"}),
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": target.dbname,
        "POSTGRES_HOST": target.host,
        "POSTGRES_PORT": str(target.port),
        "POSTGRES_USER": target.user,
        "POSTGRES_PASSWORD": target.password,
        "POSTGRES_SCHEMA": target.schema,
        "POSTGRES_CONNECT_TIMEOUT": str(target.connect_timeout),
        # A command needs one connection; the library's default opens five per process.
        "POSTGRES_POOL_SIZE": "1",
        "POSTGRES_MAX_OVERFLOW": "4",
        # Writers wait for the table lock the library takes on every append (0 = no limit).
        "POSTGRES_LOCK_TIMEOUT": "30",
        # The library's recorder plus the per-task head anchor.
        "APPLICATION_RECORDER_TOPIC": "ledger.stores.postgres:AnchoredRecorder",
    }


def connect(target: PostgresTarget, shown: str) -> psycopg.Connection[tuple[object, ...]]:
    """A direct connection, or StoreUnavailable with the server's reason in one line."""
    try:
        return psycopg.connect(
            host=target.host,
            port=target.port,
            dbname=target.dbname,
            user=target.user,
            password=target.password,
            connect_timeout=target.connect_timeout,
            autocommit=True,
        )
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot reach ledger {shown}: {reason(exc)}") from None


@contextmanager
def setting_up(location: Location) -> Iterator[tuple[PostgresTarget, bool]]:
    """Check the server answers, create the URL's schema if missing, and hold a lock while the ledger opens.

    The library creates its tables and types on open; two processes doing that at once on a
    new schema fail with "tuple concurrently updated", so openings of one schema take turns
    on an advisory lock (released when this connection closes). Yields the target and whether this
    role owns the ledger (a grantee's opening creates nothing).
    """
    target = location.postgres()
    with connect(target, location.display) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"tasktrail:{target.schema}",))
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (target.schema,)).fetchone()
        if exists is None:
            try:
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(target.schema)))
            except psycopg.Error as exc:
                where = f"schema {target.schema!r} in {location.display}"
                raise StoreUnavailable(f"cannot create {where}: {one_line(str(exc))}") from None
        else:
            _refuse_another_applications(conn, target.schema, location.display)
        owner = pgaccess.owns(conn, target.schema)
        if owner:
            _create_own_tables(conn, target.schema)
        elif not conn.execute("SELECT has_schema_privilege(%s, 'USAGE')", (target.schema,)).fetchone()[0]:  # type: ignore[index]
            raise PermissionDenied(f"role {target.user!r} has no grant on ledger {location.display} "
                                   "(its owner runs `trail grant`)")
        yield target, owner


def _refuse_another_applications(conn: psycopg.Connection[Any], schema: str, shown: str) -> None:
    """A schema with tables and views but none of a ledger's is another application's: the library
    would add its tables to it (as ``store._check_sqlite_path`` refuses such an SQLite file)."""
    found = {row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')", (schema,)).fetchall()}
    if found and not found & set(OWN_TABLES):
        raise StoreUnavailable(f"{shown} is not a tasktrail ledger: schema {schema!r} holds {len(found)} other "
                               f"table(s) and none of the ledger's; give the ledger its own with ?schema=NAME")


def _create_own_tables(conn: psycopg.Connection[Any], schema: str) -> None:
    """tasktrail's tables beside the library's (under the caller's advisory lock)."""
    # Added after the others: a ledger from before the view snapshots gains the table when next opened.
    conn.execute(sql.SQL(CREATE_VIEWS).format(schema=sql.Identifier(schema)))
    pgaccess.create_tables(conn, schema)
    if _exists(conn, schema, FORGOTTEN_KEYS):
        return
    for statement in CREATE:
        conn.execute(sql.SQL(statement).format(schema=sql.Identifier(schema)))


def _table(schema: str, name: str) -> sql.Composed:
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(name))


def cache_dir(home: Path, host: str, port: int | str, dbname: str, schema: str) -> Path:
    """Where this machine keeps the archive files of the ledger in ``schema`` it has read."""
    digest = hashlib.sha256(f"{host}:{port}/{dbname}/{schema}".encode()).hexdigest()[:16]
    return home / "archives" / digest


def _rewriting(conn: psycopg.Connection[Any]) -> None:
    """tasktrail's own rewrite, in the caller's transaction: the guard records nothing of it (``GUARD_BODY``)."""
    conn.execute("SELECT set_config(%s, 'on', true)", (REWRITING,))


def _rows(conn: psycopg.Connection[Any], query: sql.SQL | sql.Composed, params: Any = None) -> list[tuple[Any, ...]]:
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(query, params)
        return cur.fetchall()


class PostgresStore(LedgerStore):
    backend = "postgres"

    def __init__(self, datastore: Any, schema: str, cache: Path, lock_timeout: int = 30) -> None:
        self.datastore = datastore
        """The library's ``PostgresDatastore``: its pool, its error translation."""
        self.schema = schema
        self.cache = cache
        self.lock_timeout = lock_timeout
        self.events, self.snapshots = _table(schema, EVENTS_TABLE), _table(schema, SNAPSHOTS_TABLE)
        self.archive_table, self.forgotten_table = _table(schema, ARCHIVES), _table(schema, FORGOTTEN_KEYS)
        self.heads = _table(schema, HEADS)
        self.views = _table(schema, VIEWS)
        self.sources = _table(schema, SOURCES)
        self._built = False

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        with self.datastore.get_connection() as conn:
            yield conn

    # -- who sees what -------------------------------------------------------------------

    def sees_all(self) -> bool:
        with self._conn() as conn:
            return pgaccess.sees_all(conn, self.schema)

    def next_number(self) -> int:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL("SELECT {}.tasktrail_next_number()").format(sql.Identifier(self.schema)))
        return int(rows[0][0])

    def owns(self) -> bool:
        with self._conn() as conn:
            return pgaccess.owns(conn, self.schema)

    def task_projects(self) -> dict[UUID, str]:
        """Each task's project as the access policies know it (what this role may see of them)."""
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL("SELECT originator_id, project FROM {}").format(
                _table(self.schema, pgaccess.TASK_PROJECTS)))
        return {UUID(str(i)): str(p) for i, p in rows}

    def set_access(self, role: str, project: str | None, writing: bool | None,
                   projects: Iterable[tuple[UUID, str, int, int | None]]) -> None:
        """One transaction: the policies on, the task projects filled in (tasks from before this table,
        or copied by migrate), then ``role``'s grant on ``project`` set (``writing`` True/False) or
        removed (None; every project when ``project`` is None), and its table privileges to match."""
        grants = _table(self.schema, pgaccess.GRANTS)
        with self._conn() as conn, conn.transaction():
            exists = bool(_rows(conn, sql.SQL("SELECT 1 FROM pg_roles WHERE rolname = %s"), (role,)))
            if not exists and writing is not None:
                raise BadInput(f"no role {role!r} on the server: create it first (CREATE ROLE {role} LOGIN ...)")
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"tasktrail:{self.schema}",))
            pgaccess.apply(conn, self.schema)
            with conn.cursor() as cur:
                cur.executemany(sql.SQL(INSERT_PROJECT).format(schema=sql.Identifier(self.schema)), list(projects))
            if writing is None:
                conn.execute(sql.SQL("DELETE FROM {} WHERE role = %s AND project = coalesce(%s, project)")
                             .format(grants), (role, project))
            else:
                conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s) ON CONFLICT (role, project)"
                                     " DO UPDATE SET can_write = EXCLUDED.can_write").format(grants),
                             (role, project, writing))
            left = _rows(conn, sql.SQL("SELECT bool_or(can_write) FROM {} WHERE role = %s").format(grants), (role,))
            if not exists:  # a dropped role's grants go; it holds no privileges any more
                return
            pgaccess.revoke_privileges(conn, self.schema, role)
            if left and left[0][0] is not None:
                pgaccess.grant_privileges(conn, self.schema, role, bool(left[0][0]))

    def grants(self, project: str | None) -> list[tuple[str, str, bool]]:
        """(role, project, may write), every grant the owner sees (a grantee: its own)."""
        with self._conn() as conn:
            if not _exists(conn, self.schema, pgaccess.GRANTS):
                return []
            rows = _rows(conn, sql.SQL("SELECT role, project, can_write FROM {} WHERE project = coalesce(%s, project)"
                                       " ORDER BY project, role").format(_table(self.schema, pgaccess.GRANTS)),
                         (project,))
        return [(str(r), str(p), bool(w)) for r, p, w in rows]

    # -- archives ------------------------------------------------------------------------

    def archive_dir(self) -> Path:
        return self.cache

    def archives(self, task_id: UUID | None) -> list[Archive]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT originator_id, first, last, path, sha256, head, events FROM {}"
                " WHERE originator_id = coalesce(%s, originator_id) ORDER BY originator_id, first"
            ).format(self.archive_table), (task_id,))
            found = [Archive(UUID(str(r[0])), r[1], r[2], self.cache / r[3], r[4], r[5], r[6]) for r in rows]
            for archive in found:
                if not archive.path.exists():
                    self._fetch(conn, archive)
        return found

    def _fetch(self, conn: psycopg.Connection[Any], archive: Archive) -> None:
        """Bring an archive file from the database into this machine's cache."""
        rows = _rows(conn, sql.SQL("SELECT data FROM {} WHERE originator_id = %s AND first = %s")
                     .format(self.archive_table), (archive.task_id, archive.first))
        if not rows:
            return
        private.folder(archive.path.parent)
        tmp = archive.path.with_name(f".{archive.path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(bytes(rows[0][0]))
        os.replace(tmp, archive.path)

    def range_size(self, task_id: UUID, first: int, last: int) -> tuple[int, int, int]:
        with self._conn() as conn:
            events = _rows(conn, sql.SQL(
                "SELECT count(*), coalesce(sum(length(state)), 0) FROM {}"
                " WHERE originator_id = %s AND originator_version BETWEEN %s AND %s"
            ).format(self.events), (task_id, first, last))[0]
            snaps = _rows(conn, sql.SQL(
                "SELECT count(*), coalesce(sum(length(state)), 0) FROM {} WHERE originator_id = %s"
                " AND originator_version < %s"
            ).format(self.snapshots), (task_id, last))[0]
        return int(events[0]), int(snaps[0]), int(events[1]) + int(snaps[1])

    def read_range(self, task_id: UUID, first: int, last: int) -> Range:
        with self._conn() as conn:
            events = _rows(conn, sql.SQL(
                "SELECT notification_id, originator_version, topic, state FROM {} WHERE originator_id = %s"
                " AND originator_version BETWEEN %s AND %s ORDER BY originator_version"
            ).format(self.events), (task_id, first, last))
            snapshots = _rows(conn, sql.SQL(
                "SELECT originator_version, topic, state FROM {} WHERE originator_id = %s"
                " AND originator_version < %s ORDER BY originator_version"
            ).format(self.snapshots), (task_id, last))
        return Range(
            [(n, StoredEvent(task_id, v, t, bytes(s))) for n, v, t, s in events],
            [StoredEvent(task_id, v, t, bytes(s)) for v, t, s in snapshots],
        )

    def _lock_events(self, conn: psycopg.Connection[Any]) -> None:
        # As the library does on every append: notification ids then commit in order, which
        # readers that go by "> last id seen" (the read model) rely on.
        conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(f"{self.lock_timeout}s")))
        conn.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(self.events))

    def commit_archive(
        self, archive: Archive, snapshot: StoredEvent, marker: StoredEvent, before_commit: Callable[[], None]
    ) -> bool:
        data = archive.path.read_bytes()
        with self._conn() as conn, conn.transaction():
            self._lock_events(conn)
            done = _rows(conn, sql.SQL("SELECT 1 FROM {} WHERE originator_id = %s AND last >= %s")
                         .format(self.archive_table), (archive.task_id, archive.last))
            if done:  # another process finished this compaction while we wrote the file
                return False
            self._insert_archive(conn, archive, data)
            conn.execute(sql.SQL(
                "INSERT INTO {} (originator_id, originator_version, topic, state) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (originator_id, originator_version) DO UPDATE SET topic = EXCLUDED.topic,"
                " state = EXCLUDED.state"
            ).format(self.snapshots), (archive.task_id, snapshot.originator_version, snapshot.topic, snapshot.state))
            conn.execute(sql.SQL(
                "INSERT INTO {} (originator_id, originator_version, topic, state) VALUES (%s, %s, %s, %s)"
            ).format(self.events), (archive.task_id, marker.originator_version, marker.topic, marker.state))
            for head in heads_of([marker], self._plain()):
                conn.execute(sql.SQL(UPSERT_HEAD).format(schema=sql.Identifier(self.schema)), head)
            _rewriting(conn)
            conn.execute(sql.SQL(
                "DELETE FROM {} WHERE originator_id = %s AND originator_version BETWEEN %s AND %s"
            ).format(self.events), (archive.task_id, archive.first, archive.last))
            if self._indexed_in(conn):  # the index holds live events only, as the questions read them
                conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s AND position BETWEEN %s AND %s")
                             .format(self.sources), (archive.task_id, archive.first, archive.last))
            conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s AND originator_version < %s")
                         .format(self.snapshots), (archive.task_id, archive.last))
            conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s AND position < %s")
                         .format(self.views), (archive.task_id, archive.last))
            before_commit()
        return True

    def put_archive(self, archive: Archive) -> None:
        data = archive.path.read_bytes()
        with self._conn() as conn, conn.transaction():
            self._insert_archive(conn, archive, data)

    def _insert_archive(self, conn: psycopg.Connection[Any], archive: Archive, data: bytes) -> None:
        conn.execute(
            sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)").format(self.archive_table),
            (archive.task_id, archive.first, archive.last, archive.path.name, archive.sha256, archive.head,
             archive.events, data),
        )

    # -- the head anchor ---------------------------------------------------------------------

    def head(self, task_id: UUID) -> Head | None:
        with self._conn() as conn:
            if not _exists(conn, self.schema, HEADS):
                return None
            rows = _rows(conn, sql.SQL("SELECT version, chain FROM {} WHERE originator_id = %s").format(self.heads),
                         (task_id,))
        return Head(int(rows[0][0]), str(rows[0][1])) if rows else None

    # -- snapshots of the view --------------------------------------------------------------

    def view_snapshot(self, task_id: UUID, upto: int | None, fold_version: int) -> tuple[int, bytes] | None:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(VIEW_AT).format(self.views),
                         (task_id, fold_version, UNBOUNDED if upto is None else upto))
        return (int(rows[0][0]), bytes(rows[0][1])) if rows else None

    def put_view_snapshot(self, task_id: UUID, position: int, fold_version: int, state: bytes) -> None:
        with self._conn() as conn, conn.transaction():
            # Reads keep these: no wait for a row another transaction holds (0 means no limit); a later read keeps it.
            conn.execute("SET LOCAL lock_timeout = '1ms'")
            conn.execute(sql.SQL(
                "INSERT INTO {} VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (originator_id, fold_version, position) DO UPDATE SET state = EXCLUDED.state"
            ).format(self.views), (task_id, position, fold_version, state))

    def drop_view_snapshots(self, task_id: UUID, first: int = 0, last: int | None = None) -> int:
        with self._conn() as conn, conn.transaction():
            deleted = conn.execute(sql.SQL(
                "DELETE FROM {} WHERE originator_id = %s AND position >= %s AND position <= coalesce(%s, position)"
            ).format(self.views), (task_id, first, last)).rowcount
        return int(deleted or 0)

    # -- the edit journal ----------------------------------------------------------------------

    def changed_outside(self, task_id: UUID) -> tuple[int, str] | None:
        with self._conn() as conn:
            if not _exists(conn, self.schema, EDITS):
                return None  # a ledger from before the journal, not opened by its owner since
            guard = _rows(conn, sql.SQL(
                "SELECT t.tgenabled, t.tgtype, t.tgqual IS NULL AND t.tgattr::text = '', p.prosrc, p.prosecdef"
                " FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = to_regclass(%s)"
                " AND t.tgname = %s"), (f'"{self.schema}".{EVENTS_TABLE}', GUARD))
            body = sql.SQL(GUARD_BODY).format(schema=sql.Identifier(self.schema)).as_string(conn)
            if guard != [("A", GUARD_TYPE, True, body, True)]:
                return 0, "guard"
            rows = _rows(conn, sql.SQL("SELECT position, change FROM {} WHERE originator_id = %s"
                                       " ORDER BY position LIMIT 1").format(_table(self.schema, EDITS)), (task_id,))
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    # -- rewriting and deleting --------------------------------------------------------------

    def rewrite_states(
        self, task_id: UUID | None, topics: Iterable[str], rewrite: Callable[[bytes], bytes | None], dry_run: bool
    ) -> dict[UUID, int]:
        rewrite = self._through(rewrite)
        first_touched: dict[UUID, int] = {}
        latest: dict[UUID, int] = {}
        with self._conn() as conn, conn.transaction():
            rows = _rows(conn, sql.SQL(
                "SELECT originator_id, originator_version, state FROM {}"
                " WHERE originator_id = coalesce(%s, originator_id) AND topic = ANY(%s) FOR UPDATE"
            ).format(self.events), (task_id, list(topics)))
            _rewriting(conn)
            keyed = self.cipher is None and self._indexed_in(conn)
            for owner, position, raw in rows:
                changed = rewrite(bytes(raw))
                if changed is None:
                    continue
                first_touched[owner] = min(position, first_touched.get(owner, position))
                if not dry_run:
                    conn.execute(sql.SQL(
                        "UPDATE {} SET state = %s WHERE originator_id = %s AND originator_version = %s"
                    ).format(self.events), (changed, owner, position))
                    if keyed and (now := source_in(changed)) != source_in(bytes(raw)):
                        self._rekey(conn, owner, position, now)
            for owner, position in first_touched.items():
                conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s AND originator_version >= %s")
                             .format(self.snapshots), (owner, position))
                # The views hold outputs too: those folded from a rewritten event go with it.
                conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s AND position >= %s")
                             .format(self.views), (owner, position))
                latest[UUID(str(owner))] = _rows(conn, sql.SQL(
                    "SELECT max(originator_version) FROM {} WHERE originator_id = %s").format(self.events), (owner,)
                )[0][0]
            if dry_run:
                raise psycopg.Rollback()
        return latest

    def _rekey(self, conn: psycopg.Connection[Any], owner: UUID, position: int, source: Key | None) -> None:
        """A rewrite changed an event's source (none of tasktrail's do): its index row follows."""
        conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s AND position = %s").format(self.sources),
                     (owner, position))
        if source is not None:
            conn.execute(sql.SQL(INSERT_SOURCE).format(schema=sql.Identifier(self.schema)),
                         _source_rows([(owner, position, *source)])[0])

    def delete_task(
        self, task_id: UUID, number: int, key_hashes: Iterable[str], registry_rewrite: Callable[[bytes], bytes | None]
    ) -> int:
        registry_rewrite = self._through(registry_rewrite)
        with self._conn() as conn, conn.transaction():
            _rewriting(conn)
            with conn.cursor() as cur:
                cur.executemany(
                    sql.SQL("INSERT INTO {} VALUES (%s, %s) ON CONFLICT DO NOTHING").format(self.forgotten_table),
                    [(h, number) for h in key_hashes],
                )
            deleted = conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s").format(self.events),
                                   (task_id,)).rowcount
            if self._indexed_in(conn):
                conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s").format(self.sources), (task_id,))
            for table, owner in ((self.snapshots, task_id), (self.snapshots, REGISTRY_ID),
                                 (self.archive_table, task_id), (self.heads, task_id), (self.views, task_id)):
                conn.execute(sql.SQL("DELETE FROM {} WHERE originator_id = %s").format(table), (owner,))
            rows = _rows(conn, sql.SQL("SELECT originator_version, state FROM {} WHERE originator_id = %s"
                                       " AND topic = %s").format(self.events), (REGISTRY_ID, TaskRegistered.TOPIC))
            for version, raw in rows:
                if (rewritten := registry_rewrite(bytes(raw))) is not None:
                    conn.execute(
                        sql.SQL("UPDATE {} SET state = %s WHERE originator_id = %s AND originator_version = %s")
                        .format(self.events), (rewritten, REGISTRY_ID, version),
                    )
        return int(deleted or 0)

    # -- tombstoned source keys -------------------------------------------------------------

    def forgotten(self, hashes: Iterable[str]) -> dict[str, int]:
        wanted = list(hashes)
        if not wanted:
            return {}
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL("SELECT key_sha256, task_number FROM {} WHERE key_sha256 = ANY(%s)")
                         .format(self.forgotten_table), (wanted,))
        return {str(h): int(n) for h, n in rows}

    def tombstoned_keys(self) -> dict[str, int]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL("SELECT key_sha256, task_number FROM {}").format(self.forgotten_table))
        return {str(h): int(n) for h, n in rows}

    def tombstone_keys(self, hashes: dict[str, int]) -> None:
        with self._conn() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                sql.SQL("INSERT INTO {} VALUES (%s, %s) ON CONFLICT DO NOTHING").format(self.forgotten_table),
                list(hashes.items()),
            )

    # -- the capture index (``schema.SOURCES``; JSON operators over the stored state without it) --------

    def _indexed_in(self, conn: psycopg.Connection[Any]) -> bool:
        if not self._built:
            self._built = _exists(conn, self.schema, SOURCES)
        return self._built

    def _indexed(self) -> bool:
        with self._conn() as conn:
            return self._indexed_in(conn)

    def _held(self, task_id: UUID, upto: int, keys: set[Key]) -> set[Key]:
        agents, sessions, records = (list(column) for column in zip(*keys, strict=True))
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT k.agent, k.session, k.record FROM unnest(%s::text[], %s::text[], %s::text[])"
                " AS w(agent, session, record) JOIN {} k ON k.agent = w.agent COLLATE \"C\""
                " AND k.record = w.record COLLATE \"C\" AND k.session = w.session COLLATE \"C\""
                " WHERE k.originator_id = %s AND k.position <= %s"
            ).format(self.sources), (agents, sessions, records, task_id, upto))
        return {(str(a), str(s), str(r)) for a, s, r in rows}

    def _records(self, task_id: UUID, upto: int, agent: str, session: str, prefix: str) -> set[str]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT record FROM {} WHERE originator_id = %s AND agent = %s AND session = %s AND record >= %s"
                " AND (%s::text IS NULL OR record < %s::text) AND position <= %s"
            ).format(self.sources), (task_id, agent, session, prefix, past_prefix(prefix), past_prefix(prefix), upto))
        return {str(r) for (r,) in rows}

    def _task_of_records(self, agent: str, records: list[str], indexed: bool) -> UUID | None:
        with self._conn() as conn:
            if indexed:
                rows = _rows(conn, sql.SQL("SELECT originator_id FROM {} WHERE agent = %s AND record = ANY(%s::text[])"
                                           " LIMIT 1").format(self.sources), (agent, records))
            else:
                rows = _rows(conn, sql.SQL(
                    "SELECT originator_id FROM (SELECT originator_id, " + self._STATE + "->'source' AS s FROM {}"
                    " WHERE position('\"source\"' in convert_from(state, 'UTF8')) > 0) AS t"
                    " WHERE json_typeof(s) = 'object' AND s->>'agent' = %s AND s->>'record' = ANY(%s) LIMIT 1"
                ).format(self.events), (agent, records))
        return UUID(str(rows[0][0])) if rows else None

    _STATE = "convert_from(state, 'UTF8')::json"

    def _source_keys(self, task_id: UUID, upto: int) -> set[Key]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT s->>'agent', s->>'session', s->>'record' FROM (SELECT " + self._STATE + "->'source' AS s"
                " FROM {} WHERE originator_id = %s AND originator_version <= %s) AS t"
                " WHERE s IS NOT NULL AND json_typeof(s) = 'object'"
            ).format(self.events), (task_id, upto))
        return {(str(a), str(s), str(r)) for a, s, r in rows}

    def topics(self, task_id: UUID, positions: Iterable[int]) -> dict[int, str]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT originator_version, topic FROM {} WHERE originator_id = %s AND originator_version = ANY(%s)"
            ).format(self.events), (task_id, sorted(set(positions))))
        return {int(v): str(t) for v, t in rows}

    def topics_before(self, task_id: UUID, before: int, limit: int) -> list[tuple[int, str]]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT originator_version, topic FROM {} WHERE originator_id = %s AND originator_version < %s"
                " ORDER BY originator_version DESC LIMIT %s"
            ).format(self.events), (task_id, before, limit))
        return [(int(v), str(t)) for v, t in rows]

    def task_for_session(self, agent: str, session_id: str) -> UUID | None:
        if self.cipher is not None:
            return self._scanned_session(agent, session_id)
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(LINKED_SESSION).format(self.events), (agent, session_id))
        return UUID(str(rows[0][0])) if rows else None

    def _rows_newest_first(self, task_id: UUID | None, topic: str | None, upto: int | None
                           ) -> Iterator[tuple[str, bytes]]:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT originator_id, state FROM {} WHERE originator_id = coalesce(%s, originator_id)"
                " AND topic = coalesce(%s, topic) AND originator_version <= coalesce(%s, originator_version)"
                " ORDER BY notification_id DESC"
            ).format(self.events), (task_id, topic, upto))
        yield from ((UUID(str(owner)).hex, bytes(raw)) for owner, raw in rows)

    # -- space ----------------------------------------------------------------------------------

    def reclaim_space(self, scrub: bool = False) -> None:
        """VACUUM FULL rewrites the tables without dead rows, giving their space (and bytes) back.
        It locks each table while it runs (about 0.3 s for a 15,000-event ledger), so it waits at
        most ``RECLAIM_LOCK_WAIT`` seconds for that lock; when readers hold it longer, plain VACUUM
        makes the space reusable instead. ``scrub`` (forget) waits as long as it takes."""
        with self._conn() as conn:
            for table in (self.events, self.snapshots, self.archive_table, self.views, self.sources):
                if scrub:
                    conn.execute(sql.SQL("VACUUM FULL {}").format(table))
                    continue
                conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{RECLAIM_LOCK_WAIT}s")))
                try:
                    conn.execute(sql.SQL("VACUUM FULL {}").format(table))
                except psycopg.errors.LockNotAvailable:
                    conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(table))
                finally:
                    conn.execute("RESET lock_timeout")

    def file_bytes(self) -> int | None:
        with self._conn() as conn:
            rows = _rows(conn, sql.SQL(
                "SELECT sum(pg_total_relation_size(to_regclass(t))) FROM unnest(%s::text[]) AS t"),
                         ([f'"{self.schema}".{name}' for name in OWN_TABLES],))
        return int(rows[0][0] or 0)

    # -- whole ledgers -------------------------------------------------------------------------

    @classmethod
    def exists(cls, location: Location) -> bool:
        target = location.postgres()
        with connect(target, location.display) as conn:
            return _exists(conn, target.schema, EVENTS_TABLE)

    @classmethod
    def staging_for(cls, target: Location) -> Location:
        """A schema of its own in the target's database, named after the target's schema."""
        name = hashlib.sha256(target.postgres().schema.encode()).hexdigest()[:12]
        return Location(url=with_schema(target.url, f"tt_staging_{name}"), home=target.home)

    @classmethod
    def publish(cls, staging: Location, target: Location) -> None:
        """One transaction: the target's ledger tables (if any) go, the staging's move into its schema."""
        into, source = target.postgres(), staging.postgres()
        with connect(into, target.display) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"tasktrail:{into.schema}",))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(into.schema)))
            for name in OWN_TABLES:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(_table(into.schema, name)))
                conn.execute(sql.SQL("ALTER TABLE {} SET SCHEMA {}").format(
                    _table(source.schema, name), sql.Identifier(into.schema)))
            # The guard's function names its schema's journal: made again in the target, before the staging
            # schema (and its function, with the trigger that still calls it) is dropped.
            conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
                sql.Identifier(GUARD), _table(into.schema, EVENTS_TABLE)))
            for statement in CREATE_GUARD[2:]:
                conn.execute(sql.SQL(statement).format(schema=sql.Identifier(into.schema)))
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(source.schema)))
        shutil.rmtree(cache_dir(staging.home, source.host, source.port, source.dbname, source.schema),
                      ignore_errors=True)

    @classmethod
    def discard(cls, staging: Location) -> None:
        source = staging.postgres()
        with connect(source, staging.display) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(source.schema)))
        shutil.rmtree(cache_dir(staging.home, source.host, source.port, source.dbname, source.schema),
                      ignore_errors=True)


def with_schema(url: str, schema: str) -> str:
    """``url`` naming ``schema`` (replacing any schema it named)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return parts._replace(query=urlencode([*query, ("schema", schema)])).geturl()
