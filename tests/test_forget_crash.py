"""Crash safety of `trail forget`: killed (SIGKILL at its own crash points, ``forget.STEPS``) at every
step on a compacted task with archives, diff blobs, dead letters and inbox rows, then run again; the
result is whole: no byte of the task anywhere, its tombstone kept, every other task intact and verifying.

One ledger holds a task per step and a keeper: each step forgets the next task, so every later task
(and the keeper) shows that forgetting one took nothing of the others (task 1's archive files are
found by name next to task 10's)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.app import forget
from ledger.base.location import Location
from tests.conftest import REPO, run_here
from tests.stores import Row, stored_rows


def marker(number: int) -> str:
    return f"QUOKKA-{number:02d}-must-go"


def session(number: int) -> str:
    return f"77777777-aaaa-4bbb-8ccc-{number:012d}"


def trail(home: Path, *args: str, cwd: Path | None = None, stdin: str | None = None,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real `trail` in a fresh process (as ``conftest.run_trail``, with stdin and extra variables)."""
    full = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_CRASH_AT")}
    full.update({"TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), **(env or {})})
    return subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *args], input=stdin,
                          cwd=cwd or home.parent, env=full, capture_output=True, text=True, timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.stderr[-2000:])
    return done.stdout


def plant(home: Path, work: Path, number: int) -> None:
    """Task ``number``, its marker in the live log, an archive, a diff blob, a waiting inbox row and a dead letter.

    Set-up, not what is tested: its commands run in this process (``run_here``), 8 a task."""
    mark, sid = marker(number), session(number)
    work.mkdir(parents=True)
    (work / "plan.py").write_text(f"PLAN = '{mark} in a file'\n")

    def trail(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
        return ok(run_here(*args, home=home, cwd=work, stdin=stdin, env=env))

    assert f"#{number}" in trail("start", f"Task {mark}")
    trail("changed", "plan.py")  # the file's content is kept in blobs/ to diff against
    hook = {"session_id": sid, "cwd": str(work)}
    trail("hook", "claude-code",
          stdin=json.dumps({**hook, "hook_event_name": "UserPromptSubmit", "prompt": f"prompt {mark}"}))
    trail("note", f"note {mark}")  # folds the prompt in: the session is the task's now
    trail("done")
    # A done task takes no more work: a later tool call of its session waits in the inbox.
    trail("hook", "claude-code", stdin=json.dumps(
        {**hook, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_{number}",
         "tool_input": {"command": f"echo {mark}"}, "tool_response": {"stdout": mark, "stderr": ""}}))
    # A ledger that cannot be opened: the payload becomes a dead letter.
    unopenable = home.parent / "unopenable.db"
    unopenable.mkdir(exist_ok=True)
    trail("hook", "claude-code", env={"TRAIL_DB": str(unopenable)},
          stdin=json.dumps({**hook, "hook_event_name": "UserPromptSubmit", "prompt": f"late {mark}"}))
    trail("compact", str(number), "--before", "4")


def files_with(home: Path, text: str) -> list[str]:
    """Every file under ``home`` whose bytes (or name) hold ``text``."""
    needle = text.encode()
    return sorted(str(p.relative_to(home)) for p in home.rglob("*")
                  if p.is_file() and (needle in p.read_bytes() or text in p.name))


def server_rows_with(location: Location, text: str) -> list[str]:
    """Tables of a PostgreSQL ledger with a row holding ``text`` (as text, or hex inside a bytea); none for SQLite."""
    if location.is_sqlite:
        return []
    import psycopg
    from psycopg import sql

    target = location.postgres()
    found = []
    with psycopg.connect(host=target.host, port=target.port, dbname=target.dbname, user=target.user,
                         password=target.password) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (target.schema,))]
        for table in tables:
            query = sql.SQL("SELECT t::text FROM {}.{} t").format(sql.Identifier(target.schema), sql.Identifier(table))
            rows = [r[0] for r in conn.execute(query)]
            if any(text in row or text.encode().hex() in row for row in rows):
                found.append(table)
    return found


def tombstones(location: Location) -> list[Row]:
    return [r for r in stored_rows(location) if r.topic == "tasktrail/TaskForgotten"]


