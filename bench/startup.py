"""What a `trail` process costs before it does any work: `python -m bench.startup [--runs N] [--json FILE]`.

Wall time per process (median of ``--runs``, default 30) against a bare `python -c pass` of the same
interpreter, all run in turn in the same minute so a busy moment slows every case alike; `trail` is run
as the agents run it (the console script, ``bench.timing.trail_argv``). The cases:

- `trail --help` (goal: at most 3x the bare interpreter);
- `trail resume` on the demo task from its project folder, and the same brief asked of a ledger named by
  `--db PATH`, by ``TRAIL_DB`` and by ``TRAIL_DATABASE_URL=sqlite:PATH`` (issue 24; each at most 5x);
- the SessionStart hook as Claude Code and Codex run it, for a new session (its project's active task takes
  it up) and for a session already linked to the task, each run cycling through the sources startup,
  resume, clear and compact (issue 19: each at most 3x). Before each of these runs the ledger, its brief
  cache and ``active.json`` are put back as they were after the last full answer, so every run meets the
  same state (a new session's row stays queued after a fast answer, and the next new session would find it);
- SessionStart of a new session after the previous session ended as agents end one: its prompt, tool call
  and Stop queued, then its SessionEnd through the hook, whose background drain (``ledger.capture.detach``)
  folds them in and refreshes the brief cache; run with ``TRAIL_BACKGROUND_DRAIN=wait`` so the drain has
  ended when the SessionStart is timed (issue 19: at most 3x, like the other SessionStarts);
- for scale, with no goal: SessionStart when the previous session's rows still wait in the capture inbox
  (the full path: they must be folded in first; what happens when the background drain is off or has not
  run), and a process that only imports click, pydantic and eventsourcing.

Each process's CPU time (user + sys) is printed beside it: on a shared machine it moves less than the wall
time. The goals are judged on the wall medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from bench.tables import Table
from bench.timing import trail_argv

RUNS = 30
REPO = Path(__file__).resolve().parents[1]
SESSION = "bench-startup-0000-4000-8000-000000000001"
SOURCES = ("startup", "resume", "clear", "compact")

BARE = "`python -c pass`"
HELP = "`trail --help`"
RESUME = "`trail resume` (demo task, 19 events)"
RESUME_DB = "`trail --db PATH resume`"
RESUME_ENV = "`TRAIL_DB=PATH trail resume`"
RESUME_URL = "`TRAIL_DATABASE_URL=sqlite:PATH trail resume`"
NEW_CLAUDE = "`trail hook claude-code` SessionStart, new session"
LINKED_CLAUDE = "`trail hook claude-code` SessionStart, linked session"
NEW_CODEX = "`trail hook codex` SessionStart, new session"
LINKED_CODEX = "`trail hook codex` SessionStart, linked session"
SESSION_START = NEW_CLAUDE
"""The row `bench/README.md` and the closing line have called "the SessionStart hook"."""
WAITING = "SessionStart, the previous session's rows waiting (full path)"
DRAINED = "SessionStart after the previous session ended (drained)"
LIBRARIES = "imports only: click, pydantic, eventsourcing"
SESSION_STARTS = (NEW_CLAUDE, LINKED_CLAUDE, NEW_CODEX, LINKED_CODEX, DRAINED)
GOALS = {HELP: 3.0, RESUME: 5.0, RESUME_DB: 5.0, RESUME_ENV: 5.0, RESUME_URL: 5.0,
         **dict.fromkeys(SESSION_STARTS, 3.0)}
LABELS = {HELP: "start-up `trail --help`", RESUME: "start-up `trail resume`", RESUME_DB: "start-up `--db PATH resume`",
          RESUME_ENV: "start-up `TRAIL_DB resume`", RESUME_URL: "start-up `TRAIL_DATABASE_URL resume`",
          NEW_CLAUDE: "SessionStart claude-code new session", LINKED_CLAUDE: "SessionStart claude-code linked session",
          NEW_CODEX: "SessionStart codex new session", LINKED_CODEX: "SessionStart codex linked session",
          DRAINED: "SessionStart after the previous session ended"}
"""What the run's closing line calls each goal."""


