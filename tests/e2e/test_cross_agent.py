"""A task begun in one real agent and continued by the other, in the same repository (issue 19).

One repository, one TRAIL_HOME, both agents installed as a user installs them: ``trail install claude-code
--local --mcp`` in the repository and ``trail install codex --mcp-required`` into a CODEX_HOME of the test's
own. Four runs, each against its scripted model (``tests.e2e.anthropic``, ``tests.e2e.responses``), in a loopback-only
namespace:

* flow A, task #1: ``claude -p REQUIREMENT_A`` plans (TodoWrite), runs the failing pytest and leaves "Fix
  add() in calc.py" as the plan's next step; then ``codex exec "Carry on with the task."`` gets that brief,
  updates the plan, fixes add() with apply_patch and runs the passing pytest, leaving the plan's last step;
* the user closes task #1 (``trail done``) with that step still open;
* flow B, task #2, the reverse: ``codex exec REQUIREMENT_B`` plans, adds a stub multiply() and its test with
  apply_patch, runs the failing pytest and leaves "Implement multiply() in calc.py"; then ``claude -p "Carry
  on with the task."`` gets that brief, implements it (Read, Edit) and runs the passing pytest;
* then both agents' transcripts are imported into the same ledger.

The tests assert on what each model received and on the ledger. Claude Code (2.1.332, as ``tests.e2e.agents``
pins it) runs with ``CLAUDE_CODE_ENABLE_TODO_TOOLS=1`` and ``CLAUDE_CODE_ENABLE_TASKS=0`` (TodoWrite), the plan tool
``test_claude_code.py`` covers less (its first session plans with TaskCreate/TaskUpdate); without the first,
2.1.332 offers its default model no plan tool at all. Where tasktrail was wrong, a test asserted the
right behaviour under ``xfail(strict=True)`` until it was fixed; none is left.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_here
from tests.e2e import anthropic, flows, responses, sandbox
from tests.e2e.flows import BRIEF_HEADER, events, next_step_section

PYTEST = f"{flows.PYTHON} -m pytest -q -p no:cacheprovider"
"""Absolute, for both agents: Codex runs commands through ``bash -lc``, whose login profile resets PATH."""
CARRY_ON = "Carry on with the task."
CLAUDE_TODOWRITE = {"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "CLAUDE_CODE_ENABLE_TASKS": "0"}
"""Claude Code 2.1.332 offers its default model a plan tool only when asked (the first), TodoWrite with the second."""

REQUIREMENT_A = "Fix the add function in calc.py so the tests pass."
PLAN_A = ["Reproduce the failing test", "Fix add() in calc.py", "Add a test for negative numbers"]
NEXT_A = PLAN_A[1]
FIX_ADD = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
           "*** End Patch")

REQUIREMENT_B = "Add a multiply function to calc.py, with a test."
PLAN_B = ["Write a failing test for multiply()", "Implement multiply() in calc.py"]
NEXT_B = PLAN_B[1]
STUB = "def multiply(a, b):\n    raise NotImplementedError\n"
TEST_MULTIPLY = "from calc import multiply\n\n\ndef test_multiply():\n    assert multiply(2, 3) == 6\n"
ADD_MULTIPLY = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n     return a + b\n"
                "+\n+\n" + "".join(f"+{line}\n" for line in STUB.splitlines()) +
                "*** Add File: test_multiply.py\n" + "".join(f"+{line}\n" for line in TEST_MULTIPLY.splitlines()) +
                "*** End Patch")


def _todos(statuses: list[str], plan: list[str]) -> dict[str, Any]:
    return {"todos": [{"content": step, "status": status, "activeForm": step}
                      for step, status in zip(plan, statuses, strict=True)]}


def _plan(statuses: list[str], plan: list[str]) -> dict[str, Any]:
    return {"plan": [{"step": step, "status": status} for step, status in zip(plan, statuses, strict=True)]}


def _bash(command: str) -> dict[str, Any]:
    return {"tool_use": "Bash", "input": {"command": command, "description": "Run the tests"}}


CLAUDE_BEGINS = [
    [{"text": "I'll plan first."}, {"tool_use": "TodoWrite",
                                    "input": _todos(["in_progress", "pending", "pending"], PLAN_A)}],
    [_bash(PYTEST)],
    [{"tool_use": "TodoWrite", "input": _todos(["completed", "pending", "pending"], PLAN_A)}],
    [{"text": "add() subtracts, so test_add fails. Next: fix add() in calc.py."}],
]
CODEX_CONTINUES = [
    [{"update_plan": _plan(["completed", "in_progress", "pending"], PLAN_A)}],
    [{"apply_patch": FIX_ADD}],
    [{"shell": PYTEST}],
    [{"update_plan": _plan(["completed", "completed", "pending"], PLAN_A)}],
    [{"text": "Fixed add() in calc.py; the tests pass."}],
]
CODEX_BEGINS = [
    [{"update_plan": _plan(["in_progress", "pending"], PLAN_B)}],
    [{"apply_patch": ADD_MULTIPLY}],
    [{"shell": PYTEST}],
    [{"update_plan": _plan(["completed", "pending"], PLAN_B)}],
    [{"text": "test_multiply fails against the stub. Next: implement multiply() in calc.py."}],
]


def _claude_continues(repo: Path) -> list[Any]:
    calc = str(repo / "calc.py")
    return [
        [{"tool_use": "Read", "input": {"file_path": calc}}],
        [{"tool_use": "Edit", "input": {"file_path": calc, "old_string": "    raise NotImplementedError",
                                        "new_string": "    return a * b", "replace_all": False}}],
        [_bash(PYTEST)],
        [{"tool_use": "TodoWrite", "input": _todos(["completed", "completed"], PLAN_B)}],
        [{"text": "multiply() is implemented; the tests pass."}],
    ]


@dataclass
class Run:
    name: str
    agent: str
    seconds: float
    requests: list[dict[str, Any]]
    after: dict[str, Any]
    """``trail resume --json`` of the project's active task right after the run."""

    @property
    def main(self) -> list[dict[str, Any]]:
        """The bodies of the run's main-conversation requests."""
        api = anthropic if self.agent == "claude-code" else responses
        return api.main_requests(self.requests)

    @property
    def brief(self) -> str:
        """The tasktrail brief the first main request carried ('' if none)."""
        if self.agent == "claude-code":
            return anthropic.injected(self.main[0]).removeprefix(anthropic.HOOK_CONTEXT).strip()
        return next((text for text in responses.texts(self.main[0]) if text.startswith(BRIEF_HEADER)), "")

    def outputs(self) -> list[str]:
        """What the last request told the model every tool had returned."""
        if self.agent == "claude-code":
            return [anthropic.tool_result_text(block) for block in anthropic.tool_results(self.main[-1]).values()]
        return list(responses.outputs(self.main[-1]).values())


