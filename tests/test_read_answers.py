"""What the read commands print for a ledger of fixed bytes, byte for byte: the task list, the full-path brief,
the timeline, a point in the past and `why`, as text and as JSON. Making a read cheaper must not change a byte
of them (``tests/fixtures/release-v3.reads.json`` was written by the release before the reads were made cheaper).
A change meant to alter what a read shows (a new fold, a new line in the brief) writes the fixture anew with
``answers`` and says so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_here

FIXTURES = Path(__file__).parent / "fixtures"
READS: dict[str, list[str]] = {
    "list": ["list"],
    "list --json": ["list", "--json"],
    "resume --max-chars": ["resume", "1", "--max-chars", "100000"],
    "resume --json": ["resume", "1", "--json"],
    "log": ["--no-pager", "log", "1"],
    "log --json": ["log", "1", "--json"],
    "log --type --limit": ["--no-pager", "log", "1", "--type", "CommandRan", "--limit", "2"],
    "replay --at 7": ["replay", "1", "--at", "7"],
    "replay --at -3 --json": ["replay", "1", "--at=-3", "--json"],
    "why": ["--no-pager", "why", "net/client.py"],
    "why --json": ["why", "net/client.py", "--json"],
}
"""Each read, by name, as it is run (on ``--db`` a copy of the fixture)."""


def answers(db: Path, home: Path) -> dict[str, dict[str, object]]:
    """Each read's exit status and output, run in this process on the ledger ``db``."""
    db.chmod(0o600)  # private already: no line about making it so
    home.mkdir(mode=0o700, exist_ok=True)
    found: dict[str, dict[str, object]] = {}
    for name, args in READS.items():
        done = run_here("--db", str(db), *args, home=home)
        found[name] = {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
    return found


@pytest.mark.sqlite_only("reads an SQLite file of fixed bytes")
def test_the_reads_answer_a_fixed_ledger_byte_for_byte(home: Path, tmp_path: Path) -> None:
    db = tmp_path / "release-v3.db"
    shutil.copy(FIXTURES / "release-v3.db", db)
    recorded = json.loads((FIXTURES / "release-v3.reads.json").read_text())
    assert recorded.keys() == READS.keys()
    for round_ in ("first", "again"):  # the first reads keep view snapshots; the second read from them
        got = answers(db, home)
        for name in READS:
            assert got[name] == recorded[name], (round_, name)
