"""Benchmark for months-long tasks: resume and replay via snapshots, read-model refresh.

    python -m bench.longtask [--quick] [--seed N] [--dir PATH]

Quick mode: tasks of 1k and 100k events (about a minute on 2 cores). Full mode adds a
1M-event task. Prints Markdown tables with a ``goal met`` column. Not a test: the
numbers depend on the machine and on what else it runs. The events come from
``bench/workload.py``, the one seeded generator every benchmark uses; ``python -m bench``
calls ``refresh_after_1000`` and ``compaction_figures`` on its own task.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from bench.workload import Workload
from ledger.app import archive
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location, resolve
from ledger.domain.task import Task
from ledger.stores import duckdb_offline
from projections import readmodel


def grow(ledger: Ledger, task: UUID, generator: Workload, count: int, batch: int = 2_000) -> float:
    """Append ``count`` generated events through the ledger's normal path; events per second."""
    began = time.perf_counter()
    done = 0
    while done < count:
        size = min(batch, count - done)
        ledger.append_many(task, list(generator.items(size)))
        done += size
    return count / (time.perf_counter() - began)


def refresh_after_1000(
    ledger: Ledger, path: Path, task: UUID, generator: Workload, rounds: int = 3
) -> readmodel.Refreshed:
    """Append 1,000 events then refresh, ``rounds`` times; the refresh with the median time."""
    runs = []
    for _ in range(rounds):
        grow(ledger, task, generator, 1_000)
        runs.append(readmodel.refresh(ledger, path))
    return sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]


def snapshot_bytes(db: Path, task: UUID) -> int:
    """Size of the task's latest snapshot: what a resume decodes besides the tail."""
    with sqlite3.connect(db) as con:
        row = con.execute(
            "SELECT length(state) FROM stored_snapshots WHERE originator_id = ? ORDER BY originator_version DESC",
            (task.hex,),
        ).fetchone()
    return int(row[0]) if row else 0


