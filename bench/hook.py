"""How much a hook invocation costs: `python -m bench.hook`.

Wall time per process (median of 30) of `trail hook claude-code` and `trail hook codex` as the agents
run them (the console script, payload on stdin), each with a PostToolUse payload of its agent's shape,
against a bare `python -c pass` and a minimal script that inserts one SQLite row. The goal (issue 19) is
at most 1.5x the bare interpreter. The ledger is one a SessionStart has queued into, as in a session, so a
tool event is spooled unread (``ledger.base.hook_spool``). Also shown: folding the spool and the inbox into
events, per payload, which the next read pays once (not the agent).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.timing import trail_argv

RUNS = 30
GOAL = 1.5
REPO = Path(__file__).resolve().parents[1]
PAYLOAD = json.dumps(
    {
        "session_id": "bench-session",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_bench",
        "cwd": "/tmp",
        "transcript_path": "/tmp/t.jsonl",
        "tool_input": {"command": "pytest -q", "description": "run the tests"},
        "tool_response": {"stdout": "3 passed in 0.12s\n" * 20, "stderr": "", "interrupted": False},
    }
)
CODEX_PAYLOAD = json.dumps(
    {
        "session_id": "bench-codex-session",
        "hook_event_name": "PostToolUse",
        "turn_id": "bench-turn",
        "model": "gpt-5.5-codex",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_use_id": "call_bench",
        "cwd": "/tmp",
        "transcript_path": "/tmp/rollout.jsonl",
        "tool_input": {"command": "pytest -q"},
        "tool_response": "Chunk ID: 8731b0\nWall time: 0.1200 seconds\nProcess exited with code 0\n"
        "Original token count: 120\nOutput:\n" + "3 passed in 0.12s\n" * 20,
    }
)
SQLITE_INSERT = (
    "import sqlite3, sys\n"
    "c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE IF NOT EXISTS t (x TEXT)')\n"
    "c.execute('INSERT INTO t VALUES (?)', (sys.stdin.read(),)); c.commit()"
)


def _ms(argv: list[str], env: dict[str, str], stdin: str = "") -> float:
    return _wall_cpu(argv, env, stdin)[0]


def _wall_cpu(argv: list[str], env: dict[str, str], stdin: str = "") -> tuple[float, float]:
    """Wall and CPU (user + sys) milliseconds of one process: on a shared machine the CPU moves less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, text=True, env=env, check=True, capture_output=True)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


BARE, SQLITE, HOOK = "`python -c pass`", "insert one SQLite row (script)", "`trail hook claude-code` (PostToolUse)"
HOOK_CODEX = "`trail hook codex` (PostToolUse)"
HOOKS = (HOOK, HOOK_CODEX)


def measure(runs: int = RUNS) -> dict[str, Any]:
    """Per-case wall and CPU times in ms (``samples``, ``cpu``), and ``list`` with/without ``runs`` rows waiting
    (``drain``)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TRAIL_HOME": tmp, "PYTHONPATH": str(REPO)}
        env.pop("TRAIL_DB", None)
        env.pop("TRAIL_DATABASE_URL", None)
        trail = trail_argv()
        subprocess.run([*trail, "start", "bench"], env=env, check=True, capture_output=True)
        # A session begins with SessionStart, which queues by the full path and so lets the hook spool for this
        # ledger (``ledger.base.hook_spool.trusted``): the tool events timed below are the steady state.
        start = json.dumps({"session_id": "bench-session", "hook_event_name": "SessionStart", "cwd": "/tmp"})
        subprocess.run([*trail, "hook", "claude-code"], input=start, text=True, env=env, check=True,
                       capture_output=True)
        cases: list[tuple[str, list[str], str]] = [
            (BARE, [sys.executable, "-c", "pass"], ""),
            (SQLITE, [sys.executable, "-c", SQLITE_INSERT, str(Path(tmp) / "p.db")], PAYLOAD),
            (HOOK, [*trail, "hook", "claude-code"], PAYLOAD),
            (HOOK_CODEX, [*trail, "hook", "codex"], CODEX_PAYLOAD),
        ]
        samples: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        cpu: dict[str, list[float]] = {name: [] for name, _, _ in cases}
        for _ in range(runs):  # interleaved, so a busy moment slows every case alike
            for name, argv, stdin in cases:
                wall, used = _wall_cpu(argv, env, stdin)
                samples[name].append(wall)
                cpu[name].append(used)
        # The next read folds the waiting rows in; compare reads with and without rows waiting.
        drained, plain = [], []
        for _ in range(5):
            drained.append(_ms([*trail, "list"], env))  # runs rows waiting (from the loop, then refills)
            plain.append(_ms([*trail, "list"], env))
            for _ in range(runs):
                _ms([*trail, "hook", "claude-code"], env, PAYLOAD)
    return {"samples": samples, "cpu": cpu, "drain": (statistics.median(drained), statistics.median(plain))}


def main() -> None:
    result = measure(RUNS)
    samples: dict[str, list[float]] = result["samples"]
    cpu: dict[str, list[float]] = result["cpu"]
    bare, bare_cpu = statistics.median(samples[BARE]), statistics.median(cpu[BARE])
    print(f"| case | median of {RUNS} (ms) | x bare | median CPU (ms) | x bare (CPU) | goal met (<= {GOAL:g}x) |")
    print("|---|---:|---:|---:|---:|---|")
    for name in samples:
        ms, used = statistics.median(samples[name]), statistics.median(cpu[name])
        met = ("yes" if ms / bare <= GOAL else "no") if name in HOOKS else ""
        print(f"| {name} | {ms:.1f} | {ms / bare:.2f} | {used:.1f} | {used / bare_cpu:.2f} | {met} |")
    with_rows, without = result["drain"]
    print(
        f"\nThe next read folds the spool in: `trail list` takes {with_rows:.0f} ms with {RUNS} payloads waiting, "
        f"{without:.0f} ms with none (median of 5): {(with_rows - without) / RUNS:.1f} ms per payload."
    )


if __name__ == "__main__":
    main()
