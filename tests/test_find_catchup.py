"""Issue 22: `trail find` reads the places the read model's catch-up keeps (the ``places`` table, lower-cased
once), not every event's JSON on each query; what a later event changes (a rewording, an attempt's end and
its reason, a newer reply) reaches the place an earlier catch-up wrote. On both backends, through the real
command, each step a separate catch-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.app.store import open_ledger
from ledger.base.location import Location, resolve
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections import find, readmodel
from tests.conftest import run_trail


def _found(home: Path, *words: str) -> list[dict[str, Any]]:
    done = run_trail("find", *words, "--json", home=home, check=True)
    return list(json.loads(done.stdout))


def _kinds(home: Path, *words: str) -> list[tuple[int, str, str]]:
    return [(t["number"], m["kind"], m["text"]) for t in _found(home, *words) for m in t["matches"]]


def test_a_later_event_changes_the_place_an_earlier_catch_up_wrote(home: Path, location: Location) -> None:
    app = open_ledger(location)
    try:
        task = app.open_task("Live updates for the dashboard").id
        assert task is not None
        wanted = app.append(task, ev.RequirementStated, text="refresh the charts by polling").position
        tried = app.append(task, ev.AttemptStarted, text="open a websocket").position
        app.append(task, ev.AgentReplied, text=bound("first reply: alpha"))
    finally:
        app.close()
    assert _kinds(home, "polling") == [(1, "requirement", "refresh the charts by polling")]
    assert _kinds(home, "alpha") == [(1, "last words", "first reply: alpha")]

    app = open_ledger(location)
    try:
        app.append(task, ev.RequirementChanged, text="refresh the charts by server-sent events", supersedes=wanted)
        app.append(task, ev.AttemptEnded, attempt=tried, outcome="failed", reason="the proxy drops upgrades")
        app.append(task, ev.AgentReplied, text=bound("second reply: omega"))
    finally:
        app.close()
    assert (1, "requirement", "refresh the charts by server-sent events") in _kinds(home, "server-sent")
    assert _found(home, "polling") == []  # the old wording is no place of the task any more
    assert _kinds(home, "proxy") == [(1, "attempt", "open a websocket — the proxy drops upgrades")]
    assert _found(home, "alpha") == []  # the last words are the newest reply's only
    assert _kinds(home, "omega") == [(1, "last words", "second reply: omega")]


def test_finds_query_reads_the_kept_places_not_the_events_json(tmp_path: Path) -> None:
    app = open_ledger(resolve(str(tmp_path / "trail.db")))
    try:
        task = app.open_task("Plain text").id
        assert task is not None
        app.append(task, ev.NoteAdded, text="Kept ONCE, lower-cased")
        path = tmp_path / "trail.db.duckdb"
        readmodel.refresh(app, path)
    finally:
        app.close()
    assert readmodel.query(path, "SELECT kind, text, low FROM places").rows == [
        ("note", "Kept ONCE, lower-cased", "kept once, lower-cased")]
    text, params = find.sql(["once"], 10)
    plan = " ".join(str(row) for row in readmodel.query(path, "EXPLAIN " + text, params).rows)
    # The places table is scanned; no event's text or reply is read out of its JSON.
    assert "main.places" in plan and "'text'" not in plan and "'tail'" not in plan, plan
    assert [f.number for f in readmodel.find_tasks(path, ["once"], 10)] == [1]
