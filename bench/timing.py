"""Timing helpers: repeated in-process calls and whole-process wall times."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
"""The checkout under test: subprocesses run from here so they load this tree's code,
not whichever copy of the package the interpreter has installed."""


def trail_argv() -> list[str]:
    """`trail` as the agents run it: this interpreter's console script (what `trail install` writes into their
    settings), or, where this checkout is not installed, the same entry point through ``-c``. Run with
    ``PYTHONPATH`` at ``REPO`` either loads this tree's code."""
    script = os.path.join(os.path.dirname(sys.executable), "trail")
    try:
        with open(script, "rb") as handle:
            ours = b"cli.main" in handle.read(4096)
    except OSError:
        ours = False
    return [script] if ours else [sys.executable, "-c", "from cli.main import main; main()"]


def timed(func: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds per call."""
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        func()
        samples.append(time.perf_counter() - began)
    return samples


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def wall(argv: list[str], repeat: int, env: dict[str, str] | None = None, stdin: bytes | None = None,
         check: bool = True) -> list[float]:
    """Wall seconds of a whole process, start to exit, ``repeat`` times."""
    full_env = {**os.environ, **(env or {})}
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        done = subprocess.run(argv, cwd=REPO, env=full_env, input=stdin, capture_output=True, check=False)
        samples.append(time.perf_counter() - began)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return samples


def wall_and_cpu(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one whole process. CPU is what load on a shared machine
    moves least: a wall ratio of two sizes timed minutes apart also carries the load's change."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = wall(argv, 1, env=env)[0]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, (used.ru_utime - before.ru_utime) + (used.ru_stime - before.ru_stime)


def disk_bytes(db: Path) -> int:
    """The database file plus its WAL and shared-memory files, as they sit on disk now."""
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists())
