"""tasktrail benchmarks beside LangGraph's SQLite checkpointer and the raw SQLite floor, in one run.

    python -m bench [--quick] [--json FILE] [--seed N] [--dir PATH]

Prints one Markdown table per measure (see bench/README.md). Not a test: absolute times
depend on the machine, so the figures that matter are ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench import bigimport, dedupe, hostile, mcpinit, measures, sessionscale, startup, systems
from bench.tables import Table, summary


def machine() -> str:
    """One line naming what the figures were measured on."""
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines()
                      if x.startswith("MemTotal"))
        memory = f"{mem_kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        memory = "unknown memory"
    return (f"{os.cpu_count()} CPUs (nproc), {memory}, {cpu}; Python {platform.python_version()}, "
            f"SQLite {sqlite3.sqlite_version}; {platform.system()} {platform.release()}")


def run(quick: bool, seed: int, directory: Path, out: list[Table], build_budget: float | None = None) -> None:
    plan = systems.Plan.make(quick, seed)
    if build_budget is not None:
        plan.build_budget = build_budget
    began = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f} s] {message}", file=sys.stderr, flush=True)

    def emit(table: Table) -> None:
        out.append(table)
        print(table.markdown(), flush=True)

    mode = "quick" if quick else "full"
    print(f"# tasktrail benchmarks ({mode} run, seed {seed})\n\n{datetime.now(UTC):%Y-%m-%d %H:%M UTC}; "
          f"{machine()}\n", flush=True)
    emit(measures.hook_path(plan))
    started = startup.table(plan.hook_repeat)
    emit(started)
    log(f"SessionStart of a new session on 1k and {plan.session_scale:,} events")
    emit(sessionscale.table(plan.session_scale, directory=directory))
    log(f"the capture writer's questions on 1k and {plan.dedupe_scale:,} events")
    emit(dedupe.table(plan.dedupe_scale, directory=directory))
    emit(hostile.table((256 << 10, 1 << 20) if quick else (1 << 20, 4 << 20)))
    emit(mcpinit.table(max(5, plan.hook_repeat // 3)))
    trail = systems.grow_trail(plan, directory, log)
    print(f"Built the tasktrail task to {trail.built:,} events in {trail.build_seconds:,.1f} s "
          f"(appends {trail.append_seconds:,.1f} s; the rest is the measures taken at each size).\n", flush=True)
    floor = systems.grow_floor(plan, directory, log)
    delta = systems.grow_langgraph(plan, directory, "delta", plan.langgraph_delta, log)
    default = systems.grow_langgraph(plan, directory, "default", plan.langgraph_default, log)
    emit(measures.append_batched(plan, trail, floor, delta, default))
    emit(measures.storage(plan, trail, floor, delta, default))
    emit(measures.resume(plan, trail, delta, default))
    for graph in (delta, default):
        systems.travel_langgraph(plan, graph)
    emit(measures.time_travel(plan, trail, delta, default))
    log("importing real logs")
    emit(measures.import_logs(plan, directory, started.data["median_cpu_s"][startup.BARE]))
    log("importing a 100 MB transcript")
    emit(bigimport.table(directory))
    log("read model and compaction")
    emit(measures.readmodel_refresh(plan, trail, directory))
    emit(measures.find_vs_resume(plan, trail))
    emit(measures.compaction(plan, trail))
    log("time travel into a compacted task's archive")
    emit(measures.archived_replay(plan, directory))
    trail.ledger.close()
    for graph in (delta, default):
        if graph.peer is not None:
            graph.peer.close()
    print(f"Whole run: {time.perf_counter() - began:,.0f} s.\n")
    print(summary(out), flush=True)


def main() -> None:
    # The hook gives up after 5 s (``ledger.capture.hook.DEADLINE_S``) and answers SessionStart with nothing;
    # on a loaded machine a full-path SessionStart takes longer, and the start-up measure then stopped the
    # run ("gave no brief"). The bench times the work, so every process it starts may finish it.
    os.environ.setdefault("TRAIL_HOOK_DEADLINE_S", "600")
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--quick", action="store_true", help="scaled-down sizes; about three minutes")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write every table's figures as JSON")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--build-budget", type=float, metavar="SECONDS",
                        help="time allowed for growing the tasktrail task (default: 60 quick, 700 full); "
                        "raise it to reach 1M events")
    parser.add_argument("--dir", type=Path, help="where to build the stores (default: a temporary directory)")
    args = parser.parse_args()
    tables: list[Table] = []
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        run(args.quick, args.seed, args.dir, tables, args.build_budget)
    else:
        with tempfile.TemporaryDirectory(prefix="trail-bench-") as tmp:
            run(args.quick, args.seed, Path(tmp), tables, args.build_budget)
    if args.json:
        doc = {"quick": args.quick, "seed": args.seed, "machine": machine(),
               "date": datetime.now(UTC).isoformat(timespec="seconds"), "tables": [t.as_json() for t in tables],
               "summary": summary(tables)}
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
