"""A ledger written with version 1 of an event type still reads after the type moved to version 2."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import chain
from ledger.domain import events as ev
from tests import old_ledgers


def _write_v1_ledger(location: Location) -> None:
    """Record a task, then rewrite its decision row as version 1 wrote it: `why`, no `rejected`,
    no class_version, with the chain hashes a version-1 writer would have stored."""
    app = open_ledger(location)
    state = app.open_task("Old ledger")
    assert state.id is not None
    app.append(state.id, ev.RequirementStated, text="keep it working")
    app.append(state.id, ev.DecisionRecorded, text="use sqlite", reason="zero set-up")
    app.append(state.id, ev.NextStepSet, text="ship it")
    app.close()

    db = sqlite3.connect(location.sqlite_path)
    rows = db.execute(
        "SELECT originator_id, originator_version, topic, state FROM stored_events "
        "WHERE topic LIKE 'tasktrail/%' AND topic NOT LIKE 'tasktrail/Registry%' "
        "AND topic != 'tasktrail/TaskRegistered' ORDER BY originator_version"
    ).fetchall()
    previous = chain.GENESIS
    with db:
        for task, position, topic, raw in rows:
            state_dict = orjson.loads(raw)
            if topic == "tasktrail/DecisionRecorded":
                state_dict.pop("class_version")
                state_dict.pop("rejected")
                state_dict["why"] = state_dict.pop("reason")
            state_dict["chain"] = previous = chain.link(  # a ledger from before chain versions: v1
                previous, chain.canonical(topic, task, position, state_dict, version=1)
            )
            db.execute(
                "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                (orjson.dumps(state_dict), task, position),
            )
        old_ledgers.as_before_anchors(db)
    db.close()


@pytest.mark.sqlite_only
def test_version_1_decision_reads_through_the_upcast(location: Location) -> None:
    _write_v1_ledger(location)
    raw = sqlite3.connect(location.sqlite_path).execute(
        "SELECT state FROM stored_events WHERE topic = 'tasktrail/DecisionRecorded'"
    ).fetchone()[0]
    assert b'"why"' in raw and b"class_version" not in raw  # really the old shape on disk

    app = open_ledger(location)
    task_id = app.entries()[0].task_id
    decision = next(e for e in app.task_events(task_id) if isinstance(e, ev.DecisionRecorded))
    assert decision.reason == "zero set-up" and decision.rejected == ()
    state = app.state(task_id)
    assert state.decisions[0].reason == "zero set-up"
    assert state.next_step == "ship it"

    # New events append after the old ones, stored as version 2.
    app.append(task_id, ev.DecisionRecorded, text="add postgres later", reason="teams", rejected=("mysql",))
    app.close()
    newest = sqlite3.connect(location.sqlite_path).execute(
        "SELECT state FROM stored_events WHERE topic = 'tasktrail/DecisionRecorded' ORDER BY rowid DESC"
    ).fetchone()[0]
    assert orjson.loads(newest)["class_version"] == 2


@pytest.mark.sqlite_only
def test_upcast_leaves_chain_verifiable_on_stored_bytes(location: Location, tmp_path: Path) -> None:
    """The chain is defined on stored bytes, so old rows keep verifying after an upcast."""
    _write_v1_ledger(location)
    db = sqlite3.connect(location.sqlite_path)
    rows = db.execute(
        "SELECT originator_id, originator_version, topic, state FROM stored_events "
        "WHERE topic NOT IN ('tasktrail/RegistryCreated', 'tasktrail/TaskRegistered') ORDER BY originator_version"
    ).fetchall()
    previous = chain.GENESIS
    for task, position, topic, raw in rows:
        stored = orjson.loads(raw)
        previous = chain.recompute(previous, topic, task, position, stored)
        assert stored["chain"] == previous