def timed(func: Callable[[], Any], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        func()
        times.append((time.perf_counter() - began) * 1000)
    return times


def replay_ms(ledger: Ledger, task: UUID, size: int, rng: random.Random, count: int) -> list[float]:
    """Milliseconds of ``count`` replays of ``task`` to random points up to ``size``."""
    points = iter([rng.randint(1, size) for _ in range(count)])
    return timed(lambda: ledger.state(task, at=next(points)), count)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def table(headers: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def run(quick: bool, seed: int, directory: Path) -> None:
    sizes = (1_000, 100_000) if quick else (1_000, 100_000, 1_000_000)
    db = directory / "ledger.db"
    location = resolve(str(db))
    ledger = open_ledger(location)
    mode, every = "quick" if quick else "full", ledger.snapshotting_intervals[Task]
    print(f"# tasktrail long-task benchmark ({mode}, seed {seed}, K={every})\n")

    tasks: dict[int, UUID] = {}
    growth: list[tuple[Any, ...]] = []
    path = readmodel.readmodel_path(location)
    baseline: readmodel.Refreshed | None = None
    for i, size in enumerate(sizes):
        task = ledger.open_task(f"long task {size}").id
        assert task is not None
        rate = grow(ledger, task, Workload(seed + i), size - 1)
        tasks[size] = task
        growth.append((f"{size:,}", f"{rate:,.0f}"))
        if baseline is None:
            # The same refresh on a small ledger: what "proportional to the new events" means here.
            readmodel.refresh(ledger, path, rebuild=True)
            probe = ledger.open_task("refresh probe").id
            assert probe is not None
            baseline = refresh_after_1000(ledger, path, probe, Workload(seed + 98))
    print(table(("events in task", "append rate (events/s, batches of 2,000)"), growth) + "\n")

    # Resume: a fresh application each time, so nothing is cached in process.
    resume: dict[int, float] = {}
    rows: list[tuple[Any, ...]] = []
    for size, task in tasks.items():

        def resume_once(task: UUID = task) -> None:
            with open_ledger(location) as fresh:
                fresh.state(task)

        samples = timed(resume_once, 7)
        resume[size] = statistics.median(samples)
        ratio = resume[size] / resume[sizes[0]]
        kb = snapshot_bytes(db, task) / 1024
        rows.append(
            (f"{size:,}", f"{resume[size]:.1f}", f"{p95(samples):.1f}", f"{kb:,.0f}", f"{ratio:.2f}", yes(ratio <= 2))
        )
    print("## Resume latency (open ledger + state at the head, from the nearest snapshot)\n")
    headers = ("events", "median ms", "p95 ms", "snapshot KB", "vs 1k", "goal met (<= 2x the 1k figure)")
    print(table(headers, rows) + "\n")

    # Replay is held to the same bar as resume: a task 1,000x bigger may cost at most twice as much
    # (a ratio within this run; an absolute bound would judge the machine, not the code).
    largest = sizes[-1]
    rng = random.Random(seed)
    count = 100 if quick else 300
    replay = {size: replay_ms(ledger, tasks[size], size, rng, count) for size in (sizes[0], largest)}
    first = p95(replay[sizes[0]])
    print(f"## Replay to a random point ({count} points per task)\n")
    rows = []
    for size, samples in replay.items():
        goal = yes(p95(samples) <= 2 * first) if size == largest else ""
        rows.append((f"{size:,}", f"{statistics.median(samples):.1f}", f"{p95(samples):.1f}", f"{max(samples):.1f}",
                     f"{p95(samples) / first:.2f}", goal))
    headers = ("events", "median ms", "p95 ms", "max ms", "p95 vs 1k", "goal met (p95 <= 2x the 1k task's)")
    print(table(headers, rows) + "\n")

    assert baseline is not None
    total = ledger.recorder.max_notification_id() or 0
    full = readmodel.refresh(ledger, path, rebuild=True)
    big = tasks[largest]
    tail = refresh_after_1000(
        ledger, path, big, Workload(seed + 99, start=datetime.now(UTC)).follow(ledger.state(big))
    )
    per_new = tail.seconds / tail.events
    per_full = full.seconds / full.events
    print(f"## Read-model refresh on a {total:,}-notification ledger\n")
    refresh_headers = (
        "refresh",
        "events read",
        "seconds",
        "µs per event",
        "goal met (<= 2x the same refresh on a small ledger)",
    )
    print(
        table(
            refresh_headers,
            [
                ("full rebuild", f"{full.events:,}", f"{full.seconds:.2f}", f"{per_full * 1e6:.0f}", ""),
                (
                    "1,000 new events, 2-4k-event ledger (median of 3)",
                    f"{baseline.events:,}",
                    f"{baseline.seconds:.3f}",
                    f"{baseline.seconds / baseline.events * 1e6:.0f}",
                    "",
                ),
                (
                    f"1,000 new events, {total // 1000:,}k-event ledger (median of 3)",
                    f"{tail.events:,}",
                    f"{tail.seconds:.3f}",
                    f"{per_new * 1e6:.0f}",
                    yes(tail.seconds <= 2 * baseline.seconds),
                ),
            ],
        )
    )
    print(
        f"\nIncremental refresh took {tail.seconds / full.seconds:.2%} of a full rebuild "
        f"for {tail.events / full.events:.2%} of the events (fixed cost: opening, closing and "
        "checkpointing the DuckDB file, about 30-50 ms).\n"
    )
    compaction(ledger, location, db, tasks[largest], rng)
    archived_replay(directory, (2_000, 20_000) if quick else (20_000, 200_000), seed, 30 if quick else 100)
    size_mb = db.stat().st_size / 1e6
    print(f"Ledger file: {size_mb:,.0f} MB; read model: {path.stat().st_size / 1e6:,.0f} MB.")
    ledger.close()


def live_bytes(db: Path) -> int:
    """Bytes of the SQLite file's pages in use (what VACUUM would leave), without vacuuming."""
    with sqlite3.connect(db) as con:
        pages = con.execute("PRAGMA page_count").fetchone()[0] - con.execute("PRAGMA freelist_count").fetchone()[0]
        return int(pages * con.execute("PRAGMA page_size").fetchone()[0])


def compaction_figures(
    ledger: Ledger, location: Location, db: Path, task: UUID, rng: random.Random, keep: int = 1_000
) -> dict[str, Any]:
    """Compact all but the last ``keep`` events of ``task``: sizes, time, and reads on either side."""
    head = ledger.state(task).position
    before = head - keep + 1
    with sqlite3.connect(db) as con:
        raw = con.execute(
            "SELECT sum(length(state)) FROM stored_events WHERE originator_id = ? AND originator_version < ?",
            (task.hex, before),
        ).fetchone()[0]
        raw_snapshots = con.execute(
            "SELECT sum(length(state)) FROM stored_snapshots WHERE originator_id = ? AND originator_version < ?",
            (task.hex, before - 1),
        ).fetchone()[0] or 0
    size_before = live_bytes(db)
    began = time.perf_counter()
    done = archive.compact(ledger, task, before)
    took = time.perf_counter() - began
    size_after = live_bytes(db)
    with open_ledger(location) as fresh:
        resume = timed(lambda: fresh.state(task), 7)
        points = [rng.randint(1, before - 1) for _ in range(30)]
        it = iter(points)
        replay_ms = timed(lambda: fresh.state(task, at=next(it)), len(points))
        problems = archive.verify(fresh, task)
    return {
        "events_archived": done.events,
        "live_before": size_before,
        "live_after": size_after,
        "archive": done.path.stat().st_size,
        "raw_events": raw,
        "raw_snapshots": raw_snapshots,
        "seconds": took,
        "resume_ms": statistics.median(resume),
        "replay_ms": statistics.median(replay_ms),
        "replay_p95_ms": p95(replay_ms),
        "verify": problems[0] if problems else "ok",
    }


def archived_replay_ms(
    directory: Path, size: int, seed: int, points: int, views_every: int = archive.VIEWS_EVERY, keep: int = 1_000
) -> tuple[list[float], int, int]:
    """CPU milliseconds of replays to ``points`` random archived points of a ``size``-event task, compacted
    but for its last ``keep`` events, in a ledger of its own read by a fresh ``Ledger``; with the archive's
    bytes and its views' (Parquet, compressed). One read first, not counted: what the first read of an
    archive pays once a process (DuckDB, hashing the file)."""
    db = directory / f"archived-{size}-{views_every}.db"
    location = resolve(str(db))
    with open_ledger(location) as ledger:
        task = ledger.open_task(f"archived {size}").id
        assert task is not None
        grow(ledger, task, Workload(seed), size - 1)
        before = ledger.state(task).position - keep + 1
        done = archive.compact(ledger, task, before, views_every=views_every)
    rng = random.Random(seed)
    samples = []
    with open_ledger(location) as fresh:
        fresh.state(task, at=rng.randint(1, before - 1))
        for _ in range(points):
            at = rng.randint(1, before - 1)
            began = time.process_time()
            fresh.state(task, at=at)
            samples.append((time.process_time() - began) * 1000)
    with duckdb_offline.connect() as con:
        views = con.execute("SELECT coalesce(sum(octet_length(state)), 0) FROM read_parquet($1) WHERE kind = 'view'",
                            [str(done.path)]).fetchone()
    return samples, done.path.stat().st_size, int(views[0]) if views else 0


def archived_replay(directory: Path, sizes: tuple[int, int], seed: int, points: int) -> None:
    """Replay to archived points at two sizes: the larger's p95 within 2x the smaller's (flat in the task)."""
    found = {size: archived_replay_ms(directory, size, seed, points) for size in sizes}
    small = p95(found[sizes[0]][0])
    print(f"## Replay to a random archived point of a compacted task ({points} points, CPU ms, "
          f"views every {archive.VIEWS_EVERY:,})\n")
    rows = []
    for size, (samples, whole, views) in found.items():
        ratio = p95(samples) / small
        rows.append((f"{size:,}", f"{statistics.median(samples):.1f}", f"{p95(samples):.1f}", f"{max(samples):.1f}",
                     f"{ratio:.2f}", f"{whole / 1e6:,.1f} MB", f"{views / 1e6:,.1f} MB",
                     yes(ratio <= 2) if size == sizes[-1] else ""))
    headers = ("events", "median ms", "p95 ms", "max ms", "p95 vs smaller", "archive", "its views (as stored)",
               "goal met (p95 <= 2x the smaller's)")
    print(table(headers, rows) + "\n")


def compaction(ledger: Ledger, location: Location, db: Path, task: UUID, rng: random.Random) -> None:
    f = compaction_figures(ledger, location, db, task, rng)
    raw_all = f["raw_events"] + f["raw_snapshots"]
    print(f"## Compaction of all but the last 1,000 events ({f['events_archived']:,} events archived)\n")
    print(
        table(
            (
                "live store before",
                "live store after",
                "archive (Parquet, zstd)",
                "raw JSON: events",
                "raw JSON: events + snapshots",
                "seconds",
            ),
            [
                (
                    f"{f['live_before'] / 1e6:,.1f} MB",
                    f"{f['live_after'] / 1e6:,.1f} MB",
                    f"{f['archive'] / 1e6:,.1f} MB",
                    f"{f['raw_events'] / 1e6:,.1f} MB",
                    f"{raw_all / 1e6:,.1f} MB ({f['archive'] / raw_all:.0%} as Parquet)",
                    f"{f['seconds']:.1f}",
                )
            ],
        )
    )
    print(
        f"\nAfter compaction: resume {f['resume_ms']:.1f} ms median; replay to a random archived point "
        f"{f['replay_ms']:.1f} ms median, {f['replay_p95_ms']:.1f} ms p95; verify: {f['verify']}.\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.longtask", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 100k events only (about a minute)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, help="where to build the ledger (default: a temporary directory)")
    args = parser.parse_args()
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        run(args.quick, args.seed, args.dir)
        return
    with tempfile.TemporaryDirectory(prefix="trail-bench-") as tmp:
        run(args.quick, args.seed, Path(tmp))


if __name__ == "__main__":
    main()