@dataclass
class Cross:
    root: Path
    repo: Path
    env: dict[str, str]
    runs: dict[str, Run] = field(default_factory=dict)
    listed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """``trail list --json`` at a point: ``a`` (after flow A), ``live`` (after flow B), ``imported``."""
    logs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """``trail log TASK --json`` of each task after the live runs."""
    resumed: dict[int, dict[str, Any]] = field(default_factory=dict)
    """``trail resume TASK --json`` of each task after the live runs."""
    why: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """``trail why calc.py:LINE --json``'s changes after the live runs: line 2 (``return a + b``, Codex's fix in
    task #1) and line 6 (``return a * b``, added by Codex's stub in task #2, changed by Claude Code's edit)."""
    imported: dict[str, Any] = field(default_factory=dict)
    imported_logs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def trail(self, *args: str) -> Any:
        result = run_here(*args, "--json", home=Path(self.env["TRAIL_HOME"]), cwd=self.repo)
        assert result.returncode == 0, f"trail {' '.join(args)}: {result.stderr.strip()}"
        return json.loads(result.stdout)

    def run(self, name: str, agent: str, program: Path, args: list[str], steps: list[Any]) -> None:
        log = self.root / f"{name}.requests.jsonl"
        run = flows.run_claude if agent == "claude-code" else flows.run_codex
        env = {**self.env, **CLAUDE_TODOWRITE} if agent == "claude-code" else self.env
        began = time.monotonic()
        result = run(program, args, steps, log=log, env=env, cwd=self.repo)
        seconds = time.monotonic() - began
        print(f"cross e2e: {name} ({agent}) {seconds:.1f} s", file=sys.stderr)
        assert result.returncode == 0, f"{agent} {name} exited {result.returncode}: {result.stderr.strip()[-2000:]}"
        self.runs[name] = Run(name, agent, seconds, sandbox.requests(log), self.trail("resume"))


