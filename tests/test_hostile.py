"""Hostile and broken input to the importers and the hook: no crash, no hang, a clear reason for each
rejected record, bounded storage, and everything valid around it still stored."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.capture import claude_code, codex
from ledger.capture.writer import append_unseen
from ledger.location import Location
from ledger.store import open_ledger
from tests.conftest import REPO, run_trail

SESSION = "33333333-aaaa-4bbb-8ccc-0000000000ff"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
known_keys = st.sampled_from(["type", "message", "content", "toolUseResult", "payload", "uuid", "sessionId",
                              "timestamp", "tool_use_id", "name", "input", "command", "role", "cwd"])
record_like = st.dictionaries(known_keys | st.text(max_size=6), json_values, max_size=8).map(
    lambda d: {**d, "type": d.get("type", "user")}
)
kinds = st.sampled_from(["user", "assistant", "summary", "system", "response_item", "event_msg", "turn_context",
                         "session_meta", "compacted", "weird-new-type"])
lines = st.one_of(
    record_like.map(json.dumps),
    st.builds(lambda k, d: json.dumps({**d, "type": k}), kinds, record_like),
    json_values.map(json.dumps),                      # valid JSON, wrong shape (lists, numbers, strings)
    st.text(max_size=60),                            # not JSON at all
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
)


def _good_prompt(n: int) -> str:
    return json.dumps({"type": "user", "uuid": f"ok{n}", "sessionId": SESSION, "timestamp": "2026-01-01T00:00:00Z",
                       "cwd": "/w", "message": {"role": "user", "content": f"valid prompt number {n}"}})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.lists(lines, max_size=12))
def test_mappers_survive_any_line_and_keep_the_valid_ones(garbage: list[str]) -> None:
    text = [_good_prompt(0), *garbage, _good_prompt(1)]
    numbered = list(enumerate(text, 1))
    session = claude_code.map_transcript(numbered, "fuzz")
    prompts = [f for _, f in session.items if str(f.get("text", "")).startswith("valid prompt number")]
    assert len(prompts) == 2
    assert all(s.reason and 1 <= s.line <= len(text) for s in session.skipped)
    codex.map_rollout(numbered, "fuzz")  # must not raise either


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.lists(lines, min_size=1, max_size=10))
def test_whatever_maps_is_stored_or_refused_with_a_reason(tmp_path_factory: Any, garbage: list[str]) -> None:
    home = tmp_path_factory.mktemp("fuzz")
    ledger = open_ledger(Location(url=f"sqlite:{home / 'ledger.db'}", home=home))
    try:
        session = claude_code.map_transcript(list(enumerate([_good_prompt(0), *garbage], 1)), "fuzz")
        task = ledger.open_task("fuzz")
        assert task.id is not None
        done = append_unseen(ledger, ledger_location(home), task.id, session.items)
        assert len(done.items) + len(done.rejected) == len(session.items)
        assert all(why for _, why in done.rejected)
        assert ledger.state(task.id).requirements  # the valid prompt landed
    finally:
        ledger.close()


def ledger_location(home: Path) -> Location:
    return Location(url=f"sqlite:{home / 'ledger.db'}", home=home)


def _hook(home: Path, payload: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("TRAIL_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
                          input=payload, env=env, capture_output=True, timeout=120,
                          # The folder `trail start` ran in (tasks are per project), when there is one.
                          cwd=home.parent if home.parent.is_dir() else None)


@pytest.mark.sqlite_only("measures the SQLite file's size")
def test_nasty_files_import_with_clear_reasons_and_bounded_storage(home: Path, tmp_path: Path) -> None:
    huge = "x" * (50 * 1024 * 1024)
    deep = "[" * 100_000 + "]" * 100_000
    records = [
        _good_prompt(0),
        json.dumps({"type": "assistant", "uuid": "a1", "sessionId": SESSION, "timestamp": "2026-01-01T00:00:01Z",
                    "message": {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "yes | head"}}]}}),
        json.dumps({"type": "user", "uuid": "r1", "sessionId": SESSION, "timestamp": "2026-01-01T00:00:02Z",
                    "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_big", "content": huge}]},
                    "toolUseResult": {"stdout": huge, "stderr": "", "interrupted": False}}),
        deep,
        "\x00\x01\x02 not json \xff",
        json.dumps({"type": "user", "message": 42}),
        json.dumps(["a", "list"]),
        '{"type": "user", "uuid": "torn", "message": {"role": "us',
        _good_prompt(1),
    ]
    transcript = tmp_path / "nasty.jsonl"
    transcript.write_text("\n".join(records) + "\n", encoding="utf-8", errors="surrogateescape")
    proc = run_trail("import", "claude-code", str(transcript), "--json", home=home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    skipped_lines = {s["line"] for s in report["skipped"]}
    assert {4, 5, 8} <= skipped_lines  # too deep, not JSON, torn: each named by its line
    assert all(s["reason"] for s in report["skipped"])
    assert report["events"].get("CommandRan") == 1 and report["events"].get("RequirementStated", 0) >= 1
    db = home / "ledger.db"
    run_trail("verify", home=home, check=True)
    size = db.stat().st_size + (db.with_name("ledger.db-wal").stat().st_size
                                if db.with_name("ledger.db-wal").exists() else 0)
    assert size < 5 * 1024 * 1024, f"50 MB of output was stored whole ({size} bytes)"
    cmd = json.loads(run_trail("log", "1", "--type", "CommandRan", "--json", home=home, check=True).stdout)[0]
    assert cmd["stdout"]["size"] == len(huge) and cmd["stdout"]["truncated"] is True
    assert cmd["stdout"]["sha256"] == hashlib.sha256(huge.encode()).hexdigest()


@pytest.mark.sqlite_only("measures the SQLite ledger file's size after the inbox is folded in")
def test_nasty_hook_payloads_never_block_and_never_crash(home: Path) -> None:
    run_trail("start", "hook target", home=home, check=True)
    big = json.dumps({"session_id": SESSION, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                      "tool_use_id": "toolu_h1", "tool_input": {"command": "python gen.py"},
                      "tool_response": {"stdout": "y" * (50 * 1024 * 1024), "stderr": ""}}).encode()
    for payload in (b"\x00\xff\xfe binary", b"[1, 2, 3]", b'{"hook_event_name": 5}', b"[" * 100_000, b"", big,
                    json.dumps({"session_id": SESSION, "hook_event_name": "Mystery", "x": {"y": [1]}}).encode()):
        proc = _hook(home, payload)
        assert proc.returncode == 0
        assert len(proc.stderr.decode().strip().splitlines()) <= 1
    listing = run_trail("list", home=home)  # folds the inbox in
    assert listing.returncode == 0, listing.stderr
    state = json.loads(run_trail("resume", "1", "--json", home=home, check=True).stdout)["state"]
    assert state["commands_total"] == 1 and state["commands"][0]["line"] == "python gen.py"
    db = home / "ledger.db"
    subprocess.run([sys.executable, "-c", f"import sqlite3; sqlite3.connect({str(db)!r}).execute("
                    "'PRAGMA wal_checkpoint(TRUNCATE)')"], check=True)
    assert db.stat().st_size < 5 * 1024 * 1024  # the folded inbox row is gone; the event is bounded
    run_trail("verify", home=home, check=True)


def test_hook_with_no_ledger_dir_yet(tmp_path: Path) -> None:
    home = tmp_path / "fresh" / "home"
    proc = _hook(home, json.dumps({"session_id": SESSION, "hook_event_name": "Stop"}).encode())
    assert proc.returncode == 0 and proc.stderr == b""


