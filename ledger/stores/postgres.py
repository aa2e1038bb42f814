"""Opening a ledger on a PostgreSQL server: library settings from the URL, and a fast first check.

The library's connection pool retries in the background and reports only
"couldn't get a connection after N sec", so one direct connection is made first:
it fails within the URL's ``connect_timeout`` and says why (refused, bad password,
no such database), and it creates the schema named in the URL on first use, as the
SQLite file is created on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

from ledger.errors import StoreUnavailable
from ledger.location import Location, PostgresTarget

EVENTS_TABLE = "tasktrail_events"
"""The library names tables ``<application name>_events``; the application is called tasktrail."""
SNAPSHOTS_TABLE = "tasktrail_snapshots"


def library_env(target: PostgresTarget) -> dict[str, str]:
    """Settings for ``eventsourcing.postgres`` (timeouts must be whole seconds)."""
    return {
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
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise StoreUnavailable(f"cannot reach ledger {shown}: {reason}") from None


@contextmanager
def setting_up(location: Location) -> Iterator[PostgresTarget]:
    """Check the server answers, create the URL's schema if missing, and hold a lock while the ledger opens.

    The library creates its tables and types on open; two processes doing that at once on a
    new schema fail with "tuple concurrently updated", so openings of one schema take turns
    on an advisory lock (released when this connection closes).
    """
    target = location.postgres()
    with connect(target, location.display) as conn:
        conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"tasktrail:{target.schema}",))
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (target.schema,)).fetchone()
        if exists is None:
            try:
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(target.schema)))
            except psycopg.Error as exc:
                reason = " ".join(str(exc).split())
                where = f"schema {target.schema!r} in {location.display}"
                raise StoreUnavailable(f"cannot create {where}: {reason}") from None
        yield target
