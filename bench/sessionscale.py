"""SessionStart of a new session on a small and a large ledger: `python -m bench.sessionscale [--size N] [--runs N]`.

A new session's first hook looks up whether the session was linked to a task before; a session never linked
is the case a missing index makes read the whole events table (seconds at a million events, past the hook's
deadline). Two ledgers of the bench's workload (``bench/workload.py``), 1,000 events and ``--size`` (default
100,000), each with the task active in a project folder; the SessionStart hook of Claude Code for a new
session is timed on both in turn, each run on the ledger and brief cache as the first full answer left them
(``bench.startup.Saved``), so every run meets the same state. Goal: the large ledger's median CPU at most
1.2x the small one's. CPU is judged, not wall: it moves less on a shared machine.
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from bench.longtask import grow
from bench.startup import REPO, Saved, run_process, start_payload
from bench.tables import Table, scale_main, size
from bench.timing import trail_argv
from bench.workload import Workload
from ledger.app import refs
from ledger.app.store import open_ledger
from ledger.base.location import Location

SMALL = 1_000
SIZE = 100_000
RUNS = 9
FLAT = 1.2


def _build(home: Path, project: Path, events: int, seed: int) -> None:
    home.mkdir(parents=True)
    location = Location(url=f"sqlite:{home / 'ledger.db'}", home=home)
    ledger = open_ledger(location)
    try:
        task = ledger.open_task("a long task", cwd=str(project), project=str(project)).id
        assert task is not None
        grow(ledger, task, Workload(seed), events - 1)
        # The bulk append folds no view; a read brings it up, as a session's own captures would have kept it.
        ledger.state(task)
        refs.set_active(location, task, str(project))
    finally:
        ledger.close()


def measure(large: int = SIZE, runs: int = RUNS, seed: int = 7, directory: Path | None = None
            ) -> dict[int, list[float]]:
    """CPU seconds of each SessionStart process, per ledger size (the ledgers made in ``directory``)."""
    with tempfile.TemporaryDirectory(prefix="trail-sessionscale-", dir=directory) as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_DATABASE_URL", "TRAIL_HOME")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(PYTHONPATH=str(REPO))
        trail, homes, saved = trail_argv(), {}, {}
        for events in (SMALL, large):
            home = root / f"home-{events}"
            _build(home, project, events, seed)
            homes[events] = {**env, "TRAIL_HOME": str(home)}
            # The full path answers once: it links that session and fills the brief cache the fast path reads.
            run_process([*trail, "hook", "claude-code"], homes[events], project,
                        start_payload("sessionscale-first", "startup", project))
            saved[events] = Saved(home, root / f"saved-{events}")
        samples: dict[int, list[float]] = {SMALL: [], large: []}
        for round_ in range(runs + 1):  # one warm-up round, not counted
            for events in (SMALL, large):  # in turn, so a busy moment slows both alike
                saved[events].restore()
                _, cpu, out = run_process([*trail, "hook", "claude-code"], homes[events], project,
                                   start_payload(f"sessionscale-new-{round_}", "startup", project))
                if "additionalContext" not in out:
                    raise RuntimeError(f"SessionStart on {events:,} events gave no brief: {out[:200]!r}")
                if round_:
                    samples[events].append(cpu)
        return samples


def table(large: int = SIZE, runs: int = RUNS, directory: Path | None = None) -> Table:
    samples = measure(large, runs, directory=directory)
    result = Table(f"SessionStart of a new session against ledger size, median CPU of {runs}",
                   ("ledger", "median CPU", f"vs {size(SMALL)}", "goal", "goal met"))
    small = statistics.median(samples[SMALL])
    for events, cpu in samples.items():
        median = statistics.median(cpu)
        ok = result.check(f"SessionStart new session {size(large)} CPU <= {FLAT:g}x {size(SMALL)}",
                          median <= FLAT * small) if events == large else ""
        result.add(f"{events:,} events", f"{median * 1000:,.1f} ms", f"{median / small:.2f}x",
                   f"<= {FLAT:g}x" if events == large else "", ok)
    result.notes.append("`trail hook claude-code`, SessionStart (source startup) of a session never seen, in the "
                        "folder whose active task holds the events; each run on the ledger and brief cache as the "
                        "first full answer left them.")
    result.data = {"samples_cpu_s": {str(k): v for k, v in samples.items()}}
    return result


def main() -> None:
    scale_main("python -m bench.sessionscale", __doc__, table, SIZE, RUNS, "events of the large ledger")


if __name__ == "__main__":
    main()
