"""Claude Code 2.1.332 end to end: the real program, tasktrail installed as a user installs it, a scripted model.

The version is the one ``tests.e2e.agents`` pins (2.1.332, 2026-11-24); 2.1.197 (the pin before it) differs where
the tests say so. One multi-session flow runs once per test session (``flow``) in a git repository made here,
with its own HOME and TRAIL_HOME; the tests then assert on what it left: the ledger (``trail resume --json``,
``trail log --json``) and every request the model received (``tests.e2e.anthropic``). The sessions, in order:

1. ``plan``: a new session (``CLAUDE_CODE_ENABLE_TODO_TOOLS=1``: 2.1.332 offers its default model no plan tool
   otherwise) loads TaskCreate/TaskUpdate with ToolSearch (2.1.332 defers them) beside two sub-agents, one in
   the background (2.1.332's default: its report, held by the scripted model until the turn's closing request,
   comes in a ``<task-notification>`` after it) and one in the foreground (``run_in_background: false``: its
   report is the call's result), plans, runs a failing pytest, reads and edits calc.py, runs pytest again
   (passing), stops with one plan step left, and answers the notification;
2. ``todo``: a new session (``CLAUDE_CODE_ENABLE_TASKS=0`` as well, so it offers TodoWrite), which plans with
   TodoWrite, writes a test file, runs pytest, records a decision through tasktrail's MCP ``record`` and
   leaves a step in progress;
3. ``carry_on``: ``--continue`` with "Carry on with the task.", whose Bash commands write README.md and a
   scratch file and edit test_calc.py, then move the scratch file and delete it (2.1.332 reports each file in
   the result's ``bashEditDiff``);
4. ``compact``: ``-p /compact --continue``;
5. ``after_compact``: ``--continue`` again, the first turn after the compaction (no plan tool opted in);
6. then ``trail import claude-code`` of the transcripts Claude Code wrote, into the same ledger.

Where tasktrail was wrong (issue 19) the test asserted the right behaviour under ``xfail(strict=True)``; the
Claude Code capture fixes made them pass, so the marks are gone.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_here
from tests.e2e import anthropic, flows, sandbox
from tests.e2e.anthropic import injected, tool_results, tool_uses
from tests.e2e.flows import events, next_step_section

REQUIREMENT = "Fix the add function in calc.py so the tests pass, then add a test for negative numbers."
PLAN = [("Reproduce the failing test", "Reproducing the failing test"),
        ("Fix add() in calc.py", "Fixing add()"),
        ("Add a test for negative numbers", "Adding a negative-number test")]
README_STEP = "Document add() in the README"
DECISION = "Keep add() a pure function"
CARRY_ON = "Carry on with the task."
README_COMMAND = ("printf 'add(a, b) returns a + b.\\n' > README.md && printf 'draft\\n' > notes.txt"
                  " && sed -i '1i # add() is documented in README.md' test_calc.py")
"""One shell line that creates files and edits another: no edit tool, so only 2.1.332's ``bashEditDiff`` says so."""
SHELL_MOVES = ["mv notes.txt NOTES.md", "rm NOTES.md"]
"""A rename and a delete the line itself names (``shell_effects``) that ``bashEditDiff`` shows too."""
NEGATIVE_TEST = "from calc import add\n\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n"
BACKGROUND_REPORT = "add() in calc.py subtracts: `return a - b` (background <sub-agent> report e2e-b4c2)."
"""What the background sub-agent says (``<``/``>``, which the notification escapes, on purpose)."""
FOREGROUND_REPORT = "test_calc.py asserts add(2, 3) == 5 (foreground sub-agent report e2e-f9d1)."
AFTER_NOTICE = "The sub-agent confirms add() subtracted; fixed."
TASK_TOOLS = {"TaskCreate", "TaskUpdate"}
PLAN_TOOLS = {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}
"""2.1.332 offers its default model (claude-opus-5-5) no plan tool; this opts in (TaskCreate…, or TodoWrite)."""


