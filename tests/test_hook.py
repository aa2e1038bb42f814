"""Live capture: the Claude Code hook in real processes, its inbox, dead letters and reclassify
(install: tests/test_install.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location, inbox_path
from ledger.domain import events as ev
from tests.conftest import REPO, in_thread, run_here, run_trail

SESSION = "44444444-dddd-4eee-8fff-000000000004"


def _env(home: Path, **extra: str) -> dict[str, str]:
    # TRAIL_DATABASE_URL is the backend's own (the home fixture sets or clears it).
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    return {**env, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), **extra}


def hook(payload: dict[str, Any] | str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
        input=text,
        capture_output=True,
        text=True,
        env=_env(home, **env),
        timeout=60,
        cwd=home.parent,
    )


def _tool(call: str, command: str, stdout: str = "", session: str = SESSION) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": call,
        "tool_input": {"command": command},
        "tool_response": {"stdout": stdout, "stderr": ""},
        # No cwd: the hook takes its own (the folder the agent runs hooks in), as `trail start` did.
    }


def test_hook_path_imports_nothing_heavy(home: Path) -> None:
    probe = (
        "import sys; sys.argv = ['trail', 'hook', 'claude-code']\n"
        "from cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('click', 'pydantic', 'eventsourcing', 'duckdb', 'orjson', 'betterleaks')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        input=json.dumps(_tool("toolu_x", "ls")),
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_a_session_is_captured_and_a_new_session_starts_from_its_brief(home: Path, ledger: Ledger) -> None:
    start = hook({"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup"}, home)
    assert start.returncode == 0 and start.stdout == ""  # no task yet: nothing to inject
    steps = [
        {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "Make the parser accept tabs"},
        {
            "session_id": SESSION,
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_use_id": "toolu_e1",
            "tool_input": {"file_path": "/w/parser.py", "old_string": "' '", "new_string": "(' ', '\\t')"},
            "tool_response": {
                "filePath": "/w/parser.py",
                "originalFile": "sep = ' '\n",
                "structuredPatch": [
                    {
                        "oldStart": 1,
                        "oldLines": 1,
                        "newStart": 1,
                        "newLines": 1,
                        "lines": ["-sep = ' '", "+sep = (' ', '\\t')"],
                    }
                ],
            },
        },
        {
            "session_id": SESSION,
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_use_id": "toolu_b1",
            "tool_input": {"command": "pytest tests/test_parser.py"},
            "error": "Exit code 1\nFAILED test_tabs",
        },
        {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "no, tabs only inside strings"},
        {"session_id": SESSION, "hook_event_name": "Stop", "stop_hook_active": False},
    ]
    for step in steps:
        proc = hook(step, home)
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    resume = run_trail("resume", "--json", home=home, check=True)
    assert "parser" in resume.stdout
    events = list(ledger.task_events(ledger.task_id(1)))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "TaskOpened",
        "ConversationLinked",
        "RequirementStated",
        "FileChanged",
        "CommandRan",
        "TestResult",  # the failed Bash call ran a test target
        "CorrectionMade",
        "CheckpointMarked",
    ]
    command = next(e for e in events if isinstance(e, ev.CommandRan))
    assert command.exit_code == 1 and command.source is not None and command.source.record == "toolu_b1"
    # A fresh session in the same ledger binds to the active task and is answered with its brief.
    other = hook(
        {"session_id": "55555555-0000-4000-8000-000000000005", "hook_event_name": "SessionStart", "source": "startup"},
        home,
    )
    answer = json.loads(other.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    assert (
        "/w/parser.py" in answer["additionalContext"] and "pytest tests/test_parser.py" in answer["additionalContext"]
    )
    assert "tabs only inside strings" in answer["additionalContext"]


def test_failures_never_block_and_dead_letters_replay(home: Path, ledger: Ledger, tmp_path: Path) -> None:
    run_trail("start", "Catch everything", home=home, check=True)
    bad = hook("{not json", home)
    assert bad.returncode == 0 and len(bad.stderr.strip().splitlines()) == 1 and "payload kept in" in bad.stderr
    unreachable = hook(_tool("toolu_d1", "make"), home, TRAIL_DB=str(tmp_path))  # a directory: cannot open
    assert unreachable.returncode == 0 and "payload kept in" in unreachable.stderr
    assert len(list((home / "deadletter").glob("*.json"))) == 2
    retry = run_trail("doctor", "--retry", "--json", home=home)
    report = json.loads(retry.stdout)
    assert retry.returncode == 1 and report["replayed"] == 1 and len(report["failed"]) == 1  # the garbage stays
    assert report["dead_letters"] == 1
    commands = [e for e in ledger.task_events(ledger.task_id(1)) if isinstance(e, ev.CommandRan)]
    assert [c.shell for c in commands] == ["make"]


def test_concurrent_hooks_all_land_in_order_once(home: Path, ledger: Ledger) -> None:
    run_trail("start", "Storm", home=home, check=True)
    chains, length = 20, 3

    def chain(k: int) -> list[int]:
        # One chain is one agent's sequence of tool calls; chains run at once, as parallel hooks do.
        return [hook(_tool(f"toolu_{k}_{i}", f"step {k} {i}"), home).returncode for i in range(length)]

    def reader(_: int) -> int:
        return run_trail("list", home=home).returncode  # folds the inbox in while hooks write

    with ThreadPoolExecutor(max_workers=chains + 2) as pool:
        readers = [pool.submit(reader, n) for n in range(2)]
        codes = list(pool.map(chain, range(chains)))
    assert all(c == 0 for row in codes for c in row) and all(r.result() == 0 for r in readers)
    run_trail("list", home=home, check=True)
    commands = [e.shell for e in ledger.task_events(ledger.task_id(1)) if isinstance(e, ev.CommandRan)]
    assert len(commands) == len(set(commands)) == chains * length
    for k in range(chains):
        mine = [c for c in commands if c and c.startswith(f"step {k} ")]
        assert mine == [f"step {k} {i}" for i in range(length)]


def test_hooks_racing_to_make_the_inbox_both_land(home: Path, location: Location, tmp_path: Path) -> None:
    # The first hooks of a machine find no inbox and make it at once. One is held after building its file,
    # before putting it in place; another makes the inbox meanwhile and queues into it; the first then queues
    # into that one. Made in place, each hook switched the journal to WAL under a lock SQLite does not wait
    # for: "database is locked", and the payload went to the dead letters (seen with 20 hooks at once).
    inbox = inbox_path(location)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    held = subprocess.Popen(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=home.parent,
        env=_env(home, TRAIL_GATE_AT=f"inbox-built:{gate}"),
    )
    try:
        assert held.stdin is not None
        held.stdin.write(json.dumps(_tool("toolu_race", "make check")))
        held.stdin.close()
        writer = in_thread(lambda: open(gate, "wb"))  # noqa: SIM115 (opened once the hook waits at the gate)
        assert not inbox.exists()  # built aside: no hook ever opens a file still being made
        other = hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "Add CSV export"},
                     home)
        assert other.returncode == 0 and other.stderr == "" and inbox.exists()
        writer.close()
        assert held.wait(timeout=60) == 0
        assert held.stderr is not None and held.stderr.read() == ""
    finally:
        if held.poll() is None:
            held.kill()
            held.wait()
    assert not (home / "deadletter").exists() or not any((home / "deadletter").iterdir())
    assert not [p.name for p in inbox.parent.iterdir() if p.name.endswith(".new")]  # its own file is gone
    run_trail("list", home=home, check=True)
    with closing(open_ledger(location)) as ledger:
        (task,) = {e.task_id for e in ledger.entries()}
        events = list(ledger.task_events(task))
    assert [e.text for e in events if isinstance(e, ev.RequirementStated)] == ["Add CSV export"]
    assert [e.shell for e in events if isinstance(e, ev.CommandRan)] == ["make check"]


def test_reclassify_moves_the_prompt_and_keeps_the_log(home: Path, ledger: Ledger) -> None:
    run_trail("start", "Reclassify", home=home, check=True)
    hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "Add CSV export"}, home)
    hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "Use semicolons as separator"}, home)
    run_trail("list", home=home, check=True)
    events = list(ledger.task_events(ledger.task_id(1)))
    second = next(e for e in events if isinstance(e, ev.RequirementStated) and e.text.startswith("Use semicolons"))
    pos = second.originator_version
    out = run_trail("reclassify", str(pos), "--as", "correction", "--json", home=home, check=True)
    assert json.loads(out.stdout)["reclassifies"] == pos
    last = list(ledger.task_events(ledger.task_id(1)))[-1]
    assert isinstance(last, ev.IntentReclassified) and last.target == pos and last.kind == "correction"
    state = ledger.state(ledger.task_id(1))
    assert [c.position for c in state.corrections] == [pos]  # moved, not duplicated
    assert all(r.position != pos for r in state.requirements)
    # And back to a rewording of the requirement before it.
    run_trail("reclassify", str(pos), "--as", "change", home=home, check=True)
    state = ledger.state(ledger.task_id(1))
    assert state.corrections == () and [r.text for r in state.requirements] == ["Use semicolons as separator"]
    assert state.requirements[0].history == ("Add CSV export",)
    again = run_trail("reclassify", "1", "--as", "change", home=home)
    assert again.returncode == 3 and "position 1 is not a requirement or correction" in again.stderr


def test_only_a_real_session_start_is_answered(home: Path) -> None:
    run_here("start", "Quiet prompts", home=home, check=True)
    hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": "Build the importer"}, home)
    run_trail("list", home=home, check=True)
    # A payload that merely holds the event's name as a value must not be answered with the brief.
    mention = hook({"session_id": SESSION, "hook_event_name": "PostToolUse", "tool_name": "Grep",
                    "tool_use_id": "toolu_g", "tool_input": {"pattern": "SessionStart"}, "tool_response": "x"}, home)
    assert mention.returncode == 0 and mention.stdout == ""
    start = hook({"session_id": SESSION, "hook_event_name": "SessionStart", "source": "resume"}, home)
    assert "Build the importer" in json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]


def test_prompts_captured_live_are_not_added_again_by_an_import(home: Path, tmp_path: Path) -> None:
    run_here("start", "Live then import", home=home, check=True)
    prompts = ["Add CSV export", "Use semicolons as separator", "Add CSV export"]  # a repeat is its own prompt
    for text in prompts:
        hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "prompt": text}, home)
    run_trail("list", home=home, check=True)  # folds the inbox in
    lines = [
        json.dumps({"type": "user", "uuid": f"u{i}", "sessionId": SESSION, "cwd": "/w",
                    "timestamp": f"2026-01-01T00:00:0{i}Z", "message": {"role": "user", "content": text}})
        for i, text in enumerate(prompts)
    ]
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    run_trail("import", "claude-code", str(transcript), home=home, check=True)
    intents = json.loads(run_trail("log", "1", "--json", "--type", "RequirementStated", "--type", "CorrectionMade",
                                   "--type", "RequirementChanged", home=home, check=True).stdout)
    assert sorted(e["text"] for e in intents) == sorted(prompts)


FULL_ANSWER = (
    "import json, sys\nfrom ledger.capture.inbox import session_start_answer\n"
    "sys.stdout.write(session_start_answer(json.loads(sys.argv[1]), sys.argv[2]))"
)


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_session_start_from_the_brief_cache_is_the_full_answer_byte_for_byte(
    home: Path, backend: str, agent: str
) -> None:
    """A fast SessionStart (ledger/app/briefcache.py) leaves its row queued; the full path, run next on the same
    ledger, folds that row in and answers: the two answers must be the same bytes, for a new session (its link
    lands one position on, at the row's time) and for a session already linked (nothing lands)."""
    from tests.test_briefcache import trail

    run_here("demo", "--keep", home=home, check=True)
    paused = {"session_id": f"{agent}-paused", "hook_event_name": "SessionStart", "source": "startup",
              "cwd": str(home.parent)}
    answered, fast = trail(home, "hook", agent, stdin=json.dumps(paused))
    assert not fast and "additionalContext" in answered  # the paused task is reopened: only the full path does that
    run_trail("resume", home=home, check=True)
    # Every source, for a new session and for one linked already (the full path of the turn before linked it).
    starts = [("new-1", "startup"), ("new-1", "compact"), ("new-2", "resume"), ("new-2", "clear"),
              ("new-3", "clear"), ("new-3", "resume"), ("new-4", "compact")]
    if backend != "sqlite":
        # Nothing is answered fast there: the hook against the full path needs a new and a linked session, not
        # every source (each start is two processes on a server).
        starts = [start for start in starts if start[0] in ("new-1", "new-4")]
    for session, source in starts:
        payload = {"session_id": f"{agent}-{session}", "hook_event_name": "SessionStart", "source": source,
                   "cwd": str(home.parent), "transcript_path": f"/tmp/{session}.jsonl"}
        answered, fast = trail(home, "hook", agent, stdin=json.dumps(payload))
        assert fast == (backend == "sqlite"), session
        full = subprocess.run([sys.executable, "-c", FULL_ANSWER, json.dumps(payload), agent], capture_output=True,
                              text=True, env=_env(home), cwd=home.parent, timeout=60, check=True)
        assert "additionalContext" in answered
        assert answered == full.stdout
        if fast:
            context = json.loads(answered)["hookSpecificOutput"]["additionalContext"]
            assert "# Task #1 Fix login timeout" in context and " [active" in context
    log = run_trail("log", "1", "--type", "ConversationLinked", home=home, check=True).stdout
    sessions = list(dict.fromkeys(session for session, _ in starts))
    linked = [line.split()[-1] for line in log.splitlines()][-1 - len(sessions):]
    assert linked == [f"{agent}-paused", *(f"{agent}-{session}" for session in sessions)]


@pytest.mark.sqlite_only("reads the SQLite file and its WAL")
def test_the_hook_leaves_the_checkpoint_to_the_ledger(home: Path) -> None:
    """The last connection to close a WAL file checkpoints it (two fsyncs, more than the rest of the hook): the
    hook's row goes to the WAL and stays there, whole, for the ledger's next reader to fold in."""
    import sqlite3

    run_here("start", "Keep the hook cheap", home=home, check=True)
    ledger = home / "ledger.db"
    wal = Path(f"{ledger}-wal")
    assert not wal.exists()  # the command closed the ledger: folded in, the WAL gone
    assert hook(_tool("toolu_wal", "ls"), home).returncode == 0
    assert wal.exists() and wal.stat().st_size > 0
    con = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        [(payload,)] = con.execute("SELECT payload FROM capture_inbox").fetchall()
    finally:
        con.close()
    assert json.loads(payload)["tool_use_id"] == "toolu_wal"
    assert "ls" in run_trail("log", home=home, check=True).stdout  # the next read folds it in
