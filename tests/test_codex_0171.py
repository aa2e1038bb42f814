"""The real Codex 0.171.0: what its hooks sent and the rollout it wrote for the same session.

``tests/fixtures/codex-0171/`` holds one session of the real ``codex exec`` 0.171.0, run in the
loopback-only sandbox (tests/e2e/sandbox.py) against a scripted model: a failing pytest, an
``apply_patch`` that fixes it, a passing pytest. ``hooks.jsonl`` is every hook payload it sent, in
order; the rollout is its file with the bulky parts cut (base instructions, developer messages,
world-state and token-usage records). Its folder was rewritten to ``/RUN``, which a test lays out
again under its own tmp folder. What it shows: the shell PostToolUse ``tool_response`` is the output
alone (no exit code), the rollout has ``item_completed`` CommandExecution/FileChange items and no
``exec_command_end``/``patch_apply_end``/``user_message`` events, and ``update_plan`` is refused in
``codex exec`` ("unsupported call").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.capture.agents.codex import mapper as codex
from ledger.capture.agents.codex.outcomes import lookup, with_outcomes
from ledger.domain import events as ev
from tests.conftest import SHARED, run_here, run_trail
from tests.test_hook import _env

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the facts read from an agent's records, not the store")

FIXTURE = Path(__file__).parent / "fixtures" / "codex-0171"
SESSION = "01a23103-ef9c-71f2-9a5f-0019535f8881"
ROLLOUT = next(FIXTURE.glob("rollout-*.jsonl"))
SESSIONS = "codex_home/sessions/2026/12/01"


def lay_out(root: Path, *, rollout: bool = True) -> tuple[Path, list[str]]:
    """The session's repository (a git work tree) and rollout under ``root``; its hook payloads there."""
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    if rollout:
        (root / SESSIONS).mkdir(parents=True)
        (root / SESSIONS / ROLLOUT.name).write_text(ROLLOUT.read_text().replace("/RUN", str(root)))
    payloads = [line.replace("/RUN", str(root)) for line in (FIXTURE / "hooks.jsonl").read_text().splitlines()]
    return repo, payloads


def hook(home: Path, cwd: Path, payload: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "codex"],
        input=payload, capture_output=True, text=True, env=_env(home), timeout=120, cwd=cwd,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc


def events(home: Path, cwd: Path) -> list[dict[str, Any]]:
    return list(json.loads(run_here("log", "--json", home=home, cwd=cwd, check=True).stdout))


