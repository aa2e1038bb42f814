"""The brief cache: `trail resume` and a SessionStart hook answer from it, without loading the ledger, while
nothing they depend on has changed since the last full answer.

Standard library only at import (``tests/test_startup.py`` keeps pydantic, eventsourcing, duckdb and
psycopg out of the fast paths): a fast answer costs sqlite3 and a few small reads. The full paths
(``cli.read.resume``, ``capture.inbox.session_start_answer``) store what they answered (``Watch.keep``);
a fast path answers only when it can show the full path would answer the same bytes now:

- the ledger is an SQLite file whose capture inbox holds no row that folding in would append from
  (``_harmless``: only SessionStarts of sessions linked already to an active task), besides, for
  SessionStart, its own row, and no payload the hook spooled unread waits for it (``_unspooled``);
- which task is meant is memoised from the full path's resolution, keyed by the bytes of
  ``active.json``, the project and what was asked, and valid only while the task registry's last row
  (hence every task's number, slug and being there at all) is the one it was resolved against;
- the task's key is unchanged: a sha256 of the format, this code's sources (sizes and mtimes), the
  ledger's real path, the task's last stored row (its version and whole state, chain hash included),
  how many rows it has from which position, its latest snapshot row, its archive index rows and their
  files' inode, size, mtime and ctime, the registry's last row, and the head anchor's row, which must
  also agree with the last row;
- the edit journal (``schema.EDITS``) holds no row of the task and its triggers are the ones tasktrail
  installed (``_guarded``), as the full path checks: it covers the rows below the newest view snapshot,
  which neither path reads. Anything that differs, is missing or fails to read takes the full
  path, which refuses or answers (``ledger.app.reading``'s checks), and refreshes the cache.

The file is one JSON document per ledger under ``TRAIL_HOME/cache`` (mode 0600), sealed with an HMAC-SHA256
of its body and the ledger path under a per-ledger secret key in ``TRAIL_HOME/keys`` (``_key``): a corrupt,
foreign or edited file is never shown, nor one forged by whoever can write the cache folder but not read
the key (an unkeyed hash could be recomputed by anyone). The brief holds nothing
time-relative (times are absolute, to the minute); SessionStart's one moving part, the position and
time of the ``ConversationLinked`` event a new session adds, is filled in at print time (``_new_session``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import stat
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any

from ledger.base.home import home_dir
from ledger.base.ledger_file import read_only_uri, sqlite_ledger
from ledger.base.project import current_project, project_of
from ledger.base.schema import (
    ARCHIVES,
    EDITS,
    FORGOTTEN_KEYS,
    HEADS,
    LINKED_SESSION_SQL,
    REGISTRY_HEX,
    REWRITING,
    SQLITE_GUARDS,
    VIEWS,
    key_hash,
)

if TYPE_CHECKING:
    from uuid import UUID

    from ledger.base.location import Location
    from projections.brief import Budget
    from projections.state import TaskState

FORMAT = 3
"""Bumped when what the file holds changes meaning (2: a SessionStart answer per agent and instructions;
3: the seal is keyed)."""
KEEP_TASKS = 16
INBOX_ROWS = 20
"""More rows waiting than this: the full path folds them in rather than the cache vet each."""
KEEP_MEMOS = 64
SKIP_ENV = ("TRAIL_SNAPSHOT_EVERY", "TRAIL_CRASH_AT", "TRAIL_CIPHER_KEY", "TRAIL_CIPHER_KEY_FILE")
"""Set, the full path runs: it checks the setting, or a test aims at its crash points. With a cipher key
(``ledger.base.atrest``) no brief is kept at all: the cache's briefs are plaintext, and the key is checked
against the ledger on each read."""
SOURCES = ("ledger", "projections", "cli")
SOURCES_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The checkout ``SOURCES`` are in (this file is ``ledger/app/briefcache.py``)."""


