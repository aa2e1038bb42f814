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
import stat
import time
from typing import TYPE_CHECKING, Any

from ledger.base import hook_spool, private
from ledger.base.caps import CUTS_KEY, cap_payload
from ledger.base.crashpoints import crash_point, gate_point
from ledger.base.home import home_dir
from ledger.base.hook_spool import DROPPED_KEY, HUNKS_KEY
from ledger.base.ledger_file import INBOX_DDL, foreign_tables, legacy_inbox_for_url, read_only_uri
from ledger.capture.agents import known
from ledger.capture.jsonl import loads
from ledger.domain.redact import patterns_for, redact_json, redact_json_text, redact_text, safe_patterns

if TYPE_CHECKING:
    from ledger.base.location import Location

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


def insert(path: str, agent: str, text: str, busy_s: float = 30.0, until: float | None = None) -> int:
    """Append a prepared row to the inbox at ``path``, after the payloads spooled for it (``take``, in the same
    transaction: a row never lands before an event its session sent earlier); returns its id. Waits at most
    ``busy_s`` seconds for a writer holding the file; refuses (``ForeignFile``) a file that is another
    application's database, by the test ``open_ledger`` makes (``ledger.base.ledger_file``). Raises ``Behind``,
    the row not added, when the spooled payloads could not all be taken in by ``until`` (``time.monotonic``)."""
    fresh = _create(path)
    # The last connection to close a WAL file checkpoints it and deletes the WAL: two fsyncs, more than the rest
    # of the hook. A read-only connection never checkpoints, so one holding the WAL open while the row is written
    # (and closing last) leaves the WAL for the ledger's next writer to fold in.
    reader = None if fresh else _wal_holder(path)
    conn = sqlite3.connect(path, timeout=busy_s, isolation_level=None)
    try:
        if not fresh:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if foreign_tables(tables):
                raise ForeignFile(f"{path} is not a tasktrail ledger (an SQLite database without its tables)")
        # In WAL mode NORMAL never corrupts; a power cut may lose the last rows committed. The commit then
        # needs no fsync of its own (FULL's fsync of every commit cost a hook 5-20 ms).
        conn.execute("PRAGMA synchronous=NORMAL")
        taken, row = _take_then(conn, path, until, (agent, text))
        _unlink(taken)
        if row is None:  # those taken keep their order; this row waits behind the rest
            raise Behind(f"{path}: payloads spooled before this one are still to be taken in")
        with contextlib.suppress(OSError):
            hook_spool.trust(os.path.abspath(path))  # a ledger's inbox, checked above: the hook may spool for it
        return row
    finally:
        conn.close()
        if reader is not None:
            reader.close()


def _take_then(conn: sqlite3.Connection, path: str, until: float | None,
               row: tuple[str, str] | None) -> tuple[list[str], int | None]:
    """In one write transaction of the inbox at ``path``: take the payloads spooled for it in (``_take``), then,
    when all were taken by ``until``, add ``row`` (agent, prepared text). Returns the names taken (committed:
    unlink them) and the row's id (None: not added)."""
    conn.execute(INBOX_DDL)
    conn.execute(SPOOLED_DDL)
    conn.execute("BEGIN IMMEDIATE")
    try:
        taken, done = _take(conn, path, until)
        crash_point("spool-taken")
        added = None
        if done and row is not None:
            cursor = conn.execute("INSERT INTO capture_inbox (agent, received, payload) VALUES (?, ?, ?)",
                                  (row[0], time.time(), row[1]))
            added = int(cursor.lastrowid or 0)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    crash_point("spool-committed")
    return taken, added


class Behind(Exception):
    """Payloads spooled for the inbox before this row could not all be taken in in time: the row is not added."""


SPOOLED_DDL = "CREATE TABLE IF NOT EXISTS capture_spooled (name TEXT PRIMARY KEY)"
"""The spooled files taken into this inbox whose unlinking is not yet seen done: each is taken once, even when
the process taking it dies between its commit and the unlink, or the unlink fails."""


def take_spooled(path: str) -> int:
    """Move the payloads spooled for the inbox at ``path`` into it, redacted as the hook would have, in the order
    the hooks wrote them; one that is not a JSON object (or not a whole, regular file of this user) goes to the
    dead letters, redacted. Returns how many files were taken."""
    if not hook_spool.pending(path):
        return 0
    _create(path)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        taken, _ = _take_then(conn, path, None, None)
    finally:
        conn.close()
    _unlink(taken)
    return len(taken)


def _create(path: str) -> bool:
    """Make the inbox at ``path`` when there is none, whole: built under a name of this process's, in WAL mode
    with its tables, then linked into place (``os.link`` fails when another got there first). Returns whether
    this call made it. Hooks racing to make one file in place would each switch its journal to WAL, and that
    switch takes the file's exclusive lock with no busy wait: "database is locked", the payload dead-lettered."""
    if os.path.exists(path):
        return False
    private.folder(os.path.dirname(path) or ".")
    temp = f"{path}.{os.getpid()}.new"
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # as the ledger sets it: readers never block the hook
            conn.execute(INBOX_DDL)
            conn.execute(SPOOLED_DDL)
        finally:
            conn.close()
        gate_point("inbox-built")
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: renamed unless another got there first
            if os.path.exists(path):
                return False
            os.rename(temp, path)
        return True
    finally:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp + suffix)


def _unlink(names: list[str]) -> None:
    where = hook_spool.folder()
    for name in names:
        with contextlib.suppress(OSError):  # left: the inbox's capture_spooled row keeps it from being taken again
            os.unlink(os.path.join(where, name))


