"""The DuckDB read model on real SQLite ledgers and real DuckDB files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import duckdb
import pytest

from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from projections import readmodel as rm

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def ledger(tmp_path: Path) -> Any:
    app = open_ledger(resolve(str(tmp_path / "ledger.db")))
    yield app
    app.close()


def _path(tmp_path: Path) -> Path:
    return rm.readmodel_path(resolve(str(tmp_path / "ledger.db")))


def _work(ledger: Ledger, title: str, rounds: int) -> UUID:
    """A task with ``rounds`` attempts, each running a command, changing files and a test."""
    task = ledger.open_task(title).id
    assert task is not None
    ledger.append(task, ev.RequirementStated, text="keep the API")
    for i in range(rounds):
        start = ledger.append(task, ev.AttemptStarted, text=f"try {i}").position
        ledger.append(task, ev.CommandRan, argv=("pytest", "-x"), exit_code=i % 2, duration_ms=10 * i)
        ledger.append(task, ev.FileChanged, path="src/app.py", operation="modified")
        ledger.append(task, ev.FileChanged, path=f"src/mod{i}.py", operation="created")
        ledger.append(task, ev.TestResult, name="test_app", outcome="failed" if i % 2 else "passed")
        outcome = "failed" if i % 2 else "succeeded"
        ledger.append(task, ev.AttemptEnded, attempt=start, outcome=outcome, reason=f"reason {i}")
    ledger.append(task, ev.DecisionRecorded, text="use duckdb", reason="fast", rejected=("sqlite",))
    return task


def _tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every read-model table's rows in a stable order."""
    return {t: sorted(rm.query(path, f"SELECT * FROM {t}").rows, key=repr) for t in rm.TABLES}


def _task_events(ledger: Ledger) -> int:
    return sum(sum(1 for _ in ledger.task_events(e.task_id)) for e in ledger.entries())


def test_refresh_fills_every_table_from_the_ledger(ledger: Ledger, tmp_path: Path) -> None:
    task = _work(ledger, "first", rounds=3)
    path = _path(tmp_path)
    done = rm.refresh(ledger, path)

    assert path == tmp_path / "ledger.db.duckdb"
    assert done.rebuilt
    assert done.events == _task_events(ledger) == 2 + 3 * 6 + 1
    assert done.position == ledger.recorder.max_notification_id()
    events = rm.query(path, "SELECT position, type, task_number FROM events ORDER BY position").rows
    assert [r[0] for r in events] == list(range(1, done.events + 1))
    assert {r[2] for r in events} == {1}
    stored = [type(e).__name__ for e in ledger.task_events(task)]
    assert [r[1] for r in events] == stored

    attempts = rm.query(path, "SELECT text, outcome, reason, ended_position - position FROM attempts ORDER BY 1")
    assert attempts.rows == [
        ("try 0", "succeeded", "reason 0", 5),
        ("try 1", "failed", "reason 1", 5),
        ("try 2", "succeeded", "reason 2", 5),
    ]
    files = rm.query(path, "SELECT path, count(*), min(attempt) IS NOT NULL FROM files GROUP BY path ORDER BY 2 DESC")
    assert files.rows[0] == ("src/app.py", 3, True)
    assert len(files.rows) == 4
    commands = rm.query(path, "SELECT line, failed, exit_code FROM commands ORDER BY position").rows
    assert commands == [("pytest -x", False, 0), ("pytest -x", True, 1), ("pytest -x", False, 0)]
    task_row = rm.query(path, "SELECT number, title, events, attempts, attempts_failed, commands_failed FROM tasks")
    assert task_row.rows == [(1, "first", done.events, 3, 1, 1)]
    decision = rm.query(path, "SELECT text, reason, rejected FROM decisions").rows
    assert decision == [("use duckdb", "fast", ["sqlite"])]


def test_refresh_reads_only_new_notifications(ledger: Ledger, tmp_path: Path) -> None:
    task = _work(ledger, "first", rounds=2)
    path = _path(tmp_path)
    first = rm.refresh(ledger, path)
    start = ledger.append(task, ev.AttemptStarted, text="late").position
    assert rm.refresh(ledger, path).notifications == 1  # the attempt is now in the model, still open
    ledger.append(task, ev.AttemptEnded, attempt=start, outcome="failed", reason="too slow")
    ledger.append(task, ev.NextStepSet, text="profile it")

    again = rm.refresh(ledger, path)
    assert not again.rebuilt
    assert again.notifications == again.events == 2
    assert again.position == first.position + 3
    assert rm.refresh(ledger, path).notifications == 0
    # An attempt started in an earlier refresh is closed by a later one.
    late = rm.query(path, "SELECT outcome, reason FROM attempts WHERE text = 'late'").rows
    assert late == [("failed", "too slow")]
    row = rm.query(path, "SELECT next_step, open_attempt, events FROM tasks").rows
    assert row == [("profile it", None, first.events + 3)]


