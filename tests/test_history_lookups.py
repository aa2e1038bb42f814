"""The rules' look-ups in the log (``ledger.app.history``) read on the open ledger's own connections."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev


def test_rule_look_ups_open_no_connection_and_see_rows_written_since(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    location = resolve(str(tmp_path / "t.db"))
    ledger = open_ledger(location)
    try:
        task = ledger.open_task("look-ups").id
        assert task is not None
        ledger.append_many(task, [(ev.RequirementStated, {"text": "first"}),  # 2
                                  (ev.DecisionRecorded, {"text": "d", "reason": "r"})])  # 3
        loaded = ledger.task(task)
        opened: list[Any] = []
        real = sqlite3.connect
        monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: opened.append(a) or real(*a, **k))
        assert [loaded.kind_of(p) for p in (1, 2, 3)] == [None, "requirement", "decision"]
        assert list(ledger._history.earlier(task, ev.RequirementStated, 4)) == [2]
        assert opened == []  # each look-up used to open (and close) a connection of its own
        # Another writer adds a row: the next look-up sees it (no read transaction is left open between them).
        other = open_ledger(location)
        try:
            other.append(task, ev.RequirementStated, text="second")  # 4
        finally:
            other.close()
        opened.clear()
        assert ledger._history.type_at(task, 4) is ev.RequirementStated
        assert list(ledger._history.earlier(task, ev.RequirementStated, 5)) == [4, 2]
        assert opened == []
    finally:
        ledger.close()


def test_the_view_snapshots_key_is_indexed_apart_from_their_rows(tmp_path: Path) -> None:
    """A task's newest view snapshot is found through an index of the key alone: in the WITHOUT ROWID table
    a seek reads every large row it compares with (3-17 ms at 1M events, the brief cache's every answer)."""
    path = tmp_path / "t.db"
    ledger = open_ledger(resolve(str(path)))
    query = ("EXPLAIN QUERY PLAN SELECT fold_version, position FROM tasktrail_views WHERE originator_id = ? "
             "ORDER BY fold_version DESC, position DESC LIMIT 1")
    try:
        task = ledger.open_task("views").id
        assert task is not None
        ledger.append_many(task, [(ev.NoteAdded, {"text": f"n{i}"}) for i in range(1_200)])
        ledger.state(task)  # a read keeps view snapshots
        with sqlite3.connect(path) as con:
            plan = " ".join(str(row) for row in con.execute(query, (task.hex,)))
            assert "COVERING INDEX tasktrail_views_key" in plan
            con.execute("DROP INDEX tasktrail_views_key")  # a ledger from before the index
        ledger.append_many(task, [(ev.NoteAdded, {"text": f"m{i}"}) for i in range(600)])
        ledger.state(task)  # its next view snapshot adds the index
        with sqlite3.connect(path) as con:
            assert "COVERING INDEX tasktrail_views_key" in " ".join(str(row) for row in con.execute(query, (task.hex,)))
    finally:
        ledger.close()
