"""bench.fidelity: the matching rules, the scoring (facts and stale items) and the naive baseline on inline data
(always run), the annotations file's shape, a real run on a session of a held-out folder (always run), and one on two
sessions when ../shared/fixtures is beside the checkout."""

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


def test_a_later_held_out_part_is_reported_apart_and_only_for_held_out_sessions() -> None:
    doc = json.loads(json.dumps(ANNOTATION))
    doc["sessions"][0]["part"] = "held-out-new"
    (session,) = fid.parse_annotations(doc)
    assert session.group == "held-out-new" and _session().group == "held-out"
    seen, old, new = (fid.Result(fid.Session(f"claude-code/{n}.jsonl", "claude-code", session.facts, held_out=h,
                                             part=p))
                      for n, h, p in (("a", False, ""), ("b", True, ""), ("c", True, "held-out-new")))
    for r in (seen, old, new):
        r.brief = BRIEF
    groups = fid.summary([seen, old, new])
    assert [groups[g]["sessions"] for g in ("annotated-seen", "held-out", "held-out-new", "all")] == [1, 1, 1, 3]
    assert "added held out at fold version 5: no longer held out" in fid.table([seen, old, new], 10_000).markdown()
    doc["sessions"][0]["held_out"] = False
    with pytest.raises(ValueError, match=r"demo-session.jsonl\): part must be one of held-out, held-out-new"):
        fid.parse_annotations(doc)


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
    assert len(sessions) >= 30
    assert sum(s.agent == "codex" for s in sessions) >= 2
    held_out = sum(s.held_out for s in sessions)
    # The part nobody wrote rules on: at least six sessions of people in no other part.
    assert held_out >= 10 and sum(s.part == "held-out-4" for s in sessions) >= 6
    assert sum(s.part == "held-out-5" for s in sessions) >= 6
    assert sum(s.part == "held-out-6" for s in sessions) >= 6
    # Annotated blind while fold version 9's rules were written; Codex Desktop rollouts among them.
    assert sum(s.part == "held-out-7" for s in sessions) >= 6
    assert sum(s.part == "held-out-7" and s.agent == "codex" for s in sessions) >= 4
    # Annotated blind while fold version 10's rules were written: one more person's sessions.
    assert sum(s.part == "held-out-8" for s in sessions) >= 6
    # Annotated blind while fold version 11's rules were written: six more people's sessions.
    assert sum(s.part == "held-out-9" for s in sessions) >= 8
    # Annotated blind while fold version 12's rules were written: Claude Code sessions and Codex rollouts.
    assert sum(s.part == "held-out-10" for s in sessions) >= 8
    assert sum(s.part == "held-out-10" and s.agent == "codex" for s in sessions) >= 2
    # Annotated blind while fold version 13's rules were written on held-out-10.
    assert sum(s.part == "held-out-11" for s in sessions) >= 8
    # Annotated blind while fold version 14's rules were written on held-out-10: Claude Code and Codex.
    assert sum(s.part == "held-out-12" for s in sessions) >= 8
    assert sum(s.part == "held-out-12" and s.agent == "codex" for s in sessions) >= 2
    # Annotated blind while fold version 15's rules were written on held-out-12.
    assert sum(s.part == "held-out-13" for s in sessions) >= 8
    # Annotated blind while fold version 16's rules were written on held-out-13: Claude Code and Codex.
    assert sum(s.part == "held-out-14" for s in sessions) >= 8
    assert sum(s.part == "held-out-14" and s.agent == "codex" for s in sessions) >= 2
    assert sum(len(s.stale) for s in sessions if not s.held_out) >= 20
    assert sum(len(s.stale) for s in sessions if s.held_out) >= 5
    assert {f.kind for s in sessions for f in s.stale} == fid.STALE_KINDS
    for s in sessions:
        assert not any(mark in s.file for mark in (".agent-", ".subagents.", "SYNTHETIC-")), s.file
        assert s.file.startswith(f"{s.agent}/"), s.file
        if FIXTURES.is_dir() and not s.held_out:
            assert (FIXTURES / s.file).is_file(), s.file
    # Every held-out session is named in the sources (its transcripts are not committed, so this is the record).
    sources = (fid.SESSIONS / "SOURCES.md").read_text(encoding="utf-8")
    assert all(f"| {s.file} |" in sources for s in sessions if s.held_out)


