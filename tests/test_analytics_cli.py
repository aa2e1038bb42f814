"""`trail query`, `trail stats` and `trail export` through the real CLI on tmp ledgers."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from ledger.app.store import open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ledger with two tasks: #1 fails `make` twice and touches a.py often; #2 is done."""
    monkeypatch.setenv("TRAIL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRAIL_DB", raising=False)
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    path = tmp_path / "ledger.db"
    with open_ledger(resolve(str(path))) as ledger:
        one = ledger.open_task("Fix the parser").id
        two = ledger.open_task("Ship it").id
        assert one is not None and two is not None
        for i in range(3):
            start = ledger.append(one, ev.AttemptStarted, text=f"approach {i}").position
            ledger.append(one, ev.CommandRan, shell="make", exit_code=2 if i < 2 else 0)
            ledger.append(one, ev.FileChanged, path="a.py", operation="modified")
            outcome = "failed" if i < 2 else "succeeded"
            ledger.append(one, ev.AttemptEnded, attempt=start, outcome=outcome, reason=f"because {i}")
        ledger.append(two, ev.FileChanged, path="b.py", operation="created")
        ledger.append(two, ev.CommandRan, argv=("ls",), exit_code=0)
        ledger.append(two, ev.StatusChanged, status="done")
    return path


def trail(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def test_query_prints_a_table_json_and_csv(db: Path) -> None:
    sql = "SELECT task_number AS task, count(*) AS n FROM events GROUP BY 1 ORDER BY 1"
    table = trail(db, "query", sql)
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["task", "n"]
    assert lines[2].split() == ["1", "13"] and lines[3].split() == ["2", "4"]
    assert lines[-1] == "(2 rows)"

    as_json = trail(db, "query", sql, "--json")
    assert json.loads(as_json.stdout) == [{"task": 1, "n": 13}, {"task": 2, "n": 4}]
    as_csv = trail(db, "query", "SELECT title, status FROM tasks ORDER BY number", "--csv")
    assert list(csv.reader(io.StringIO(as_csv.stdout))) == [
        ["title", "status"],
        ["Fix the parser", "active"],
        ["Ship it", "done"],
    ]
    assert (db.parent / "ledger.db.duckdb").exists()


def test_query_json_carries_every_duckdb_value(db: Path) -> None:
    # BLOBs and integers past 64 bits made `--json` end in a traceback (orjson takes neither).
    sql = ("SELECT '\\xFF\\x00'::BLOB AS blob, 170141183460469231731687303715884105727::HUGEINT AS huge, "
           "1.50::DECIMAL(4,2) AS price, INTERVAL 36 HOUR AS span, ['\\x01'::BLOB] AS blobs, 7 AS small")
    result = trail(db, "query", sql, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"blob": "ff00", "huge": "170141183460469231731687303715884105727",
                                          "price": "1.50", "span": "1 day, 12:00:00", "blobs": ["01"], "small": 7}]


def test_query_refreshes_first(db: Path) -> None:
    assert json.loads(trail(db, "query", "SELECT count(*) AS n FROM events", "--json").stdout) == [{"n": 17}]
    with open_ledger(resolve(str(db))) as ledger:
        ledger.append(ledger.task_id(2), ev.NoteAdded, text="one more")
    assert json.loads(trail(db, "query", "SELECT count(*) AS n FROM events", "--json").stdout) == [{"n": 18}]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELEC 1", "syntax error"),
        ("SELECT * FROM nope", "nope"),
        ("DROP TABLE events", "read-only"),
    ],
)
def test_bad_sql_is_one_line_and_non_zero(db: Path, sql: str, message: str) -> None:
    result = trail(db, "query", sql)
    assert result.exit_code == 5
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("trail: query failed:") and message in result.stderr


def test_stats_json_answers_the_named_questions(db: Path) -> None:
    result = trail(db, "stats", "--json")
    assert result.exit_code == 0, result.output
    stats: dict[str, list[dict[str, Any]]] = json.loads(result.stdout)
    assert set(stats) == {"files", "failed-attempts", "failing-commands", "stalled", "timelines"}
    assert stats["files"][0]["path"] == "a.py" and stats["files"][0]["changes"] == 3
    assert [(a["attempt"], a["reason"]) for a in stats["failed-attempts"]] == [
        ("approach 1", "because 1"),
        ("approach 0", "because 0"),
    ]
    assert stats["failing-commands"] == [
        {"command": "make", "runs": 3, "failures": 2, "failure_pct": 66.7, "last_exit_code": 2}
    ]
    assert [t["task"] for t in stats["stalled"]] == [1]  # #2 is done
    assert [(t["task"], t["events"], t["attempts_failed"]) for t in stats["timelines"]] == [(1, 13, 2), (2, 4, 0)]


def test_stats_text_and_per_task_timeline(db: Path) -> None:
    text = trail(db, "stats")
    assert text.exit_code == 0
    assert "## Files changed most often" in text.stdout and "## Per-task timelines" in text.stdout
    assert "Day-by-day" not in text.stdout
    day = trail(db, "stats", "timeline", "--task", "1", "--json")
    rows = json.loads(day.stdout)["timeline"]
    assert len(rows) == 1 and rows[0]["events"] == 13 and rows[0]["attempts"] == 3
    unknown = trail(db, "stats", "bogus")
    assert unknown.exit_code == 2 and "no named query 'bogus'" in unknown.stderr


def test_export_writes_a_tasks_events_to_parquet(db: Path, tmp_path: Path) -> None:
    result = trail(db, "export", "1", "--parquet", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    target = tmp_path / "out" / "task-1-fix-the-parser.parquet"
    assert str(target) in result.stdout and "13 events" in result.stdout
    with duckdb.connect() as con:
        rows = con.execute(f"SELECT position, type FROM '{target}' ORDER BY position").fetchall()
    assert [r[0] for r in rows] == list(range(1, 14))
    assert rows[0][1] == "TaskOpened"
    missing = trail(db, "export", "9", "--parquet", str(tmp_path / "out"))
    assert missing.exit_code == 2 and missing.stdout == ""


def test_query_as_a_subprocess(db: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAIL_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "--db", str(db), "query", "SELECT 42 x", "--csv"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "x\n42\n"


def test_an_abandoned_attempt_counts_as_failed_in_stats_as_in_resume(db: Path) -> None:
    with open_ledger(resolve(str(db))) as ledger:
        task = ledger.task_id(2)
        start = ledger.append(task, ev.AttemptStarted, text="ship on Friday").position
        ledger.append(task, ev.AttemptEnded, attempt=start, outcome="abandoned", reason="release freeze")
        failed = ledger.state(task).attempts_failed
    stats = json.loads(trail(db, "stats", "failed-attempts", "timelines", "--json").stdout)
    assert failed == 1
    newest = stats["failed-attempts"][0]
    assert (newest["attempt"], newest["outcome"]) == ("ship on Friday", "abandoned")
    assert [(t["task"], t["attempts_failed"]) for t in stats["timelines"]] == [(1, 2), (2, failed)]
    resumed = json.loads(trail(db, "resume", "2", "--json").stdout)["state"]
    rows = json.loads(trail(db, "query", "SELECT attempts_failed FROM tasks WHERE number = 2", "--json").stdout)
    assert rows == [{"attempts_failed": resumed["attempts_failed"]}]
