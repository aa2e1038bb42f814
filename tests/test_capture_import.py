"""Importing transcripts: small fixtures of our own (always run) and the real logs in ../shared (when present)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.agents.claude_code.branches import REWOUND
from ledger.capture.agents.claude_code.mapper import bare_feedback, slash_command
from ledger.capture.agents.claude_code.refusals import NOT_RUN
from ledger.capture.classify import bare_command, classify, clean_prompt
from ledger.capture.importer import import_files
from ledger.domain import events as ev
from projections.brief import is_clutter, render
from projections.commands import is_read_only
from tests.conftest import SHARED, run_here, run_trail

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _events(ledger: Ledger, number: int) -> list[ev.TaskEvent]:
    return list(ledger.task_events(ledger.task_id(number)))


def _import_json(home: Path, agent: str, *paths: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    proc = run_trail("import", agent, *map(str, paths), *extra, "--json", home=home, check=True)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


# -- our own fixtures, through the real CLI -----------------------------------------------------------


def test_claude_import_maps_records_and_reports_the_torn_line(home: Path, ledger: Ledger) -> None:
    data = _import_json(home, "claude-code", FIXTURES / "claude-small.jsonl")
    assert data["skipped"] == [
        {"file": str(FIXTURES / "claude-small.jsonl"), "line": 7, "reason": data["skipped"][0]["reason"]}
    ]
    assert data["new_tasks"] == 1 and data["tasks"][0]["title"] == "Fix the add function"  # the session's summary
    events = _events(ledger, 1)
    by_type = [type(e).__name__ for e in events]
    assert by_type.count("CommandRan") == 2
    failing = next(e for e in events if isinstance(e, ev.CommandRan) and e.exit_code)
    # 2.x puts a failure's whole output after "Exit code N": the command's output, not its stderr.
    assert failing.exit_code == 1 and failing.shell == "pytest -q" and failing.stderr is None
    assert failing.stdout is not None and failing.stdout.tail == "FAILED test_calc.py::test_add - assert -1 == 3"
    change = next(e for e in events if isinstance(e, ev.FileChanged))
    assert change.path == "/work/demo/calc.py" and change.diff is not None and "+    return a + b" in change.diff.tail
    assert change.before_sha256 is not None and change.after_sha256 is not None  # derived from originalFile
    assert change.before_sha256 != change.after_sha256
    # The rejected Write is a failed tool call, not a file change; the prompt after it is a correction.
    assert not any(isinstance(e, ev.FileChanged) and e.path.endswith("NOTES.md") for e in events)
    correction = next(e for e in events if isinstance(e, ev.CorrectionMade))
    assert correction.text.startswith("don't write notes") and correction.wrong and "NOTES.md" in correction.wrong
    assert any(isinstance(e, ev.RequirementChanged) and e.text.startswith("actually") for e in events)
    assert ledger.state(ledger.entries()[0].task_id).next_step == "Update the changelog"  # the plan's open step
    assert all(e.source is not None for e in events[1:])
    assert {e.actor for e in events if isinstance(e, ev.ToolResult)} == {"tool:Write", "tool:Grep"}


def test_reimport_adds_nothing_and_a_grown_file_adds_only_new_records(home: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    lines = (FIXTURES / "claude-small.jsonl").read_text().splitlines(keepends=True)
    transcript.write_text("".join(lines[:6]))
    first = _import_json(home, "claude-code", transcript)
    again = _import_json(home, "claude-code", transcript)
    assert first["events_total"] > 0 and again["events_total"] == 0
    transcript.write_text("".join(lines))
    grown = _import_json(home, "claude-code", transcript)
    everything = _import_json(home, "claude-code", FIXTURES / "claude-small.jsonl", extra=("--task", "1"))
    assert grown["tasks"] == first["tasks"]  # the same session keeps its task
    assert grown["events_total"] > 0
    assert everything["events_total"] == 0  # the same records under another file name: nothing new


def test_resumed_session_joins_the_task_it_continues(home: Path) -> None:
    data = _import_json(home, "claude-code", FIXTURES / "claude-small-resumed.jsonl", FIXTURES / "claude-small.jsonl")
    assert data["new_tasks"] == 1 and len(data["tasks"]) == 1
    assert data["events"]["ConversationLinked"] == 2


def test_task_option_attaches_to_an_existing_task(home: Path) -> None:
    run_here("start", "Existing work", home=home, check=True)
    data = _import_json(home, "codex", FIXTURES / "codex-small.jsonl", extra=("--task", "1"))
    assert data["new_tasks"] == 0 and [t["number"] for t in data["tasks"]] == [1]
    missing = run_trail("import", "codex", str(FIXTURES / "codex-small.jsonl"), "--task", "9", home=home)
    assert missing.returncode != 0 and "#9" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_missing_path_is_one_clear_error_and_writes_nothing(home: Path) -> None:
    proc = run_trail("import", "codex", "/no/such/rollout.jsonl", home=home)
    assert proc.returncode == 2 and proc.stderr.strip() == "trail: no such file or folder: /no/such/rollout.jsonl"
    assert run_trail("list", "--json", home=home, check=True).stdout.strip() in ("[]", "")


def test_codex_import_maps_commands_patches_plan_and_prompts(home: Path, ledger: Ledger) -> None:
    data = _import_json(home, "codex", FIXTURES / "codex-small.jsonl")
    assert [s["line"] for s in data["skipped"]] == [7]
    events = _events(ledger, 1)
    commands = [e for e in events if isinstance(e, ev.CommandRan)]
    assert [(c.shell, c.exit_code) for c in commands] == [("make build", 2), ("make build", 0)]
    assert commands[0].duration_ms == 1500
    change = next(e for e in events if isinstance(e, ev.FileChanged))
    assert change.path == "/work/cx/src/main.c" and change.operation == "modified"
    assert [type(e).__name__ for e in events if e.actor == "user"] == ["RequirementStated", "CorrectionMade"]
    assert ledger.state(ledger.entries()[0].task_id).next_step == "Fix syntax"  # the plan's open step


def test_concurrent_imports_of_one_file_land_once(home: Path, ledger: Ledger) -> None:
    import subprocess
    import sys

    from tests.conftest import REPO

    run_trail("start", "Race target", home=home, check=True)
    env = {"TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    if url := os.environ.get("TRAIL_DATABASE_URL"):  # the PostgreSQL case's schema (see conftest)
        env["TRAIL_DATABASE_URL"] = url
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from cli.main import main; main()",
                "import",
                "claude-code",
                str(FIXTURES / "claude-small.jsonl"),
                "--task",
                "1",
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    totals = [json.loads(out)["events_total"] for out, _ in outputs]
    sources = [e.source for e in _events(ledger, 1) if e.source is not None]
    assert len(sources) == len(set(sources)) == sum(totals) > 0  # every source once, whoever won each race


# -- the real logs ------------------------------------------------------------------------------------


def _claude_counts(path: Path) -> dict[str, Any]:
    """Count commands, file changes, prompts, edited paths and the last failure straight from the JSON."""
    records = []
    for raw in path.read_text().splitlines():
        try:
            records.append(json.loads(raw))
        except ValueError:
            continue
    calls: dict[str, dict[str, Any]] = {}
    results: dict[str, tuple[str, bool]] = {}
    prompts = bash_inputs = replies = 0
    versions: dict[str, dict[str, Any]] = {}
    queued: list[str] = []  # typed while the agent worked; counted unless they come back as a user line
    expanding = False  # a bare slash command was just typed: its expansion (isMeta) comes next
    for r in records:
        content = (r.get("message") or {}).get("content")
        queue = r.get("content") if r.get("type") == "queue-operation" and r.get("operation") == "enqueue" else None
        if isinstance(queue, str) and queue.strip() not in ("", "tool_result"):
            queued.append(clean_prompt(queue))
        if r.get("type") == "assistant" and isinstance(content, list):
            calls.update({b["id"]: b for b in content if b.get("type") == "tool_use"})
        if r.get("type") != "user":
            continue
        if isinstance(content, list):
            for b in content:
                if b.get("type") == "tool_result":
                    body = b.get("content")
                    text = body if isinstance(body, str) else " ".join(x.get("text", "") for x in body or [])
                    results[b["tool_use_id"]] = (text, bool(b.get("is_error")))
                    versions[b["tool_use_id"]] = {"version": r.get("version")}
        text = (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
        )
        typed = not (r.get("isMeta") or r.get("isCompactSummary") or r.get("isSidechain"))
        has_result = isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
        if expanding and r.get("isMeta") and not r.get("isSidechain") and text.strip():
            prompts += 1  # the prompt a bare `/init` expands to is its request
            expanding = False
        if typed and not has_result and text.strip():
            expanding = bare_command(text) is not None
            text = slash_command(text) or text  # a slash command with arguments is a request
            if text.startswith("<bash-input>"):
                bash_inputs += 1
            elif not text.lstrip().startswith(
                ("[Request interrupted", "<command-", "<local-command-", "<bash-", "Caveat: The messages below")
            ):
                said = clean_prompt(text) or text.strip()
                prompts += 1
                queued = [q for q in queued if q != said]
                # "thanks!", "show me the JSON", a pasted log: a note, not an intent
                replies += prompts > 1 and classify(said, first=False) in ("reply", "question", "output")
    prompts += len(queued) - replies
    ran = [
        i
        for i, c in calls.items()
        if c["name"] == "Bash"
        and i in results
        and not results[i][0].removeprefix("Error: ").startswith(("The user doesn't want to", "[Request interrupted"))
        and not any(refusal in results[i][0][:300] for refusal in NOT_RUN)  # a permission refusal never ran
        # 2.0.x records a rejection with feedback as the user's words alone (see bare_feedback).
        and not (results[i][1] and bare_feedback("Bash", results[i][0], versions.get(i, {})))
    ]
    edits = [
        i
        for i, c in calls.items()
        if c["name"] in ("Edit", "Write", "MultiEdit", "NotebookEdit") and i in results and not results[i][1]
    ]
    # Reads that find nothing (grep, ls of a missing path) exit non-zero but are not failures.
    failing = [line for i in ran if results[i][1] and not is_read_only(line := calls[i]["input"]["command"])]
    return {
        "commands": len(ran) + bash_inputs,
        "files": len(edits),
        "prompts": prompts,
        "paths": {calls[i]["input"].get("file_path") or calls[i]["input"].get("notebook_path") for i in edits},
        "last_failing": failing[-1] if failing else None,
    }


def _codex_counts(path: Path) -> dict[str, Any]:
    records = [json.loads(raw) for raw in path.read_text().splitlines() if raw.strip()]
    events = [r["payload"] for r in records if r.get("type") == "event_msg"]
    items = [r["payload"] for r in records if r.get("type") == "response_item"]
    ends = [p for p in events if p.get("type") == "exec_command_end"]
    ended = {p["call_id"] for p in ends}
    shell_calls = {p["call_id"] for p in items if p.get("type") == "function_call" and p.get("name") == "exec_command"}
    # Without exec_command_end (Codex Desktop), a finished command says so in its output.
    finished = [
        p
        for p in items
        if p.get("type") == "function_call_output"
        and p["call_id"] in shell_calls
        and p["call_id"] not in ended
        and "Process exited with code" in str(p.get("output"))
    ]
    changes = [c for p in events if p.get("type") == "patch_apply_end" and p.get("success") for c in p["changes"]]
    return {
        "commands": len(ends) + len(finished),
        "files": len(changes),
        "prompts": sum(1 for p in events if p.get("type") == "user_message"),
        "paths": set(changes),
        "last_failing": next((" ".join(p["command"][2:]) for p in reversed(ends)
                              if p.get("exit_code") and not is_read_only(" ".join(p["command"][2:]))), None),
    }


def _real(folder: str) -> list[Path]:
    root = SHARED / "fixtures" / folder
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("*.jsonl") if not p.name.startswith("SYNTHETIC-"))


ON_BOTH = 3
"""Logs imported on PostgreSQL too: the largest few (the most batches, the most keys to find again on the re-import).
What a log maps to is the store's business only there; the rest run on SQLite alone."""


