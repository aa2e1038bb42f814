"""Codex "code mode": the one ``exec`` tool whose input is JavaScript calling the usual tools.

Rollouts of our own in the shape real code-mode rollouts have (a ``custom_tool_call`` named ``exec``, its
``custom_tool_call_output`` a list of ``input_text`` parts after a ``Script completed`` header; a cell still
running answered ``Script running with cell ID N`` and ended by a ``wait`` poll; a cell's ``apply_patch``
recorded by a ``patch_apply_end`` with an ``exec-<uuid>`` id of its own), imported through the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.capture.agents.codex import cells, mapper
from ledger.domain import events as ev
from tests.conftest import run_trail

pytestmark = pytest.mark.sqlite_only("one backend is enough: the facts read from an agent's records, not the store")

SESSION = "44444444-dddd-7eee-8fff-000000000004"
CWD = "/work/cm"


class Rollout:
    """A rollout being written: records with increasing times."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.add("session_meta", {"id": SESSION, "cwd": CWD, "originator": "Codex Desktop", "cli_version": "0.144.0"})
        self.add("turn_context", {"turn_id": "t1", "cwd": CWD})
        self.add("event_msg", {"type": "user_message", "message": "Make the tests pass"})

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        second = len(self.records)
        self.records.append({"timestamp": f"2026-11-30T10:{second // 60:02d}:{second % 60:02d}.000Z",
                             "type": kind, "payload": payload})

    def cell(self, call_id: str, code: str, *printed: str, head: str = "Script completed\nWall time 1.5 seconds\n",
             between: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
        self.add("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                                   "name": "exec", "input": code})
        for payload in between:
            self.add("event_msg", payload)
        parts = [{"type": "input_text", "text": head + "Output:\n"}] + [{"type": "input_text", "text": p}
                                                                       for p in printed]
        self.add("response_item", {"type": "custom_tool_call_output", "call_id": call_id, "output": parts})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        return path


def exec_js(args: dict[str, Any], show: str = "text(JSON.stringify(r))") -> str:
    return f"const r = await tools.exec_command({json.dumps(args)}); {show}\n"


def result(code: int, output: str, wall: float = 0.25) -> str:
    """``JSON.stringify`` of an exec_command result, as a cell prints it."""
    return json.dumps({"chunk_id": "a1b2c3", "wall_time_seconds": wall, "exit_code": code,
                       "original_token_count": 12, "output": output})


def imported(home: Path, ledger: Ledger, path: Path) -> list[ev.TaskEvent]:
    proc = run_trail("import", "codex", str(path), "--json", home=home, check=True)
    assert json.loads(proc.stdout)["skipped"] == []
    return list(ledger.task_events(ledger.task_id(1)))


def of(events: list[ev.TaskEvent], cls: type[ev.TaskEvent]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


PATCH = "*** Begin Patch\n*** Update File: src/calc.py\n@@\n-    return a - b\n+    return a + b\n*** End Patch\n"


def test_a_cells_command_patch_and_plan_are_the_events_direct_calls_give(home: Path, ledger: Ledger,
                                                                         tmp_path: Path) -> None:
    r = Rollout()
    r.cell("c-plan", 'const r = await tools.update_plan({explanation:"first", plan:[{step:"Run the tests",'
                     ' status:"in_progress"},{step:"Fix add()", "status":"pending"},]}); text(r)\n', "{}")
    r.cell("c-fail", exec_js({"cmd": "pytest -q", "workdir": CWD, "yield_time_ms": 10000}),
           result(1, "F.\nFAILED tests/test_calc.py::test_add - assert -1 == 3\n1 failed, 1 passed in 0.03s"))
    r.cell("c-patch", f"const patch = {json.dumps(PATCH)};\nconst result = await tools.apply_patch(patch);\n"
                      "text(result);\n", "{}")
    r.cell("c-pass", exec_js({"cmd": "pytest -q", "workdir": CWD}, "text(r.output)"), "..\n2 passed in 0.02s")
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))

    failed, passed = of(events, ev.CommandRan)
    assert (failed.shell, failed.cwd, failed.exit_code, failed.duration_ms) == ("pytest -q", CWD, 1, 250)
    assert failed.source is not None and failed.source.record == "c-fail"  # the key a direct call has
    assert failed.stdout is not None and "1 failed, 1 passed" in failed.stdout.tail
    # ``text(r.output)`` prints the output alone: no exit code is claimed; the cell's wall time is its time.
    assert passed.exit_code is None and passed.duration_ms == 1500
    assert [t.outcome for t in of(events, ev.TestResult)] == ["failed", "passed"]  # the runner's summary decides
    (change,) = of(events, ev.FileChanged)
    assert change.path == f"{CWD}/src/calc.py" and change.operation == "modified"
    assert change.diff is not None and "+    return a + b" in change.diff.tail
    (plan,) = of(events, ev.PlanUpdated)
    assert [(s.text, s.status) for s in plan.steps] == [("Run the tests", "in_progress"), ("Fix add()", "pending")]
    assert not of(events, ev.ToolCalled) and not of(events, ev.ToolResult)  # every call was read

    again = run_trail("import", "codex", str(tmp_path / "rollout.jsonl"), "--json", home=home, check=True)
    assert json.loads(again.stdout)["events_total"] == 0  # keys from content: a re-import adds nothing


def test_a_patch_codex_recorded_while_the_cell_ran_is_recorded_once(home: Path, ledger: Ledger,
                                                                    tmp_path: Path) -> None:
    r = Rollout()
    diff = "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    end = {"type": "patch_apply_end", "call_id": "exec-7de8685a-5b3b-4ef0-88fd-2bf43efa61ef", "success": True,
           "changes": {f"{CWD}/src/calc.py": {"type": "update", "unified_diff": diff, "move_path": None}}}
    r.cell("c-patch", f"const patch = {json.dumps(PATCH)};\nawait tools.apply_patch(patch);\n", "{}", between=[end])
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))
    (change,) = of(events, ev.FileChanged)
    assert change.diff is not None and "@@ -1,2 +1,2 @@" in change.diff.tail  # Codex's numbered diff, once