@dataclass
class Session:
    name: str
    args: list[str]
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    """Every request this run's model server received."""
    before: dict[str, Any]
    """``trail resume --json`` right before the run (what its SessionStart should inject)."""
    after: dict[str, Any]
    """``trail resume --json`` right after it."""

    @property
    def id(self) -> str:
        """Claude Code's session id (``--continue`` keeps it: one transcript for the continued sessions)."""
        return str(json.loads(self.stdout.splitlines()[-1])["session_id"])

    @property
    def main(self) -> list[dict[str, Any]]:
        return anthropic.main_requests(self.requests)

    @property
    def first(self) -> dict[str, Any]:
        """The body of the first Messages request of the session, whatever it was for."""
        return next(entry["body"] for entry in self.requests if entry["path"].startswith("/v1/messages"))


@dataclass
class Flow:
    repo: Path
    home: Path
    trail_home: Path
    sessions: dict[str, Session] = field(default_factory=dict)
    live_log: list[dict[str, Any]] = field(default_factory=list)
    """``trail log --json`` after the live sessions, before the import."""
    imported: dict[str, Any] = field(default_factory=dict)
    log: list[dict[str, Any]] = field(default_factory=list)
    """``trail log --json`` after the import."""
    resumed: dict[str, Any] = field(default_factory=dict)
    """``trail resume --json`` after the import."""

    def trail(self, *args: str) -> Any:
        result = run_here(*args, "--json", home=self.trail_home, cwd=self.repo)
        assert result.returncode == 0, f"trail {' '.join(args)}: {result.stderr.strip()}"
        return json.loads(result.stdout)


def _plan_steps(repo: Path) -> list[Any]:
    calc = str(repo / "calc.py")
    create = [{"tool_use": "TaskCreate", "input": {"subject": subject, "description": subject, "activeForm": form}}
              for subject, form in PLAN]
    pytest_run = {"tool_use": "Bash", "input": {"command": "python -m pytest -q", "description": "Run the tests"}}
    closing = 10  # the request whose reply ends the turn: the background sub-agent answers once it came in
    agents = [
        {"tool_use": "Agent", anthropic.REPORT: BACKGROUND_REPORT, anthropic.REPORT_AT: closing,
         "input": {"description": "Look at calc.py", "prompt": "Read calc.py: what does add() do?",
                   "subagent_type": "general-purpose"}},
        {"tool_use": "Agent", anthropic.REPORT: FOREGROUND_REPORT,
         "input": {"description": "Look at the test", "prompt": "Read test_calc.py: what is checked?",
                   "run_in_background": False}},
    ]
    return [
        [{"tool_use": "ToolSearch", "input": {"query": "select:TaskCreate,TaskUpdate", "max_results": 5}}, *agents],
        [{"text": "I'll plan this first."}, *create],
        [{"tool_use": "TaskUpdate", "input": {"taskId": "1", "status": "in_progress"}}],
        [pytest_run],
        [{"tool_use": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}},
         {"tool_use": "TaskUpdate", "input": {"taskId": "2", "status": "in_progress"}}],
        [{"tool_use": "Read", "input": {"file_path": calc}}],
        [{"tool_use": "Edit", "input": {"file_path": calc, "old_string": "return a - b",
                                        "new_string": "return a + b", "replace_all": False}}],
        [pytest_run],
        [{"tool_use": "TaskUpdate", "input": {"taskId": "2", "status": "completed"}}],
        [{"text": "Fixed add() in calc.py (it subtracted); the tests pass. Still to do: a negative-number test."}],
        [{"text": AFTER_NOTICE}],  # the turn the background sub-agent's notification starts
    ]


def _todos(*statuses: str) -> dict[str, Any]:
    steps = [*PLAN, (README_STEP, "Documenting add()")]
    return {"todos": [{"content": content, "status": status, "activeForm": form}
                      for (content, form), status in zip(steps, statuses, strict=True)]}


