"""Putting hook payloads into the capture inbox: parse, cap, redact, append in one short transaction; and
when that cannot be done, keep the payload (``spool``: a redacted dead letter for ``trail doctor --retry``;
``spool_raw``: unread, private, for the next drain's ``take_spooled``); and telling, without the ledger,
whether anything waits to be folded in (``waiting``).

The hook (``ledger.capture.hook``) writes through this module, and the inbox's drain
(``ledger.capture.inbox``) takes spooled payloads in through it: both import it, neither the other's
internals. Standard library at import, as the hook needs (``tests/test_startup.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from ledger.base import private
from ledger.base.caps import CUTS_KEY, cap_payload
from ledger.base.home import home_dir
from ledger.base.ledger_file import INBOX_DDL, foreign_tables, legacy_inbox_for_url, read_only_uri
from ledger.capture.agents import known
from ledger.capture.jsonl import loads
from ledger.domain.redact import patterns_for, redact_json, redact_json_text, redact_text, safe_patterns

if TYPE_CHECKING:
    from ledger.base.location import Location

DROPPED_KEY = "_trail_dropped"
"""The key of a stand-in payload: ``{"size": N, "sha256": H, "limit": MAX_PAYLOAD}``, set by the hook only."""
HUNKS_KEY = "_trail_patch_hunks"
"""Where the hook puts, for each file of a PostToolUse ``apply_patch``, the ``[old, new]`` 1-based starts of
its hunks (``{path as written: [[old, new], …]}``, ``ledger.capture.patchlines``); set by the hook only."""


class ForeignFile(ValueError):
    """The ledger path names another application's SQLite database: nothing is written into it."""


def parse(raw: str) -> dict[str, Any]:
    """The hook payload as a JSON object, or ValueError saying why not (nested too deep among them)."""
    payload = loads(raw)
    if not isinstance(payload, dict):
        raise ValueError("hook payload is not a JSON object")
    return payload


def enqueue(path: str, agent: str, payload: dict[str, Any], busy_s: float = 30.0) -> int:
    """Redact, cap and append one parsed payload to the inbox; returns its inbox id."""
    return insert(path, agent, prepare(payload), busy_s)


def prepare(payload: dict[str, Any]) -> str:
    """The inbox row's text for one parsed payload: capped, then redacted."""
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
    return json.dumps(clean, ensure_ascii=False)


def insert(path: str, agent: str, text: str, busy_s: float = 30.0) -> int:
    """Append a prepared row to the inbox at ``path``; returns its id. Waits at most ``busy_s``
    seconds for a writer holding the file; refuses (``ForeignFile``) a file that is another
    application's database, by the test ``open_ledger`` makes (``ledger.base.ledger_file``)."""
    fresh = not os.path.exists(path)
    if fresh:
        private.folder(os.path.dirname(path) or ".")
    # The last connection to close a WAL file checkpoints it and deletes the WAL: two fsyncs, more than
    # the rest of the hook. A read-only connection never checkpoints, so one holding the WAL open while
    # the row is written (and closing last) leaves the WAL for the ledger's next writer to fold in.
    reader = None if fresh else _wal_holder(path)
    conn = sqlite3.connect(path, timeout=busy_s, isolation_level=None)
    try:
        if fresh:
            conn.execute("PRAGMA journal_mode=WAL")  # as the ledger sets it: readers never block the hook
        else:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if foreign_tables(tables):
                raise ForeignFile(f"{path} is not a tasktrail ledger (an SQLite database without its tables)")
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


def deadletter_dir() -> str:
    return os.path.join(home_dir(), "deadletter")


def spool_dir() -> str:
    """Payloads the hook had no time to take in, kept as they came (private) until the next drain."""
    return os.path.join(home_dir(), "spool")


def waiting(location: Location) -> bool:
    """Whether the capture inbox of the ledger at ``location`` may hold rows: False only when it surely holds
    none. Read with sqlite3 alone and without writing (a command that finds nothing waiting opens no more)."""
    from ledger.base.location import inbox_path  # the hook never asks: dataclasses and pathlib cost it ~10 ms

    if not location.is_sqlite and os.path.exists(legacy_inbox_for_url(str(location.home), location.url)):
        return True  # queued by a release before the masked name: the drain takes it in and removes it
    with contextlib.suppress(OSError):
        if os.listdir(spool_dir()):
            return True  # payloads the hook ran out of time on, to be redacted and folded in
    path = inbox_path(location)
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(path, timeout=30)
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'capture_inbox'").fetchone():
                return conn.execute("SELECT 1 FROM capture_inbox LIMIT 1").fetchone() is not None
            return False
        finally:
            conn.close()
    except sqlite3.Error:
        return True  # let the drain look, and report what is wrong


def _private_file(folder: str, data: bytes) -> str:
    """Write ``data`` to a new file in ``folder``, both private to the user (0700, 0600) from the start."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    target = os.path.join(folder, f"{time.time_ns()}-{os.getpid()}.json")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return target


def spool_raw(raw: bytes, agent: str) -> str:
    """Keep a payload the hook ran out of time on, unread: the agent's name, a newline, its bytes.
    Not redacted (that is the work there was no time for): the file is private, and the next drain
    redacts it on the way into the inbox (``take_spooled``)."""
    return _private_file(spool_dir(), agent.encode() + b"\n" + raw)


def take_spooled(path: str) -> int:
    """Move the spooled payloads into the inbox at ``path``, redacted as the hook would have; one
    that is not a JSON object goes to the dead letters (redacted). Returns how many were taken."""
    folder = spool_dir()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return 0
    taken = 0
    for name in names:
        file = os.path.join(folder, name)
        try:
            with open(file, "rb") as handle:
                agent, _, raw = handle.read().partition(b"\n")
        except OSError:
            continue
        who = agent.decode("utf-8", "replace")
        text = raw.decode("utf-8", "replace")
        try:
            if not known(who):
                raise ValueError(f"spooled payload of unknown agent {who!r}")
            enqueue(path, who, parse(text))
        except ValueError as exc:
            spool(text, f"spooled payload {name}: {exc}", who if known(who) else "claude-code")
        os.unlink(file)
        taken += 1
    return taken


def spool(raw: str, reason: str, agent: str = "claude-code") -> str:
    """Keep a payload that could not be taken in, for ``trail doctor --retry``, redacted like any other.

    A payload that parses is redacted as JSON (it replays as it was, less its secrets); one that
    does not (torn, or nested too deep to parse) is redacted as text, its escapes decoded. A broken ``redact.toml``
    falls back to the built-in patterns rather than keep the payload in clear.
    """
    patterns = safe_patterns()
    try:
        kept = json.dumps(redact_json(loads(raw), patterns), ensure_ascii=False)
    except ValueError:
        kept = redact_json_text(raw, patterns)
    letter = {"reason": redact_text(reason, patterns), "agent": agent, "raw": kept}
    return _private_file(deadletter_dir(), json.dumps(letter).encode())