def facts(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(type, source record) of every captured event: what must not repeat."""
    return [(r["type"], r["source"]["record"]) for r in rows if r.get("source")]


def test_the_fixture_is_what_codex_0171_sent() -> None:
    """The shapes this file is about, read off the fixture, so a regenerated one that differs says so."""
    payloads = [json.loads(line) for line in (FIXTURE / "hooks.jsonl").read_text().splitlines()]
    shells = [p for p in payloads if p["hook_event_name"] == "PostToolUse" and p["tool_name"] == "Bash"]
    assert len(shells) == 2 and all(isinstance(p["tool_response"], str) for p in shells)
    assert "exited with code" not in shells[0]["tool_response"] and "1 failed" in shells[0]["tool_response"]
    kinds = {(r["type"], r["payload"].get("type"), (r["payload"].get("item") or {}).get("type"))
             for r in map(json.loads, ROLLOUT.read_text().splitlines())}
    assert ("event_msg", "item_completed", "FileChange") in kinds
    assert ("event_msg", "item_completed", "CommandExecution") in kinds
    assert not {k for k in kinds if k[1] in ("exec_command_end", "patch_apply_end", "user_message")}


@pytest.mark.parametrize("order", ["hooks, then import", "import, then hooks"])
def test_live_capture_and_the_rollout_import_record_each_fact_once(home: Path, tmp_path: Path, order: str) -> None:
    repo, payloads = lay_out(tmp_path)
    sessions = str(tmp_path / "codex_home" / "sessions")
    if order == "import, then hooks":
        run_trail("import", "codex", sessions, home=home, cwd=repo, check=True)
    for payload in payloads:
        hook(home, repo, payload)
    first = events(home, repo)
    if order == "hooks, then import":
        run_trail("import", "codex", sessions, home=home, cwd=repo, check=True)
    rows = events(home, repo)
    keys = facts(rows)
    assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
    if order == "hooks, then import":
        # The import adds no fact the hooks held (only its own word on where the session stopped).
        assert {r["type"] for r in rows[len(first):]} <= {"StatusChanged"}
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_type.setdefault(r["type"], []).append(r)
    assert [(c["exit_code"], c["duration_ms"] is not None) for c in by_type["CommandRan"]] == [(1, True), (0, True)]
    assert [t["outcome"] for t in by_type["TestResult"]] == ["failed", "passed"]
    assert [f["path"] for f in by_type["FileChanged"]] == [str(repo / "calc.py")]
    assert "PlanUpdated" not in by_type  # codex exec refused the update_plan call: no plan was made
    brief = run_here("resume", home=home, cwd=repo, check=True).stdout
    assert "Failing now" not in brief and "exit ?" not in brief


def test_without_the_rollout_no_command_is_judged_failed_without_evidence(home: Path, tmp_path: Path) -> None:
    """The hook alone (rollout gone): exit codes unknown, each test run judged by pytest's own summary."""
    repo, payloads = lay_out(tmp_path, rollout=False)
    for payload in payloads:
        hook(home, repo, payload)
    rows = events(home, repo)
    assert [r["exit_code"] for r in rows if r["type"] == "CommandRan"] == [None, None]
    assert [r["outcome"] for r in rows if r["type"] == "TestResult"] == ["failed", "passed"]
    brief = run_here("resume", home=home, cwd=repo, check=True).stdout
    assert "Failing now" not in brief and "exit ?" not in brief and "passes since" in brief
    state = json.loads(run_here("resume", "--json", home=home, cwd=repo, check=True).stdout)["state"]
    assert state["commands_failed"] == 0


def test_the_outcome_is_read_from_the_rollouts_tail_only(tmp_path: Path) -> None:
    rollout = tmp_path / ROLLOUT.name
    rollout.write_text(ROLLOUT.read_text())
    found = lookup(str(rollout), {"call_T1", "call_T2", "call_nowhere"})
    assert {k: v.exit_code for k, v in found.items()} == {"call_T1": 1, "call_T2": 0}
    assert found["call_T2"].duration_ms == 1115  # the item's exact duration, not the text's rounding
    # Only the end is read: a call whose records are earlier than the tail is not found (no full scan).
    size = rollout.stat().st_size
    tail_start = ROLLOUT.read_text().index('"call_T2"')
    assert set(lookup(str(rollout), {"call_T1", "call_T2"}, tail=size - tail_start + 200)) == {"call_T2"}
    assert lookup(str(tmp_path / "gone.jsonl"), {"call_T1"}) == {}


def test_an_outcome_in_a_payload_is_never_taken_from_the_agent() -> None:
    """Only the fold sets the outcome key: one the payload arrived with is dropped before mapping."""
    payload = {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash", "tool_use_id": "c1",
               "tool_input": {"command": "pytest -q"}, "tool_response": "1 passed in 0.1s\n",
               "transcript_path": "/nowhere.jsonl", "_trail_rollout_outcome": {"exit_code": 3}}
    [clean] = with_outcomes([payload])
    [(kind, fields), _] = codex.hook_items(clean, 1, None)
    assert kind is ev.CommandRan and fields["exit_code"] is None


def test_the_shared_live_payloads_give_no_failure_without_evidence(home: Path, tmp_path: Path) -> None:
    """/work/shared's recording of the live run (its rollout not kept): the brief a fresh agent reads."""
    source = SHARED / "fixtures" / "live" / "codex-0.171.0-hooks.json"
    if not source.is_file():
        pytest.skip("../shared/fixtures/live is absent")
    for name in ("repo-a", "repo-b"):
        (tmp_path / name / ".git").mkdir(parents=True)
    for payload in json.loads(source.read_text()):
        hook(home, tmp_path / "repo-a", json.dumps(payload).replace("RUN/", f"{tmp_path}/"))
    brief = run_here("resume", home=home, cwd=tmp_path / "repo-a", check=True).stdout
    assert "exit ?" not in brief
    # "1 failed in 0.22s" is evidence (pytest said so), and the recording has no later passing run.
    assert "## Failing now (latest last)\n- [5] test pytest\n    1 failed in 0.22s" in brief


def test_compaction_and_session_end_are_checkpoints_of_what_they_carry() -> None:
    """PreCompact/PostCompact carry their trigger only (Codex's schemas), SessionEnd its reason (the live
    payload: ``"reason": "other"``, no model or turn): each a checkpoint, keyed by its inbox row."""
    base = {"session_id": SESSION, "transcript_path": None, "cwd": "/w", "model": "gpt-5.5", "turn_id": "t"}
    got = {}
    for event, extra in (("PreCompact", {"trigger": "auto"}), ("PostCompact", {"trigger": "manual"}),
                         ("SessionEnd", {"reason": "other"})):
        payload = {**base, "hook_event_name": event, **extra}
        if event == "SessionEnd":
            payload = {k: v for k, v in payload.items() if k not in ("model", "turn_id")}
        [(kind, fields)] = codex.hook_items(payload, 41, None)
        assert kind is ev.CheckpointMarked and fields["source"].record == "hook:41"
        got[event] = fields["label"]
    assert got == {"PreCompact": "before compaction (auto)", "PostCompact": "after compaction (manual)",
                   "SessionEnd": "session ended (other)"}
    # A PreToolUse (recorded live, not installed) lands as nothing.
    assert codex.hook_items({**base, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                             "tool_input": {"command": "ls"}, "tool_use_id": "c"}, 42, None) == []


def test_a_duration_the_payload_gives_is_kept_on_the_command() -> None:
    payload = {"session_id": SESSION, "hook_event_name": "PostToolUse", "cwd": "/w", "tool_name": "Bash",
               "tool_use_id": "c9", "tool_input": {"command": "make build"}, "tool_response": "built\n",
               "duration_ms": 1234}
    [(kind, fields)] = codex.hook_items(payload, 1, None)
    assert kind is ev.CommandRan and fields["duration_ms"] == 1234 and fields["exit_code"] is None


def test_tasktrails_own_mcp_calls_are_not_mirrored_as_tool_calls() -> None:
    """The live payload of Codex calling ``mcp__tasktrail__record``: the server appended the decision itself."""
    payload = {"session_id": SESSION, "hook_event_name": "PostToolUse", "cwd": "/w",
               "tool_name": "mcp__tasktrail__record", "tool_use_id": "call_FK03002HPDgPTqeoTH2p4",
               "tool_input": {"kind": "decision", "text": "Keep add() a pure function"},
               "tool_response": {"content": [{"type": "text", "text": "{}"}], "isError": False}}
    assert codex.hook_items(payload, 1, None) == []
    other = {**payload, "tool_name": "mcp__github__search"}
    assert [k.__name__ for k, _ in codex.hook_items(other, 1, None)] == ["ToolCalled", "ToolResult"]


def test_text_codex_put_in_the_users_turn_is_never_a_prompt() -> None:
    """0.171 marks each user-role content item's provenance: only what the user typed is a prompt, whatever
    its opening (a harness message not starting with a known tag is still Codex's own)."""
    lines = ROLLOUT.read_text().splitlines()
    harness = json.loads(next(line for line in lines if '"harness"' in line))
    harness["payload"]["content"][0]["text"] = "Heads up: the sandbox was reset."
    numbered = list(enumerate([json.dumps(harness) if '"harness"' in line else line for line in lines], 1))
    session = codex.map_rollout(numbered, ROLLOUT.stem)
    said = [f["text"] for kind, f in session.items if kind in (ev.RequirementStated, ev.CorrectionMade)]
    assert said == ["Fix the add function in calc.py so the tests pass, then add a test for negative numbers."]


def test_the_compaction_requests_answer_is_the_summary_not_a_reply() -> None:
    """0.171 writes the compaction request's answer as an assistant message right before ``compacted``, whose
    message ends with it (as the real Codex did in tests/e2e/test_codex.py's compacted session)."""
    summary = "Fixed add(); next: the negative-numbers test."
    lines = [
        {"type": "session_meta", "payload": {"id": SESSION, "cwd": "/w"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": summary}]}},
        {"type": "compacted", "payload": {"message": "Another language model started to solve this problem … Here is "
                                                     f"the summary produced by the other language model:\n{summary}"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",  # the prompt that resumed it
                                              "content": [{"type": "input_text", "text": "Go on."}]}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Going on."}]}},
    ]
    numbered = [(n, json.dumps({"timestamp": "2026-12-01T10:00:00Z", **line})) for n, line in enumerate(lines, 1)]
    items = codex.map_rollout(numbered, "rollout").items
    assert [str(f["text"].tail) for kind, f in items if kind is ev.AgentReplied] == ["Going on."]
    [compacted] = [f for kind, f in items if kind is ev.ContextCompacted]
    assert str(compacted["summary"].tail) == summary  # Codex's preamble for the next model dropped
