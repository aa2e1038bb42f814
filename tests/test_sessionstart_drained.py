"""The background drain (``ledger.capture.detach``, ``ledger.capture.settle``): a stopping session's hook starts a
detached process that folds the inbox in and refreshes the brief cache, so the next SessionStart is answered
from the cache; the hook never waits for it; when it has not run or failed, the full path answers as before.

No test waits for time to pass: the drain is held at its gate (``crashpoints.gate_point``, a FIFO this test
opens and closes), killed at its crash points, or run with ``TRAIL_BACKGROUND_DRAIN=wait`` (the hook waits).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from ledger.app.briefcache import cached_session_start
from ledger.base import hook_spool
from ledger.base.ledger_file import ledger_file
from ledger.capture import detach, hook, settle
from ledger.capture.agent_mcp import has_tasktrail_mcp
from ledger.capture.agents import BUILTIN
from ledger.capture.inbox import session_start_answer
from ledger.capture.inbox_queue import enqueue
from tests.conftest import GUARD_S, in_thread, run_trail
from tests.test_hook import _env

S1 = "77777777-0000-4000-8000-000000000001"
S2 = "77777777-0000-4000-8000-000000000002"
def send(home: Path, agent: str, session: str, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    """One hook invocation as the agent makes it, in the session's folder (the test's project)."""
    env = {k: v for k, v in fields.pop("env", {}).items()}
    payload = {"session_id": session, "hook_event_name": event, "cwd": str(home.parent),
               "transcript_path": f"/tmp/{session}.jsonl", **fields}
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", agent],
        input=json.dumps(payload), capture_output=True, text=True, env=_env(home, **env), timeout=GUARD_S,
        cwd=home.parent,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc


def queued(home: Path) -> int:
    """Payloads waiting to be folded in: inbox rows, and tool events the hook spooled unread (``hook_spool``)."""
    con = sqlite3.connect(ledger_file())  # this process's TRAIL_HOME is ``home`` (the fixture sets it)
    try:
        rows = int(con.execute("SELECT count(*) FROM capture_inbox").fetchone()[0])
    finally:
        con.close()
    names, _ = hook_spool.listing()
    return rows + len(names)


def context(proc: subprocess.CompletedProcess[str]) -> str:
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def full_path(home: Path, agent: str, session: str) -> str:
    """The SessionStart answer by the full path (``TRAIL_CRASH_AT`` set to no point: the cache stands aside)."""
    return context(send(home, agent, session, "SessionStart", source="resume", env={"TRAIL_CRASH_AT": "none"}))


def previous_session(home: Path, agent: str) -> None:
    """A task, a session linked to it, and that session's prompt and test run queued (not yet its stop)."""
    run_trail("start", "Export the monthly report", home=home, check=True)
    send(home, agent, S1, "SessionStart", source="startup")  # the full path: links the session, fills the cache
    send(home, agent, S1, "UserPromptSubmit", prompt="Add a CSV export of the report")
    send(home, agent, S1, "PostToolUse", tool_name="Bash", tool_use_id="toolu_drained_1",
         tool_input={"command": "pytest -q"}, tool_response={"stdout": "3 passed\n", "stderr": ""})


def wait_for_lock(home: Path) -> None:
    """Return once no drain holds the inbox's lock (taking it, then letting it go)."""
    path = detach.lock_file(str(home / "ledger.db"))

    def take() -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            os.close(fd)

    in_thread(take)