def test_a_cell_still_running_ends_with_the_wait_that_finished_it(home: Path, ledger: Ledger,
                                                                  tmp_path: Path) -> None:
    r = Rollout()
    r.cell("c-long", exec_js({"cmd": "npm test", "workdir": CWD}), head="Script running with cell ID 19\n"
           "Wall time 10.0 seconds\n")
    for n, (head, printed) in enumerate([("Script running with cell ID 19\nWall time 1.0 seconds\n", []),
                                         ("Script completed\nWall time 0.0 seconds\n",
                                          [result(1, "Tests: 1 failed, 4 passed, 5 total", wall=10.67)])]):
        r.add("response_item", {"type": "function_call", "name": "wait", "call_id": f"w{n}",
                                "arguments": json.dumps({"cell_id": "19", "yield_time_ms": 1000})})
        r.add("response_item", {"type": "function_call_output", "call_id": f"w{n}", "output": [
            {"type": "input_text", "text": head + "Output:\n"}, *({"type": "input_text", "text": p} for p in printed)]})
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))
    (command,) = of(events, ev.CommandRan)
    assert (command.shell, command.exit_code, command.duration_ms) == ("npm test", 1, 10670)
    assert command.source is not None and command.source.record == "c-long"
    assert command.timestamp.second == 8  # when the wait that finished it answered
    assert [t.outcome for t in of(events, ev.TestResult)] == ["failed"]
    assert not of(events, ev.ToolCalled)  # the polls are no actions of their own


def test_several_commands_share_one_output_and_claim_no_exit_code(home: Path, ledger: Ledger,
                                                                  tmp_path: Path) -> None:
    r = Rollout()
    code = ('const a = await tools.exec_command({"cmd":"ruff check src"});\ntext(a.output);\n'
            'const b = await tools.exec_command({"cmd":"pytest -q"});\ntext(b.output);\n')
    r.cell("c-two", code, "All checks passed!\n", "3 passed in 0.1s\n")
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))
    first, second = of(events, ev.CommandRan)
    assert (first.shell, second.shell) == ("ruff check src", "pytest -q")
    assert first.exit_code is None and second.exit_code is None
    assert first.duration_ms is None and second.duration_ms is None  # the cell's time is not either one's
    assert first.stdout is None and second.stdout is not None
    assert second.stdout.tail.startswith("[one code cell ran 2 commands")  # said so, in the event
    assert "All checks passed!" in second.stdout.tail and "3 passed" in second.stdout.tail
    assert [e.source.record for e in (first, second) if e.source] == ["c-two:0", "c-two:1"]