def _todo_steps(repo: Path) -> list[Any]:
    return [
        [{"tool_use": "TodoWrite", "input": _todos("completed", "completed", "in_progress", "pending")}],
        [{"tool_use": "Write", "input": {"file_path": str(repo / "test_negative.py"), "content": NEGATIVE_TEST}}],
        [{"tool_use": "Bash", "input": {"command": "python -m pytest -q", "description": "Run the tests"}}],
        [{"tool_use": "mcp__tasktrail__record", "input": {
            "kind": "decision", "text": DECISION, "reason": "callers rely on it having no side effects",
            "rejected": ["cache results"]}}],
        [{"tool_use": "TodoWrite", "input": _todos("completed", "completed", "completed", "in_progress")}],
        [{"text": "Added test_negative.py; the tests pass. Next: document add() in the README."}],
    ]


def _make_repo(repo: Path, env: dict[str, str]) -> None:
    flows.make_repo(repo, env)
    installed = subprocess.run(["trail", "install", "claude-code", "--local", "--mcp"], cwd=repo, env=env,
                               capture_output=True, text=True)
    assert installed.returncode == 0, f"trail install claude-code: {installed.stderr.strip()}"


@pytest.fixture(scope="session")
def flow(claude: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    root = tmp_path_factory.mktemp("claude-e2e")
    flow = Flow(repo=root / "repo", home=root / "home", trail_home=root / "trail")
    flow.home.mkdir()
    env = flows.claude_environment(flow.home, flow.trail_home)
    _make_repo(flow.repo, env)
    started = time.monotonic()

    def session(name: str, args: list[str], steps: list[Any], extra: dict[str, str] | None = None) -> None:
        before = list(flow.sessions.values())[-1].after if flow.sessions else {}
        log = root / f"{name}.requests.jsonl"
        began = time.monotonic()
        result = flows.run_claude(claude, args, steps, log=log, env={**env, **(extra or {})}, cwd=flow.repo)
        seconds = time.monotonic() - began
        flow.sessions[name] = Session(name, args, result.returncode, seconds, result.stdout, result.stderr,
                                      sandbox.requests(log), before, flow.trail("resume"))
        print(f"claude e2e: {name} {seconds:.1f} s", file=sys.stderr)
        assert result.returncode == 0, f"claude {name} exited {result.returncode}: {result.stderr.strip()[-500:]}"

    session("plan", ["-p", REQUIREMENT], _plan_steps(flow.repo), PLAN_TOOLS)
    session("todo", ["-p", "Now add the test for negative numbers."], _todo_steps(flow.repo),
            {**PLAN_TOOLS, "CLAUDE_CODE_ENABLE_TASKS": "0"})
    session("carry_on", ["-p", CARRY_ON, "--continue"], [
        [{"tool_use": "Bash", "input": {"command": README_COMMAND, "description": "Document add()"}}],
        *([{"tool_use": "Bash", "input": {"command": line, "description": "Tidy up"}}] for line in SHELL_MOVES),
        [{"text": "Only the README is left."}]])
    session("compact", ["-p", "/compact", "--continue"], [])
    session("after_compact", ["-p", "What is left?", "--continue"], [[{"text": "The README line on add()."}]])
    flow.live_log = flow.trail("log")
    began = time.monotonic()
    flow.imported = flow.trail("import", "claude-code", str(flow.home / ".claude" / "projects"))
    print(f"claude e2e: import {time.monotonic() - began:.1f} s", file=sys.stderr)
    flow.log, flow.resumed = flow.trail("log"), flow.trail("resume")
    print(f"claude e2e: flow {time.monotonic() - started:.1f} s", file=sys.stderr)
    yield flow


# -- helpers over the ledger and the requests ----------------------------------------------------------


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the scenarios -------------------------------------------------------------------------------------


def test_every_session_ran_its_script(flow: Flow) -> None:
    steps = {"plan": 11, "todo": 6, "carry_on": 4, "compact": 0, "after_compact": 1}
    for name, session in flow.sessions.items():
        assert len(session.main) == steps[name], f"{name}: {len(session.main)} main requests"
        result = json.loads(session.stdout.splitlines()[-1])
        assert result["type"] == "result" and result["is_error"] is False, f"{name}: {result}"


def test_claude_code_offers_plan_tools_only_when_opted_in(flow: Flow) -> None:
    def offered(body: dict[str, Any]) -> set[str]:
        return set(anthropic.tool_names(body)) | set(anthropic.deferred(body))

    plan, todo = flow.sessions["plan"], flow.sessions["todo"].first
    # opted in, 2.1.332 names the Task tools as deferred (no schema) until ToolSearch loads them
    assert set(anthropic.deferred(plan.first)) >= TASK_TOOLS and not TASK_TOOLS & set(anthropic.tool_names(plan.first))
    assert set(anthropic.tool_names(plan.main[1])) >= TASK_TOOLS and "TodoWrite" not in offered(plan.main[1])
    assert "TodoWrite" in offered(todo) and not TASK_TOOLS & offered(todo)
    # without the opt-in (after the compaction Claude Code lists its tools anew) the model gets no plan tool
    after = flow.sessions["after_compact"].first
    assert "Bash" in anthropic.tool_names(after) and not (TASK_TOOLS | {"TodoWrite"}) & offered(after)


def test_a_task_tools_plan_gives_the_next_session_its_next_step(flow: Flow) -> None:
    state = flow.sessions["plan"].after["state"]
    assert [(step["text"], step["status"]) for step in (state["plan"] or {}).get("steps", [])] == [
        (PLAN[0][0], "completed"), (PLAN[1][0], "completed"), (PLAN[2][0], "pending")]
    assert state["next_step"] == PLAN[2][0]
    assert next_step_section(injected(flow.sessions["todo"].main[0])) == PLAN[2][0]


def test_a_todowrite_plan_gives_the_next_session_its_next_step(flow: Flow) -> None:
    state = flow.sessions["todo"].after["state"]
    assert [(step["text"], step["status"]) for step in state["plan"]["steps"]] == [
        *((subject, "completed") for subject, _ in PLAN), (README_STEP, "in_progress")]
    assert state["next_step"] == README_STEP and state["next_step_from"] == "plan"
    assert next_step_section(injected(flow.sessions["carry_on"].main[0])) == README_STEP
    writes = [event for event in events(flow.live_log, "PlanUpdated")
              if event["source"]["session"] == flow.sessions["todo"].id]
    sent = [use["id"] for use in tool_uses(flow.sessions["todo"].main[-1], "TodoWrite")]
    assert [event["source"]["record"].split("#")[0] for event in writes] == sent


def test_a_failing_then_passing_test_run(flow: Flow) -> None:
    session = flow.sessions["plan"]
    runs = events(flow.live_log, "CommandRan")[:2]
    assert [(run["shell"], run["exit_code"]) for run in runs] == [("python -m pytest -q", 1),
                                                                   ("python -m pytest -q", 0)]
    # each recorded run is the Bash call whose result the model read: same tool-use id, same outcome
    last = session.main[-1]
    results = tool_results(last)
    for run, failed in zip(runs, (True, False), strict=True):
        result = results[run["source"]["record"]]
        assert bool(result.get("is_error")) is failed
        text = "\n".join(anthropic.texts({"messages": [{"content": [result]}]}))
        assert ("Exit code 1" in text) is failed and ("1 passed" in text) is not failed
    tests = events(flow.live_log, "TestResult")[:2]
    assert [(test["outcome"], test["failed"], test["passed"]) for test in tests] == [("failed", 1, 0),
                                                                                      ("passed", 0, 1)]
    brief = session.after["brief"]
    assert "## Failed earlier, passing since" in brief and "test pytest: failed at" in brief


def test_a_command_keeps_where_it_ran_and_how_long_it_took(flow: Flow) -> None:
    runs = events(flow.live_log, "CommandRan")
    assert all(run["cwd"] == str(flow.repo) and run["duration_ms"] is not None for run in runs)


def test_an_edit_and_a_write_are_file_changes(flow: Flow) -> None:
    changes = {Path(event["path"]).name: event for event in events(flow.live_log, "FileChanged")}
    edit, write = changes["calc.py"], changes["test_negative.py"]
    assert edit["operation"] == "modified" and "+    return a + b" in edit["diff"]["tail"]
    assert edit["before_sha256"] == hashlib.sha256(b"def add(a, b):\n    return a - b\n").hexdigest()
    assert edit["after_sha256"] == sha256(flow.repo / "calc.py")
    assert write["operation"] == "created" and write["after_sha256"] == sha256(flow.repo / "test_negative.py")
    edits = tool_uses(flow.sessions["plan"].main[-1], "Edit")
    assert [edit["source"]["record"]] == [use["id"] for use in edits]
    assert "has been updated successfully" in str(tool_results(flow.sessions["plan"].main[-1])[edits[0]["id"]])
    files = flow.sessions["todo"].after["state"]["files"]
    assert sorted(Path(path).name for path in files) == ["calc.py", "test_negative.py"]


def _changes_by(log: list[dict[str, Any]], shell: str) -> list[dict[str, Any]]:
    """The file changes a Bash line brought (keyed by its call: ``<toolu id>#…``)."""
    call = next(event for event in events(log, "CommandRan") if event["shell"] == shell)["source"]["record"]
    return [event for event in events(log, "FileChanged") if event["source"]["record"].startswith(call + "#")]


def test_files_a_shell_command_changed_are_file_changes(flow: Flow) -> None:
    changes = _changes_by(flow.live_log, README_COMMAND)
    assert [(Path(event["path"]).name, event["operation"]) for event in changes] == [
        ("README.md", "created"), ("notes.txt", "created"), ("test_calc.py", "modified")]
    readme, _, test_calc = changes
    assert (flow.repo / "README.md").read_text() == "add(a, b) returns a + b.\n"
    assert readme["diff"]["tail"].splitlines()[1:] == ["+add(a, b) returns a + b."]
    assert "+# add() is documented in README.md" in test_calc["diff"]["tail"].splitlines()
    assert (flow.repo / "test_calc.py").read_text().startswith("# add() is documented in README.md\n")
    # a move and a delete the line names are one change each (the diff shows the move as a delete and a create),
    # the delete with the lines it removed
    moved, removed = (_changes_by(flow.live_log, line) for line in SHELL_MOVES)
    assert [(Path(e["path"]).name, e["operation"], Path(e["renamed_from"] or "").name) for e in moved] == [
        ("NOTES.md", "renamed", "notes.txt")]
    assert [(Path(e["path"]).name, e["operation"], e["diff"]["tail"].splitlines()[1:]) for e in removed] == [
        ("NOTES.md", "deleted", ["-draft"])]
    assert not (flow.repo / "NOTES.md").exists() and not (flow.repo / "notes.txt").exists()
    # the import brings the same changes (the transcript holds the same bashEditDiff), not more
    for line in (README_COMMAND, *SHELL_MOVES):
        assert _changes_by(flow.log, line) == _changes_by(flow.live_log, line), line


def test_a_second_session_starts_with_the_brief(flow: Flow) -> None:
    assert injected(flow.sessions["plan"].main[0]) == ""  # a project with no task yet gets no brief
    for name in ("todo", "carry_on"):
        session = flow.sessions[name]
        text = injected(session.main[0])
        assert text.startswith("SessionStart hook additional context: You are continuing tasktrail task #1"), name
        assert session.before["brief"].splitlines()[0] in text and REQUIREMENT in text, name
    # the new session sees the first session's work, the continued one the second's plan
    assert "calc.py" in injected(flow.sessions["todo"].main[0])
    assert next_step_section(injected(flow.sessions["carry_on"].main[0])) == README_STEP
    # --continue is the same conversation (one session id, one transcript): the model sees the earlier turns
    assert flow.sessions["carry_on"].id == flow.sessions["todo"].id != flow.sessions["plan"].id
    assert any("Added test_negative.py" in text for text in anthropic.texts(flow.sessions["carry_on"].main[0]))


def test_carry_on_is_not_a_requirement(flow: Flow) -> None:
    requirements = [item["text"] for item in flow.sessions["carry_on"].after["state"]["requirements"]]
    assert CARRY_ON not in requirements


def test_compact_in_print_mode(flow: Flow) -> None:
    compact = flow.sessions["compact"]
    kinds = [anthropic.kind(entry["body"]) for entry in compact.requests if entry["path"].startswith("/v1/messages")]
    assert kinds == ["compact"]
    # the compaction request holds the conversation so far, with this session's injected brief last (2.1.332
    # leaves out the closing reply "Only the README is left." that follows the Bash call; 2.1.197 left out such a
    # reply when it was the turn's only message, which 2.1.332 sends)
    sent = anthropic.texts(compact.first)
    assert any(CARRY_ON in text for text in sent) and any("Added test_negative.py" in text for text in sent)
    assert next_step_section(injected(compact.first)) == README_STEP
    # afterwards the model gets the scripted summary in place of the turns, and a brief with the next step
    first = flow.sessions["after_compact"].main[0]
    text = "\n".join(anthropic.texts(first))
    assert "scripted summary e2e-7f3a" in text and "Added test_negative.py" not in text
    assert next_step_section(injected(first)) == README_STEP
    checkpoints = [event["label"] for event in events(flow.live_log, "CheckpointMarked")]
    assert "before compaction (manual)" in checkpoints
    # the transcript's compaction, imported, is one ContextCompacted holding the summary the model wrote
    compactions = events(flow.log, "ContextCompacted")
    assert len(compactions) == 1 and "scripted summary e2e-7f3a" in compactions[0]["summary"]["tail"]


def test_compaction_summary_is_captured_live(flow: Flow) -> None:
    compactions = events(flow.live_log, "ContextCompacted")
    assert len(compactions) == 1 and "scripted summary e2e-7f3a" in compactions[0]["summary"]["tail"]


def test_compact_is_not_a_requirement(flow: Flow) -> None:
    assert "/compact" not in [item["text"] for item in flow.resumed["state"]["requirements"]]


def test_no_response_requested_is_not_the_agents_last_words(flow: Flow) -> None:
    assert flow.resumed["state"]["last_reply"]["text"] == "The README line on add()."
    assert "No response requested." not in flow.resumed["brief"]


def test_an_mcp_record_by_the_model_lands_once(flow: Flow) -> None:
    todo = flow.sessions["todo"]
    assert {f"mcp__tasktrail__{name}" for name in ("record", "resume_task", "log")} <= set(
        anthropic.tool_names(todo.main[0]))
    decisions = [event for event in events(flow.log, "DecisionRecorded") if event["text"] == DECISION]
    assert len(decisions) == 1 and decisions[0]["actor"] == "agent:claude-code"
    assert decisions[0]["reason"] == "callers rely on it having no side effects"
    # the model was told where it landed
    use = tool_uses(todo.main[-1], "mcp__tasktrail__record")[0]
    result = tool_results(todo.main[-1])[use["id"]]
    assert json.loads("\n".join(anthropic.texts({"messages": [{"content": [result]}]}))) == {
        "task": 1, "position": decisions[0]["position"], "event": "DecisionRecorded", "actor": "agent:claude-code"}


def test_tasktrails_own_mcp_calls_are_not_recorded_again(flow: Flow) -> None:
    repeats = [event for event in flow.log if DECISION in json.dumps(event) and event["type"] != "DecisionRecorded"]
    assert repeats == []


def _fact(event: dict[str, Any]) -> str:
    """An event without what differs between two captures of one fact (its place, time, chain, source, links)."""
    ignore = {"position", "timestamp", "chain", "source", "causation", "because", "summary", "actor"}
    return json.dumps({key: value for key, value in event.items() if key not in ignore}, sort_keys=True)


def test_importing_the_transcripts_adds_no_duplicates(flow: Flow) -> None:
    assert flow.imported["files"] == 4 and flow.imported["new_tasks"] == 0  # two main files, two sub-agents'
    live = {_fact(event) for event in flow.live_log}
    added = [event for event in flow.log if event["position"] > len(flow.live_log)]
    assert [event for event in added if _fact(event) in live] == []
    keys = [json.dumps(event["source"], sort_keys=True) for event in flow.log if event.get("source")]
    assert len(keys) == len(set(keys))
    for kind in ("CommandRan", "FileChanged", "PlanUpdated", "TestResult", "ToolCalled"):
        assert len(events(flow.log, kind)) == len(events(flow.live_log, kind)), kind


def test_tasktrail_tools_are_on_every_sessions_first_request(flow: Flow) -> None:
    offered = [name for name, session in flow.sessions.items()
               if any(tool.startswith("mcp__tasktrail__") for tool in anthropic.tool_names(session.first))]
    assert offered == list(flow.sessions), f"{len(offered)} of {len(flow.sessions)} sessions"


def _stops(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events(log, "CheckpointMarked") if event["label"].startswith("sub-agent stopped")]


def _agent_ids(session: Session) -> dict[str, str]:
    """The sub-agents' ids by the report each was scripted to give (each call's result names its agent)."""
    last = session.main[-1]
    results = tool_results(last)
    ids = {}
    for use in tool_uses(last, "Agent"):
        report = BACKGROUND_REPORT if use["input"].get("run_in_background") is not False else FOREGROUND_REPORT
        ids[report] = anthropic.tool_result_text(results[use["id"]]).split("agentId: ", 1)[1].split()[0]
    return ids


def test_a_background_sub_agents_report_comes_in_a_notification_after_the_turn(flow: Flow) -> None:
    """2.1.332 runs a sub-agent in the background unless told not to: its call's result says only that it was
    launched, and its report reaches the model in a ``<task-notification>`` (escaped) once it stopped; a
    foreground one's report is its call's result."""
    plan = flow.sessions["plan"]
    ids = _agent_ids(plan)
    results = {anthropic.tool_result_text(block) for block in tool_results(plan.main[-1]).values()}
    assert any(text.startswith("Async agent launched") and ids[BACKGROUND_REPORT] in text for text in results)
    assert any(FOREGROUND_REPORT in text for text in results)
    # the scripted sub-agent answered once the closing request came in: no earlier request knows its report
    escaped = BACKGROUND_REPORT.replace("<", "&lt;").replace(">", "&gt;")
    assert not any(escaped in text for body in plan.main[:10] for text in anthropic.texts(body))
    notice = next(text for text in anthropic.texts(plan.main[10]) if "<task-notification>" in text)
    assert f"<task-id>{ids[BACKGROUND_REPORT]}</task-id>" in notice and f"<result>{escaped}</result>" in notice


def test_a_sub_agents_report_is_one_stop_live_and_imported(flow: Flow, tmp_path: Path) -> None:
    """Each sub-agent's stop is a checkpoint with its report, captured live by SubagentStop; the import keeps it
    once (the background one's notification is keyed as the hook's stop), and an import alone of the transcript,
    into a ledger of its own, has the background sub-agent's stop too (its report is in no call's result)."""
    ids = _agent_ids(flow.sessions["plan"])
    expected = sorted((f"agent:claude-code/{ids[report]}", report) for report in ids)
    for log in (flow.live_log, flow.log):
        stops = _stops(log)
        assert sorted((stop["actor"], stop["note"]) for stop in stops) == expected
        assert {stop["label"] for stop in stops} == {"sub-agent stopped (general-purpose)"}
    assert [stop["source"] for stop in _stops(flow.log)] == [stop["source"] for stop in _stops(flow.live_log)]
    transcript = next((flow.home / ".claude" / "projects").glob(f"*/{flow.sessions['plan'].id}.jsonl"))
    alone = tmp_path / "trail"
    imported = run_here("import", "claude-code", str(transcript), "--json", home=alone, cwd=flow.repo)
    assert imported.returncode == 0, imported.stderr
    listed = run_here("log", "1", "--json", home=alone, cwd=flow.repo)
    stops = _stops(json.loads(listed.stdout))
    background = next(stop for stop in _stops(flow.live_log) if stop["note"] == BACKGROUND_REPORT)
    assert [(stop["label"], stop["note"], stop["source"]) for stop in stops] == [
        (background["label"], BACKGROUND_REPORT, background["source"])]
