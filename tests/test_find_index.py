"""`trail find`'s index (ledger/app/findindex.py) on a real SQLite ledger: after each write the full path
catches up and fills the index with the new rows only, and the index's answer is then the full path's to the
byte, for what a later event changes in an earlier place too (a rewording, an attempt's end, a newer reply, a
new title, a branch's copied rows); while the ledger is unchanged it answers, once it changed it does not."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import cast
from uuid import UUID

import pytest

from ledger.app import verify
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from tests import find_paths
from tests.conftest import run_here

WORDS = (["charts"], ["polling"], ["server-sent"], ["proxy"], ["alpha"], ["omega"], ["dashboard", "--json"],
         ["re"], ["the", "charts", "-n", "1"])


def _all_agree(home: Path) -> None:
    for words in WORDS:
        find_paths.both("find", *words, home=home)


def _write(location: Location, step: Callable[[Ledger], object]) -> object:
    app = open_ledger(location)
    try:
        return step(app)
    finally:
        app.close()


@pytest.mark.sqlite_only("the find index answers for SQLite ledgers only")
def test_after_each_write_the_index_answers_as_the_full_path_does(home: Path, location: Location) -> None:
    task = cast(UUID, _write(location, lambda a: a.open_task("Live updates for the dashboard charts").id))
    wanted = cast(int, _write(location, lambda a: a.append(task, ev.RequirementStated,
                                                           text="refresh the charts by polling").position))
    tried = cast(int, _write(location, lambda a: a.append(task, ev.AttemptStarted,
                                                          text="open a websocket for the charts").position))
    _write(location, lambda a: a.append(task, ev.AgentReplied, text=bound("first reply: alpha")))
    _all_agree(home)
    for step in (
        lambda a: a.append(task, ev.RequirementChanged, text="refresh the charts by server-sent events",
                           supersedes=wanted),
        lambda a: a.append(task, ev.AttemptEnded, attempt=tried, outcome="failed", reason="the proxy drops charts"),
        lambda a: a.append(task, ev.AgentReplied, text=bound("second reply: omega")),
        lambda a: a.append(task, ev.TaskRetitled, title="Server-sent charts"),
        lambda a: a.branch(task, 3, "try polling again"),
    ):
        _write(location, step)
        assert find_paths.fast("find", "charts", home=home) is None  # a write: the full path answers first
        _all_agree(home)


@pytest.mark.sqlite_only("the find index answers for SQLite ledgers only")
def test_an_index_from_another_fill_point_or_a_journaled_edit_does_not_answer(home: Path, location: Location) -> None:
    run_here("demo", "--keep", home=home, check=True)
    find_paths.both("find", "login", home=home)
    index = Path(f"{location.sqlite_path.resolve()}.find")
    with sqlite3.connect(index) as con:  # the index says it was filled at another row: not trusted
        con.execute("UPDATE meta SET value = 'behind' WHERE key = 'filled'")
    con.close()
    assert find_paths.fast("find", "login", home=home) is None
    find_paths.both("find", "login", home=home)  # the full path filled it again
    with sqlite3.connect(location.sqlite_path) as con:  # the journal records an edit: no key is the task's now
        con.execute("INSERT INTO tasktrail_edits (originator_id, position, change) SELECT originator_id, 2, "
                    "'update' FROM stored_events WHERE originator_version = 2 LIMIT 1")
    con.close()
    assert find_paths.fast("find", "login", home=home) is None
    refused = find_paths.full("find", "login", home=home)
    assert refused.returncode == 5 and "trail verify" in refused.stderr


@pytest.mark.sqlite_only("the find index answers for SQLite ledgers only")
def test_the_first_find_after_a_write_loads_each_task_it_shows_through_the_checks_once(
    home: Path, location: Location
) -> None:
    # The full path checks what it shows, then fills the index, which keys each task it may answer for once it
    # passes the same checks: while the task's key is the one read before the first, the second is not made
    # (at a million events each is most of a second).
    run_here("demo", "--keep", home=home, check=True)
    task = cast(UUID, _write(location, lambda a: next(iter(a.entries())).task_id))
    _write(location, lambda a: a.append(task, ev.NoteAdded, text="login again after the redirect"))
    loads: list[UUID] = []
    real = verify.checked_state

    def counted(ledger: object, task_id: UUID, *rest: object, **named: object) -> object:
        loads.append(task_id)
        return real(ledger, task_id, *rest, **named)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verify, "checked_state", counted)
        shown = find_paths.full("find", "login", "--json", home=home)
    assert shown.returncode == 0, shown.stderr
    assert task in loads and len(loads) == len(set(loads))  # each task shown, loaded through the checks once
    find_paths.both("find", "login", "--json", home=home)  # and the index it filled answers as the full path does
