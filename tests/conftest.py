"""Shared fixtures: every test gets its own real ledger file and TRAIL_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.location import Location
from ledger.store import Ledger, open_ledger

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private TRAIL_HOME (and no inherited ledger settings) for this test."""
    path = tmp_path / "home"
    monkeypatch.setenv("TRAIL_HOME", str(path))
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    monkeypatch.delenv("TRAIL_DB", raising=False)
    return path


@pytest.fixture
def location(home: Path) -> Location:
    return Location(url=f"sqlite:{home / 'ledger.db'}", home=home)


@pytest.fixture
def ledger(location: Location) -> Iterator[Ledger]:
    app = open_ledger(location)
    yield app
    app.close()


def run_trail(*args: str, home: Path, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real `trail` command in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DATABASE_URL", "TRAIL_DB")}
    env["TRAIL_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", *args],
        cwd=cwd or home.parent, env=env, capture_output=True, text=True, timeout=60,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"trail {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc
