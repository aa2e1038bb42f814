"""`trail hook claude-code` / `trail hook codex`: the lean entry point the agents run on every hook event.

It must cost little and never break the agent, so it imports only the standard library (plus
``ledger.location`` and ``ledger.redact``, which are stdlib-only at import): it redacts the
payload, appends it to the ``capture_inbox`` table in the ledger's SQLite file in one short
transaction, and exits 0. The ledger folds the inbox into validated events before any read
(``ledger.capture.inbox``). Only SessionStart, which must answer with the task's state, loads
the ledger at once. On any error: one line on stderr, the payload kept (redacted) in
``TRAIL_HOME/deadletter/`` for ``trail doctor --retry``, and still exit 0 (non-blocking).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from typing import Any

from ledger.capture.jsonl import loads
from ledger.home import home_dir

INBOX_DDL = (
    "CREATE TABLE IF NOT EXISTS capture_inbox ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, received REAL NOT NULL, payload TEXT NOT NULL)"
)
AGENTS = ("claude-code", "codex")
"""The agents whose hook payloads the inbox takes (its ``agent`` column; ``capture.inbox`` routes by it)."""


def ledger_file(db: str | None = None) -> str:
    """The SQLite file that holds the inbox: the ledger's own file, as ``ledger.location.resolve``
    finds it, or for a PostgreSQL ledger a local file named after its URL (``inbox_for_url``).

    Mirrors ``resolve`` (``db`` as `--db` gives it, else ``TRAIL_DB``, ``TRAIL_DATABASE_URL``,
    ``TRAIL_HOME``, XDG data dir) with ``os`` alone, because dataclasses and pathlib cost this hot
    path ~10 ms; a test pins the two together.
    """
    env = os.environ
    value = db or env.get("TRAIL_DB") or env.get("TRAIL_DATABASE_URL")
    if value:
        if value.startswith(("postgresql://", "postgres://")):
            return inbox_for_url(home_dir(), value)
        return os.path.expanduser(value.removeprefix("sqlite:"))
    return os.path.join(home_dir(), "ledger.db")


def sqlite_ledger(db: str | None = None) -> str | None:
    """The ledger's own SQLite file (``ledger_file``), or None when the ledger is a server's or its URL unknown."""
    value = db or os.environ.get("TRAIL_DB") or os.environ.get("TRAIL_DATABASE_URL") or ""
    return None if "://" in value and not value.startswith("sqlite:") else ledger_file(db)


def inbox_for_url(home: str, url: str) -> str:
    """The local inbox file of a server ledger: hooks stay local and fast, the next command folds it in.

    Named by a digest of the URL with its password masked (``Location.display``): a digest of the
    whole URL let anyone who can list the folder guess the password offline."""
    import hashlib
    from pathlib import Path

    from ledger.location import Location

    masked = Location(url=url, home=Path(home)).display
    return os.path.join(home, "inbox", hashlib.sha256(masked.encode()).hexdigest()[:16] + ".db")


def legacy_inbox_for_url(home: str, url: str) -> str:
    """Where releases before the masked digest queued a server ledger's rows: drained, then removed."""
    import hashlib

    return os.path.join(home, "inbox", hashlib.sha256(url.encode()).hexdigest()[:16] + ".db")


def deadletter_dir() -> str:
    return os.path.join(home_dir(), "deadletter")


def parse(raw: str) -> dict[str, Any]:
    """The hook payload as a JSON object, or ValueError saying why not (nested too deep among them)."""
    payload = loads(raw)
    if not isinstance(payload, dict):
        raise ValueError("hook payload is not a JSON object")
    return payload


def enqueue(path: str, agent: str, payload: dict[str, Any]) -> int:
    """Redact, cap and append one parsed payload to the inbox; returns its inbox id."""
    from ledger.capture.caps import CUTS_KEY, cap_payload
    from ledger.redact import patterns_for, redact_json

    # Secrets never touch the disk in clear, and a huge output never bloats the inbox
    # (capped first, so redaction scans at most the kept tail; the cuts are noted beside the
    # payload, never inside a string).
    if not payload.get("cwd"):
        # Agents run hooks in the session's folder; routing needs the project even when unsaid.
        payload = {**payload, "cwd": os.getcwd()}
    capped = cap_payload(payload)
    cuts = capped.pop(CUTS_KEY, None)
    clean = redact_json(capped, patterns_for(home_dir()))
    if cuts:
        clean[CUTS_KEY] = cuts
    text = json.dumps(clean, ensure_ascii=False)
    fresh = not os.path.exists(path)
    if fresh:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    # The last connection to close a WAL file checkpoints it and deletes the WAL: two fsyncs, more than
    # the rest of the hook. A read-only connection never checkpoints, so one holding the WAL open while
    # the row is written (and closing last) leaves the WAL for the ledger's next writer to fold in.
    reader = None if fresh else _wal_holder(path)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        if fresh:
            conn.execute("PRAGMA journal_mode=WAL")  # as the ledger sets it: readers never block the hook
        # In WAL mode NORMAL never corrupts; a power cut may lose the last rows committed. The commit then
        # needs no fsync of its own (FULL's fsync of every commit cost a hook 5-20 ms).
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(INBOX_DDL)
        cursor = conn.execute(
            "INSERT INTO capture_inbox (agent, received, payload) VALUES (?, ?, ?)", (agent, time.time(), text)
        )
        return int(cursor.lastrowid or 0)
    finally:
        conn.close()
        if reader is not None:
            reader.close()


def _wal_holder(path: str) -> sqlite3.Connection | None:
    """A read-only connection that has opened the file's WAL (one read), or None when it cannot be had."""
    try:
        reader = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None, timeout=30)
        reader.execute("SELECT count(*) FROM sqlite_master").fetchall()
        return reader
    except sqlite3.Error:
        return None


def read_only_uri(path: str) -> str:
    """An SQLite URI opening ``path`` read-only; what a URI path would take as syntax is escaped (urllib's
    ``quote`` does the same, at ~5 ms of imports)."""
    return "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=ro"


def spool(raw: str, reason: str, agent: str = "claude-code") -> str:
    """Keep a payload that could not be taken in, for ``trail doctor --retry``, redacted like any other.

    A payload that parses is redacted as JSON (it replays as it was, less its secrets); one that
    does not (torn, or nested too deep to parse) is redacted as text, its escapes decoded. A broken ``redact.toml``
    falls back to the built-in patterns rather than keep the payload in clear.
    """
    from ledger.redact import redact_json, redact_json_text, redact_text, safe_patterns

    patterns = safe_patterns()
    try:
        kept = json.dumps(redact_json(loads(raw), patterns), ensure_ascii=False)
    except ValueError:
        kept = redact_json_text(raw, patterns)
    folder = deadletter_dir()
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"{time.time_ns()}-{os.getpid()}.json")
    with open(target, "w") as handle:
        json.dump({"reason": redact_text(reason, patterns), "agent": agent, "raw": kept}, handle)
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
        payload = parse(raw)  # once: a payload can be tens of MB
        row = enqueue(ledger_file(), agent, payload)
        queued = True
        if payload.get("hook_event_name") == "SessionStart":
            # Answered from the brief cache when it provably holds the answer; else the ledger
            # is loaded (only this event pays for the heavy imports), which refreshes the cache.
            from ledger.briefcache import cached_session_start

            answer = cached_session_start(payload, agent, row)
            if answer is None:
                from ledger.capture.inbox import session_start_answer

                answer = session_start_answer(payload, agent)
            if answer:
                sys.stdout.write(answer)
    except Exception as exc:  # a hook must never break the agent: report, keep the payload, exit 0
        where = ""
        try:
            # Once queued the payload is safe in the inbox; only a payload the inbox never took is spooled.
            where = f"; payload kept in {spool(raw, str(exc), agent)}" if raw and not queued else ""
        except Exception as spool_exc:
            where = f"; could not keep the payload: {spool_exc}"
        from ledger.redact import redact_text, safe_patterns

        message = redact_text(f"trail hook {agent}: {type(exc).__name__}: {exc}{where}", safe_patterns())
        print(message.replace("\n", " "), file=sys.stderr)
    return 0
