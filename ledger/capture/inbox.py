"""Folding the capture inbox (raw hook payloads) into validated task events.

Taken once by each command, as its first step (``cli.context.Context.catch_up``, when
``inbox_queue.waiting`` finds rows), and by the SessionStart hook. Rows are taken in
inbox-id order, which is commit order, so events land in the order the hooks ran. Each row's
events carry a source key (the tool call id, else ``hook:<inbox id>``), so two drains racing over
the same rows append them once (``writer.append_unseen``); rows are deleted only after their
events are saved. A session is bound to a task at its first event (``_bind``): the task its
conversation is linked to, else its project's active task while that takes work, else a new
task named after its first prompt; until then its rows wait in the inbox. Rows are grouped by
(agent, session) and each is read by its agent's mapping (``ledger.capture.agents``); the routing rules are the same
for every agent.

One row never holds up the rest: when a session's rows fail to fold (a value no event or store
takes: an exit code of 20 digits, a wrong type), they are folded one by one, and each row that still
fails moves to the dead letters (redacted, 0600) with a one-line notice (``Drained.poisoned``). A
failure of the store itself (locked, unavailable) is no row's fault: it propagates, the rows stay.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ledger.app import briefcache, refs, verify
from ledger.app.store import open_ledger
from ledger.app.verify import LedgerBroken
from ledger.base.caps import restore
from ledger.base.errors import StoreUnavailable
from ledger.base.hook_spool import DROPPED_KEY
from ledger.base.ledger_file import INBOX_DDL, legacy_inbox_for_url
from ledger.base.location import Location, inbox_path, resolve
from ledger.base.oneline import one_line
from ledger.base.project import project_of, within
from ledger.capture import agents
from ledger.capture.agent import Agent
from ledger.capture.classify import classify, request_text
from ledger.capture.inbox_queue import spool, take_spooled
from ledger.capture.items import PROMPT_KEY, Item, prompt_item, prompt_record, title_from, title_rank
from ledger.capture.jsonl import loads
from ledger.capture.writer import (
    Appended,
    ForgottenSession,
    append_unseen,
    open_with,
    session_records,
    task_for_session,
)
from ledger.domain import events as ev
from projections.brief import injection

if TYPE_CHECKING:
    from ledger.app.store import Ledger
    from projections.state import TaskState


@dataclass
class Drained:
    events: int = 0
    rows: int = 0
    waiting: int = 0
    """Rows left for a session that has no task yet."""
    dead: list[str] = field(default_factory=list)
    """Dead-letter files written for rows that were not JSON objects or could not be folded in."""
    rejected: list[str] = field(default_factory=list)
    """Events the catalogue refused (why, and the source), reported, not retried."""
    poisoned: list[str] = field(default_factory=list)
    """One line for each row that could not be folded in and went to the dead letters (row, why, where)."""
    tasks: set[UUID] = field(default_factory=set)


@dataclass
class _Row:
    id: int
    received: float
    payload: dict[str, Any]
    agent: str = "claude-code"


def _rows(conn: sqlite3.Connection, drained: Drained) -> list[_Row]:
    rows = []
    query = "SELECT id, received, payload, agent FROM capture_inbox ORDER BY id"
    for row_id, received, text, agent in conn.execute(query):
        try:
            payload = loads(text)
            if not isinstance(payload, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            drained.dead.append(str(spool(text, f"inbox row {row_id}: {exc}", agent)))
            conn.execute("DELETE FROM capture_inbox WHERE id = ?", (row_id,))
            continue
        rows.append(_Row(row_id, received, restore(payload), agent))  # cut strings carry their full size and hash
    conn.commit()
    return rows


OPEN = ("active", "paused", "blocked")
"""Statuses that take new work; a done or abandoned task never does."""


@dataclass
class _Binding:
    task: UUID | None = None
    """The task the session's rows go to (None: wait for its first prompt)."""
    opened: str | None = None
    """The title of a task to open for them, from the session's first prompt."""
    closed: UUID | None = None
    """A done or abandoned task the session (or its project) was on: the new task links to it."""
    reopen: bool = False
    """The task is paused or blocked: the session's work makes it active again."""
    state: TaskState | None = None
    """The view of ``task`` the binding was decided on, which its items are mapped against (read once)."""


