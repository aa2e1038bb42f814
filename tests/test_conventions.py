"""The conventions of the tools people already use: colour on a terminal only (off with NO_COLOR or
--no-color), long output through $PAGER on a terminal (not with --no-pager, not into a pipe), click's own
shell completion, and `trail show` printing its report as text when no --html is given.

The terminal is a real pseudo-terminal (tests/terminal.py); a pipe is run_trail's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, run_here, run_trail
from tests.terminal import on_a_terminal

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: terminal conventions, not the store")

ESC = "\x1b["


@pytest.fixture
def work(home: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    run_here("demo", "--keep", home=home, cwd=folder, check=True)  # task #1, 19 events, active here
    return folder


def test_colour_only_on_a_terminal_and_never_with_no_color(home: Path, work: Path) -> None:
    code, seen = on_a_terminal(["list"], home, work, env={"LINES": "100"})
    assert code == 0 and f"{ESC}" in seen and "Fix login timeout" in seen  # the status, styled
    for args, env in ((["list"], {"NO_COLOR": "1", "LINES": "100"}), (["--no-color", "list"], {"LINES": "100"})):
        code, seen = on_a_terminal(args, home, work, env=env)
        assert code == 0 and ESC not in seen and "Fix login timeout" in seen, (args, env)
    piped = run_trail("list", home=home, cwd=work, check=True)
    assert ESC not in piped.stdout and "Fix login timeout" in piped.stdout
    assert ESC not in run_trail("log", home=home, cwd=work, check=True).stdout


def test_long_output_goes_through_the_pager_on_a_terminal_only(home: Path, work: Path, tmp_path: Path) -> None:
    paged = tmp_path / "paged.txt"
    pager = {"PAGER": f"tee {paged}", "LINES": "10", "NO_COLOR": "1"}  # 19 events: taller than 10 lines
    code, seen = on_a_terminal(["log"], home, work, env=pager)
    assert code == 0, seen
    lines = paged.read_text().splitlines()
    assert len(lines) == 19 and lines[0].startswith("[   1]") and "opened #1" in lines[0]
    paged.unlink()
    code, seen = on_a_terminal(["--no-pager", "log"], home, work, env=pager)
    assert code == 0 and "opened #1" in seen and not paged.exists()
    code, seen = on_a_terminal(["log", "--limit", "3"], home, work, env=pager)  # short: printed as it is
    assert code == 0 and seen.count("\n") == 3 and not paged.exists()
    piped = run_trail("log", home=home, cwd=work, check=True)
    assert len(piped.stdout.splitlines()) == 19 and not paged.exists()


def test_show_without_html_prints_the_text_report(home: Path, work: Path) -> None:
    shown = run_trail("show", home=home, cwd=work, check=True).stdout
    brief = run_trail("resume", home=home, cwd=work, check=True).stdout
    assert shown.startswith(brief.split("\n", 1)[0])  # the brief's heading: the task and its status
    assert "## Tried and did not work" in shown and "## Timeline (19 events)" in shown
    timeline = shown.split("## Timeline (19 events)\n", 1)[1].splitlines()
    assert len(timeline) == 19 and timeline[0].startswith("[   1]") and timeline[-1].startswith("[  19]")
    earlier = run_trail("show", "1", "--at", "3", home=home, cwd=work, check=True).stdout
    assert "## Timeline (3 events, as of event 3 of 19)" in earlier and "[   4]" not in earlier


def test_completion_scripts_are_clicks_and_answer_for_the_lazy_commands(home: Path, work: Path) -> None:
    for shell in ("bash", "zsh", "fish"):
        script = run_trail("completion", shell, home=home, cwd=work, check=True).stdout
        assert "_TRAIL_COMPLETE" in script, shell
    bad = run_trail("completion", "tcsh", home=home, cwd=work)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "'tcsh' is not one of" in bad.stderr
    # What bash's script asks, answered by the program itself: command names, then an option's choices.
    script = run_trail("completion", "bash", home=home, cwd=work, check=True).stdout
    script_file = Path(sys.executable).parent / "trail"  # the console script: its name is what click completes
    if not script_file.is_file():
        pytest.skip("the trail console script is not installed next to this interpreter")
    folder = work.parent / "bin"
    folder.mkdir()
    (folder / "trail").symlink_to(script_file)
    asks = ('COMP_WORDS=(trail res); COMP_CWORD=1; _trail_completion trail; printf "%s\\n" "${COMPREPLY[@]}"; '
            'COMPREPLY=(); COMP_WORDS=(trail list --status ""); COMP_CWORD=3; _trail_completion trail; '
            'printf "%s\\n" "${COMPREPLY[@]}"')
    ran = subprocess.run(["bash", "-c", f"{script}\n{asks}"], capture_output=True, text=True, timeout=60, cwd=work,
                         env={"PATH": f"{folder}:/usr/bin:/bin", "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO)})
    assert ran.stdout.split() == ["resume", "active", "paused", "blocked", "done", "abandoned"], ran.stderr
