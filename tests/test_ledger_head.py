"""Issue 23, item 3: the ledger's head. Someone with write access to the database can delete a whole task,
cut one, swap two or rewrite a last event, each with every hash and anchor recomputed, and `trail verify`
passes (the control in each test); `trail verify --head TOKEN` against a token kept from before names it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import chain
from ledger.domain import registry as reg
from ledger.domain.registry import REGISTRY_ID
from tests.conftest import run_here, run_trail

Row = tuple[int, str, dict[str, Any]]
"""A stored event as the forger handles it: position, topic, state."""


class Raw:
    """The ledger's tables, as someone with write access to its database sees them (either backend)."""

    def __init__(self, location: Location) -> None:
        self.location = location

    def _run(self, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.location.is_sqlite:
            tables = {"events": "stored_events", "snapshots": "stored_snapshots", "heads": "tasktrail_heads",
                      "views": "tasktrail_views", "edits": "tasktrail_edits"}
            with sqlite3.connect(self.location.sqlite_path) as db:
                found = db.execute(statement.format(**tables).replace("%s", "?"),
                                   tuple(p.hex if isinstance(p, UUID) else p for p in params)).fetchall()
            db.close()
            return found
        import psycopg

        target = self.location.postgres()
        schema = f'"{target.schema}"'
        tables = {name: f"{schema}.tasktrail_{name}" for name in ("events", "snapshots", "heads", "views", "edits")}
        with psycopg.connect(host=target.host, port=target.port, dbname=target.dbname, user=target.user,
                             password=target.password) as conn:
            cursor = conn.execute(statement.format(**tables), params)
            return cursor.fetchall() if cursor.description else []

    def rows(self, aggregate: UUID) -> list[Row]:
        return [(v, t, orjson.loads(s)) for v, t, s in self._run(
            "SELECT originator_version, topic, state FROM {events} WHERE originator_id = %s"
            " ORDER BY originator_version", (aggregate,))]

    def rewrite(self, aggregate: UUID, rows: list[Row]) -> None:
        """Store ``rows`` as the aggregate's whole log, renumbered from 1, every hash recomputed, the anchor
        moved to the end and its snapshots dropped: a forgery `trail verify` cannot tell."""
        self.drop(aggregate)
        previous = chain.GENESIS
        for position, (_, topic, state) in enumerate(rows, start=1):
            state = {k: v for k, v in state.items() if k != "chain"}
            if aggregate == REGISTRY_ID:
                state["chain"] = reg.seal_stored(previous, topic, position, state)
            else:
                state["chain"] = chain.seal(previous, topic, aggregate, position, state)
            previous = state["chain"]
            self._run("INSERT INTO {events} VALUES (%s, %s, %s, %s)", (aggregate, position, topic, orjson.dumps(state)))
        if rows:
            self._run("INSERT INTO {heads} VALUES (%s, %s, %s)", (aggregate, len(rows), previous))

    def drop(self, aggregate: UUID) -> None:
        for table in ("events", "snapshots", "heads"):
            self._run(f"DELETE FROM {{{table}}} WHERE originator_id = %s", (aggregate,))
        if self.location.is_postgres or self._run("SELECT name FROM sqlite_master WHERE name = 'tasktrail_views'"):
            self._run("DELETE FROM {views} WHERE originator_id = %s", (aggregate,))  # made on first use
        # A forger who knows the ledger wipes what its edit journal recorded of these deletes (docs/audit.md).
        self._run("DELETE FROM {edits} WHERE originator_id = %s", (aggregate,))


def _three_tasks(home: Path, location: Location) -> tuple[list[UUID], str]:
    for title in ("First task", "Second task", "Third task"):
        run_here("start", title, home=home, check=True)  # set-up in this process; the checks are real processes
        run_here("note", f"{title}: a note", home=home, check=True)
        run_here("next", f"{title}: the next step", home=home, check=True)
    app = open_ledger(location)
    ids = [e.task_id for e in app.entries()]
    app.close()
    proc = run_trail("checkpoint", "--ledger", home=home, check=True)
    assert proc.stdout.splitlines()[0] == "ledger ok: 3 task(s), task list at 4"
    token = proc.stdout.splitlines()[-1].removeprefix("head ")
    assert token.startswith("ledger1:")
    return ids, token


def _renumber(state: dict[str, Any], number: int) -> dict[str, Any]:
    return {**state, "number": number}


def _held_against(home: Path, token: str) -> list[dict[str, Any]]:
    """The forgery passes the plain verify; verify --head names it (exit 5, one line)."""
    plain = run_trail("verify", home=home)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    proc = run_trail("verify", "--head", token, "--json", home=home)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "the ledger is not what the head recorded" in proc.stderr
    report = json.loads(proc.stdout)[-1]
    assert report["ledger_head"] is True and report["ok"] is False
    found: list[dict[str, Any]] = report["findings"]
    return found


def _kinds(found: list[dict[str, Any]]) -> list[tuple[int | None, str]]:
    return [(f["task"], f["kind"]) for f in found]


def test_the_head_holds_while_the_ledger_grows(home: Path, location: Location) -> None:
    _, token = _three_tasks(home, location)
    run_here("note", "after the head", "-t", "1", home=home, check=True)  # set-up, in this process
    run_here("start", "A fourth task", home=home, check=True)
    proc = run_trail("verify", "--head", token, home=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "ledger head ok: every task and the task list hold what the head recorded"
    as_json = json.loads(run_trail("checkpoint", "--ledger", "--json", home=home, check=True).stdout)
    assert as_json["tasks"] == 4 and as_json["head"].startswith("ledger1:")


def test_a_whole_task_deleted_and_the_list_renumbered_is_named(home: Path, location: Location) -> None:
    (_, second, third), token = _three_tasks(home, location)
    raw = Raw(location)
    raw.drop(second)
    listed = [r for r in raw.rows(REGISTRY_ID) if (r[2].get("entry") or {}).get("task_id") != str(second)]
    for _, _, state in listed:
        if (state.get("entry") or {}).get("task_id") == str(third):
            state["entry"]["number"] = 2
    raw.rewrite(REGISTRY_ID, listed)
    raw.rewrite(third, [(v, t, _renumber(s, 2) if v == 1 else s) for v, t, s in raw.rows(third)])
    found = _held_against(home, token)
    # #3 became #2: its opening event says so, so its chain was recomputed too.
    assert _kinds(found) == [(2, "gone"), (3, "renumbered"), (3, "rewritten"), (None, "registry")]
    assert found[0]["detail"] == "task #2 is gone: no task in the list has its id (deleted whole, outside tasktrail)"


def test_a_cut_tail_with_its_anchor_moved_is_named(home: Path, location: Location) -> None:
    (first, _, _), token = _three_tasks(home, location)
    raw = Raw(location)
    raw.rewrite(first, raw.rows(first)[:-1])
    found = _held_against(home, token)
    assert _kinds(found) == [(1, "truncated")]
    assert found[0]["detail"] == "task #1's log ends before position 3, which the head recorded (at 2 now)"


def test_two_tasks_swapped_are_named(home: Path, location: Location) -> None:
    (first, second, _), token = _three_tasks(home, location)
    raw = Raw(location)
    swap = {str(first): 2, str(second): 1}
    listed = raw.rows(REGISTRY_ID)
    for _, _, state in listed:
        entry = state.get("entry") or {}
        if entry.get("task_id") in swap:
            entry["number"] = swap[entry["task_id"]]
    raw.rewrite(REGISTRY_ID, listed)
    for task, number in ((first, 2), (second, 1)):
        raw.rewrite(task, [(v, t, _renumber(s, number) if v == 1 else s) for v, t, s in raw.rows(task)])
    found = _held_against(home, token)
    assert _kinds(found) == [(1, "swapped"), (1, "rewritten"), (2, "swapped"), (2, "rewritten"), (None, "registry")]
    assert found[0]["detail"] == "task #1 is now #2, and #2 is now #1 (the two were swapped)"


def test_an_edited_last_event_with_its_hash_recomputed_is_named(home: Path, location: Location) -> None:
    (_, second, _), token = _three_tasks(home, location)
    raw = Raw(location)
    rows = raw.rows(second)
    position, topic, state = rows[-1]
    rows[-1] = (position, topic, {**state, "text": "FORGED: skip the tests"})
    raw.rewrite(second, rows)
    assert "FORGED" in run_trail("resume", "2", home=home, check=True).stdout  # the anchor is fooled too
    found = _held_against(home, token)
    assert _kinds(found) == [(2, "rewritten")]


def test_a_task_forgotten_since_is_said_but_is_no_break(home: Path, location: Location) -> None:
    _, token = _three_tasks(home, location)
    run_here("forget", "2", "--yes", home=home, check=True)  # set-up, in this process
    proc = run_trail("verify", "--head", token, "--json", home=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (note,) = json.loads(proc.stdout)[-1]["findings"]
    assert (note["task"], note["kind"], note["break"]) == (2, "forgotten", False)


def test_the_digest_binds_the_full_hashes(home: Path, location: Location) -> None:
    # The prefixes in a token only name what broke; the digest over the full hashes is what binds. A
    # token whose prefixes match and whose digest does not (as a rewrite colliding on the prefixes would
    # leave) is a break.
    from ledger.app import ledgerhead

    _, token = _three_tasks(home, location)
    kept = ledgerhead.decode(token)
    app = open_ledger(location)
    full = [(e.number, e.task_id, h.version, h.chain) for e in app.entries() if (h := app.store.head(e.task_id))]
    registry = ledgerhead.registry_chain_at(app, kept.registry_position) or ""
    app.close()
    assert ledgerhead.encode(full, (kept.registry_position, registry)) == token
    forged = ledgerhead.encode([(n, t, p, c[:-1] + ("0" if c[-1] != "0" else "1")) for n, t, p, c in full],
                               (kept.registry_position, registry))
    proc = run_trail("verify", "--head", forged, "--json", home=home)
    assert proc.returncode == 5
    assert _kinds(json.loads(proc.stdout)[-1]["findings"]) == [(None, "digest")]


@pytest.mark.parametrize(("args", "message"), [
    (("verify", "--head", "ledger1:AAAA"), "not a ledger head"),
    (("verify", "1", "--head", "ledger1:AAAA"), "covers every task: give no TASK"),
    (("checkpoint", "--ledger", "label"), "--ledger takes no LABEL"),
])
def test_bad_use_is_one_line(home: Path, location: Location, args: tuple[str, ...], message: str) -> None:
    run_here("start", "Only task", home=home, check=True)  # set-up, in this process
    proc = run_trail(*args, home=home)
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == "", proc.stderr


def test_no_head_is_printed_for_a_broken_ledger(home: Path, location: Location) -> None:
    (first, _, _), _ = _three_tasks(home, location)
    raw = Raw(location)
    edit: Callable[[dict[str, Any]], dict[str, Any]] = lambda s: {**s, "text": "edited in place"}  # noqa: E731
    position, _, state = raw.rows(first)[1]
    raw._run("UPDATE {events} SET state = %s WHERE originator_id = %s AND originator_version = %s",
             (orjson.dumps(edit(state)), first, position))
    proc = run_trail("checkpoint", "--ledger", home=home)
    assert proc.returncode == 5 and proc.stdout == "" and "no ledger head printed" in proc.stderr
