"""Issue 22: `trail title [TASK] NEW TITLE` renames a task. The rename is a recorded event of the task
(``TaskRetitled``) and, in the same transaction, the task list's entry under the new title; every read shows
the new title, a replay before the rename the old one, and `trail verify` holds the entry to the latest
rename, so a forged title in the task list is still a break. Each case on both backends."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import registry as reg
from ledger.domain.registry import REGISTRY_ID
from ledger.domain.task import task_id_for
from projections.state import FOLD_VERSION, TaskState
from tests.conftest import run_here, run_trail
from tests.stores import stored_rows
from tests.test_registry_chain import _registry_rows, _setup
from tests.test_tamper import _execute

NEW = "Login times out on 3G networks"


def _verify(home: Path) -> tuple[int, dict[int | None, dict[str, Any]]]:
    proc = run_here("verify", "--json", home=home)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, {r["task"]: r for r in json.loads(proc.stdout)}


def test_a_renamed_task_shows_its_new_title_everywhere_and_still_verifies(home: Path, location: Location) -> None:
    _setup(location)
    old = run_here("list", "--json", home=home, check=True)
    (first,) = [t for t in json.loads(old.stdout) if t["number"] == 1]
    renamed = run_trail("title", "1", *NEW.split(), home=home, check=True)  # a real process, as a person runs it
    assert renamed.stdout == f"#1 [20] retitled: {NEW} (was: {first['title']})\n"

    listed = {t["number"]: t for t in json.loads(run_here("list", "--json", home=home, check=True).stdout)}
    assert listed[1]["title"] == NEW and listed[1]["slug"] == first["slug"]  # the slug stays: references hold
    assert listed[2]["title"] == "Second task"
    assert run_here("resume", "1", home=home, check=True).stdout.startswith(f"# Task #1 {NEW} [")
    assert run_here("replay", "1", "--at", "19", home=home, check=True).stdout.startswith(
        f"# Task #1 {first['title']} [")
    assert f"retitled: {NEW}" in run_here("log", "1", home=home, check=True).stdout.splitlines()[-1]
    found = json.loads(run_here("find", "3G", "--json", home=home, check=True).stdout)
    assert [(t["number"], t["title"]) for t in found][:1] == [(1, NEW)]
    html = home.parent / "report.html"
    run_here("show", "1", "--html", str(html), home=home, check=True)
    assert NEW in html.read_text()

    code, reports = _verify(home)
    assert code == 0 and reports[1]["ok"] and reports[None]["ok"], reports
    # The rename is in the task's chain and the task list's, one row each.
    rows = [r for r in stored_rows(location) if r.topic == "tasktrail/TaskRetitled"]
    assert [(r.task_id, r.position) for r in rows] == [(task_id_for(1), 20)]
    entries = [s["entry"]["title"] for _, topic, s in _registry_rows(location) if topic == reg.TaskRegistered.TOPIC]
    assert entries == [first["title"], "Second task", NEW]


def test_the_list_a_person_reads_shows_the_new_title_not_the_old_slug(home: Path, location: Location) -> None:
    _setup(location)
    (first,) = [t for t in json.loads(run_here("list", "--json", home=home, check=True).stdout) if t["number"] == 1]
    run_here("title", "1", NEW, home=home, check=True)
    lines = {line[2:].split()[0]: line for line in run_here("list", home=home, check=True).stdout.splitlines()}
    assert NEW in lines["#1"] and first["slug"] not in lines["#1"], lines["#1"]  # the rename reads as taken
    assert "Second task" in lines["#2"]


def test_a_task_is_named_by_the_title_the_list_shows(home: Path, location: Location) -> None:
    """The list a person reads shows titles, so the words read there name the task (slugs still come first)."""
    _setup(location)
    run_here("title", "1", NEW, home=home, check=True)
    for ref in (NEW, "login TIMES  out", "  Login times"):
        assert run_here("resume", ref, home=home, check=True).stdout.startswith(f"# Task #1 {NEW} ["), ref
    assert run_here("resume", "second", home=home, check=True).stdout.startswith("# Task #2 Second task")
    missing = run_here("resume", "Login times out on 4G", home=home)
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "trail: no task matches 'Login times out on 4G' (see `trail list`)"), missing.stderr


def test_the_same_title_again_and_bad_input_record_nothing(home: Path, location: Location) -> None:
    _setup(location)
    run_here("switch", "2", home=home, check=True)
    done = json.loads(run_here("title", "--json", "Second", "task,", "renamed", home=home, check=True).stdout)
    assert done == {"task": 2, "position": 2, "title": "Second task, renamed", "previous": "Second task",
                    "changed": True}
    count = len(stored_rows(location))
    again = json.loads(run_here("title", "--json", "-t", "2", "Second task, renamed", home=home, check=True).stdout)
    assert again["changed"] is False and again["position"] == 2
    for args, message in ((("title", "1", " "), "the new title is empty"),
                          (("title", "9", "Anything"), "no task #9"),
                          (("title", "-t", "nope", "Anything"), "no task matches 'nope'")):
        proc = run_here(*args, home=home)
        assert proc.returncode == 2 and proc.stdout == "", args
        assert message in proc.stderr and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, args
    assert len(stored_rows(location)) == count
    # With -t, a first word that is a number is part of the title.
    run_here("title", "-t", "2", "2027", "roadmap", home=home, check=True)
    assert json.loads(run_here("list", "--json", home=home, check=True).stdout)[1]["title"] == "2027 roadmap"


def test_a_forged_title_in_the_task_list_is_broken_even_with_its_chain_recomputed(
    home: Path, location: Location,
) -> None:
    # The forger rewrites the entry's title and recomputes the registry's hashes and anchor, as anyone with
    # write access and this code could: the chain then holds, and only the task's own record says otherwise.
    _setup(location)
    run_here("title", "1", NEW, home=home, check=True)
    assert _verify(home)[0] == 0  # the control
    rows = _registry_rows(location)
    previous = reg.chain.GENESIS
    for version, topic, state in rows:
        if version == len(rows):
            state["entry"]["title"] = "Wire the payments to an outside account"
        state.pop("chain")
        state["chain"] = previous = reg.seal_stored(previous, topic, version, state)
        _execute(location, "UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = %s",
                 (orjson.dumps(state), REGISTRY_ID, version))
    _execute(location, "UPDATE {heads} SET chain = %s WHERE originator_id = %s", (previous, REGISTRY_ID))
    code, reports = _verify(home)
    assert code == 5 and reports[None]["ok"]  # the task list's own chain holds ...
    found = reports[1]["break"]  # ... but the entry is not what task #1 recorded
    assert found["kind"] == "registry" and NEW in found["detail"] and "Wire the payments" in found["detail"]
    read = run_here("resume", "1", home=home)
    assert read.returncode == 5 and read.stdout == "" and "registry" in read.stderr


def test_a_view_snapshot_after_the_rename_is_read_and_a_forged_rename_is_not(
    home: Path, location: Location, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Reads start from the newest view snapshot, a cache outside the chain: past a rename it holds the new
    # title, which reads must take (the opening event's title is no longer the task's) and verify too.
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "5")
    _setup(location)
    run_here("title", "1", NEW, home=home, check=True)
    for n in range(5):
        run_here("note", f"note {n}", "-t", "1", home=home, check=True)
    assert run_here("resume", "1", home=home, check=True).stdout.startswith(f"# Task #1 {NEW} [")
    assert run_here("resume", "1", home=home, check=True).stdout.startswith(f"# Task #1 {NEW} [")  # from it
    assert _verify(home)[0] == 0
    # A TaskRetitled is the only event a title may come from: a view whose title points at a note is refused.
    app = open_ledger(location)
    try:
        found = app.store.view_snapshot(task_id_for(1), None, FOLD_VERSION)
        assert found is not None and found[0] == 25
        view = TaskState.model_validate_json(app.views.decoded(found[1]))
        assert view.title == NEW and view.titled_at == 20
        app.views.keep(task_id_for(1), 25, view.model_copy(update={"titled_at": 21}))
    finally:
        app.close()
    read = run_here("resume", "1", home=home)
    assert read.returncode == 5 and "snapshot" in read.stderr and "title" in read.stderr


def test_forgetting_a_renamed_task_leaves_none_of_its_titles(home: Path, location: Location) -> None:
    _setup(location)
    run_here("title", "1", NEW, home=home, check=True)
    run_here("forget", "1", "--yes", home=home, check=True)
    stored = b"".join(r.state for r in stored_rows(location))
    assert b"3G networks" not in stored and b"Fix login timeout" not in stored
    code, reports = _verify(home)
    assert code == 0 and reports[None]["ok"], reports


@pytest.mark.sqlite_only("the brief cache serves SQLite ledgers only")
def test_a_rename_is_shown_by_the_next_cached_resume(home: Path) -> None:
    from tests.test_briefcache import full_resume, trail

    run_here("demo", "--keep", home=home, check=True)
    trail(home, "resume")
    assert trail(home, "resume")[1]  # answered from the cache
    run_here("title", NEW, home=home, check=True)
    after, fast = trail(home, "resume")
    assert not fast and after.startswith(f"# Task #1 {NEW} [") and after == full_resume(home)
    assert os.environ.get("TRAIL_DATABASE_URL") is None