@pytest.fixture(scope="module")
def cross(claude: Path, codex: Path, tmp_path_factory: pytest.TempPathFactory) -> Cross:
    root = tmp_path_factory.mktemp("cross-e2e")
    env = {**flows.codex_environment(root), **flows.claude_environment(root / "home", root / "trail")}
    cross = Cross(root, root / "repo", env)
    flows.make_repo(cross.repo, env)
    for install in (["claude-code", "--local", "--mcp"], ["codex", "--mcp-required"]):
        done = subprocess.run([str(flows.TRAIL), "install", *install], cwd=cross.repo, env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, f"trail install {install[0]}: {done.stderr.strip()}"
    started = time.monotonic()
    cross.run("claude_begins", "claude-code", claude, ["-p", REQUIREMENT_A], CLAUDE_BEGINS)
    cross.run("codex_continues", "codex", codex, [CARRY_ON], CODEX_CONTINUES)
    cross.listed["a"] = cross.trail("list")
    cross.trail("done", "add() fixed; the negative-number test can wait")
    cross.run("codex_begins", "codex", codex, [REQUIREMENT_B], CODEX_BEGINS)
    cross.run("claude_continues", "claude-code", claude, ["-p", CARRY_ON], _claude_continues(cross.repo))
    cross.listed["live"] = cross.trail("list")
    for task in (1, 2):
        cross.logs[task], cross.resumed[task] = cross.trail("log", str(task)), cross.trail("resume", str(task))
    cross.why = {line: cross.trail("why", f"calc.py:{line}")["changes"] for line in (2, 6)}
    began = time.monotonic()
    cross.imported = {"claude-code": cross.trail("import", "claude-code", str(root / "home" / ".claude" / "projects")),
                      "codex": cross.trail("import", "codex", str(root / "codex_home" / "sessions"))}
    print(f"cross e2e: import {time.monotonic() - began:.1f} s", file=sys.stderr)
    cross.listed["imported"] = cross.trail("list")
    cross.imported_logs = {task: cross.trail("log", str(task)) for task in (1, 2)}
    print(f"cross e2e: flow {time.monotonic() - started:.1f} s", file=sys.stderr)
    return cross


def _section(brief: str, heading: str) -> list[str]:
    """The lines under a brief's ``## heading`` up to the next heading."""
    lines = brief.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"## {heading}")), None)
    if start is None:
        return []
    rest = lines[start + 1:]
    return rest[:next((i for i, line in enumerate(rest) if line.startswith("#")), len(rest))]


def _actors(log: list[dict[str, Any]], *kinds: str) -> dict[str, set[str]]:
    return {kind: {event["actor"] for event in events(log, kind)} for kind in kinds}


# -- the scenarios -------------------------------------------------------------------------------------


def test_every_run_ran_its_script(cross: Cross) -> None:
    counts = {"claude_begins": len(CLAUDE_BEGINS), "codex_continues": len(CODEX_CONTINUES),
              "codex_begins": len(CODEX_BEGINS), "claude_continues": len(_claude_continues(cross.repo))}
    assert {name: len(run.main) for name, run in cross.runs.items()} == counts
    assert cross.runs["claude_begins"].brief == ""  # a project with no task yet gets no brief
    assert (cross.repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n\n\n" + STUB.replace(
        "raise NotImplementedError", "return a * b")


def test_tasktrails_tools_are_on_every_codex_runs_first_request(cross: Cross) -> None:
    codex = [run for run in cross.runs.values() if run.agent == "codex"]
    offered = [run.name for run in codex if "mcp__tasktrail" in responses.mcp_namespaces(run.main[0])]
    assert offered == [run.name for run in codex] and len(codex) == 2


