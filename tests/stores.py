"""Reading a ledger's stored rows straight from the database, without the ledger's own code.

Tests use this to check what really landed: SQLite through ``sqlite3``, PostgreSQL through
``psycopg``, both on the library's tables.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from uuid import UUID

import orjson

from ledger.base.location import Location
from ledger.domain import chain
from ledger.domain.registry import REGISTRY_ID


@dataclass(frozen=True)
class Row:
    task_id: UUID
    position: int
    topic: str
    state: bytes


def stored_rows(location: Location) -> list[Row]:
    """Every stored event, in the order the store numbered them."""
    if location.is_sqlite:
        db = sqlite3.connect(location.sqlite_path)
        try:
            raw = db.execute(
                "SELECT originator_id, originator_version, topic, state FROM stored_events ORDER BY rowid"
            ).fetchall()
        finally:
            db.close()
        return [Row(UUID(i), v, t, s) for i, v, t, s in raw]
    import psycopg
    from psycopg import sql

    target = location.postgres()
    with psycopg.connect(
        host=target.host, port=target.port, dbname=target.dbname, user=target.user, password=target.password
    ) as conn:
        query = sql.SQL(
            "SELECT originator_id, originator_version, topic, state FROM {}.tasktrail_events ORDER BY notification_id"
        ).format(sql.Identifier(target.schema))
        return [Row(i, v, t, bytes(s)) for i, v, t, s in conn.execute(query).fetchall()]


def store_exists(location: Location) -> bool:
    """Whether anything was created there: the SQLite file, or the PostgreSQL schema."""
    if location.is_sqlite:
        return location.sqlite_path.exists()
    import psycopg

    target = location.postgres()
    with psycopg.connect(
        host=target.host, port=target.port, dbname=target.dbname, user=target.user, password=target.password
    ) as conn:
        return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (target.schema,)).fetchone() is not None


def chain_breaks(rows: list[Row]) -> list[str]:
    """Recompute every task's hash chain over the stored rows; what does not match (empty: all verify)."""
    problems: list[str] = []
    tasks: dict[UUID, list[Row]] = {}
    for row in rows:
        if row.task_id != REGISTRY_ID:
            tasks.setdefault(row.task_id, []).append(row)
    for task_id, task_rows in tasks.items():
        task_rows.sort(key=lambda r: r.position)
        previous = chain.GENESIS
        for expected, row in enumerate(task_rows, start=1):
            if row.position != expected:
                problems.append(f"{task_id}: position {row.position} where {expected} was due")
                break
            stored = orjson.loads(row.state)
            previous = chain.recompute(previous, row.topic, row.task_id, row.position, stored)
            if stored.get("chain") != previous:
                problems.append(f"{task_id}: chain differs at position {row.position}")
                break
    return problems
