"""The real Codex CLI 0.171 in code mode (``-c features.code_mode=true -c features.code_mode_only=true``):
the model sees one custom tool, ``exec``, whose JavaScript input calls ``tools.exec_command``,
``tools.apply_patch``, ``tools.update_plan`` and the MCP tools, and ``wait``; no direct shell or patch tool.

One flow serves every test: a session whose first cell sets the plan, runs a failing pytest, patches
calc.py and runs a passing pytest, whose second cell records the next step through tasktrail's MCP server,
then a text reply; `codex exec resume --last`; then the rollout imported into the same ledger. Beside
`trail install codex`'s hooks a recorder hook (this file's ``RECORDER``, trusted as install trusts ours)
keeps every PreToolUse and PostToolUse payload Codex sends, as it sent it.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from cli import codextrust
from ledger.capture.agents.codex import cells
from tests.e2e import flows, responses
from tests.e2e.test_codex import NEXT, PATCH, PLAN, PROMPT, PYTEST, Flow, facts

CODE_MODE = ["-c", "features.code_mode=true", "-c", "features.code_mode_only=true"]
"""0.171's ``code_mode_host`` is on by default but offers no ``exec``; ``code_mode`` (under development)
offers it beside the direct tools, ``code_mode_only`` instead of them."""
CELL = "\n".join([
    f"await tools.update_plan({json.dumps({'plan': PLAN})});",
    f"const failing = await tools.exec_command({json.dumps({'cmd': PYTEST})});",
    "text(JSON.stringify(failing));",
    f"await tools.apply_patch({json.dumps(PATCH)});",
    f"const passing = await tools.exec_command({json.dumps({'cmd': PYTEST})});",
    "text(JSON.stringify(passing));",
])
RECORD = (f'const r = await tools.mcp__tasktrail__record({{kind: "next_step", text: {json.dumps(NEXT)}}});\n'
          "text(JSON.stringify(r));")
FIRST = [[{"exec": CELL}], [{"exec": RECORD}], [{"text": "Fixed add() in calc.py; the tests pass."}]]
RECORDER = "import sys\nwith open(sys.argv[1], 'a') as out:\n    out.write(sys.stdin.read().strip() + '\\n')\n"
"""A hook that appends the payload it is given, one JSON line, and prints nothing."""
RECORDED = ("PreToolUse", "PostToolUse")
INNER = re.compile(r"exec-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def add_recorder(codex_home: Path, script: Path, out: Path) -> None:
    """A recorder hook for each of ``RECORDED`` after the installed ones in ``hooks.json``, and its trust
    record in ``config.toml`` (``codex exec`` skips a hook without one)."""
    script.write_text(RECORDER)
    settings = json.loads((codex_home / "hooks.json").read_text())
    handler = {"type": "command", "command": f"{sys.executable} {script} {out}"}
    source = codextrust.hooks_file(codex_home)
    trust = []
    for event in RECORDED:
        groups = settings["hooks"].setdefault(event, [])
        groups.append({"hooks": [handler]})
        key = codextrust.hook_key(source, event, len(groups) - 1, 0)
        trust.append(f'[hooks.state."{key}"]\ntrusted_hash = "{codextrust.hook_hash(event, None, handler)}"\n')
    (codex_home / "hooks.json").write_text(json.dumps(settings, indent=2))
    with (codex_home / "config.toml").open("a") as config:
        config.write("\n" + "\n".join(trust))


@pytest.fixture(scope="module")
def flow(codex: Path, tmp_path_factory: pytest.TempPathFactory) -> Flow:
    flow = Flow.installed(tmp_path_factory.mktemp("codex-code-mode"))
    root = flow.root
    add_recorder(root / "codex_home", root / "recorder.py", root / "hooks.jsonl")
    flow.codex("first", codex, [*CODE_MODE, PROMPT], FIRST)
    flow.codex("resumed", codex, ["resume", "--last", *CODE_MODE, "Continue with the next step."],
               [[{"text": "Resumed: the next step is the negative-numbers test."}]])
    flow.state, flow.before_import = flow.json("resume")["state"], flow.json("log")
    flow.state["hooks"] = [json.loads(line) for line in (root / "hooks.jsonl").read_text().splitlines()]
    rollouts = sorted((root / "codex_home" / "sessions").rglob("rollout-*.jsonl"))
    flow.state["rollouts"] = [str(path) for path in rollouts]
    imported = flow.trail("import", "codex", *map(str, rollouts))
    assert imported.returncode == 0, imported.stderr
    flow.after_import = flow.json("log")
    flow.state["after_import"] = flow.json("resume")["state"]
    print("\ncodex code mode e2e seconds per run:", {k: round(v, 1) for k, v in flow.seconds.items()},
          file=sys.stderr)
    return flow


def test_the_model_sees_exec_and_wait_instead_of_the_direct_tools(flow: Flow) -> None:
    tools = {t.get("name"): t for t in flow.requests("first")[0]["tools"]}
    assert tools["exec"]["type"] == "custom" and tools["exec"]["format"]["syntax"] == "lark"
    assert "wait" in tools
    assert not {"exec_command", "apply_patch", "update_plan", "shell"} & tools.keys()
    declared = tools["exec"]["description"]
    for name in ("exec_command(args", "apply_patch(input: string)", "update_plan(args"):
        assert f"declare const tools: {{ {name}" in declared, name


def test_each_call_a_cell_makes_fires_its_own_hooks_and_the_cell_none(flow: Flow) -> None:
    """Codex 0.171 runs Pre- and PostToolUse for every ``tools.X`` a cell calls, as for the direct call,
    under an ``exec-<uuid>`` id of Codex's; the ``exec`` call itself fires neither."""
    hooks = flow.state["hooks"]
    post = [h for h in hooks if h["hook_event_name"] == "PostToolUse"]
    assert [h["tool_name"] for h in post] == ["update_plan", "Bash", "apply_patch", "Bash", "mcp__tasktrail__record"]
    pre = [h for h in hooks if h["hook_event_name"] == "PreToolUse"]
    assert [(h["tool_name"], h["tool_use_id"]) for h in pre] == [(h["tool_name"], h["tool_use_id"]) for h in post]
    assert all(INNER.fullmatch(h["tool_use_id"]) and cells.inner_call(h["tool_use_id"]) for h in post)
    assert post[0]["tool_input"] == {"plan": PLAN} and post[0]["tool_response"] == "Plan updated"
    assert [h["tool_input"] for h in post[1:4]] == [{"command": PYTEST}, {"command": PATCH}, {"command": PYTEST}]
    assert "1 failed" in post[1]["tool_response"] and "1 passed" in post[3]["tool_response"]
    assert "Exit code" not in post[1]["tool_response"]  # the bare output, as for a direct call: no exit code
    assert post[2]["tool_response"].startswith("Exit code: 0\n")
    assert post[4]["tool_response"]["structuredContent"]["event"] == "NextStepSet"
    turns = {h["turn_id"] for h in post}
    assert len(turns) == 1 and all(isinstance(t, str) and t for t in turns)