def test_codex_gets_the_brief_of_the_task_claude_code_began(cross: Cross) -> None:
    brief = cross.runs["codex_continues"].brief
    assert brief.startswith(f"{BRIEF_HEADER}1."), brief[:200]
    began = cross.runs["claude_begins"].after
    assert began["task"] == 1 and began["brief"].splitlines()[0] in brief  # "# Task #1 …", the same task
    assert REQUIREMENT_A in brief
    assert next_step_section(brief) == NEXT_A
    assert any("test pytest" in line for line in _section(brief, "Failing now")), brief
    assert "[x] Reproduce the failing test" in brief and f"[ ] {NEXT_A}" in brief  # Claude Code's plan


def test_what_codex_did_lands_in_the_task_claude_code_began(cross: Cross) -> None:
    assert [(task["number"], task["status"]) for task in cross.listed["a"]] == [(1, "active")]
    log = cross.logs[1]
    assert [link["agent"] for link in events(log, "ConversationLinked")] == ["claude-code", "codex"]
    changes = events(log, "FileChanged")
    assert [(Path(c["path"]).name, c["actor"]) for c in changes] == [("calc.py", "agent:codex")]
    assert "+    return a + b" in changes[0]["diff"]["tail"]
    assert [(c["shell"], c["actor"]) for c in events(log, "CommandRan")] == [
        (PYTEST, "agent:claude-code"), (PYTEST, "agent:codex")]
    plans = events(log, "PlanUpdated")
    assert [p["actor"] for p in plans] == ["agent:claude-code"] * 2 + ["agent:codex"] * 2
    state = cross.runs["codex_continues"].after["state"]
    assert [(s["text"], s["status"]) for s in state["plan"]["steps"]] == [
        (PLAN_A[0], "completed"), (PLAN_A[1], "completed"), (PLAN_A[2], "pending")]
    assert state["last_reply"]["text"] == "Fixed add() in calc.py; the tests pass."


def test_each_model_saw_its_own_test_run(cross: Cross) -> None:
    said = {name: "\n".join(run.outputs()) for name, run in cross.runs.items()}
    assert "1 failed" in said["claude_begins"]
    assert "1 passed" in said["codex_continues"] and "failed" not in said["codex_continues"]
    assert "1 failed, 1 passed" in said["codex_begins"]
    assert "2 passed" in said["claude_continues"]


def test_codexs_passing_run_ends_the_failure_claude_code_recorded(cross: Cross) -> None:
    state = cross.resumed[1]["state"]
    assert [c["exit_code"] for c in state["commands"]] == [1, 0]
    assert state["tests"]["pytest"]["outcome"] == "passed"
    assert _section(cross.resumed[1]["brief"], "Failing now") == []


def test_carrying_on_in_the_other_agent_states_no_requirement(cross: Cross) -> None:
    for task, requirement in ((1, REQUIREMENT_A), (2, REQUIREMENT_B)):
        assert [r["text"] for r in cross.resumed[task]["state"]["requirements"]] == [requirement]


def test_codexs_new_task_after_the_done_one_gets_no_brief_of_it(cross: Cross) -> None:
    assert [(task["number"], task["status"]) for task in cross.listed["live"]] == [(1, "done"), (2, "active")]
    assert cross.runs["codex_begins"].brief == "", cross.runs["codex_begins"].brief[:300]
    links = cross.resumed[2]["state"]["links"]
    assert [(link["other_number"], link["relation"]) for link in links] == [(1, "related")], links


def test_claude_code_gets_the_brief_of_the_task_codex_began(cross: Cross) -> None:
    brief = cross.runs["claude_continues"].brief
    assert brief.startswith(f"{BRIEF_HEADER}2."), brief[:200]
    began = cross.runs["codex_begins"].after
    assert began["task"] == 2 and began["brief"].splitlines()[0] in brief
    assert REQUIREMENT_B in brief
    assert next_step_section(brief) == NEXT_B
    assert any("test pytest" in line for line in _section(brief, "Failing now")), brief
    assert f"[x] {PLAN_B[0]}" in brief and f"[ ] {NEXT_B}" in brief  # Codex's plan
    assert "calc.py" in brief and "test_multiply.py" in brief  # the files Codex's patch changed


