"""Forgetting a task: a planted marker is gone from the raw bytes of every store; a tombstone stays."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ledger.base.location import Location
from tests.conftest import run_here, run_trail
from tests.stores import chain_breaks, stored_rows

MARKER = "ZEBRA-7f3a-do-not-keep"


def _plant(home: Path, work: Path) -> None:
    work.mkdir(exist_ok=True)
    (work / "secret_plan.py").write_text(f"PLAN = '{MARKER} in a file'\n")

    def trail(*args: str) -> None:  # set-up: in this process; the forgets under test run in processes of their own
        run_here(*args, home=home, cwd=work, check=True)

    trail("start", "Keep this task")
    trail("require", "a requirement that must survive")
    trail("start", f"Project {MARKER}")
    trail("require", f"requirement mentioning {MARKER}")
    trail("ran", "--", "python3", "-c", f"print('{MARKER} on stdout')")
    trail("changed", "secret_plan.py")
    trail("note", f"note {MARKER}")


def _files_with_marker(root: Path) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and MARKER.encode() in path.read_bytes():
            found.append(path)
    return found


@pytest.mark.sqlite_only("scans the raw bytes of the SQLite file, its archives and the read model")
def test_forget_leaves_no_byte_of_the_task_anywhere(home: Path, tmp_path: Path, location: Location) -> None:
    work = tmp_path / "work"
    _plant(home, work)
    # Spread the task over every store: an archive, the read model, a compaction snapshot.
    run_here("compact", "2", "--before", "4", home=home, check=True)
    run_here("query", "SELECT count(*) FROM events", home=home, check=True)
    planted = {p.name.split(".")[-1] if "." in p.name else p.parent.parent.name for p in _files_with_marker(home)}
    assert {"duckdb", "parquet", "blobs"} <= planted, planted  # read model, archive, diff cache
    assert planted & {"db", "db-wal"}, planted  # the live store

    refused = run_trail("forget", "2", home=home)  # not a terminal: no silent default
    assert refused.returncode == 3 and "--yes" in refused.stderr
    out = json.loads(run_trail("forget", "2", "--yes", "--json", home=home, check=True).stdout)[0]
    assert out["number"] == 2 and out["events_deleted"] > 0

    assert _files_with_marker(home) == []
    assert _files_with_marker(work.parent / "home") == []
    # The forgets above in processes of their own; the reads after them in this one, each opening it afresh.
    listing = run_here("list", "--json", home=home, check=True).stdout
    assert [t["number"] for t in json.loads(listing)] == [1]
    assert run_here("resume", "2", home=home).returncode == 2
    assert run_here("verify", home=home).returncode == 0
    assert chain_breaks(stored_rows(location)) == []
    # The ledger's own history says a task was forgotten, without saying what it was.
    db = sqlite3.connect(location.sqlite_path)
    tomb = db.execute("SELECT state FROM stored_events WHERE topic = 'tasktrail/TaskForgotten'").fetchone()[0]
    assert b'"number":2' in tomb and b"title_sha256" in tomb and MARKER.encode() not in tomb
    # Numbers are not reused, and the survivor is intact.
    assert "Started #3" in run_here("start", "after", home=home, check=True).stdout
    kept = json.loads(run_here("resume", "1", "--json", home=home, check=True).stdout)["state"]
    assert kept["requirements"][0]["text"] == "a requirement that must survive"


def test_forget_on_any_store_and_retention(home: Path, tmp_path: Path, location: Location) -> None:
    _plant(home, tmp_path / "work")
    run_trail("forget", "2", "--yes", home=home, check=True)
    rows = stored_rows(location)
    assert all(MARKER.encode() not in r.state for r in rows)
    assert chain_breaks(rows) == []
    # Re-running on the tombstoned number finishes (nothing left to do) instead of failing.
    again = run_trail("forget", "2", "--yes", "--json", home=home, check=True)
    assert json.loads(again.stdout)[0]["events_deleted"] == 0
    # Retention: nothing is idle for a day yet; everything is idle for 0 minutes.
    assert "No task idle longer than 1d" in run_trail("forget", "--older-than", "1d", "--yes", home=home).stdout
    gone = json.loads(run_trail("forget", "--older-than", "0m", "--yes", "--json", home=home, check=True).stdout)
    assert [g["number"] for g in gone] == [1]
    assert json.loads(run_here("list", "--json", home=home, check=True).stdout) == []
    bad = run_trail("forget", home=home)
    assert bad.returncode == 2 and "give a TASK or --older-than" in bad.stderr


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_a_missing_or_corrupt_archive_warns_and_never_blocks_forgetting(
    home: Path, tmp_path: Path, location: Location, damage: str
) -> None:
    _plant(home, tmp_path / "work")
    run_here("compact", "2", "--before", "4", home=home, check=True)
    archived = next(home.parent.rglob("task-2-1-3.parquet"))  # beside the ledger, or this machine's cache
    if damage == "missing":
        archived.unlink()
    else:
        archived.write_bytes(b"PAR1 not an archive any more")
    done = run_trail("forget", "2", "--yes", "--json", home=home)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)[0]
    assert out["number"] == 2 and out["events_deleted"] > 0
    warnings = [line for line in done.stderr.splitlines() if line.startswith("trail: warning:")]
    if damage == "missing" and not location.is_sqlite:
        # A server ledger keeps the archive's bytes in the database: the cache is filled again, nothing is lost.
        assert out["lost"] == [] and warnings == []
    else:
        assert len(out["lost"]) == 1 and str(archived) in out["lost"][0], out
        assert len(warnings) == 1 and str(archived) in warnings[0] and "not known" in warnings[0], done.stderr
    # What the live log held is gone all the same (its diff blob too), and the archive file with it.
    assert _files_with_marker(home) == []
    assert not archived.exists()
    assert run_here("verify", home=home).returncode == 0  # the reads after the forget in this process
    assert [t["number"] for t in json.loads(run_here("list", "--json", home=home, check=True).stdout)] == [1]


@pytest.mark.sqlite_only("an age is refused while the command line is parsed, before a store is opened")
def test_an_age_too_long_ago_is_one_line(home: Path) -> None:
    run_here("start", "Keep this task", home=home, check=True)
    for args in (["forget", "--older-than", "99999999999d", "--yes"], ["compact", "1", "--older-than", "99999999999d"],
                 ["compact", "--gc-artifacts", "--older-than", "99999999999999h"], ["forget", "--older-than", "3w"]):
        bad = run_trail(*args, home=home)
        assert bad.returncode == 2, (args, bad.stderr)
        assert len(bad.stderr.splitlines()) == 1, (args, bad.stderr)
        assert f"{args[0]}: Invalid value for '--older-than': " in bad.stderr, (args, bad.stderr)
        assert "year 1" in bad.stderr or "'3w' is not an age" in bad.stderr, (args, bad.stderr)
    assert json.loads(run_here("list", "--json", home=home, check=True).stdout)[0]["number"] == 1


def test_a_forget_reaches_another_machines_read_model_on_its_next_refresh(
    home: Path, tmp_path: Path, location: Location
) -> None:
    # Two read models of one ledger (on PostgreSQL: two machines'); the forget runs beside one of them.
    from ledger.app.store import open_ledger
    from projections import readmodel

    _plant(home, tmp_path / "work")
    other = tmp_path / "other-machine" / "model.duckdb"

    def marked() -> list[tuple[str, int]]:
        ledger = open_ledger(location)
        try:
            readmodel.refresh(ledger, other)
        finally:
            ledger.close()
        rows: list[tuple[str, int]] = []
        for table in ("tasks", "events", "commands", "files"):
            found = readmodel.query(other, f"SELECT count(*) FROM {table} WHERE CAST({table} AS VARCHAR) LIKE ?",
                                    [f"%{MARKER}%"])
            rows.append((table, int(found.rows[0][0])))
        return [row for row in rows if row[1]]

    assert {table for table, _ in marked()} >= {"tasks", "events"}  # the control: the other model holds it
    run_here("query", "SELECT count(*) FROM tasks", home=home, check=True)  # this machine's model too (set-up)
    run_trail("forget", "2", "--yes", home=home, check=True)
    assert marked() == []
    kept = readmodel.query(other, "SELECT title FROM tasks")
    assert [row[0] for row in kept.rows] == ["Keep this task"]
