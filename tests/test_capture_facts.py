"""Facts from the agent's own records: test runs, shell deletes/renames, rejections with a reason,
plan approvals, compactions and where the agent stopped (Claude Code transcripts and hooks).

Unit tests of the shared pure helpers, our own fixture through the real CLI (always run), and
general properties over the real transcripts in ../shared/fixtures (skipped when absent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.capture.agents.claude_code import mapper as claude_code
from ledger.capture.shell_effects import file_effects
from ledger.capture.testruns import recognise, test_item
from ledger.domain import events as ev
from tests.conftest import SHARED, run_here, run_trail

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the facts read from an agent's records, not the store")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SRC = ev.SourceKey(agent="claude-code", session="s1", record="toolu_x")
ACTOR = "agent:claude-code"

# -- testruns ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("cd /repo && python -m pytest -q tests/test_x.py -x", "pytest tests/test_x.py"),
        ("pytest tests/test_x.py", "pytest tests/test_x.py"),
        ("uv run pytest /Users/me/proj/tests/test_x.py -v", "pytest tests/test_x.py"),
        ("cd /repo && pytest /repo/tests/unit/test_x.py::test_a", "pytest tests/unit/test_x.py::test_a"),
        ("(source .venv/bin/activate && pytest -x)", "pytest"),
        ("poetry run pytest -k parser tests/", "pytest -k parser tests"),
        ("py.test", "pytest"),
        ("PYTHONPATH=. timeout 60 pytest -q", "pytest"),
        ("tox -e py312", "tox -e py312"),
        ("nox -s tests", "nox -s tests"),
        ("npm test", "npm test"),
        ("pnpm test -- --run", "pnpm test"),
        ("npm run test:unit", "npm run test:unit"),
        ("yarn test", "yarn test"),
        ("bun test", "bun test"),
        ("npx jest src/a.test.ts --ci", "jest src/a.test.ts"),
        ("npx vitest run", "vitest"),
        ("cargo test 2>&1 | tail -20", "cargo test"),
        ("cargo nextest run", "cargo nextest"),
        ("go test ./... -count=1", "go test ./..."),
        ("mvn -q test", "mvn test"),
        ("./gradlew test", "gradle test"),
        ("bundle exec rspec spec/models", "rspec spec/models"),
        ("vendor/bin/phpunit", "phpunit"),
        ("make test", "make test"),
        ("make check", "make check"),
    ],
)
def test_test_runners_are_named_by_runner_and_target(line: str, name: str) -> None:
    run = recognise(line)
    assert run is not None and run.name == name


@pytest.mark.parametrize(
    "line",
    [
        "uv run pytest --collect-only -q",
        "pytest --version",
        "git commit -m 'run pytest'",
        "echo pytest",
        "grep -r test src/",
        "npm install",
        "npm run build",
        "cargo build",
        "go build ./...",
        "make",
        "act -j test",
        "ls tests/",
        "cat <<EOF > notes.md\npytest\nEOF",
    ],
)
def test_other_commands_are_not_test_runs(line: str) -> None:
    assert recognise(line) is None
    assert test_item(line, 0, "", ACTOR, SRC, None) is None


def _test(line: str, code: int | None, output: str) -> dict[str, Any]:
    item = test_item(line, code, output, ACTOR, SRC, "2025-06-01T10:00:00Z")
    assert item is not None and item[0] is ev.TestResult
    return item[1]


def test_pytest_counts_and_outcome() -> None:
    out = "..F\n=========== 1 failed, 12 passed, 3 skipped, 2 warnings in 0.52s ==========="
    fields = _test("pytest", 1, "Exit code 1\n" + out)
    assert fields["outcome"] == "failed" and (fields["passed"], fields["failed"], fields["skipped"]) == (12, 1, 3)
    assert fields["message"] == "1 failed, 12 passed, 3 skipped, 2 warnings in 0.52s"
    assert fields["source"].record == "toolu_x#test" and fields["timestamp"] == "2025-06-01T10:00:00Z"
    assert _test("pytest -q", 0, "....\n4 passed in 0.10s")["outcome"] == "passed"


def test_printed_failures_fail_a_run_whose_pipe_hid_the_exit_code() -> None:
    assert _test("pytest | tail -5", 0, "2 failed, 3 passed in 1.0s")["outcome"] == "failed"


def test_a_run_that_ran_no_tests_is_an_error() -> None:
    assert _test("pytest", 127, "/bin/bash: pytest: command not found")["outcome"] == "error"
    assert (
        _test("pytest tests/nope.py", 4, "ERROR: file or directory not found\n\nno tests ran in 0.01s")["outcome"]
        == "error"
    )
    assert _test("pytest -m unit", 5, "==== 205 deselected in 0.58s ====")["outcome"] == "error"
    collection = _test("pytest", 2, "==== 1 error in 0.20s ====")
    assert collection["outcome"] == "error" and collection["errors"] == 1


def test_other_runners_counts() -> None:
    jest = _test("npx jest", 1, "Tests:       1 failed, 5 passed, 6 total\nTime: 2s")
    assert (jest["passed"], jest["failed"], jest["outcome"]) == (5, 1, "failed")
    vitest = _test("npx vitest run", 0, " Test Files  2 passed (2)\n      Tests  7 passed (7)")
    assert (vitest["passed"], vitest["failed"], vitest["outcome"]) == (7, 0, "passed")
    cargo = _test(
        "cargo test",
        0,
        "test result: ok. 5 passed; 0 failed; 1 ignored; 0 measured\n"
        "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured",
    )
    assert (cargo["passed"], cargo["failed"], cargo["skipped"]) == (7, 0, 1)
    go = _test(
        "go test ./...", 1, "--- FAIL: TestAdd (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.01s\nok  \texample.com/x\t0.02s"
    )
    assert (go["failed"], go["outcome"], go["message"]) == (1, "failed", "FAIL example.com/calc 0.01s")
    rspec = _test("rspec", 1, "Finished in 0.1 seconds\n10 examples, 2 failures, 1 pending")
    assert (rspec["passed"], rspec["failed"], rspec["skipped"]) == (7, 2, 1)
    mvn = _test("mvn test", 1, "[ERROR] Tests run: 8, Failures: 1, Errors: 1, Skipped: 2")
    assert (mvn["passed"], mvn["failed"], mvn["errors"], mvn["skipped"]) == (4, 1, 1, 2)


# -- shell_effects ------------------------------------------------------------------------------------


def _effects(line: str, cwd: str | None = "/w") -> list[tuple[str, str, str | None]]:
    items = file_effects(line, cwd, ACTOR, SRC, "t")
    assert all(cls is ev.FileChanged and f["timestamp"] == "t" for cls, f in items)
    assert [f["source"].record for _, f in items] == [f"toolu_x#fs{i}" for i in range(len(items))]
    return [(f["path"], f["operation"], f.get("renamed_from")) for _, f in items]


def test_rm_and_git_rm_delete_paths_made_absolute() -> None:
    assert _effects("rm -f a.txt /tmp/b.txt") == [("/w/a.txt", "deleted", None), ("/tmp/b.txt", "deleted", None)]
    assert _effects("cd /repo && git rm -r old/") == [("/repo/old", "deleted", None)]
    assert _effects("rm -rf build *.egg-info 2>/dev/null") == [("/w/build", "deleted", None)]


def test_mv_and_git_mv_rename() -> None:
    assert _effects("mv a.py b.py") == [("/w/b.py", "renamed", "/w/a.py")]
    assert _effects("git mv src/x.py src/y.py") == [("/w/src/y.py", "renamed", "/w/src/x.py")]
    assert _effects("mv a.py lib/") == [("/w/lib/a.py", "renamed", "/w/a.py")]
    assert _effects("mv a.py b.py docs") == [
        ("/w/docs/a.py", "renamed", "/w/a.py"),
        ("/w/docs/b.py", "renamed", "/w/b.py"),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "rm *.pyc",
        "rm $TMPDIR/x",
        "rm ~/x",
        "rm -i a.txt",
        "git rm --cached secrets.env",
        "find . -name '*.tmp' -exec rm {} +",
        "echo rm a.txt",
        "ls || rm a.txt",
        "rm 'unbalanced",
        "xargs rm < list.txt",
    ],
)
def test_unknown_shapes_give_nothing(line: str) -> None:
    assert _effects(line) == []


def test_a_commit_message_from_a_heredoc_leaves_the_line_readable() -> None:
    # The agents' usual commit: a quote in the heredoc's text inside $(...) opens nothing.
    line = "git rm old.py && git commit -m \"$(cat <<'EOF'\nremove it: it isn't used\nEOF\n)\""
    assert _effects(line) == [("/w/old.py", "deleted", None)]


def test_relative_paths_need_a_cwd() -> None:
    assert _effects("rm a.txt", cwd=None) == []
    assert _effects("cd /repo && rm a.txt", cwd=None) == [("/repo/a.txt", "deleted", None)]


# -- the live hook ------------------------------------------------------------------------------------


def _hook(payload: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    base = {"session_id": "facts-0001", "cwd": "/work/demo"}
    return [(cls.__name__, f) for cls, f in claude_code.hook_items({**base, **payload}, 7, "2025-06-01T10:30:00Z")]


def test_hook_bash_adds_test_result_and_deletes() -> None:
    kinds = _hook(
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": "toolu_h1",
            "tool_input": {"command": "rm old_notes.md && pytest -q"},
            "tool_response": {"stdout": "3 passed in 0.1s", "stderr": ""},
        }
    )
    assert [k for k, _ in kinds] == ["CommandRan", "TestResult", "FileChanged"]
    assert kinds[2][1]["path"] == "/work/demo/old_notes.md" and kinds[2][1]["source"].record == "toolu_h1#fs0"
    assert kinds[1][1]["source"].record == "toolu_h1#test"  # the transcript's key for the same call


def test_hook_rejection_with_reason_is_a_correction() -> None:
    error = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
        "edit, the new_string was NOT written to the file). The user provided the following reason for the "
        "rejection:  use pnpm"
    )
    kinds = _hook(
        {
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_use_id": "toolu_h2",
            "tool_input": {"command": "npm install"},
            "error": error,
        }
    )
    correction = next(f for k, f in kinds if k == "CorrectionMade")
    assert correction["text"] == "use pnpm" and correction["wrong"] == "Bash: npm install"
    assert correction["actor"] == "user"


def test_stop_reply_is_the_same_fact_as_the_transcripts_last_reply() -> None:
    said = "The CI workflow pins Python 3.8; I'll bump it to 3.12 next."
    kinds = _hook({"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": said})
    reply = next(f for k, f in kinds if k == "AgentReplied")
    session = claude_code.map_transcript(_lines(FIXTURES / "claude-facts.jsonl"), "claude-facts")
    imported = [f for cls, f in session.items if cls is ev.AgentReplied]
    assert imported[-1]["source"] == reply["source"] and reply["text"].tail == said
    assert not any(k == "AgentReplied" for k, _ in _hook({"hook_event_name": "Stop"}))


def _lines(path: Path) -> list[tuple[int, str]]:
    return list(enumerate(path.read_text(encoding="utf-8").splitlines(keepends=True), 1))


# -- our fixture through the real CLI -----------------------------------------------------------------


def _import(home: Path, *paths: Path) -> dict[str, Any]:
    proc = run_trail("import", "claude-code", *map(str, paths), "--json", home=home, check=True)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _log(home: Path, number: int) -> list[dict[str, Any]]:
    proc = run_here("log", str(number), "--json", home=home, check=True)  # a read, in this process
    data: list[dict[str, Any]] = json.loads(proc.stdout)
    return data


def _of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def test_fixture_import_records_the_facts(home: Path) -> None:
    data = _import(home, FIXTURES / "claude-facts.jsonl")
    assert data["new_tasks"] == 1
    events = _log(home, 1)
    tests = _of(events, "TestResult")
    assert [(t["name"], t["outcome"], t["passed"], t["failed"]) for t in tests] == [
        ("pytest tests/test_util.py", "failed", 3, 1),
        ("pytest tests/test_util.py", "passed", 4, 0),
    ]
    files = {f["path"]: f for f in _of(events, "FileChanged")}
    assert files["/work/demo/old_notes.md"]["operation"] == "deleted"
    assert files["/work/demo/helpers.py"]["operation"] == "renamed"
    assert files["/work/demo/helpers.py"]["renamed_from"] == "/work/demo/util.py"
    corrections = _of(events, "CorrectionMade")
    assert [(c["text"], c["wrong"]) for c in corrections] == [
        ("use pnpm", "Bash: npm install"),
        ("the tests still fail on CI, look at the workflow", None),  # no cue word, still a correction
    ]
    (decision,) = _of(events, "DecisionRecorded")
    assert decision["text"].startswith("# Plan: split the helpers") and decision["reason"] == claude_code.APPROVED
    (compacted,) = _of(events, "ContextCompacted")
    assert compacted["trigger"] == "auto" and compacted["tokens_before"] == 150000
    assert "Pending Tasks" in compacted["summary"]["tail"]
    assert not _of(events, "NoteAdded")  # the summary is no longer a note
    replies = [r["text"]["tail"] for r in _of(events, "AgentReplied")]
    # The last text of each turn; the turn cut by the compaction is in the summary instead.
    assert replies == [
        "All four tests pass now; helpers.py replaces util.py.",
        "The CI workflow pins Python 3.8; I'll bump it to 3.12 next.",
    ]
    # Every event carries the transcript's time, the link and the task's opening included.
    times = {e["type"]: e["timestamp"] for e in events}
    assert times["TaskOpened"].startswith("2025-06-01T10:01") and times["ConversationLinked"].startswith("2025-06-01")
    assert all(e["timestamp"].startswith("2025-06-01") for e in events if e["type"] != "StatusChanged")
    assert _import(home, FIXTURES / "claude-facts.jsonl")["events_total"] == 0  # idempotent


def test_fixture_resume_shows_deleted_and_renamed_files(home: Path) -> None:
    _import(home, FIXTURES / "claude-facts.jsonl")
    state = json.loads(run_trail("resume", "1", "--json", home=home, check=True).stdout)["state"]
    assert state["files"]["/work/demo/old_notes.md"]["operation"] == "deleted"
    assert state["files"]["/work/demo/helpers.py"]["operation"] == "renamed"


# -- the real transcripts ------------------------------------------------------------------------------

REAL = SHARED / "fixtures" / "claude-code"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/fixtures/claude-code is absent")


def _real_files() -> list[Path]:
    return sorted(REAL.glob("*.jsonl")) if REAL.is_dir() else []


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


@needs_real
def test_real_rejections_plans_and_compactions_all_become_facts() -> None:
    rejected_with_reason = approved = summaries = 0
    for path in _real_files():
        records = _records(path)
        session = claude_code.map_transcript(_lines(path), path.stem)
        keys = {(cls.__name__, f["source"].record) for cls, f in session.items if f.get("source")}
        calls = {b["id"]: b for r in records for b in _blocks(r) if b.get("type") == "tool_use" and b.get("id")}
        for record in records:
            if record.get("isCompactSummary"):
                summaries += 1
                assert sum(cls is ev.ContextCompacted and f["summary"] is not None for cls, f in session.items) >= 1
            for block in _blocks(record):
                if block.get("type") != "tool_result" or block.get("tool_use_id") not in calls:
                    continue
                call_id = str(block["tool_use_id"])
                text = claude_code.text_of(block.get("content"))
                if block.get("is_error") and claude_code.rejection_reason(text):
                    rejected_with_reason += 1
                    assert ("CorrectionMade", call_id + "#correction") in keys, (path.name, call_id)
                if calls[call_id].get("name") == "ExitPlanMode" and not block.get("is_error"):
                    approved += 1
                    assert ("DecisionRecorded", call_id + "#decision") in keys, (path.name, call_id)
        compactions = [f for cls, f in session.items if cls is ev.ContextCompacted]
        assert len(compactions) == sum(
            1 for r in records if r.get("type") == "system" and r.get("subtype") == "compact_boundary"
        ) or not any(r.get("subtype") == "compact_boundary" for r in records)
    assert rejected_with_reason > 0 and approved > 0 and summaries > 0


@needs_real
def test_real_import_gives_test_results_replies_and_deleted_files(home: Path) -> None:
    files = [p for p in _real_files() if not p.name.startswith("SYNTHETIC-")]
    data = _import(home, *files)
    assert data["events"].get("TestResult", 0) > 0 and data["events"].get("AgentReplied", 0) > 0
    # A file edited with the edit tools and then removed with a successful `rm` shows as deleted.
    removed: dict[str, set[str]] = {}
    for path in files:
        session = claude_code.map_transcript(_lines(path), path.stem)
        edited = set()
        for cls, f in session.items:
            if cls is ev.FileChanged and f["operation"] in ("created", "modified"):
                edited.add(f["path"])
                removed.get(session.session_id, set()).discard(f["path"])  # made again (a submodule re-added)
            elif cls is ev.FileChanged and f["operation"] == "deleted" and f["path"] in edited:
                removed.setdefault(session.session_id, set()).add(f["path"])
                edited.discard(f["path"])
    assert removed, "the real transcripts hold edited files later removed with rm"
    checked = 0
    for task in data["tasks"]:
        state = json.loads(run_here("resume", str(task["number"]), "--json", home=home, check=True).stdout)["state"]
        ids = {c.get("session_id") for c in state.get("conversations") or [] if isinstance(c, dict)}
        for session_id, paths in removed.items():
            if session_id in ids:
                for p in paths:
                    assert state["files"][p]["operation"] == "deleted", (task, p)
                    checked += 1
    assert checked > 0
