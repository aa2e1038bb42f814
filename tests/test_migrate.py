"""`trail migrate` copies an SQLite ledger to another store, chains intact, and is safe to re-run.

The target is this test's backend: a PostgreSQL schema, or another SQLite file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from ledger.app import sample
from ledger.app.store import SNAPSHOT_EVERY, open_ledger
from ledger.base.location import Location, resolve
from ledger.domain import events as ev
from tests.conftest import run_here, run_trail
from tests.stores import Row, chain_breaks, store_exists, stored_rows


def _content(rows: list[Row]) -> list[tuple[str, int, str, bytes]]:
    return sorted((str(r.task_id), r.position, r.topic, r.state) for r in rows)


@pytest.fixture
def source(tmp_path: Path) -> Location:
    """An SQLite ledger with the sample task and a long second task (long enough to have a snapshot)."""
    location = resolve(f"sqlite:{tmp_path / 'old' / 'ledger.db'}")
    app = open_ledger(location)
    sample.record(app)
    long = app.open_task("A long task")
    assert long.id is not None
    for start in range(0, SNAPSHOT_EVERY + 20, 100):
        app.append_many(long.id, [(ev.NoteAdded, {"text": f"note {n}"}) for n in range(start, start + 100)])
    app.close()
    return location


def _migrate(source: Location, target: str, home: Path) -> tuple[int, dict[str, object] | None, str]:
    proc = run_trail("migrate", "--from", source.url, "--to", target, "--json", home=home)
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else None, proc.stderr


def test_copy_keeps_every_event_and_chain(source: Location, new_store: Callable[[], str], tmp_path: Path) -> None:
    target = new_store()
    code, report, stderr = _migrate(source, target, tmp_path)
    assert code == 0, stderr
    before = stored_rows(source)
    after = stored_rows(resolve(target))
    assert _content(after) == _content(before)  # every row, byte for byte
    assert chain_breaks(after) == []
    assert report is not None
    assert report["events"] == report["copied"] == len(before) and report["already_there"] == 0
    assert report["tasks_verified"] == 2 and report["snapshots_copied"] == 1
    assert f"{len(before)}/{len(before)} events" in stderr and "verified 2 task chains" in stderr

    # The copy is a working ledger: the same state, and it takes new events after the old ones (in this
    # process: each command opens its ledger afresh; the migration above is the process under test).
    for number in ("1", "2"):
        old = json.loads(run_here("--db", source.url, "resume", number, "--json", home=tmp_path, check=True).stdout)
        new = json.loads(run_here("--db", target, "resume", number, "--json", home=tmp_path, check=True).stdout)
        assert new["state"] == old["state"]
    run_here("--db", target, "note", "-t", "2", "written after the move", home=tmp_path, check=True)
    assert chain_breaks(stored_rows(resolve(target))) == []


def test_rerun_copies_nothing_and_finishes_an_interrupted_copy(
    source: Location, new_store: Callable[[], str], tmp_path: Path
) -> None:
    target = new_store()
    assert _migrate(source, target, tmp_path)[0] == 0
    code, report, stderr = _migrate(source, target, tmp_path)
    assert code == 0 and report is not None, stderr
    assert report["copied"] == 0 and report["already_there"] == report["events"]
    assert "nothing to copy" in stderr
    total = len(stored_rows(source))
    assert len(stored_rows(resolve(target))) == total

    # Cut the target back as an interrupted copy leaves it: the registry and the long task's tail gone.
    _delete_tail(resolve(target), keep_task_positions=300)
    cut = len(stored_rows(resolve(target)))
    code, report, stderr = _migrate(source, target, tmp_path)
    assert code == 0 and report is not None, stderr
    assert report["copied"] == total - cut and report["already_there"] == cut
    assert _content(stored_rows(resolve(target))) == _content(stored_rows(source))


def test_target_with_other_events_is_refused(source: Location, new_store: Callable[[], str], tmp_path: Path) -> None:
    target = new_store()
    run_here("--db", target, "start", "Someone else's task #1", home=tmp_path, check=True)  # set-up
    before = _content(stored_rows(resolve(target)))
    code, _, stderr = _migrate(source, target, tmp_path)
    assert code == 3
    assert stderr.count("\n") == 1 and "already holds different events under the same ids" in stderr
    assert "nothing copied" in stderr
    assert _content(stored_rows(resolve(target))) == before


def test_source_that_does_not_verify_is_not_copied(
    source: Location, new_store: Callable[[], str], tmp_path: Path
) -> None:
    db = sqlite3.connect(source.sqlite_path)
    query = "SELECT state, rowid FROM stored_events WHERE topic = 'tasktrail/DecisionRecorded'"
    raw, rowid = db.execute(query).fetchone()
    state = orjson.loads(raw)
    state["reason"] = "rewritten afterwards"
    with db:
        db.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (orjson.dumps(state), rowid))
    db.close()
    target = new_store()
    code, _, stderr = _migrate(source, target, tmp_path)
    assert code == 3 and "does not verify" in stderr and "chain broken at position" in stderr
    assert not store_exists(resolve(target))  # not even created


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "{tmp}/missing.db", "--to", "{tmp}/new.db"], "no ledger there"),
        (["--from", "{src}", "--to", "{src}"], "--from and --to are the same ledger"),
        (["--from", "{src}", "--to", "postgresql://me@localhost:5432/"], "no database name"),
    ],
)
def test_bad_arguments(source: Location, tmp_path: Path, args: list[str], message: str) -> None:
    filled = [a.format(tmp=tmp_path, src=source.url) for a in args]
    proc = run_trail("migrate", *filled, home=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "new.db").exists()


def _delete_tail(location: Location, keep_task_positions: int) -> None:
    """Remove the registry's events and every task event past ``keep_task_positions``."""
    from ledger.domain.registry import REGISTRY_ID

    if location.is_sqlite:
        db = sqlite3.connect(location.sqlite_path)
        with db:
            db.execute(
                "DELETE FROM stored_events WHERE originator_id = ? OR originator_version > ?",
                (REGISTRY_ID.hex, keep_task_positions),
            )
        db.close()
        return
    import psycopg
    from psycopg import sql

    target = location.postgres()
    with psycopg.connect(
        host=target.host, port=target.port, dbname=target.dbname, user=target.user, password=target.password
    ) as conn:
        conn.execute(
            sql.SQL("DELETE FROM {}.tasktrail_events WHERE originator_id = %s OR originator_version > %s").format(
                sql.Identifier(target.schema)
            ),
            (REGISTRY_ID, keep_task_positions),
        )
