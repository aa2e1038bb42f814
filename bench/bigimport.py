"""Import of one 100 MB transcript: the peak memory of the `trail import` process (issue 24's goal: 150 MB).

    python -m bench.bigimport [--mb N]

The transcript is generated: a Claude Code session of one request, then tool calls in groups of three small
ones (a short command, a one-line output) and one with a 16 KB output, until the file is ``--mb`` MB. The
import runs as the user runs it, a fresh `trail --db DB import claude-code FILE` process of this checkout,
and its peak resident set is the process's own high-water mark (``VmHWM`` in /proc/self/status, read as
it exits): ``os.wait4``'s ``ru_maxrss`` keeps the spawning process's size from before the exec, so from a large
parent (a pytest worker) it reported the parent. Without /proc, ``ru_maxrss`` is the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.tables import Table
from bench.timing import REPO

GOAL_MB = 150
SESSION = "33333333-aaaa-4bbb-8ccc-000000000003"
BIG = 16_384
"""Bytes of a large call's output (its event keeps a bounded tail, as any capture does)."""


def transcript(path: Path, megabytes: int, cwd: str) -> int:
    """Write the session to ``path`` until it holds ``megabytes`` MB; the number of tool calls."""
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": SESSION, "version": "2.0.55"}
    target, calls, parent = megabytes * 1_000_000, 0, None
    with path.open("w") as out:

        def line(kind: str, uuid: str, message: dict[str, object], **extra: object) -> None:
            nonlocal parent
            second = calls % 3600
            stamp = f"2026-01-01T{10 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"
            out.write(json.dumps({"parentUuid": parent, **base, "type": kind, "uuid": uuid, "timestamp": stamp,
                                  "message": message, **extra}) + "\n")
            parent = uuid

        line("user", "p0", {"role": "user", "content": "Keep the build green while you port the parser"})
        while out.tell() < target:
            output = (f"line {calls} of the build log " * (BIG // 28)) if calls % 4 == 3 else f"file{calls}.py"
            line("assistant", f"a{calls}", {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{calls}", "name": "Bash", "input": {"command": f"ls src/{calls}"}}]})
            line("user", f"r{calls}", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{calls}", "content": output}]},
                toolUseResult={"stdout": output, "stderr": "", "interrupted": False})
            calls += 1
    return calls


_OWN_PEAK = """
import atexit, sys
def _peak(path=sys.argv.pop(1)):
    try:
        with open("/proc/self/status") as status:
            kb = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kb = ""
    with open(path, "w") as out:
        out.write(kb)
atexit.register(_peak)
from cli.main import main
main()
"""
"""`trail` (``cli.main.main``, what the console script runs) that writes its own peak RSS in KB at exit."""


def measure(directory: Path, megabytes: int = 100) -> dict[str, float]:
    """Seconds, peak RSS (MB) and events of one import of a generated ``megabytes`` MB transcript."""
    path, db, home = directory / "big.jsonl", directory / "big.db", directory / "big-home"
    calls = transcript(path, megabytes, str(directory))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TRAIL_")}, "TRAIL_HOME": str(home),
           "PYTHONPATH": str(REPO)}
    began = time.perf_counter()
    out, err, peak_file = directory / "import.out", directory / "import.err", directory / "import.peak"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen([sys.executable, "-c", _OWN_PEAK, str(peak_file), "--db", str(db), "import",
                                  "claude-code", str(path), "--json"],
                                 stdout=stdout, stderr=stderr, env=env, cwd=directory)
        # Reaped here, not by Popen: wait4 gives that one child's usage (the fallback figure).
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - began
    if child.returncode != 0:
        raise RuntimeError(f"trail import failed: {err.read_text(errors='replace')[-500:]}")
    peak_kb = int(peak_file.read_text()) if peak_file.is_file() and peak_file.read_text() else usage.ru_maxrss
    stdout_text = out.read_text()
    report = json.loads(stdout_text)
    return {"bytes": path.stat().st_size, "calls": calls, "seconds": seconds, "peak_mb": peak_kb / 1024,
            "events": report["events_total"]}


def table(directory: Path, megabytes: int = 100) -> Table:
    found = measure(directory, megabytes)
    goal = f"peak RSS <= {GOAL_MB} MB"
    result = Table(f"import of a {megabytes} MB transcript (one `trail import` process)",
                   ("transcript", "tool calls", "events", "seconds", "peak RSS", f"goal ({goal})", "goal met"))
    result.add(f"{found['bytes'] / 1e6:,.1f} MB", f"{found['calls']:,}", f"{found['events']:,}",
               f"{found['seconds']:,.1f}", f"{found['peak_mb']:,.1f} MB", goal,
               result.check(f"import {megabytes} MB peak RSS <= {GOAL_MB} MB", found["peak_mb"] <= GOAL_MB))
    result.notes.append(
        "Generated Claude Code session: one request, then tool calls in threes of a one-line output and one "
        f"of {BIG // 1024} KB. Peak RSS is the kernel's maximum resident set of the import process alone.")
    result.data = found
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bigimport", description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trail-bigimport-") as tmp:
        print(table(Path(tmp), args.mb).markdown())


if __name__ == "__main__":
    main()