HasMcp = Callable[[str, str | None], bool]
"""Whether an agent running in a folder has tasktrail's MCP server."""
Agents = Collection[str]
"""The agents whose SessionStart rows the cache may vet and answer for: the shipped ones
(``ledger.capture.agents.BUILTIN``: capture's knowledge, passed in by the caller)."""
Budgets = Callable[[], Mapping[str, "Budget"]]
"""Each agent the cache keeps answers for, with its injection budget (``ledger.capture.agents.budgets``):
called only when an answer is kept, as loading the agents' packages costs the lean paths."""


class Miss(Exception):
    """The cache cannot answer: take the full path."""


def cached_resume(ref: str | None, db: str | None, agents: Agents) -> str | None:
    """What `trail [--db DB] resume [REF]` prints (no other option), or None when the full path must run."""
    try:
        with _opened(db) as (ledger, cache, con):
            for _, agent, _, text in inbox(con, INBOX_ROWS):
                _harmless(cache, con, ledger, agent, json.loads(text), agents)
            task = _memo(cache, con, ("resume", ref or "", current_project() or "", _pointers()))
            text = str(_entry(cache, con, ledger, task)["resume"])
    except (Miss, OSError, sqlite3.Error, ValueError, KeyError, TypeError, AttributeError):
        return None
    # click.echo strips ANSI sequences when stdout is no terminal: such a brief takes the full path.
    return None if "\x1b" in text else text + "\n"


def cached_session_start(payload: dict[str, Any], agent: str, row: int, has_mcp: HasMcp, agents: Agents) -> str | None:
    """The SessionStart answer for ``payload``, just queued as inbox row ``row``, or None (full path).

    Taken only when every other inbox row is harmless (``_harmless``) and the full path's drain would
    append at most the session's ``ConversationLinked``: the session is linked already to an active
    task (nothing is appended), or it is new and its project's active task takes it (one event, which
    the brief shows only as its last position and time). ``has_mcp`` tells whether the agent has
    tasktrail's MCP server in a folder (``capture.agent_mcp.has_tasktrail_mcp``: capture's knowledge, passed in)."""
    try:
        with _opened() as (ledger, cache, con):
            ours = None
            for found, queued_by, received, text in inbox(con, INBOX_ROWS):
                if found == row and queued_by == agent:
                    ours = float(received), json.loads(text)
                else:
                    _harmless(cache, con, ledger, queued_by, json.loads(text), agents)
            if ours is None:
                # Folded in already, by a drain that ran meanwhile (a background one: ``capture.detach``):
                # the session is linked then, and the full path would answer with its task's brief.
                session = _session(payload)
                linked = _linked(con, agent, session)
                if linked is None:
                    raise Miss("the row was folded in and the session is not linked")
                return str(_active(cache, con, ledger, linked)["linked"][_flavour(agent, payload, has_mcp)])
            received, queued = ours
            session = _session(queued)
            # Redaction left the id alone (else the full path finds no link for the id it was given).
            if session != payload.get("session_id"):
                raise Miss("no plain session id")
            flavour = _flavour(agent, queued, has_mcp)
            linked = _linked(con, agent, session)
            if linked is not None:
                return str(_active(cache, con, ledger, linked)["linked"][flavour])
            return _new_session(cache, con, ledger, queued, agent, session, received, flavour)
    except (Miss, OSError, sqlite3.Error, ValueError, KeyError, TypeError, AttributeError):
        return None


def _harmless(
    cache: dict[str, Any], con: sqlite3.Connection, ledger: str, agent: str, queued: Any, agents: Agents,
) -> None:
    """Miss unless folding this inbox row in appends nothing: a SessionStart of a session linked already
    to a task that is active (its link is seen, SessionStart maps to no event, nothing is reopened)."""
    if agent not in agents or not isinstance(queued, dict) or queued.get("hook_event_name") != "SessionStart":
        raise Miss("the capture inbox has rows to fold in first")
    linked = _linked(con, agent, _session(queued))
    if linked is None:
        raise Miss("a new session would be linked")
    _active(cache, con, ledger, linked)


