"""The aggregate's decision state lives apart from the brief's bounded view: rules never see a window."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings

from ledger.app.store import Ledger, open_ledger
from ledger.base.errors import RuleBroken
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.domain.decision_state import DecisionState, advance
from ledger.domain.mapper import PydanticMapper
from ledger.domain.task import TaskSnapshot
from ledger.stores import archived
from projections.state import RECENT_INTENTS
from tests import legacy
from tests.conftest import run_here, run_trail
from tests.strategies import Step, histories, record_history


def test_the_first_of_120_requirements_can_still_be_reworded(ledger: Ledger) -> None:
    task = ledger.open_task("many requirements").id
    assert task is not None
    ledger.append_many(task, [(ev.RequirementStated, {"text": f"requirement {n}"}) for n in range(120)])
    assert len(ledger.state(task).requirements) == RECENT_INTENTS  # the view keeps a window...
    state = ledger.append(task, ev.RequirementChanged, text="the first, reworded", supersedes=2)
    assert state.position == 122  # ...the rules do not
    assert ledger.task(task).kind_of(2) == "requirement"


def test_reword_after_120_requirements_through_the_cli(home: Path) -> None:
    run_here("start", "A long task", home=home, check=True)  # set-up, in this process
    run_here("require", "first requirement", home=home, check=True)
    opened = open_ledger(resolve(None))  # the other 119 in one append: 119 processes would be slow
    try:
        opened.append_many(opened.entries()[0].task_id,
                           [(ev.RequirementStated, {"text": f"more {n}"}) for n in range(119)])
    finally:
        opened.close()
    done = run_trail("require", "first requirement, new wording", "--replaces", "2", home=home)
    assert done.returncode == 0, done.stderr
    shown = run_trail("log", "--type", "RequirementChanged", "--json", home=home, check=True)
    assert "first requirement, new wording" in shown.stdout


def test_a_v1_snapshot_upcasts_with_its_decision_state_derived(ledger: Ledger) -> None:
    task = ledger.open_task("old snapshot").id
    assert task is not None
    ledger.append_many(task, [
        (ev.RequirementStated, {"text": "r"}),
        (ev.CorrectionMade, {"text": "c"}),
        (ev.DecisionRecorded, {"text": "d", "reason": "because"}),
        (ev.AttemptStarted, {"text": "a"}),
    ])
    mapper = ledger.mapper
    assert isinstance(mapper, PydanticMapper)
    # What a v1 snapshot looked like: the view alone (no decision state, no fold version, no class version).
    doc = legacy.v3_doc(ledger, task)
    del doc["class_version"], doc["state"]["decision"], doc["state"]["fold_version"]
    snapshot = mapper.to_domain_event(legacy.stored(ledger, task, 5, doc))
    assert isinstance(snapshot, TaskSnapshot)
    assert snapshot.state.number == ledger.state(task).number  # taken from the view it carried
    restored, live = snapshot.mutate(None), ledger.task(task)
    restored.history = live.history
    # The upcast lists the intents it knew; the rules answer as the fold of the log does.
    assert restored.decision.reclassified == {2: "requirement", 3: "correction"}
    kinds = [None, "requirement", "correction", "decision", "attempt"]
    assert [restored.kind_of(p) for p in range(1, 6)] == [live.kind_of(p) for p in range(1, 6)] == kinds
    assert restored.decision.open_attempt == 5 and restored.latest_requirement() == live.latest_requirement() == 2


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_the_decision_state_is_the_fold_of_the_log(ledger: Ledger, history: list[Step]) -> None:
    position = record_history(ledger, history)
    task_id = ledger.entries()[-1].task_id
    events = list(ledger.task_events(task_id))
    assert events[-1].originator_version == position
    expected = DecisionState()
    for event in events:
        expected = advance(expected, event)
    assert ledger.task(task_id).decision == expected
    # The rules answer as the old rules did from every position of every kind (``legacy.sets_decision``).
    task, old = ledger.task(task_id), legacy.sets_decision(events)
    assert [task.kind_of(p) for p in range(1, position + 2)] == [_old_kind(old, p) for p in range(1, position + 2)]
    assert task.latest_requirement() == max(old["requirements"], default=None)
    view = ledger.state(task_id)
    # Where the view's windows hold everything, the two folds agree on what is open and latest.
    assert (view.open_attempt, view.last_intent, view.last_decision, view.status) == (
        expected.open_attempt, expected.last_intent, expected.last_decision, expected.status)
    assert isinstance(task_id, UUID)


def _old_kind(old: dict[str, Any], position: int) -> str | None:
    names = {"requirements": "requirement", "corrections": "correction", "rewordings": "change",
             "decisions": "decision", "attempts": "attempt"}
    return next((kind for key, kind in names.items() if position in old[key]), None)


def _snapshot_bytes(ledger: Ledger, task: UUID) -> int:
    mapper = ledger.mapper
    assert isinstance(mapper, PydanticMapper)
    return len(mapper.to_stored_event(TaskSnapshot.take(ledger.task(task))).state)


def test_the_snapshot_does_not_grow_with_the_intents_decisions_and_attempts(ledger: Ledger) -> None:
    task = ledger.open_task("long").id
    assert task is not None

    def grow(n: int) -> None:
        items: list[tuple[type[ev.TaskEvent], dict[str, Any]]] = []
        for i in range(n):
            items += [(ev.RequirementStated, {"text": f"r{i}"}), (ev.CorrectionMade, {"text": f"c{i}"}),
                      (ev.DecisionRecorded, {"text": f"d{i}", "reason": "r"}), (ev.AttemptStarted, {"text": f"a{i}"}),
                      (ev.AttemptEnded, {"outcome": "failed", "reason": "no"})]
        ledger.append_many(task, items)

    grow(20)
    small = _snapshot_bytes(ledger, task)
    grow(2_000)
    # Positions gain digits (120 to 10,101), nothing else: 3,000 bytes of sets before.
    assert _snapshot_bytes(ledger, task) <= small + 40
    first, task_now = 2, ledger.task(task)
    assert [task_now.kind_of(p) for p in range(first, first + 5)] == [
        "requirement", "correction", "decision", "attempt", None]
    assert task_now.latest_requirement() == task_now.version - 4


def test_one_batch_reads_its_own_events_before_they_are_stored(ledger: Ledger) -> None:
    task = ledger.open_task("batch").id
    assert task is not None
    ledger.append_many(task, [
        (ev.RequirementStated, {"text": "first"}),  # 2
        (ev.CorrectionMade, {"text": "a correction"}),  # 3
        (ev.RequirementStated, {"text": "second"}),  # 4
        (ev.RequirementChanged, {"text": "second, reworded", "supersedes": 4}),  # 5
        (ev.IntentReclassified, {"target": 4, "kind": "correction"}),  # 6: the latest goes...
        (ev.IntentReclassified, {"target": 3, "kind": "change"}),  # 7: no supersedes: the one before it
    ])
    events = list(ledger.task_events(task))
    assert events[-1].supersedes == 2  # type: ignore[attr-defined]
    loaded = ledger.task(task)
    assert loaded.latest_requirement() == 2  # ...and the search goes back to the one before
    assert [loaded.kind_of(p) for p in range(1, 8)] == [None, "requirement", "change", "correction", "change",
                                                        None, None]


def test_rules_read_positions_from_the_archive_after_compaction(tmp_path: Path) -> None:
    from ledger.app import archive

    ledger = open_ledger(resolve(str(tmp_path / "t.db")))
    try:
        task = ledger.open_task("compacted").id
        assert task is not None
        ledger.append_many(task, [
            (ev.RequirementStated, {"text": "the first requirement"}),  # 2
            (ev.DecisionRecorded, {"text": "a decision", "reason": "r"}),  # 3
            (ev.CorrectionMade, {"text": "a correction"}),  # 4
            *[(ev.NoteAdded, {"text": f"n{i}"}) for i in range(300)],  # 5-304
        ])
        archive.compact(ledger, task, 300)
        assert archived.live_from(ledger, task) > 4
        ledger.append(task, ev.RequirementChanged, text="the first, reworded", supersedes=2)
        ledger.append(task, ev.IntentReclassified, target=4, kind="requirement", actor="user")
        ledger.append(task, ev.CommandRan, shell="make", exit_code=0, because_event=3)
        reopened = ledger.task(task)
        assert reopened.kind_of(4) == "requirement" and reopened.latest_requirement() == 4
        assert list(ledger.task_events(task))[-1].because.decision == 3  # type: ignore[attr-defined]
        refused = [(2, "already a requirement"), (5, "not a requirement or correction")]
        for target, said in refused:
            with pytest.raises(RuleBroken, match=said):
                ledger.append(task, ev.IntentReclassified, target=target, kind="requirement", actor="user")
    finally:
        ledger.close()


def test_a_v4_snapshot_with_every_position_upcasts_small_and_answers_the_same(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    ledger = open_ledger(resolve(str(path)))
    try:
        task = ledger.open_task("old snapshot").id
        assert task is not None
        ledger.append_many(task, [(ev.RequirementStated, {"text": f"r{i}"}) for i in range(100)]
                           + [(ev.CorrectionMade, {"text": "c"}), (ev.DecisionRecorded, {"text": "d", "reason": "r"})])
        ledger.append(task, ev.IntentReclassified, target=5, kind="correction", actor="user")
        ledger.append(task, ev.IntentReclassified, target=102, kind="requirement", actor="user")
        fresh = ledger.task(task)
        version = fresh.version
        kinds = [fresh.kind_of(p) for p in range(1, version + 1)]
        assert fresh.latest_requirement() == 102
        doc = legacy.v3_doc(ledger, task)  # a v3 body, decision sets and all: taken on to v4
        doc["class_version"] = 4
        body = doc["state"]
        del body["state"], body["fold_version"]
        body["number"] = fresh.number
        assert len(body["decision"]["requirements"]) == 100  # what a v4 snapshot listed
        ledger.snapshots.recorder.insert_events([legacy.stored(ledger, task, version, doc)])  # type: ignore[union-attr]
    finally:
        ledger.close()
    ledger = open_ledger(resolve(str(path)))
    try:
        upcast = ledger.task(task)
        assert upcast.version == version
        assert upcast.decision.reclassified == {5: "correction", 102: "requirement"}  # trimmed on load
        assert [upcast.kind_of(p) for p in range(1, version + 1)] == kinds
        assert upcast.latest_requirement() == 102
    finally:
        ledger.close()
