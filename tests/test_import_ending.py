"""An import's last write: the task's view it folds from the events it recorded (not read back) is the view
the store's events fold to, and the status the session ended in is recorded in that same write."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.capture import importer
from ledger.domain import events as ev
from projections.state import replay
from tests.conftest import SHARED

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OURS = {
    "claude-code": ["claude-facts.jsonl", "claude-small.jsonl", "claude-small-resumed.jsonl", "claude-2.1-tasks.jsonl"],
    "codex": ["codex-small.jsonl", "codex-turns.jsonl", "codex-fork.jsonl"],
}
REAL = SHARED / "fixtures" / "claude-code"
FAMILY = "worktrees-teammates-ef958aa1"
"""A real session with six sub-agent files: each joins the main file's task (a write to a task the import
did not open), and the main one is settled."""


@pytest.mark.parametrize("batch", [importer.BATCH, 7], ids=["batches-of-500", "batches-of-7"])
def test_the_view_an_import_leaves_is_the_view_its_stored_events_fold_to(
    location: Location, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    # Batches of 7 make most files several writes (the view before the last one read from the store) and
    # snapshots every 5 events put task and view snapshots inside and at the edges of them.
    monkeypatch.setattr(importer, "BATCH", batch)
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "5")
    files = {agent: [FIXTURES / name for name in names] for agent, names in OURS.items()}
    if REAL.is_dir():
        files["claude-code"] += sorted(REAL.glob(f"{FAMILY}*.jsonl"))
    ledger = open_ledger(location)
    try:
        for agent, paths in files.items():
            for path in paths:  # file by file, as the bench does, and each file again: a write that adds nothing
                importer.import_files(ledger, location, agent, [path])
            importer.import_files(ledger, location, agent, paths)
        held = {entry.task_id: ledger.state(entry.task_id) for entry in ledger.entries()}
    finally:
        ledger.close()
    assert len(held) >= 5  # ours alone open five tasks
    fresh = open_ledger(location)  # holds no view: each read folds from the store
    try:
        for task_id, view in held.items():
            plain = replay(fresh.task_events(task_id))
            assert view.model_dump() == plain.model_dump(), view.title
            assert fresh.state(task_id).model_dump() == plain.model_dump(), view.title
    finally:
        fresh.close()


def test_the_ending_status_is_recorded_once_and_last(location: Location, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "BATCH", 3)  # the status rides on the last of several writes
    ledger = open_ledger(location)
    try:
        first = importer.import_files(ledger, location, "claude-code", [FIXTURES / "claude-small.jsonl"])
        again = importer.import_files(ledger, location, "claude-code", [FIXTURES / "claude-small.jsonl"])
        (number,) = first.tasks
        events = list(ledger.task_events(ledger.task_id(number)))
    finally:
        ledger.close()
    assert len(events) > 3 * 2
    statuses = [e for e in events if isinstance(e, ev.StatusChanged)]
    assert len(statuses) == 1 and events[-1] is statuses[0]
    assert statuses[0].status == "paused" and statuses[0].reason == "imported: the session ended with work open"
    assert first.events["StatusChanged"] == 1 and again.events.total() == 0
