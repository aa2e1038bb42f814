"""Bad input gets one clear line, a non-zero exit, and nothing is written."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.location import Location
from tests.conftest import run_trail
from tests.stores import stored_rows


def _digest(location: Location) -> str:
    # The WAL holds recent commits, so hash the logical content, not the file bytes.
    return hashlib.sha256(repr(stored_rows(location)).encode()).hexdigest()


@pytest.fixture
def two_tasks(home: Path, location: Location) -> Location:
    run_trail("start", "Port the parser", home=home, check=True)
    run_trail("start", "Port the lexer", home=home, check=True)
    return location


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume", "42"], "no task #42"),
        (["resume", "nothing-like-it"], "no task matches 'nothing-like-it'"),
        (["resume", "port"], "'port' matches 2 tasks"),
        (["replay", "1", "--at", "99"], "--at 99 is past the end: the task has 1 events"),
        (["replay", "1", "--at", "-1"], "goes before the first event"),
        (["replay", "1", "--at", "yesterday"], "--at 'yesterday': expected a position"),
        (["replay", "1", "--at", "checkpoint:nope"], "no checkpoint with that label"),
        (["require", "   "], "text: text must not be empty"),
        (["fail", "no attempt is open"], "no open attempt to end"),
        (["require", "x", "--replaces", "7"], "no requirement at position 7"),
        (["decide", "x", "--actor", "robot"], "actor must be 'user'"),
        (["log", "--type", "Nope"], "--type Nope: unknown event type"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    home: Path, two_tasks: Location, args: list[str], message: str
) -> None:
    before = _digest(two_tasks)
    proc = run_trail(*args, home=home)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trail: ") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert _digest(two_tasks) == before


def test_no_active_task(home: Path) -> None:
    proc = run_trail("resume", home=home)
    assert proc.returncode == 2 and "no active task" in proc.stderr
    assert run_trail("note", "orphan", home=home).returncode == 2


def test_second_attempt_needs_the_first_ended(home: Path, two_tasks: Location) -> None:
    run_trail("attempt", "first idea", home=home, check=True)
    proc = run_trail("attempt", "second idea", home=home)
    assert proc.returncode == 3 and "attempt at position 2 is still open" in proc.stderr


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody can write into, root included (CI runs as root, who ignores chmod)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", folder, folder], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot make a read-only folder as root here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", folder], check=True)


@pytest.mark.sqlite_only
def test_db_in_read_only_folder(read_only_folder: Path, home: Path) -> None:
    target = read_only_folder / "sub" / "ledger.db"
    proc = run_trail("--db", str(target), "start", "never stored", home=home)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip().startswith(f"trail: cannot create ledger in {read_only_folder / 'sub'}")
    assert proc.stderr.count("\n") == 1
    assert not (read_only_folder / "sub").exists()


@pytest.mark.sqlite_only
def test_db_that_is_not_a_ledger(tmp_path: Path, home: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("just some notes\n")
    proc = run_trail("--db", str(bogus), "list", home=home)
    assert proc.returncode == 4 and "is not a tasktrail ledger" in proc.stderr
    assert bogus.read_text() == "just some notes\n"


@pytest.mark.sqlite_only("damages the SQLite file's pages")
def test_damaged_ledger_file_is_one_line_not_a_traceback(home: Path, two_tasks: Location) -> None:
    import sqlite3 as sq

    path = two_tasks.sqlite_path
    con = sq.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 97):  # keep the header page, scramble the rest
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))
    for args in (["list"], ["resume", "1"], ["note", "x", "-t", "1"]):
        proc = run_trail(*args, home=home)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("trail: ")
