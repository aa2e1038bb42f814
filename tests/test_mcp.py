"""`trail mcp` end to end: the MCP SDK's own client (``stdio_client`` + ``ClientSession``) against a real
`trail mcp` subprocess, on a ledger in this test's TRAIL_HOME, run from a project folder of its own."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import REPO, run_here, run_trail

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install -e '.[mcp]')")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import CallToolResult, Implementation, TextContent  # noqa: E402

TOOLS = {"list_tasks", "find_tasks", "resume_task", "record", "retitle_task", "why", "log", "replay", "query"}
KINDS = ["requirement", "correction", "decision", "attempt_start", "attempt_end", "next_step", "note", "checkpoint"]


def _server(home: Path, cwd: Path, pythonpath: str = str(REPO)) -> StdioServerParameters:
    env = {"TRAIL_HOME": str(home), "PYTHONPATH": pythonpath}
    if url := os.environ.get("TRAIL_DATABASE_URL"):  # the postgres case of the ``home`` fixture
        env["TRAIL_DATABASE_URL"] = url
    return StdioServerParameters(command=sys.executable, args=["-c", "from cli.main import main; main()", "mcp"],
                                 env=env, cwd=cwd)


def _session(home: Path, cwd: Path, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        with open(os.devnull, "w") as quiet:  # the server's log lines on stderr
            async with stdio_client(_server(home, cwd), errlog=quiet) as (read, write), ClientSession(
                read, write, client_info=Implementation(name="Test Client", version="1.0")
            ) as session:
                await session.initialize()
                with anyio.fail_after(60):
                    await body(session)

    anyio.run(main)


def _text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _ok(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} {arguments}: {_text(result)}"
    return result.structured_content if result.structured_content is not None else _text(result)


async def _fails(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} {arguments} should fail: {_text(result)}"
    message = _text(result)
    assert "\n" not in message and message.startswith(f"Error executing tool {tool}: "), message
    return message.removeprefix(f"Error executing tool {tool}: ")


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    """A project folder (a git top level) whose active task is #1; another project holds task #2."""
    here = tmp_path / "project"
    (here / ".git").mkdir(parents=True)
    (here / "src").mkdir()
    elsewhere = tmp_path / "other"
    (elsewhere / ".git").mkdir(parents=True)
    run_here("start", "Fix login timeout on slow networks", home=home, cwd=here, check=True)  # set-up, in this process
    run_here("start", "Set up a Rust workspace", home=home, cwd=elsewhere, check=True)
    return here


def test_tools_and_their_schemas(home: Path, project: Path) -> None:
    async def body(session: ClientSession) -> None:
        hello = await session.initialize()  # the handshake's answer, kept by the session
        assert hello.server_info.name == "tasktrail" and hello.server_info.version
        assert hello.instructions and "resume_task" in hello.instructions
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 60, tool.name
            # prose for an agent: no source indentation or line breaks, no command-line flags
            assert "\n" not in tool.description and "  " not in tool.description, tool.name
            assert not re.search(r"(?<!\w)--\w", tool.description), tool.name
            assert tool.input_schema["type"] == "object"
            for name, prop in tool.input_schema["properties"].items():
                assert prop.get("description"), f"{tool.name}.{name} has no description"
        record = tools["record"].input_schema
        assert record["required"] == ["kind"]
        assert record["properties"]["kind"]["enum"] == KINDS
        assert {"text", "wrong", "reason", "rejected", "replaces", "outcome", "label", "note", "task",
                "project"} <= set(record["properties"])
        assert "ctx" not in record["properties"]
        assert json.dumps(record["properties"]["outcome"]).count("failed") == 1
        budget = tools["resume_task"].input_schema["properties"]["max_chars"]
        assert (budget["default"], budget["maximum"]) == (9500, 10000)
        assert tools["replay"].input_schema["required"] == ["at"]
        assert tools["why"].input_schema["required"] == ["target"]
        assert {"types", "limit"} <= set(tools["log"].input_schema["properties"])
        assert tools["resume_task"].annotations is not None and tools["resume_task"].annotations.read_only_hint

    _session(home, project, body)


