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

# The same shape as the event store's table: primary key (task, position), no rowid.
DDL = ("CREATE TABLE IF NOT EXISTS events (task TEXT NOT NULL, position INTEGER NOT NULL, type TEXT NOT NULL, "
       "body BLOB NOT NULL, PRIMARY KEY (task, position)) WITHOUT ROWID")
INSERT = "INSERT INTO events (task, position, type, body) VALUES (?, ?, ?, ?)"


class Floor:
    """One SQLite file in WAL mode (as the ledger and LangGraph use), default synchronous."""

    def __init__(self, path: Path, task: str = "task-1") -> None:
        self.path = path
        self.task = task
        self.head = ""
        """The last event's chain hash (``append_promised``)."""
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=WAL")
        self.con.execute(DDL)

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
        nothing else: its strings redacted (``ledger.domain.redact``, one Redactor a batch, as the ledger
        uses) and the event linked into a hash chain (``ledger.domain.chain.seal``); seconds taken. What any
        write keeping those promises costs in this process, as a ceiling for tasktrail's own rate."""
        from ledger.domain import chain
        from ledger.domain.redact import Redactor

        began = time.perf_counter()
        redactor = Redactor()
        clean_events = []
        for event in events:
            clean = redactor.value(event)
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