def _bind(ledger: Ledger, location: Location, agent: Agent, session: str, rows: list[_Row]) -> _Binding:
    """Where a session's rows go, decided at its first event (see docs/capture.md, "Routing").

    The task the session is linked to; else the project's active task while it takes work
    (active, paused, blocked); else a new task from the session's first prompt. A session in a
    project with no task waits for that prompt and never lands in another project's task."""
    closed = None
    found = task_for_session(ledger, location, agent.name, session)
    if found is None:
        project = project_of(next((str(r.payload["cwd"]) for r in rows if r.payload.get("cwd")), None))
        found = refs.project_pointer(location, project) if project else None
        if found is None and project is not None:
            # An active.json from before per-project pointers: its one task counts only at its own home.
            legacy = refs.active_task_id(location, project)
            if legacy is not None and any(e.task_id == legacy for e in ledger.entries()):
                found = legacy if within(project, ledger.state(legacy).project) else None
        if found is not None and not any(e.task_id == found for e in ledger.entries()):
            found = None  # a pointer to a forgotten task
    if found is not None:
        state = ledger.state(found)  # the view, not the aggregate: the append that follows loads that
        if state.status in OPEN:
            return _Binding(task=found, reopen=state.status != "active", state=state)
        closed = found
    prompts = [p for p in (_request(agent, r.payload) for r in rows
                           if r.payload.get("hook_event_name") == "UserPromptSubmit") if p]
    # `/compact` or a command's output names no task; of the rest, the first that says what the task is ("hi"
    # does not), when these rows hold one.
    prompt = max(prompts, key=title_rank, default="")
    if not prompt:
        return _Binding(closed=closed)
    return _Binding(opened=title_from(prompt), closed=closed)


def _request(agent: Agent, payload: dict[str, Any]) -> str:
    """A prompt row's request as the agent's importer reads it, "" when it is none (``classify.request_text``)."""
    return request_text(agent.prompt(str(payload.get("prompt") or ""))) or ""


def _items(
    ledger: Ledger, location: Location, agent: Agent, binding: _Binding, session: str, rows: list[_Row]
) -> list[Item]:
    task = binding.task
    first_row = rows[0]
    items: list[Item] = [
        (
            ev.ConversationLinked,
            {
                "agent": agent.name,
                "session_id": session,
                "actor": "system",
                "transcript": first_row.payload.get("transcript_path"),
                "timestamp": datetime.fromtimestamp(first_row.received, UTC),
                "source": ev.SourceKey(agent=agent.name, session=session, record="link"),
            },
        )
    ]
    if task is not None:
        state = binding.state or ledger.state(task)
        first = not state.requirements and not state.corrections and not state.withdrawn
        seen = _prompts_seen(ledger, location, agent, task, state.position, session)
        intents = [(r.text, r.position, r.changed_at) for r in state.requirements]
        intents += [(c.text, c.position, None) for c in state.corrections]
        previous = next((text for text, *at in intents if state.last_intent in at), None)
    else:
        first, seen, previous = True, {}, None
    mapped = agent.hook_mapper(ledger, location, task, session)
    for row, payload in zip(rows, agent.enrich([r.payload for r in rows]), strict=True):
        ts = datetime.fromtimestamp(row.received, UTC)
        if isinstance(payload.get(DROPPED_KEY), dict):
            items.append(_dropped_item(agent, session, row, ts))
            continue
        if payload.get("hook_event_name") == "UserPromptSubmit":
            text = _request(agent, payload)
            if text:
                resent = text == previous  # the same request again (after an interrupt): the agent missed it
                record = prompt_record(text, seen)  # the key an import of the transcript gives it too
                src = ev.SourceKey(agent=agent.name, session=session, record=record)
                items.append(prompt_item(classify(text, first=first, resent=resent), text, src, ts))
                first, previous = False, text
            continue
        items.extend(mapped(payload, row.id, ts))
    return agent.normalised(items)


