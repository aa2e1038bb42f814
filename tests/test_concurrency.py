"""Eight real processes append to one task at once: every event lands once, in one unbroken chain.

Each worker appends in a loop inside its own process, as an agent's long-lived hook or
session does, so the race is between processes, not threads. Lost races are retried by
``Ledger._retrying`` and never reach the worker; the count of them is printed for the record.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ledger.app.store import open_ledger
from ledger.base.location import Location, resolve
from ledger.domain import events as ev
from tests.conftest import REPO
from tests.stores import chain_breaks, stored_rows

WORKERS = 8
EACH = 200  # 1,600 appends racing: every worker loses races many times over


def worker(url: str, task_number: int, name: str, count: int, go: str) -> None:
    """Wait for the start file, then append ``count`` notes; report lost races and time as JSON."""
    app = open_ledger(resolve(url))
    task_id = app.task_id(task_number)
    while not Path(go).exists():
        time.sleep(0.005)
    started = time.perf_counter()
    for n in range(count):
        app.append(task_id, ev.NoteAdded, text=f"{name} note {n}", actor=f"agent:{name}")
    print(json.dumps({"conflicts": app.conflicts, "seconds": time.perf_counter() - started}))
    app.close()


def test_eight_processes_append_to_one_task(
    location: Location, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = open_ledger(location)
    opened = app.open_task("Race")
    app.close()
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = "import sys; from tests.test_concurrency import worker; a = sys.argv\n"
    code += "worker(a[1], int(a[2]), a[3], int(a[4]), a[5])"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, location.url, str(opened.number), f"w{i}", str(EACH), str(go)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(WORKERS)
    ]
    time.sleep(1.5)  # let every worker import and connect, so they start together
    started = time.perf_counter()
    go.touch()
    results = [proc.communicate(timeout=600) for proc in procs]
    wall = time.perf_counter() - started
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err  # no conflict reached a worker
    reports = [json.loads(out) for out, _ in results]

    rows = [row for row in stored_rows(location) if row.task_id == opened.id]
    positions = sorted(row.position for row in rows)
    assert positions == list(range(1, WORKERS * EACH + 2))  # contiguous, no duplicates, nothing lost
    texts = Counter(json.loads(row.state).get("text") for row in rows if row.topic == "tasktrail/NoteAdded")
    assert sum(texts.values()) == WORKERS * EACH and max(texts.values()) == 1  # each note stored exactly once
    assert {f"w{i} note {n}" for i in range(WORKERS) for n in range(EACH)} == set(texts)
    assert chain_breaks(rows) == []

    conflicts = sum(r["conflicts"] for r in reports)
    backend = "sqlite" if location.is_sqlite else "postgres"
    with capsys.disabled():  # the measurement belongs in the CI log
        print(f"\n{backend}: {WORKERS}x{EACH} appends in {wall:.1f} s, {conflicts} lost races retried")
