"""`trail resume` with several candidates: on a terminal a person picks one by number, as `claude --resume`
asks; anything else (an agent's shell, a pipe) gets the candidates named in one line and exit 2, as before.

The terminal is a real pseudo-terminal (``pty``): the child's stdin, stdout and stderr are its slave side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_here, run_trail
from tests.terminal import on_a_terminal

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the terminal picker, not the store")


def _three_tasks(home: Path, work: Path) -> None:
    for title in ("Parser rewrite for tokens", "Parser speed-up", "Docs for the CLI"):
        run_here("start", title, home=home, cwd=work, check=True)
        run_here("next", f"carry on with {title.lower()}", home=home, cwd=work, check=True)


def test_several_candidates_on_a_terminal_are_offered_and_the_one_picked_is_resumed(home: Path,
                                                                                      tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _three_tasks(home, work)
    code, seen = on_a_terminal(["resume", "parser"], home, work, b"2\n")
    assert code == 0, seen
    offered = [line for line in seen.splitlines() if ") #" in line]
    assert len(offered) == 2, seen  # the two parser tasks, the docs task not among them
    picked = offered[1]
    assert "#1" in picked or "#2" in picked
    number = "1" if "#1" in picked else "2"
    wanted = "parser rewrite for tokens" if number == "1" else "parser speed-up"
    assert f"carry on with {wanted}" in seen.split("Which one?", 1)[1]
    # What was picked is not kept as the answer to `resume parser` (the brief cache): asked again, it asks again.
    again = run_trail("resume", "parser", home=home, cwd=work)
    assert again.returncode == 2 and "matches 2 tasks" in again.stderr


def test_a_project_with_no_active_task_offers_its_own_tasks(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _three_tasks(home, work)
    other = tmp_path / "other"
    other.mkdir()
    run_here("start", "Elsewhere entirely", home=home, cwd=other, check=True)
    elsewhere = run_here("list", "--json", home=home, cwd=other, check=True)
    assert "elsewhere-entirely" in elsewhere.stdout
    (home / "active.json").unlink()  # no task is active anywhere now
    code, seen = on_a_terminal(["resume"], home, work, b"3\n")
    assert code == 0, seen
    offered = [line for line in seen.splitlines() if ") #" in line]
    assert len(offered) == 3 and not any("Elsewhere" in line for line in offered), seen


def test_an_answer_out_of_range_is_asked_again_and_end_of_input_stops_with_nothing_done(home: Path,
                                                                                        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _three_tasks(home, work)
    code, seen = on_a_terminal(["resume", "parser"], home, work, b"9\n\x04")
    assert code != 0
    assert "9 is not in the range 1<=x<=2" in seen
    assert "carry on with" not in seen


def test_without_a_terminal_the_candidates_are_named_and_it_exits_2(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _three_tasks(home, work)
    proc = run_trail("resume", "parser", home=home, cwd=work)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "#1 parser-rewrite-for-tokens" in proc.stderr
    assert "Which one?" not in proc.stderr + proc.stdout and proc.stdout == ""
