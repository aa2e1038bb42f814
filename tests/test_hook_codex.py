"""Live capture from Codex: `trail hook codex` fed Codex's hook payloads, in real processes.

Payload shapes follow Codex's hook schemas (codex-rs/hooks/schema/generated/*.command.input.schema.json):
every event has session_id, transcript_path, cwd, hook_event_name and model; turn events add turn_id;
PostToolUse adds tool_name, tool_input, tool_response (the text the model saw) and tool_use_id (the
call id the rollout records too); Stop adds last_assistant_message. See docs/capture.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.capture.agents.codex import mapper as codex
from ledger.domain import events as ev
from tests.conftest import SHARED, run_here, run_trail
from tests.test_hook import _env
from tests.test_routing import _repo, injected

ROLLOUT = "/home/u/.codex/sessions/2026/05/11/rollout-2026-05-11T08-00-00-{session}.jsonl"


def send(home: Path, cwd: Path, session: str, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    """One hook invocation as Codex makes it: in the session's folder, with its common fields."""
    payload = {
        "session_id": session,
        "transcript_path": ROLLOUT.format(session=session),
        "cwd": str(cwd),
        "hook_event_name": event,
        "model": "gpt-5.5-codex",
        "permission_mode": "default",
        **({"turn_id": f"turn-{session}"} if event != "SessionStart" else {}),
        **fields,
    }
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "codex"],
        input=json.dumps(payload), capture_output=True, text=True, env=_env(home), timeout=120, cwd=cwd,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc


def bash(call: str, command: str, code: int, output: str, seconds: float = 0.5) -> dict[str, Any]:
    response = (f"Chunk ID: 8731b0\nWall time: {seconds:.4f} seconds\nProcess exited with code {code}\n"
                f"Original token count: 12\nOutput:\n{output}")
    return {"tool_name": "Bash", "tool_use_id": call, "tool_input": {"command": command}, "tool_response": response}


PATCH = "*** Begin Patch\n*** Update File: src/report.py\n@@\n-rows = []\n+rows = list(data)\n*** End Patch\n"


