"""The fold's version (``projections.state.FOLD_VERSION``): view snapshots are kept per fold version,
a view from another fold (in a view snapshot, or in an older release's task snapshot) is folded again
from the events on read, and changing the fold without bumping the version fails here.

The guard folds a recorded log (``tests/fixtures/fold_golden.json``: the sample task and the
``claude-facts`` transcript, imported, as stored rows) and compares the state with the one recorded
beside it. When the fold is meant to change: bump ``FOLD_VERSION``, then rewrite the file with
``python -m tests.test_fold_version``.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, cast
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import StoredEvent

from ledger.app import sample
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location, resolve
from ledger.capture import importer
from ledger.domain import events as ev
from ledger.domain.mapper import PydanticMapper
from ledger.domain.task import TaskSnapshot
from projections.state import FOLD_VERSION, replay
from tests import legacy
from tests.conftest import run_trail

GOLDEN = Path(__file__).parent / "fixtures" / "fold_golden.json"
FACTS = Path(__file__).parent / "fixtures" / "claude-facts.jsonl"


def _mapper(ledger: Ledger) -> PydanticMapper:
    mapper = ledger.mapper
    assert isinstance(mapper, PydanticMapper)
    return mapper


def _logs(ledger: Ledger) -> list[list[dict[str, Any]]]:
    """Every task's events as stored rows (topic, position, state)."""
    mapper = _mapper(ledger)
    logs = []
    for entry in ledger.entries():
        rows = []
        for event in ledger.task_events(entry.task_id):
            stored = mapper.to_stored_event(event)
            rows.append({"topic": stored.topic, "position": stored.originator_version,
                         "state": orjson.loads(stored.state)})
        logs.append(rows)
    return logs


def _events(ledger: Ledger, rows: list[dict[str, Any]], task: UUID) -> list[ev.TaskEvent]:
    mapper = _mapper(ledger)
    return [cast(ev.TaskEvent, mapper.to_domain_event(StoredEvent(task, r["position"], r["topic"],
                                                                  orjson.dumps(r["state"]))))
            for r in rows]


def _folded(ledger: Ledger, logs: list[list[dict[str, Any]]]) -> list[Any]:
    task = UUID(int=1)
    return [replay(_events(ledger, rows, task)).model_dump(mode="json", exclude={"id"}) for rows in logs]


def write_golden() -> None:
    """Record the logs and what this fold makes of them."""
    with tempfile.TemporaryDirectory() as folder:
        location = resolve(str(Path(folder) / "golden.db"))
        ledger = open_ledger(location)
        try:
            sample.record(ledger)
            importer.import_files(ledger, location, "claude-code", [FACTS])
            logs = _logs(ledger)
            golden = {"fold_version": FOLD_VERSION, "logs": logs, "states": _folded(ledger, logs)}
        finally:
            ledger.close()
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


def test_the_fold_still_makes_what_its_version_made(ledger: Ledger) -> None:
    golden = json.loads(GOLDEN.read_text())
    assert len(golden["logs"]) == 2 and all(len(log) > 10 for log in golden["logs"])
    types = {row["topic"] for log in golden["logs"] for row in log}
    assert len(types) >= 12, types  # a log that exercises most of the fold
    if golden["fold_version"] != FOLD_VERSION:
        pytest.fail(f"FOLD_VERSION is {FOLD_VERSION} but {GOLDEN.name} records {golden['fold_version']}: "
                    "rewrite it with `python -m tests.test_fold_version`")
    assert _folded(ledger, golden["logs"]) == golden["states"], (
        "the fold's output changed: bump projections.state.FOLD_VERSION (older snapshots are then "
        "rebuilt on read) and rewrite the golden file with `python -m tests.test_fold_version`"
    )


def _record(location: Location) -> UUID:
    ledger = open_ledger(location)
    try:
        final = sample.record(ledger)
        assert final.id is not None
        ledger.take_snapshot(final.id)
        return final.id
    finally:
        ledger.close()


def _snapshot_rows(path: Path, task: UUID) -> list[tuple[int, dict[str, Any]]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT originator_version, state FROM stored_snapshots WHERE originator_id = ?",
                          (task.hex,)).fetchall()
    db.close()
    return [(version, orjson.loads(raw)) for version, raw in rows]


def _rewrite_snapshot(path: Path, task: UUID, version: int, doc: dict[str, Any]) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE stored_snapshots SET state = ? WHERE originator_id = ? AND originator_version = ?",
                   (orjson.dumps(doc), task.hex, version))
    db.close()


def _as_v3(location: Location, task: UUID, version: int) -> dict[str, Any]:
    """The task's snapshot at ``version`` as a release before view snapshots stored it."""
    ledger = open_ledger(location)
    try:
        return legacy.v3_doc(ledger, task, version)
    finally:
        ledger.close()