def _unspooled(ledger: str) -> None:
    """Miss while a payload the hook spooled unread may be meant for this ledger (``capture.hook_spool``): a tool
    event, that would append, not yet redacted into the inbox where ``_harmless`` could vet it."""
    from ledger.base.hook_spool import pending

    if pending(ledger):
        raise Miss("payloads spooled by the hook are still to be folded in")


def _session(queued: dict[str, Any]) -> str:
    session = queued.get("session_id")
    if not isinstance(session, str) or not session:
        raise Miss("no session id")
    return session


def _linked(con: sqlite3.Connection, agent: str, session: str) -> str | None:
    """The task the session was last linked to (``writer.task_for_session``)."""
    found = con.execute(LINKED_SESSION_SQL, (agent, session)).fetchone()
    return str(found[0]) if found is not None else None


def _flavours(agents: Agents) -> list[tuple[str, bool]]:
    """The SessionStart answers kept per task: each agent's budget, with CLI or MCP instructions."""
    return [(agent, mcp) for agent in agents for mcp in (False, True)]


def _flavour(agent: str, queued: dict[str, Any], has_mcp: HasMcp) -> str:
    """Which kept answer fits this session: its agent, and whether that agent has tasktrail's MCP server."""
    cwd = queued.get("cwd")
    return _flavour_key(agent, has_mcp(agent, cwd if isinstance(cwd, str) else None))


def _flavour_key(agent: str, mcp: bool) -> str:
    return f"{agent}:{'mcp' if mcp else 'cli'}"


def _active(cache: dict[str, Any], con: sqlite3.Connection, ledger: str, task: str) -> dict[str, Any]:
    entry = _entry(cache, con, ledger, task)
    if entry["status"] != "active":
        raise Miss("the task would be reopened")
    return entry


def _new_session(
    cache: dict[str, Any], con: sqlite3.Connection, ledger: str, queued: dict[str, Any], agent: str, session: str,
    received: float, flavour: str,
) -> str:
    from datetime import UTC, datetime

    if con.execute(_table_exists, (FORGOTTEN_KEYS,)).fetchone() and con.execute(
        f"SELECT 1 FROM {FORGOTTEN_KEYS} WHERE key_sha256 = ?", (key_hash((agent, session, "link")),)
    ).fetchone():
        raise Miss("the link belongs to a forgotten task")
    transcript = queued.get("transcript_path")
    if transcript is not None and not isinstance(transcript, str):
        raise Miss("the link event would be refused")
    project = project_of(str(queued["cwd"])) if queued.get("cwd") else None
    if project is None:
        raise Miss("no project")
    task = _memo(cache, con, ("session", "", project, _pointers()))
    entry = _entry(cache, con, ledger, task)
    new = (entry["new"] or {}).get(flavour)
    if entry["status"] != "active" or not new:
        raise Miss("the task would be reopened, or its brief cannot take the new event")
    # The fold keeps the latest time seen; the brief shows it to the minute.
    when = max(datetime.fromisoformat(entry["updated_at"]), datetime.fromtimestamp(received, UTC))
    line = f"- last event [{new['position']}] at {when:%Y-%m-%d %H:%M UTC}"
    context = str(new["context"])
    if context.count(new["line"]) != 1 or len(line) != len(new["line"]):
        raise Miss("the template does not hold its line once")
    return session_start_json(context.replace(new["line"], line))


