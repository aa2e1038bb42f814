"""The README's flow, run as real `trail` processes against one real ledger (SQLite file or PostgreSQL)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ledger.base.location import Location
from tests.conftest import run_here, run_trail
from tests.stores import chain_breaks, stored_rows


def test_readme_flow_survives_across_processes(home: Path, location: Location, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    (work / "auth").mkdir(parents=True)
    (work / "auth" / "refresh.py").write_text("while True:\n    retry()\n")

    def trail(*args: str) -> str:
        return run_trail(*args, home=home, cwd=work, check=True).stdout

    assert "Started #1" in trail("start", "Fix login timeout on slow networks")
    trail("require", "Login must succeed on 3G (2 s RTT)")
    trail("attempt", "Raise the HTTP client timeout to 30 s")
    ran = run_trail("ran", "--", "python3", "-c", "import sys; print('1 failed'); sys.exit(3)", home=home, cwd=work)
    assert ran.returncode == 0 and "recorded exit 3" in ran.stderr  # the command's code is recorded, not ours
    assert "1 failed" in ran.stdout  # and its output still reaches the terminal
    trail("fail", "Timeout is not the cause: the token refresh retries forever")
    trail("correct", "Don't touch the global client; the retry loop is in auth/refresh.py")
    trail("decide", "Cap refresh retries at 3 with backoff", "--because", "server rejects >5 rapid retries")
    (work / "auth" / "refresh.py").write_text("for _ in range(3):\n    retry()\n")
    assert "auth/refresh.py" in trail("changed", "auth/refresh.py")
    trail("next", "Re-run tests/test_login.py, then the 3G profile")
    trail("pause")

    brief = trail("resume")
    for expected in ("Login must succeed on 3G", "retry loop is in auth/refresh.py", "FAILED Raise the HTTP client",
                     "Cap refresh retries at 3", "auth/refresh.py", "exit 3", "Re-run tests/test_login.py", "paused"):
        assert expected in brief, expected

    machine = json.loads(trail("resume", "1", "--json"))
    state = machine["state"]
    assert machine["position"] == 10
    assert state["status"] == "paused"
    assert state["attempts"][0]["outcome"] == "failed"
    assert state["commands"][0]["exit_code"] == 3
    assert list(state["files"]) == ["auth/refresh.py"]
    assert state["files"]["auth/refresh.py"]["after_sha256"] is not None

    back = json.loads(trail("replay", "1", "--at", "4", "--json"))["state"]
    assert back["position"] == 4 and back["open_attempt"] == 3 and back["commands_total"] == 1
    assert back["corrections"] == [] and back["status"] == "active"

    timeline = trail("log", "1").splitlines()
    assert len(timeline) == 10 and "opened #1" in timeline[0] and "status -> paused" in timeline[-1]
    listing = trail("list")
    assert "#1" in listing and "paused" in listing and "Re-run tests/test_login.py" in listing

    # The diff of the change is in the log, against the version the ledger last saw (none: created).
    rows = stored_rows(location)
    changes = [row.state for row in rows if row.topic == "tasktrail/FileChanged"]
    assert len(changes) == 1 and b"+for _ in range(3):" in changes[0]
    assert chain_breaks(rows) == []


def test_switch_and_slug_prefix(home: Path) -> None:
    run_here("start", "Port the parser to Rust", home=home, check=True)  # set-up, in this process
    run_here("start", "Port the lexer to Rust", home=home, check=True)
    run_here("start", "Write release notes", home=home, check=True)
    run_here("note", "the active task is the last one started", home=home, check=True)
    assert "#3" in run_trail("list", home=home).stdout.splitlines()[2][:6]
    assert run_trail("switch", "port-the-p", home=home, check=True).stdout.startswith("Active task: #1")
    run_trail("require", "Same AST as before", home=home, check=True)
    one = json.loads(run_trail("resume", "--json", home=home, check=True).stdout)
    assert one["task"] == 1 and one["state"]["requirements"][0]["text"] == "Same AST as before"
    assert json.loads(run_trail("resume", "write", "--json", home=home).stdout)["state"]["notes"]


def test_second_change_is_diffed_against_the_first(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("one\ntwo\n")
    run_here("start", "Edit a file twice", home=home, cwd=work, check=True)  # set-up, in this process
    run_trail("changed", "a.txt", home=home, cwd=work, check=True)
    (work / "a.txt").write_text("one\nTWO\n")
    run_trail("changed", "a.txt", home=home, cwd=work, check=True)
    (work / "a.txt").unlink()
    run_trail("changed", "a.txt", home=home, cwd=work, check=True)
    events = json.loads(run_trail("log", "--type", "FileChanged", "--json", home=home, cwd=work, check=True).stdout)
    assert [e["operation"] for e in events] == ["created", "modified", "deleted"]
    assert "-two\n+TWO\n" in events[1]["diff"]["tail"]
    assert events[1]["before_sha256"] == events[0]["after_sha256"]
    assert events[2]["before_sha256"] == events[1]["after_sha256"] and events[2]["after_sha256"] is None


def test_everyday_commands_do_not_load_duckdb(home: Path) -> None:
    """DuckDB costs ~100 ms to import: only analytics and compacted reads may pay for it."""
    import subprocess
    import sys

    from tests.conftest import REPO

    run_trail("demo", "--keep", home=home, check=True)
    probe = ("import sys; from cli.app import cli; cli.main(['resume'], standalone_mode=False); "
             "print('DUCKDB' if 'duckdb' in sys.modules else 'LEAN')")
    env = {"TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    if url := os.environ.get("TRAIL_DATABASE_URL"):  # the PostgreSQL case's schema (see conftest)
        env["TRAIL_DATABASE_URL"] = url
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60,
                         cwd=home.parent)  # where demo ran: the active task is per project
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "LEAN"


def test_ran_passes_the_commands_exit_code_on_only_when_asked(home: Path, tmp_path: Path) -> None:
    run_trail("start", "Exit codes", home=home, cwd=tmp_path, check=True)
    recorded = run_trail("ran", "--", "python3", "-c", "raise SystemExit(4)", home=home, cwd=tmp_path)
    assert recorded.returncode == 0 and "recorded exit 4" in recorded.stderr  # 4 is not our storage error
    passed_on = run_trail("ran", "--exit-code", "--", "python3", "-c", "raise SystemExit(4)", home=home, cwd=tmp_path)
    assert passed_on.returncode == 4 and "recorded exit 4" in passed_on.stderr
