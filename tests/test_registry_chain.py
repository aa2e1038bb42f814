"""Issue 25: the task list (registry) is hash-chained and anchored like a task, so a forged
"forgotten" row or a renumbering is named by `trail verify` (exit 5), and `trail forget
--older-than` refuses to act on it instead of deleting a live task. A dropped or emptied anchor
table is a break for reads and verify alike, not refilled from the log. Each case on both backends."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ledger.app import sample
from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import registry as reg
from ledger.domain.registry import REGISTRY_ID
from ledger.domain.task import task_id_for
from tests.conftest import run_here, run_trail
from tests.test_tamper import _execute


def _setup(location: Location, titles: tuple[str, ...] = ("Second task",)) -> None:
    app = open_ledger(location)
    try:
        sample.record(app)  # task #1, 19 events
        for title in titles:
            app.open_task(title)
    finally:
        app.close()


def _registry_rows(location: Location) -> list[tuple[int, str, dict[str, Any]]]:
    app = open_ledger(location)
    try:
        return [(r.originator_version, r.topic, orjson.loads(r.state)) for r in app.recorder.select_events(REGISTRY_ID)]
    finally:
        app.close()


def _task_list_report(home: Path) -> tuple[int, dict[str, Any], str]:
    proc = run_trail("verify", "--json", home=home)
    assert "Traceback" not in proc.stderr, proc.stderr
    reports = json.loads(proc.stdout)
    (mine,) = [r for r in reports if r["registry"]]
    return proc.returncode, mine, proc.stderr


def _forged_tombstone(number: int, task_hex: str) -> dict[str, Any]:
    return {"timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "tombstone": {"number": number, "task_id": task_hex, "title_sha256": hashlib.sha256(b"x").hexdigest(),
                          "at": "2026-01-01T00:00:00Z", "by": "mallory"}}


def _live_task_survives(home: Path) -> None:
    """Task #1 still listed and read (in this process: the refusals before it are what each test is about)."""
    listed = run_here("list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    assert 1 in [t["number"] for t in json.loads(listed.stdout)]
    assert "end of day" in run_here("resume", "1", home=home, check=True).stdout


def test_an_untouched_task_list_verifies_with_its_chain_and_anchor(home: Path, location: Location) -> None:
    # The control: every refusal below could otherwise come from a walk that always fails.
    _setup(location)
    rows = _registry_rows(location)
    assert [v for v, _, _ in rows] == [1, 2, 3] and all(s["chain"].startswith("2:") for _, _, s in rows)
    code, report, _ = _task_list_report(home)
    assert code == 0 and report["ok"] and report["events"] == 3
    assert report["anchor"] == {"position": 3, "chain": rows[-1][2]["chain"]}
    assert "task list ok: 3 events" in run_trail("verify", home=home, check=True).stdout


def test_a_title_with_surrounding_space_is_listed_as_the_task_holds_it(home: Path, location: Location) -> None:
    # The opening event strips its title (a pasted secret list often ends in a line break); the task
    # list's entry must hold the same title, or every read calls the task's entry forged.
    _setup(location, titles=("  Rotate the deploy key\nghp_" + "a1B2" * 9 + "\n",))
    listed = run_trail("list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    title = json.loads(listed.stdout)[-1]["title"]
    assert title.startswith("Rotate the deploy key\n[REDACTED:github-token:") and title == title.strip()
    assert run_trail("verify", home=home).returncode == 0


def test_forget_keeps_the_task_list_verifying(home: Path, location: Location) -> None:
    # Forgetting rewrites the entry without its title; the hashes it keeps hold the chain.
    _setup(location)
    run_trail("forget", "2", "--yes", home=home, check=True)
    rows = _registry_rows(location)
    assert rows[2][2]["entry"]["title"] == "[forgotten]" and rows[2][2]["erased"]["title_sha256"]
    assert b"Second task" not in orjson.dumps(rows)
    code, report, stderr = _task_list_report(home)
    assert code == 0 and report["ok"] and report["events"] == 4, stderr
    assert run_trail("forget", "--older-than", "3650d", "--yes", home=home).returncode == 0


def test_a_forged_forgotten_row_is_broken_and_forget_by_age_refuses(home: Path, location: Location) -> None:
    _setup(location)
    rows = _registry_rows(location)
    task_hex = rows[1][2]["entry"]["task_id"].replace("-", "")
    forged = _forged_tombstone(1, task_hex)
    # The chain even recomputed: only the anchor (moved in every insert's own transaction) tells.
    forged["chain"] = reg.seal_stored(rows[-1][2]["chain"], reg.TaskForgotten.TOPIC, 4, forged)
    _execute(location, "INSERT INTO {events} VALUES (%s, %s, %s, %s)",
             (REGISTRY_ID, 4, reg.TaskForgotten.TOPIC, orjson.dumps(forged)))
    code, report, stderr = _task_list_report(home)
    assert code == 5 and report["break"]["kind"] == "anchor" and report["break"]["position"] == 4
    assert "the task list" in stderr and stderr.count("\n") == 1
    proc = run_trail("forget", "--older-than", "3650d", "--yes", home=home)
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "task list is broken at position 4" in proc.stderr
    assert "Traceback" not in proc.stderr and "Forgot" not in proc.stdout
    assert run_trail("forget", "1", "--yes", home=home).returncode == 5  # "finishing" it is refused too
    _execute(location, "DELETE FROM {events} WHERE originator_id = %s AND originator_version = 4", (REGISTRY_ID,))
    _live_task_survives(home)


def test_a_forgotten_row_edited_in_over_an_entry_is_broken(home: Path, location: Location) -> None:
    _setup(location, ("Second task", "Third task"))
    rows = _registry_rows(location)
    forged = {**_forged_tombstone(1, rows[1][2]["entry"]["task_id"].replace("-", "")), "chain": rows[2][2]["chain"]}
    _execute(location, "UPDATE {events} SET topic = %s, state = %s WHERE originator_id = %s AND originator_version = 3",
             (reg.TaskForgotten.TOPIC, orjson.dumps(forged), REGISTRY_ID))
    code, report, _ = _task_list_report(home)
    assert code == 5 and (report["break"]["position"], report["break"]["kind"]) == (3, "out of place")
    assert run_trail("forget", "--older-than", "3650d", "--yes", home=home).returncode == 5


def test_renumbered_task_list_rows_are_broken(home: Path, location: Location) -> None:
    _setup(location, ("Second task", "Third task"))
    # Swap the entries of #2 and #3 (positions 3 and 4): each still holds its own valid hash.
    for old, new in ((3, 99), (4, 3), (99, 4)):
        _execute(location, "UPDATE {events} SET originator_version = %s WHERE originator_id = %s"
                 " AND originator_version = %s", (new, REGISTRY_ID, old))
    code, report, _ = _task_list_report(home)
    assert code == 5 and (report["break"]["position"], report["break"]["kind"]) == (3, "out of place")


def test_an_erased_entry_without_a_recorded_forget_is_broken(home: Path, location: Location) -> None:
    _setup(location)
    (_, _, state) = _registry_rows(location)[1]
    erased = reg.erase(state, "[forgotten]", "forgotten-1")  # the chain holds; no TaskForgotten says so
    _execute(location, "UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = 2",
             (orjson.dumps(erased), REGISTRY_ID))
    code, report, _ = _task_list_report(home)
    assert code == 5 and (report["break"]["position"], report["break"]["kind"]) == (2, "registry")


def test_a_ledger_from_before_the_chain_works_and_chains_from_its_first_new_event(
    home: Path, location: Location,
) -> None:
    _setup(location)
    for version, _, state in _registry_rows(location):  # as an older tasktrail wrote them
        state.pop("chain")
        if "entry" in state:
            state.pop("erased")
        _execute(location, "UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = %s",
                 (orjson.dumps(state), REGISTRY_ID, version))
    _execute(location, "UPDATE {heads} SET chain = '' WHERE originator_id = %s", (REGISTRY_ID,))
    code, report, stderr = _task_list_report(home)
    assert code == 0 and report["ok"], stderr
    _live_task_survives(home)
    run_here("start", "Third task", home=home, check=True)  # the first chained event covers the older ones
    rows = _registry_rows(location)
    assert [bool(s.get("chain")) for _, _, s in rows] == [False, False, False, True]
    code, report, stderr = _task_list_report(home)
    assert code == 0 and report["ok"] and report["anchor"]["chain"] == rows[-1][2]["chain"], stderr
    state = rows[1][2]
    state["entry"]["number"] = 7  # an older row edited after the chain began
    _execute(location, "UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = 2",
             (orjson.dumps(state), REGISTRY_ID))
    code, report, _ = _task_list_report(home)
    assert code == 5 and report["break"]["position"] == 4


def test_an_older_entry_holding_the_title_unstripped_still_lists(home: Path, location: Location) -> None:
    # Releases before this one registered the title as typed, the opening event stripped: not a forgery.
    _setup(location)
    for version, _, state in _registry_rows(location):
        state.pop("chain")
        if "entry" in state:
            state.pop("erased")
            if state["entry"]["title"] == "Second task":
                state["entry"]["title"] = "Second task\n"
        _execute(location, "UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = %s",
                 (orjson.dumps(state), REGISTRY_ID, version))
    _execute(location, "UPDATE {heads} SET chain = '' WHERE originator_id = %s", (REGISTRY_ID,))
    listed = run_trail("list", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    assert run_trail("verify", home=home).returncode == 0


def test_a_dropped_anchor_table_is_a_break_not_refilled(home: Path, location: Location) -> None:
    _setup(location)
    run_here("switch", "1", home=home, check=True)  # set-up, in this process
    _execute(location, "DELETE FROM {events} WHERE originator_id = %s AND originator_version > 17",
             (task_id_for(1),))  # cut the tail first, so a refill from the log would hide it
    _execute(location, "DROP TABLE {heads}", ())
    proc = run_trail("verify", "--json", home=home)
    assert proc.returncode == 5, proc.stderr
    kinds = {r["task"]: r["break"]["kind"] for r in json.loads(proc.stdout) if not r["ok"]}
    assert kinds[1] == "anchor" and kinds[None] == "anchor"
    for args in (("resume", "1"), ("log", "1", "--json"), ("resume",)):
        read = run_trail(*args, home=home)
        assert read.returncode == 5 and read.stdout == "", args
        assert "task #1" in read.stderr and "anchor" in read.stderr and read.stderr.count("\n") == 1, args


def test_a_deleted_anchor_row_is_broken_for_verify_as_for_reads(home: Path, location: Location) -> None:
    _setup(location)
    _execute(location, "DELETE FROM {heads} WHERE originator_id = %s", (task_id_for(1),))
    proc = run_trail("verify", "--json", home=home)
    assert proc.returncode == 5
    (report,) = [r for r in json.loads(proc.stdout) if r["task"] == 1]
    assert report["break"]["kind"] == "anchor" and "gone" in report["break"]["detail"]
    assert "anchor" in run_trail("resume", "1", home=home).stderr


# -- `trail list` with one broken task: the others listed, that one marked, exit 5 as verify does ------------


def test_list_shows_the_others_and_marks_the_broken_task(home: Path, location: Location) -> None:
    _setup(location, ("Second task", "Third task"))
    clean = run_trail("list", "--json", home=home)
    assert clean.returncode == 0 and all(r["broken"] is None for r in json.loads(clean.stdout))  # the control
    _execute(location, "UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = 1",
             (orjson.dumps({"title": "FORGED"}), task_id_for(2)))
    proc = run_trail("list", home=home)
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["#1", "#2", "#3"]
    assert "BROKEN" in lines[1] and "BROKEN" not in lines[0] + lines[2] and "FORGED" not in proc.stdout
    assert proc.stderr.count("\n") == 1 and "1 of 3 task(s) broken" in proc.stderr and "task #2" in proc.stderr
    as_json = run_trail("list", "--json", home=home)
    assert as_json.returncode == 5
    rows = {r["number"]: r for r in json.loads(as_json.stdout)}
    assert rows[2]["status"] == "BROKEN" and "task #2" in rows[2]["broken"] and rows[1]["events"] == 19
    assert rows[3]["broken"] is None
    filtered = run_trail("list", "--status", "done", "--json", home=home)  # a broken task is never filtered out
    assert filtered.returncode == 5 and [r["number"] for r in json.loads(filtered.stdout)] == [2]