def test_forget_killed_at_every_step_then_rerun_is_whole(home: Path, tmp_path: Path, location: Location) -> None:
    steps = forget.STEPS
    keeper = len(steps) + 1
    for number in range(1, keeper + 1):
        plant(home, tmp_path / f"work{number}", number)
    planted = files_with(home, marker(1))
    # Each kind of trace is really there before anything is forgotten.
    assert any(p.endswith(".parquet") for p in planted), planted
    assert any(p.startswith("blobs/") for p in planted), planted
    assert any(p.startswith("deadletter/") for p in planted), planted
    inbox = "ledger.db" if location.is_sqlite else "inbox"
    assert any(p.startswith(inbox) for p in planted), planted

    wholes = 0
    for number, step in enumerate(steps, start=1):
        killed = subprocess.Popen(
            [sys.executable, "-c", "from cli.main import main; main()", "forget", str(number), "--yes"],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**{k: v for k, v in os.environ.items() if k != "TRAIL_DB"}, "TRAIL_HOME": str(home),
                 "PYTHONPATH": str(REPO), "TRAIL_CRASH_AT": f"forget:{step}"},
        )
        assert killed.wait(timeout=120) == -signal.SIGKILL, f"{step}: the crash point was never reached"
        # Killed at any step, the tombstone is there already: it is written first.
        assert any(f'"number":{number},'.encode() in r.state for r in tombstones(location)), step

        # The re-run, in this process (each command opens the ledger afresh): the kill is the fresh process here.
        if step == "journaled":
            # A retention run finishes interrupted forgets too, not only tasks idle long enough.
            again = json.loads(ok(run_here("forget", "--older-than", "36500d", "--yes", "--json", home=home)))
            assert [a["number"] for a in again] == [number], (step, again)
        else:
            again = json.loads(ok(run_here("forget", str(number), "--yes", "--json", home=home)))
            assert [a["number"] for a in again] == [number], (step, again)
        assert again[0]["lost"] == [], (step, again)

        left = files_with(home, marker(number)) + server_rows_with(location, marker(number))
        assert left == [], f"killed at {step}: task #{number} is still in {left}"
        assert any(f'"number":{number},'.encode() in r.state for r in tombstones(location)), step
        verified = run_here("verify", home=home, cwd=tmp_path)  # a check, in this process too
        assert verified.returncode == 0, (step, verified.stdout, verified.stderr)
        assert not (home / forget.JOURNALS).exists(), step  # the journal goes when the forget is done
        # Every task not yet forgotten keeps each of its traces.
        for later in range(number + 1, keeper + 1):
            kept = files_with(home, marker(later))
            assert any(p.endswith(".parquet") for p in kept) and any(p.startswith("blobs/") for p in kept), (
                step, later, kept)
            assert any(p.startswith("deadletter/") for p in kept) and any(p.startswith(inbox) for p in kept), (
                step, later, kept)
        wholes += 1

    print(f"forget crash points: {len(steps)} steps killed, {wholes} wholes found after the re-run")
    assert wholes == len(steps)
    assert marker(keeper) in ok(run_here("resume", str(keeper), "--json", home=home))
    assert [t["number"] for t in json.loads(ok(run_here("list", "--json", home=home)))] == [keeper]


def test_archive_a_killed_compaction_left_unrecorded_goes_too(home: Path, tmp_path: Path) -> None:
    """A compaction killed after writing its file leaves an archive no index row names; it is found by name."""
    plant(home, tmp_path / "work1", 1)
    killed = trail(home, "compact", "1", "--before", "6", env={"TRAIL_CRASH_AT": "archive-written"})
    assert killed.returncode == -signal.SIGKILL
    assert any(p.endswith("-4-5.parquet") for p in files_with(home, "task-1-")), files_with(home, "task-1-")
    ok(trail(home, "forget", "1", "--yes"))
    assert files_with(home, marker(1)) == []
    assert files_with(home, "task-1-") == []


@pytest.mark.sqlite_only("only an SQLite ledger's briefs are cached")
def test_a_cached_brief_goes_when_killed_just_before_its_step(home: Path, tmp_path: Path) -> None:
    """`trail resume` keeps whole briefs in TRAIL_HOME/cache (ledger/app/briefcache.py): title, requirements,
    next step."""
    work = tmp_path / "work"
    work.mkdir()
    ok(trail(home, "start", f"Task {marker(1)}", cwd=work))
    ok(trail(home, "next", f"next step {marker(1)}", cwd=work))
    ok(trail(home, "resume", cwd=work))
    assert [p for p in files_with(home, marker(1)) if p.startswith("cache/")], files_with(home, marker(1))
    killed = trail(home, "forget", "1", "--yes", env={"TRAIL_CRASH_AT": "forget:readmodel-removed"})
    assert killed.returncode == -signal.SIGKILL
    assert [p for p in files_with(home, marker(1)) if p.startswith("cache/")]  # the step it was killed before
    ok(trail(home, "forget", "1", "--yes"))
    assert files_with(home, marker(1)) == []
