"""The brief cache (ledger/app/briefcache.py): `trail resume` answers from it only when the full path would print
the same bytes, and never once anything it shows has changed, whichever way the change came in.

Every case runs the real `trail` in a subprocess and reads what it imported: a fast answer loads no pydantic.
The reference is the full path on the same ledger (`cli.app` directly, which has no fast path).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ledger.app import briefcache
from tests.conftest import REPO, run_here, run_trail

FIXTURES = REPO / "tests" / "fixtures"
HEAVY = {"pydantic", "pydantic_core", "eventsourcing", "duckdb", "psycopg", "click", "orjson"}
PROBE = (
    "import sys, json\n"
    "sys.argv = ['trail', *json.loads(sys.argv[1])]\n"
    "from cli.main import main\n"
    "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
    "sys.stdout.flush()\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps([code, sorted({m.split('.')[0] for m in sys.modules})]))\n"
)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_CRASH_AT", "TRAIL_SNAPSHOT_EVERY")}
    return {**env, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO)}


def trail(home: Path, *args: str, stdin: str = "", cwd: Path | None = None,
          env: dict[str, str] | None = None) -> tuple[str, bool]:
    """What a real `trail ARGS` printed, and whether it answered fast (without loading the ledger's libraries)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], input=stdin, capture_output=True,
                          text=True, env={**_env(home), **(env or {})}, cwd=cwd or home.parent, timeout=60)
    err, _, tail = proc.stderr.rpartition("\nMODULES ")
    code, modules = json.loads(tail)
    assert code in (0, None), err
    return proc.stdout, not set(modules) & HEAVY