def test_record_resume_why_log_replay(home: Path, project: Path) -> None:
    (project / "src" / "refresh.py").write_text("RETRIES = 10\n")

    async def body(session: ClientSession) -> None:
        listed = await _ok(session, "list_tasks")
        assert [(t["number"], t["active"]) for t in listed["tasks"]] == [(1, True), (2, False)]
        found = await _ok(session, "find_tasks", words=["rust"])  # the other project's task, by its title
        assert [(t["number"], t["matches"][0]["kind"]) for t in found["tasks"]] == [(2, "title")]
        assert (await _ok(session, "find_tasks", words=["rust", "login"]))["tasks"] == []
        assert "at least one word" in await _fails(session, "find_tasks", words=["  "])
        recent = await _ok(session, "find_tasks", words=["rust"], since="2000-01-01")
        assert [t["number"] for t in recent["tasks"]] == [2]
        assert (await _ok(session, "find_tasks", words=["rust"], since="2999-01-01T00:00Z"))["tasks"] == []
        assert "since 'yesterday': expected an ISO time" in await _fails(session, "find_tasks", words=["rust"],
                                                                          since="yesterday")

        req = await _ok(session, "record", kind="requirement", text="Login must succeed on 3G (2 s RTT)")
        assert (req["task"], req["event"], req["actor"]) == (1, "RequirementStated", "agent:Test-Client")
        await _ok(session, "record", kind="correction", text="The retry loop is in auth/refresh.py",
                  wrong="the global HTTP client")
        dec = await _ok(session, "record", kind="decision", text="Cap refresh retries at 3 with backoff",
                        reason="the server rejects more than 5 rapid retries",
                        rejected=["Raise the client timeout to 30 s", "Circuit breaker"])
        assert dec["event"] == "DecisionRecorded"
        await _ok(session, "record", kind="attempt_start", text="Raise the HTTP client timeout")
        await _ok(session, "record", kind="attempt_end", outcome="failed", reason="the token refresh retries forever")
        await _ok(session, "record", kind="attempt_start", text="Bound the refresh retries")
        await _ok(session, "record", kind="checkpoint", label="before-edit", note="tests red")
        nxt = await _ok(session, "record", kind="next_step", text="Re-run tests/test_login.py on the 3G profile")

        # A file changed through the CLI while the server runs: the server reads the ledger as it is now.
        (project / "src" / "refresh.py").write_text("RETRIES = 3\nBACKOFF = 0.5\n")
        run_trail("changed", "src/refresh.py", home=home, cwd=project, check=True)

        text = await _ok(session, "resume_task")
        for fact in ("Fix login timeout", "Login must succeed on 3G", "The retry loop is in auth/refresh.py",
                     "Cap refresh retries at 3", "the token refresh retries forever",
                     "Re-run tests/test_login.py on the 3G profile"):
            assert fact in text, fact
        assert len(text) <= 9500
        small = await _ok(session, "resume_task", max_chars=300)
        assert len(small) <= 300 and "Re-run tests/test_login.py" in small
        assert "Cap refresh retries" not in small
        assert "Set up a Rust workspace" in await _ok(session, "resume_task", task=2)
        assert "Set up a Rust workspace" in await _ok(session, "resume_task", task="set-up")

        why = await _ok(session, "why", target="src/refresh.py")
        (change,) = why["changes"]
        assert (change["task"], change["path"], change["operation"]) == (1, "src/refresh.py", "created")
        assert change["decision"]["text"] == "Cap refresh retries at 3 with backoff"
        assert change["decision"]["detail"] == "the server rejects more than 5 rapid retries"
        assert change["attempt"]["text"] == "Bound the refresh retries"
        line = await _ok(session, "why", target="refresh.py:2", task=1)
        assert line["line"] == 2 and [c["position"] for c in line["changes"]] == [change["position"]]

        timeline = await _ok(session, "log")
        assert [e["type"] for e in timeline["events"]][:3] == ["TaskOpened", "RequirementStated", "CorrectionMade"]
        assert timeline["events"][-1]["type"] == "FileChanged"
        assert {e["actor"] for e in timeline["events"][1:-1]} == {"agent:Test-Client"}
        decisions = await _ok(session, "log", types=["DecisionRecorded"], full=True)
        assert [e["rejected"] for e in decisions["events"]] == [["Raise the client timeout to 30 s",
                                                                  "Circuit breaker"]]
        assert len((await _ok(session, "log", limit=2))["events"]) == 2

        at = await _ok(session, "replay", at=str(req["position"]))
        assert at["at"] == req["position"] and at["last"] == nxt["position"] + 1
        assert "Login must succeed on 3G" in at["brief"] and "Cap refresh retries" not in at["brief"]
        cp = await _ok(session, "replay", at="checkpoint:before-edit", include_state=True)
        assert cp["state"]["next_step"] is None and "Cap refresh retries" in cp["brief"]
        assert len((await _ok(session, "replay", at="-1", max_chars=250))["brief"]) <= 250

    _session(home, project, body)
    # What the agent recorded over MCP is what `trail resume` shows.
    shown = run_trail("resume", home=home, cwd=project, check=True).stdout
    assert "Cap refresh retries at 3 with backoff" in shown and "Re-run tests/test_login.py" in shown


