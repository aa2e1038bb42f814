"""`trail compact --gc-artifacts`: bulky payloads go, sizes, hashes, events, links and the chain stay."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev
from ledger.domain.bounds import DIFF, bound
from projections.state import replay
from tests.conftest import run_here, run_trail
from tests.stores import stored_rows


def test_gc_collects_old_bulky_payloads_and_keeps_everything_else(home: Path, location: Location) -> None:
    big_out = "".join(f"line {i} of a long build log\n" for i in range(3000))
    big_diff = "--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-" + "x" * 5000 + "\n+" + "y" * 5000 + "\n"
    app = open_ledger(location)
    task = app.open_task("gc me")
    assert task.id is not None
    app.append(task.id, ev.RequirementStated, text="make the build pass")
    for i in range(12):  # past a few snapshots (every 500 is the default; force some below)
        app.append(task.id, ev.CommandRan, shell=f"make {i}", exit_code=i % 2, stdout=bound(big_out), stderr=bound(""))
    app.append(task.id, ev.FileChanged, path="m.py", operation="modified", diff=bound(big_diff, limit=DIFF))
    app.append(task.id, ev.CommandRan, shell="echo small", exit_code=0, stdout=bound("ok\n"))
    app.take_snapshot(task.id)
    before_events = list(app.task_events(task.id))
    app.close()
    rows_before = stored_rows(location)
    dry = run_trail("compact", "--gc-artifacts", "--older-than", "0m", "--dry-run", home=home, check=True)
    assert "would collect 13 payloads of 13 events" in dry.stdout
    assert stored_rows(location) == rows_before
    with open_ledger(location) as app:
        size_before = app.store.file_bytes()
    done = run_trail("compact", "--gc-artifacts", "--older-than", "0m", home=home, check=True)
    assert "collected 13 payloads of 13 events" in done.stdout
    with open_ledger(location) as app:
        assert app.store.file_bytes() < size_before  # the space is given back

    # The reads after the collection in this process (each opening the ledger afresh); each collection its own.
    assert run_here("verify", home=home).returncode == 0  # the chain covers tails only by hash
    app = open_ledger(location)
    after = list(app.task_events(task.id))
    # The events stay, plus the record of the collection, made before any tail went (verify needs it).
    assert [type(e) for e in after] == [type(e) for e in before_events] + [ev.OutputsCollected]
    recorded = after[-1]
    assert isinstance(recorded, ev.OutputsCollected) and recorded.threshold == 1024
    assert all(e.timestamp < recorded.before for e in before_events)
    cmd = next(e for e in after if isinstance(e, ev.CommandRan))
    assert cmd.stdout is not None and cmd.stdout.collected and cmd.stdout.tail == ""
    assert cmd.stdout.size == len(big_out) and cmd.stdout.sha256 == hashlib.sha256(big_out.encode()).hexdigest()
    small = after[-2]
    assert isinstance(small, ev.CommandRan) and small.stdout is not None and small.stdout.tail == "ok\n"
    # Snapshot + tail still equals a full fold, and the brief says what was collected.
    assert app.state(task.id) == replay(after)
    assert "bytes collected by gc-artifacts" in app.state(task.id).commands[-2].output_tail
    app.close()
    why = json.loads(run_here("why", "m.py", "--json", home=home, check=True).stdout)["changes"][0]
    assert why["diff_collected"] is True and why["intent"]["text"] == "make the build pass"
    assert "diff, collected" in run_here("log", "1", "--type", "FileChanged", home=home, check=True).stdout
    # Nothing is old enough for a day-long cutoff, and a second run finds nothing left to do.
    assert "collected 0 payloads" in run_trail("compact", "--gc-artifacts", "--older-than", "1d", home=home).stdout
    assert "collected 0 payloads" in run_trail("compact", "--gc-artifacts", "--older-than", "0m", home=home).stdout