def test_live_capture_records_each_command_its_exit_code_and_the_test_run(flow: Flow) -> None:
    commands = flow.state["commands"]
    assert [(c["line"], c["exit_code"]) for c in commands] == [(PYTEST, 1), (PYTEST, 0)]
    assert flow.state["tests"]["pytest"]["outcome"] == "passed"


def test_live_capture_records_the_patched_file_and_the_plan(flow: Flow) -> None:
    assert (flow.repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"  # the cell's patch applied
    assert [path for path in flow.state["files"] if path.endswith("calc.py")], flow.state["files"]
    changed = [e for e in flow.before_import if e["type"] == "FileChanged"]
    assert len(changed) == 1
    assert [(s["text"], s["status"]) for s in flow.state["plan"]["steps"]] == [(p["step"], p["status"]) for p in PLAN]
    assert [e["type"] for e in flow.before_import].count("PlanUpdated") == 1


def test_the_cell_itself_is_no_fact_of_its_own(flow: Flow) -> None:
    assert [e for e in flow.after_import if e["type"] in ("ToolCalled", "ToolResult")] == []


def test_the_next_step_recorded_from_a_cell_reaches_the_resumed_sessions_brief(flow: Flow) -> None:
    assert [e["type"] for e in flow.before_import].count("NextStepSet") == 1
    first = flow.requests("resumed")[0]
    briefs = [text for text in responses.texts(first) if "Next step" in text and "Task #1" in text]
    assert briefs, "the resumed session's first request holds no brief"
    assert NEXT in flows.next_step_section(briefs[-1]), briefs[-1][:800]


def test_the_model_got_each_commands_result_in_the_cells_output(flow: Flow) -> None:
    outputs = responses.outputs(flow.requests("first")[1])
    (cell,) = [json.loads(text) for text in outputs.values()]
    read = cells.read_output(cell)  # the shape the importer reads
    assert read.status == "completed" and read.wall_ms is not None
    results = [cells.exec_result(part) for part in read.parts]
    assert [r["exit_code"] for r in results if r] == [1, 0]
    assert "1 failed" in results[0]["output"] and "1 passed" in results[1]["output"]  # type: ignore[index]


def test_the_rollout_holds_each_inner_command_and_patch_under_the_hooks_id(flow: Flow) -> None:
    """0.171 writes an ``item_completed`` CommandExecution and FileChange per call a cell made, keyed by the
    ``exec-<uuid>`` its hooks carry (the plan has none): what lets an import land on the live keys."""
    records = [json.loads(line) for path in flow.state["rollouts"] for line in Path(path).read_text().splitlines()]
    items = [r["payload"]["item"] for r in records
             if r.get("type") == "event_msg" and r["payload"].get("type") == "item_completed"]
    ids = [(i["type"], i["id"]) for i in items if i["type"] in ("CommandExecution", "FileChange")]
    post = [h for h in flow.state["hooks"] if h["hook_event_name"] == "PostToolUse"]
    assert ids == [("CommandExecution", post[1]["tool_use_id"]), ("FileChange", post[2]["tool_use_id"]),
                   ("CommandExecution", post[3]["tool_use_id"])]
    assert [i.get("exit_code") for i in items if i["type"] == "CommandExecution"] == [1, 0]


def test_importing_the_rollout_adds_no_fact_live_capture_had(flow: Flow) -> None:
    added = facts(flow.after_import) - facts(flow.before_import)
    assert not [fact for fact in added if facts(flow.before_import)[fact]], added
    kinds = ("CommandRan", "TestResult", "FileChanged", "PlanUpdated", "NextStepSet")
    counted = Counter(e["type"] for e in flow.after_import if e["type"] in kinds)
    assert counted == Counter(e["type"] for e in flow.before_import if e["type"] in kinds)
    assert counted == {"CommandRan": 2, "TestResult": 2, "FileChanged": 1, "PlanUpdated": 1, "NextStepSet": 1}
    after = flow.state["after_import"]
    assert [(c["line"], c["exit_code"]) for c in after["commands"]] == [(PYTEST, 1), (PYTEST, 0)]


def test_each_scripted_step_was_asked_for_once(flow: Flow) -> None:
    assert [len(flow.requests(run)) for run in ("first", "resumed")] == [len(FIRST), 1]