def session_start_json(context: str) -> str:
    """The hook's answer to SessionStart: ``context`` injected as additional context."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})


# -- keeping what the full path answered ---------------------------------------------------------------


class Watch:
    """Brackets a full path's reads: what it answers is kept only if nothing was committed to the ledger
    (``PRAGMA data_version``) and ``active.json`` did not change meanwhile, so key and answer agree."""

    def __init__(self, ledger: str, con: sqlite3.Connection, memo: tuple[str, str, str], budgets: Budgets) -> None:
        self.ledger, self.con, self.memo, self.budgets = ledger, con, memo, budgets
        self.version = con.execute("PRAGMA data_version").fetchone()[0]
        self.pointers = _pointers()

    def keep(self, task_id: UUID, state: TaskState, brief: str | None = None) -> None:
        """Store ``state``'s answers for ``task_id``; ``brief``: the brief as ``render(state)`` gave it, when the
        caller rendered it already (`trail resume` printed it), kept as it is rather than rendered again.

        Never fails the command: a cache that cannot be written is a cache miss next time."""
        try:
            self._keep(task_id.hex, state, brief)
        except (Miss, OSError, sqlite3.Error, ValueError, KeyError, TypeError):
            pass
        finally:
            self.close()

    def close(self) -> None:
        self.con.close()

    def _keep(self, task: str, state: TaskState, brief: str | None) -> None:
        from projections.brief import injection, render

        if state.updated_at is None:
            return
        kind, ref, project = self.memo
        memo_task = _session_pointer(self.ledger, project) if kind == "session" else task
        con = self.con
        con.execute("BEGIN")
        key, registry, last = task_key(con, self.ledger, task)
        con.execute("COMMIT")
        # Checked after every read: unchanged, nobody wrote between the full path's reads and the key's.
        if con.execute("PRAGMA data_version").fetchone()[0] != self.version or _pointers() != self.pointers:
            return
        if last != state.position:
            return
        budgets = self.budgets()
        flavours = _flavours(budgets)
        entry: dict[str, Any] = {
            "key": key, "status": state.status, "updated_at": state.updated_at.isoformat(),
            "resume": render(state) if brief is None else brief,
            "linked": {_flavour_key(agent, mcp): "" if state.position <= 2 else
                       session_start_json(injection(state, budget=budgets[agent], mcp=mcp)) for agent, mcp in flavours},
            "new": {_flavour_key(agent, mcp): _template(state, partial(injection, budget=budgets[agent], mcp=mcp))
                    for agent, mcp in flavours} if state.status == "active" else None,
        }
        cache = _load(self.ledger) or {"tasks": {}, "memo": {}}
        tasks = {k: v for k, v in cache["tasks"].items() if k != task}
        tasks[task] = entry
        memos = {k: v for k, v in cache["memo"].items() if v.get("registry") == registry}
        if memo_task:
            memos[_memo_id((kind, ref, project, self.pointers))] = {"task": memo_task, "registry": registry}
        _store(self.ledger, {"tasks": dict(list(tasks.items())[-KEEP_TASKS:]),
                             "memo": dict(list(memos.items())[-KEEP_MEMOS:])})


def watch(
    location: Location, kind: str, ref: str | None = None, cwd: str | None = None, *, budgets: Budgets,
) -> Watch | None:
    """Start watching a full path's reads (after the ledger is open and its inbox folded), or None when
    its answer is not cacheable (a PostgreSQL ledger, a setting the full path must check).

    ``kind`` is "resume" (``ref`` as given) or "session" (``cwd``: the session's folder); ``budgets``:
    the agents to keep a SessionStart answer for, read when one is kept."""
    if not location.is_sqlite or any(os.environ.get(name) for name in SKIP_ENV):
        return None
    ledger = os.path.realpath(location.sqlite_path)
    project = current_project() if kind == "resume" else project_of(cwd)
    if project is None:
        return None
    try:
        return Watch(ledger, _connect(ledger), (kind, ref or "", project), budgets)
    except (OSError, sqlite3.Error):
        return None


def _template(state: TaskState, injection: Any) -> dict[str, Any] | None:
    """The SessionStart answer once a new session's ``ConversationLinked`` lands: the injection of the state
    one position on, in which only the last-event line's time can still differ (the fold's ``max`` of the
    old time and the event's). That line keeps its length, so the budget drops the same lines."""
    if state.updated_at is None:
        return None
    position = state.position + 1
    moved = state.model_copy(update={"position": position})
    line = f"- last event [{position}] at {state.updated_at:%Y-%m-%d %H:%M UTC}"
    context = injection(moved)
    if context.count(line) != 1 or position <= 2:
        return None
    return {"position": position, "line": line, "context": context}


def _session_pointer(ledger: str, project: str) -> str | None:
    """The task ``project``'s pointer names, as the inbox binds a new session (``refs.project_pointer``)."""
    from ledger.app import refs
    from ledger.base.location import resolve

    found = refs.project_pointer(resolve(f"sqlite:{ledger}"), project)
    return found.hex if found is not None else None


# -- reading -----------------------------------------------------------------------------------------


_table_exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"


@contextmanager
def _opened(db: str | None = None) -> Iterator[tuple[str, dict[str, Any], sqlite3.Connection]]:
    """The ledger's real path (named by ``db`` as `--db` takes it, else as the environment says), its cache,
    and a read-only connection in one read transaction."""
    ledger = fast_ledger(db)
    cache = _load(ledger)
    if cache is None:
        raise Miss("no cache")
    with reading(ledger) as con:
        yield ledger, cache, con


def fast_ledger(db: str | None = None) -> str:
    """The real path of the SQLite ledger ``db`` names (as `--db` takes it, else as the environment says), or
    Miss: not an SQLite ledger, a setting the full path checks is set, or payloads the hook spooled wait for
    it. For every fast path."""
    if any(os.environ.get(name) for name in SKIP_ENV):
        raise Miss("a setting the full path checks")
    path = sqlite_ledger(db)
    if path is None:
        raise Miss("not an SQLite ledger")
    ledger = os.path.realpath(path)
    _unspooled(ledger)  # the full path would fold the hook's spooled payloads in first
    return ledger


@contextmanager
def reading(ledger: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the ledger at real path ``ledger``, in one read transaction: every check
    made through it sees the same ledger."""
    con = _connect(ledger)
    try:
        con.execute("BEGIN")
        yield con
    finally:
        con.close()


def inbox(con: sqlite3.Connection, limit: int) -> list[Any]:
    """The capture inbox's rows, fewer than ``limit`` (none when the hook never made the table)."""
    if not con.execute(_table_exists, ("capture_inbox",)).fetchone():
        return []
    query = "SELECT id, agent, received, payload FROM capture_inbox ORDER BY id LIMIT ?"
    rows = con.execute(query, (limit,)).fetchall()
    if len(rows) >= limit:
        raise Miss("too many rows waiting")
    return rows


def _connect(ledger: str) -> sqlite3.Connection:
    if not os.path.isfile(ledger):
        raise Miss("no ledger file")
    return sqlite3.connect(read_only_uri(ledger), uri=True, isolation_level=None, timeout=5)


def _memo(cache: dict[str, Any], con: sqlite3.Connection, asked: tuple[str, str, str, str]) -> str:
    memo = cache["memo"][_memo_id(asked)]
    registry = con.execute(_LAST_ROW, (REGISTRY_HEX,)).fetchone()
    if registry is None or _digest(registry) != memo["registry"]:
        raise Miss("the registry changed")
    return str(memo["task"])


def _entry(cache: dict[str, Any], con: sqlite3.Connection, ledger: str, task: str) -> dict[str, Any]:
    entry: dict[str, Any] = cache["tasks"][task]
    key, _, _ = task_key(con, ledger, task)
    if entry["key"] != key:
        raise Miss("the task changed")
    return entry


_LAST_ROW = ("SELECT originator_version, topic, state FROM stored_events WHERE originator_id = ? "
             "ORDER BY originator_version DESC LIMIT 1")


def task_keys(ledger: str, tasks: Iterable[str]) -> dict[str, str]:
    """The keys of ``tasks`` (id hex) in the SQLite ledger at real path ``ledger`` now, one read; none for a task
    whose key cannot be told. Read before a read's checks of a task and found the same after, a key says the
    checks need not be made again while it stays (``findindex.fill``, ``trail serve``'s poll)."""
    if any(os.environ.get(name) for name in SKIP_ENV):  # as every fast path: a cipher key's rows hold no key to read
        return {}
    found: dict[str, str] = {}
    try:
        with reading(ledger) as con:
            for task in tasks:
                with suppress(Miss):
                    found[task] = task_key(con, ledger, task)[0]
    except (Miss, OSError, sqlite3.Error, ValueError, KeyError, TypeError):  # no key known: every check is made
        return {}
    return found


def task_key(con: sqlite3.Connection, ledger: str, task: str) -> tuple[str, str, int]:
    """The task's key, the registry's last-row digest, and the task's last position (Miss when it cannot be
    told: a task gone, a head anchor that disagrees, an edit journal that records a change of it)."""
    last = con.execute(_LAST_ROW, (task,)).fetchone()
    registry = con.execute(_LAST_ROW, (REGISTRY_HEX,)).fetchone()
    if last is None or registry is None:
        raise Miss("no such task")
    snapshot = con.execute(
        "SELECT originator_version, state FROM stored_snapshots WHERE originator_id = ? "
        "ORDER BY originator_version DESC LIMIT 1", (task,)
    ).fetchone()
    archives: list[Any] = []
    if con.execute(_table_exists, (ARCHIVES,)).fetchone():
        for first, upto, path, sha, tip, count in con.execute(
            f"SELECT first, last, path, sha256, head, events FROM {ARCHIVES} WHERE originator_id IN (?, ?) "
            "ORDER BY first", (task, _dashed(task))
        ):
            # The full path hashes the file; its change time moves with any write to it, even a hidden one.
            found = os.stat(os.path.join(os.path.dirname(ledger), path))
            archives.append((first, upto, path, sha, tip, count, found.st_ino, found.st_size, found.st_mtime_ns,
                             found.st_ctime_ns))
    head: Any = None
    if con.execute(_table_exists, (HEADS,)).fetchone():
        head = con.execute(f"SELECT * FROM {HEADS} WHERE originator_id IN (?, ?)", (task, _dashed(task))).fetchone()
        chain = json.loads(last[2]).get("chain")
        if head is None or list(head[1:3]) != [last[0], chain]:
            raise Miss("the head anchor disagrees with the last row")  # the full path says what is wrong
    # A row cut from the middle leaves the positions with a gap, which the full path refuses where it reads:
    # in the rows after the newest view snapshot, whose positions ``_folded_rows`` digests. The first row
    # bounds them from below; a count over every row was most of a long task's resume (1.5 s at 1M events).
    span = con.execute("SELECT min(originator_version) FROM stored_events WHERE originator_id = ?",
                       (task,)).fetchone()
    _guarded(con, task)
    parts = (FORMAT, _code(), ledger, task, _digest(last), _digest(registry), tuple(span),
             _digest(snapshot) if snapshot else None, archives, list(head) if head else None,
             _folded_rows(con, task))
    return hashlib.sha256(repr(parts).encode()).hexdigest(), _digest(registry), int(last[0])


def _guarded(con: sqlite3.Connection, task: str) -> None:
    """Miss unless the edit journal records no change of the task's rows and its triggers are in place
    (``SQLiteStore.changed_outside``, which the full path asks): an edit anywhere in the task, below the
    newest view snapshot too, takes the full path, which refuses it. Two indexed look-ups, whatever the size."""
    if not con.execute(_table_exists, (EDITS,)).fetchone():
        return  # a ledger from before the journal: the full path checks no more than this
    found = dict(con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = "
                             "'stored_events'").fetchall())
    if any(found.get(name) != text for name, text in SQLITE_GUARDS.items()):
        raise Miss("the edit journal's triggers are not in place")
    if con.execute(f"SELECT 1 FROM {REWRITING}").fetchone() or con.execute(
            f"SELECT 1 FROM {EDITS} WHERE originator_id = ? LIMIT 1", (task,)).fetchone():
        raise Miss("the edit journal records a change of the task")


def _folded_rows(con: sqlite3.Connection, task: str) -> str:
    """A digest of the rows the full path folds and re-hashes (those after the newest view snapshot of the
    newest fold, ``verify.rows_problem``): an edit in place of any of them changes the key, and the full
    path refuses it; with the row before them, which the full path links the first from. Bounded by the view
    snapshots' interval, so a long task costs no more than a short one."""
    since = 0
    if con.execute(_table_exists, (VIEWS,)).fetchone():
        # Each id spelling's newest row in the key's order (fold version, position): an index look-up each,
        # where a max() over ``IN (?, ?)`` read every view snapshot of the task (8 ms at 1M events).
        tops = [row for name in (task, _dashed(task)) if (row := con.execute(
            f"SELECT fold_version, position FROM {VIEWS} WHERE originator_id = ? "
            "ORDER BY fold_version DESC, position DESC LIMIT 1", (name,)).fetchone())]
        since = max(tops)[1] if tops else 0
    blob = hashlib.sha256()
    for position, state in con.execute("SELECT originator_version, state FROM stored_events WHERE originator_id = ?"
                                       " AND originator_version >= ? ORDER BY originator_version", (task, since)):
        blob.update(b"%d\x1f" % position)
        blob.update(state if isinstance(state, bytes) else str(state).encode())
    return blob.hexdigest()


def _dashed(task: str) -> str:
    """``str(UUID(task))`` for a task id as the store keeps it (32 hex digits), without importing uuid: it
    loads ``platform``, ~10 ms of a SessionStart answered here."""
    if len(task) != 32 or task.strip("0123456789abcdef"):
        raise Miss("not a task id")
    return f"{task[:8]}-{task[8:12]}-{task[12:16]}-{task[16:20]}-{task[20:]}"


def _digest(row: tuple[Any, ...]) -> str:
    blob = hashlib.sha256()
    for value in row:
        blob.update(value if isinstance(value, bytes) else repr(value).encode())
        blob.update(b"\x1f")
    return blob.hexdigest()


_code_print: str | None = None


def _code() -> str:
    """Sizes and mtimes of this checkout's sources: an upgrade (or an edit) never shows an older format."""
    global _code_print
    if _code_print is None:
        root = SOURCES_ROOT
        seen = [sys.version]
        for top in SOURCES:
            for folder, dirs, files in os.walk(os.path.join(root, top)):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        found = os.stat(os.path.join(folder, name))
                        seen.append(f"{folder}/{name}:{found.st_size}:{found.st_mtime_ns}")
        _code_print = hashlib.sha256("\n".join(seen).encode()).hexdigest()
    return _code_print


def _pointers() -> str:
    """A digest of ``active.json`` as it is now (the active tasks the full path resolved against)."""
    try:
        with open(os.path.join(home_dir(), "active.json"), "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except FileNotFoundError:
        return "none"


def _memo_id(asked: tuple[str, str, str, str]) -> str:
    return hashlib.sha256("\x1f".join(asked).encode("utf-8", "surrogatepass")).hexdigest()


# -- the file --------------------------------------------------------------------------------------------


def cache_file(ledger: str) -> str:
    """The cache of the ledger at real path ``ledger``."""
    name = hashlib.sha256(ledger.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(home_dir(), "cache", f"briefs-{name}.json")


def key_file(ledger: str) -> str:
    """The secret key the cache of the ledger at real path ``ledger`` is sealed with: outside the cache folder,
    so a writer of that folder alone learns nothing it could seal a forgery with."""
    return os.path.join(home_dir(), "keys", os.path.basename(cache_file(ledger))[:-len(".json")] + ".key")


KEY_BYTES = 32
_keys: dict[str, bytes] = {}
"""Keys read in this process, by key file: read once."""


class KeyRefused(Miss):
    """The key file is there but not to be trusted: not a 0600 regular file of ours in a folder only we can write."""


def _read_key(ledger: str) -> bytes:
    """The ledger's key as stored, or Miss: missing or malformed (the full path writes a new one) or refused."""
    path = key_file(ledger)
    folder = os.stat(os.path.dirname(path))
    if folder.st_uid != os.geteuid() or folder.st_mode & 0o077:
        raise KeyRefused(f"{os.path.dirname(path)} is not a folder only its owner can open (mode 0700)")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o777 != 0o600:
            raise KeyRefused(f"{path} is not a regular file of this user with mode 0600")
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise Miss("a malformed key")
    return key


def _key(ledger: str) -> bytes:
    """The key for reading: any failure is a miss (a symlink, a wrong owner or mode included)."""
    path = key_file(ledger)
    if path not in _keys:
        _keys[path] = _read_key(ledger)
    return _keys[path]


def _writing_key(ledger: str) -> bytes:
    """The key for writing: the one there, else a new one (first use, or one that was malformed or missing,
    which makes every entry sealed with the old key a miss). A refused key is never replaced: Miss.

    Read afresh, not from this process's memory: a long-lived process never seals with a key since replaced."""
    _keys.pop(key_file(ledger), None)
    try:
        return _key(ledger)
    except KeyRefused:
        raise
    except FileNotFoundError:
        replace = False  # the first key: linked in only if no other process's got there first
    except (Miss, OSError):
        replace = True  # malformed, or a symlink (never followed): the link itself is replaced
    path = key_file(ledger)
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    # Written whole under a private name (O_EXCL), then linked in: a reader never sees half a key, and of two
    # writers racing for the first key one wins and both use it; a malformed key is replaced (os.replace).
    key = os.urandom(KEY_BYTES)
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(temporary, path)
        else:
            with suppress(FileExistsError):  # another process made the first key meanwhile: use that one
                os.link(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)
    _keys.pop(path, None)
    return _key(ledger)


def key_problem(ledger: str) -> str | None:
    """Why the brief cache of the ledger at real path ``ledger`` refuses its key (for `trail doctor`), or None."""
    try:
        _read_key(ledger)
    except KeyRefused as exc:
        return str(exc)
    except (Miss, OSError):
        return None  # missing or malformed: the next full answer writes a new key
    return None


def _seal(ledger: str, body: dict[str, Any], key: bytes) -> str:
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    message = f"{FORMAT}\x1f{ledger}\x1f{text}".encode("utf-8", "surrogatepass")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _load(ledger: str) -> dict[str, Any] | None:
    """The cache body for ``ledger``, or None when there is none or it is not exactly what was stored."""
    try:
        with open(cache_file(ledger), encoding="utf-8") as handle:
            found = json.load(handle)
        body = found["body"]
        if found["format"] != FORMAT or found["ledger"] != ledger or not isinstance(found["seal"], str):
            return None
        if not hmac.compare_digest(found["seal"], _seal(ledger, body, _key(ledger))):
            return None
        if not isinstance(body.get("tasks"), dict) or not isinstance(body.get("memo"), dict):
            return None
        return dict(body)
    except (Miss, OSError, ValueError, KeyError, TypeError):
        return None


def _store(ledger: str, body: dict[str, Any]) -> None:
    """Write the cache whole (a temporary file renamed over it), readable by its owner only."""
    path = cache_file(ledger)
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}")
    document = {"format": FORMAT, "ledger": ledger, "seal": _seal(ledger, body, _writing_key(ledger)), "body": body}
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, ensure_ascii=False)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
