"""A new agent is one package and one registration: a toy agent with a transcript format and hook payloads
of its own, written into a temporary folder and registered through the ``tasktrail.agents`` entry point
(a ``.dist-info`` beside it, as an installed package has), is imported, hooked (the real `trail hook`
in its own process) and resumed, with no edit to tasktrail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the agent interface, not the store")

REPO = Path(__file__).resolve().parent.parent

TOY_PACKAGE = '''
"""The toy agent: transcripts are ``.toy`` text files, one record a line:
``@ SESSION CWD TIME`` (the header), ``> PROMPT``, ``$ EXIT COMMAND`` (a command and its exit code),
``x TOOL OUTPUT`` (a failed tool call). Its hooks send ``{"session_id", "hook_event_name", "cwd", "run",
"exit"}`` or ``{"..", "tool", "error"}``; it words a refused call ``NOPE: ...``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from ledger.capture.agent import Agent, FileEdit, Refusal
from ledger.capture.classify import classify
from ledger.capture.items import bounded, prompt_item, prompt_record, title_from
from ledger.capture.session import Session
from ledger.domain import events as ev


class Toy(Agent):
    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "Toy"
    transcripts: ClassVar[Path] = Path("~/.toy")
    transcript_suffix: ClassVar[str] = ".toy"

    def sort_key(self, lines, stem):
        for _, line in lines:
            if line.startswith("@ "):
                return line.split()[3], False
        return "", False

    def map_transcript(self, lines, stem, path=None):
        session = Session()
        seen: dict[str, int] = {}
        when = None
        for number, line in lines:
            mark, _, rest = line.rstrip("\\n").partition(" ")
            if mark == "@":
                session.session_id, session.cwd, stamp = rest.split()
                session.first_timestamp = stamp
                when = datetime.fromisoformat(stamp)
                continue
            key = ev.SourceKey(agent=self.name, session=session.session_id, record=f"{stem}:{number}")
            if mark == ">":
                session.title = session.title or title_from(rest)
                record = prompt_record(rest, seen)
                key = key.model_copy(update={"record": record})
                session.items.append(prompt_item(classify(rest, first=not session.items), rest, key, when))
            elif mark == "$":
                code, _, command = rest.partition(" ")
                session.items.append(self._command(command, int(code), key, when))
            elif mark == "x":
                tool, _, output = rest.partition(" ")
                session.items.append(self._failed(tool, output, key, when))
        return session

    def hook_items(self, payload, row, timestamp):
        key = ev.SourceKey(agent=self.name, session=str(payload["session_id"]), record=f"hook:{row}")
        if "run" in payload:
            return [self._command(str(payload["run"]), int(payload["exit"]), key, timestamp)]
        if "tool" in payload:
            return [self._failed(str(payload["tool"]), str(payload["error"]), key, timestamp)]
        return []

    def refusal(self, output: str) -> Refusal | None:
        return "stopped" if output.startswith("NOPE:") else None

    def install_plan(self, command, scope, project, remove=False):
        """The toy runs each line of ``.toy/hooks`` (the project's, or ``~/.toy/hooks``) on every event."""
        path = (project if scope == "project" else Path.home()) / ".toy" / "hooks"

        def edit(text):
            lines = [line for line in (text or "").splitlines() if not line.endswith(" hook toy")]
            lines += [] if remove else [command]
            return "\\n".join(lines) + "\\n" if lines else None

        return [FileEdit(path, edit)]

    def _command(self, command: str, code: int, key: ev.SourceKey, when: Any):
        return (ev.CommandRan, {"shell": command, "exit_code": code, "stdout": bounded("output of " + command),
                                "actor": self.actor, "source": key, "timestamp": when})

    def _failed(self, tool: str, output: str, key: ev.SourceKey, when: Any):
        return (ev.ToolResult, {"tool": tool, "ok": False, "output": bounded(output), "actor": self.actor,
                                "source": key, "timestamp": when})