def test_what_cannot_be_read_stays_the_cell_as_before(home: Path, ledger: Ledger, tmp_path: Path) -> None:
    r = Rollout()
    loop = 'for (const c of ["ls", "pwd"]) { const r = await tools.exec_command({cmd: c}); text(r.output); }\n'
    r.cell("c-loop", loop, "a.py\n", "/work/cm\n")
    mixed = ('const s = await tools.web__run({search_query:[{q:"pytest fixtures"}]}); text(s);\n'
             'const r = await tools.exec_command({"cmd":"git status --short"}); text(JSON.stringify(r));\n')
    r.cell("c-mixed", mixed, "results…", result(0, " M src/calc.py"))
    r.cell("c-broke", exec_js({"cmd": "make"}), "TypeError: r.output is undefined",
           head="Script failed\nWall time 0.2 seconds\n")
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))
    called = {e.call_id: e for e in of(events, ev.ToolCalled)}
    results = {e.call_id: e for e in of(events, ev.ToolResult)}
    assert set(called) == set(results) == {"c-loop", "c-mixed", "c-broke"} and {e.tool for e in called.values()} == {
        "exec"}
    assert results["c-loop"].ok and "for (const c of" in called["c-loop"].input.tail
    assert not results["c-broke"].ok and results["c-broke"].output.tail.startswith("Script failed")
    commands = {e.source.record: e for e in of(events, ev.CommandRan) if e.source}
    # The command read from a cell is its event (with the exit code it printed), beside the cell's pair;
    # the failed cell printed no result: its command ran with no exit code known.
    assert set(commands) == {"c-mixed", "c-broke"} and commands["c-mixed"].exit_code == 0
    assert commands["c-broke"].exit_code is None


def test_a_declined_command_in_a_cell_is_what_the_next_prompt_corrects(home: Path, ledger: Ledger,
                                                                        tmp_path: Path) -> None:
    r = Rollout()
    r.cell("c-no", exec_js({"cmd": "rm -rf build"}), result(-1, "exec command rejected by user"))
    r.add("event_msg", {"type": "user_message", "message": "no, don't delete build, clean it with make clean"})
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))
    assert not of(events, ev.CommandRan)
    (correction,) = of(events, ev.CorrectionMade)
    assert correction.wrong == "ran rm -rf build"


def test_the_scanner_reads_literals_and_refuses_everything_else() -> None:
    src = (
        '// tools.exec_command({"cmd":"in a comment"})\n'
        'const note = "tools.apply_patch(\\"in a string\\")";\n'
        "await tools.exec_command({'cmd': 'echo \\'hi\\'', workdir: `/w`, n: -1.5e2, on: true,});\n"
        "await tools.exec_command({cmd: `echo ${x}`});\n"
        'await tools.exec_command({"cmd": "a" + b});\n'
        "const p = 'x'; const p = 'y'; await tools.apply_patch(p);\n"
        "await tools.apply_patch(`*** Begin Patch\n*** End Patch`);\n"
        "/* tools.update_plan({plan: []}) */ mytools.exec_command({}); await tools.list_mcp_resources();\n"
    )
    got = [(c.name, c.args) for c in cells.tool_calls(src)]
    assert got == [
        ("exec_command", {"cmd": "echo 'hi'", "workdir": "/w", "n": -150.0, "on": True}),
        ("exec_command", None),  # a template with a substitution
        ("exec_command", None),  # an expression
        ("apply_patch", None),  # a name bound twice
        ("apply_patch", "*** Begin Patch\n*** End Patch"),
        ("list_mcp_resources", None),
    ]