def _dropped_item(agent: Agent, session: str, row: _Row, ts: datetime) -> Item:
    """A note standing for a payload the hook did not read, too big (``hook.MAX_PAYLOAD``)."""
    dropped = row.payload[DROPPED_KEY]
    what = " ".join(str(row.payload[k]) for k in ("hook_event_name", "tool_name", "tool_use_id") if row.payload.get(k))
    text = (f"a {agent.name} hook payload ({what or 'unnamed'}) of {dropped.get('size')} bytes was over the "
            f"hook's bound of {dropped.get('limit')} and was not read (sha256 {dropped.get('sha256')})")
    src = ev.SourceKey(agent=agent.name, session=session, record=f"hook:{row.id}")
    return (ev.NoteAdded, {"text": text, "actor": "system", "source": src, "timestamp": ts})


def _prompts_seen(
    ledger: Ledger, location: Location, agent: Agent, task: UUID, upto: int, session: str
) -> dict[str, int]:
    """How many prompts of each text hash this session already has in the task."""
    seen: dict[str, int] = {}
    for record in session_records(ledger, location, task, upto, agent.name, session, PROMPT_KEY):
        digest, _, count = record.removeprefix(PROMPT_KEY).partition(":")
        if count.isdigit():
            seen[digest] = max(seen.get(digest, 0), int(count) + 1)
    return seen


def _land(
    ledger: Ledger, location: Location, agent: Agent, binding: _Binding, session: str, rows: list[_Row]
) -> tuple[UUID, Appended]:
    """Append a session's rows to its task, opening that task first when it is new (one transaction)."""
    items = _items(ledger, location, agent, binding, session, rows)
    stamp = datetime.fromtimestamp(rows[0].received, UTC)
    if binding.closed is not None:
        other = ledger.state(binding.closed)
        items.insert(1, (ev.TaskLinked, {"relation": "related", "other": binding.closed,
                                         "other_number": other.number, "actor": "system", "timestamp": stamp}))
    if binding.reopen:
        items.insert(1, (ev.StatusChanged, {"status": "active", "reason": f"session {session[:8]} took it up",
                                            "actor": "system", "timestamp": stamp}))
    if binding.task is not None:
        return binding.task, append_unseen(ledger, location, binding.task, items)
    cwd = next((str(r.payload["cwd"]) for r in rows if r.payload.get("cwd")), None)
    assert binding.opened is not None
    task, done = open_with(ledger, binding.opened, items, cwd=cwd, actor=agent.actor, timestamp=stamp)
    refs.set_active(location, task, ledger.state(task).project)
    return task, done


def _store_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is the store failing (locked, gone, unreadable), not a row it was given."""
    from eventsourcing.persistence import OperationalError

    return isinstance(exc, (StoreUnavailable, LedgerBroken, OperationalError, sqlite3.OperationalError))


def _fold(
    ledger: Ledger, location: Location, agent: Agent, session: str, rows: list[_Row], conn: sqlite3.Connection,
    drained: Drained,
) -> None:
    """Fold one session's rows (all, or those that can be while it waits for a task) and delete them."""
    binding = _bind(ledger, location, agent, session, rows)
    if binding.task is None and binding.opened is None:
        drained.waiting += len(rows)
        return
    try:
        task, done = _land(ledger, location, agent, binding, session, rows)
    except LedgerBroken as broken:  # kept queued: the task's other readers refuse it, the rest go on
        drained.waiting += len(rows)
        drained.rejected.append(f"{len(rows)} hook rows kept: {broken}")
        return
    except ForgottenSession as gone:
        drained.rejected.append(f"{len(rows)} hook rows of forgotten task #{gone.number}: dropped")
        with conn:
            conn.executemany("DELETE FROM capture_inbox WHERE id = ?", [(r.id,) for r in rows])
        return
    drained.rejected += [f"{fields.get('source')}: {why}" for (_, fields), why in done.rejected]
    with conn:
        conn.executemany("DELETE FROM capture_inbox WHERE id = ?", [(r.id,) for r in rows])
    drained.events += len(done.items)
    drained.rows += len(rows)
    drained.tasks.add(task)