def test_hook_codex_path_imports_nothing_heavy(home: Path) -> None:
    probe = (
        "import sys; sys.argv = ['trail', 'hook', 'codex']\n"
        "from cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('click', 'pydantic', 'eventsourcing', 'duckdb', 'orjson') if m in sys.modules))"
    )
    payload = {"session_id": "s", "hook_event_name": "PostToolUse", "cwd": "/tmp", **bash("c1", "ls", 0, "a\n")}
    proc = subprocess.run([sys.executable, "-c", probe], input=json.dumps(payload), capture_output=True, text=True,
                          env=_env(home), timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_codex_sessions_land_in_their_projects_tasks(home: Path, tmp_path: Path, ledger: Ledger) -> None:
    web, tool = _repo(tmp_path, "web"), _repo(tmp_path, "tool")
    (web / "src").mkdir()
    assert injected(send(home, web, "cx-web", "SessionStart", source="startup")) == ""  # no task yet
    web_src = web / "src"  # the session starts in a subfolder; its project is the repository
    send(home, web_src, "cx-web", "UserPromptSubmit", prompt="Add CSV export to the report page")
    failing = "F\nFAILED tests/test_report.py::test_csv\n1 failed in 0.12s\n"
    send(home, web, "cx-web", "PostToolUse", **bash("call_t1", "pytest -q tests/test_report.py", 1, failing))
    send(home, web, "cx-web", "PostToolUse", tool_name="apply_patch", tool_use_id="call_p1",
         tool_input={"command": PATCH},
         tool_response="Success. Updated the following files:\nM src/report.py\n")
    send(home, web, "cx-web", "PostToolUse", tool_name="mcp__docs__search", tool_use_id="call_m1",
         tool_input={"query": "csv dialect"}, tool_response={"content": [{"type": "text", "text": "use csv.writer"}]})
    send(home, web, "cx-web", "UserPromptSubmit", prompt="no, keep the header row")
    send(home, web, "cx-web", "Stop", stop_hook_active=False,
         last_assistant_message="CSV export added; the header row is kept.")
    send(home, tool, "cx-tool", "UserPromptSubmit", prompt="Set up a release script")
    send(home, tool, "cx-tool", "PostToolUse", **bash("call_r1", "bash -n release.sh", 0, ""))

    tasks = {t["title"]: t for t in json.loads(run_trail("list", "--json", home=home, check=True).stdout)}
    assert set(tasks) == {"Add CSV export to the report page", "Set up a release script"}
    web_task = ledger.task_id(tasks["Add CSV export to the report page"]["number"])
    events = list(ledger.task_events(web_task))
    assert [type(e).__name__ for e in events] == [
        "TaskOpened", "ConversationLinked", "RequirementStated", "CommandRan", "TestResult", "FileChanged",
        "ToolCalled", "ToolResult", "CorrectionMade", "CheckpointMarked", "AgentReplied",
    ]
    link, _, command, test, change = events[1:6]
    assert isinstance(link, ev.ConversationLinked) and link.agent == "codex" and link.session_id == "cx-web"
    assert link.transcript == ROLLOUT.format(session="cx-web")
    assert isinstance(command, ev.CommandRan) and command.exit_code == 1 and command.duration_ms == 500
    assert command.shell == "pytest -q tests/test_report.py" and command.actor == "agent:codex"
    assert command.stdout is not None and command.stdout.tail.startswith("F\nFAILED")  # the header is not output
    assert command.source is not None and command.source.record == "call_t1"
    assert isinstance(test, ev.TestResult) and test.outcome == "failed"
    assert isinstance(change, ev.FileChanged) and change.path == str(web / "src" / "report.py")
    assert change.source is not None and change.source.record == f"call_p1#{web / 'src' / 'report.py'}"
    assert all(e.source is None or e.source.agent == "codex" for e in events)
    tool_task = ledger.task_id(tasks["Set up a release script"]["number"])
    assert [type(e).__name__ for e in ledger.task_events(tool_task)] == [
        "TaskOpened", "ConversationLinked", "RequirementStated", "CommandRan",
    ]
    assert "CSV export" in run_trail("resume", home=home, cwd=web, check=True).stdout  # the project's own task


def test_a_codex_session_start_is_answered_with_the_brief_within_the_cap(home: Path, tmp_path: Path) -> None:
    root = SHARED / "fixtures"
    if not root.is_dir():
        pytest.skip("../shared/fixtures is absent")
    app = _repo(tmp_path, "big")
    run_here("start", "Everything at once", home=home, cwd=app, check=True)
    files = [str(p) for p in sorted((root / "codex").glob("*.jsonl"))] + [
        str(p) for p in sorted((root / "claude-code").glob("*.jsonl"))
    ]
    # Set-up, in this process (each command opens the ledger afresh); the hooks below are the fresh processes.
    run_here("import", "codex", *[f for f in files if "/codex/" in f], "--task", "1", home=home, cwd=app, check=True)
    run_here("import", "claude-code", *[f for f in files if "/claude-code/" in f], "--task", "1",
             home=home, cwd=app, check=True)
    run_here("next", "NEXT-STEP-MARKER: wire the export button", home=home, cwd=app, check=True)
    assert len(run_trail("resume", home=home, cwd=app, check=True).stdout) > 10_000
    for source in ("startup", "resume", "clear"):
        proc = send(home, app, f"cx-{source}", "SessionStart", source=source)
        answer = json.loads(proc.stdout)
        assert set(answer) == {"hookSpecificOutput"}  # Codex's SessionStart output shape
        assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        text = answer["hookSpecificOutput"]["additionalContext"]
        assert 0 < len(text) <= 10_000 and "NEXT-STEP-MARKER" in text and "task #1" in text


def test_hook_and_rollout_give_one_fact_the_same_key() -> None:
    """What the hook saw live and what an import of the rollout reads later carry the same source keys."""
    session = "019e1625-aaaa-7bbb-8ccc-000000000001"
    lines = [
        {"type": "session_meta", "payload": {"id": session, "cwd": "/w", "timestamp": "2026-05-11T08:00:00Z"}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "Make the tests pass"}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "call_id": "call_1",
                                              "arguments": json.dumps({"cmd": "pytest -q"})}},
        {"type": "event_msg", "payload": {"type": "exec_command_end", "call_id": "call_1",
                                          "command": ["bash", "-lc", "pytest -q"], "cwd": "/w", "exit_code": 0,
                                          "stdout": "3 passed", "duration": {"secs": 1, "nanos": 0}}},
        {"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": "All green."}},
    ]
    numbered = [(n, json.dumps({"timestamp": "2026-05-11T08:00:00Z", **line})) for n, line in enumerate(lines, 1)]
    imported = {
        (type_.__name__, fields["source"].record)
        for type_, fields in codex.map_rollout(numbered, "rollout").items if fields.get("source")
    }
    common = {"session_id": session, "cwd": "/w", "turn_id": "t1", "model": "m", "transcript_path": None}
    live = {
        (type_.__name__, fields["source"].record)
        for payload in (
            {**common, "hook_event_name": "PostToolUse", **bash("call_1", "pytest -q", 0, "3 passed\n")},
            {**common, "hook_event_name": "Stop", "last_assistant_message": "All green.", "stop_hook_active": False},
        )
        for type_, fields in codex.hook_items(payload, 7, None)
    }
    assert {("CommandRan", "call_1"), ("TestResult", "call_1#test")} <= live & imported
    assert any(kind == "AgentReplied" for kind, _ in live & imported)


def test_a_payload_the_inbox_cannot_take_is_kept_with_its_agent(home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "codex"],
        input='{"session_id": "torn', capture_output=True, text=True, env=_env(home), timeout=60, cwd=home.parent,
    )
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr.count("\n") == 1
    letters = list((home / "deadletter").glob("*.json"))
    assert len(letters) == 1 and json.loads(letters[0].read_text())["agent"] == "codex"
