"""The one write path (``Ledger.write``): every way in redacts, once per write, and snapshots come from memory."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from ledger.app.store import Draft, Ledger, NewTask, open_ledger
from ledger.base.location import Location
from ledger.capture import writer
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from ledger.domain.task import Task

TOKEN = "ghp_" + "Qm7Wn2Ev5Rt8Yu1Io4Pa6Sd9Fg3Hj0KlZx2Cv4B"  # 36 after the prefix
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9Lk3Mn7Op"  # 40, as an AWS secret access key is
SECRET = f"{TOKEN} and aws_secret_access_key = {AWS}"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TRAIL_HOME", str(home))
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    return home


@pytest.fixture
def ledger(home: Path) -> Iterator[Ledger]:
    app = open_ledger(Location(url=f"sqlite:{home / 'ledger.db'}", home=home))
    yield app
    app.close()


def _source(record: str) -> ev.SourceKey:
    return ev.SourceKey(agent="claude-code", session="s-1", record=record)


def test_every_public_write_method_stores_a_secret_only_redacted(home: Path, ledger: Ledger) -> None:
    location = Location(url=f"sqlite:{home / 'ledger.db'}", home=home)
    opened = ledger.open_task(f"title {SECRET}", cwd=f"/work/{TOKEN}")
    assert opened.id is not None
    task = opened.id
    ledger.append(task, ev.NoteAdded, text=f"note {SECRET}")
    ledger.append_many(task, [
        (ev.RequirementStated, {"text": f"requirement {SECRET}"}),
        (ev.CommandRan, {"argv": ("echo", TOKEN), "cwd": "/w", "exit_code": 0, "stdout": bound(f"out {SECRET}")}),
    ])

    def decide(draft: Draft) -> None:
        draft.record_all()
        draft.record(ev.NextStepSet, text=f"next {SECRET}")  # a value the write was not handed

    ledger.write(task, [(ev.DecisionRecorded, {"text": f"decide {SECRET}", "reason": f"because {SECRET}"})], decide)
    ledger.write(NewTask(f"new {SECRET}", cwd="/w"), [(ev.NoteAdded, {"text": f"first {SECRET}"})], Draft.record_all)
    branched = ledger.branch(task, 4, f"branch {SECRET}")
    assert branched.id is not None
    done = writer.append_unseen(ledger, location, task, [
        (ev.CorrectionMade, {"text": f"correct {SECRET}", "wrong": f"wrong {SECRET}", "source": _source("r1")}),
    ])
    assert len(done.items) == 1
    new_id, opened_with = writer.open_with(
        ledger, f"import {SECRET}", [(ev.RequirementStated, {"text": f"imported {SECRET}", "source": _source("r2")})],
        cwd="/w", actor="agent:claude-code",
    )
    assert len(opened_with.items) == 1

    # What was recorded reads back redacted, and nothing was refused along the way.
    texts = [e.model_dump_json() for t in (task, branched.id, new_id) for e in ledger.task_events(t)]
    assert sum("[REDACTED:github-token:" in t for t in texts) >= 12
    assert all(TOKEN not in t and AWS not in t for t in texts)
    ledger.close()

    # Not a byte of either secret anywhere under TRAIL_HOME: the ledger, its WAL, anything beside it.
    db = sqlite3.connect(home / "ledger.db")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name == "ledger.db" for p in files)
    blob = b"".join(p.read_bytes() for p in files)
    assert b"[REDACTED:github-token:" in blob
    assert TOKEN.encode() not in blob and AWS.encode() not in blob


def test_branch_redacts_the_history_it_copies(ledger: Ledger) -> None:
    """A copy is written anew, so it gets today's redaction even if the original predates it."""
    opened = ledger.open_task("origin")
    assert opened.id is not None
    task = ledger.task(opened.id)
    task.record(ev.NoteAdded, text=f"recorded around the write path {SECRET}")  # as an old ledger may hold
    ledger.save(task)
    branched = ledger.branch(opened.id, 2, "copy")
    assert branched.id is not None
    copied = [e for e in ledger.task_events(branched.id) if isinstance(e, ev.NoteAdded)]
    assert len(copied) == 1 and TOKEN not in copied[0].text and "[REDACTED:github-token:" in copied[0].text


