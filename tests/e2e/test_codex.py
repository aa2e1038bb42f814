"""The real Codex CLI 0.171 end to end: `trail install codex`, then `codex exec --json` sessions against a
scripted Responses API model (tests/e2e/responses.py) in a loopback-only namespace, asserting on the ledger
(`trail resume --json`, `trail log --json`) and on what the model received.

One flow serves every test (the agent runs cost seconds each): a session that plans, runs a failing
pytest, patches, runs a passing pytest and records a decision and the next step through the MCP server;
`codex exec resume --last`; a new `codex exec` whose reply reports a full context, so that resuming it
compacts first; then the rollouts imported into the same ledger. Codex's folders live in the test's
tmp folder with TMPDIR beside them: Codex refuses to put its helper binaries (apply_patch among them)
under the temporary folder, which is TMPDIR's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import flows, responses, sandbox

PYTHON, TRAIL = flows.PYTHON, flows.TRAIL
PROMPT = "Fix the add function in calc.py so the tests pass, then add a test for negative numbers."
NEXT = "Add a test for negative numbers"
PLAN = [{"step": "Reproduce the failing test", "status": "in_progress"},
        {"step": "Fix add() in calc.py", "status": "pending"},
        {"step": NEXT, "status": "pending"}]
PATCH = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
         "*** End Patch")
DECISION = {"kind": "decision", "text": "Keep add() a pure function", "reason": "callers rely on it having no side "
            "effects", "rejected": ["cache results"]}
PYTEST = f"{PYTHON} -m pytest -q -p no:cacheprovider"  # absolute: bash -lc resets PATH
FIRST = [
    [{"update_plan": {"plan": PLAN}}],
    [{"shell": PYTEST}],
    [{"apply_patch": PATCH}],
    [{"shell": PYTEST}],
    [{"mcp": {"server": "tasktrail", "tool": "record", "arguments": DECISION}}],
    [{"mcp": {"server": "tasktrail", "tool": "record", "arguments": {"kind": "next_step", "text": NEXT}}}],
    [{"text": "Fixed add() in calc.py; the tests pass. Still to do: add a test for negative numbers."}],
]


@dataclass
class Flow:
    root: Path
    repo: Path
    env: dict[str, str]
    logs: dict[str, Path] = field(default_factory=dict)
    runs: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """The task's state from live capture alone (hooks and MCP), before the import."""
    before_import: list[dict[str, Any]] = field(default_factory=list)
    after_import: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def installed(cls, root: Path) -> Flow:
        """A flow in ``root``: the scratch repository, Codex's folders, and `trail install codex --mcp-required`."""
        flow = cls(root, root / "repo", flows.codex_environment(root))
        flows.make_repo(flow.repo)
        installed = flow.trail("install", "codex", "--mcp-required")
        assert installed.returncode == 0, installed.stderr
        return flow

    def trail(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(TRAIL), *args], cwd=self.repo, env=self.env, capture_output=True, text=True,
                              timeout=60)

    def json(self, *args: str) -> Any:
        done = self.trail(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def codex(self, name: str, program: Path, args: list[str], steps: list[Any]) -> None:
        log = self.root / f"{name}.requests.jsonl"
        started = time.monotonic()
        done = flows.run_codex(program, args, steps, log=log, env=self.env, cwd=self.repo)
        self.seconds[name] = time.monotonic() - started
        assert done.returncode == 0, f"codex {name} exited {done.returncode}: {done.stderr[-2000:]}"
        self.logs[name], self.runs[name] = log, done

    def requests(self, name: str) -> list[dict[str, Any]]:
        """The main conversation's requests of run ``name`` (those offering tools)."""
        return responses.main_requests(sandbox.requests(self.logs[name]))


def facts(log: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """Each fact of a `trail log --json` (its type and summary), counted: what an import must not repeat."""
    # json: a ContextCompacted row's own `summary` field (its text) stands where the one-line summary is
    return Counter((e["type"], json.dumps(e["summary"], sort_keys=True)) for e in log
                   if e["type"] not in ("ConversationLinked",))


@pytest.fixture(scope="module")
def flow(codex: Path, tmp_path_factory: pytest.TempPathFactory) -> Flow:
    flow = Flow.installed(tmp_path_factory.mktemp("codex-e2e"))
    root = flow.root
    flow.codex("first", codex, [PROMPT], FIRST)
    flow.codex("resumed", codex, ["resume", "--last", "Continue with the next step."],
               [[{"text": "Resumed: the next step is the negative-numbers test."}]])
    # the new session's reply says its context is full, so resuming it compacts first (PreCompact, PostCompact)
    flow.codex("new", codex, ["Carry on with the task."],
               [[{"text": "Carrying on with the negative-numbers test.", "tokens": 200_000}]])
    flow.codex("compacted", codex, ["resume", "--last", "Go on."], [[{"text": "Going on after the compaction."}]])
    flow.state, flow.before_import = flow.json("resume")["state"], flow.json("log")
    rollouts = sorted((root / "codex_home" / "sessions").rglob("rollout-*.jsonl"))
    imported = flow.trail("import", "codex", *map(str, rollouts))
    assert imported.returncode == 0, imported.stderr
    flow.after_import = flow.json("log")
    print("\ncodex e2e seconds per run:", {k: round(v, 1) for k, v in flow.seconds.items()}, file=sys.stderr)
    return flow


def test_codex_lists_every_installed_hook_as_trusted(codex: Path, tmp_path: Path) -> None:
    """`codex app-server`'s hooks/list: the keys and hashes `trail install codex` wrote are the ones Codex computes."""
    home = tmp_path / "codex_home"
    home.mkdir()
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(home), "TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin",
           "TRAIL_HOME": str(tmp_path / "trail")}
    assert subprocess.run([str(TRAIL), "install", "codex"], env=env, cwd=tmp_path, capture_output=True).returncode == 0
    messages = [{"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "e2e", "version": "1"}}},
                {"method": "initialized"}, {"id": 2, "method": "hooks/list", "params": {}}]
    server = subprocess.Popen([*sandbox._unshare(), str(codex), "app-server"], env=env, cwd=tmp_path, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    watchdog = threading.Timer(60, server.kill)  # a server that never answers ends the read, not the suite
    watchdog.start()
    try:
        server.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        server.stdin.flush()  # stdin stays open: at end of input the server exits before it answers
        listed = next((m for m in map(json.loads, server.stdout) if m.get("id") == 2), None)
    finally:
        watchdog.cancel()
        server.kill()
        server.wait()
    assert listed is not None, "codex app-server did not answer hooks/list"
    hooks = [h for entry in listed["result"]["data"] for h in entry["hooks"]]
    ours = {h["eventName"]: h["trustStatus"] for h in hooks if h["command"].endswith(" hook codex")}
    assert ours == dict.fromkeys(["sessionStart", "userPromptSubmit", "postToolUse", "preCompact", "postCompact",
                                  "stop", "sessionEnd"], "trusted")
    assert [e["warnings"] for e in listed["result"]["data"]] == [[]] * len(listed["result"]["data"])


def test_the_first_session_is_captured_by_the_hooks(flow: Flow) -> None:
    state = flow.state
    assert [r["text"] for r in state["requirements"]][:1] == [PROMPT]
    assert [c["agent"] for c in state["conversations"]][:1] == ["codex"]
    assert [c["line"] for c in state["commands"]][:2] == [PYTEST, PYTEST]
    assert any(path.endswith("calc.py") for path in state["files"]), state["files"]
    assert (flow.repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"  # the patch really applied
    types = Counter(e["type"] for e in flow.before_import)
    assert types["CheckpointMarked"] >= 1 and types["AgentReplied"] >= 1


def test_the_plan_comes_from_update_plan(flow: Flow) -> None:
    steps = flow.state["plan"]["steps"]
    assert [(s["text"], s["status"]) for s in steps] == [(p["step"], p["status"]) for p in PLAN]
    update = next(i for i in flow.requests("first")[1]["input"] if i.get("name") == "update_plan")
    assert json.loads(update["arguments"]) == {"plan": PLAN}  # the plan went through Codex's own tool


def test_a_failing_then_passing_pytest_ends_passed(flow: Flow) -> None:
    state = flow.state
    assert [c["exit_code"] for c in state["commands"][:2]] == [1, 0]
    assert state["tests"]["pytest"]["outcome"] == "passed"


def test_the_model_saw_the_failing_then_the_passing_run(flow: Flow) -> None:
    requests = flow.requests("first")
    outputs = responses.outputs(requests[-1])
    runs = [text for text in outputs.values() if "pytest" in text or "passed" in text or "failed" in text]
    assert any("1 failed" in text for text in runs) and any("1 passed" in text for text in runs), runs


def test_an_mcp_record_lands_once_in_the_hooks_ledger_and_the_model_got_its_answer(flow: Flow) -> None:
    decisions = flow.state["decisions"]
    assert [(d["text"], d["reason"]) for d in decisions] == [(DECISION["text"], DECISION["reason"])]
    assert [e["type"] for e in flow.before_import].count("DecisionRecorded") == 1
    answers = [text for text in responses.outputs(flow.requests("first")[-1]).values() if '"DecisionRecorded"' in text]
    assert len(answers) == 1, "the model never received the record tool's answer"
    answer = json.loads(answers[0].split("Output:\n", 1)[-1])
    assert (answer["task"], answer["position"]) == (1, decisions[0]["position"])  # the hooks' task, the same ledger


def test_the_mcp_record_and_the_hooks_name_the_same_actor(flow: Flow) -> None:
    actors = {e["actor"] for e in flow.before_import if e["type"] in ("DecisionRecorded", "NextStepSet")}
    hooks = {e["actor"] for e in flow.before_import if e["type"] == "CommandRan"}
    assert actors == hooks == {"agent:codex"}


@pytest.mark.parametrize("run", ["resumed", "new", "compacted"])
def test_the_next_sessions_first_request_holds_the_brief_with_the_next_step(flow: Flow, run: str) -> None:
    first = flow.requests(run)[0]
    briefs = [text for text in responses.texts(first) if "Next step" in text and "Task #1" in text]
    assert briefs, f"the first request of the {run} session holds no brief"
    assert NEXT in flows.next_step_section(briefs[-1]), briefs[-1][:800]


def test_tasktrails_tools_are_on_every_sessions_first_request(flow: Flow) -> None:
    """`trail install codex --mcp-required`: Codex waits for the server instead of its 1 s grace."""
    offered = [run for run in flow.logs if "mcp__tasktrail" in responses.mcp_namespaces(flow.requests(run)[0])]
    assert offered == list(flow.logs), f"{len(offered)} of {len(flow.logs)} sessions"


def test_importing_the_rollout_adds_no_duplicates(flow: Flow) -> None:
    added = facts(flow.after_import) - facts(flow.before_import)
    assert not [fact for fact in added if facts(flow.before_import)[fact]], added


def test_importing_the_rollout_names_every_tool(flow: Flow) -> None:
    assert [e["summary"] for e in flow.after_import if str(e["summary"]).startswith("tool ?")] == []


def test_each_scripted_step_was_asked_for_once(flow: Flow) -> None:
    """Codex asked for every step of the first session once, plus once per tool_search it had to run first."""
    searched = [i for i in flow.requests("first")[-1]["input"] if i.get("type") == "tool_search_call"]
    assert len(flow.requests("first")) == len(FIRST) + len(searched)
    assert [len(flow.requests(run)) for run in ("resumed", "new", "compacted")] == [1, 1, 1]


def test_a_compaction_fires_pre_and_post_compact_and_the_model_still_gets_the_brief(flow: Flow) -> None:
    side = [r["body"] for r in sandbox.requests(flow.logs["compacted"]) if not r["body"].get("tools")]
    assert any("CONTEXT CHECKPOINT COMPACTION" in text for body in side for text in responses.texts(body))
    labels = [e["label"] for e in flow.before_import if e["type"] == "CheckpointMarked"]
    assert "session ended (other)" in labels  # each `codex exec` ends its session (SessionEnd)
    turns = [label for label in labels if label != "session ended (other)"]
    assert turns[-4:] == ["agent stopped", "before compaction (auto)", "after compaction (auto)", "agent stopped"]
    first = flow.requests("compacted")[0]
    # the summary replaced history
    assert any("Another language model started" in text for text in responses.texts(first))


def test_importing_does_not_take_the_compaction_summary_for_a_reply(flow: Flow) -> None:
    replies = [e for e in flow.after_import if e["type"] == "AgentReplied"]
    assert [r for r in replies if r["text"]["tail"] == "ok"] == []
