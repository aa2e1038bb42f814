"""Appending captured items exactly once: the source-key index and the write that honours it.

Idempotency rests on one fact: a task's stored events already carry their ``source`` keys. The
index is therefore a query, not a second table to keep in step: on SQLite, ``json_extract`` over
the task's stored events (no pydantic decoding, see docs/capture.md for the numbers); elsewhere,
a scan of the task's events. ``append_unseen`` reads the task, filters the items against the
keys stored up to the version it read, and saves; when a concurrent writer got there first the
save conflicts, and the retry re-reads both, so two importers (or two inbox drains) never append
one source twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import ValidationError

from ledger import events as ev
from ledger.capture.claude_code import END
from ledger.capture.items import LATEST_REQUIREMENT, Item
from ledger.errors import RuleBroken
from ledger.location import Location
from ledger.redact import redact_fields

if TYPE_CHECKING:
    from ledger.store import Ledger
    from ledger.task import Task

Key = tuple[str, str, str]


def key_of(source: ev.SourceKey | None) -> Key | None:
    return (source.agent, source.session, source.record) if source is not None else None


def _connect(location: Location) -> sqlite3.Connection | None:
    if not location.is_sqlite or not location.sqlite_path.exists():
        return None
    return sqlite3.connect(location.sqlite_path, timeout=30)


def stored_keys(ledger: Ledger, location: Location, task_id: UUID, upto: int) -> set[Key]:
    """Source keys of the task's events at positions ``<= upto``."""
    conn = _connect(location)
    if conn is None:
        return {k for e in ledger.task_events(task_id, upto=upto) if (k := key_of(e.source))}
    with conn:
        rows = conn.execute(
            "SELECT json_extract(state, '$.source.agent'), json_extract(state, '$.source.session'), "
            "json_extract(state, '$.source.record') FROM stored_events "
            "WHERE originator_id = ? AND originator_version <= ? AND json_extract(state, '$.source') IS NOT NULL",
            (task_id.hex, upto),
        ).fetchall()
    conn.close()
    return {(str(a), str(s), str(r)) for a, s, r in rows}


def task_for_session(ledger: Ledger, location: Location, agent: str, session_id: str) -> UUID | None:
    """The task a conversation was linked to, if any (the latest link wins: a session whose task was
    closed under it moves on to a new task)."""
    conn = _connect(location)
    if conn is None:
        found = None
        for entry in ledger.entries():
            if any(c.agent == agent and c.session_id == session_id for c in ledger.state(entry.task_id).conversations):
                found = entry.task_id  # entries come by number: the later task holds the later link
        return found
    with conn:
        row = conn.execute(
            "SELECT originator_id FROM stored_events WHERE topic = ? "
            "AND json_extract(state, '$.agent') = ? AND json_extract(state, '$.session_id') = ? "
            "ORDER BY rowid DESC LIMIT 1",
            (ev.ConversationLinked.TOPIC, agent, session_id),
        ).fetchone()
    conn.close()
    return UUID(row[0]) if row else None


def task_for_records(ledger: Ledger, location: Location, agent: str, records: Iterable[str]) -> UUID | None:
    """A task that already holds one of ``records`` (e.g. the parent of a resumed session's first line)."""
    wanted = sorted(set(records))
    if not wanted:
        return None
    conn = _connect(location)
    if conn is None:
        # Other stores (PostgreSQL): scan the tasks' events; a record may also be referenced
        # through the transcript-end checkpoint keyed after it.
        keys = set(wanted) | {f"{END}{r}" for r in wanted}
        for entry in ledger.entries():
            for event in ledger.task_events(entry.task_id):
                if event.source is not None and event.source.agent == agent and event.source.record in keys:
                    return entry.task_id
        return None
    with conn:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (record TEXT PRIMARY KEY)")
        # A record may be referenced as itself or as the transcript-end checkpoint keyed after it.
        conn.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((r,) for r in wanted))
        conn.executemany("INSERT OR IGNORE INTO wanted VALUES (?)", ((f"{END}{r}",) for r in wanted))
        row = conn.execute(
            "SELECT originator_id FROM stored_events WHERE json_extract(state, '$.source.agent') = ? "
            "AND json_extract(state, '$.source.record') IN (SELECT record FROM wanted) LIMIT 1",
            (agent,),
        ).fetchone()
    conn.close()
    return UUID(row[0]) if row else None


@dataclass
class Appended:
    items: list[Item] = field(default_factory=list)
    rejected: list[tuple[Item, str]] = field(default_factory=list)
    """Items the catalogue or the task's rules refused, with why; the rest still land."""


def append_unseen(ledger: Ledger, location: Location, task_id: UUID, items: list[Item]) -> Appended:
    """Append the items whose source key the task does not hold yet, in one transaction.

    Items without a source are always appended.
    """
    # Redacted once, not on every retry of a lost write race (the same redaction as Ledger.append_many).
    items = [(event_class, redact_fields(fields)) for event_class, fields in items]

    def attempt() -> Appended:
        task = ledger.task(task_id)
        result = record_unseen(task, items, stored_keys(ledger, location, task_id, task.version))
        if result.items:
            ledger.save(task)
        return result

    return ledger._retrying(attempt)


def open_with(
    ledger: Ledger, title: str, items: list[Item], *, cwd: str | None, actor: str,
    project: str | None = None, timestamp: Any = None,
) -> tuple[UUID, Appended]:
    """Open a task whose first events are ``items``, all in one transaction (see ``Ledger.open_task``)."""
    items = [(event_class, redact_fields(fields)) for event_class, fields in items]
    outcome: list[Appended] = []

    def first(task: Task) -> None:
        outcome[:] = [record_unseen(task, items, set())]

    state = ledger.open_task(title, cwd=cwd, actor=actor, project=project, timestamp=timestamp, first=first)
    assert state.id is not None
    return state.id, outcome[0]


def record_unseen(task: Task, items: list[Item], seen: set[Key]) -> Appended:
    """Record on ``task`` the items whose source key is not in ``seen`` (updated); refused ones are reported."""
    result = Appended()
    for event_class, fields in items:
        key = key_of(fields.get("source"))
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)  # a source repeated inside one batch lands once
        cls, values = _resolve(task.decision.latest_requirement, event_class, fields)
        try:
            # A refused event leaves the task unchanged (events are validated before they
            # are applied), so the batch goes on.
            task.record(cls, **values)
        except (ValidationError, RuleBroken) as exc:
            result.rejected.append(((event_class, fields), str(exc).splitlines()[0]))
            continue
        result.items.append((event_class, fields))
    return result


def _resolve(latest: int | None, event_class: type[ev.TaskEvent], fields: dict[str, Any]) -> Item:
    """Turn the importer's ``LATEST_REQUIREMENT`` placeholder into a position (or a new requirement)."""
    if event_class is ev.RequirementChanged and fields.get("supersedes") == LATEST_REQUIREMENT:
        if latest is None:
            return ev.RequirementStated, {k: v for k, v in fields.items() if k != "supersedes"}
        return event_class, {**fields, "supersedes": latest}
    return event_class, fields
