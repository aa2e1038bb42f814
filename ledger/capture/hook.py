"""`trail hook NAME` (an agent of ``ledger.capture.agents``): the lean entry point the agents run on every hook event.

It must cost little and never break the agent, so it imports only the standard library (plus
``ledger.base.location`` and ``ledger.domain.redact``, which are stdlib-only at import): it redacts the
payload, appends it to the ``capture_inbox`` table in the ledger's SQLite file in one short
transaction, and exits 0. The ledger folds the inbox into validated events before any read
(``ledger.capture.inbox``). Only SessionStart, which must answer with the task's state, loads
the ledger at once. On any error: one line on stderr, the payload kept (redacted) in
``TRAIL_HOME/deadletter/`` for ``trail doctor --retry``, and still exit 0 (non-blocking).

Bounded whatever the input: at most ``MAX_PAYLOAD`` bytes are read from stdin (a longer payload is
read past, hashed, and stored as a note of its size), and the work stops at ``deadline()`` seconds:
a payload not taken in by then is kept as it came, in a private file (``TRAIL_HOME/spool/``, 0600),
which the next drain redacts and folds in (``take_spooled``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from ledger.base.crashpoints import stall_point
from ledger.base.home import home_dir
from ledger.base.ledger_file import foreign_tables
from ledger.capture.agents import known, names
from ledger.capture.jsonl import loads

INBOX_DDL = (
    "CREATE TABLE IF NOT EXISTS capture_inbox ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, received REAL NOT NULL, payload TEXT NOT NULL)"
)

MAX_PAYLOAD = 64 << 20
"""Bytes of a hook payload read from stdin. A longer one is read past (the agent's pipe never
fills) and stored as a note of its size and sha256, with the short fields of its head (``DROPPED_KEY``).
Taking a payload in peaks at about 4.3 times its size (90 MB: 389 MB resident, 1.6 s), so this
bounds the hook near 300 MB; real payloads stay far below it (a Write of a 10 MB file is about
20 MB: the content, then the tool's echo of it)."""
DROPPED_KEY = "_trail_dropped"
"""The key of a stand-in payload: ``{"size": N, "sha256": H, "limit": MAX_PAYLOAD}``, set by the hook only."""
DEADLINE_S = 5.0
"""Seconds the hook works before it gives up on a payload and spools it (``TRAIL_HOOK_DEADLINE_S``
sets another): Codex stops a hook after 10 s (the timeout ``trail install codex`` writes), and the
interpreter's start and the spooling must fit in that too."""
_HEAD_FIELDS = re.compile(
    r'"(session_id|hook_event_name|tool_name|tool_use_id|cwd|transcript_path|turn_id)"\s*:\s*"((?:[^"\\\n]|\\.){0,4096})"'
)
"""The short fields a stand-in payload keeps from the head of a payload too big to read."""


class Deadline(BaseException):
    """The hook's time is up. A BaseException, so no ``except Exception`` on the way swallows it."""


def deadline() -> float:
    """Seconds the hook may work (``DEADLINE_S``, or ``TRAIL_HOOK_DEADLINE_S`` when that is a number)."""
    try:
        given = float(os.environ.get("TRAIL_HOOK_DEADLINE_S", DEADLINE_S))
    except ValueError:
        return DEADLINE_S
    return given if 0 < given < 3600 else DEADLINE_S


def _expire(signum: int, frame: object) -> None:
    raise Deadline


@contextmanager
def _until(at: float) -> Iterator[None]:
    """Raise ``Deadline`` in the block once ``time.monotonic()`` passes ``at`` (a real timer: the
    regex engine and the reads check for signals as they go). Without SIGALRM (not Unix), or off the
    main thread, no bound."""
    if not hasattr(signal, "setitimer"):
        yield
        return
    left = at - time.monotonic()
    if left <= 0:
        raise Deadline
    try:
        previous = signal.signal(signal.SIGALRM, _expire)
    except ValueError:  # not the main thread (the hook run in-process by a caller's thread): no timer
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_payload(stream: IO[bytes], limit: int | None = None) -> tuple[bytes, dict[str, Any] | None]:
    """The payload's bytes, or for one over ``limit`` bytes (``MAX_PAYLOAD``) its head and the note of
    its whole (size, sha256): the rest is read past in pieces, so memory stays bounded by ``limit``."""
    limit = MAX_PAYLOAD if limit is None else limit
    raw = stream.read(limit + 1)
    if len(raw) <= limit:
        return raw, None
    digest = hashlib.sha256(raw)
    size = len(raw)
    while piece := stream.read(1 << 20):
        digest.update(piece)
        size += len(piece)
    return raw, {"size": size, "sha256": digest.hexdigest(), "limit": limit}


def stand_in(head: bytes, dropped: dict[str, Any]) -> dict[str, Any]:
    """The payload stored for one too big to read: the short fields found in its head, first
    occurrence each (escapes decoded), and the note of what was dropped."""
    fields: dict[str, Any] = {}
    for match in _HEAD_FIELDS.finditer(head.decode("utf-8", "replace")):
        if match.group(1) not in fields:
            try:
                fields[match.group(1)] = json.loads(f'"{match.group(2)}"')
            except ValueError:
                continue
    fields[DROPPED_KEY] = dropped
    return fields


def ledger_file(db: str | None = None) -> str:
    """The SQLite file that holds the inbox: the ledger's own file, as ``ledger.base.location.resolve``
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

    from ledger.base.location import Location

    masked = Location(url=url, home=Path(home)).display
    return os.path.join(home, "inbox", hashlib.sha256(masked.encode()).hexdigest()[:16] + ".db")


def legacy_inbox_for_url(home: str, url: str) -> str:
    """Where releases before the masked digest queued a server ledger's rows: drained, then removed."""
    import hashlib

    return os.path.join(home, "inbox", hashlib.sha256(url.encode()).hexdigest()[:16] + ".db")


def deadletter_dir() -> str:
    return os.path.join(home_dir(), "deadletter")


def spool_dir() -> str:
    """Payloads the hook had no time to take in, kept as they came (private) until the next drain."""
    return os.path.join(home_dir(), "spool")


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


def parse(raw: str) -> dict[str, Any]:
    """The hook payload as a JSON object, or ValueError saying why not (nested too deep among them)."""
    payload = loads(raw)
    if not isinstance(payload, dict):
        raise ValueError("hook payload is not a JSON object")
    return payload


class ForeignFile(ValueError):
    """The ledger path names another application's SQLite database: nothing is written into it."""


def enqueue(path: str, agent: str, payload: dict[str, Any], busy_s: float = 30.0) -> int:
    """Redact, cap and append one parsed payload to the inbox; returns its inbox id."""
    return insert(path, agent, prepare(payload), busy_s)


def prepare(payload: dict[str, Any]) -> str:
    """The inbox row's text for one parsed payload: capped, then redacted."""
    from ledger.base.caps import CUTS_KEY, cap_payload
    from ledger.domain.redact import patterns_for, redact_json

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
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
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
    from ledger.domain.redact import redact_json, redact_json_text, redact_text, safe_patterns

    patterns = safe_patterns()
    try:
        kept = json.dumps(redact_json(loads(raw), patterns), ensure_ascii=False)
    except ValueError:
        kept = redact_json_text(raw, patterns)
    letter = {"reason": redact_text(reason, patterns), "agent": agent, "raw": kept}
    return _private_file(deadletter_dir(), json.dumps(letter).encode())


def run(argv: list[str], stdin: IO[bytes] | None = None) -> int:
    """Handle one hook invocation (``argv`` after ``hook``); always returns 0, within ``deadline()``."""
    began = time.monotonic()
    ends = began + deadline()
    agent = argv[0] if argv else ""
    raw = ""
    body = b""
    queued = False
    try:
        if not known(agent):
            raise ValueError(f"unknown agent {agent!r}; expected one of {', '.join(names())}")
        with _until(ends):
            body, dropped = read_payload(stdin or sys.stdin.buffer)
            if dropped is not None:
                payload = stand_in(body, dropped)
                body = b""  # over the bound: never spooled whole, the note stands for it
            else:
                raw = body.decode("utf-8", "replace")
                payload = parse(raw)  # once: a payload can be tens of MB
                payload.pop(DROPPED_KEY, None)  # the hook's own key: one the agent sent says nothing
                stall_point("hook-parsed")
            text = prepare(payload)
        # The insert is one short transaction, left to finish (a timer firing in it could leave the
        # row stored and the payload spooled too); the wait for a busy file is bounded instead.
        row = insert(ledger_file(), agent, text, busy_s=max(0.1, ends - time.monotonic()))
        queued = True
        if payload.get("hook_event_name") == "SessionStart":
            with _until(ends):
                # Answered from the brief cache when it provably holds the answer; else the ledger
                # is loaded (only this event pays for the heavy imports), which refreshes the cache.
                from ledger.app.briefcache import cached_session_start

                answer = cached_session_start(payload, agent, row)
                if answer is None:
                    from ledger.capture.inbox import session_start_answer

                    stall_point("hook-session-start")
                    answer = session_start_answer(payload, agent)
            if answer:
                sys.stdout.write(answer)
    except Deadline:
        where = ""
        try:
            if body and not queued:
                where = f"; payload kept in {spool_raw(body, agent)} until the next read folds it in"
        except Exception as spool_exc:
            where = f"; could not keep the payload: {spool_exc}"
        print(f"trail hook {agent}: gave up after {deadline():g} s{where}", file=sys.stderr)
    except Exception as exc:  # a hook must never break the agent: report, keep the payload, exit 0
        where = ""
        try:
            # Once queued the payload is safe in the inbox; only a payload the inbox never took is
            # spooled; nothing goes into another application's database, nor beside it.
            if raw and not queued and not isinstance(exc, ForeignFile):
                try:
                    with _until(ends):  # redacting a torn 30 MB payload takes time too
                        where = f"; payload kept in {spool(raw, str(exc), agent)}"
                except Deadline:
                    where = f"; payload kept in {spool_raw(body, agent)} until the next read folds it in"
        except Exception as spool_exc:
            where = f"; could not keep the payload: {spool_exc}"
        from ledger.domain.redact import redact_text, safe_patterns

        message = redact_text(f"trail hook {agent}: {type(exc).__name__}: {exc}{where}", safe_patterns())
        print(message.replace("\n", " "), file=sys.stderr)
    return 0