def _take(conn: sqlite3.Connection, path: str, until: float | None) -> tuple[list[str], bool]:
    """In ``conn``'s open write transaction, add the payloads spooled for the inbox at ``path`` as its next rows
    (the files of other inboxes are left). Returns the names taken (to unlink once committed), and whether all
    were: False when ``until`` (``time.monotonic``) passed first."""
    names, temps = hook_spool.listing()
    gate_point("spool-listed")
    seen = {name for (name,) in conn.execute("SELECT name FROM capture_spooled")}
    if seen:
        present = set(names)
        conn.executemany("DELETE FROM capture_spooled WHERE name = ?", [(n,) for n in seen if n not in present])
    taken = [name for name in names if name in seen]  # taken before; their unlink is still to be done
    mine = os.path.realpath(path)
    for name in names:
        if name in seen:
            continue
        if until is not None and time.monotonic() >= until:
            return taken, False
        kept = _read_spooled(name)
        if isinstance(kept, tuple):  # not to be taken in: dead-lettered (redacted) with the reason
            spool(kept[1], f"spooled payload {name}: {kept[0]}")
        elif kept.inbox is not None and os.path.realpath(kept.inbox) != mine:
            continue  # another ledger's: its own next read takes it in
        else:
            _queue_spooled(conn, name, kept)
        conn.execute("INSERT INTO capture_spooled (name) VALUES (?)", (name,))
        taken.append(name)
    for name in temps:
        _clear_temp(name)
    return taken, True


def _read_spooled(name: str) -> hook_spool.Spooled | tuple[str, str]:
    """The spooled file ``name``, or why it is not taken in and what it holds (for its dead letter): not a
    regular file of this user, over the bound, no whole header."""
    file = os.path.join(hook_spool.folder(), name)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a link is not followed, a FIFO not waited on
    except OSError as exc:
        return f"not opened ({exc.strerror or exc})", ""
    bound = hook_spool.LIMIT + hook_spool.HEADER_MAX
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file", ""
        data = handle.read(bound + 1)
    text = data[:bound].decode("utf-8", "replace")
    if info.st_uid != os.geteuid():
        return f"owned by another user (uid {info.st_uid}), not by this one: not taken in", text
    try:
        kept = hook_spool.parse(name, data)
    except ValueError as exc:
        return str(exc), text
    if len(data) > bound or len(kept.body) > hook_spool.LIMIT:
        return f"over the {hook_spool.LIMIT} bytes a hook keeps: not taken in", text
    return kept


def _queue_spooled(conn: sqlite3.Connection, name: str, kept: hook_spool.Spooled) -> None:
    """Add one spooled payload as the inbox's next row, capped and redacted (or dead-letter it, redacted)."""
    text = kept.body.decode("utf-8", "replace")
    agent = kept.agent if known(kept.agent) else "claude-code"
    try:
        if not known(kept.agent):
            raise ValueError(f"spooled payload of unknown agent {kept.agent!r}")
        payload = parse(text)
        if kept.kind != hook_spool.PARSED:  # as the agent sent it: keys only the hook sets say nothing
            payload.pop(DROPPED_KEY, None)
            payload.pop(HUNKS_KEY, None)
        if not payload.get("cwd") and kept.cwd:
            payload["cwd"] = kept.cwd  # the folder the hook ran in, not this process's
        row = prepare(payload)
    except ValueError as exc:
        spool(text, f"spooled payload {name}: {exc}", agent)
        return
    conn.execute("INSERT INTO capture_inbox (agent, received, payload) VALUES (?, ?, ?)",
                 (kept.agent, kept.received or time.time(), row))


def _clear_temp(name: str) -> None:
    """Dead-letter (redacted) and remove a temporary file its hook left when it died writing: a torn payload."""
    if not hook_spool.abandoned(name):
        return  # being written: renamed into place soon, and taken by the next drain
    kept = _read_spooled(name)
    if isinstance(kept, tuple) and not os.path.lexists(os.path.join(hook_spool.folder(), name)):
        return  # renamed into place since it was listed (its hook then exited): whole, taken by the next drain
    text = kept[1] if isinstance(kept, tuple) else kept.body.decode("utf-8", "replace")
    agent = kept.agent if isinstance(kept, hook_spool.Spooled) and known(kept.agent) else "claude-code"
    spool(text, f"spooled payload {name}: torn (its hook died writing it)", agent)
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(hook_spool.folder(), name))


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


def waiting(location: Location) -> bool:
    """Whether the capture inbox of the ledger at ``location`` may hold rows: False only when it surely holds
    none. Read with sqlite3 alone and without writing (a command that finds nothing waiting opens no more)."""
    from ledger.base.location import inbox_path  # the hook never asks: dataclasses and pathlib cost it ~10 ms

    if not location.is_sqlite and os.path.exists(legacy_inbox_for_url(str(location.home), location.url)):
        return True  # queued by a release before the masked name: the drain takes it in and removes it
    path = inbox_path(location)
    if hook_spool.pending(str(path)):
        return True  # payloads the hook kept unread, to be redacted and folded in
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


def spool_raw(raw: bytes, agent: str, inbox: str) -> str:
    """Keep a payload the hook ran out of time on, unread, for the inbox at ``inbox`` (``hook_spool``). Not
    redacted (that is the work there was no time for): the file is private, and the next drain redacts it on
    the way into the inbox (``take_spooled``)."""
    return hook_spool.write(agent, os.path.abspath(inbox), os.getcwd(), hook_spool.RAW, raw)


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
