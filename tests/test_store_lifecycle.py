"""The lifecycle operations end to end, on each backend: compaction gives space back and changes
no answer, a compacted ledger migrates whole or not at all, a forgotten transcript stays forgotten."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.workload import Workload
from ledger.app import archive, migrate
from ledger.app.store import Ledger, open_ledger
from ledger.base.errors import StoreUnavailable
from ledger.base.location import Location, resolve
from ledger.domain import events as ev
from ledger.stores import store_class
from tests.conftest import run_here, run_trail
from tests.stores import store_exists, stored_rows
from tests.test_crash import SESSION, _transcript

EVENTS = 8_000
"""Long enough that the archived rows outweigh every fixed page 3 to 1 on both stores (docs/readmodel.md's
15,000-event numbers: the ratio is 50x on SQLite, 4.7x on PostgreSQL, the archive's bytes counted)."""


def _long_task(ledger: Ledger, events: int) -> int:
    """One task of ``events`` realistic events (bench/workload.py), appended in batches."""
    task = ledger.open_task("A long task").id
    assert task is not None
    for batch in Workload(seed=3).batches(events - 1, 1_000):
        ledger.append_many(task, batch)
    return ledger.state(task).number or 0


def _answers(home: Path, number: int, head: int, path: str) -> dict[str, Any]:
    """What the read commands answer; in this process (``run_here``: each opens the ledger afresh),
    while the compaction between two calls of this runs in a process of its own."""
    def trail(*args: str) -> Any:
        return json.loads(run_here(*args, "--json", home=home, check=True).stdout)

    return {
        "resume": trail("resume", str(number)),
        "log": trail("log", str(number)),
        "why": trail("why", path),
        "replay": {at: trail("replay", str(number), "--at", str(at)) for at in (1, 2, head // 3, head - 2, head)},
    }


def _without_marker(answers: dict[str, Any]) -> dict[str, Any]:
    """The answers minus what the EventsArchived marker itself adds (one more event at the head)."""
    return {**answers, "log": [e for e in answers["log"] if e["type"] != "EventsArchived"], "resume": None}


def test_compacting_a_long_task_gives_space_back_and_changes_no_answer(
    home: Path, location: Location
) -> None:
    with open_ledger(location) as ledger:
        number = _long_task(ledger, EVENTS)
        task = ledger.task_id(number)
        head = ledger.state(task).position
        path = next(e.path for e in ledger.task_events(task, upto=EVENTS // 3) if isinstance(e, ev.FileChanged))
        ledger.store.reclaim_space()
        size_before = ledger.store.file_bytes()
    assert head == EVENTS
    before = _answers(home, number, head, path)

    done = run_trail("compact", str(number), "--before", str(head - 10), home=home, check=True)
    assert f"archived positions 1-{head - 11}" in done.stdout

    with open_ledger(location) as ledger:
        size_after = ledger.store.file_bytes()
        [found] = ledger.store.archives(task)
        assert (found.first, found.last) == (1, head - 11)
    # The SQLite file (and WAL) on disk; on PostgreSQL the tables with their indexes and TOAST,
    # the archive's Parquet bytes included.
    assert size_before is not None and size_after is not None
    assert size_after * 3 <= size_before, (size_before, size_after)
    after = _answers(home, number, head, path)
    assert _without_marker(after) == _without_marker(before)
    state_before, state_after = before["resume"]["state"], after["resume"]["state"]
    changed = {k for k in state_before if state_before[k] != state_after[k]}
    assert changed <= {"position", "counts", "updated_at"}, changed
    assert run_trail("verify", home=home).returncode == 0
    assert run_trail("compact", str(number), "--verify", home=home).returncode == 0


@pytest.fixture
def compacted(tmp_path: Path) -> Location:
    """An SQLite ledger with a compacted task (an archive and a live tail) and a small second task."""
    location = resolve(f"sqlite:{tmp_path / 'old' / 'ledger.db'}")
    with open_ledger(location) as ledger:
        number = _long_task(ledger, 1_200)
        archive.compact(ledger, ledger.task_id(number), 900)
        other = ledger.open_task("Second").id
        assert other is not None
        ledger.append(other, ev.NoteAdded, text="hello")
    return location


def _archived_total(location: Location) -> int:
    with open_ledger(location, create="nothing") as ledger:
        return sum(a.events for a in ledger.store.archives(None))


def test_a_compacted_ledger_migrates_whole(compacted: Location, new_store: Callable[[], str], tmp_path: Path) -> None:
    target = new_store()
    proc = run_trail("migrate", "--from", compacted.url, "--to", target, "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    live = len(stored_rows(compacted))
    assert report["events"] == report["copied"] == live + 899 and report["archives_copied"] == 1
    assert sorted((r.task_id, r.position, r.state) for r in stored_rows(resolve(target))) == sorted(
        (r.task_id, r.position, r.state) for r in stored_rows(compacted))
    assert _archived_total(resolve(target)) == 899
    assert run_trail("--db", target, "verify", home=tmp_path).returncode == 0
    for at in ("5", "899", "1100"):  # the reads in this process: the migration is the process under test
        old = run_here("--db", compacted.url, "replay", "1", "--at", at, "--json", home=tmp_path, check=True)
        new = run_here("--db", target, "replay", "1", "--at", at, "--json", home=tmp_path, check=True)
        assert json.loads(new.stdout) == json.loads(old.stdout)
    again = json.loads(run_trail("migrate", "--from", compacted.url, "--to", target, "--json", home=tmp_path,
                                 check=True).stdout)
    assert again["copied"] == 0 and again["already_there"] == again["events"]


def test_a_migration_that_fails_or_dies_leaves_no_target(
    compacted: Location, new_store: Callable[[], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = resolve(new_store())
    kind = store_class(target)
    staging = kind.staging_for(target)
    # Killed (kill -9) after the copy verified and before it was published: no target; the
    # staging copy stays for the next run to clear.
    monkeypatch.setenv(archive.CRASH_ENV, migrate.CRASH_STEP)
    killed = run_trail("migrate", "--from", compacted.url, "--to", target.url, home=tmp_path)
    monkeypatch.delenv(archive.CRASH_ENV)
    assert killed.returncode == -9, killed.stderr
    assert not store_exists(target) and kind.exists(staging)

    # Failing verification: the staging copy goes too.
    def fails(*_: object) -> int:
        raise StoreUnavailable("injected: the copy does not verify")

    monkeypatch.setattr(migrate, "_verify", fails)
    with pytest.raises(StoreUnavailable, match="injected"):
        migrate.run(compacted, target, progress=lambda _: None)
    monkeypatch.undo()
    assert not store_exists(target) and not kind.exists(staging)

    # A clean run after both publishes the whole ledger.
    report = migrate.run(compacted, target, progress=lambda _: None)
    assert report.archives_copied == 1 and report.events == len(stored_rows(compacted)) + 899
    assert not kind.exists(staging)
    assert run_trail("--db", target.url, "verify", home=tmp_path).returncode == 0


def test_a_forgotten_transcript_does_not_come_back_on_reimport(home: Path, location: Location, tmp_path: Path) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    _transcript(transcript, 30)
    first = json.loads(run_trail("import", "claude-code", str(transcript), "--json", home=home, check=True).stdout)
    assert first["new_tasks"] == 1 and first["events_total"] > 30
    run_trail("forget", "1", "--yes", home=home, check=True)
    rows = len(stored_rows(location))

    # Skipped with its reason, and the import goes on to the next file (exit 0: nothing failed).
    again = run_trail("import", "claude-code", str(transcript), "--json", home=home)
    assert again.returncode == 0, again.stderr
    reasons = [s["reason"] for s in json.loads(again.stdout)["skipped"]]
    assert len(reasons) == 1 and "forgotten task #1" in reasons[0]
    assert len(stored_rows(location)) == rows  # nothing written: no task, no title, no event
    assert json.loads(run_trail("list", "--json", home=home, check=True).stdout) == []

    # Pointed at another task, the same records are refused one by one, each saying why.
    run_here("start", "Elsewhere", home=home, check=True)
    into = json.loads(run_trail("import", "claude-code", str(transcript), "--task", "2", "--json", home=home,
                                check=True).stdout)
    assert into["events_total"] == 0
    assert into["skipped"] and {s["reason"] for s in into["skipped"]} == {"forgotten task #1"}
    assert all(b"pytest -q -k case" not in r.state for r in stored_rows(location))
