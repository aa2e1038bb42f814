"""Defects a new user met on the command line, each pinned: commands that would record nothing new say so
and append nothing (a file with its baseline's bytes, a status the task already has); `why PATH:LINE`
refuses a line past the file's end and blames no empty diff; the import report names no line 0; `log`'s
columns hold whatever the actors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.app.store import open_ledger
from ledger.base.location import resolve
from tests.conftest import run_here


def _count(home: Path) -> int:
    with open_ledger(resolve()) as ledger:
        return ledger.state(ledger.entries()[0].task_id).position


@pytest.mark.sqlite_only("what would record nothing new is decided from the kept baseline and the task's state, "
                         "above the store")
def test_an_unchanged_file_and_a_second_done_append_nothing(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text("x = 1\n")
    run_here("start", "Nothing twice", home=home, cwd=work, check=True)
    run_here("changed", "a.py", home=home, cwd=work, check=True)
    recorded = _count(home)
    again = run_here("changed", "a.py", home=home, cwd=work)
    assert again.returncode == 0 and "a.py is unchanged (as recorded at [2]" in again.stdout, again.stdout
    (work / "b.py").write_text("y = 2\n")
    both = run_here("changed", "a.py", "b.py", "--json", home=home, cwd=work)
    assert json.loads(both.stdout) == {"task": 1, "positions": [3], "paths": ["b.py"], "unchanged": ["a.py"]}
    assert _count(home) == recorded + 1
    run_here("done", home=home, cwd=work, check=True)
    second = run_here("done", home=home, cwd=work)
    assert second.returncode == 0 and "#1 is already done; nothing recorded" in second.stdout
    assert _count(home) == recorded + 2
    assert run_here("reopen", home=home, cwd=work).returncode == 0 and _count(home) == recorded + 3


def test_why_refuses_a_line_past_the_end_of_the_file(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "short.py").write_text("".join(f"v{n} = {n}\n" for n in range(61)))
    run_here("start", "Lines", home=home, cwd=work, check=True)
    run_here("changed", "short.py", home=home, cwd=work, check=True)
    past = run_here("why", "short.py:999", home=home, cwd=work)
    assert past.returncode == 2 and past.stderr.strip() == "trail: short.py:999: the file has 61 lines", past.stderr
    assert "short.py" in run_here("why", "short.py:61", home=home, cwd=work, check=True).stdout


def test_why_takes_the_files_end_from_its_recorded_changes_not_the_folder_it_runs_in(home: Path,
                                                                                     tmp_path: Path) -> None:
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (work / "short.py").write_text("".join(f"v{n} = {n}\n" for n in range(61)))
    run_here("start", "Lines", home=home, cwd=work, check=True)
    run_here("changed", "short.py", home=home, cwd=work, check=True)
    (work / "short.py").write_text("".join(f"v{n} = {n}\n" for n in range(59)))  # two lines cut: not recorded
    run_here("changed", "short.py", home=home, cwd=work, check=True)
    # From a folder without the file (as the MCP server runs), the recorded end still holds: 61 - 2.
    past = run_here("why", "short.py:60", home=home, cwd=elsewhere)
    assert past.returncode == 2 and past.stderr.strip() == "trail: short.py:60: the file has 59 lines", past.stderr
    (work / "short.py").write_text("v0 = 0\n")  # the working file is not the record: line 59 is answered
    answered = json.loads(run_here("why", "short.py:59", "--json", home=home, cwd=work, check=True).stdout)
    assert [c["position"] for c in answered["changes"]] == [2]


def test_why_answers_any_line_when_the_recorded_diffs_do_not_tell_the_files_end(home: Path, tmp_path: Path) -> None:
    """A change whose diff says no line (an unnumbered Codex patch section) leaves the file's length unknown."""
    from ledger.domain import events as ev
    from ledger.domain.bounds import bound

    work = tmp_path / "work"
    work.mkdir()
    run_here("start", "Unknown end", home=home, cwd=work, check=True)
    with open_ledger(resolve()) as ledger:
        task = ledger.entries()[0].task_id
        ledger.append(task, ev.FileChanged, path=str(work / "p.py"), operation="modified",
                      diff=bound("*** Update File: p.py\n@@\n-a = 1\n+a = 2"), actor="agent:codex")
    answered = json.loads(run_here("why", "p.py:500", "--json", home=home, cwd=work, check=True).stdout)
    assert [c["line"] for c in answered["changes"]] == [500]


