"""Reads read: a command folds the capture inbox in as one step, once (``cli.context.Context.catch_up``); a
read that finds nothing waiting writes nothing and waits for no lock; the view snapshots reads keep never
wait and never fail a read; one `trail resume` after a hook loads the task once to read it and renders
its brief once."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from ledger.app import refs
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location, inbox_path
from ledger.base.schema import VIEWS
from ledger.capture import inbox_queue
from ledger.domain import events as ev
from projections.state import FOLD_VERSION
from tests.conftest import run_here, run_trail

WRITES = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|DROP|ALTER|BEGIN\s+(IMMEDIATE|EXCLUSIVE)"
                    r"|CREATE(?!\s+(TABLE|INDEX|UNIQUE\s+INDEX)\s+IF\s+NOT\s+EXISTS))", re.IGNORECASE)
"""A statement that takes the write lock (a CREATE ... IF NOT EXISTS of what is there writes nothing)."""
CONNECT = sqlite3.connect
"""sqlite3's own, for the test's connections (``traced`` watches the commands')."""


def _seeded(location: Location, notes: int) -> None:
    """A task of ``notes`` + 1 events and no view snapshot kept yet (the write that passed a K-th position kept
    one: dropped, as a ledger an older release wrote has none), so the next read folds and keeps them."""
    ledger = open_ledger(location)
    try:
        opened = ledger.open_task("Fix the parser", cwd=str(location.home.parent))
        task = opened.id
        refs.set_active(location, task, opened.project)  # as `trail start` leaves it
        ledger.append_many(task, [(ev.NoteAdded, {"text": f"note {n}"}) for n in range(notes)])
        ledger.store.drop_view_snapshots(task)
    finally:
        ledger.close()


def _views(location: Location) -> int:
    con = CONNECT(location.sqlite_path)
    try:
        return int(con.execute(f"SELECT count(*) FROM {VIEWS} WHERE fold_version = ?", (FOLD_VERSION,)).fetchone()[0])
    except sqlite3.OperationalError:  # no such table: none kept yet
        return 0
    finally:
        con.close()


@pytest.fixture
def traced(location: Location, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[float, str]]]:
    """Every statement that writes, run on a connection to the ledger file in this process, with the lock
    timeout that connection asked for."""
    ledger_file = location.sqlite_path.resolve()
    seen: list[tuple[float, str]] = []

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        con = CONNECT(database, *args, **kwargs)
        name = str(database)
        path = Path(unquote(urlsplit(name).path)) if name.startswith("file:") else Path(name)
        if path.resolve() == ledger_file:
            timeout = float(kwargs.get("timeout", args[0] if args else 5.0))
            con.set_trace_callback(lambda sql: seen.append((timeout, sql)) if WRITES.match(sql) else None)
        return con

    monkeypatch.setattr(sqlite3, "connect", connect)
    yield seen