def test_items_are_redacted_once_per_write_not_per_retry(
    home: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = ledger.open_task("raced")
    assert opened.id is not None
    task = opened.id
    other = open_ledger(Location(url=f"sqlite:{home / 'ledger.db'}", home=home))
    calls: list[dict[str, Any]] = []
    import ledger.app.store as store

    real = store.redact_fields

    def counting(fields: dict[str, Any], *shared: Any) -> dict[str, Any]:
        calls.append(fields)
        return real(fields, *shared)

    monkeypatch.setattr(store, "redact_fields", counting)
    attempts: list[int] = []

    def decide(draft: Draft) -> int:
        attempts.append(draft.version)
        if len(attempts) == 1:
            other.append(task, ev.NoteAdded, text="got there first")  # the first attempt loses the race
        draft.record_all()
        return draft.version

    before = ledger.conflicts
    _, version = ledger.write(task, [(ev.NoteAdded, {"text": f"a {SECRET}"}), (ev.NoteAdded, {"text": "b"})], decide)
    other.close()
    assert ledger.conflicts == before + 1 and attempts == [1, 2] and version == 4
    texts = [calls_fields.get("text") for calls_fields in calls]
    assert texts.count(f"a {SECRET}") == 1 and texts.count("b") == 1  # once each, across both attempts
    stored = [e.text for e in ledger.task_events(task) if isinstance(e, ev.NoteAdded)]
    assert stored[0] == "got there first" and TOKEN not in stored[1] and stored[2] == "b"


def test_tasks_snapshots_come_from_memory_not_from_a_rebuild(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class EveryFive(Ledger):
        snapshotting_intervals = {**Ledger.snapshotting_intervals, Task: 5}

    app = open_ledger(Location(url=f"sqlite:{home / 'ledger.db'}", home=home), EveryFive)
    try:
        opened = app.open_task("snap")
        assert opened.id is not None
        task: UUID = opened.id
        rebuilt: list[Any] = []
        get = app.repository.get

        def counting(aggregate_id: UUID, version: int | None = None, **kwargs: Any) -> Any:
            if version is not None:
                rebuilt.append((aggregate_id, version))
            return get(aggregate_id, version=version, **kwargs)

        monkeypatch.setattr(app.repository, "get", counting)
        app.append_many(task, [(ev.NoteAdded, {"text": f"n{i}"}) for i in range(12)])
        assert rebuilt == []  # positions 5 and 10 were offered by the task itself
        monkeypatch.undo()
        assert app.snapshots is not None
        snapshots = {s.originator_version: s for s in app.snapshots.get(task)}
        assert sorted(snapshots) == [5, 10]
        for version, snapshot in snapshots.items():
            from_store = app.repository.get(task, version=version)
            assert snapshot.state.number == from_store.number and snapshot.state.head == from_store.head
            assert snapshot.state.decision == from_store.decision
    finally:
        app.close()


def test_a_lost_race_stores_only_the_winners_snapshot(home: Path) -> None:
    class EveryThree(Ledger):
        snapshotting_intervals = {**Ledger.snapshotting_intervals, Task: 3}

    location = Location(url=f"sqlite:{home / 'ledger.db'}", home=home)
    app, other = open_ledger(location, EveryThree), open_ledger(location, EveryThree)
    try:
        opened = app.open_task("race")
        assert opened.id is not None
        task = opened.id
        app.append(task, ev.NoteAdded, text="two")
        seen: list[int] = []

        def decide(draft: Draft) -> None:
            seen.append(draft.version)
            if len(seen) == 1:
                other.append(task, ev.NoteAdded, text="winner at three")
            draft.record_all()

        app.write(task, [(ev.NoteAdded, {"text": "loser, then four"})], decide)
        assert app.snapshots is not None
        (snapshot,) = list(app.snapshots.get(task))
        assert snapshot.originator_version == 3 and snapshot.state.head == app.task(task, at=3).head
        assert app.state(task, at=3).notes[-1].text == "winner at three"
        assert app.state(task).position == 4
    finally:
        app.close()
        other.close()
