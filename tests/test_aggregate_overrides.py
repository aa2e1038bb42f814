"""The Task aggregate's overrides of the library, held to the library's documented behaviour.

``Task.trigger_event`` replaces the library's (``BaseAggregate.trigger_event``: build the event
at the next version, ``mutate`` the aggregate with it, queue it), ``Task.__deepcopy__`` the copy the
library's repository hands each command from its cache, and ``Ledger.take_snapshot`` with its
thread-local offers the snapshot the library takes after a save at each multiple of the interval.
The library's recorder cases (tests/test_library_recorders.py) never reach these; here they run on
a real ledger file, each against what the library promises.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from uuid import UUID

import pytest
from eventsourcing.application import Application, ProjectorFunction, project_aggregate
from eventsourcing.domain import ProgrammingError
from pydantic import ValidationError

from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.domain.snapshot import ModelSnapshot
from ledger.domain.task import Task

EVERY = 5


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ledger]:
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", str(EVERY))
    opened = open_ledger(resolve(f"sqlite:{tmp_path / 'ledger.db'}"))
    yield opened
    opened.close()


def _open(ledger: Ledger, title: str = "parser") -> UUID:
    task = ledger.open_task(title).id
    assert task is not None
    return task


def _work(ledger: Ledger, task: UUID) -> None:
    """Events of every kind the rules and the view read, across two snapshot positions."""
    ledger.append_many(task, [
        (ev.RequirementStated, {"text": "keep the API"}),
        (ev.AttemptStarted, {"text": "patch the parser"}),
        (ev.CommandRan, {"shell": "make test", "exit_code": 1}),
        (ev.DecisionRecorded, {"text": "revert", "reason": "too wide", "rejected": ("keep",)}),
    ])
    ledger.append_many(task, [
        (ev.AttemptEnded, {"attempt": 3, "outcome": "failed", "reason": "red"}),
        *((ev.NoteAdded, {"text": f"note {n}"}) for n in range(6)),
    ])


def _body(task: Task) -> Any:
    """What the task keeps (its snapshot's body, whatever that holds): equal bodies, equal aggregates."""
    return type(task).Snapshot.take(task).state


def _replayed(ledger: Ledger, task: UUID, version: int) -> Task:
    """The task as the library's own replay builds it from the stored events (``mutate`` each one)."""
    built = project_aggregate(None, ledger.events.get(task, lte=version))
    assert isinstance(built, Task)
    return built


# -- trigger_event -------------------------------------------------------------------------


def test_an_event_is_built_at_the_next_version_applied_and_queued(ledger: Ledger) -> None:
    task_id = _open(ledger)
    task = ledger.task(task_id)
    before = task.version
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    task.record(ev.NoteAdded, text="first")
    task.record(ev.NoteAdded, text="second", timestamp=at)
    assert task.version == before + 2
    assert task.modified_on == at  # the event's timestamp, as mutate sets it; kept when given
    pending = cast(list[ev.TaskEvent], task.collect_events())
    assert [(e.originator_id, e.originator_version) for e in pending] == [(task_id, before + 1), (task_id, before + 2)]
    assert pending[0].timestamp.tzinfo is not None and pending[1].timestamp == at
    assert task.collect_events() == []  # collected once
    assert task.head == pending[-1].chain  # applied: the chain moved on with each event


def test_a_refused_event_changes_nothing(ledger: Ledger) -> None:
    task = ledger.task(_open(ledger))
    version, kept = task.version, _body(task)
    with pytest.raises(ValidationError):  # the library raises TypeError on a bad event; callers here want pydantic's
        task.record(ev.NoteAdded, text="   ")
    assert (task.version, task.pending_events, _body(task)) == (version, [], kept)


class Untitled(ev.TaskEvent):
    """An event class that forgot its topic: stored, it would carry its module path."""

    text: str


class Borrowed(ev.NoteAdded):
    """A catalogue event's subclass that kept its parent's topic."""


@pytest.mark.parametrize(("event_class", "fields"), [
    (ev.TaskEvent, {"actor": "user"}), (Untitled, {"text": "x"}), (Borrowed, {"text": "x"})
], ids=["base", "no-topic", "parents-topic"])
def test_an_event_class_without_a_topic_of_its_own_is_refused(
    ledger: Ledger, event_class: type[Any], fields: dict[str, str]
) -> None:
    # As the library refuses to trigger its base event class, or a class whose explicit topic is not its own.
    task = ledger.task(_open(ledger))
    version, kept = task.version, _body(task)
    with pytest.raises(ProgrammingError):
        task.trigger_event(event_class, **fields)
    assert (task.version, task.pending_events, _body(task)) == (version, [], kept)


def test_the_triggered_task_is_the_task_the_librarys_replay_builds(ledger: Ledger) -> None:
    task_id = _open(ledger)
    _work(ledger, task_id)
    triggered = ledger.task(task_id)  # the cached aggregate the events were triggered on
    replayed = _replayed(ledger, task_id, triggered.version)
    assert triggered.version == replayed.version == 12
    assert (triggered.created_on, triggered.modified_on) == (replayed.created_on, replayed.modified_on)
    assert _body(triggered) == _body(replayed)


# -- __deepcopy__ ---------------------------------------------------------------------------


def test_a_copy_equals_its_task_and_changes_on_it_stay_on_it(ledger: Ledger) -> None:
    task_id = _open(ledger)
    _work(ledger, task_id)
    task = ledger.task(task_id)
    task.record(ev.NoteAdded, text="recorded, not folded yet")  # the copy is taken with an event pending
    copied = copy.deepcopy(task)
    assert copied == task and copied is not task  # the library's equality: type and every attribute
    kept = _body(task)
    assert _body(copied) == kept
    copied.record(ev.AttemptStarted, text="on the copy only")
    copied.record(ev.NoteAdded, text="and this")
    assert _body(copied) != kept
    assert task.version == 13 and [e.originator_version for e in task.pending_events] == [13]
    assert _body(task) == kept


def test_the_repository_hands_each_reader_a_copy_of_its_cached_task(ledger: Ledger) -> None:
    # What the cache's copies are for: a command that records and never saves leaves no trace.
    task_id = _open(ledger)
    _work(ledger, task_id)
    first: Task = ledger.repository.get(task_id)
    first.record(ev.NoteAdded, text="abandoned")
    second: Task = ledger.repository.get(task_id)
    assert second is not first and second.version == 12 and second.pending_events == []
    assert _body(second) == _body(_replayed(ledger, task_id, 12))


# -- snapshots offered through the thread-local ----------------------------------------------


class _Rebuilds(Application[UUID]):
    """Counts the snapshots the library builds its own way (from the store), under ``Ledger``."""

    rebuilt: list[tuple[UUID, int | None]]

    def take_snapshot(
        self, aggregate_id: UUID, version: int | None = None,
        projector_func: ProjectorFunction[Any, Any] = project_aggregate,
    ) -> None:
        self.__dict__.setdefault("rebuilt", []).append((aggregate_id, version))
        super().take_snapshot(aggregate_id, version, projector_func)


class _Meeting(Ledger, _Rebuilds):
    """Both writers' saves meet at their first snapshot, each with its offers set and not yet taken."""

    meeting: threading.Barrier

    def take_snapshot(
        self, aggregate_id: UUID, version: int | None = None,
        projector_func: ProjectorFunction[Any, Any] = project_aggregate,
    ) -> None:
        if version == EVERY:
            self.meeting.wait()
        super().take_snapshot(aggregate_id, version, projector_func)


def test_two_threads_saving_at_once_each_store_the_snapshots_their_own_task_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", str(EVERY))
    ledger = cast(_Meeting, open_ledger(resolve(f"sqlite:{tmp_path / 'ledger.db'}"), _Meeting))
    try:
        tasks = [_open(ledger, title) for title in ("parser", "lexer")]
        ledger.meeting = threading.Barrier(2, timeout=60)  # a bound for a failure, not a wait a pass needs
        failures: list[BaseException] = []

        def write(task: UUID) -> None:
            try:
                _work(ledger, task)
            except BaseException as exc:
                failures.append(exc)
                ledger.meeting.abort()  # the other thread stops waiting

        threads = [threading.Thread(target=write, args=(task,)) for task in tasks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert ledger.__dict__.get("rebuilt", []) == []  # every task snapshot was one its task took
        assert ledger.snapshots is not None
        for task in tasks:
            stored = list(ledger.snapshots.get(task))
            assert [s.originator_version for s in stored] == [EVERY, 2 * EVERY]
            for snapshot in cast(list[ModelSnapshot], stored):  # as the library would have built it from the store
                assert snapshot.state == _body(_replayed(ledger, task, snapshot.originator_version))
    finally:
        ledger.close()