@pytest.mark.sqlite_only("holds the SQLite file's write lock from another connection")
def test_reads_answer_and_write_nothing_while_the_write_lock_is_held(
    home: Path, location: Location, traced: list[tuple[float, str]]
) -> None:
    _seeded(location, 12)
    traced.clear()
    assert not inbox_queue.waiting(location)
    holder = CONNECT(location.sqlite_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer, mid-transaction
    try:
        listed = run_here("list", home=home, check=True)
        assert "Fix the parser" in listed.stdout and "13 ev" in listed.stdout
        assert "Fix the parser" in run_here("resume", home=home, check=True).stdout
        assert json.loads(run_here("resume", "--json", home=home, check=True).stdout)["position"] == 13
        assert "note 11" in run_here("log", home=home, check=True).stdout
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert traced == []  # nothing waiting, no view snapshot due (K is 500): not one write tried


@pytest.mark.sqlite_only("holds the SQLite file's write lock from another connection")
def test_a_view_snapshot_a_read_keeps_never_waits_for_the_lock(
    home: Path, location: Location, traced: list[tuple[float, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "5")
    _seeded(location, 12)
    traced.clear()
    holder = CONNECT(location.sqlite_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert json.loads(run_here("resume", "--json", home=home, check=True).stdout)["position"] == 13
        assert "13 ev" in run_here("list", home=home, check=True).stdout
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Each read's fold passed 5 and 10 and tried to keep the view there, asking for no wait: refused at once.
    assert traced == [(0.0, "BEGIN IMMEDIATE")] * 4 and _views(location) == 0
    run_here("resume", "--json", home=home, check=True)
    assert _views(location) == 2  # the lock gone, the next read keeps them


def test_a_view_snapshot_held_by_another_transaction_fails_no_read(
    home: Path, location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL waits for a row another transaction inserted until it ends: the read's keep may not."""
    if not location.is_postgres:
        pytest.skip("a row lock: SQLite's whole-file lock is the test above")
    from ledger.stores import postgres

    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "5")
    _seeded(location, 12)
    ledger = open_ledger(location)
    task = ledger.task_id(1)
    ledger.close()
    target = location.postgres()
    holder = postgres.connect(target, location.display)
    try:
        holder.autocommit = False
        holder.execute(f'INSERT INTO "{target.schema}".{VIEWS} VALUES (%s, 5, %s, %s)', (task, FOLD_VERSION, b"x"))
        # In another process, as a second command would be; a wait for the row would end only at the timeout.
        resumed = run_trail("resume", "--json", home=home, check=True)
        assert json.loads(resumed.stdout)["position"] == 13
    finally:
        holder.rollback()
        holder.close()


def _hooked(home: Path, location: Location) -> None:
    """A task, then one hook row waiting in the inbox for the session the project's task takes."""
    _seeded(location, 3)
    payload = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
               "tool_input": {"command": "make build"}, "tool_response": {"stdout": "built\n", "stderr": ""},
               "cwd": str(home.parent)}
    inbox_queue.enqueue(str(inbox_path(location)), "claude-code", payload)
    assert inbox_queue.waiting(location)


@pytest.mark.sqlite_only("counts the brief cache's renders, which only SQLite ledgers keep")
def test_one_resume_after_a_hook_folds_once_loads_once_and_renders_once(
    home: Path, location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ledger.capture.inbox as inbox
    import projections.brief as brief

    _hooked(home, location)
    counts: Counter[str] = Counter()
    writing: list[bool] = []
    real_drain, real_render, real_task, real_write = inbox.drain, brief.render, Ledger.task, Ledger.write

    def drain(*args: Any, **kwargs: Any) -> Any:
        counts["drains"] += 1
        return real_drain(*args, **kwargs)

    def render(state: Any, max_chars: int | None = None, **kwargs: Any) -> str:
        counts["briefs" if max_chars is None and not kwargs else "injections"] += 1
        return real_render(state, max_chars, **kwargs)

    def task(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        counts["loads to append" if writing else "loads to read"] += 1
        return real_task(self, *args, **kwargs)

    def write(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        writing.append(True)
        try:
            return real_write(self, *args, **kwargs)
        finally:
            writing.pop()

    monkeypatch.setattr(inbox, "drain", drain)
    monkeypatch.setattr(brief, "render", render)
    monkeypatch.setattr(Ledger, "task", task)
    monkeypatch.setattr(Ledger, "write", write)
    resumed = run_here("resume", home=home, check=True)
    assert "make build" in resumed.stdout and not inbox_queue.waiting(location)
    assert counts["drains"] == 1 and counts["briefs"] == 1, counts
    assert counts["loads to read"] == 1 and counts["loads to append"] == 1, counts  # the fold's append loads to write
    cached = run_here("resume", home=home, check=True)
    assert cached.stdout == resumed.stdout and counts["briefs"] == 1  # the cache answers: nothing loaded


def test_doctor_reports_what_its_one_fold_took_in(home: Path, location: Location) -> None:
    _hooked(home, location)
    report = json.loads(run_here("doctor", "--json", home=home, check=True).stdout)
    assert report["events"] == 2 and report["waiting_rows"] == 0, report  # the session's link and its command
    again = json.loads(run_here("doctor", "--json", home=home, check=True).stdout)
    assert again["events"] == 0
