"""Where a ledger's database is reached past the library: the ``LedgerStore`` interface (``base``)
and one implementation per backend (``sqlite``, ``postgres``). See ``base`` for what it holds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ledger.base.errors import StoreUnavailable
from ledger.base.location import Location, trail_home
from ledger.stores.base import LedgerStore

__all__ = ["LedgerStore", "for_ledger", "store_class"]

if TYPE_CHECKING:
    from ledger.app.store import Ledger


def for_ledger(ledger: Ledger) -> LedgerStore:
    """The store of an open ledger, by the library's persistence module (``Ledger.store``)."""
    env = ledger.env
    module = env.get("PERSISTENCE_MODULE")
    if module == "eventsourcing.sqlite":
        from ledger.stores.sqlite import SQLiteStore

        return SQLiteStore(Path(env.get("SQLITE_DBNAME") or ""))
    if module == "eventsourcing.postgres":
        from ledger.stores import postgres  # psycopg loads only for PostgreSQL ledgers

        schema = env.get("POSTGRES_SCHEMA") or "public"
        cache = postgres.cache_dir(trail_home(), env.get("POSTGRES_HOST") or "", env.get("POSTGRES_PORT") or "5432",
                                   env.get("POSTGRES_DBNAME") or "", schema)
        return postgres.PostgresStore(ledger.recorder.datastore, schema, cache,  # type: ignore[attr-defined]
                                      int(env.get("POSTGRES_LOCK_TIMEOUT") or 30))
    raise StoreUnavailable(f"this needs an SQLite or PostgreSQL ledger, not {module or 'an in-memory one'}")


def store_class(location: Location) -> type[LedgerStore]:
    """The store class for a location: what stages, publishes and discards whole ledgers there."""
    if location.is_sqlite:
        from ledger.stores.sqlite import SQLiteStore

        return SQLiteStore
    if location.is_postgres:
        from ledger.stores.postgres import PostgresStore

        return PostgresStore
    raise StoreUnavailable(f"unsupported ledger URL {location.display!r}; use a file path, sqlite:PATH or postgresql://...")
