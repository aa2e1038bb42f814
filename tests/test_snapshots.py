"""Snapshots: the state read from the nearest snapshot plus the tail equals a full fold.

Real SQLite files; K from ``TRAIL_SNAPSHOT_EVERY``; every point of every generated task.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import cli
from ledger.app.store import SNAPSHOT_EVERY, Ledger, open_ledger
from ledger.base.errors import BadSetting, StoreUnavailable
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.domain.decision_state import DecisionState, advance
from ledger.domain.task import Task
from projections.state import replay


def decisions(events: list[ev.TaskEvent]) -> DecisionState:
    state = DecisionState()
    for event in events:
        state = advance(state, event)
    return state

Item = tuple[type[ev.TaskEvent], dict[str, Any]]

OPS = (
    "require",
    "change",
    "correct",
    "decide",
    "attempt",
    "end",
    "command",
    "file",
    "rename",
    "test",
    "checkpoint",
    "next",
    "status",
    "note",
    "conversation",
    "tool",
    "result",
    "link",
    "plan",
    "compacted",
    "reply",
)


def script(ops: list[tuple[str, int]]) -> list[Item]:
    """Turn drawn operations into events the Task's rules accept (positions tracked here)."""
    items: list[Item] = []
    requirements: list[int] = []
    open_attempt: int | None = None
    for op, n in ops:
        position = len(items) + 2  # the TaskOpened event is position 1
        text = f"{op} {n}"
        if op == "end" and open_attempt is None:
            op = "attempt"
        if op == "attempt" and open_attempt is not None:
            op = "end"
        if op == "change" and not requirements:
            op = "require"
        match op:
            case "require":
                requirements.append(position)
                items.append((ev.RequirementStated, {"text": text}))
            case "change":
                items.append((ev.RequirementChanged, {"text": text, "supersedes": requirements[n % len(requirements)]}))
            case "correct":
                items.append((ev.CorrectionMade, {"text": text, "wrong": f"w{n}" if n % 2 else None}))
            case "decide":
                items.append((ev.DecisionRecorded, {"text": text, "reason": "r", "rejected": ("x",) * (n % 3)}))
            case "attempt":
                open_attempt = position
                items.append((ev.AttemptStarted, {"text": text}))
            case "end":
                outcome = ("failed", "succeeded", "abandoned")[n % 3]
                items.append((ev.AttemptEnded, {"attempt": open_attempt, "outcome": outcome, "reason": text}))
                open_attempt = None
            case "command":
                out = ev.Bounded(tail=f"line\n{text}\n", size=len(text) + 6)
                items.append((ev.CommandRan, {"shell": f"make t{n % 4}", "exit_code": n % 3, "stderr": out}))
            case "file":
                items.append((ev.FileChanged, {"path": f"src/f{n % 5}.py", "operation": "modified"}))
            case "rename":
                src, dst = f"src/f{n % 5}.py", f"src/f{(n + 1) % 5}.py"
                items.append((ev.FileChanged, {"path": dst, "operation": "renamed", "renamed_from": src}))
            case "test":
                outcome_t = ("passed", "failed", "error", "skipped")[n % 4]
                items.append((ev.TestResult, {"name": f"test_{n % 6}", "outcome": outcome_t, "message": text}))
            case "checkpoint":
                items.append((ev.CheckpointMarked, {"label": text, "git_head": "abc", "git_dirty": bool(n % 2)}))
            case "next":
                items.append((ev.NextStepSet, {"text": text}))
            case "status":
                items.append((ev.StatusChanged, {"status": ("active", "paused", "blocked")[n % 3], "reason": text}))
            case "note":
                items.append((ev.NoteAdded, {"text": text, "actor": "agent:claude"}))
            case "conversation":
                items.append((ev.ConversationLinked, {"agent": "claude", "session_id": f"s{n}"}))
            case "tool":
                items.append((ev.ToolCalled, {"tool": "bash", "input": ev.Bounded(tail=text, size=len(text))}))
            case "result":
                out_r = ev.Bounded(tail=text, size=len(text))
                items.append((ev.ToolResult, {"tool": "bash", "ok": bool(n % 2), "output": out_r}))
            case "plan":
                marks = ("completed", "in_progress", "pending")
                steps = tuple(ev.PlanStep(text=f"step {i}", status=marks[(n + i) % 3]) for i in range(n % 4))
                items.append((ev.PlanUpdated, {"steps": steps, "actor": "agent:claude"}))
            case "compacted":
                summary = ev.Bounded(tail=text, size=len(text))
                items.append((ev.ContextCompacted, {"trigger": "auto", "summary": summary}))
            case "reply":
                reply = ev.Bounded(tail=text, size=len(text))
                items.append((ev.AgentReplied, {"text": reply, "actor": "agent:claude"}))
            case "link":
                other = uuid5(UUID(int=0), str(n))
                items.append((ev.TaskLinked, {"relation": "related", "other": other, "other_number": n}))
    return items


@contextmanager
def ledger_with(every: int) -> Iterator[Ledger]:
    with tempfile.TemporaryDirectory() as tmp:
        app = Ledger(env={"TRAIL_SNAPSHOT_EVERY": str(every), **_sqlite_env(Path(tmp) / "ledger.db")})
        try:
            yield app
        finally:
            app.close()