def _params(folder: str) -> Any:
    files = _real(folder)
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"../shared/fixtures/{folder} is absent"))]
    both = sorted(files, key=lambda p: (-p.stat().st_size, p.name))[:ON_BOTH]
    sqlite = pytest.mark.sqlite_only(f"a log maps the same on each store; the {ON_BOTH} largest run on PostgreSQL")
    return [pytest.param(p, id=p.stem, marks=() if p in both else sqlite) for p in files]


@pytest.mark.parametrize("path", _params("claude-code"))
def test_real_claude_code_logs(path: Path, ledger: Ledger, location: Location) -> None:
    _check_real(path, ledger, location, "claude-code", _claude_counts(path))


@pytest.mark.parametrize("path", _params("codex"))
def test_real_codex_logs(path: Path, ledger: Ledger, location: Location) -> None:
    _check_real(path, ledger, location, "codex", _codex_counts(path))


def _check_real(path: Path, ledger: Ledger, location: Location, agent: str, want: dict[str, Any]) -> None:
    report = import_files(ledger, location, agent, [path])  # type: ignore[arg-type]
    assert not report.skipped, report.skipped
    (number,) = report.tasks
    events = _events(ledger, number)
    # Prompts only: a tool use rejected with a reason is also a user correction ("…#correction").
    # A prompt on a branch the user rewound from is kept as a note.
    prompts = [
        e
        for e in events
        if e.actor == "user"
        and (isinstance(e, ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade)
             or (isinstance(e, ev.NoteAdded) and e.text.startswith(REWOUND)))
        and not (e.source and e.source.record.endswith("#correction"))
    ]
    assert sum(isinstance(e, ev.CommandRan) for e in events) == want["commands"]
    # Edit-tool changes only: deletes and renames made by shell commands carry "#fs<i>".
    edits = [e for e in events if isinstance(e, ev.FileChanged) and not (e.source and "#fs" in e.source.record)]
    assert len(edits) == want["files"]
    assert len(prompts) == want["prompts"]
    brief = render(ledger.state(ledger.task_id(number)))
    for edited in want["paths"]:
        assert edited in brief or is_clutter(edited)  # the agent's plan files are not the work
    if want["last_failing"]:
        assert " ".join(want["last_failing"].split())[:100] in brief  # the brief folds whitespace
    assert import_files(ledger, location, agent, [path]).events.total() == 0  # type: ignore[arg-type]


