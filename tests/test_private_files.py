"""Issue 23, item 2: every file and folder tasktrail makes is its owner's alone (0600 / 0700), whatever
the umask, and what an older release left open is made private on open with one line, once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED, run_trail

FIXTURE = SHARED / "fixtures" / "claude-code" / "ccl-project-title-aa5c5ada.jsonl"


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The usual 022: every process the test starts inherits it."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def _hook(home: Path, payload: dict[str, object] | str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    env.update(TRAIL_HOME=str(home), PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
        input=payload if isinstance(payload, str) else json.dumps(payload),
        capture_output=True, text=True, env=env, timeout=60, cwd=home.parent,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc


def _open_to_others(top: Path) -> list[str]:
    found = []
    for root, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = Path(root, name)
            if not path.is_symlink() and path.lstat().st_mode & 0o077:
                found.append(f"{path.relative_to(top)} {stat.filemode(path.lstat().st_mode)}")
    if top.stat().st_mode & 0o077:
        found.append(f". {stat.filemode(top.stat().st_mode)}")
    return found


def _all_paths(top: Path) -> set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*")}


def test_a_whole_session_under_umask_022_leaves_nothing_readable_by_others(
    home: Path, tmp_path: Path, open_umask: None, backend: str
) -> None:
    session = "77777777-0000-4000-8000-000000000007"
    run_trail("start", "Keep it private", home=home, check=True)
    _hook(home, {"session_id": session, "hook_event_name": "SessionStart", "source": "startup"})
    _hook(home, {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": "add a parser"})
    _hook(home, {"session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                 "tool_use_id": "toolu_p1", "tool_input": {"command": "pytest -q"},
                 "tool_response": {"stdout": "3 passed", "stderr": ""}})
    assert "payload kept in" in _hook(home, "{not json").stderr  # a dead letter
    source = home.parent / "app.py"
    source.write_text("print('one')\n")
    run_trail("changed", str(source), home=home, check=True)  # a diff baseline in blobs/
    source.write_text("print('two')\n")
    run_trail("changed", str(source), home=home, check=True)
    for _ in range(2):  # the second answers from the brief cache
        run_trail("resume", home=home, check=True)
    run_trail("import", "claude-code", str(FIXTURE), home=home, check=True)
    run_trail("compact", "1", "--before", "4", home=home, check=True)
    run_trail("query", "SELECT count(*) FROM events", home=home, check=True)  # the read model
    run_trail("verify", home=home, check=True)

    made = _all_paths(home)
    expected = {"active.json", "deadletter", "blobs"}
    if backend == "sqlite":  # (the brief cache is SQLite's only)
        expected |= {"ledger.db", "ledger.db.duckdb", "ledger.db.archive", "cache", "keys"}
    else:
        expected |= {"archives", "readmodel"}
    assert expected <= made, sorted(made)  # the check below looks at what a session really makes
    assert _open_to_others(home) == []


@pytest.mark.sqlite_only("makes an older release's open SQLite files")
def test_what_an_older_release_left_open_is_made_private_on_open_once(
    home: Path, tmp_path: Path, open_umask: None
) -> None:
    run_trail("start", "Made before", home=home, check=True)
    run_trail("query", "SELECT 1", home=home, check=True)
    for path in [home, *home.rglob("*")]:  # as a release before this one left them
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert _open_to_others(home) != []
    first = run_trail("list", home=home, check=True)
    assert first.stderr == f"tasktrail: made {home} and {len(_all_paths(home))} paths in it private to you" \
        " (readable by others before)\n"
    assert _open_to_others(home) == []
    assert run_trail("list", home=home, check=True).stderr == ""  # once: nothing left to tighten


@pytest.mark.sqlite_only("a ledger file named with --db")
def test_a_ledger_outside_the_home_is_made_private_with_its_companions(
    home: Path, tmp_path: Path, open_umask: None
) -> None:
    db = tmp_path / "elsewhere" / "team.db"
    db.parent.mkdir()
    run_trail("--db", str(db), "start", "Elsewhere", home=home, check=True)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    db.chmod(0o644)
    proc = run_trail("--db", str(db), "list", home=home, check=True)
    assert proc.stderr == f"tasktrail: made {db} private to you (readable by others before)\n"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert [p.name for p in db.parent.iterdir() if p.stat().st_mode & 0o077] == []