def run_process(argv: list[str], env: dict[str, str], cwd: Path, stdin: str) -> tuple[float, float, str]:
    """Wall and CPU (user + sys) seconds of one process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, input=stdin, text=True, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


class Saved:
    """The default ledger, its brief cache and ``active.json`` as they were once the full paths answered, put
    back before each SessionStart run (no process holds the ledger open then)."""

    def __init__(self, home: Path, keep: Path) -> None:
        self.home, self.keep = home, keep
        ledger = home / "ledger.db"
        con = sqlite3.connect(ledger)  # fold the WAL in: the file alone is then the ledger
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        self.files = [ledger, home / "active.json", *sorted((home / "cache").glob("briefs-*.json"))]
        keep.mkdir()
        for path in self.files:
            shutil.copy2(path, keep / path.name)

    def restore(self) -> None:
        ledger = self.home / "ledger.db"
        for extra in (Path(f"{ledger}-wal"), Path(f"{ledger}-shm")):  # before the file: never a stale WAL on it
            extra.unlink(missing_ok=True)
        for path in self.files:
            shutil.copy2(self.keep / path.name, path)


def _queued(home: Path) -> int:
    con = sqlite3.connect(home / "ledger.db")
    try:
        return int(con.execute("SELECT count(*) FROM capture_inbox").fetchone()[0])
    finally:
        con.close()


def start_payload(agent_session: str, source: str, project: Path) -> str:
    return json.dumps({"session_id": agent_session, "hook_event_name": "SessionStart", "source": source,
                       "cwd": str(project), "transcript_path": f"/tmp/{agent_session}.jsonl"})


def _previous_session(home: Path, project: Path, end: Callable[[str], None] | None = None) -> None:
    """Queue what a session sends after its start (a prompt, tool calls, the stop, the end), as its hooks would;
    ``end``, given the SessionEnd payload, sends that one through the hook instead."""
    from ledger.capture.inbox_queue import enqueue

    ledger, session = str(home / "ledger.db"), f"{SESSION}-claude-linked"
    base = {"session_id": session, "cwd": str(project)}
    payloads = [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Run the tests and fix what fails"},
        {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_bench_1",
         "tool_input": {"command": "pytest -q"}, "tool_response": {"stdout": "3 passed\n", "stderr": ""}},
        {**base, "hook_event_name": "Stop", "last_assistant_message": "The tests pass."},
        {**base, "hook_event_name": "SessionEnd", "reason": "other"},
    ]
    for payload in payloads[:-1] if end else payloads:
        enqueue(ledger, "claude-code", payload)
    if end:
        end(json.dumps(payloads[-1]))


def _end(trail: list[str], env: dict[str, str], project: Path, home: Path, payload: str) -> None:
    """The SessionEnd hook, waiting for the background drain it starts (not timed)."""
    run_process([*trail, "hook", "claude-code"], {**env, "TRAIL_BACKGROUND_DRAIN": "wait"}, project, payload)
    if _queued(home):
        raise RuntimeError("the SessionEnd hook's background drain left rows queued")


def measure(runs: int = RUNS) -> dict[str, dict[str, list[float]]]:
    """Per case, ``wall`` and ``cpu`` seconds of each run."""
    with tempfile.TemporaryDirectory(prefix="trail-startup-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        home = Path(tmp) / "home"
        other = home / "other.db"
        env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_DATABASE_URL")}
        # Bytecode is written on the warm-up runs, as an installed tasktrail has it: without it every
        # run would compile our sources again and measure the compiler.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(TRAIL_HOME=str(home), PYTHONPATH=str(REPO))
        env.pop("TRAIL_BACKGROUND_DRAIN", None)  # the default: a stopping session's hook drains in the background
        trail = trail_argv()
        subprocess.run([*trail, "demo", "--keep"], env=env, cwd=project, check=True, capture_output=True)
        subprocess.run([*trail, "--db", str(other), "demo", "--keep"], env=env, cwd=project, check=True,
                       capture_output=True)
        # The full paths answer once (they link the two sessions and reopen the paused task), and fill the cache.
        for agent in ("claude-code", "codex"):
            run_process([*trail, "hook", agent], env, project,
                        start_payload(f"{SESSION}-{agent}-linked", "startup", project))
        run_process([*trail, "resume"], env, project, "")
        for way in (["--db", str(other)], [f"--db={other}"]):
            run_process([*trail, *way, "resume"], env, project, "")
        saved = Saved(home, Path(tmp) / "saved")
        counter = iter(range(10**9))

        def new(agent: str) -> Callable[[int], str]:
            return lambda i: start_payload(f"{SESSION}-{agent}-new-{next(counter)}", SOURCES[i % 4], project)

        def linked(agent: str) -> Callable[[int], str]:
            return lambda i: start_payload(f"{SESSION}-{agent}-linked", SOURCES[i % 4], project)

        plain = {**env, "TRAIL_DB": str(other)}
        cases: list[tuple[str, list[str], dict[str, str], Callable[[int], str] | None]] = [
            (BARE, [sys.executable, "-c", "pass"], env, None),
            (HELP, [*trail, "--help"], env, None),
            (RESUME, [*trail, "resume"], env, None),
            (RESUME_DB, [*trail, "--db", str(other), "resume"], env, None),
            (RESUME_ENV, [*trail, "resume"], plain, None),
            (RESUME_URL, [*trail, "resume"], {**env, "TRAIL_DATABASE_URL": f"sqlite:{other}"}, None),
            (NEW_CLAUDE, [*trail, "hook", "claude-code"], env, new("claude-code")),
            (LINKED_CLAUDE, [*trail, "hook", "claude-code"], env, linked("claude-code")),
            (NEW_CODEX, [*trail, "hook", "codex"], env, new("codex")),
            (LINKED_CODEX, [*trail, "hook", "codex"], env, linked("codex")),
            # The drained case first: the waiting case's full path leaves the inbox empty for the next round's
            # `trail resume`, which the drained case's fast answer would not (its row stays queued).
            (DRAINED, [*trail, "hook", "claude-code"], env, new("claude-code")),
            (WAITING, [*trail, "hook", "claude-code"], env, new("claude-code")),
            (LIBRARIES, [sys.executable, "-c", "import click, pydantic.main, eventsourcing.application"], env, None),
        ]
        samples: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name, *_ in cases}
        for round_ in range(runs + 2):  # two warm-up rounds, not counted
            for name, argv, variables, payload in cases:  # in turn, so a busy moment slows every case alike
                stdin = ""
                if payload is not None:
                    saved.restore()
                    if name == WAITING:
                        _previous_session(home, project)
                    if name == DRAINED:
                        _previous_session(home, project, partial(_end, trail, env, project, home))
                    stdin = payload(round_)
                queued = _queued(home) if payload is not None else 0
                wall, cpu, out = run_process(argv, variables, project, stdin)
                if payload is not None:
                    if "additionalContext" not in out:
                        raise RuntimeError(f"{name} gave no brief: {out[:200]!r}")
                    # A fast answer leaves its row queued for the next reader; the full path folds every row in.
                    fast = _queued(home) == queued + 1
                    if fast != (name != WAITING):
                        raise RuntimeError(f"{name}: {'the brief cache' if fast else 'the full path'} answered")
                if round_ >= 2:
                    samples[name]["wall"].append(wall)
                    samples[name]["cpu"].append(cpu)
        saved.restore()
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
                   f"<= {goal:g}x bare" if goal else "",
                   result.check(f"{LABELS[name]} <= {goal:g}x bare python", wall[name] <= goal * wall[BARE])
                   if goal else "")
    how = " ".join(Path(a).name for a in trail_argv())
    result.notes.append(
        f"Each process is this checkout's `trail` as the agents run it (`{how}`), "
        "by the same interpreter as the bare one, with its bytecode cached; the goal is judged on the wall medians. "
        "Each SessionStart run cycles through the sources startup, resume, clear and compact, on the ledger and "
        "brief cache as the last full answer left them; the bench checks that each was answered from the brief "
        "cache (its row still queued), and the waiting-rows row by the full path. The drained row's previous session "
        "ended through the SessionEnd hook, whose background drain had folded its rows in (checked) before the "
        "SessionStart was timed. The last row is not tasktrail: "
        "it shows what importing the libraries alone costs, which the full paths pay before any of our code runs."
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
