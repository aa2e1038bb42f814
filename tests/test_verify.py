"""Tamper evidence: edits, deletions, insertions and swaps in the SQLite file are found, by position."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import orjson
import pytest

from ledger.app import sample
from ledger.app.store import open_ledger
from ledger.base.location import Location
from tests.conftest import run_trail


@pytest.fixture
def recorded(location: Location) -> tuple[Path, str]:
    app = open_ledger(location)
    final = sample.record(app)
    app.close()
    return location.sqlite_path, final.id.hex if final.id else ""


def _rows(db: sqlite3.Connection, task: str) -> list[tuple[int, bytes]]:
    return db.execute(
        "SELECT originator_version, state FROM stored_events WHERE originator_id = ? ORDER BY originator_version",
        (task,),
    ).fetchall()


def _verify(home: Path) -> tuple[int, dict[str, object]]:
    proc = run_trail("verify", "--json", home=home)
    return proc.returncode, json.loads(proc.stdout)[0]


def test_untouched_ledger_verifies(home: Path, recorded: tuple[Path, str]) -> None:
    code, report = _verify(home)
    assert code == 0 and report["ok"] is True and report["events"] == 19


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
@pytest.mark.parametrize("position", [1, 7, 19])
def test_edited_event_is_named(home: Path, recorded: tuple[Path, str], position: int) -> None:
    path, task = recorded
    db = sqlite3.connect(path)
    with db:
        state = dict(_rows(db, task))[position]
        edited = orjson.loads(state)
        edited["actor"] = "agent:mallory"
        db.execute("UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                   (orjson.dumps(edited), task, position))
    code, report = _verify(home)
    assert code == 5
    brk = report["break"]
    assert isinstance(brk, dict) and brk["position"] == position
    assert brk["kind"] == ("altered" if position < 19 else "out of place")


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
def test_deleted_event_is_named(home: Path, recorded: tuple[Path, str]) -> None:
    path, task = recorded
    db = sqlite3.connect(path)
    with db:
        db.execute("DELETE FROM stored_events WHERE originator_id = ? AND originator_version = 8", (task,))
    code, report = _verify(home)
    assert code == 5 and report["break"] == {
        "position": 8, "kind": "missing", "detail": "no event at position 8; the next stored is 9"}


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
def test_deleted_and_renumbered_is_named(home: Path, recorded: tuple[Path, str]) -> None:
    path, task = recorded
    db = sqlite3.connect(path)
    with db:
        db.execute("DELETE FROM stored_events WHERE originator_id = ? AND originator_version = 8", (task,))
        for version in range(9, 20):
            db.execute("UPDATE stored_events SET originator_version = ? WHERE originator_id = ? "
                       "AND originator_version = ?", (version - 1, task, version))
    code, report = _verify(home)
    brk = report["break"]
    assert code == 5 and isinstance(brk, dict) and brk["position"] == 8 and brk["kind"] == "out of place"


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
def test_swapped_events_are_named(home: Path, recorded: tuple[Path, str]) -> None:
    path, task = recorded
    db = sqlite3.connect(path)
    rows = dict(_rows(db, task))
    with db:
        for a, b in ((5, 11), (11, 5)):
            db.execute("UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
                       (rows[b], task, a))
    code, report = _verify(home)
    brk = report["break"]
    assert code == 5 and isinstance(brk, dict) and brk["position"] == 5


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
def test_inserted_event_is_named(home: Path, recorded: tuple[Path, str]) -> None:
    path, task = recorded
    db = sqlite3.connect(path)
    rows = _rows(db, task)
    with db:
        for version in range(19, 3, -1):  # make room at 4, then plant a copy of event 2 there
            db.execute("UPDATE stored_events SET originator_version = ? WHERE originator_id = ? "
                       "AND originator_version = ?", (version + 1, task, version))
        db.execute("INSERT INTO stored_events (originator_id, originator_version, topic, state) "
                   "VALUES (?, 4, 'tasktrail/RequirementStated', ?)", (task, rows[1][1]))
    code, report = _verify(home)
    brk = report["break"]
    assert code == 5 and isinstance(brk, dict) and brk["position"] == 4


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
def test_truncated_tail_is_caught_by_a_later_snapshot(home: Path, location: Location) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    app.take_snapshot(final.id)
    app.close()
    db = sqlite3.connect(location.sqlite_path)
    with db:
        db.execute("DELETE FROM stored_events WHERE originator_id = ? AND originator_version > 16",
                   (final.id.hex,))
    code, report = _verify(home)
    assert code == 5 and report["break"] == {
        "position": 17, "kind": "truncated", "detail": "a snapshot records position 19, but the log ends at 16"}