def test_absent_fixture_folder_exits_2_with_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "bench.fidelity", "--fixtures", str(tmp_path / "nowhere"),
                          "--sessions", str(tmp_path / "nor-here")],
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
    assert set(doc["means"]) == {"all", "annotated-seen", "held-out", "held-out-new", "held-out-3",
                                "held-out-4", "held-out-5", "held-out-6", "held-out-7",
                                "held-out-8", "held-out-9", "held-out-10", "held-out-11", "held-out-12",
                                "held-out-13", "held-out-14"}
    assert doc["means"]["all"]["sessions"] == 2
    assert 0.0 <= doc["means"]["all"]["brief"] <= 1.0


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="needs the real sessions in ../shared/fixtures beside the checkout")
def test_every_annotated_fact_is_in_its_transcript() -> None:
    # The held-out transcripts are not committed: those absent are not checked here.
    sessions = [s for s in fid.load_annotations() if fid.locate(s, FIXTURES).is_file()]
    assert sum(not s.held_out for s in sessions) >= 20
    assert fid.check(sessions, FIXTURES) == 0


# -- stale items ------------------------------------------------------------------------------

STALE_BRIEF = """# Task #1 demo
## Next step
add the migration with alembic
## Requirements (current wording, latest last)
- [3] Keep the API stable
- [9] what about edge cases?
## Withdrawn by the user (not current; do not pick these up)
- [12] offload it to a worker (withdrawn at [14])
## Plan (1 of 2 done, as of [20])
- [x] Write the failing test
- [ ] Fix the parser
## Failing now (latest last)
- [30] $ npm test -t "Compaction Config" -> exit 1
## Failed earlier, passing since
- $ uv run pyright: failed at [21], passes since [25]
## Blocked: never ran, needs the user's permission
- [26] Write {"file_path": "/p/CLAUDE.md"}: you haven't granted it yet
## Files changed (2, latest first)
- /p/old_design.md (DELETED, last at [31])
- /p/src/app.py (modified, last at [32])
# Task #2 second
## Requirements (current wording, latest last)
- [40] the second task's wording
"""


def _stale(kind: str, *phrases: str) -> fid.Fact:
    return fid.Fact(kind, (phrases,))


def test_stale_items_count_only_in_sections_presenting_them_as_current() -> None:
    wrong = [
        _stale("superseded_requirement", "what about edge cases"),  # Requirements
        _stale("done_step", "fix the parser"),  # an open plan step
        _stale("fixed_failure", "Compaction Config"),  # Failing now
        _stale("abandoned_prompt", "second task's wording"),  # the second task's Requirements
        _stale("deleted_file", "src/app.py"),  # Files changed, not DELETED
        _stale("superseded_requirement", "CLAUDE.md"),  # Blocked presents its call as current
        _stale("superseded_requirement", "migration", "alembic"),  # both phrases in Next step
    ]
    fine = [
        _stale("superseded_requirement", "offload it to a worker"),  # Withdrawn: history
        _stale("done_step", "write the failing test"),  # a done plan step
        _stale("fixed_failure", "uv run pyright"),  # Failed earlier, passing since
        _stale("deleted_file", "old_design.md"),  # listed as DELETED
        _stale("deleted_file", "CLAUDE.md"),  # Blocked: its Write never ran, so the file is not presented as there
        _stale("done_step", "src/app.py"),  # Files changed presents only files, and only for deleted_file
        _stale("superseded_requirement", "api stable", "alembic"),  # phrases in two sections are not one item
        _stale("superseded_requirement", "demo"),  # the task's title line is no section
    ]
    assert fid.stale_as_current(wrong + fine, STALE_BRIEF) == wrong
    # The naive tail has no sections: all of it reads as current.
    assert fid.stale_as_current(fine, STALE_BRIEF, naive=True) == fine


def _result(stale: tuple[fid.Fact, ...], brief: str, baseline: str = "") -> fid.Result:
    session = fid.Session("claude-code/x.jsonl", "claude-code",
                          (fid.Fact("final_requirement", (("api stable",),)),), held_out=False, stale=stale)
    return fid.Result(session, brief=brief, baseline_text=baseline)


