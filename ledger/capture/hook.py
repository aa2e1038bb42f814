"""`trail hook claude-code`: the lean entry point Claude Code runs on every hook event.

It must cost little and never break the agent, so it imports only the standard library (plus
``ledger.location`` and ``ledger.redact``, which are stdlib-only at import): it redacts the
payload, appends it to the ``capture_inbox`` table in the ledger's SQLite file in one short
transaction, and exits 0. The ledger folds the inbox into validated events before any read
(``ledger.capture.inbox``). Only SessionStart, which must answer with the task's state, loads
the ledger at once. On any error: one line on stderr, the raw payload kept in
``TRAIL_HOME/deadletter/`` for ``trail doctor --retry``, and still exit 0 (non-blocking).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

INBOX_DDL = (
    "CREATE TABLE IF NOT EXISTS capture_inbox ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, received REAL NOT NULL, payload TEXT NOT NULL)"
)
AGENTS = ("claude-code",)


def ledger_file() -> Path:
    """The SQLite ledger file the CLI would use (``TRAIL_DB``, ``TRAIL_DATABASE_URL``, ``TRAIL_HOME``)."""
    from ledger.location import resolve

    location = resolve(os.environ.get("TRAIL_DB"))
    if not location.is_sqlite:
        raise RuntimeError(f"the capture inbox needs an SQLite ledger, not {location.url}")
    return location.sqlite_path


def deadletter_dir() -> Path:
    from ledger.location import trail_home

    return trail_home() / "deadletter"


def _redacted(value: Any) -> Any:
    from ledger.redact import redact_text

    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    return value


def enqueue(path: Path, agent: str, raw: str) -> int:
    """Validate, redact and append one payload to the inbox; returns its inbox id."""
    payload = json.loads(raw)
    if not isinstance(payload, dict):
        raise ValueError("hook payload is not a JSON object")
    text = json.dumps(_redacted(payload), ensure_ascii=False)  # secrets never touch the disk in clear
    fresh = not path.exists()
    if fresh:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        if fresh:
            conn.execute("PRAGMA journal_mode=WAL")  # as the ledger sets it: readers never block the hook
        conn.execute(INBOX_DDL)
        cursor = conn.execute(
            "INSERT INTO capture_inbox (agent, received, payload) VALUES (?, ?, ?)", (agent, time.time(), text)
        )
        return int(cursor.lastrowid or 0)
    finally:
        conn.close()


def spool(raw: str, reason: str) -> Path:
    """Keep a payload that could not be taken in, for ``trail doctor --retry``."""
    folder = deadletter_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{time.time_ns()}-{os.getpid()}.json"
    target.write_text(json.dumps({"reason": reason, "raw": raw}))
    return target


def run(argv: list[str]) -> int:
    """Handle one hook invocation (``argv`` after ``hook``); always returns 0."""
    agent = argv[0] if argv else ""
    raw = ""
    queued = False
    try:
        if agent not in AGENTS:
            raise ValueError(f"unknown agent {agent!r}; expected one of {', '.join(AGENTS)}")
        raw = sys.stdin.read()
        path = ledger_file()
        enqueue(path, agent, raw)
        queued = True
        if '"SessionStart"' in raw:
            # Answering with state needs the ledger: only this event pays for the heavy imports.
            from ledger.capture.inbox import session_start_answer

            answer = session_start_answer(json.loads(raw))
            if answer:
                sys.stdout.write(answer)
    except Exception as exc:  # a hook must never break the agent: report, keep the payload, exit 0
        where = ""
        try:
            # Once queued the payload is safe in the inbox; only a payload the inbox never took is spooled.
            where = f"; payload kept in {spool(raw, str(exc))}" if raw and not queued else ""
        except Exception as spool_exc:
            where = f"; could not keep the payload: {spool_exc}"
        print(f"trail hook {agent}: {type(exc).__name__}: {exc}{where}".replace("\n", " "), file=sys.stderr)
    return 0
