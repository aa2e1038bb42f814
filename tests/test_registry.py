"""Task numbering and slugs: unique under concurrent starts, and intact across registry snapshots."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain.registry import REGISTRY_ID, slugify
from tests.conftest import REPO

STARTER = """
import sys
from pathlib import Path
from ledger.base.location import resolve
from ledger.app.store import open_ledger
app = open_ledger(resolve(sys.argv[1]))
for i in range(int(sys.argv[3])):
    app.open_task(f"worker {sys.argv[2]} task {i}")
app.close()
"""


def test_concurrent_starts_get_distinct_numbers(location: Location) -> None:
    open_ledger(location).close()  # create the file first, as the first command of a user would
    workers = [
        subprocess.Popen([sys.executable, "-c", STARTER, location.url, str(w), "5"], cwd=REPO)
        for w in range(6)
    ]
    assert all(p.wait(timeout=120) == 0 for p in workers)
    app = open_ledger(location)
    entries = app.entries()
    assert [e.number for e in entries] == list(range(1, 31))
    assert len({e.slug for e in entries}) == 30
    assert {e.title for e in entries} == {f"worker {w} task {i}" for w in range(6) for i in range(5)}
    for e in entries:
        assert app.state(e.task_id).number == e.number  # the task agrees with the registry
    app.close()


def test_registry_survives_its_snapshots(location: Location) -> None:
    app = open_ledger(location)
    for i in range(120):
        app.open_task("Same title" if i % 2 else f"Task {i}")
    assert app.snapshots is not None and list(app.snapshots.get(REGISTRY_ID))
    app.close()
    reopened = open_ledger(location)
    entries = reopened.entries()
    assert [e.number for e in entries] == list(range(1, 121))
    same = [e.slug for e in entries if e.title == "Same title"]
    assert same[:3] == ["same-title", "same-title-2", "same-title-3"] and len(set(same)) == 60
    reopened.close()


def test_slugify(tmp_path: Path) -> None:
    assert slugify("Fix login timeout on slow networks!") == "fix-login-timeout-on-slow-networks"
    assert slugify("Über café — déjà vu") == "uber-cafe-deja-vu"
    assert slugify("???") == "task"
    assert len(slugify("x" * 200)) == 48