def test_a_broken_or_hostile_script_is_unread_not_an_error() -> None:
    deep = "tools.exec_command(" + "[" * 100_000 + "]" * 100_000 + ")"  # deeper than json can recurse
    assert [(c.name, c.args) for c in cells.tool_calls(deep)] == [("exec_command", None)]
    # An argument that never closes: neither it nor a later call is read (each would scan the rest again).
    unclosed = 'await tools.update_plan({plan: [\nawait tools.exec_command({"cmd": "ls"})\n'
    assert [(c.name, c.args) for c in cells.tool_calls(unclosed)] == [("update_plan", None), ("exec_command", None)]
    many = 'await tools.exec_command({"cmd": "ls"});' * (cells.READ_CALLS + 1)
    assert [c.args for c in cells.tool_calls(many)][cells.READ_CALLS - 1:] == [{"cmd": "ls"}, None]
    assert cells.exec_result("[" * 100_000) is None


def test_a_cells_output_header_and_printed_parts() -> None:
    out = cells.read_output([{"type": "input_text", "text": "Script completed\nWall time 3.4 seconds\nOutput:\n"},
                             {"type": "input_text", "text": result(2, "boom")}])
    assert (out.status, out.cell_id, out.wall_ms) == ("completed", None, 3400)
    assert [cells.exec_result(p) for p in out.parts] == [json.loads(result(2, "boom"))]
    running = cells.read_output("Script running with cell ID 9\nWall time 10.0 seconds\nOutput:\n")
    assert (running.status, running.cell_id, running.parts) == ("running", "9", [])
    assert cells.read_output("Process exited with code 0\n").status is None  # not a cell's output
    assert cells.exec_result('{"a": 1}') is None and cells.exec_result("{not json") is None


def test_a_cells_commands_codex_recorded_are_taken_from_their_records_and_keyed_as_the_hooks_key_them(
        home: Path, ledger: Ledger, tmp_path: Path) -> None:
    """0.171 writes a CommandExecution item per command a cell runs, under the ``exec-<uuid>`` id its
    hooks carry (tests/e2e/test_codex_code_mode.py): that record is the command, once; a command without
    one is still read from the script; a plan, which has no record, is keyed by its turn and steps."""
    inner = "exec-0b7f71bc-204b-4cf1-8a4e-937de8c4c5f2"
    item = {"type": "item_completed", "item": {"type": "CommandExecution", "id": inner, "status": "failed",
            "command": ["/bin/bash", "-lc", "pytest -q"], "cwd": f"file://{CWD}", "exit_code": 1,
            "duration": {"secs": 1, "nanos": 429_000_000}, "aggregated_output": "1 failed in 0.2s\n"}}
    plan = {"plan": [{"step": "Fix add()", "status": "in_progress"}]}
    code = (f"await tools.update_plan({json.dumps(plan)});\n" + exec_js({"cmd": "pytest -q"})
            + exec_js({"cmd": "ruff check ."}))
    r = Rollout()
    r.cell("c-two", code, result(1, "1 failed in 0.2s\n"), result(0, "All checks passed!\n"), between=[item])
    events = imported(home, ledger, r.write(tmp_path / "rollout.jsonl"))
    recorded, read = of(events, ev.CommandRan)
    assert (recorded.shell, recorded.exit_code, recorded.duration_ms) == ("pytest -q", 1, 1429)
    assert recorded.source is not None and recorded.source.record == inner
    assert read.shell == "ruff check ." and read.source is not None and read.source.record == "c-two:2"
    (planned,) = of(events, ev.PlanUpdated)
    live = mapper.hook_items({"hook_event_name": "PostToolUse", "session_id": SESSION, "turn_id": "t1", "cwd": CWD,
                              "tool_name": "update_plan", "tool_use_id": "exec-9bc7968b-fd03-40e5-aa98-921482bb66d9",
                              "tool_input": plan, "tool_response": "Plan updated"}, 7, None)
    assert [fields["source"] for _, fields in live] == [planned.source]
    assert planned.source is not None and planned.source.record.startswith("cell-plan:t1:")
    direct = mapper.hook_items({"hook_event_name": "PostToolUse", "session_id": SESSION, "turn_id": "t1",
                                "tool_name": "update_plan", "tool_use_id": "call_direct", "tool_input": plan,
                                "tool_response": "Plan updated"}, 8, None)
    assert [fields["source"].record for _, fields in direct] == ["call_direct#plan"]  # a direct call: its own id
