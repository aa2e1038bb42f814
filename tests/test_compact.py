"""Compaction into Parquet archives: transparent reads, verification, crash safety (kill -9)."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import cli
from ledger.app import archive
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.stores import archived
from projections import readmodel
from projections.state import TaskState, replay

ROOT = Path(__file__).resolve().parents[1]


def _env(path: Path, every: int) -> dict[str, str]:
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "APPLICATION_RECORDER_TOPIC": "ledger.stores.sqlite:AnchoredRecorder",  # as open_ledger has it
        "SQLITE_DBNAME": str(path),
        "SQLITE_LOCK_TIMEOUT": "5",
        "TRAIL_SNAPSHOT_EVERY": str(every),
    }


def _fill(ledger: Ledger, count: int, start: datetime | None = None) -> UUID:
    """A task of ``count`` events: notes, attempts (one left open across the boundary), files, commands."""
    task = ledger.open_task("long").id
    assert task is not None
    clock = start or datetime.now(UTC)
    items: list[tuple[type[ev.TaskEvent], dict[str, Any]]] = []
    attempt: int | None = None
    for i in range(count - 1):
        position, at = i + 2, clock + timedelta(hours=i)
        if i % 9 == 0 and attempt is None:
            attempt = position
            items.append((ev.AttemptStarted, {"text": f"try {i}", "timestamp": at}))
        elif i % 9 == 5 and attempt is not None:
            items.append(
                (ev.AttemptEnded, {"attempt": attempt, "outcome": "failed", "reason": f"r{i}", "timestamp": at})
            )
            attempt = None
        elif i % 3 == 0:
            items.append((ev.FileChanged, {"path": f"f{i % 4}.py", "operation": "modified", "timestamp": at}))
        elif i % 3 == 1:
            items.append((ev.CommandRan, {"shell": "make", "exit_code": i % 2, "timestamp": at}))
        else:
            items.append((ev.NoteAdded, {"text": f"note {i}", "timestamp": at}))
    ledger.append_many(task, items)
    return task


def _history(ledger: Ledger, task: UUID, upto: int) -> tuple[list[ev.TaskEvent], list[TaskState]]:
    events = list(ledger.task_events(task, upto=upto))
    return events, [ledger.state(task, at=n) for n in range(1, upto + 1)]


def _live_rows(db: Path, task: UUID) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute("SELECT count(*) FROM stored_events WHERE originator_id = ?", (task.hex,)).fetchone()[0])


def _verified_input(ledger: Ledger, db: Path, task: UUID) -> str:
    """A digest of all that verifying ``task`` reads (``verify.verify_task``): every row of every table of the
    SQLite ledger ``db`` and, for each archive the ledger records, its file and manifest.

    Not the SQLite files' bytes, nor what a killed compaction left that no row records yet (a temporary file,
    an archive or manifest written before the commit): verify reads neither, and both differ from one kill to
    the next (where SQLite keeps a row, the main file or the WAL; the file each step leaves) where the rows
    are the same, so a digest of them had every kill verified again. Read with ``ledger`` open (its open
    recovered what the kill left), on a read-only connection of its own."""
    digest = hashlib.sha256()
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            rows = sorted(repr(row) for row in con.execute(f'SELECT * FROM "{table}"'))
            digest.update(f"{table}\0{len(rows)}\0{''.join(rows)}".encode())
    finally:
        con.close()
    for found in archived.archives(ledger, task):
        for path in (found.path, found.path.with_suffix(".manifest.json")):
            digest.update(f"{path.name}\0".encode() + (path.read_bytes() if path.exists() else b"(none)"))
    return digest.hexdigest()


def test_compaction_keeps_every_read_and_shrinks_the_live_store(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with Ledger(env=_env(db, 10)) as ledger:
        task = _fill(ledger, 120)
        events, states = _history(ledger, task, 120)
        assert [s.position for s in states] == list(range(1, 121))

        done = archive.compact(ledger, task, 75)
        assert (done.first, done.last, done.events) == (1, 74, 74)
        assert done.path.exists() and done.path.with_suffix(".manifest.json").exists()
        assert _live_rows(db, task) == 120 - 74 + 1  # plus the EventsArchived marker
        assert archive.verify(ledger, task) == []

        # Reads before, at and after the boundary are unchanged; the marker comes after.
        assert _history(ledger, task, 120) == (events, states)
        head = ledger.state(task)
        assert head.position == 121 and head.counts["EventsArchived"] == 1
        [marker] = list(ledger.task_events(task, after=120))
        assert isinstance(marker, ev.EventsArchived)
        assert (marker.first, marker.last, marker.sha256, marker.head) == (1, 74, done.sha256, events[73].chain)
        assert ledger.state(task, at=74) == replay(events[:74])
        assert list(ledger.task_events(task, after=70, upto=80)) == events[70:80]

        # Appending still works, and a second compaction stacks onto the first.
        ledger.append(task, ev.NoteAdded, text="after")
        archive.compact(ledger, task, 100)
        assert _history(ledger, task, 120) == (events, states)
        assert archive.verify(ledger, task) == []
        assert len(archived.archives(ledger, task)) == 2


def test_a_missing_or_altered_archive_is_reported(tmp_path: Path) -> None:
    with Ledger(env=_env(tmp_path / "ledger.db", 10)) as ledger:
        task = _fill(ledger, 40)
        done = archive.compact(ledger, task, 20)
        data = done.path.read_bytes()
        done.path.write_bytes(data[:-9] + bytes([data[-9] ^ 1]) + data[-8:])
        assert archive.verify(ledger, task) == [
            f"archive {done.path} was altered (sha256 differs from the one recorded)"
        ]
        done.path.unlink()
        assert "is missing" in archive.verify(ledger, task)[0]
        with pytest.raises(archived.ArchiveError, match="is missing"):
            ledger.state(task, at=5)
        assert ledger.state(task, at=25).position == 25  # the live part needs no archive


def test_verify_finds_a_tampered_live_event(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with Ledger(env=_env(db, 10)) as ledger:
        task = _fill(ledger, 40)
        archive.compact(ledger, task, 20)
        with sqlite3.connect(db) as con:
            state = con.execute(
                "SELECT state FROM stored_events WHERE originator_id = ? AND originator_version = 30", (task.hex,)
            ).fetchone()[0]
            con.execute(
                "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = 30",
                (bytes(state).replace(b'"make"', b'"rm -rf"').replace(b"note", b"nope"), task.hex),
            )
        assert archive.verify(ledger, task) == ["position 30: altered (content does not match its hash)"]


@pytest.mark.parametrize("step", archive.STEPS)
def test_kill_9_at_any_step_leaves_old_or_new_state_and_a_rerun_finishes(tmp_path: Path, step: str) -> None:
    db = tmp_path / "ledger.db"
    with Ledger(env=_env(db, 10)) as ledger:
        task = _fill(ledger, 80)
        events, states = _history(ledger, task, 80)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAIL_HOME": str(tmp_path / "home"), "TRAIL_SNAPSHOT_EVERY": "10"}
    argv = [
        sys.executable,
        "-c",
        "from cli.main import main; main()",
        "--db",
        str(db),
        "compact",
        "1",
        "--before",
        "50",
    ]

    killed = subprocess.run(argv, env={**env, archive.CRASH_ENV: step}, capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    with Ledger(env=_env(db, 10)) as ledger:
        committed = step == "committed"
        assert len(archived.archives(ledger, task)) == int(committed)
        assert _live_rows(db, task) == (80 - 49 + 1 if committed else 80)
        assert archive.verify(ledger, task) == []
        assert _history(ledger, task, 80) == (events, states)

    rerun = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    assert ("nothing to archive" in rerun.stdout) == committed
    with Ledger(env=_env(db, 10)) as ledger:
        assert [(a.first, a.last) for a in archived.archives(ledger, task)] == [(1, 49)]
        assert _live_rows(db, task) == 80 - 49 + 1
        assert archive.verify(ledger, task) == []
        assert _history(ledger, task, 80) == (events, states)
        assert ledger.state(task).counts["EventsArchived"] == 1
    assert sorted(p.name for p in (tmp_path / "ledger.db.archive").iterdir()) == [
        "task-1-1-49.manifest.json",
        "task-1-1-49.parquet",
    ]


@settings(max_examples=15, deadline=None)
@given(
    every=st.sampled_from([3, 7, 50]),
    count=st.integers(5, 45),
    cuts=st.lists(st.floats(0.05, 0.95), min_size=1, max_size=3),
)
def test_snapshot_tail_and_archives_equal_a_full_fold(every: int, count: int, cuts: list[float]) -> None:
    with tempfile.TemporaryDirectory() as tmp, Ledger(env=_env(Path(tmp) / "ledger.db", every)) as ledger:
        task = _fill(ledger, count)
        stored = list(ledger.task_events(task))
        for cut in sorted(cuts):
            before = max(2, int(cut * count))
            if before > archived.live_from(ledger, task):
                archive.compact(ledger, task, before)
        for n in range(1, count + 1):
            assert ledger.state(task, at=n) == replay(stored[:n]), f"K={every} at={n}"
        assert list(ledger.task_events(task, upto=count)) == stored
        assert archive.verify(ledger, task) == []


def test_cli_dry_run_older_than_and_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_HOME", str(tmp_path / "home"))
    db = tmp_path / "ledger.db"
    with open_ledger(resolve(str(db))) as ledger:
        task = _fill(ledger, 60, start=datetime.now(UTC) - timedelta(hours=70, minutes=30))

    def trail(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--db", str(db), "compact", "1", *args])

    dry = trail("--older-than", "24h", "--dry-run")
    assert dry.exit_code == 0, dry.output
    # Event p >= 2 is (70.5 - (p - 2)) hours old: positions 2..48 are older than 24h (1, TaskOpened, is now).
    assert dry.stdout.startswith("would archive positions 1-48 of task #1 (48 events")
    assert not (tmp_path / "ledger.db.archive").exists()
    done = trail("--older-than", "24h")
    assert done.exit_code == 0 and "archived positions 1-48" in done.stdout
    assert trail("--older-than", "24h").stdout.startswith("nothing to archive in task #1")
    assert trail("--verify").stdout.startswith("task #1: 1 archive(s) intact")
    bad = trail("--older-than", "soon")
    assert bad.exit_code == 2 and bad.stderr.strip().endswith(
        "compact: Invalid value for '--older-than': 'soon' is not an age like 30d, 12h or 90m")
    past = trail("--before", "500")
    assert past.exit_code == 3 and "past the task's last event" in past.stderr
    verified = CliRunner().invoke(cli, ["--db", str(db), "verify", "1"])
    assert verified.exit_code == 0 and verified.stdout.startswith("#1 ok: 61 events"), verified.output
    (tmp_path / "ledger.db.archive" / "task-1-1-48.parquet").unlink()
    broken = trail("--verify")
    assert broken.exit_code == 6 and "is missing" in broken.stderr
    whole = CliRunner().invoke(cli, ["--db", str(db), "verify", "1"])
    assert whole.exit_code == 5 and "BROKEN at position 1: archive" in whole.stdout
    with open_ledger(resolve(str(db))) as ledger:
        assert ledger.state(task, at=50).position == 50


def test_the_read_model_keeps_archived_events_across_a_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    path = readmodel.readmodel_path(resolve(str(db)))
    with Ledger(env=_env(db, 10)) as ledger:
        task = _fill(ledger, 60)
        archive.compact(ledger, task, 30)  # before the read model ever saw these events
        fresh = readmodel.refresh(ledger, path)
        assert fresh.events == 61
        rows = readmodel.query(path, "SELECT min(position), max(position), count(*) FROM events").rows
        assert rows == [(1, 61, 61)]
        before = {t: readmodel.query(path, f"SELECT * FROM {t} ORDER BY ALL").rows for t in readmodel.TABLES}
        ledger.append(task, ev.NoteAdded, text="later")
        archive.compact(ledger, task, 55)  # after the read model saw them: nothing doubles
        assert readmodel.refresh(ledger, path).events == 2
        assert readmodel.query(path, "SELECT count(*), count(DISTINCT position) FROM events").rows == [(63, 63)]
        readmodel.refresh(ledger, path, rebuild=True)
        assert readmodel.query(path, "SELECT count(*), count(DISTINCT position) FROM events").rows == [(63, 63)]
        after = {t: readmodel.query(path, f"SELECT * FROM {t} ORDER BY ALL").rows for t in readmodel.TABLES}
        assert after["attempts"] == before["attempts"]
        assert after["files"] == before["files"]


def test_kill_9_at_every_step_of_four_compactions_in_a_row(tmp_path: Path) -> None:
    """Besides one compaction's steps: a large task compacted four times in a row, each compaction
    killed at every one of its crash points in turn (``archive.STEPS``, no timing involved) before
    it is let finish; every time the ledger opens, verifies and answers as before."""
    db = tmp_path / "ledger.db"
    # Twelve snapshots and four archives, as 6,000 events with a snapshot every 500 had (and 20,000 before):
    # nothing in compaction or its crash points depends on a larger size. The boundaries and the last
    # assertion's ratio (under a fifth left live) scale with the size.
    total, every = 3_000, 250
    with Ledger(env=_env(db, every)) as ledger:
        task = _fill(ledger, total)
        probes = sorted(random.Random(5).sample(range(1, total + 1), 12))
        expected = {n: ledger.state(task, at=n) for n in probes}
        events = list(ledger.task_events(task))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRAIL_HOME": str(tmp_path / "home")}
    boundaries = [750, 1_500, 2_250, 2_850]
    kills = 0
    verified: set[str] = set()  # what verify reads of what a kill left (``_verified_input``), once it verified
    for before in boundaries:
        argv = [sys.executable, "-c", "from cli.main import main; main()", "--db", str(db),
                "compact", "1", "--before", str(before)]
        for step in archive.STEPS:
            killed = subprocess.run(argv, env={**env, archive.CRASH_ENV: step}, capture_output=True, text=True,
                                    timeout=120)
            assert killed.returncode == -9, (step, killed.stderr)
            kills += 1
            with Ledger(env=_env(db, every)) as ledger:
                # Only the last step's kill leaves the rows swapped for the archive.
                assert (archived.live_from(ledger, task) == before) == (step == "committed"), step
                # Verifying re-hashes and re-folds every event; a kill before the commit mostly leaves
                # what verify reads as the kill before it left it, and that is verified once.
                left = _verified_input(ledger, db, task)
                if left not in verified:
                    assert archive.verify(ledger, task) == [], step
                    verified.add(left)
                assert {n: ledger.state(task, at=n) for n in probes} == expected, step
    # Killed after its commit, each compaction was done: the next went on from it.
    assert kills == len(boundaries) * len(archive.STEPS)
    with Ledger(env=_env(db, every)) as ledger:
        assert [a.last for a in archived.archives(ledger, task)][-1] == 2_849
        assert [e for e in ledger.task_events(task) if not isinstance(e, ev.EventsArchived)] == events
        assert {n: ledger.state(task, at=n) for n in probes} == expected
        assert _live_rows(db, task) < total // 5


def test_archived_views_are_the_live_ones_copied_and_reads_below_the_boundary_keep_none_live(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with Ledger(env=_env(db, 10)) as ledger:
        task = _fill(ledger, 130)  # the write kept a view snapshot at every 10th position
        _, states = _history(ledger, task, 130)
        folded = ledger.views.folded
        first = archive.compact(ledger, task, 61, views_every=20)  # views at 20, 40, 60
        assert ledger.views.folded == folded  # each one the live store's, not folded again
        archive.compact(ledger, task, 111, views_every=20)  # stacked: 61-110, views at 80, 100
    manifest = orjson.loads(first.path.with_suffix(".manifest.json").read_bytes())
    assert manifest["views"] == 3
    with Ledger(env=_env(db, 10)) as fresh:
        assert fresh.state(task, at=110) == states[109] and fresh.views.folded == 0  # the boundary: its live view
        for position in range(109, 0, -1):  # latest first: no view held in memory answers the next
            folded = fresh.views.folded
            assert fresh.state(task, at=position) == states[position - 1]
            assert fresh.views.folded - folded == position % 20, position
        assert archive.verify(fresh, task) == []
    with sqlite3.connect(db) as con:
        kept = [p for (p,) in con.execute("SELECT position FROM tasktrail_views WHERE originator_id = ?", (task.hex,))]
    assert min(kept) == 110  # the boundary's; the folds through the archives grew none back below it
