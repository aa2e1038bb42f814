"""bench.fidelity: the matching rules, the scoring and the naive baseline on inline data (always run),
the annotations file's shape, and one real run on two sessions when ../shared/fixtures is beside the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import fidelity as fid

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"

ANNOTATION: dict[str, Any] = {
    "sessions": [
        {
            "file": "claude-code/demo-session.jsonl",
            "agent": "claude-code",
            "held_out": True,
            "facts": [
                {"kind": "file_edited", "any_of": [["src/app.py"]]},
                {"kind": "correction", "ref": "L9", "any_of": [["don't mock", "database"], ["use the real db"]]},
                {"kind": "last_failed_command", "any_of": [["pytest tests/test_x.py"]]},
                {"kind": "next_step", "any_of": [["add the migration", "alembic"]]},
            ],
        }
    ]
}

BRIEF = """# Task #1 demo
## Files changed
- /home/u/proj/SRC/App.py (modified)
## Corrections
- Use   the REAL
  DB, not a mock
## Last results
- $ pytest tests/test_y.py -> exit 1
## Next step
add the migration
"""


def _session() -> fid.Session:
    (session,) = fid.parse_annotations(ANNOTATION)
    return session


def test_annotations_parse_into_sessions_and_facts() -> None:
    session = _session()
    assert session.name == "demo-session"
    assert session.agent == "claude-code" and session.held_out
    assert [f.kind for f in session.facts] == ["file_edited", "correction", "last_failed_command", "next_step"]
    assert session.facts[1].any_of == (("don't mock", "database"), ("use the real db",))
    assert session.facts[1].ref == "L9"


def test_matching_is_case_insensitive_and_whitespace_normalised() -> None:
    edited, correction, *_ = _session().facts
    assert fid.fact_present(edited, BRIEF)  # SRC/App.py
    assert fid.fact_present(correction, BRIEF)  # "Use   the REAL\n  DB"
    assert not fid.fact_present(edited, "src / app.py")
    assert fid.normalise("  A\t b\n\nC  ") == "a b c"


def test_typographic_quotes_match_straight_ones() -> None:
    correction = _session().facts[1]
    assert fid.fact_present(correction, "Don\u2019t MOCK the\ndatabase")


def test_any_alternative_counts_but_every_phrase_of_it_is_needed() -> None:
    correction = _session().facts[1]
    assert fid.fact_present(correction, "please don't mock the database")  # first alternative
    assert fid.fact_present(correction, "use the real DB")  # second alternative
    assert not fid.fact_present(correction, "don't mock anything")  # half of the first, none of the second
    next_step = _session().facts[3]
    assert not fid.fact_present(next_step, BRIEF)  # "add the migration" is there, "alembic" is not
    assert fid.fact_present(next_step, BRIEF + "with alembic")


def test_score_is_the_share_of_facts_present() -> None:
    facts = _session().facts
    missing = fid.missing_facts(facts, BRIEF)
    assert [f.kind for f in missing] == ["last_failed_command", "next_step"]  # test_y failed, not test_x
    assert fid.score(facts, BRIEF) == 0.5
    assert fid.score(facts, "") == 0.0
    assert fid.score((), "anything") == 1.0


@pytest.mark.parametrize(
    "broken",
    [
        {"kind": "guess", "any_of": [["x"]]},
        {"kind": "correction", "any_of": []},
        {"kind": "correction", "any_of": [[]]},
        {"kind": "correction", "any_of": [["ok", " "]]},
        {"kind": "correction", "any_of": ["not a list"]},
    ],
)
def test_malformed_facts_are_refused(broken: dict[str, Any]) -> None:
    doc = json.loads(json.dumps(ANNOTATION))
    doc["sessions"][0]["facts"].append(broken)
    with pytest.raises(ValueError, match="facts\\[4\\]"):
        fid.parse_annotations(doc)


def test_malformed_sessions_are_refused() -> None:
    doc = json.loads(json.dumps(ANNOTATION))
    doc["sessions"][0]["agent"] = "aider"
    with pytest.raises(ValueError, match="agent"):
        fid.parse_annotations(doc)
    doc = json.loads(json.dumps(ANNOTATION))
    doc["sessions"].append(doc["sessions"][0])
    with pytest.raises(ValueError, match="twice"):
        fid.parse_annotations(doc)


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_claude_code_baseline_is_the_tail_of_the_text_in_order(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "s.jsonl", [
        {"type": "summary", "summary": "not a message"},
        {"type": "user", "message": {"role": "user", "content": "Fix the parser"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hidden"},
            {"type": "text", "text": "Running the tests"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}},
        ]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "Exit code 1\n2 failed"},
        ]}},
        '{"type": "assistant", "message": {"content": [{"type": "te',  # a torn last line
    ])
    text = fid.transcript_text(path, "claude-code")
    assert text == 'Fix the parser\nRunning the tests\nBash {"command": "pytest -q"}\nExit code 1\n2 failed'
    assert fid.baseline(path, "claude-code", 10) == text[-10:] == "1\n2 failed"
    assert fid.baseline(path, "claude-code", 10_000) == text


def test_codex_baseline_takes_clean_prompts_and_tool_traffic(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "rollout.jsonl", [
        {"type": "session_meta", "payload": {"id": "x"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "# AGENTS.md boilerplate"}]}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "bump the timeout"}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                              "arguments": "{\"cmd\":\"rg timeout\"}", "call_id": "c1"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": "a.ts:3"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Done."}]}},
    ])
    assert fid.transcript_text(path, "codex") == 'bump the timeout\nexec_command {"cmd":"rg timeout"}\na.ts:3\nDone.'
    # A legacy rollout (bare items, no event_msg) has its prompts only in the user messages.
    legacy = _jsonl(tmp_path / "legacy.jsonl", [
        {"id": "x", "timestamp": "t", "instructions": ""},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {"record_type": "state"},
    ])
    assert fid.transcript_text(legacy, "codex") == "hello"


def test_check_finds_facts_no_transcript_could_satisfy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _jsonl(tmp_path / "s.jsonl", [
        {"type": "user", "message": {"role": "user", "content": "Keep the API stable"}},
        {"type": "queue-operation", "operation": "enqueue", "content": "and bump the version"},
    ])
    doc: dict[str, Any] = {"sessions": [{"file": "s.jsonl", "agent": "claude-code", "facts": [
        {"kind": "final_requirement", "any_of": [["api stable"]]},
        {"kind": "correction", "any_of": [["bump the version"]]},  # only in a queued prompt: found in the raw lines
    ]}]}
    assert fid.check(fid.parse_annotations(doc), tmp_path) == 0
    doc["sessions"][0]["facts"].append({"kind": "next_step", "ref": "L9", "any_of": [["api stabel"]]})
    assert fid.check(fid.parse_annotations(doc), tmp_path) == 1
    assert "'api stabel'" in capsys.readouterr().out


def test_the_annotations_file_is_well_formed() -> None:
    sessions = fid.load_annotations()
    assert len(sessions) >= 12
    assert sum(s.agent == "codex" for s in sessions) >= 2
    held_out = sum(s.held_out for s in sessions)
    assert len(sessions) / 4 <= held_out <= len(sessions) / 2
    for s in sessions:
        assert not any(mark in s.file for mark in (".agent-", ".subagents.", "SYNTHETIC-")), s.file
        assert s.file.startswith(f"{s.agent}/"), s.file
        if FIXTURES.is_dir():
            assert (FIXTURES / s.file).is_file(), s.file


def test_absent_fixture_folder_exits_2_with_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "bench.fidelity", "--fixtures", str(tmp_path / "nowhere")],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "nowhere" in run.stderr


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="needs the real sessions in ../shared/fixtures beside the checkout")
def test_real_run_on_two_sessions_prints_scores_as_json() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.fidelity", "--json",
         "--only", "drm-coverage-test-fix", "--only", "simonw-homelab"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["budget"] == 10_000 and doc["goal"] == 0.95 and isinstance(doc["goal_met"], bool)
    rows = doc["sessions"]
    assert {r["agent"] for r in rows} == {"claude-code", "codex"} and len(rows) == 2
    for r in rows:
        assert 0.0 <= r["brief_score"] <= 1.0 and 0.0 <= r["baseline_score"] <= 1.0
        assert r["facts"] >= 1 and r["tasks"] and 0 < r["brief_chars"] <= 10_000, r
        assert isinstance(r["missing_in_brief"], list) and isinstance(r["missing_in_baseline"], list)
    assert set(doc["means"]) == {"all", "annotated-seen", "held-out"}
    assert doc["means"]["all"]["sessions"] == 2
    assert 0.0 <= doc["means"]["all"]["brief"] <= 1.0


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="needs the real sessions in ../shared/fixtures beside the checkout")
def test_every_annotated_fact_is_in_its_transcript() -> None:
    assert fid.check(fid.load_annotations(), FIXTURES) == 0
