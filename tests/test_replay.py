"""Replay to a point equals folding the events up to it, with and without snapshots."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from cli.main import cli
from ledger.app import sample
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location, resolve
from ledger.domain.task import Task
from projections.state import replay
from tests.strategies import Step, histories, record_history


class EveryThirdSnapshot(Ledger):
    snapshotting_intervals = {Task: 3}


@pytest.mark.parametrize("ledger_class", [Ledger, EveryThirdSnapshot], ids=["no-snapshot-yet", "snapshot-every-3"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=histories)
def test_state_at_every_point_equals_fold_of_prefix(
    new_store: Callable[[], str], ledger_class: type[Ledger], history: list[Step]
) -> None:
    ledger = open_ledger(resolve(new_store()), ledger_class)
    try:
        last = record_history(ledger, history)
        task_id = ledger.entries()[0].task_id
        events = list(ledger.task_events(task_id))
        assert [e.originator_version for e in events] == list(range(1, last + 1))
        for n in range(1, last + 1):
            assert ledger.state(task_id, at=n) == replay(events[:n]), f"position {n}"
        assert ledger.state(task_id) == replay(events)  # resume == replay --at <last>
    finally:
        ledger.close()


def test_cli_replay_and_resume_agree_with_the_fold(location: Location) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    events = list(app.task_events(final.id))
    app.close()
    runner = CliRunner()

    def state_json(*args: str) -> dict[str, object]:
        result = runner.invoke(cli, [*args, "--json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)["state"]  # type: ignore[no-any-return]

    for n in (1, 5, 10, final.position):
        assert state_json("replay", "1", "--at", str(n)) == replay(events[:n]).model_dump(mode="json")
    assert state_json("replay", "1", "--at", "-3") == replay(events[:-3]).model_dump(mode="json")
    assert state_json("replay", "1", "--at", "checkpoint:unit-tests-green")["position"] == 17
    assert state_json("resume", "1") == state_json("replay", "1", "--at", str(final.position))


def test_replay_at_a_time(location: Location) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    events = list(app.task_events(final.id))
    app.close()
    when = events[6].timestamp.isoformat()
    result = CliRunner().invoke(cli, ["replay", "1", "--at", when, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["position"] >= 7
    early = CliRunner().invoke(cli, ["replay", "1", "--at", "2001-01-01T00:00"])
    assert early.exit_code != 0 and "before the task was opened" in early.output


def test_snapshot_is_taken_and_used(location: Location) -> None:
    ledger = open_ledger(location, EveryThirdSnapshot)
    final = sample.record(ledger)
    assert final.id is not None
    assert ledger.snapshots is not None
    snaps = list(ledger.snapshots.get(final.id))
    assert [s.originator_version for s in snaps] == list(range(3, final.position + 1, 3))
    assert ledger.state(final.id) == replay(ledger.task_events(final.id))
    ledger.close()