def test_incremental_batches_equal_a_full_rebuild(ledger: Ledger, tmp_path: Path) -> None:
    path = _path(tmp_path)
    _work(ledger, "one", rounds=2)
    rm.refresh(ledger, path, batch_size=3)
    two = _work(ledger, "two", rounds=3)
    rm.refresh(ledger, path, batch_size=2)
    ledger.append(two, ev.StatusChanged, status="blocked", reason="waiting")
    rm.refresh(ledger, path, batch_size=1)
    incremental = _tables(path)

    rebuilt = rm.refresh(ledger, path, rebuild=True)
    assert rebuilt.rebuilt and rebuilt.events == _task_events(ledger)
    assert _tables(path) == incremental
    assert rm.query(path, "SELECT status FROM tasks WHERE number = 2").rows == [("blocked",)]


def test_a_failed_batch_leaves_rows_and_position_together(
    ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _work(ledger, "one", rounds=3)
    path = _path(tmp_path)
    real_insert, calls = rm._insert, []

    def crash_in_third_batch(con: Any, table: str, rows: Any) -> None:
        calls.append(table)
        if calls.count("events") == 3 and table == "commands":
            raise RuntimeError("power cut")
        real_insert(con, table, rows)

    monkeypatch.setattr(rm, "_insert", crash_in_third_batch)
    with pytest.raises(RuntimeError, match="power cut"):
        rm.refresh(ledger, path, batch_size=5)
    position = rm.query(path, "SELECT notification_id FROM position").rows[0][0]
    assert position == 10  # two whole batches of five
    highest = rm.query(path, "SELECT max(notification_id), count(*) FROM events").rows[0]
    assert highest[0] <= position
    committed = ledger.recorder.select_notifications(1, position)
    assert highest[1] == sum(1 for n in committed if n.topic.endswith(tuple(ev.BY_NAME)))

    monkeypatch.setattr(rm, "_insert", real_insert)
    rm.refresh(ledger, path, batch_size=5)
    finished = _tables(path)
    rm.refresh(ledger, path, rebuild=True)
    assert _tables(path) == finished


def test_gaps_in_notification_ids_are_skipped_not_waited_for(ledger: Ledger, tmp_path: Path) -> None:
    task = _work(ledger, "one", rounds=1)
    path = _path(tmp_path)
    before = rm.refresh(ledger, path)
    ledger.append(task, ev.NoteAdded, text="will vanish")
    ledger.append(task, ev.NoteAdded, text="after the gap")
    with sqlite3.connect(tmp_path / "ledger.db") as con:  # a rolled-back id, as PostgreSQL can leave
        con.execute("DELETE FROM stored_events WHERE rowid = ?", (before.position + 1,))
    after = rm.refresh(ledger, path)
    assert after.notifications == 1
    payloads = rm.query(path, "SELECT payload->>'text' FROM events WHERE type = 'NoteAdded'").rows
    assert payloads == [("after the gap",)]


def test_a_replaced_ledger_or_old_schema_is_rebuilt(tmp_path: Path) -> None:
    path = _path(tmp_path)
    with open_ledger(resolve(str(tmp_path / "ledger.db"))) as first:
        _work(first, "one", rounds=3)
        rm.refresh(first, path)
    (tmp_path / "ledger.db").unlink()
    with open_ledger(resolve(str(tmp_path / "ledger.db"))) as second:
        second.open_task("fresh")
        done = rm.refresh(second, path)
        assert done.rebuilt
        assert rm.query(path, "SELECT number, title FROM tasks").rows == [(1, "fresh")]
        with duckdb.connect(str(path)) as con:
            con.execute("UPDATE meta SET value = '0' WHERE key = 'schema_version'")
        assert rm.refresh(second, path).rebuilt


def test_queries_are_read_only_and_bad_sql_is_one_clear_error(ledger: Ledger, tmp_path: Path) -> None:
    _work(ledger, "one", rounds=1)
    path = _path(tmp_path)
    rm.refresh(ledger, path)
    with pytest.raises(rm.ReadModelError, match="read-only") as caught:
        rm.query(path, "DELETE FROM events")
    assert "\n" not in str(caught.value)
    with pytest.raises(rm.ReadModelError, match=r"query failed: .*nosuch"):
        rm.query(path, "SELECT * FROM nosuch")
    assert rm.query(path, "SELECT count(*) FROM events").rows[0][0] == _task_events(ledger)
    with pytest.raises(rm.ReadModelError, match="no read model"):
        rm.query(tmp_path / "missing.duckdb", "SELECT 1")


def test_waits_for_another_process_holding_the_file(ledger: Ledger, tmp_path: Path) -> None:
    _work(ledger, "one", rounds=1)
    path = _path(tmp_path)
    rm.refresh(ledger, path)
    ready = tmp_path / "held"
    holder = textwrap.dedent(
        f"""
        import duckdb, pathlib, time
        con = duckdb.connect({str(path)!r})
        pathlib.Path({str(ready)!r}).touch()
        time.sleep(float(__import__('sys').argv[1]))
        con.close()
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", holder, "1.0"])
    try:
        while not ready.exists():
            time.sleep(0.02)
        with pytest.raises(rm.ReadModelError, match="cannot open read model"), rm.connect(path, wait=0.1):
            pass
        ledger.append(ledger.entries()[0].task_id, ev.NoteAdded, text="while locked")
        began = time.monotonic()
        assert rm.refresh(ledger, path).events == 1  # waited for the holder to close
        assert time.monotonic() - began > 0.2
    finally:
        proc.wait(timeout=10)


def test_location_for_other_backends_is_under_trail_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_HOME", str(tmp_path / "home"))
    url = "postgresql://me:secret@db.internal/trail"
    path = rm.readmodel_path(resolve(url))
    assert path.parent == tmp_path / "home" / "readmodel"
    assert "secret" not in str(path) and path.suffix == ".duckdb"
    assert path != rm.readmodel_path(resolve("postgresql://me:secret@db.internal/other"))


def test_later_events_change_rows_of_earlier_batches(ledger: Ledger, tmp_path: Path) -> None:
    """An attempt's end, a rewording, a reclassification and a rename reach rows an earlier refresh wrote."""
    task = ledger.open_task("late changes").id
    assert task is not None
    first = ledger.append(task, ev.RequirementStated, text="be fast").position
    ledger.append(task, ev.RequirementStated, text="stay small")
    correction = ledger.append(task, ev.CorrectionMade, text="not that file", wrong="edit app.py").position
    prompt = ledger.append(task, ev.RequirementStated, text="really: be very fast").position
    start = ledger.append(task, ev.AttemptStarted, text="cache it").position
    ledger.append(task, ev.FileChanged, path="old.py", operation="created")
    ledger.append(task, ev.TestResult, name="t", outcome="failed")
    path = _path(tmp_path)
    rm.refresh(ledger, path)

    ledger.append(task, ev.AttemptEnded, attempt=start, outcome="abandoned", reason="no gain")
    ledger.append(task, ev.IntentReclassified, target=correction, kind="requirement")
    ledger.append(task, ev.IntentReclassified, target=prompt, kind="change", supersedes=first)
    ledger.append(task, ev.FileChanged, path="new.py", operation="renamed", renamed_from="old.py")
    ledger.append(task, ev.TestResult, name="t", outcome="error", message="boom")
    rm.refresh(ledger, path, batch_size=2)

    assert rm.query(path, "SELECT outcome, failed, reason FROM attempts").rows == [("abandoned", True, "no gain")]
    intents = rm.query(path, "SELECT position, kind, text, wrong, wordings, changed_at FROM intents ORDER BY 1").rows
    assert intents == [
        (first, "requirement", "really: be very fast", None, 1, prompt),
        (first + 1, "requirement", "stay small", None, 0, None),
        (correction, "requirement", "not that file", None, 0, None),
        (prompt, "rewording", "really: be very fast", None, 0, None),
    ]
    assert rm.query(path, "SELECT path, operation, changes FROM current_files").rows == [("new.py", "renamed", 1)]
    assert rm.query(path, "SELECT name, outcome, failing FROM current_tests").rows == [("t", "error", True)]
    state = ledger.state(task)
    current = [(p, t) for p, k, t, *_ in intents if k == "requirement"]
    assert [(r.position, r.text) for r in state.requirements] == current
    incremental = _tables(path)
    rm.refresh(ledger, path, rebuild=True)
    assert _tables(path) == incremental


def test_the_position_is_kept_through_the_librarys_tracking_interface(ledger: Ledger, tmp_path: Path) -> None:
    from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder

    _work(ledger, "one", rounds=1)
    path = _path(tmp_path)
    done = rm.refresh(ledger, path)
    with rm.connect(path) as con:
        position = rm.Position(con)
        assert isinstance(position, TrackingRecorder)
        assert position.max_tracking_id(ledger.name) == done.position
        assert position.max_tracking_id("another ledger") is None
        assert position.has_tracking_id(ledger.name, done.position)
        assert not position.has_tracking_id(ledger.name, done.position + 1)
        position.wait(ledger.name, done.position, timeout=0.1)  # already there: returns at once
        with pytest.raises(IntegrityError):  # never back, never the same batch twice
            position.insert_tracking(Tracking(ledger.name, done.position))
