"""The README's tour, run as printed: every `trail` line of it succeeds, in a git repository holding the
files it names, so an example that rots (a renamed column, a position past the end) fails here."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_here


def tour_commands() -> list[list[str]]:
    """The tour's commands: the first fenced block after ``## A tour``, comments and blank lines dropped."""
    text = (REPO / "README.md").read_text()
    block = text.split("## A tour", 1)[1].split("```", 2)[1]
    commands = [shlex.split(line, comments=True) for line in block.splitlines()]
    return [argv for argv in commands if argv]


def _project(root: Path) -> None:
    (root / "auth").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "auth" / "refresh.py").write_text("".join(f"RETRIES_{n} = {n}\n" for n in range(1, 61)))
    (root / "tests" / "test_login.py").write_text("def test_login():\n    assert True\n")
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit",
                                                "-qm", "start"]):
        subprocess.run(["git", *argv], cwd=root, check=True)


@pytest.mark.sqlite_only("the tour is about the command line, not the store")
def test_every_command_of_the_readme_tour_works_as_printed(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = tour_commands()
    assert len(commands) > 20 and all(argv[0] == "trail" for argv in commands), commands
    work = tmp_path / "work"
    _project(work)
    monkeypatch.chdir(work)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # `ran -- pytest`
    outputs: dict[str, str] = {}
    for argv in commands:
        if argv[1] == "changed":  # the work the tour leaves out: the file was edited before it is recorded
            path = work / argv[2]
            lines = path.read_text().splitlines(keepends=True)
            lines[41] = "RETRIES_42 = 3  # capped, with backoff\n"
            path.write_text("".join(lines))
        done = run_here(*argv[1:], home=home, cwd=work)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        outputs[shlex.join(argv)] = done.stdout
    resume = next(out for cmd, out in outputs.items() if cmd == "trail resume")
    assert "Re-run tests/test_login.py, then the 3G profile" in resume
    blamed = next(out for cmd, out in outputs.items() if cmd.endswith("refresh.py:42"))
    assert "Cap refresh retries at 3" in blamed, blamed
    assert (work / "report.html").stat().st_size > 0 and (work / "trace.jsonl").exists()
    renamed = next(out for cmd, out in outputs.items() if cmd.startswith("trail title"))
    assert "retitled: Login fails on 3G: the token refresh retries forever" in renamed, renamed
    assert "Login fails on 3G: the token refresh retries forever" in (work / "report.html").read_text()


def help_examples(command: str, home: Path) -> list[list[str]]:
    """The example lines of ``trail COMMAND --help`` as it prints them: each ``trail ...`` line, without the
    words after the two spaces that say what it does."""
    printed = run_here(command, "--help", home=home, check=True).stdout
    lines = [line.strip() for line in printed.splitlines() if line.startswith("  trail ")]
    return [shlex.split(re.split(r"\s{2,}", line)[0]) for line in lines]


@pytest.mark.sqlite_only("the help is about the command line, not the store")
def test_every_example_of_trail_find_help_works_as_printed(home: Path, tmp_path: Path) -> None:
    examples = help_examples("find", home)
    assert len(examples) >= 4 and all(argv[0] == "trail" for argv in examples), examples
    work = tmp_path / "work"
    _project(work)
    run_here("demo", "--keep", home=home, cwd=work, check=True)  # #1, the login story
    run_here("start", "Redirect /old to /new", home=home, cwd=work, check=True)
    run_here("note", "the rewrites in vercel.json did nothing", home=home, cwd=work, check=True)
    run_here("start", "Speed up the login bug triage", home=home, cwd=work, check=True)
    run_here("pause", home=home, cwd=work, check=True)
    for argv in examples:
        done = run_here(*argv[1:], home=home, cwd=work)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (argv, done.stdout, done.stderr)
        if "--json" in argv:
            assert isinstance(json.loads(done.stdout), list), (argv, done.stdout)
        if argv[1:3] == ["find", "redirect"]:
            assert done.stdout.startswith("#2 "), done.stdout  # the task both words are in
