"""Rewrites that turn a ledger written today into what an older tasktrail stored, for upgrade tests."""

from __future__ import annotations

import sqlite3

import orjson

from ledger.base.schema import EDITS, REWRITING, SQLITE_GUARDS
from ledger.domain.registry import REGISTRY_ID


def as_before_anchors(db: sqlite3.Connection) -> None:
    """A ledger from before anchors and the chained task list: its registry events carry no chain (nor the
    hashes an erased entry keeps) and there is no anchor table (the next open makes one and fills it in)."""
    rows = db.execute("SELECT originator_version, state FROM stored_events WHERE originator_id = ?",
                      (REGISTRY_ID.hex,)).fetchall()
    for position, raw in rows:
        old = {k: v for k, v in orjson.loads(raw).items() if k not in ("chain", "erased")}
        db.execute("UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                   (orjson.dumps(old), REGISTRY_ID.hex, position))
    db.execute("DROP TABLE tasktrail_heads")
    as_before_journal(db)


def as_before_journal(db: sqlite3.Connection) -> None:
    """A ledger from before the edit journal: no journal, no triggers (the next open installs them), so the
    rewrites made here to age it are no change a read refuses."""
    for name in SQLITE_GUARDS:
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    db.execute(f"DROP TABLE IF EXISTS {EDITS}")
    db.execute(f"DROP TABLE IF EXISTS {REWRITING}")