def test_real_sessions_that_continue_each_other_share_a_task(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    root = SHARED / "fixtures" / "claude-code"
    pair = [root / "ccl-session-nav-37f83ec9.jsonl", root / "ccl-project-title-aa5c5ada.jsonl"]
    if not all(p.exists() for p in pair):
        pytest.skip("../shared/fixtures/claude-code is absent")
    copies = [Path(shutil.copy(p, tmp_path / p.name)) for p in pair]
    report = import_files(ledger, location, "claude-code", copies)
    assert report.new_tasks == 1 and len(report.tasks) == 1


# -- grouping, filters and status ---------------------------------------------------------------------


def test_import_keeps_projects_apart_filters_and_settles_status(home: Path, ledger: Ledger, location: Location) -> None:
    from ledger.app import refs

    older, newer = FIXTURES / "claude-facts.jsonl", FIXTURES / "claude-small.jsonl"  # both in /work/demo
    late = _import_json(home, "claude-code", older, newer, extra=("--since", "2025-12-01"))
    assert late["filtered"] == 1 and [t["title"] for t in late["tasks"]] == ["Fix the add function"]
    both = _import_json(home, "claude-code", older, newer)
    assert both["filtered"] == 0 and len(both["tasks"]) == 2  # two sessions that do not continue each other
    states = [ledger.state(e.task_id) for e in ledger.entries()]
    assert {s.project for s in states} == {"/work/demo"}
    assert all(s.status in ("paused", "done") and (s.status_reason or "").startswith("imported") for s in states)
    # The project's active task is its latest session's, whatever the import order.
    newest = max(states, key=lambda s: s.updated_at or datetime.min.replace(tzinfo=UTC))
    assert refs.active_task_id(location, "/work/demo") == newest.id
    codex = _import_json(home, "codex", FIXTURES / "codex-small.jsonl", FIXTURES / "codex-turns.jsonl",
                         extra=("--project", "/work/cx"))
    assert codex["filtered"] == 1 and len(codex["tasks"]) == 1
    assert ledger.state(ledger.entries()[-1].task_id).project == "/work/cx"
    bad = run_trail("import", "codex", str(FIXTURES / "codex-small.jsonl"), "--since", "yesterday", home=home)
    assert bad.returncode == 2 and "--since" in bad.stderr


def test_an_import_does_not_pause_a_task_that_went_on_after_the_session(home: Path, ledger: Ledger) -> None:
    # The session was captured live (its hooks opened the task, now); the transcript's records end earlier.
    prompt = {"session_id": "11111111-aaaa-4bbb-8ccc-000000000001", "hook_event_name": "UserPromptSubmit",
              "prompt": "Fix the add function in calc.py so the tests pass", "cwd": "/work/demo"}
    run_here("hook", "claude-code", home=home, stdin=json.dumps(prompt), check=True)
    run_here("note", "still on it", "--task", "1", home=home, check=True)
    assert ledger.state(ledger.entries()[0].task_id).status == "active"
    data = _import_json(home, "claude-code", FIXTURES / "claude-small.jsonl")
    assert data["new_tasks"] == 0
    state = ledger.state(ledger.entries()[0].task_id)
    assert (state.status, state.status_reason) == ("active", None)