AGENT = Toy()
'''


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    """A folder that holds the toy agent's package and its registration, as pip would install them."""
    folder = tmp_path / "site"
    (folder / "toyagent").mkdir(parents=True)
    (folder / "toyagent" / "__init__.py").write_text(TOY_PACKAGE)
    info = folder / "toyagent-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyagent\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tasktrail.agents]\ntoy = toyagent:AGENT\n")
    return folder


def _trail(
    home: Path, plugin: Path, cwd: Path, *args: str, stdin: str | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    env.update(TRAIL_HOME=str(home), PYTHONPATH=os.pathsep.join([str(REPO), str(plugin)]), **(extra_env or {}))
    return subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *args], input=stdin,
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_toy_agent_is_imported_hooked_and_resumed(home: Path, plugin: Path, tmp_path: Path) -> None:
    project = tmp_path / "toyproject"
    (project / ".git").mkdir(parents=True)
    transcript = tmp_path / "logs" / "one.toy"
    transcript.parent.mkdir()
    transcript.write_text(
        f"@ toy-s1 {project} 2026-11-30T10:00:00+00:00\n"
        "> Make the toy parser accept tabs\n"
        "$ 0 pytest -q tests/test_parse.py\n"
        "x Edit NOPE: the user stopped this edit\n"
        "x Edit old_string not found in parse.py\n"
    )

    imported = _trail(home, plugin, project, "import", "toy", str(transcript), "--json")
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["new_tasks"] == 1 and report["skipped"] == []
    assert report["events"]["CommandRan"] == 1 and report["events"]["ToolResult"] == 2
    again = json.loads(_trail(home, plugin, project, "import", "toy", str(transcript), "--json").stdout)
    assert again["events_total"] == 0  # the same records, once

    # Live capture of the same session: the real hook process, then the next read folds the inbox in.
    for payload in (
        {"session_id": "toy-s1", "hook_event_name": "UserPromptSubmit", "cwd": str(project),
         "prompt": "Also accept a trailing comma"},
        {"session_id": "toy-s1", "hook_event_name": "PostToolUse", "cwd": str(project),
         "run": "pytest -q tests/test_commas.py", "exit": 1},
        {"session_id": "toy-s1", "hook_event_name": "PostToolUse", "cwd": str(project),
         "tool": "Write", "error": "NOPE: not that file"},
    ):
        hooked = _trail(home, plugin, project, "hook", "toy", stdin=json.dumps(payload))
        assert hooked.returncode == 0 and hooked.stderr == "", hooked.stderr

    resumed = _trail(home, plugin, project, "resume")
    assert resumed.returncode == 0, resumed.stderr
    brief = resumed.stdout
    assert "Make the toy parser accept tabs" in brief and "Also accept a trailing comma" in brief
    assert "pytest -q tests/test_commas.py" in brief  # the hook's failing command is the task's failure

    state = json.loads(_trail(home, plugin, project, "resume", "--json").stdout)["state"]
    failures = {f["key"]: f for f in state["failures"]}
    # A failed tool call is a failure; the two the agent worded as refused (read at capture) are not.
    assert set(failures) == {"cmd:pytest -q tests/test_commas.py", "tool:Edit"}, failures
    assert "old_string not found" in failures["tool:Edit"]["output_tail"]
    assert state["tool_errors"] == 3


def test_a_toy_agent_installs_by_its_own_plan(home: Path, plugin: Path, tmp_path: Path) -> None:
    project = tmp_path / "toyproject"
    (project / ".git").mkdir(parents=True)
    hooks = project / ".toy" / "hooks"
    hooks.parent.mkdir()
    hooks.write_text("notify-send done\n")  # the user's own hook stays
    dry = _trail(home, plugin, project / ".git", "install", "toy", "--user", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "+" in dry.stdout and " hook toy" in dry.stdout
    assert hooks.read_text() == "notify-send done\n"  # a dry run writes nothing
    scripted = plugin / "bin"  # a shared file names the program by PATH: one of ours there
    scripted.mkdir()
    (scripted / "trail").write_text("#!/bin/sh\n# cli.main\n")
    (scripted / "trail").chmod(0o755)
    env_path = f"{scripted}{os.pathsep}{os.environ.get('PATH', '')}"
    for _ in range(2):  # twice: the second finds it up to date
        done = _trail(home, plugin, project, "install", "toy", extra_env={"PATH": env_path})
        assert done.returncode == 0, done.stderr
    assert hooks.read_text() == "notify-send done\ntrail hook toy\n"
    assert "already up to date" in done.stdout
    gone = _trail(home, plugin, project, "uninstall", "toy", "--project")
    assert gone.returncode == 0, gone.stderr
    assert hooks.read_text() == "notify-send done\n"


def test_an_unregistered_agent_hook_keeps_the_agent_running(home: Path, plugin: Path, tmp_path: Path) -> None:
    proc = _trail(home, tmp_path / "nowhere", tmp_path, "hook", "toy", stdin='{"session_id": "s"}')
    assert proc.returncode == 0
    assert proc.stderr.count("\n") == 1 and "unknown agent 'toy'" in proc.stderr
    assert "claude-code" in proc.stderr and "codex" in proc.stderr  # it names the agents it knows