def test_retitle_task_renames_and_every_read_follows(home: Path, project: Path) -> None:
    async def body(session: ClientSession) -> None:
        done = await _ok(session, "retitle_task", title="  Login times out on 3G  ")
        assert done == {"task": 1, "position": 2, "title": "Login times out on 3G",
                        "previous": "Fix login timeout on slow networks", "changed": True}
        assert (await _ok(session, "retitle_task", title="Login times out on 3G"))["changed"] is False
        listed = await _ok(session, "list_tasks")
        assert [t["title"] for t in listed["tasks"]] == ["Login times out on 3G", "Set up a Rust workspace"]
        found = await _ok(session, "find_tasks", words=["3G"])
        assert [(t["number"], t["title"]) for t in found["tasks"]] == [(1, "Login times out on 3G")]
        assert (await _ok(session, "resume_task")).startswith("# Task #1 Login times out on 3G [")
        assert await _fails(session, "retitle_task", title=" ") == "title: give a title that is not blank"
        assert await _fails(session, "retitle_task", title="x", task=99) == "no task #99 (list_tasks shows them)"
        timeline = await _ok(session, "log")
        assert timeline["events"][-1]["type"] == "TaskRetitled"
        assert timeline["events"][-1]["actor"] == "agent:Test-Client"

    _session(home, project, body)
    assert run_here("verify", home=home).returncode == 0


def test_bad_arguments_are_tool_errors_and_the_server_goes_on(home: Path, project: Path) -> None:
    async def body(session: ClientSession) -> None:
        # Each error names the tool to use, never the CLI command (an agent on MCP has no `trail attempt`).
        assert await _fails(session, "resume_task", task=99) == "no task #99 (list_tasks shows them)"
        assert "no task matches 'nope'" in await _fails(session, "record", kind="note", text="x", task="nope")
        assert await _fails(session, "record", kind="attempt_end", outcome="succeeded") == (
            "no open attempt to end; start one with record kind attempt_start")
        await _ok(session, "record", kind="attempt_start", text="Try one thing")
        assert (await _fails(session, "record", kind="attempt_start", text="Try another")).endswith(
            "is still open; end it first with record kind attempt_end")
        assert "reason: required" in await _fails(session, "record", kind="attempt_end", outcome="failed")
        assert "no requirement at position 1" in await _fails(session, "record", kind="requirement", text="x",
                                                              replaces=1)
        assert await _fails(session, "record", kind="bogus", text="x") == (
            "kind: Input should be " + ", ".join(f"'{k}'" for k in KINDS[:-1]) + f" or '{KINDS[-1]}'"
        )
        assert "text: required for a decision record" in await _fails(session, "record", kind="decision")
        assert "wrong: not a field of a note record" in await _fails(session, "record", kind="note", text="x",
                                                                    wrong="y")
        assert "text: text must not be empty" in await _fails(session, "record", kind="note", text="   ")
        assert "max_chars:" in await _fails(session, "resume_task", max_chars=20_000)
        assert "is past the end" in await _fails(session, "replay", at="500")
        assert "expected a position" in await _fails(session, "replay", at="yesterday-ish")
        assert "types Nope: unknown event type" in await _fails(session, "log", types=["Nope"])
        assert "line numbers start at 1" in await _fails(session, "why", target="src/a.py:0")
        assert "Unknown tool" in _text(await session.call_tool("no_such_tool", {}))
        # Still serving, and nothing was appended by the calls that failed.
        log = await _ok(session, "log")
        assert [e["type"] for e in log["events"]] == ["TaskOpened", "AttemptStarted"]

    _session(home, project, body)


