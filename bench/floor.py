"""The floor: the same events as orjson rows in a plain sqlite3 table, nothing else.

No validation, no aggregate, no snapshots: what the disk and SQLite cost by themselves,
so every tasktrail figure can be read as a multiple of it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

# Primary key (task, position); WITHOUT ROWID (the floor's first shape), or a plain rowid table, the shape
# of the library's events table, which SQLite fills about 1.3x faster (issue 24): both are printed.
DDL = ("CREATE TABLE IF NOT EXISTS events (task TEXT NOT NULL, position INTEGER NOT NULL, type TEXT NOT NULL, "
       "body BLOB NOT NULL, PRIMARY KEY (task, position)){rowid}")
INSERT = "INSERT INTO events (task, position, type, body) VALUES (?, ?, ?, ?)"
NOT_REDACTED = frozenset({"type", "position", "timestamp"})
"""What tasktrail does not pass to its redactor: the event's class and position (no text of the caller's)
and its timestamp (kept as a datetime, never scanned as the ISO string the floor's rows carry)."""


class Floor:
    """One SQLite file in WAL mode (as the ledger and LangGraph use), default synchronous."""

    def __init__(self, path: Path, task: str = "task-1", *, rowid: bool = False) -> None:
        self.path = path
        self.task = task
        self.head = ""
        """The last event's chain hash (``append_promised``)."""
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute(DDL.format(rowid="" if rowid else " WITHOUT ROWID"))

    def _row(self, event: dict[str, Any]) -> tuple[str, int, str, bytes]:
        return (self.task, event["position"], event["type"], orjson.dumps(event))

    def append_batch(self, events: Iterable[dict[str, Any]]) -> float:
        """All ``events`` in one transaction; seconds taken, serialisation included."""
        began = time.perf_counter()
        self.con.execute("BEGIN")
        self.con.executemany(INSERT, (self._row(e) for e in events))
        self.con.execute("COMMIT")
        return time.perf_counter() - began

    def append_promised(self, events: Iterable[dict[str, Any]]) -> float:
        """``append_batch`` with the two things every tasktrail write promises done to each event, and
        nothing else: its strings redacted as tasktrail redacts them (``ledger.domain.redact``, one Redactor
        a batch, as the ledger uses; not ``NOT_REDACTED``) and the event linked into a hash chain
        (``ledger.domain.chain.seal``); seconds taken. What any write keeping those promises costs in this
        process, as a ceiling for tasktrail's own rate."""
        from ledger.domain import chain
        from ledger.domain.redact import Redactor

        began = time.perf_counter()
        redactor = Redactor()
        clean_events = []
        for event in events:
            clean = {k: v if k in NOT_REDACTED else redactor.value(v) for k, v in event.items()}
            clean["chain"] = self.head = chain.seal(self.head, clean["type"], self.task, clean["position"], clean)
            clean_events.append(clean)
        return time.perf_counter() - began + self.append_batch(clean_events)

    def append_each(self, events: Iterable[dict[str, Any]]) -> float:
        """One transaction per event, as a process that writes as it goes; seconds taken."""
        began = time.perf_counter()
        for event in events:
            self.con.execute(INSERT, self._row(event))  # autocommit: one transaction each
        return time.perf_counter() - began

    def checkpoint(self) -> None:
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.con.close()