def test_score_is_the_share_of_all_items_right() -> None:
    r = _result((_stale("fixed_failure", "Compaction Config"), _stale("done_step", "write the failing test")),
                STALE_BRIEF, baseline="Keep the API stable. npm test -t Compaction Config")
    assert r.facts_score == 1.0 and [f.ref for f in r.brief_stale] == [""] and len(r.brief_stale) == 1
    assert r.brief_score == pytest.approx(2 / 3)
    assert r.baseline_facts_score == 1.0 and r.baseline_score == pytest.approx(2 / 3)
    errored = _result((_stale("done_step", "nothing"),), "")
    errored.error = "import exited 1"
    assert errored.brief_score == 0.0  # an empty brief presents nothing, but carries nothing either


def test_goal_needs_each_part_and_few_sessions_with_stale_as_current() -> None:
    clean = [_result((), "api stable") for _ in range(19)]
    stale = _result((_stale("done_step", "fix the parser"),), STALE_BRIEF)
    assert fid.goal_met([*clean, stale])  # 1 in 20, and 0.95 each part (held out: none)
    assert not fid.goal_met([*clean[:9], stale])  # 1 in 10
    held = _result((), "nothing here")
    held.session = fid.Session("claude-code/h.jsonl", "claude-code", held.session.facts, held_out=True)
    assert not fid.goal_met([*clean, held])  # the held-out part's mean is 0
    means = fid.summary([*clean, stale, held])
    assert means["annotated-seen"]["brief_stale_sessions"] == 1 and means["held-out"]["brief_min"] == 0.0
    assert means["all"]["stale"] == 1


def test_malformed_stale_items_are_refused() -> None:
    doc = json.loads(json.dumps(ANNOTATION))
    doc["sessions"][0]["stale"] = [{"kind": "next_step", "any_of": [["x"]]}]  # a fact kind, not a stale one
    with pytest.raises(ValueError, match="stale\\[0\\]: kind"):
        fid.parse_annotations(doc)
    doc["sessions"][0]["stale"] = {"kind": "done_step"}
    with pytest.raises(ValueError, match="stale must be a list"):
        fid.parse_annotations(doc)
    doc["sessions"][0]["stale"] = [{"kind": "done_step", "ref": "L3", "any_of": [["write the test"]]}]
    (session,) = fid.parse_annotations(doc)
    assert session.stale == (fid.Fact("done_step", (("write the test",),), "L3"),)


def test_held_out_folder_runs_without_the_fixtures(tmp_path: Path) -> None:
    """A session in the held-out folder runs through the real CLI when ../shared/fixtures is absent: its fact is
    found, its stale item (a prompt the user withdrew) is scored, and the rest of the annotations are left out."""
    held = tmp_path / "sessions"
    (held / "claude-code").mkdir(parents=True)
    _jsonl(held / "claude-code" / "tiny.jsonl", [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1", "cwd": "/p",
         "timestamp": "2026-01-01T00:00:00Z",
         "message": {"role": "user", "content": "Rename the parse_rows helper to read_rows"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1", "cwd": "/p",
         "timestamp": "2026-01-01T00:00:05Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Renamed it in rows.py."}]}},
    ])
    annotations = tmp_path / "annotations.json"
    annotations.write_text(json.dumps({"sessions": [
        {"file": "claude-code/tiny.jsonl", "agent": "claude-code", "held_out": True,
         "facts": [{"kind": "final_requirement", "any_of": [["read_rows"]]}],
         "stale": [{"kind": "superseded_requirement", "any_of": [["parse_rows helper"]]}]},
        {"file": "claude-code/elsewhere.jsonl", "agent": "claude-code",
         "facts": [{"kind": "final_requirement", "any_of": [["x"]]}]},
    ]}))
    run = subprocess.run(
        [sys.executable, "-m", "bench.fidelity", "--json", "--fixtures", str(tmp_path / "nowhere"),
         "--sessions", str(held), "--annotations", str(annotations)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "only the 1 sessions" in run.stderr
    (row,) = json.loads(run.stdout)["sessions"]
    assert row["session"] == "tiny" and row["held_out"] and row["error"] is None
    assert row["missing_in_brief"] == [] and row["brief_facts_score"] == 1.0
    # The prompt is the requirement, so "parse_rows helper" is under Requirements: presented as current.
    assert [s["any_of"] for s in row["stale_as_current_in_brief"]] == [[["parse_rows helper"]]]
    assert row["brief_score"] == 0.5 and row["stale"] == 1