def test_why_blames_no_change_whose_diff_was_empty(home: Path, tmp_path: Path) -> None:
    """Earlier releases recorded a `trail changed` of unchanged bytes with an empty diff: it touched no line."""
    from ledger.domain import events as ev
    from ledger.domain.bounds import bound

    work = tmp_path / "work"
    work.mkdir()
    (work / "f.py").write_text("a = 1\n")
    run_here("start", "Old empty change", home=home, cwd=work, check=True)
    run_here("changed", "f.py", home=home, cwd=work, check=True)
    with open_ledger(resolve()) as ledger:
        task = ledger.entries()[0].task_id
        sha = ledger.state(task).files["f.py"].after_sha256
        ledger.append(task, ev.FileChanged, path="f.py", operation="modified", before_sha256=sha, after_sha256=sha,
                      diff=bound(""), actor="user")
    blamed = run_here("why", "f.py:1", "--json", home=home, cwd=work, check=True)
    assert [c["position"] for c in json.loads(blamed.stdout)["changes"]] == [2], blamed.stdout


def test_the_import_report_names_no_line_zero(home: Path, tmp_path: Path) -> None:
    """Records skipped for a reason that is not a line (the task was forgotten) name the file alone."""
    from tests.test_crash import _transcript

    log = tmp_path / "session.jsonl"
    _transcript(log, 3)
    run_here("import", "claude-code", str(log), home=home, cwd=tmp_path, check=True)
    run_here("forget", "1", "--yes", home=home, cwd=tmp_path, check=True)
    again = run_here("import", "claude-code", str(log), home=home, cwd=tmp_path, check=True)
    assert f"  {log}: " in again.stdout and "records of forgotten task #1" in again.stdout, again.stdout
    assert ":0:" not in again.stdout


def test_log_keeps_its_summaries_in_one_column_whatever_the_actors(home: Path, tmp_path: Path) -> None:
    run_here("start", "Columns", home=home, cwd=tmp_path, check=True)
    run_here("note", "from an agent", "--actor", "agent:claude-code", home=home, cwd=tmp_path, check=True)
    lines = run_here("log", home=home, cwd=tmp_path, check=True).stdout.splitlines()
    assert len(lines) == 2 and "agent:claude-code" in lines[1]
    starts = {line.index(word) for line, word in zip(lines, ("opened", "note"), strict=True)}
    assert len(starts) == 1, lines


def test_every_error_of_the_code_has_a_documented_exit_code() -> None:
    """The bare TrailError exits 1, which the README gives to nothing but doctor: no code raises it as such."""
    import re

    from tests.conftest import REPO

    bare = [f"{path.relative_to(REPO)}:{n}" for folder in ("ledger", "projections", "cli")
            for path in sorted((REPO / folder).rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1) if re.search(r"raise TrailError\(", line)]
    assert bare == []


@pytest.mark.sqlite_only("stats counts in the read model (DuckDB), whichever store it was built from")
def test_stats_counts_a_branchs_copied_events_once(home: Path, tmp_path: Path) -> None:
    """A branch starts with copies of its origin's events: a failing run, a file change and a failed attempt
    made once are one in `stats`, however many branches were taken from before them."""
    (tmp_path / "f.py").write_text("a = 1\n")
    run_here("start", "Origin", home=home, cwd=tmp_path, check=True)
    run_here("attempt", "Try it", home=home, cwd=tmp_path, check=True)
    run_here("ran", "--", "false", home=home, cwd=tmp_path, check=True)
    run_here("changed", "f.py", home=home, cwd=tmp_path, check=True)
    run_here("fail", "It did not", home=home, cwd=tmp_path, check=True)
    run_here("branch", "1", "Another way", "--at", "5", home=home, cwd=tmp_path, check=True)
    run_here("ran", "-t", "2", "--", "false", home=home, cwd=tmp_path, check=True)  # the branch's own run
    stats = json.loads(run_here("stats", "--json", home=home, cwd=tmp_path, check=True).stdout)
    assert [(c["command"], c["runs"]) for c in stats["failing-commands"]] == [("false", 2)]
    assert [(f["path"], f["changes"]) for f in stats["files"]] == [("f.py", 1)]
    assert [(a["task"], a["attempt"]) for a in stats["failed-attempts"]] == [(1, "Try it")]


def test_a_new_reason_for_the_same_status_is_still_recorded(home: Path, tmp_path: Path) -> None:
    run_here("start", "Blocked twice", home=home, cwd=tmp_path, check=True)
    run_here("block", "waiting for the API key", home=home, cwd=tmp_path, check=True)
    again = run_here("block", "waiting for the API key", home=home, cwd=tmp_path, check=True)
    assert "already blocked; nothing recorded" in again.stdout
    other = run_here("block", "the vendor is down", home=home, cwd=tmp_path, check=True)
    assert "nothing recorded" not in other.stdout and _count(home) == 3
