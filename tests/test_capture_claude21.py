"""Claude Code 2.1 as it really runs: plans made with TaskCreate/TaskUpdate and the TaskCreated/TaskCompleted
hooks, PostCompact and SubagentStop, failing Bash as PostToolUseFailure, continuation prompts, slash
commands and synthetic replies, and calls of tasktrail's own MCP server.

``fixtures/claude-2.1-tasks.jsonl`` is one session's transcript and ``claude-2.1-tasks-hooks.json`` the
hook payloads of the same session, in the order Claude Code sends them; both are shaped field for field
on what Claude Code 2.1.197 wrote and sent in a real run (``../shared/fixtures/live``, used below when
present): the TaskCreated hook before the TaskCreate call's PostToolUse, TaskCompleted before the
TaskUpdate's, a failing Bash's whole output in ``error``, ``compact_summary`` as the model wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.install import CLAUDE_EVENTS
from ledger.app.store import Ledger
from ledger.capture.agents.claude_code import mapper as claude_code
from ledger.capture.agents.claude_code.mapper import failed_output, hook_items, map_transcript
from ledger.capture.agents.claude_code.tasklist import TaskList, hook_change, tool_change
from ledger.capture.classify import classify, request_text, slash_request
from ledger.capture.items import own_tool
from ledger.capture.jsonl import Lines
from ledger.domain import events as ev
from tests.conftest import SHARED, run_here, run_trail

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the facts read from an agent's records, not the store")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRANSCRIPT = FIXTURES / "claude-2.1-tasks.jsonl"
HOOKS = json.loads((FIXTURES / "claude-2.1-tasks-hooks.json").read_text())
LIVE = SHARED / "fixtures" / "live" / "claude-code-2.1.197-hooks.json"


def _events(ledger: Ledger, number: int = 1) -> list[ev.TaskEvent]:
    return list(ledger.task_events(ledger.task_id(number)))


def _record(e: ev.TaskEvent) -> str:
    assert e.source is not None
    return e.source.record


def _hook(payload: dict[str, Any], home: Path) -> None:
    proc = run_here("hook", "claude-code", home=home, stdin=json.dumps(payload))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


# -- the session through the live hooks, then its transcript -------------------------------------------


def test_the_session_live_then_imported_is_one_set_of_facts(home: Path, ledger: Ledger) -> None:
    for payload in HOOKS:
        _hook(payload, home)
        run_here("list", home=home, check=True)  # a read folds the inbox: the list is restored at each row
    live = _events(ledger)
    plans = [e for e in live if isinstance(e, ev.PlanUpdated)]
    # 3 tasks made and 5 moves, each once: TaskCreated + TaskCreate (and TaskCompleted + TaskUpdate) are one fact.
    assert [_record(p) for p in plans] == [
        "task:1:pending:0", "task:2:pending:0", "task:3:pending:0", "task:1:in_progress:0",
        "task:1:completed:0", "task:2:in_progress:0", "task:2:completed:0", "task:3:in_progress:0",
    ]
    assert [(s.id, s.status) for s in plans[-1].steps] == [("1", "completed"), ("2", "completed"), ("3", "in_progress")]
    state = ledger.state(ledger.task_id(1))
    assert state.next_step == "Add a test for negative numbers" and state.next_step_from == "plan"

    # A failing Bash: "Exit code 1" read, the rest is its output, the hook's duration kept.
    failed = next(e for e in live if isinstance(e, ev.CommandRan) and e.exit_code)
    assert failed.exit_code == 1 and failed.stderr is None and failed.duration_ms == 1347
    assert failed.stdout is not None and failed.stdout.tail.startswith("F ")
    assert "FAILED test_calc.py" in failed.stdout.tail
    assert [(e.duration_ms, e.cwd) for e in live if isinstance(e, ev.CommandRan)] == [(1347, "/work/calc"),
                                                                                       (1098, "/work/calc")]

    # "Carry on with the task." is a reply, `/compact` nothing; the synthetic "No response requested." no last words.
    assert [e.text for e in live if isinstance(e, ev.RequirementStated | ev.RequirementChanged)] == [
        "Fix the add function in calc.py so the tests pass, then add a test for negative numbers."
    ]
    assert not any(isinstance(e, ev.CorrectionMade) for e in live)
    assert [e.text for e in live if isinstance(e, ev.NoteAdded)] == ["user: Carry on with the task."]
    assert state.last_reply is not None
    assert state.last_reply.text == "Recorded the decision; writing test_add_negative next."
    # The record call of tasktrail's own server is the server's to append: no ToolCalled/ToolResult of it.
    assert not any(isinstance(e, ev.ToolCalled | ev.ToolResult) for e in live)
    # PostCompact: the summary as the model is shown it, keyed so the transcript's compaction is the same fact.
    (compaction,) = [e for e in live if isinstance(e, ev.ContextCompacted)]
    assert compaction.trigger == "manual" and compaction.summary is not None
    assert "Pending Tasks: write test_add_negative" in compaction.summary.tail
    assert "<analysis>" not in compaction.summary.tail
    stop = next(e for e in live if isinstance(e, ev.CheckpointMarked) and e.label.startswith("sub-agent stopped"))
    assert stop.label == "sub-agent stopped (general-purpose)"
    assert stop.note == "Read calc.py: add() is the only function."

    run_trail("import", "claude-code", str(TRANSCRIPT), home=home, check=True)
    added = _events(ledger)[len(live):]
    # The import knows the same facts under the same keys: only where the transcript ends is new (no pause:
    # live capture went on after the transcript's last record, so the task's status is live capture's).
    assert [type(e).__name__ for e in added] == ["CheckpointMarked"], [_record(e) for e in added]
    brief = run_here("resume", "1", home=home, check=True).stdout
    assert "## Next step" in brief and "Add a test for negative numbers" in brief
    assert "No response requested" not in brief
    assert "/compact" not in brief and "Carry on with the task." not in brief.split("## Notes")[0]


def test_the_transcript_alone_maps_to_what_the_hooks_give() -> None:
    """The pure mappings side by side: an import of the transcript and the session's hook payloads, mapped
    in one pass, give the same plan, command and compaction facts under the same keys."""
    session = map_transcript(Lines(TRANSCRIPT), TRANSCRIPT.stem)
    tasks = TaskList()
    hooked = [item for row, payload in enumerate(HOOKS) for item in hook_items(payload, row, None, tasks)]

    def keyed(items: list[Any], *types: type) -> list[tuple[str, str]]:
        return [(cls.__name__, fields["source"].record) for cls, fields in items if cls in types]

    kinds = (ev.PlanUpdated, ev.CommandRan, ev.FileChanged, ev.TestResult, ev.ContextCompacted)
    assert keyed(session.items, *kinds) == keyed(hooked, *kinds)
    last = [fields["steps"] for cls, fields in session.items if cls is ev.PlanUpdated][-1]
    assert last == [fields["steps"] for cls, fields in hooked if cls is ev.PlanUpdated][-1]
    replies = [fields["text"] for cls, fields in session.items if cls is ev.AgentReplied]
    assert replies[-1].tail == "Recorded the decision; writing test_add_negative next."


# -- the task list ---------------------------------------------------------------------------------------


def test_task_list_changes_are_counted_so_a_task_done_twice_is_two_facts() -> None:
    tasks = TaskList()
    made = {"task": {"id": "1", "subject": "a"}}
    assert tool_change(tasks, "TaskCreate", {"subject": "a"}, made, "") == "task:1:pending:0"
    assert hook_change(tasks, {"hook_event_name": "TaskCreated", "task_id": "1", "task_subject": "a"}) is None
    assert hook_change(tasks, {"hook_event_name": "TaskCompleted", "task_id": "1", "task_subject": "a"}) == (
        "task:1:completed:0"
    )
    done = {"success": True, "taskId": "1", "updatedFields": ["status"]}
    assert tool_change(tasks, "TaskUpdate", {"taskId": "1", "status": "completed"}, done, "") is None  # same move
    assert tool_change(tasks, "TaskUpdate", {"taskId": "1", "status": "in_progress"}, done, "") == (
        "task:1:in_progress:0"
    )
    assert tool_change(tasks, "TaskUpdate", {"taskId": "1", "status": "completed"}, done, "") == "task:1:completed:1"
    # A failed update, or one of a task never seen made, changes nothing.
    assert tool_change(tasks, "TaskUpdate", {"taskId": "1", "status": "pending"}, {"success": False}, "") is None
    assert tool_change(tasks, "TaskUpdate", {"taskId": "9", "status": "completed"}, done, "") is None
    # Sub-agent transcripts have the text alone; TaskGet states a task whole, so it brings it in.
    got = "Task #9: Research bob\nStatus: in_progress\nDescription: x"
    assert tool_change(tasks, "TaskGet", {"taskId": "9"}, None, got) == "task:9:in_progress:0"
    assert tool_change(tasks, "TaskUpdate", {"taskId": "9", "status": "deleted"}, done, "") == "task:9:deleted:0"
    listed = {"tasks": [{"id": "1", "subject": "a", "status": "completed"}, {"id": "2", "subject": "b",
                                                                             "status": "pending"}]}
    assert tool_change(tasks, "TaskList", {}, listed, "") is True
    assert tool_change(tasks, "TaskList", {}, listed, "") is None  # nothing new
    assert tasks.tasks == {"1": ("a", "completed"), "2": ("b", "pending")}
    # Restored from its keys, a list counts on where it left off.
    again = TaskList(tasks=dict(tasks.tasks))
    for record in ("task:1:pending:0", "task:1:completed:0", "task:1:in_progress:0", "task:1:completed:1"):
        again.seen(record)
    assert again.update("1", "in_progress") == "task:1:in_progress:1"


def test_a_list_carried_over_from_another_session_is_dropped_when_ids_start_again() -> None:
    carried = TaskList(tasks={"1": ("old", "completed"), "2": ("older", "pending")}, inherited=True)
    assert carried.update("2", "in_progress") == "task:2:in_progress:0"  # the same list, continued
    fresh = TaskList(tasks={"1": ("old", "completed"), "2": ("older", "pending")}, inherited=True)
    assert fresh.create("1", "new") == "task:1:pending:0" and fresh.tasks == {"1": ("new", "pending")}


def test_a_sub_agent_file_leaves_the_plan_alone() -> None:
    """A sub-agent's transcript cannot know the list it updates; the main file's updates carry the move."""
    lines = [json.loads(line) for line in TRANSCRIPT.read_text().splitlines()]
    for record in lines:
        record["agentId"] = "a1affb17dd0ae625f"
    numbered = [(i, json.dumps(r)) for i, r in enumerate(lines, 1)]
    session = map_transcript(numbered, "agent-a1affb17dd0ae625f")
    assert session.is_subagent and not any(cls is ev.PlanUpdated for cls, _ in session.items)


def test_an_away_summary_is_a_note_without_the_settings_hint() -> None:
    """Claude Code ends each recap with how to turn recaps off: that is its interface, not what the session did."""
    said = "Merged all three into master; round 2 is in flight."
    lines = [json.dumps({"type": "system", "subtype": "away_summary", "content": f"{said} (disable recaps in /config)",
                         "uuid": "u1", "sessionId": "s1", "timestamp": "2026-04-18T13:37:53.028Z"}),
             json.dumps({"type": "system", "subtype": "away_summary", "content": " (disable recaps in /config)",
                         "uuid": "u2", "sessionId": "s1", "timestamp": "2026-04-18T13:38:53.028Z"})]
    session = map_transcript(list(enumerate(lines, 1)), "s1")
    notes = [data["text"] for cls, data in session.items if cls is ev.NoteAdded]
    assert notes == [said]  # the hint alone is no note at all


# -- failing Bash -----------------------------------------------------------------------------------------


def test_a_failure_s_exit_code_is_read_bounded() -> None:
    assert failed_output("Exit code 2\nboom") == (2, "boom")
    assert failed_output("Error: Exit code 127\n/bin/sh: nope: not found") == (127, "/bin/sh: nope: not found")
    assert failed_output("Exit code -1") == (-1, "")
    assert failed_output("Exit code 99999999999\nx") == (1, "x")  # beyond any real exit: failed, code not believed
    assert failed_output("Exit code " + "9" * 5000 + "\nx") == (1, "x")  # no int() of 5,000 digits
    assert failed_output("Exit code 12abc") == (1, "Exit code 12abc")  # not the header: all output
    assert failed_output("permission denied") == (1, "permission denied")  # 1.0.x: no code given


def test_a_huge_exit_code_or_duration_in_a_hook_lands_as_a_failure(home: Path, ledger: Ledger) -> None:
    _hook({**HOOKS[1]}, home)  # the session's first prompt opens the task
    failure = {"session_id": HOOKS[1]["session_id"], "cwd": HOOKS[1]["cwd"], "hook_event_name": "PostToolUseFailure",
               "tool_name": "Bash", "tool_use_id": "toolu_huge", "tool_input": {"command": "make"},
               "error": "Exit code " + "7" * 5000 + "\nmake: *** [all] Error 7", "duration_ms": 10**40}
    _hook(failure, home)
    run_here("list", home=home, check=True)
    (command,) = [e for e in _events(ledger) if isinstance(e, ev.CommandRan)]
    assert command.exit_code == 1 and command.duration_ms is None
    assert command.stdout is not None and command.stdout.tail == "make: *** [all] Error 7"


# -- prompts that are not requests, replies that are not the agent's -----------------------------------------


@pytest.mark.parametrize("text", [
    "Carry on with the task.", "continue", "Continue.", "keep going", "please continue where you left off",
    "go on", "resume the task", "Continue with the plan", "proceed with the next step", "ok, carry on",
    "What is left?", "what's next?", "where are we", "Are we done?",
])
def test_a_nudge_to_go_on_is_a_reply_even_first(text: str) -> None:
    assert classify(text, first=True) == "reply" and classify(text, first=False) == "reply"


@pytest.mark.parametrize("text", ["did you push?", "Did you run the tests?", "have you committed it?",
                                  "has it merged?", "Have you published the docs?"])
def test_asking_whether_a_step_was_taken_is_a_reply_even_after_an_interrupt(text: str) -> None:
    # "did you push?" checks on the agent: no work asked for, nothing it got wrong
    assert classify(text, first=False) == "reply" and classify(text, first=False, after_interrupt=True) == "reply"


@pytest.mark.parametrize("text", ["did you even read the code?", "did you push the fix to prod and tag it",
                                  "Did you run the tests? They fail for me with a timeout in auth"])
def test_pushback_or_a_request_worded_as_did_you_is_not_a_reply(text: str) -> None:
    assert classify(text, first=False) != "reply"


@pytest.mark.parametrize("text", [
    "Continue the refactor by moving parse() into lexer.py", "carry on but use postgres",
    "continue with the migration to postgres", "next, fix the parser", "What is left to do in the parser module?",
])
def test_going_on_with_named_work_is_a_request(text: str) -> None:
    assert classify(text, first=False) == "requirement"


@pytest.mark.parametrize(("text", "asked"), [
    ("/compact", None),  # as the hook's prompt has it
    ("/compact keep the API notes", None),  # a session command, whatever its arguments
    ("<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n"
     "            <command-args></command-args>", None),  # as the transcript has it
    ("/orchestrator create TODO app", "/orchestrator create TODO app"),
    ("<command-name>/orchestrator</command-name>\n<command-message>orchestrator</command-message>\n"
     "<command-args>create TODO app</command-args>", "/orchestrator create TODO app"),  # the same text: one key
    ("/review", None),  # no arguments: no work named
    ("<local-command-stdout>Compacted </local-command-stdout>", None),
    ("Caveat: The messages below were generated by the user while running local commands. DO NOT respond", None),
    ("<user_instructions>\nbe terse\n</user_instructions>", None),  # Codex's injected context
    ("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>", None),
    ("<turn_aborted>\nThe user interrupted\n</turn_aborted>", None),
    ("/usr/bin/python3 is missing, install it", "/usr/bin/python3 is missing, install it"),  # a path, not a command
    ("Fix the add function", "Fix the add function"),
])
def test_what_a_prompt_asks_for(text: str, asked: str | None) -> None:
    assert request_text(text) == asked
    if text.startswith("/") and " " not in text:
        assert slash_request(text) == ""


def test_own_mcp_tools_are_not_captured_twice() -> None:
    assert own_tool("mcp__tasktrail__record") and own_tool("mcp__trail__resume_task")
    assert not own_tool("mcp__github__record") and not own_tool("mcp__tasktrail__other") and not own_tool("Bash")


# -- the real payloads of Claude Code 2.1.197 (../shared, when present) -------------------------------------------


@pytest.fixture
def live() -> list[dict[str, Any]]:
    if not LIVE.exists():
        pytest.skip(f"{LIVE} is not here")
    payloads: list[dict[str, Any]] = json.loads(LIVE.read_text())
    return payloads


def test_every_event_the_real_agent_sent_with_a_fact_is_installed(live: list[dict[str, Any]]) -> None:
    tasks: dict[str, TaskList] = {}
    for payload in live:
        event = payload["hook_event_name"]
        if event in ("PreToolUse", "PostToolBatch"):
            continue  # before the tool ran / the batch's calls again: nothing PostToolUse does not carry
        assert event in CLAUDE_EVENTS, event
        mapped = hook_items(payload, 1, None, tasks.setdefault(payload["session_id"], TaskList()))
        # Nothing new: the TaskCreated hook before it carried the change; the server appended the record itself;
        # the compaction's summariser stopping (its words come with PostCompact).
        again = payload.get("tool_name") == "TaskCreate" or own_tool(str(payload.get("tool_name"))) or (
            event == "SubagentStop" and not payload.get("agent_type"))
        assert mapped or event in ("SessionStart", "UserPromptSubmit") or again, payload


def test_the_real_payloads_replayed_give_a_brief_with_the_plan(live: list[dict[str, Any]], home: Path,
                                                               ledger: Ledger, tmp_path: Path) -> None:
    run = tmp_path / "run"
    for payload in live:
        _hook(json.loads(json.dumps(payload).replace("RUN/", f"{run}/")), home)
    run_here("list", home=home, check=True)  # folds in what came after the last SessionStart
    events = _events(ledger)
    plans = [e for e in events if isinstance(e, ev.PlanUpdated)]
    # TaskCreated(1) then TaskCreate's PostToolUse: one; the batch's other two calls (the recording kept one
    # PostToolUse of each tool, their PostToolBatch all three); TaskUpdate(1 in_progress); TaskCompleted(2).
    assert [_record(p) for p in plans] == [
        "task:1:pending:0", "task:2:pending:0", "task:3:pending:0", "task:1:in_progress:0", "task:2:completed:0"
    ]
    assert [(s.text, s.status) for s in plans[-1].steps] == [
        ("Reproduce the failing test", "in_progress"), ("Fix add() in calc.py", "completed"),
        ("Add a test for negative numbers", "pending"),
    ]
    state = ledger.state(ledger.task_id(1))
    assert state.next_step == "Reproduce the failing test"
    failed = next(e for e in events if isinstance(e, ev.CommandRan) and e.exit_code)
    assert failed.exit_code == 1 and failed.duration_ms == 1347 and failed.stdout is not None
    assert "FAILED test_calc.py::test_add" in failed.stdout.tail and failed.stderr is None
    assert not any(isinstance(e, ev.ToolCalled) and e.tool.startswith("mcp__tasktrail__") for e in events)
    (compaction,) = [e for e in events if isinstance(e, ev.ContextCompacted)]
    assert compaction.summary is not None and "Recorded the decision" in compaction.summary.tail
    # The SubagentStop during /compact is Claude Code's summariser (no agent_type): its words are the summary's.
    assert not any(isinstance(e, ev.CheckpointMarked) and e.label.startswith("sub-agent") for e in events)
    assert state.last_reply is not None and state.last_reply.text.startswith("Fixed add() in calc.py")
    brief = run_here("resume", "1", home=home, check=True).stdout
    assert "(none recorded)" not in brief and "Reproduce the failing test" in brief


def test_a_real_2_1_transcript_with_a_task_list_and_sub_agents(home: Path, ledger: Ledger) -> None:
    root = SHARED / "fixtures" / "claude-code"
    files = sorted(root.glob("worktrees-teammates-ef958aa1*.jsonl")) if root.exists() else []
    if not files:
        pytest.skip("the 2.1.114 teammates transcripts are not here")
    run_trail("import", "claude-code", *map(str, files), home=home, check=True)
    plans = [e for e in _events(ledger) if isinstance(e, ev.PlanUpdated)]
    records = [_record(p) for p in plans]
    assert len(records) == len(set(records)) and all(r.startswith("task:") or r.endswith("#plan") for r in records)
    # Six tasks made, each started and finished (bob's by his own sub-agent, seen by the lead's update).
    assert [(s.id, s.status) for s in plans[-1].steps] == [(str(i), "completed") for i in range(1, 7)]
    assert plans[-1].steps[0].text == "Research plan mode (alice)"
    midway = next(p for p in plans if _record(p) == "task:5:in_progress:0")
    assert midway.actor == claude_code.ACTOR and [s.status for s in midway.steps].count("completed") == 4


def test_a_plan_stored_before_steps_had_ids_reads_through_the_upcast(ledger: Ledger) -> None:
    import orjson
    from eventsourcing.persistence import StoredEvent

    from ledger.domain.mapper import PydanticMapper

    task = ledger.open_task("plans").id
    assert task is not None
    ledger.append(task, ev.PlanUpdated, steps=(ev.PlanStep(text="a", status="pending", id="1"),))
    new = next(e for e in ledger.task_events(task) if isinstance(e, ev.PlanUpdated))
    mapper = ledger.mapper
    assert isinstance(mapper, PydanticMapper)
    stored = mapper.to_stored_event(new)
    state = orjson.loads(stored.state)
    assert state.pop("class_version") == 2
    state["steps"] = [{"text": "a", "status": "pending"}]  # as version 1 wrote it
    old = mapper.to_domain_event(StoredEvent(stored.originator_id, stored.originator_version, stored.topic,
                                             orjson.dumps(state)))
    assert isinstance(old, ev.PlanUpdated) and old.steps == (ev.PlanStep(text="a", status="pending"),)


# -- PowerShell (Claude Code on Windows) -----------------------------------------------------------------


def _powershell_session() -> tuple[list[str], list[dict[str, Any]]]:
    """A Windows session's transcript lines and the hook payloads of the same two PowerShell calls, shaped on
    real 2.1.209 sessions (Bash's input and result shapes; "Exit code N" leads a failure's text)."""
    sid, cwd = "5e55b0a2-0000-4000-8000-00000000d00d", "D:\\proj"
    failing = ("Exit code 1\n--- FAIL: TestInit (0.00s)\n    init_test.go:12: wrong shell\nFAIL\n"
               "FAIL\tproj/shell\t0.01s\nFAIL")
    calls = [("toolu_ps1", "cd D:\\proj\\src; go test ./shell/...", True, failing),
             ("toolu_ps2", "cd D:\\proj\\src; go test ./shell/...", False, "ok  \tproj/shell\t0.02s")]
    base = {"sessionId": sid, "cwd": cwd, "version": "2.1.209", "userType": "external", "isSidechain": False}
    lines = [json.dumps({**base, "type": "user", "uuid": "u0", "parentUuid": None, "timestamp": "2026-07-10T10:00:00Z",
                         "message": {"role": "user", "content": "make the shell tests pass"}})]
    hooks: list[dict[str, Any]] = []
    parent = "u0"
    for n, (call_id, command, failed, text) in enumerate(calls):
        use = {"type": "tool_use", "id": call_id, "name": "PowerShell", "input": {"command": command}}
        lines.append(json.dumps({**base, "type": "assistant", "uuid": f"a{n}", "parentUuid": parent,
                                 "timestamp": f"2026-07-10T10:0{n}:01Z",
                                 "message": {"role": "assistant", "content": [use]}}))
        result = text if failed else {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
        lines.append(json.dumps({**base, "type": "user", "uuid": f"r{n}", "parentUuid": f"a{n}",
                                 "timestamp": f"2026-07-10T10:0{n}:02Z", "toolUseResult":
                                 f"Error: {text}" if failed else result,
                                 "message": {"role": "user", "content": [{"type": "tool_result",
                                             "tool_use_id": call_id, "content": text, "is_error": failed}]}}))
        parent = f"r{n}"
        hook = {"session_id": sid, "transcript_path": f"C:\\Users\\u\\.claude\\projects\\D--proj\\{sid}.jsonl",
                "cwd": cwd, "tool_name": "PowerShell", "tool_input": {"command": command}, "tool_use_id": call_id}
        hooks.append({**hook, "hook_event_name": "PostToolUseFailure", "error": text, "is_interrupt": False}
                     if failed else {**hook, "hook_event_name": "PostToolUse", "tool_response": result})
    return lines, hooks


def test_powershell_calls_are_commands_with_their_exits_and_tests_on_both_paths(tmp_path: Path) -> None:
    """On Windows Claude Code runs commands through its PowerShell tool: each call is a command run with its exit
    code and test result, as a Bash call is (they were generic tool calls: a failing `go test` never reached
    Failing now, nor its later pass Last results), and the hook and the transcript key them the same."""
    lines, hooks = _powershell_session()
    path = tmp_path / "ps.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = map_transcript(Lines(path), path.stem)
    ran = [fields for cls, fields in session.items if cls is ev.CommandRan]
    assert [(f["shell"], f["exit_code"]) for f in ran] == [("cd D:\\proj\\src; go test ./shell/...", 1),
                                                         ("cd D:\\proj\\src; go test ./shell/...", 0)]
    assert not [f for cls, f in session.items if cls is ev.ToolCalled and f.get("tool") == "PowerShell"]
    tests = [fields for cls, fields in session.items if cls is ev.TestResult]
    assert [t["passed"] for t in tests] == [False, True]

    hooked = [item for row, payload in enumerate(hooks) for item in hook_items(payload, row, None)]

    def keyed(items: list[Any]) -> list[tuple[str, str]]:
        return [(cls.__name__, fields["source"].record) for cls, fields in items
                if cls in (ev.CommandRan, ev.TestResult)]

    assert keyed(session.items) == keyed(hooked)
    assert [f["exit_code"] for cls, f in hooked if cls is ev.CommandRan] == [1, 0]


# -- background sub-agents (2.1.332) ---------------------------------------------------------------------

BG_SESSION = "77d87a0c-9e29-40e1-9234-5c2d0ae1e6ca"
BG_AGENT = "ae17205ab7a8fa87e"
BG_CALL = "toolu_b3eda2cfe30010"
BG_REPORT = "calc.py: add() subtracts <b> & returns a - b.\n\nSecond paragraph."
BG_TASKS = f"/tmp/claude-0/-work-calc/{BG_SESSION}/tasks"


def _notice(agent: str, call: str, result: str, summary: str = 'Agent "Look at calc.py" finished') -> str:
    """A ``<task-notification>`` as 2.1.332 writes it: the report XML-escaped in ``<result>``."""
    escaped = result.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return (f"<task-notification>\n<task-id>{agent}</task-id>\n<tool-use-id>{call}</tool-use-id>\n"
            f"<output-file>{BG_TASKS}/{agent}.output</output-file>\n<status>completed</status>\n"
            f"<summary>{summary}</summary>\n<note>A task-notification fires each time this agent stops with no live "
            "background children of its own. The user can send it another message and resume it, so the same "
            f"task-id may notify more than once.</note>\n<result>{escaped}</result>\n<usage><subagent_tokens>10695"
            "</subagent_tokens><tool_uses>0</tool_uses><duration_ms>1777</duration_ms></usage>\n</task-notification>")


def _background_agent_session(mid_turn: bool) -> tuple[list[str], list[dict[str, Any]]]:
    """One background sub-agent's launch and report, the transcript lines and the hook payloads, shaped field for
    field on what the real Claude Code 2.1.332 wrote and sent against the e2e suite's scripted model (the lines
    trimmed to the fields that matter, their names and values as written): the ``Agent`` call's result says only
    "Async agent launched" (``toolUseResult.isAsync``, ``agentId``); the notice is queued as the sub-agent stops
    (``queue-operation`` enqueue), then given as a user line of its own once the main turn ended (origin
    ``task-notification``), or, when the sub-agent stopped during a tool call (``mid_turn``), taken off the queue
    (``remove``, ``absorbed_mid_turn``) and given as a ``queued_command`` attachment after the tool result. The
    SubagentStop payload carries the agent's id and type and its last message, unescaped."""
    base = {"sessionId": BG_SESSION, "cwd": "/work/calc", "version": "2.1.332", "userType": "external",
            "entrypoint": "sdk-cli", "isSidechain": False, "gitBranch": "master"}
    notice = _notice(BG_AGENT, BG_CALL, BG_REPORT)
    agent_input = {"description": "Look at calc.py", "prompt": "Read calc.py and report what add() does.",
                   "subagent_type": "general-purpose"}
    launched = {"isAsync": True, "status": "async_launched", "agentId": BG_AGENT, "description": "Look at calc.py",
                "resolvedModel": "claude-opus-5-5", "prompt": agent_input["prompt"],
                "outputFile": f"{BG_TASKS}/{BG_AGENT}.output", "canReadOutputFile": True, "canContinueAgent": True}
    launch_text = (f"Async agent launched successfully.\nagentId: {BG_AGENT} (internal ID - do not mention to user.)\n"
                   "The agent is working in the background. You will be notified automatically when it completes.")

    def line(kind: str, uuid: str, parent: str | None, ts: str, **fields: Any) -> str:
        return json.dumps({**base, "type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": ts, **fields})

    def said(uuid: str, parent: str, ts: str, *blocks: dict[str, Any]) -> str:
        return line("assistant", uuid, parent, ts, message={"id": f"msg_{uuid}", "type": "message", "role": "assistant",
                                                            "model": "claude-opus-5-5", "content": list(blocks)})

    def queue(operation: str, ts: str, **fields: Any) -> str:
        return json.dumps({"type": "queue-operation", "operation": operation, "timestamp": ts, "sessionId": BG_SESSION,
                           **fields})

    def result(uuid: str, parent: str, ts: str, call: str, text: str, outcome: Any) -> str:
        return line("user", uuid, parent, ts, toolUseResult=outcome, sourceToolAssistantUUID=parent,
                    message={"role": "user", "content": [{"tool_use_id": call, "type": "tool_result",
                                                          "content": [{"type": "text", "text": text}]}]})

    lines = [
        queue("enqueue", "2026-12-02T16:33:43.100Z", content="Use a sub-agent to look at calc.py."),
        queue("dequeue", "2026-12-02T16:33:43.101Z"),
        line("user", "u1", None, "2026-12-02T16:33:43.200Z", promptSource="sdk",
             message={"role": "user", "content": "Use a sub-agent to look at calc.py."}),
        said("a1", "u1", "2026-12-02T16:33:43.508Z",
             {"type": "tool_use", "id": BG_CALL, "name": "Agent", "input": agent_input}),
        result("r1", "a1", "2026-12-02T16:33:44.067Z", BG_CALL, launch_text, launched),
    ]
    if mid_turn:
        sleep = {"type": "tool_use", "id": "toolu_b3eda2cfe30040", "name": "Bash",
                 "input": {"command": "sleep 3", "description": "wait"}}
        lines += [
            said("a2", "r1", "2026-12-02T16:33:45.046Z", sleep),
            queue("enqueue", "2026-12-02T16:33:45.347Z", content=notice),
            result("r2", "a2", "2026-12-02T16:33:48.505Z", "toolu_b3eda2cfe30040", "(Bash completed with no output)",
                   {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False}),
            queue("remove", "2026-12-02T16:33:48.686Z", content=notice, reason="absorbed_mid_turn"),
            line("attachment", "q1", "r2", "2026-12-02T16:33:45.347Z", attachment={
                "type": "queued_command", "prompt": notice, "commandMode": "task-notification",
                "origin": {"kind": "task-notification", "producer": "session-task"}, "rowSource": "recorded"}),
            said("a3", "q1", "2026-12-02T16:33:48.723Z", {"type": "text", "text": "Both reported."}),
        ]
    else:
        lines += [
            queue("enqueue", "2026-12-02T16:33:45.253Z", content=notice),
            said("a2", "r1", "2026-12-02T16:33:45.258Z", {"type": "text", "text": "Launched the sub-agent."}),
            line("system", "s1", "a2", "2026-12-02T16:33:45.490Z", subtype="stop_hook_summary", hookCount=1),
            queue("dequeue", "2026-12-02T16:33:45.497Z"),
            line("user", "u2", "s1", "2026-12-02T16:33:45.502Z", promptSource="system", turnOrigin="task_notification",
                 origin={"kind": "task-notification", "producer": "session-task"},
                 message={"role": "user", "content": notice}),
            said("a3", "u2", "2026-12-02T16:33:45.963Z", {"type": "text", "text": "The sub-agent reported back."}),
        ]
    hook = {"session_id": BG_SESSION, "transcript_path": f"/home/u/.claude/projects/-work-calc/{BG_SESSION}.jsonl",
            "cwd": "/work/calc", "permission_mode": "bypassPermissions"}
    hooks = [
        {**hook, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-opus-5-5"},
        {**hook, "hook_event_name": "UserPromptSubmit", "prompt": "Use a sub-agent to look at calc.py."},
        {**hook, "hook_event_name": "PostToolUse", "tool_name": "Agent", "tool_input": agent_input,
         "tool_response": launched, "tool_use_id": BG_CALL, "duration_ms": 47},
        {**hook, "hook_event_name": "SubagentStop", "agent_id": BG_AGENT, "agent_type": "general-purpose",
         "stop_hook_active": False, "last_assistant_message": BG_REPORT,
         "agent_transcript_path": f"/home/u/.claude/projects/-work-calc/{BG_SESSION}/subagents/agent-{BG_AGENT}.jsonl",
         "background_tasks": [{"id": BG_AGENT, "type": "subagent", "status": "running",
                               "description": "Look at calc.py", "agent_type": "general-purpose"}]},
        {**hook, "hook_event_name": "Stop", "stop_hook_active": False,
         "last_assistant_message": "Both reported." if mid_turn else "Launched the sub-agent."},
    ]
    return lines, hooks


def _stops(items: list[Any]) -> list[tuple[str, str | None, str, str]]:
    return [(f["label"], f["note"], f["actor"], f["source"].record) for cls, f in items
            if cls is ev.CheckpointMarked and f["label"].startswith("sub-agent stopped")]


@pytest.mark.parametrize("mid_turn", [False, True], ids=["a-turn-of-its-own", "mid-turn"])
def test_a_background_sub_agents_report_is_imported_as_the_stop_the_hook_gives(mid_turn: bool) -> None:
    """2.1.332's Agent result says only that the sub-agent was launched; its report comes in the notification. The
    import makes of it the stop SubagentStop gives live: the same label (the type from the call), the report
    (unescaped) as note, the same actor and key, once though the notice is written when queued and when given."""
    lines, hooks = _background_agent_session(mid_turn)
    session = map_transcript(list(enumerate(lines, 1)), BG_SESSION)
    hooked = [item for row, payload in enumerate(hooks, 1) for item in hook_items(payload, row, None)]
    stop = ("sub-agent stopped (general-purpose)", BG_REPORT, f"agent:claude-code/{BG_AGENT}")
    assert [s[:3] for s in _stops(session.items)] == [stop]
    assert _stops(session.items) == _stops(hooked)
    assert _stops(hooked)[0][3].startswith(f"subagent:{BG_AGENT}:")  # no longer the hook's inbox row
    # the launch is still the call's result; the notice is nobody's request
    (launch,) = [f for cls, f in session.items if cls is ev.ToolResult and f["tool"] == "Agent"]
    assert launch["output"].tail.startswith("Async agent launched")
    assert not [f for cls, f in session.items if cls in (ev.RequirementStated, ev.RequirementChanged, ev.NoteAdded)
                and "task-notification" in str(f.get("text"))]


def test_a_background_sub_agent_live_then_imported_is_one_stop(home: Path, ledger: Ledger, tmp_path: Path) -> None:
    lines, hooks = _background_agent_session(mid_turn=False)
    for payload in hooks:
        _hook(payload, home)
    run_here("list", home=home, check=True)
    live = [e for e in _events(ledger) if isinstance(e, ev.CheckpointMarked) and e.label.startswith("sub-agent")]
    assert [(e.label, e.note) for e in live] == [("sub-agent stopped (general-purpose)", BG_REPORT)]
    path = tmp_path / f"{BG_SESSION}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    run_trail("import", "claude-code", str(path), home=home, check=True)
    after = [e for e in _events(ledger) if isinstance(e, ev.CheckpointMarked) and e.label.startswith("sub-agent")]
    assert [(e.note, _record(e)) for e in after] == [(BG_REPORT, _record(live[0]))]


def test_only_a_sub_agents_notices_are_stops_and_a_second_report_is_a_second_stop() -> None:
    """A background command's notice is the command's (``background``); an agent resumed with SendMessage notifies
    again under the same task id, with its new report: a second stop. A hook payload without the agent's id
    (before ``agent_id`` was sent) keeps the inbox row as its key."""
    lines, _ = _background_agent_session(mid_turn=False)
    base = {"sessionId": BG_SESSION, "cwd": "/work/calc", "version": "2.1.332", "isSidechain": False}
    more = [
        _notice("bd0afab", "toolu_bash1", "", summary='Background command "npm test" completed (exit code 0)'),
        _notice(BG_AGENT, BG_CALL, "Also: test_calc.py expects 5."),
    ]
    lines += [json.dumps({**base, "type": "user", "uuid": f"n{i}", "timestamp": f"2026-12-02T16:40:0{i}Z",
                          "message": {"role": "user", "content": text}}) for i, text in enumerate(more)]
    session = map_transcript(list(enumerate(lines, 1)), BG_SESSION)
    assert [note for _, note, _, _ in _stops(session.items)] == [BG_REPORT, "Also: test_calc.py expects 5."]
    assert len({record for *_, record in _stops(session.items)}) == 2
    old = {"session_id": BG_SESSION, "hook_event_name": "SubagentStop", "agent_type": "general-purpose",
           "last_assistant_message": "done"}
    assert [record for *_, record in _stops(hook_items(old, 7, None))] == ["hook:7"]