def lock_held(home: Path) -> bool:
    fd = os.open(detach.lock_file(str(home / "ledger.db")), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


class Gate:
    """A FIFO the drain opens at ``settle-locked`` and reads to its end: opening it here returns once the drain
    is there (holding the lock, nothing folded yet); closing it lets the drain go on."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "gate"
        os.mkfifo(self.path)
        self.writer: IO[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"TRAIL_BACKGROUND_DRAIN": "on", "TRAIL_GATE_AT": f"settle-locked:{self.path}"}

    def reached(self) -> None:
        self.writer = in_thread(lambda: open(self.path, "wb"))  # noqa: SIM115 (closed in ``release``)

    def release(self) -> None:
        assert self.writer is not None
        self.writer.close()

    def close(self) -> None:
        """Let a drain still waiting at the gate go (a failed test's), so no process outlives the test there."""
        # No drain waiting to open it (done, or never there) is OSError: it finds no FIFO once tmp_path goes.
        with contextlib.suppress(OSError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        if self.writer is not None:
            self.writer.close()


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    held = Gate(tmp_path)
    yield held
    held.close()


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
def test_stop_returns_while_its_drain_runs_and_the_next_start_is_answered_from_the_cache(
    home: Path, gate: Gate
) -> None:
    previous_session(home, "claude-code")
    stop = send(home, "claude-code", S1, "Stop", last_assistant_message="The export is in.", env=gate.env)
    assert stop.stdout == ""  # returned, its pipes closed: while the drain it started waits at the gate
    gate.reached()
    assert lock_held(home) and queued(home) == 3  # the drain holds the lock and has folded nothing yet
    gate.release()
    wait_for_lock(home)
    assert queued(home) == 0  # the drain folded the prompt, the test run and the stop in

    start = send(home, "claude-code", S2, "SessionStart", source="startup")
    assert queued(home) == 1  # answered from the cache: its own row stays queued for the next reader
    brief = context(start)
    assert "Add a CSV export of the report" in brief and "The export is in." in brief
    assert brief == full_path(home, "claude-code", S2)  # the bytes the full path gives now, not an older brief
    assert not (home / "drain.log").exists()


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
@pytest.mark.parametrize("event", ["SessionEnd", "Stop", "PreCompact"])
def test_after_a_stopping_hook_the_linked_session_is_answered_from_the_cache(
    home: Path, agent: str, event: str
) -> None:
    previous_session(home, agent)
    send(home, agent, S1, event, reason="other", trigger="manual", env={"TRAIL_BACKGROUND_DRAIN": "wait"})
    assert queued(home) == 0
    resumed = send(home, agent, S1, "SessionStart", source="compact" if event == "PreCompact" else "resume")
    assert queued(home) == 1  # the cache answered
    assert "Add a CSV export of the report" in context(resumed)
    assert context(resumed) == full_path(home, agent, S1)


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
@pytest.mark.parametrize("point", ["settle-drain", "settle-keep"])
def test_a_drain_killed_midway_leaves_the_full_path_to_answer(home: Path, point: str) -> None:
    previous_session(home, "claude-code")
    stop = send(home, "claude-code", S1, "Stop", last_assistant_message="The export is in.",
                env={"TRAIL_BACKGROUND_DRAIN": "wait", "TRAIL_CRASH_AT": point})
    assert stop.stdout == ""
    # Killed before the drain: the rows wait. Killed after it, before the cache was kept: the cache is stale.
    assert queued(home) == (3 if point == "settle-drain" else 0)
    start = send(home, "claude-code", S2, "SessionStart", source="startup")
    assert queued(home) == 0  # the full path answered (and folded its own row in)
    assert "The export is in." in context(start)  # never the brief from before the stop
    assert not lock_held(home)  # the killed drain's lock went with it


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
def test_a_start_during_a_drain_waits_for_it_and_every_event_lands_once(
    home: Path, tmp_path: Path, gate: Gate
) -> None:
    previous_session(home, "claude-code")
    send(home, "claude-code", S1, "Stop", last_assistant_message="The export is in.", env=gate.env)
    gate.reached()
    payload = tmp_path / "start.json"
    payload.write_text(json.dumps({"session_id": S2, "hook_event_name": "SessionStart", "source": "startup",
                                   "cwd": str(home.parent)}))
    with payload.open("rb") as stdin:
        starting = subprocess.Popen(
            [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home),
            cwd=home.parent,
        )
    gate.release()  # whether the start is waiting yet or not, the answer must be the same
    out, err = in_thread(starting.communicate)
    assert starting.returncode == 0 and err == ""
    wait_for_lock(home)
    brief = str(json.loads(out)["hookSpecificOutput"]["additionalContext"])
    assert "The export is in." in brief
    assert brief == full_path(home, "claude-code", S2)
    shown = run_trail("log", "--json", home=home, check=True)
    sources = [e.get("source") for e in json.loads(shown.stdout) if e.get("source")]
    assert len(sources) == len({json.dumps(s, sort_keys=True) for s in sources})  # none twice


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
def test_the_cache_answers_a_start_whose_row_a_drain_folded(home: Path) -> None:
    previous_session(home, "claude-code")
    payload = {"session_id": S1, "hook_event_name": "SessionStart", "source": "resume", "cwd": str(home.parent)}
    row = enqueue(ledger_file(), "claude-code", payload)
    assert settle.run() is not None  # the drain folds every row in, this SessionStart's too, and keeps the cache
    assert queued(home) == 0
    answer = cached_session_start(payload, "claude-code", row, has_tasktrail_mcp, BUILTIN)
    assert answer is not None and answer == session_start_answer(payload, "claude-code")
    stranger = {**payload, "session_id": S2}  # folded and never linked (no such row): the full path's to say
    assert cached_session_start(stranger, "claude-code", row, has_tasktrail_mcp, BUILTIN) is None


def test_which_hooks_start_a_drain(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(detach, "start", lambda: started.append("drain") or 0)

    def run(event: str, switch: str | None) -> None:
        if switch is None:
            monkeypatch.delenv(detach.SWITCH, raising=False)
        else:
            monkeypatch.setenv(detach.SWITCH, switch)
        body = json.dumps({"session_id": S1, "hook_event_name": event, "cwd": str(home.parent)}).encode()
        assert hook.run(["claude-code"], io.BytesIO(body)) == 0

    for event in ("Stop", "SessionEnd", "PreCompact"):
        run(event, None)
    assert started == ["drain"] * 3
    for event in ("PostToolUse", "UserPromptSubmit", "SubagentStop"):
        run(event, None)
    for switch in ("off", "0", "no", "FALSE"):
        run("SessionEnd", switch)
    assert started == ["drain"] * 3  # tool events never; switched off, no event


def test_a_drain_that_cannot_start_costs_the_hook_nothing(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(detach.SWITCH, raising=False)
    monkeypatch.setattr(sys, "executable", str(home / "no-such-python"))
    body = json.dumps({"session_id": S1, "hook_event_name": "Stop", "cwd": str(home.parent)}).encode()
    assert hook.run(["claude-code"], io.BytesIO(body)) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "background drain not started" in err
    assert queued(home) == 1  # the row is kept for the next read


def test_a_drain_on_any_backend_folds_the_stopped_session_in(home: Path) -> None:
    previous_session(home, "claude-code")
    send(home, "claude-code", S1, "SessionEnd", reason="logout", env={"TRAIL_BACKGROUND_DRAIN": "wait"})
    con = sqlite3.connect(ledger_file())
    try:
        assert con.execute("SELECT count(*) FROM capture_inbox").fetchone()[0] == 0
    finally:
        con.close()
    shown = run_trail("log", "--json", home=home, check=True)
    assert "session ended" in shown.stdout and "Add a CSV export of the report" in shown.stdout


def test_a_command_that_finds_a_drain_running_says_it_waits_then_shows_the_folded_session(
    home: Path, gate: Gate
) -> None:
    previous_session(home, "claude-code")
    send(home, "claude-code", S1, "Stop", last_assistant_message="The export is in.", env=gate.env)
    gate.reached()  # the drain holds the lock, nothing folded yet
    listing = subprocess.Popen(
        [sys.executable, "-c", "from cli.main import main; main()", "log", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home), cwd=home.parent,
    )
    assert listing.stderr is not None
    said = in_thread(listing.stderr.readline)  # printed before it waits: only then is the gate opened
    gate.release()
    out, rest = in_thread(listing.communicate)
    assert listing.returncode == 0, rest
    assert said.startswith("trail: a stopping session's capture is being folded in; waiting for it")
    assert rest == ""
    assert "The export is in." in out  # the drain's fold, seen by the command that waited for it
