"""The brief's view is a projection with snapshots of its own (``ledger.app.views``): a write passing a
K-th position brings the view up to its end (its own events, folded as it holds them) and a fault in
that fold blocks no write, reads keep a view snapshot every K events where none is, the first read after
a bulk write folds at most what followed the last K-th position, a damaged or forged one never reaches a
brief, and a ledger written by the release before view snapshots opens and answers the same."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from bench import workload
from ledger.app import sample, verify
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location, resolve
from ledger.domain import events as ev
from projections import brief
from projections.state import FOLD_VERSION, replay
from tests.conftest import run_trail

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def every_five(location: Location, monkeypatch: pytest.MonkeyPatch) -> Iterator[Ledger]:
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "5")
    ledger = open_ledger(location)
    try:
        yield ledger
    finally:
        ledger.close()


def _notes(ledger: Ledger, count: int) -> UUID:
    task = ledger.open_task("views").id
    assert task is not None
    ledger.append_many(task, [(ev.NoteAdded, {"text": f"note {n}"}) for n in range(count)])
    return task


def test_a_fault_in_the_views_fold_blocks_no_write(every_five: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    task = _notes(every_five, 3)

    def broken(*_: Any) -> Any:
        raise RuntimeError("a bug in the view's fold")

    monkeypatch.setattr("ledger.app.views.replay", broken)
    written = every_five.append_many(task, [(ev.NoteAdded, {"text": f"more {n}"}) for n in range(10)], keep_view=True)
    assert written.position == 14  # stored: the view's bug blocked no write
    assert len(list(every_five.recorder.select_events(task))) == 14
    with pytest.raises(RuntimeError, match="a bug in the view"):
        every_five.state(task)
    monkeypatch.undo()
    assert every_five.state(task).notes[-1].text == "more 9"


def test_a_write_passing_a_k_th_position_keeps_the_view_there(every_five: Ledger) -> None:
    task = _notes(every_five, 3)  # positions 1..4
    assert every_five.views.folded == 1  # the opening's read; the write of 2..4 passed no K-th position
    assert every_five.store.view_snapshot(task, None, FOLD_VERSION) is None
    every_five.append_many(task, [(ev.NoteAdded, {"text": f"more {n}"}) for n in range(8)], keep_view=True)  # 5..12
    assert [every_five.store.view_snapshot(task, at, FOLD_VERSION)[0] for at in (None, 9)] == [10, 5]  # type: ignore[index]
    assert every_five.views.folded == 1 + 3 + 8  # 2..4 read back once, then the write's own events
    found = every_five.store.view_snapshot(task, None, FOLD_VERSION)
    assert found is not None
    assert every_five.views._decode(found[1]) == replay(list(every_five.task_events(task, upto=10))).model_dump_json(
    ).encode()


def test_the_librarys_bulk_append_folds_no_view(every_five: Ledger) -> None:
    # The write path alone (issue 24's batched-append goal): the view waits for the next read.
    task = _notes(every_five, 3)
    every_five.append_many(task, [(ev.NoteAdded, {"text": f"more {n}"}) for n in range(8)])  # 5..12
    assert every_five.views.folded == 1  # the opening's read only
    assert every_five.store.view_snapshot(task, None, FOLD_VERSION) is None
    assert every_five.state(task).notes[-1].text == "more 7"  # the read folds it, and keeps 5 and 10
    assert [every_five.store.view_snapshot(task, at, FOLD_VERSION)[0] for at in (None, 9)] == [10, 5]  # type: ignore[index]


def test_the_first_read_after_a_bulk_write_folds_at_most_a_batch(location: Location) -> None:
    # The bench's workload at the default K, in batches of 1,000 as its build and an import write them.
    ledger = open_ledger(location)
    try:
        task = ledger.open_task("bulk").id
        assert task is not None
        for batch in workload.Workload(7).batches(3_499, 1_000):
            ledger.append_many(task, batch, keep_view=True)
    finally:
        ledger.close()
    fresh = open_ledger(location)  # a new process: nothing held in memory
    try:
        entry = fresh.entries()[0]
        state = verify.checked_state(fresh, task, entry=entry)  # the read `trail resume` makes
        assert state.position == 3_500
        assert fresh.views.folded <= 1_000  # 500 here: the events after the write's last K-th position
        assert verify._fold_start(fresh, task, None) >= 3_500 - 1_000  # and only those rows re-hashed
        whole = replay(list(fresh.task_events(task)))
        assert state.model_dump_json() == whole.model_dump_json()
        assert brief.render(state) == brief.render(whole)
        assert verify.verify_task(fresh, task).ok
    finally:
        fresh.close()


def test_reads_keep_a_view_snapshot_every_k_events(every_five: Ledger) -> None:
    task = _notes(every_five, 11)  # positions 1..12
    every_five.store.drop_view_snapshots(task)  # as a ledger an older release wrote has none
    every_five.views.forget(task)
    assert every_five.store.view_snapshot(task, None, FOLD_VERSION) is None
    state = every_five.state(task)
    found = every_five.store.view_snapshot(task, None, FOLD_VERSION)
    assert found is not None and found[0] == 10
    assert every_five.store.view_snapshot(task, 9, FOLD_VERSION) is not None  # and 5
    at_ten = replay(list(every_five.task_events(task, upto=10)))
    assert every_five.views._decode(found[1]) == at_ten.model_dump_json().encode()
    assert state == replay(list(every_five.task_events(task)))


def test_a_damaged_view_snapshot_is_folded_again_from_the_events(location: Location, every_five: Ledger) -> None:
    task = _notes(every_five, 11)
    every_five.state(task)
    every_five.store.put_view_snapshot(task, 10, FOLD_VERSION, b"\x00 not a view")
    fresh = open_ledger(location)
    try:
        assert fresh.state(task) == replay(list(fresh.task_events(task)))
        assert fresh.state(task, at=10) == replay(list(fresh.task_events(task, upto=10)))
        fresh.append(task, ev.NoteAdded, text="still writes")
        assert fresh.state(task).notes[-1].text == "still writes"
    finally:
        fresh.close()
    assert verify.verify_task(every_five, task).ok  # a cache that cannot be read is no break


def test_a_forged_view_snapshot_is_named_by_verify(location: Location, every_five: Ledger) -> None:
    task = _notes(every_five, 11)
    true = every_five.state(task, at=10)
    forged = true.model_copy(update={"next_step": "FORGED step"})
    every_five.store.put_view_snapshot(task, 10, FOLD_VERSION, every_five.views._encode(forged))
    fresh = open_ledger(location)
    try:
        report = verify.verify_task(fresh, task)
    finally:
        fresh.close()
    assert report.first_break is not None
    assert (report.first_break.position, report.first_break.kind) == (10, "snapshot")
    assert "next_step" in report.first_break.detail


LATER_FIELDS = {"open_call": None, "titled_at": 1, "refused_write": None, "last_commit": None, "pushed": None,
                "pull_request": None, "tree_checked": None, "tree_dirty": [], "delegated": None, "tree_files": [],
                "last_commit_at": None, "unpushed": [], "unpushed_count": 0}
"""Fields of the view added since that release (fold version 4: the last call that got no result; 5: the
position the title was set at, the opening one until a ``TaskRetitled``, and a refused Write of a new file; 10:
the last commit made, the last push and the last pull request opened; 11: the last git status of the whole tree,
the latest sub-agent and the files a git status showed it changed; 15: where the last commit was made; 16: the
commits since the last push)."""
REFOLDED_FIELDS = {"recent_calls"}
"""Fields added since that release which the fold derives from the old events themselves (fold version 6: the
calls since the user last spoke): each must be what a fold of the same events from the start gives."""


@pytest.mark.sqlite_only("opens an SQLite file the previous release wrote")
def test_a_ledger_the_previous_release_wrote_opens_and_answers_the_same(home: Path, tmp_path: Path) -> None:
    # Written by the release before view snapshots (its task snapshots every 5 events carry the view, v3).
    db = tmp_path / "release-v3.db"
    shutil.copy(FIXTURES / "release-v3.db", db)
    recorded = json.loads((FIXTURES / "release-v3.answers.json").read_text())
    task = UUID(hex=recorded["task"])
    ledger = open_ledger(resolve(str(db)))
    try:
        for position, answer in recorded["answers"].items():
            state = ledger.state(task, at=int(position)).model_dump(mode="json")
            # A field a later fold added is no answer the release gave: only its default may be there.
            assert {k: v for k, v in state.items() if k in answer} == answer, position
            later = set(state) - set(answer) - REFOLDED_FIELDS
            assert {k: state[k] for k in later} == LATER_FIELDS, position
            refolded = replay(list(ledger.task_events(task, upto=int(position)))).model_dump(mode="json")
            assert {k: state[k] for k in REFOLDED_FIELDS} == {k: refolded[k] for k in REFOLDED_FIELDS}, position
        assert ledger.task(task).number == 1
        assert verify.verify_task(ledger, task).ok
        ledger.append(task, ev.NoteAdded, text="written by this release")
        assert ledger.state(task).notes[-1].text == "written by this release"
        assert verify.verify_task(ledger, task).ok
    finally:
        ledger.close()
    shown = run_trail("--db", str(db), "resume", "1", home=home, check=True).stdout
    assert sample.TITLE in shown and "written by this release" in shown
