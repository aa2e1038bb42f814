"""What a `trail` process costs before it does any work: `python -m bench.startup [--runs N] [--json FILE]`.

Wall time per process (median of ``--runs``, default 30) of `trail --help`, `trail resume` (the demo
task, from its project folder) and the Claude Code SessionStart hook (which answers with the task's
brief), against a bare `python -c pass` of the same interpreter, all run in turn in the same minute so
a busy moment slows every case alike. The goals (issue 14) are ratios of medians: `--help` at most 3x
the bare interpreter, `resume` and SessionStart at most 5x. Each process's CPU time (user + sys) is
printed beside it: on a shared machine it moves less than the wall time. For scale, one more row
imports only the libraries `resume` cannot do without (click, pydantic, eventsourcing) and does nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.tables import Table

RUNS = 30
REPO = Path(__file__).resolve().parents[1]
SESSION = "bench-startup-0000-4000-8000-000000000001"

BARE = "`python -c pass`"
HELP = "`trail --help`"
RESUME = "`trail resume` (demo task, 19 events)"
SESSION_START = "`trail hook claude-code` (SessionStart, answers with the brief)"
LIBRARIES = "imports only: click, pydantic, eventsourcing"
GOALS = {HELP: 3.0, RESUME: 5.0, SESSION_START: 5.0}
LABELS = {HELP: "start-up `trail --help`", RESUME: "start-up `trail resume`",
          SESSION_START: "start-up SessionStart hook"}
"""What the run's closing line calls each goal."""


def _run(argv: list[str], env: dict[str, str], cwd: Path, stdin: str) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, input=stdin, text=True, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(runs: int = RUNS) -> dict[str, dict[str, list[float]]]:
    """Per case, ``wall`` and ``cpu`` seconds of each run."""
    with tempfile.TemporaryDirectory(prefix="trail-startup-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_DATABASE_URL")}
        # Bytecode is written on the warm-up runs, as an installed tasktrail has it: without it every
        # run would compile our sources again and measure the compiler.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(TRAIL_HOME=str(Path(tmp) / "home"), PYTHONPATH=str(REPO))
        trail = [sys.executable, "-c", "from cli.main import main; main()"]
        subprocess.run([*trail, "demo", "--keep"], env=env, cwd=project, check=True, capture_output=True)
        payload = json.dumps({"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup",
                              "cwd": str(project)})
        cases: list[tuple[str, list[str], str]] = [
            (BARE, [sys.executable, "-c", "pass"], ""),
            (HELP, [*trail, "--help"], ""),
            (RESUME, [*trail, "resume"], ""),
            (SESSION_START, [*trail, "hook", "claude-code"], payload),
            (LIBRARIES, [sys.executable, "-c", "import click, pydantic.main, eventsourcing.application"], ""),
        ]
        answer = subprocess.run(cases[3][1], input=payload, text=True, env=env, cwd=project, capture_output=True)
        if "additionalContext" not in answer.stdout:
            raise RuntimeError(f"SessionStart gave no brief: {answer.stdout[:200]!r} {answer.stderr[-400:]}")
        samples: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name, _, _ in cases}
        for round_ in range(runs + 2):  # two warm-up rounds, not counted
            for name, argv, stdin in cases:  # in turn, so a busy moment slows every case alike
                wall, cpu = _run(argv, env, project, stdin)
                if round_ >= 2:
                    samples[name]["wall"].append(wall)
                    samples[name]["cpu"].append(cpu)
    return samples


def table(runs: int = RUNS) -> Table:
    samples = measure(runs)
    result = Table(
        f"start-up: one process against a bare interpreter, median of {runs}",
        ("process", "median wall", "vs bare (wall)", "median CPU", "vs bare (CPU)", "goal", "goal met"),
    )
    wall = {name: statistics.median(s["wall"]) for name, s in samples.items()}
    cpu = {name: statistics.median(s["cpu"]) for name, s in samples.items()}
    for name in samples:
        goal = GOALS.get(name)
        result.add(name, f"{wall[name] * 1000:,.1f} ms", f"{wall[name] / wall[BARE]:.2f}x",
                   f"{cpu[name] * 1000:,.1f} ms", f"{cpu[name] / cpu[BARE]:.2f}x",
                   f"<= {goal:.0f}x bare" if goal else "",
                   result.check(f"{LABELS[name]} <= {goal:g}x bare python", wall[name] <= goal * wall[BARE])
                   if goal else "")
    result.notes.append(
        "Each process is this checkout's `trail` run by the same interpreter as the bare one, with its bytecode "
        "cached; the goal is judged on the wall medians. The last row is not tasktrail: it shows what importing "
        "the libraries alone costs, which `resume` and SessionStart pay before any of our code runs."
    )
    result.data = {"runs": runs, "median_wall_s": wall, "median_cpu_s": cpu, "samples": samples}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"counted runs of each process (default {RUNS})")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    result = table(args.runs)
    print(result.markdown())
    if args.json:
        args.json.write_text(json.dumps(result.as_json(), indent=2) + "\n")


if __name__ == "__main__":
    main()