def test_what_claude_code_did_lands_in_the_task_codex_began(cross: Cross) -> None:
    log = cross.logs[2]
    assert [link["agent"] for link in events(log, "ConversationLinked")] == ["codex", "claude-code"]
    assert [(Path(c["path"]).name, c["actor"]) for c in events(log, "FileChanged")] == [
        ("calc.py", "agent:codex"), ("test_multiply.py", "agent:codex"), ("calc.py", "agent:claude-code")]
    assert [(c["shell"], c["actor"]) for c in events(log, "CommandRan")] == [
        (PYTEST, "agent:codex"), (PYTEST, "agent:claude-code")]
    assert [p["actor"] for p in events(log, "PlanUpdated")] == ["agent:codex"] * 2 + ["agent:claude-code"]
    state = cross.resumed[2]["state"]
    assert state["commands"][-1]["exit_code"] == 0 and state["tests"]["pytest"]["outcome"] == "passed"
    assert [(s["text"], s["status"]) for s in state["plan"]["steps"]] == [(step, "completed") for step in PLAN_B]
    assert state["last_reply"]["text"] == "multiply() is implemented; the tests pass."
    assert _actors(cross.logs[1] + log, "AgentReplied") == {"AgentReplied": {"agent:claude-code", "agent:codex"}}


def test_importing_both_agents_transcripts_opens_no_task(cross: Cross) -> None:
    assert [imported["new_tasks"] for imported in cross.imported.values()] == [0, 0]
    assert [task["number"] for task in cross.listed["imported"]] == [1, 2]
    for task in (1, 2):  # each imported session went to the task its live capture linked it to
        linked = {(e["agent"], e["session_id"]) for e in events(cross.logs[task], "ConversationLinked")}
        assert {(e["agent"], e["session_id"]) for e in events(cross.imported_logs[task], "ConversationLinked")} \
            == linked, task


def _changes(changes: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    return [(change["task"], change["position"], change["actor"]) for change in changes]


def _calc_changes(log: list[dict[str, Any]], task: int, actor: str) -> list[tuple[int, int, str]]:
    return [(task, e["position"], e["actor"]) for e in events(log, "FileChanged")
            if Path(e["path"]).name == "calc.py" and e["actor"] == actor]


def test_why_follows_a_line_through_claude_codes_edit(cross: Cross) -> None:
    edit = _calc_changes(cross.logs[2], 2, "agent:claude-code")
    assert _changes(cross.why[6])[:1] == edit  # the newest change of line 6 is Claude Code's edit
    assert [change for change in _changes(cross.why[2]) if change in edit] == []  # its hunk is lines 3-6


def test_why_follows_a_line_through_codexs_patches(cross: Cross) -> None:
    fix = _calc_changes(cross.logs[1], 1, "agent:codex")
    stub = _calc_changes(cross.logs[2], 2, "agent:codex")
    edit = _calc_changes(cross.logs[2], 2, "agent:claude-code")
    assert _changes(cross.why[2]) == fix  # line 2 was last changed by Codex's fix; the stub only added below it
    assert _changes(cross.why[6]) == edit + stub  # the stub added line 6, so nothing older touched it


def test_importing_an_earlier_session_leaves_the_later_status(cross: Cross) -> None:
    # Live capture left #2 active and the user closed #1: the import of older sessions changes neither.
    assert [(task["number"], task["status"]) for task in cross.listed["imported"]] == [(1, "done"), (2, "active")]
    assert [(e["status"], e["actor"]) for e in events(cross.imported_logs[1], "StatusChanged")] == [("done", "user")]


FACTS = ("CommandRan", "FileChanged", "PlanUpdated", "TestResult", "ToolCalled", "AgentReplied")


@pytest.mark.parametrize("agent", [
    "claude-code",
    "codex",
])
def test_importing_an_agents_transcripts_adds_none_of_its_facts_again(cross: Cross, agent: str) -> None:
    def facts(log: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return [(e["type"], e["summary"]) for e in log if e["type"] in FACTS and e["actor"] == f"agent:{agent}"]

    for task in (1, 2):
        assert facts(cross.imported_logs[task]) == facts(cross.logs[task]), task