def _sqlite_env(path: Path) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path), "SQLITE_LOCK_TIMEOUT": "5",
            "APPLICATION_RECORDER_TOPIC": "ledger.stores.sqlite:AnchoredRecorder"}  # as open_ledger has it


def snapshot_versions(ledger: Ledger, task: UUID) -> list[int]:
    path = ledger.env.get("SQLITE_DBNAME")
    with sqlite3.connect(str(path)) as con:
        rows = con.execute(
            "SELECT originator_version FROM stored_snapshots WHERE originator_id = ? ORDER BY 1", (task.hex,)
        ).fetchall()
    return [r[0] for r in rows]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    every=st.sampled_from([1, 2, 3, 5, 8, 13]),
    ops=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 11)), min_size=1, max_size=45),
    chunks=st.lists(st.integers(1, 9), min_size=1, max_size=8),
)
def test_snapshot_plus_tail_equals_a_full_fold_at_every_point(
    every: int, ops: list[tuple[str, int]], chunks: list[int]
) -> None:
    items = script(ops)
    with ledger_with(every) as ledger:
        task = ledger.open_task("property").id
        assert task is not None
        # Appended in several saves of drawn sizes: snapshots are taken inside multi-event saves too.
        rest, sizes = list(items), iter(chunks * (len(items) + 1))
        while rest:
            size = next(sizes)
            ledger.append_many(task, rest[:size])
            rest = rest[size:]
        stored = list(ledger.task_events(task))
        total = len(items) + 1
        assert len(stored) == total
        assert snapshot_versions(ledger, task) == list(range(every, total + 1, every))
        for n in range(1, total + 1):
            expected = replay(stored[:n])
            got = ledger.state(task, at=n)
            assert got == expected, f"K={every}, at={n}"
            assert ledger.task(task, at=n).decision == decisions(stored[:n]), f"K={every}, at={n}"
            assert list(got.files) == list(expected.files)  # order = order of last change
            assert got.model_dump(mode="json") == expected.model_dump(mode="json")
        assert ledger.state(task) == replay(stored)


def test_a_point_reads_at_most_k_events_from_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    every = 7
    with ledger_with(every) as ledger:
        task = ledger.open_task("bounded").id
        assert task is not None
        ledger.append_many(task, script([(op, i) for i in range(6) for op in OPS])[:100])
        read: list[int] = []
        select = ledger.recorder.select_events

        def counting(*args: Any, **kwargs: Any) -> Any:
            rows = select(*args, **kwargs)
            read.append(len(rows))
            return rows

        monkeypatch.setattr(ledger.recorder, "select_events", counting)
        for n in range(1, 102):
            read.clear()
            assert ledger.state(task, at=n).position == n
            assert sum(read) <= every - 1, f"at={n} read {sum(read)} events"


def test_k_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "4")
    with open_ledger(resolve(str(tmp_path / "ledger.db"))) as ledger:
        task = ledger.open_task("k").id
        assert task is not None
        ledger.append_many(task, [(ev.NoteAdded, {"text": f"n{i}"}) for i in range(9)])
        assert snapshot_versions(ledger, task) == [4, 8]
    monkeypatch.delenv("TRAIL_SNAPSHOT_EVERY")
    with open_ledger(resolve(str(tmp_path / "other.db"))) as ledger:
        assert ledger.snapshotting_intervals[Task] == SNAPSHOT_EVERY


@pytest.mark.parametrize("value", ["0", "-3", "often"])
def test_a_bad_k_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    with pytest.raises(BadSetting, match="TRAIL_SNAPSHOT_EVERY"):
        Ledger(env={"TRAIL_SNAPSHOT_EVERY": value, **_sqlite_env(tmp_path / "l.db")})
    monkeypatch.setenv("TRAIL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", value)
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "l.db"), "query", "SELECT 1"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"trail: TRAIL_SNAPSHOT_EVERY must be a positive whole number of events, not {value!r}"
    ]


def test_a_batch_and_its_snapshots_are_one_transaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A snapshot that cannot be stored takes the batch's events with it: they were never committed
    # apart (one commit per batch), and the next batch starts from the same position.
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "4")
    path = tmp_path / "ledger.db"
    with open_ledger(resolve(str(path))) as ledger:
        task = ledger.open_task("atomic").id
        assert task is not None
        ledger.append_many(task, [(ev.NoteAdded, {"text": "n1"})])  # positions 1-2: no snapshot yet
        con = sqlite3.connect(path)
        con.execute("CREATE TRIGGER refuse BEFORE INSERT ON stored_snapshots BEGIN SELECT no_such_function(); END")
        con.commit()
        with pytest.raises(StoreUnavailable, match="no_such_function"):
            ledger.append_many(task, [(ev.NoteAdded, {"text": f"n{i}"}) for i in range(2, 6)])  # 3-6 crosses 4
        assert con.execute("SELECT max(originator_version) FROM stored_events WHERE originator_id = ?",
                           (task.hex,)).fetchone() == (2,)
        con.execute("DROP TRIGGER refuse")
        con.commit()
        con.close()
        written = ledger.append_many(task, [(ev.NoteAdded, {"text": f"n{i}"}) for i in range(2, 6)])
        assert written.position == 6 and snapshot_versions(ledger, task) == [4]
