"""`trail hook NAME` (an agent of ``ledger.capture.agents``): the lean entry point the agents run on every hook event.

It must cost little and never break the agent. A tool event (any event but SessionStart, which must answer)
is kept as the agent sent it, unparsed and unredacted, in a private file (``ledger.base.hook_spool``:
0600 in a 0700 folder, written whole or not at all), and the hook exits 0: that costs what bare python's start
does, and a few system calls (``bench/RESULTS.md``). The next read (or the background drain a stopping
session's hook starts: Stop, SessionEnd, PreCompact, ``ledger.capture.detach``) redacts those files into the
capture inbox, in the order the hooks wrote them, and folds them into validated events before anything else
(``inbox_queue.take_spooled``, ``ledger.capture.inbox``).

The full path, for what the bytes do not plainly name (a SessionStart, an ``apply_patch`` whose hunks are
located now, a payload that does not parse), and for an inbox the hook has not yet queued into (its file
is checked first: another application's database or a folder is refused at once): parse, then spool the
parsed payload, or for a SessionStart redact it and append it to the ``capture_inbox`` table in one short
transaction, after any payloads spooled before it, and answer with the task's state, from the brief cache when
it holds the answer, else by loading the ledger. Only that path imports ``json``, ``sqlite3`` and the redaction.
On any error: one line on stderr, the payload kept (redacted) in ``TRAIL_HOME/deadletter/`` for
``trail doctor --retry``, and still exit 0 (non-blocking).

Bounded whatever the input: at most ``MAX_PAYLOAD`` bytes are read from stdin (a longer payload is
read past, hashed, and stored as a note of its size), and the work stops at ``deadline()`` seconds:
a payload not taken in by then is kept as it came, in the spool, which the next drain redacts and folds in.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time

from ledger.base import hook_spool, upkeep
from ledger.base.crashpoints import stall_point
from ledger.base.hook_spool import DROPPED_KEY, HUNKS_KEY
from ledger.base.ledger_file import ledger_file
from ledger.capture.agents import BUILTIN, known, names

TYPE_CHECKING = False  # typing's import is ~3 ms of a hook that costs ~5 ms over bare python
if TYPE_CHECKING:
    from types import TracebackType
    from typing import IO, Any

MAX_PAYLOAD = hook_spool.LIMIT
"""Bytes of a hook payload read from stdin. A longer one is read past (the agent's pipe never
fills) and stored as a note of its size and sha256, with the short fields of its head (``DROPPED_KEY``).
Taking a payload in peaks at about 4.3 times its size (90 MB: 389 MB resident, 1.6 s), so this
bounds the hook near 300 MB; real payloads stay far below it (a Write of a 10 MB file is about
20 MB: the content, then the tool's echo of it)."""
DEADLINE_S = 5.0
"""Seconds the hook works before it gives up on a payload and spools it (``TRAIL_HOOK_DEADLINE_S``
sets another): Codex stops a hook after 10 s (the timeout ``trail install codex`` writes), and the
interpreter's start and the spooling must fit in that too."""
_EVENT = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,64})"')
"""The event's name as the agents write it: read from the bytes, so a tool event is spooled unparsed."""
_HEAD_FIELDS = (
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


class _until:  # a context manager used as a function, as contextlib's would be (~1 ms to import)
    """Raise ``Deadline`` in the block once ``time.monotonic()`` passes ``at`` (a real timer: the
    regex engine and the reads check for signals as they go). Without SIGALRM (not Unix), or off the
    main thread, no bound."""

    def __init__(self, at: float) -> None:
        self.at = at
        self.previous: Any = None
        self.armed = False

    def __enter__(self) -> None:
        if not hasattr(signal, "setitimer"):
            return
        left = self.at - time.monotonic()
        if left <= 0:
            raise Deadline
        try:
            self.previous = signal.signal(signal.SIGALRM, _expire)
        except ValueError:  # not the main thread (the hook run in-process by a caller's thread): no timer
            return
        self.armed = True
        signal.setitimer(signal.ITIMER_REAL, left)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


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
    import json

    fields: dict[str, Any] = {}
    for match in re.finditer(_HEAD_FIELDS, head.decode("utf-8", "replace")):
        if match.group(1) not in fields:
            try:
                fields[match.group(1)] = json.loads(f'"{match.group(2)}"')
            except ValueError:
                continue
    fields[DROPPED_KEY] = dropped
    return fields


def _spoolable(body: bytes) -> str | None:
    """The event a payload names when its bytes say it plainly and the hook need not parse it: one name, never
    SessionStart (answered), no ``apply_patch`` (its hunks are located now). None: parse it."""
    found = set(_EVENT.findall(body))
    if len(found) != 1 or b"apply_patch" in body:
        return None
    event = found.pop().decode("ascii")
    return None if event == "SessionStart" else event


def _keep(call: _Call, kind: str, body: bytes) -> bool:
    """Spool ``body``; False when it cannot be (the folder unwritable, the disk full): then it is queued by the
    full path, as before there was a spool."""
    try:
        hook_spool.write(call.agent, call.inbox, os.getcwd(), kind, body)
    except OSError:
        return False
    return True


def _after(event: object, agent: str) -> None:
    """A stopping session's hook starts the background drain (``detach``)."""
    from ledger.capture import detach  # here: contextlib and the drain's lock serve only a stop's hook

    if detach.wanted(event):
        try:
            detach.start()  # the next SessionStart then finds the rows folded in and the cache fresh
        except OSError as exc:  # the rows wait for the next read, as without it
            print(f"trail hook {agent}: background drain not started: {exc}", file=sys.stderr)


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
    with upkeep.deferred():
        return _run(argv, stdin)


def _run(argv: list[str], stdin: IO[bytes] | None) -> int:
    ends = time.monotonic() + deadline()
    call = _Call(argv[0] if argv else "")
    try:
        if not known(call.agent):
            raise ValueError(f"unknown agent {call.agent!r}; expected one of {', '.join(names())}")
        call.inbox = os.path.abspath(ledger_file())
        with _until(ends):
            body, dropped = read_payload(stdin or sys.stdin.buffer)
            call.kept = body if dropped is None else b""  # over the bound: never kept whole, the note stands for it
            event = _spoolable(body) if dropped is None else None
            # Spooled only for an inbox the full path has checked (``hook_spool.trusted``): no other's database.
            call.queued = event is not None and hook_spool.trusted(call.inbox) and _keep(call, hook_spool.RAW, body)
        if call.queued:
            _after(event, call.agent)
        else:
            _full(call, ends, body, dropped)
    except Deadline:
        where = ""
        try:
            if call.kept and not call.queued:
                where = f"; payload kept in {call.spool_raw()} until the next read folds it in"
        except Exception as spool_exc:
            where = f"; could not keep the payload: {spool_exc}"
        print(f"trail hook {call.agent}: gave up after {deadline():g} s{where}", file=sys.stderr)
    except Exception as exc:  # a hook must never break the agent: report, keep the payload, exit 0
        _failed(call, exc, ends)
    return 0


class _Call:
    """One hook invocation: its agent, the inbox it queues into, the payload's bytes and whether they are kept."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.inbox = ""
        self.kept = b""
        """The payload as read (empty for one over the bound): what is kept when it cannot be queued."""
        self.queued = False

    def spool_raw(self) -> str:
        return hook_spool.write(self.agent, self.inbox, os.getcwd(), hook_spool.RAW, self.kept)


def _full(call: _Call, ends: float, body: bytes, dropped: dict[str, Any] | None) -> None:
    """The hook's full path: parse, then spool the parsed payload, or (a SessionStart, or no spool) redact, queue
    and answer. Raises as ``run`` handles."""
    import json  # here: a tool event the bytes name plainly is never parsed

    from ledger.capture.inbox_queue import Behind, insert, parse, prepare

    with _until(ends):
        if dropped is not None:
            payload = stand_in(body, dropped)
        else:
            payload = parse(body.decode("utf-8", "replace"))  # once: a payload can be tens of MB
            payload.pop(DROPPED_KEY, None)  # the hook's own key: one the agent sent says nothing
            payload.pop(HUNKS_KEY, None)  # as above
            if payload.get("hook_event_name") == "PostToolUse" and payload.get("tool_name") == "apply_patch":
                _locate_hunks(payload)
            stall_point("hook-parsed")
        event = payload.get("hook_event_name")
        # A tool event goes behind the files spooled before it, in the order the agent sent them.
        if event != "SessionStart" and hook_spool.trusted(call.inbox):
            call.queued = _keep(call, hook_spool.PARSED, json.dumps(payload, ensure_ascii=False).encode())
        text = "" if call.queued else prepare(payload)
    if call.queued:
        _after(event, call.agent)
        return
    # The insert is one short transaction, left to finish (a timer firing in it could leave the row stored and
    # the payload spooled too); the wait for a busy file is bounded instead, and so is taking the spooled
    # payloads in before it (half of what is left: a SessionStart still has its answer to find).
    left = max(0.1, ends - time.monotonic())
    try:
        row = insert(call.inbox, call.agent, text, busy_s=left, until=time.monotonic() + left / 2)
    except Behind:
        # Too many payloads spooled before it to take in now: it is spooled behind them (parsed, a stand-in kept).
        kept = hook_spool.write(call.agent, call.inbox, os.getcwd(), hook_spool.PARSED,
                                json.dumps(payload, ensure_ascii=False).encode())
        call.queued = True
        print(f"trail hook {call.agent}: payloads spooled before this one are still to be taken in; kept in "
              f"{kept} until the next read folds it in", file=sys.stderr)
        return
    call.queued = True
    if event == "SessionStart":
        with _until(ends):
            answer = _answer(payload, call.agent, row, ends)
        if answer:
            sys.stdout.write(answer)
    else:
        _after(event, call.agent)


def _answer(payload: dict[str, Any], agent: str, row: int, ends: float) -> str:
    """SessionStart's answer: from the brief cache when it provably holds it; else the ledger is loaded (only this
    event pays for the heavy imports), which refreshes the cache."""
    from ledger.app.briefcache import cached_session_start  # SessionStart only: the rest stay lean
    from ledger.capture import detach
    from ledger.capture.agent_mcp import has_tasktrail_mcp

    answer = cached_session_start(payload, agent, row, has_tasktrail_mcp, BUILTIN)
    if answer is None:
        # A background drain may be folding the previous session's rows in (``detach``): wait for it (bounded),
        # after which the cache may answer; else fold them in here, holding the lock so the next background
        # drain does not fold the same rows beside this one.
        with detach.drain_lock(ledger_file(), detach.wait_s(ends - time.monotonic())) as lock:
            if lock.waited:
                answer = cached_session_start(payload, agent, row, has_tasktrail_mcp, BUILTIN)
            if answer is None:
                from ledger.capture.inbox import session_start_answer  # loads the ledger: a miss only

                stall_point("hook-session-start")
                answer = session_start_answer(payload, agent)
    return answer


def _failed(call: _Call, exc: Exception, ends: float) -> None:
    """One line on stderr; a payload the inbox never took is kept, redacted, in the dead letters."""
    from ledger.capture.inbox_queue import ForeignFile, spool
    from ledger.domain.redact import redact_text, safe_patterns

    where = ""
    try:
        # Once queued the payload is safe in the inbox; only a payload the inbox never took is
        # spooled; nothing goes into another application's database, nor beside it.
        if call.kept and not call.queued and not isinstance(exc, ForeignFile):
            try:
                with _until(ends):  # redacting a torn 30 MB payload takes time too
                    where = f"; payload kept in {spool(call.kept.decode('utf-8', 'replace'), str(exc), call.agent)}"
            except Deadline:
                where = f"; payload kept in {call.spool_raw()} until the next read folds it in"
    except Exception as spool_exc:
        where = f"; could not keep the payload: {spool_exc}"
    message = redact_text(f"trail hook {call.agent}: {type(exc).__name__}: {exc}{where}", safe_patterns())
    print(message.replace("\n", " "), file=sys.stderr)