def full_resume(home: Path, *args: str, cwd: Path | None = None) -> str:
    """`trail resume` through the click app alone: the full path, whatever the cache holds."""
    proc = subprocess.run([sys.executable, "-c", "from cli.app import cli; cli()", "resume", *args],
                          capture_output=True, text=True, env=_env(home), cwd=cwd or home.parent, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def cache_files(home: Path) -> list[Path]:
    return sorted((home / "cache").glob("briefs-*.json"))


@pytest.fixture
def demo(home: Path) -> Path:
    run_here("demo", "--keep", home=home, check=True)  # set-up, in this process
    return home


def test_resume_answers_fast_with_the_same_bytes_as_the_full_path(demo: Path, backend: str) -> None:
    first, fast = trail(demo, "resume")
    assert not fast and "# Task #1 Fix login timeout" in first  # nothing cached yet
    again, fast = trail(demo, "resume")
    assert fast == (backend == "sqlite")  # a server ledger always takes the full path
    assert again == first == full_resume(demo)
    by_number, fast = trail(demo, "resume", "1")
    assert not fast and by_number == first  # another question: resolved in full once, then kept
    assert trail(demo, "resume", "#1") == (first, False) and trail(demo, "resume", "1") == (first, backend == "sqlite")
    if backend == "sqlite":
        [cache] = cache_files(demo)
        assert stat.S_IMODE(cache.stat().st_mode) == 0o600 and stat.S_IMODE(cache.parent.stat().st_mode) == 0o700


@pytest.mark.parametrize("way", ["cli", "hook", "import", "process"])
def test_every_way_in_shows_at_the_next_resume(demo: Path, way: str, tmp_path: Path) -> None:
    trail(demo, "resume")
    assert trail(demo, "resume")[1] or os.environ.get("TRAIL_DATABASE_URL")
    if way == "cli":
        run_trail("note", "Checked the staging logs: nothing new", home=demo, check=True)
        shown = "Checked the staging logs: nothing new"
    elif way == "hook":
        payload = {"session_id": "77777777-0000-4000-8000-000000000007", "hook_event_name": "UserPromptSubmit",
                   "prompt": "Also keep the login spinner under 200 ms", "cwd": str(demo.parent)}
        assert trail(demo, "hook", "claude-code", stdin=json.dumps(payload))[0] == ""
        shown = "Also keep the login spinner under 200 ms"
    elif way == "import":
        run_trail("import", "codex", str(FIXTURES / "codex-small.jsonl"), "--task", "1", home=demo, check=True)
        shown = "last event ["
    else:  # another process writes through the library, no `trail` command involved
        script = ("from ledger.base.location import resolve; from ledger.app.store import open_ledger\n"
                  "from ledger.domain import events as ev\n"
                  "l = open_ledger(resolve()); t = l.entries()[0].task_id\n"
                  "l.append(t, ev.NoteAdded, text='Written by another process'); l.close()")
        subprocess.run([sys.executable, "-c", script], env=_env(demo), check=True, timeout=60)
        shown = "Written by another process"
    after, fast = trail(demo, "resume")
    assert not fast and shown in after
    assert after == full_resume(demo)
    if way == "import":
        assert "last event [19]" not in after


def _key_of(home: Path, ledger: str) -> bytes:
    """The ledger's cache key, as the owner (not a forger) can read it."""
    name = Path(briefcache.cache_file(ledger)).name.removesuffix(".json")
    return (home / "keys" / f"{name}.key").read_bytes()


def _tamper_cache(home: Path, change: str) -> None:
    [cache] = cache_files(home)
    document = json.loads(cache.read_text())
    if change == "corrupt":
        cache.write_bytes(cache.read_bytes()[:-40] + b"\x00garbage")
    elif change == "edited":  # the brief changed, the seal left as it was
        for entry in document["body"]["tasks"].values():
            entry["resume"] = entry["resume"].replace("Fix login timeout", "Delete the database")
        cache.write_text(json.dumps(document))
    elif change == "foreign":  # a sound cache of another ledger, under this ledger's name
        other = home / "elsewhere.db"
        key = _key_of(home, document["ledger"])
        document["ledger"] = str(other)
        document["seal"] = briefcache._seal(str(other), document["body"], key)
        cache.write_text(json.dumps(document))
    elif change == "resealed":  # edited and sealed again: the key no longer matches what is stored
        for entry in document["body"]["tasks"].values():
            entry["key"] = "0" * 64
        document["seal"] = briefcache._seal(document["ledger"], document["body"], _key_of(home, document["ledger"]))
        cache.write_text(json.dumps(document))


@pytest.mark.sqlite_only("writes the cache and the SQLite ledger's bytes directly")
@pytest.mark.parametrize("change", ["corrupt", "edited", "foreign", "resealed"])
def test_a_corrupt_foreign_or_tampered_cache_is_never_shown(demo: Path, change: str) -> None:
    good, _ = trail(demo, "resume")
    assert trail(demo, "resume") == (good, True)
    _tamper_cache(demo, change)
    shown, fast = trail(demo, "resume")
    assert (shown, fast) == (good, False) and "Delete the database" not in shown
    assert trail(demo, "resume") == (good, True)  # the full path wrote it anew


def _ledger_sql(home: Path, sql: str, *args: object) -> None:
    con = sqlite3.connect(home / "ledger.db")
    with con:
        con.execute(sql, args)
    con.close()


@pytest.mark.sqlite_only("edits the SQLite ledger's rows")
@pytest.mark.parametrize("what", ["last row", "head anchor", "snapshot", "gap"])
def test_a_changed_ledger_row_takes_the_full_path(demo: Path, what: str) -> None:
    good, _ = trail(demo, "resume")
    assert trail(demo, "resume") == (good, True)
    if what == "last row":
        _ledger_sql(demo, "UPDATE stored_events SET state = replace(state, 'end of day', 'end of week') "
                          "WHERE originator_version = 19")
    elif what == "head anchor":
        _ledger_sql(demo, "UPDATE tasktrail_heads SET chain = ? WHERE version = 19", "f" * 64)
    elif what == "gap":  # a row cut from the middle: the full path refuses the task
        _ledger_sql(demo, "DELETE FROM stored_events WHERE originator_version = 10 AND topic LIKE 'tasktrail/%'")
    else:
        _ledger_sql(demo, "INSERT INTO stored_snapshots SELECT originator_id, 2, 'x', x'00' FROM stored_events "
                          "WHERE originator_version = 19")
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(["resume"])], capture_output=True, text=True,
                          env=_env(demo), cwd=demo.parent, timeout=60)
    _, modules = json.loads(proc.stderr.rpartition("\nMODULES ")[2])
    assert set(modules) & HEAVY  # the full path answered or refused: the cache did not stand in for it
    assert proc.stdout != good or what == "snapshot"


def test_the_active_task_and_the_project_are_followed(demo: Path, tmp_path: Path) -> None:
    here = demo.parent
    mine, _ = trail(demo, "resume")
    trail(demo, "resume")
    other = tmp_path / "other-project"
    other.mkdir()
    run_here("start", "Port the importer to Rust", home=demo, cwd=other, check=True)
    assert trail(demo, "resume", cwd=here)[0] == mine  # another project's new task changes nothing here
    theirs, _ = trail(demo, "resume", cwd=other)
    assert "Port the importer to Rust" in theirs and theirs == full_resume(demo, cwd=other)
    run_trail("switch", "2", home=demo, cwd=here, check=True)
    switched, fast = trail(demo, "resume", cwd=here)
    assert not fast and switched == theirs


