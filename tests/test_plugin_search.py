"""The `trail` process skips pydantic's plugin search; a host importing the ledger as a library keeps it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LOADER = "pydantic.plugin._loader"
PROBE = f"""
import atexit, sys
def said():
    loader = sys.modules.get({LOADER!r})
    print("stand-in" if loader is not None and "tasktrail" in (loader.__doc__ or "") else "pydantic's")
atexit.register(said)
"""


def _run(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE + code], capture_output=True, text=True, timeout=120,
                          env={"TRAIL_HOME": str(home), "PATH": "/usr/bin:/bin"}, check=False)


def test_a_trail_command_answers_without_pydantic_s_plugin_search(tmp_path: Path) -> None:
    done = _run("sys.argv = ['trail', 'start', 'a task']\nfrom cli.main import main\nmain()", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "stand-in"  # and the task was validated and stored through it
    listed = _run("sys.argv = ['trail', 'list']\nfrom cli.main import main\nmain()", tmp_path)
    assert "a task" in listed.stdout and listed.stdout.splitlines()[-1] == "stand-in"


def test_a_host_importing_the_ledger_keeps_pydantic_s_own_loader(tmp_path: Path) -> None:
    done = _run("import ledger.domain.events as ev, ledger.domain.snapshot\n"
                "ev.TaskOpened.model_rebuild()", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "pydantic's"
