"""The aggregate's decision state lives apart from the brief's bounded view: rules never see a window."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from hypothesis import HealthCheck, given, settings

from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.domain.decision_state import DecisionState, advance
from ledger.domain.mapper import PydanticMapper
from ledger.domain.task import TaskSnapshot
from projections.state import RECENT_INTENTS
from tests import legacy
from tests.conftest import run_trail
from tests.strategies import Step, histories, record_history


def test_the_first_of_120_requirements_can_still_be_reworded(ledger: Ledger) -> None:
    task = ledger.open_task("many requirements").id
    assert task is not None
    ledger.append_many(task, [(ev.RequirementStated, {"text": f"requirement {n}"}) for n in range(120)])
    assert len(ledger.state(task).requirements) == RECENT_INTENTS  # the view keeps a window...
    state = ledger.append(task, ev.RequirementChanged, text="the first, reworded", supersedes=2)
    assert state.position == 122  # ...the rules do not
    assert 2 in ledger.task(task).decision.requirements


def test_reword_after_120_requirements_through_the_cli(home: Path) -> None:
    run_trail("start", "A long task", home=home, check=True)
    run_trail("require", "first requirement", home=home, check=True)
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
    assert snapshot.state.decision == ledger.task(task).decision
    assert snapshot.state.number == ledger.state(task).number  # taken from the view it carried
    restored = snapshot.mutate(None)
    assert restored.decision.open_attempt == 5 and restored.decision.requirements == frozenset({2})


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
    view = ledger.state(task_id)
    # Where the view's windows hold everything, the two folds agree on what is open and latest.
    assert (view.open_attempt, view.last_intent, view.last_decision, view.status) == (
        expected.open_attempt, expected.last_intent, expected.last_decision, expected.status)
    assert isinstance(task_id, UUID)
