"""A process that opens one SQLite ledger twice (an MCP server, a test calling the CLI in-process)
keeps SQLite's locks on the file: closing any descriptor of a file drops every POSIX lock the
process holds on it, so the second open must not read the file outside SQLite. Without that lock,
another process closing the ledger takes the file for its own and checkpoints the WAL away under
the open one ("database disk image is malformed").

The lock is looked for from another process with ``fcntl(F_GETLK)`` over the byte range SQLite
takes its shared locks on, as another SQLite process would meet it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ledger.app.store import open_ledger
from ledger.base.errors import StoreUnavailable
from ledger.base.location import resolve
from ledger.domain import events as ev

PROBE = r"""
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
shared_first = 0x40000000 + 2  # SQLite's PENDING_BYTE + 2: where its shared locks go (510 bytes)
wanted = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, shared_first, 510, 0)
held = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, wanted))[0] != fcntl.F_UNLCK
print("held" if held else "free")
"""

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX locks")


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_HOME", str(tmp_path / "home"))


def _shared_lock(path: Path) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


def test_a_second_open_and_close_keeps_the_first_ledgers_lock(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    first = open_ledger(resolve(str(path)))
    try:
        task = first.open_task("held open", cwd=str(tmp_path)).id
        assert task is not None
        assert _shared_lock(path) == "held"  # the control: the probe sees an open ledger's lock
        second = open_ledger(resolve(str(path)))
        second.append(task, ev.NoteAdded, text="from the second")
        second.close()
        assert _shared_lock(path) == "held"
        first.append(task, ev.NoteAdded, text="from the first, after")
        assert [n.text for n in first.state(task).notes] == ["from the second", "from the first, after"]
    finally:
        first.close()
    assert _shared_lock(path) == "free"  # and the probe sees it go


def test_the_file_is_still_checked_when_no_ledger_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    open_ledger(resolve(str(path))).close()
    path.write_bytes(b"not a database at all" * 10)
    with pytest.raises(StoreUnavailable, match="not an SQLite file"):
        open_ledger(resolve(str(path)))