@pytest.mark.sqlite_only("rewrites SQLite snapshot rows directly")
def test_an_older_view_from_another_fold_is_folded_again_on_read_and_not_judged(
    home: Path, location: Location
) -> None:
    task = _record(location)
    [(version, _)] = _snapshot_rows(location.sqlite_path, task)
    doc = _as_v3(location, task, version)
    # What an older fold could have made of the same events: another next step, another title.
    doc["state"]["fold_version"] = FOLD_VERSION - 1
    doc["state"]["state"]["next_step"] = "STALE next step"
    doc["state"]["state"]["title"] = "STALE title"
    _rewrite_snapshot(location.sqlite_path, task, version, doc)

    shown = run_trail("resume", "1", home=home, check=True).stdout
    assert "STALE" not in shown and sample.TITLE in shown
    fresh = open_ledger(location)
    try:
        assert fresh.state(task).next_step is not None and "STALE" not in (fresh.state(task).next_step or "")
    finally:
        fresh.close()

    report = json.loads(run_trail("verify", "--json", home=home, check=True).stdout)[0]
    assert report["ok"] is True and report["stale_snapshots"] == 1
    assert "1 snapshot(s) from an older fold" in run_trail("verify", home=home, check=True).stdout

    # The same edit with the version left as it is: the view is this fold's to judge, and it is wrong.
    doc["state"]["fold_version"] = FOLD_VERSION
    _rewrite_snapshot(location.sqlite_path, task, version, doc)
    broken = run_trail("verify", "--json", home=home)
    assert broken.returncode == 5
    assert json.loads(broken.stdout)[0]["break"]["kind"] == "snapshot"


def test_every_backend_passes_over_views_another_fold_made(location: Location) -> None:
    ledger = open_ledger(location)
    try:
        final = sample.record(ledger)
        assert final.id is not None
        stale = final.model_copy(update={"title": "STALE title", "next_step": "STALE step"})
        # A view snapshot of another fold, and an older release's task snapshot carrying another fold's view.
        ledger.store.put_view_snapshot(final.id, final.position, FOLD_VERSION + 1,
                                       ledger.views._encode(stale))
        doc = legacy.v3_doc(ledger, final.id)
        doc["state"]["fold_version"] = FOLD_VERSION + 1
        doc["state"]["state"] = stale.model_dump(mode="json")
        assert ledger.snapshots is not None
        ledger.snapshots.recorder.insert_events([legacy.stored(ledger, final.id, final.position, doc)])
    finally:
        ledger.close()
    fresh = open_ledger(location)
    try:
        read = fresh.task(final.id)
        assert read.version == final.position and read.number == final.number
        assert fresh.state(final.id) == final  # the whole view, as this fold makes it
        fresh.append(final.id, ev.NoteAdded, text="written after the rebuild")
        assert fresh.state(final.id).notes[-1].text == "written after the rebuild"
    finally:
        fresh.close()


@pytest.mark.sqlite_only("rewrites SQLite snapshot rows directly")
def test_a_stale_snapshot_still_has_its_head_checked(home: Path, location: Location) -> None:
    task = _record(location)
    [(version, _)] = _snapshot_rows(location.sqlite_path, task)
    doc = _as_v3(location, task, version)
    doc["state"]["fold_version"] = FOLD_VERSION + 1
    doc["state"]["head"] = "2:" + "0" * 64
    _rewrite_snapshot(location.sqlite_path, task, version, doc)
    broken = run_trail("verify", "--json", home=home)
    assert broken.returncode == 5
    brk = json.loads(broken.stdout)[0]["break"]
    assert (brk["position"], brk["kind"]) == (version, "snapshot") and "head" in brk["detail"]


@pytest.mark.sqlite_only("rewrites SQLite snapshot rows directly")
def test_a_v2_snapshot_counts_as_the_first_numbered_fold(home: Path, location: Location) -> None:
    task = _record(location)
    [(version, _)] = _snapshot_rows(location.sqlite_path, task)
    doc = _as_v3(location, task, version)
    # As a writer before fold versions stored it.
    doc["class_version"] = 2
    del doc["state"]["fold_version"]
    _rewrite_snapshot(location.sqlite_path, task, version, doc)
    fresh = open_ledger(location)
    try:
        assert fresh.snapshots is not None
        kept = [cast(TaskSnapshot, s) for s in fresh.snapshots.get(task)]
        assert [s.state.number for s in kept] == [1]  # upcast through v3 to v4: the number from its view
    finally:
        fresh.close()
    report = json.loads(run_trail("verify", "--json", home=home, check=True).stdout)[0]
    assert report["stale_snapshots"] == (0 if FOLD_VERSION == 1 else 1)


if __name__ == "__main__":
    write_golden()
    print(f"wrote {GOLDEN}")