@pytest.mark.sqlite_only("queues a row in the SQLite inbox by hand")
def test_a_new_session_later_than_the_last_event_shows_its_own_time(demo: Path) -> None:
    """The one part of a fast SessionStart filled in at print time: the new link's position and time."""
    from ledger.capture.agent_mcp import has_tasktrail_mcp
    from ledger.capture.agents import BUILTIN
    from ledger.capture.inbox import session_start_answer

    seed = {"session_id": "seed", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(demo.parent)}
    trail(demo, "hook", "claude-code", stdin=json.dumps(seed))  # reopens the paused task, keeps the answer
    payload = {"session_id": "later", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(demo.parent)}
    later = time.time() + 3 * 86_400
    con = sqlite3.connect(demo / "ledger.db")
    with con:
        row = con.execute("INSERT INTO capture_inbox (agent, received, payload) VALUES (?, ?, ?)",
                          ("claude-code", later, json.dumps(payload))).lastrowid
    con.close()
    fast = briefcache.cached_session_start(payload, "claude-code", int(row or 0), has_tasktrail_mcp, BUILTIN)
    assert fast is not None and time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(later)) in fast
    assert fast == session_start_answer(payload, "claude-code")  # folds the row in, then answers in full


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
def test_resume_looks_past_queued_rows_only_when_folding_them_appends_nothing(demo: Path) -> None:
    start = {"session_id": "linked", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(demo.parent)}
    trail(demo, "hook", "claude-code", stdin=json.dumps(start))  # full path: reopens and links
    brief, _ = trail(demo, "resume")
    assert trail(demo, "hook", "claude-code", stdin=json.dumps(start))[1]  # linked already: fast, row left queued
    assert trail(demo, "resume") == (brief, True) and brief == full_resume(demo)
    new = {**start, "session_id": "new"}
    assert trail(demo, "hook", "codex", stdin=json.dumps(new))[1]  # fast too, but its link is still to land
    shown, fast = trail(demo, "resume")
    assert not fast and shown != brief and shown == full_resume(demo)
    log = run_trail("log", "--type", "ConversationLinked", home=demo, check=True).stdout
    assert log.split()[-2:] == ["codex", "new"]


@pytest.mark.sqlite_only("names an SQLite ledger file")
@pytest.mark.parametrize("way", ["--db PATH", "--db=PATH", "TRAIL_DB", "TRAIL_DATABASE_URL", "--db sqlite:PATH"])
def test_every_way_of_naming_an_sqlite_ledger_answers_from_the_cache(home: Path, way: str, tmp_path: Path) -> None:
    """Issue 24: `trail --db PATH resume` (and the variables) took the full path every time."""
    other = tmp_path / "elsewhere" / "other.db"
    other.parent.mkdir()
    run_here("--db", str(other), "demo", "--keep", home=home, check=True)
    args: tuple[str, ...] = ("resume",)
    env: dict[str, str] = {}
    if way == "--db PATH":
        args = ("--db", str(other), "resume")
    elif way == "--db=PATH":
        args = (f"--db={other}", "resume", "1")
    elif way == "--db sqlite:PATH":
        args = ("--db", f"sqlite:{other}", "resume")
    elif way == "TRAIL_DB":
        env = {"TRAIL_DB": str(other)}
    else:
        env = {"TRAIL_DATABASE_URL": f"sqlite:{other}"}
    first, fast = trail(home, *args, env=env)
    assert not fast and "# Task #1 Fix login timeout" in first
    again, fast = trail(home, *args, env=env)
    assert fast and again == first
    full = subprocess.run([sys.executable, "-c", "from cli.app import cli; cli()", *args], capture_output=True,
                          text=True, env={**_env(home), **env}, cwd=home.parent, timeout=60, check=True)
    assert full.stdout == first
    assert not (home / "ledger.db").exists()  # the default ledger was never the one read
    run_trail("--db", str(other), "note", "Checked the staging logs", home=home, check=True)
    after, fast = trail(home, *args, env=env)
    assert not fast and "Checked the staging logs" in after


@pytest.mark.parametrize(("argv", "asked"), [
    (["resume"], (None, None)),
    (["resume", "7"], (None, "7")),
    (["--db", "x.db", "resume"], ("x.db", None)),
    (["--db=sqlite:x.db", "resume", "#2"], ("sqlite:x.db", "#2")),
    (["--db", "resume"], None),  # --db takes "resume" as its value: click says what is missing
    (["--db="], None),
    (["--db=", "resume"], None),
    (["resume", "--json"], None),
    (["resume", "1", "2"], None),
    (["--db", "x.db", "log"], None),
    (["-h", "resume"], None),
])
def test_only_the_plain_resume_forms_are_answered_from_the_cache(argv: list[str], asked: Any) -> None:
    from cli.main import resume_args

    assert resume_args(argv) == asked


def test_a_missing_ledger_named_by_db_is_still_refused_in_one_line(home: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "--db",
                           str(tmp_path / "none.db"), "resume"], capture_output=True, text=True, env=_env(home),
                          cwd=tmp_path, timeout=60)
    assert proc.returncode != 0 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_the_code_fingerprint_walks_this_checkouts_sources() -> None:
    """An edit of any source changes every key (``_code``): the walk must start where the sources are."""
    assert os.path.isfile(os.path.join(briefcache.SOURCES_ROOT, "ledger", "app", "briefcache.py"))
    assert all(os.path.isdir(os.path.join(briefcache.SOURCES_ROOT, top)) for top in briefcache.SOURCES)
