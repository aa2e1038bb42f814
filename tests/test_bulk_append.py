"""The bulk append path: a batch written in one ``Ledger.write`` stores exactly what the same events
appended one at a time store, on SQLite and PostgreSQL.

The one-at-a-time side runs with no aggregate cache, so each append reads the task back from the
store (nearest snapshot, then its events) and so checks the batch's in-memory fold, chain and
snapshots against what the store gives back. Snapshots are taken every 3 events, so batches cross
several; their rows are compared without the time each was taken.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any
from uuid import UUID

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.app.store import Draft, Ledger, NewTask, open_ledger
from ledger.base.errors import RuleBroken
from ledger.base.location import resolve
from ledger.capture import writer
from ledger.domain import events as ev
from ledger.domain.registry import REGISTRY_ID
from ledger.domain.task import Task
from tests.stores import Row, chain_breaks, stored_rows
from tests.strategies import Step, histories

EVERY = 3
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Batched(Ledger):
    name = "tasktrail"
    snapshotting_intervals = {**Ledger.snapshotting_intervals, Task: EVERY}


class Uncached(Batched):
    """Reads the task from the store for every command (no aggregate cache)."""

    name = "tasktrail"  # the library names tables after the application, and a subclass after itself
    env = {**Ledger.env, "AGGREGATE_CACHE_MAXSIZE": ""}


def _timed(history: list[Step]) -> list[Step]:
    """Each step with a fixed time, so both sides store the same bytes."""
    return [(cls, {**fields, "timestamp": START + timedelta(seconds=i + 1)}) for i, (cls, fields) in enumerate(history)]


def _opening() -> NewTask:
    return NewTask("bulk property", cwd="/w", project="/w", timestamp=START)


def _one_by_one(app: Ledger, history: list[Step]) -> tuple[UUID, list[Step]]:
    """Open the task, append each step on its own (the rules may refuse one); the accepted steps."""
    opened, _ = app.write(_opening(), (), lambda _: None)
    assert opened.id is not None
    accepted = []
    for event_class, fields in history:
        with contextlib.suppress(RuleBroken):
            app.append(opened.id, event_class, **fields)
            accepted.append((event_class, fields))
    return opened.id, accepted


def _in_batches(app: Ledger, steps: list[Step], cuts: list[int]) -> UUID:
    """Open the task with the first batch in the same write, then the rest in batches cut at ``cuts``."""
    bounds = sorted({0, len(steps), *(c for c in cuts if 0 < c < len(steps))})
    first, *rest = [steps[a:b] for a, b in pairwise(bounds)] or [[]]
    opened, _ = app.write(_opening(), first, Draft.record_all)
    assert opened.id is not None
    for batch in rest:
        app.append_many(opened.id, batch)
    return opened.id


def _snapshots(app: Ledger, task: UUID) -> list[tuple[int, str, dict[str, Any]]]:
    assert app.snapshots is not None
    out = []
    for stored in app.snapshots.recorder.select_events(task):
        state = orjson.loads(stored.state)
        state.pop("timestamp")  # when the snapshot was taken, not what it holds
        out.append((stored.originator_version, stored.topic, state))
    return out


def _task_rows(url: str) -> list[Row]:
    return [r for r in stored_rows(resolve(url)) if r.task_id != REGISTRY_ID]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories, cuts=st.lists(st.integers(1, 40), max_size=4))
def test_a_batch_stores_what_one_by_one_appends_store(
    new_store: Callable[[], str], history: list[Step], cuts: list[int]
) -> None:
    single_url, batch_url = new_store(), new_store()
    single = open_ledger(resolve(single_url), Uncached)
    try:
        task, accepted = _one_by_one(single, _timed(history))
        single_state = single.state(task)
        single_snapshots = _snapshots(single, task)
    finally:
        single.close()
    batched = open_ledger(resolve(batch_url), Batched)
    try:
        assert _in_batches(batched, accepted, cuts) == task
        written_state = batched.state(task)  # from the write's own fold, through the cache
        batch_snapshots = _snapshots(batched, task)
    finally:
        batched.close()

    rows, expected = _task_rows(batch_url), _task_rows(single_url)
    assert [(r.position, r.topic, r.state) for r in rows] == [(r.position, r.topic, r.state) for r in expected]
    assert len(rows) == len(accepted) + 1 and chain_breaks(rows) == []
    assert batch_snapshots == single_snapshots
    assert [v for v, _, _ in batch_snapshots] == list(range(EVERY, len(rows) + 1, EVERY))
    assert written_state == single_state
    reread = open_ledger(resolve(batch_url), Uncached)
    try:
        assert reread.state(task) == single_state  # the store's fold agrees with the write's
    finally:
        reread.close()


def test_a_refused_event_leaves_the_batch_and_the_cached_task_untouched(new_store: Callable[[], str]) -> None:
    url = new_store()
    app = open_ledger(resolve(url), Batched)
    try:
        opened = app.open_task("refused")
        assert opened.id is not None
        app.append_many(opened.id, [(ev.NoteAdded, {"text": "kept"}), (ev.AttemptStarted, {"text": "try"})])
        before = app.state(opened.id)
        try:
            app.append_many(opened.id, [(ev.NoteAdded, {"text": "lost"}), (ev.AttemptStarted, {"text": "again"})])
        except RuleBroken:
            pass
        else:
            raise AssertionError("a second open attempt was accepted")
        assert app.state(opened.id) == before and before.position == 3
        after = app.append(opened.id, ev.NoteAdded, text="next")
        assert after.position == 4 and chain_breaks(_task_rows(url)) == []
    finally:
        app.close()



def test_an_imports_writes_ask_the_store_only_about_keys_another_writer_may_hold(
    new_store: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = new_store()
    app, other = open_ledger(resolve(url)), open_ledger(resolve(url))
    try:
        asked: list[tuple[int, set[tuple[str, str, str]]]] = []
        real = app.store.held_keys

        def counting(task_id: UUID, upto: int, keys: Iterable[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
            keys = set(keys)
            asked.append((upto, keys))
            return real(task_id, upto, keys)

        monkeypatch.setattr(app.store, "held_keys", counting)

        def notes(*records: str) -> list[writer.Item]:
            return [(ev.NoteAdded, {"text": f"note {r}", "source": ev.SourceKey(agent="codex", session="s", record=r)})
                    for r in records]

        def keys(*records: str) -> set[tuple[str, str, str]]:
            return {("codex", "s", r) for r in records}

        known: writer.Known = {}
        task, opened = writer.open_with(app, "import", notes("1", "2"), cwd="/w", actor="agent:codex", known=known)
        assert len(opened.items) == 2
        assert len(writer.append_unseen(app, resolve(url), task, notes("2", "3"), known).items) == 1
        assert len(writer.append_unseen(app, resolve(url), task, notes("3", "4"), known).items) == 1
        assert asked == []  # the keys came from the import's own writes
        other.append_many(task, notes("5"))  # another writer: the known keys are now behind
        assert len(writer.append_unseen(app, resolve(url), task, notes("4", "5", "6"), known).items) == 1
        assert asked == [(6, keys("4", "5", "6"))]  # this batch's keys, at the version it found
        assert len(writer.append_unseen(app, resolve(url), task, notes("1", "7"), known).items) == 1
        assert asked[1:] == [(7, keys("1", "7"))]  # asked from then on: the import no longer holds every key
        stored = [e.source.record for e in app.task_events(task) if e.source is not None]
        assert stored == ["1", "2", "3", "4", "5", "6", "7"]
    finally:
        app.close()
        other.close()
