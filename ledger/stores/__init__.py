"""Where a ledger's database is reached past the library: the ``LedgerStore`` interface (``base``)
and one implementation per backend (``sqlite``, ``postgres``). See ``base`` for what it holds."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger.base.errors import StoreUnavailable
from ledger.base.location import Location, trail_home
from ledger.stores.base import LedgerStore
from ledger.stores.sqlite import SQLiteStore

__all__ = ["LedgerStore", "for_ledger", "store_class"]


def for_ledger(env: Mapping[str, str], recorder: Any) -> LedgerStore:
    """The store of an open ledger from its settings (the application's ``env``) and its recorder, whose
    connections a PostgreSQL store shares (an SQLite store, for the rules' look-ups), by the library's
    persistence module (``Ledger.store``)."""
    module = env.get("PERSISTENCE_MODULE")
    if module == "eventsourcing.sqlite":
        return SQLiteStore(Path(env.get("SQLITE_DBNAME") or ""), getattr(recorder, "datastore", None))
    if module == "eventsourcing.postgres":
        from ledger.stores import postgres  # psycopg loads only for PostgreSQL ledgers

        schema = env.get("POSTGRES_SCHEMA") or "public"
        cache = postgres.cache_dir(trail_home(), env.get("POSTGRES_HOST") or "", env.get("POSTGRES_PORT") or "5432",
                                   env.get("POSTGRES_DBNAME") or "", schema)
        return postgres.PostgresStore(recorder.datastore, schema, cache,
                                      int(env.get("POSTGRES_LOCK_TIMEOUT") or 30))
    raise StoreUnavailable(f"this needs an SQLite or PostgreSQL ledger, not {module or 'an in-memory one'}")


def store_class(location: Location) -> type[LedgerStore]:
    """The store class for a location: what stages, publishes and discards whole ledgers there."""
    if location.is_sqlite:
        return SQLiteStore
    if location.is_postgres:
        from ledger.stores.postgres import PostgresStore  # psycopg loads only for PostgreSQL ledgers

        return PostgresStore
    raise StoreUnavailable(f"unsupported ledger URL {location.display!r}; use a file path, sqlite:PATH or postgresql://...")
