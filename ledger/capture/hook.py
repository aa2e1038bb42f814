"""`trail hook NAME` (an agent of ``ledger.capture.agents``): the lean entry point the agents run on every hook event.

It must cost little and never break the agent, so it imports only the standard library (plus
``ledger.base``, ``ledger.domain.redact``, ``ledger.capture.inbox_queue`` and ``ledger.capture.detach``, which
are stdlib-only at import):
through ``inbox_queue`` it redacts the payload, appends it to the ``capture_inbox`` table in the
ledger's SQLite file in one short transaction, and exits 0. The ledger folds the inbox into
validated events before any read (``ledger.capture.inbox``). Only SessionStart, which must answer
with the task's state, loads the ledger at once, unless the brief cache answers; a stopping session's hook
(Stop, SessionEnd, PreCompact) starts a detached drain (``ledger.capture.detach``) so that the next
SessionStart normally can. On any error: one line on stderr, the payload kept (redacted) in
``TRAIL_HOME/deadletter/`` for ``trail doctor --retry``, and still exit 0 (non-blocking).

Bounded whatever the input: at most ``MAX_PAYLOAD`` bytes are read from stdin (a longer payload is
read past, hashed, and stored as a note of its size), and the work stops at ``deadline()`` seconds:
a payload not taken in by then is kept as it came, in a private file (``TRAIL_HOME/spool/``, 0600),
which the next drain redacts and folds in (``take_spooled``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from ledger.base.crashpoints import stall_point
from ledger.base.ledger_file import ledger_file
from ledger.capture import detach
from ledger.capture.agents import BUILTIN, known, names
from ledger.capture.inbox_queue import (
    DROPPED_KEY,
    HUNKS_KEY,
    ForeignFile,
    insert,
    parse,
    prepare,
    spool,
    spool_raw,
)
from ledger.domain.redact import redact_text, safe_patterns

MAX_PAYLOAD = 64 << 20
"""Bytes of a hook payload read from stdin. A longer one is read past (the agent's pipe never
fills) and stored as a note of its size and sha256, with the short fields of its head (``DROPPED_KEY``).
Taking a payload in peaks at about 4.3 times its size (90 MB: 389 MB resident, 1.6 s), so this
bounds the hook near 300 MB; real payloads stay far below it (a Write of a 10 MB file is about
20 MB: the content, then the tool's echo of it)."""
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
    import hashlib  # here: only a payload over the bound needs it (OpenSSL's load is ~4 ms of every hook)

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


def _locate_hunks(payload: dict[str, Any]) -> None:
    """Number the hunks of an ``apply_patch`` (Codex) in the files it patched, now, while they are as the patch
    left them: the inbox folds the row later, when they may have changed (``ledger.capture.patchlines``)."""
    data = payload.get("tool_input")
    patch = data.get("command") or data.get("input") or data.get("patch") if isinstance(data, dict) else None
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    if not isinstance(patch, str):
        return
    from ledger.capture.patchlines import hunk_starts  # an apply_patch only: every other event stays lean

    try:
        found = hunk_starts(patch, cwd)
    except Exception:  # numbers are a help, never a reason to lose the row: the patch keeps its bare hunks
        return
    if found:
        payload[HUNKS_KEY] = found


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
                payload.pop(HUNKS_KEY, None)  # as above
                if payload.get("hook_event_name") == "PostToolUse" and payload.get("tool_name") == "apply_patch":
                    _locate_hunks(payload)
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
                from ledger.app.briefcache import cached_session_start  # SessionStart only: the rest stay lean
                from ledger.capture.agent_mcp import has_tasktrail_mcp

                answer = cached_session_start(payload, agent, row, has_tasktrail_mcp, BUILTIN)
                if answer is None:
                    # A background drain may be folding the previous session's rows in (``detach``): wait
                    # for it (bounded), after which the cache may answer; else fold them in here, holding
                    # the lock so the next background drain does not fold the same rows beside this one.
                    with detach.drain_lock(ledger_file(), detach.wait_s(ends - time.monotonic())) as lock:
                        if lock.waited:
                            answer = cached_session_start(payload, agent, row, has_tasktrail_mcp, BUILTIN)
                        if answer is None:
                            from ledger.capture.inbox import session_start_answer  # loads the ledger: a miss only

                            stall_point("hook-session-start")
                            answer = session_start_answer(payload, agent)
            if answer:
                sys.stdout.write(answer)
        elif detach.wanted(payload.get("hook_event_name")):
            try:
                detach.start()  # the next SessionStart then finds the rows folded in and the cache fresh
            except OSError as exc:  # the rows wait for the next read, as without it
                print(f"trail hook {agent}: background drain not started: {exc}", file=sys.stderr)
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
        message = redact_text(f"trail hook {agent}: {type(exc).__name__}: {exc}{where}", safe_patterns())
        print(message.replace("\n", " "), file=sys.stderr)
    return 0