def test_query_answers_sql_in_the_sandbox(home: Path, project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("token\ncanary-7f3a9c\n")
    made = tmp_path / "made.csv"

    async def body(session: ClientSession) -> None:
        await _ok(session, "record", kind="decision", text="Cap refresh retries at 3", reason="server limit")
        found = await _ok(session, "query", sql="SELECT number, title, status, opened_at FROM tasks ORDER BY number")
        assert found["columns"] == ["number", "title", "status", "opened_at"] and not found["truncated"]
        assert [(r["number"], r["title"], r["status"]) for r in found["rows"]] == [
            (1, "Fix login timeout on slow networks", "active"), (2, "Set up a Rust workspace", "active")]
        assert found["rows"][0]["opened_at"].startswith("20")  # a time, as ISO text
        # What the agent records is in the next query: the read model catches up first.
        decided = await _ok(session, "query", sql="SELECT text, reason, rejected, payload FROM decisions "
                                                  "JOIN events USING (task_id, position)")
        assert [(r["text"], r["reason"], r["rejected"]) for r in decided["rows"]] == [
            ("Cap refresh retries at 3", "server limit", [])]
        odd = await _ok(session, "query", sql="SELECT 1.50::DECIMAL(4,2) AS d, INTERVAL 36 HOUR AS i, "
                                              "'\\xFF\\x00'::BLOB AS b, "
                                              "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID AS u")
        assert odd["rows"] == [{"d": "1.50", "i": "1 day, 12:00:00", "b": "ff00",
                                "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"}]
        one = await _ok(session, "query", sql="SELECT * FROM events ORDER BY notification_id", limit=1)
        assert len(one["rows"]) == 1 and one["truncated"] and one["rows"][0]["type"] == "TaskOpened"
        assert "Permission Error: Cannot access file" in await _fails(
            session, "query", sql=f"SELECT * FROM read_csv('{secret}')")
        assert "Permission Error" in await _fails(session, "query", sql=f"COPY (SELECT 1) TO '{made}'")
        assert "configuration has been locked" in await _fails(session, "query",
                                                               sql="SET lock_configuration = false")
        assert "read-only mode" in await _fails(session, "query", sql="DELETE FROM events")
        assert "Parser Error" in await _fails(session, "query", sql="SELEC 1")
        assert "limit:" in await _fails(session, "query", sql="SELECT 1", limit=0)
        # Still serving, the model unharmed.
        assert (await _ok(session, "query", sql="SELECT count(*) AS n FROM events"))["rows"] == [{"n": 3}]

    _session(home, project, body)
    assert not made.exists()


def test_a_project_without_a_task_gets_none(home: Path, project: Path, tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    (lonely / ".git").mkdir(parents=True)

    async def body(session: ClientSession) -> None:
        missing = await _fails(session, "resume_task")
        assert "no active task in " in missing and "`trail" not in missing and "--task" not in missing
        assert missing.endswith("name one with the task argument (list_tasks shows them; a person opens a new one "
                                "with trail start)")
        assert "Fix login timeout" in await _ok(session, "resume_task", project=str(project / "src"))

    _session(home, lonely, body)


def test_without_the_sdk_one_line_names_the_extra(home: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named mcp')\n")
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    env.update(TRAIL_HOME=str(home), PYTHONPATH=f"{shadow.parent}{os.pathsep}{REPO}")
    import subprocess

    proc = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "mcp"], env=env,
                          capture_output=True, text=True, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "trail: trail mcp needs the MCP SDK, which is not installed: pip install 'tasktrail[mcp]'\n"


def test_the_server_lists_its_tools_before_it_loads_the_ledger(home: Path, project: Path) -> None:
    """Claude Code does not wait for a slow server: a model turn could start without tasktrail's tools. The
    handshake and the tool list must not wait for the ledger's libraries, which load on the first tool call.
    The real SDK client talks to a real `trail mcp`, run with -X importtime: every import is written to
    stderr as it happens, so what was imported by the time the tools were listed is on record."""
    log = project.parent / "imports.txt"
    listed: list[str] = []

    async def main() -> None:
        server = _server(home, project)
        server.args = ["-X", "importtime", *server.args]
        with log.open("w") as errors:
            async with stdio_client(server, errlog=errors) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                with anyio.fail_after(60):
                    tools = {t.name for t in (await session.list_tools()).tools}
                    assert tools == TOOLS
                    listed.append(log.read_text())
                    assert "Fix login timeout" in _text(await session.call_tool("resume_task", {}))

    anyio.run(main)
    imported = [line.rsplit("|", 1)[-1].strip() for line in log.read_text().splitlines() if "|" in line]
    before = {line.rsplit("|", 1)[-1].strip() for line in listed[0].splitlines() if "|" in line}
    assert "mcp.server.mcpserver" in before and "ledger.app.recording" in before
    late = {"eventsourcing", "ledger.app.store", "ledger.domain.events", "projections.state", "projections.brief"}
    assert not before & late, sorted(before & late)
    assert late <= set(imported)  # the tool call loaded them


def test_the_budget_the_schemas_name_is_the_briefs() -> None:
    from cli import mcp as server
    from projections import brief

    assert (server.INJECTION_DEFAULT, server.INJECTION_CAP) == (brief.INJECTION_DEFAULT, brief.INJECTION_CAP)


def test_each_tool_call_folds_in_what_hooks_queued_since_the_last(home: Path, project: Path) -> None:
    """Each tool call is a command: its first read of the ledger catches up with the capture inbox, once."""
    from ledger.base.location import inbox_path, resolve
    from ledger.capture import inbox_queue

    inbox = str(inbox_path(resolve()))

    def queued(call: str, command: str) -> None:
        inbox_queue.enqueue(inbox, "claude-code", {
            "session_id": "s-mcp", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": call,
            "tool_input": {"command": command}, "tool_response": {"stdout": "done\n", "stderr": ""},
            "cwd": str(project)})

    async def body(session: ClientSession) -> None:
        queued("toolu_m1", "make first")
        assert "make first" in await _ok(session, "resume_task")
        queued("toolu_m2", "make second")  # while the server runs, as the agent's hook would
        brief = await _ok(session, "resume_task")
        assert "make first" in brief and "make second" in brief

    _session(home, project, body)
    assert not inbox_queue.waiting(resolve())