def _fold_apart(
    ledger: Ledger, location: Location, agent: Agent, session: str, rows: list[_Row], conn: sqlite3.Connection,
    drained: Drained,
) -> None:
    """Fold a session's rows one at a time (bound again for each: an earlier one may open its
    task); a row that fails alone moves to the dead letters, redacted, and is deleted."""
    for row in rows:
        try:
            _fold(ledger, location, agent, session, [row], conn, drained)
        except Exception as exc:
            if _store_failure(exc):
                raise
            reason = f"inbox row {row.id} ({agent.name} {row.payload.get('hook_event_name') or '?'}) could not be " \
                     f"folded in: {type(exc).__name__}: {one_line(str(exc), 300)}"
            letter = spool(json.dumps(row.payload, ensure_ascii=False, default=str), reason, agent.name)
            with conn:
                conn.execute("DELETE FROM capture_inbox WHERE id = ?", (row.id,))
            drained.dead.append(letter)
            drained.poisoned.append(f"{reason}; moved to {letter}")


def drain(ledger: Ledger, location: Location) -> Drained:
    """Fold every inbox row whose session has a task into events; delete the rows folded."""
    drained = Drained()
    if not location.is_sqlite:
        legacy = Path(legacy_inbox_for_url(str(location.home), location.url))
        if legacy.exists() and legacy != inbox_path(location):
            _drain_file(ledger, location, legacy, drained)
            _remove_if_empty(legacy)
    path = inbox_path(location)
    take_spooled(str(path))  # payloads the hook had no time for: redacted into the inbox first
    if path.exists():
        _drain_file(ledger, location, path, drained)
    return drained


def _remove_if_empty(path: Path) -> None:
    """Remove an inbox file (and its WAL files) once it holds no row."""
    conn = sqlite3.connect(path, timeout=30)
    try:
        if conn.execute("SELECT count(*) FROM capture_inbox").fetchone()[0]:
            return
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _drain_file(ledger: Ledger, location: Location, path: Path, drained: Drained) -> None:
    conn = sqlite3.connect(path, timeout=30)
    try:
        conn.execute(INBOX_DDL)
        rows = _rows(conn, drained)
        sessions: dict[tuple[str, str], list[_Row]] = {}
        for row in rows:
            sessions.setdefault((row.agent, str(row.payload.get("session_id") or "unknown")), []).append(row)
        for (name, session), session_rows in sessions.items():
            try:
                agent = agents.load(name)
            except KeyError:  # a row from a newer trail's agent, or one uninstalled: kept for who knows it
                drained.waiting += len(session_rows)
                continue
            try:
                _fold(ledger, location, agent, session, session_rows, conn, drained)
            except Exception as exc:
                if _store_failure(exc):
                    raise
                _fold_apart(ledger, location, agent, session, session_rows, conn, drained)
    finally:
        conn.close()


def session_start_answer(payload: dict[str, Any], agent: str = "claude-code") -> str:
    """Drain at once and answer SessionStart with the task's brief as additional context ("" if none).

    What it answers is kept in the brief cache, from which the next SessionStart may answer alone."""
    location = resolve(os.environ.get("TRAIL_DB"))
    ledger = open_ledger(location)
    try:
        drain(ledger, location)
        cwd = str(payload.get("cwd") or os.getcwd())
        watch = briefcache.watch(location, "session", cwd=cwd, budgets=agents.budgets)
        task = task_for_session(ledger, location, agent, str(payload.get("session_id") or ""))
        if task is None:
            if watch is not None:
                watch.close()
            return ""
        try:
            state = verify.checked_state(ledger, task)  # what the agent is told must be what was recorded
        except verify.LedgerBroken as broken:
            if watch is not None:
                watch.close()
            return briefcache.session_start_json(f"tasktrail: not injecting the task's brief: {broken}")
        if watch is not None:
            watch.keep(task, state)
        if state.position <= 2:  # opened and linked only: no history worth injecting
            return ""
        # In the agent's own measure, and naming the tools that work in its sandbox (``agent_mcp``).
        who = agents.load(agent)
        mcp = who.has_mcp(str(payload["cwd"]) if payload.get("cwd") else None, os.environ)
        return briefcache.session_start_json(injection(state, budget=who.budget, mcp=mcp))
    finally:
        ledger.close()
