"""Growing each system's task through the run's sizes, measuring at every milestone.

Every system is fed the same seeded workload. tasktrail's task is built once per run, with
batched appends, and reused by every measure (storage, resume, time travel); when the next
size would not fit the run's budget (growth projected from the sizes already built), the
build stops there and the projection is reported instead of a figure.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import LRUCache

from bench import workload
from bench.floor import Floor
from bench.timing import disk_bytes, median, timed, wall_and_cpu
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from projections import brief

BATCH = 1_000
"""Events per ``append_many`` (and per floor transaction): the import path's unit."""

TRAIL = [sys.executable, "-c", "from cli.main import main; main()"]
"""``trail`` as this checkout's code (the installed script may point at another tree)."""


@dataclass
class Plan:
    quick: bool
    seed: int
    milestones: tuple[int, ...]
    storage_sizes: tuple[int, ...]
    resume_sizes: tuple[int, ...]
    append_events: int
    each_events: int
    langgraph_delta: tuple[int, ...]
    langgraph_default: tuple[int, ...]
    build_budget: float
    travel_points: int
    walk_budget: float
    hook_repeat: int
    resume_repeat: int
    """`trail resume` processes per size (and per find): a quiet machine's runs of the same resume spread 43-64 ms
    CPU, so a median of 3 moved the 10k/1k ratio by a quarter."""
    session_scale: int = 50_000
    """Events of the large ledger the SessionStart of a new session is timed on (``bench.sessionscale``)."""
    dedupe_scale: int = 100_000
    """Events of the large task the capture writer's questions are timed on (``bench.dedupe``)."""
    archive_scale: tuple[int, int] = (2_000, 20_000)
    """Events of the two compacted tasks time travel into the archive is timed on (``bench.longtask``)."""

    @classmethod
    def make(cls, quick: bool, seed: int) -> Plan:
        if quick:
            return cls(quick, seed, (1_000, 10_000), (1_000, 10_000), (1_000, 10_000), 10_000, 2_000,
                       (1_000, 10_000), (1_000,), 60.0, 50, 5.0, 10, 9, 50_000)
        return cls(quick, seed, (1_000, 10_000, 100_000, 1_000_000), (1_000, 10_000, 100_000),
                   (1_000, 100_000, 1_000_000), 100_000, 10_000, (1_000, 10_000, 100_000), (1_000, 10_000),
                   700.0, 200, 15.0, 30, 9, 300_000, 300_000, (20_000, 200_000))


@dataclass
class Projection:
    """What the next size would have cost, from the growth measured so far."""

    size: int
    seconds: float
    disk: float


@dataclass
class TrailRun:
    db: Path
    home: Path
    ledger: Ledger
    task: UUID
    built: int = 1
    append_seconds: float = 0.0
    segments: list[tuple[int, int, float]] = field(default_factory=list)
    """(from, to, seconds) of appends between milestones."""
    disk: dict[int, int] = field(default_factory=dict)
    snapshot_bytes: dict[int, int] = field(default_factory=dict)
    last_snapshot: dict[int, int] = field(default_factory=dict)
    """Bytes of the newest snapshot at each size: what every resume decodes."""
    resume_inproc: dict[int, list[float]] = field(default_factory=dict)
    resume_process: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    """(wall, CPU) seconds of each `trail resume` process at each size."""
    resume_smallest: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    """`trail resume` of a copy of the task at the smallest resume size, timed alternately with each
    size's own (so load on a shared machine falls on both sides of the ratio)."""
    smallest: tuple[Path, Path] | None = None
    """(db, home) of that copy."""
    skipped: Projection | None = None
    build_seconds: float = 0.0


def checkpoint_wal(db: Path) -> None:
    """Fold the WAL into the main file so the bytes on disk are the store's, not the log's."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def _project(segments: list[tuple[int, int, float]], disk: dict[int, int], target: int) -> Projection:
    """Cost per event grows with the task (the snapshots grow with it), so fit cost(n) = a + b*n
    on the last two segments and integrate to ``target``; disk likewise from bytes per event."""
    (n0, n1, t1), (_, n2, t2) = segments[-2], segments[-1]
    c1, c2 = t1 / (n1 - n0), t2 / (n2 - n1)
    m1, m2 = (n0 + n1) / 2, (n1 + n2) / 2
    b = max(0.0, (c2 - c1) / (m2 - m1))
    a = c2 - b * m2
    seconds = a * (target - n2) + b * (target**2 - n2**2) / 2
    sizes = sorted(disk)
    s1, s2 = sizes[-2], sizes[-1]
    bb = max(0.0, (disk[s2] / s2 - disk[s1] / s1) / (s2 - s1))
    per_event = disk[s2] / s2 + bb * (target - s2)
    return Projection(target, seconds, per_event * target)


def grow_trail(plan: Plan, directory: Path, log: Callable[[str], None]) -> TrailRun:
    db = directory / "trail.db"
    home = directory / "trail-home"
    ledger = open_ledger(resolve(str(db)))
    state = ledger.open_task("bench: a long agent task", cwd="/home/dev/project")
    assert state.id is not None
    run = TrailRun(db=db, home=home, ledger=ledger, task=state.id)
    stream = workload.Workload(plan.seed)
    began = time.perf_counter()
    for target in plan.milestones:
        if len(run.segments) >= 2:
            projected = _project(run.segments, run.disk, target)
            if projected.seconds > plan.build_budget - (time.perf_counter() - began):
                run.skipped = projected
                log(f"tasktrail: not building {target:,} events: projected {projected.seconds:,.0f} s, "
                    f"{projected.disk / 1e9:,.1f} GB")
                break
        start, seconds = run.built, 0.0
        for batch in stream.batches(target - run.built, BATCH):
            t0 = time.perf_counter()
            ledger.append_many(run.task, batch)
            seconds += time.perf_counter() - t0
        run.built = target
        run.append_seconds += seconds
        run.segments.append((start, target, seconds))
        log(f"tasktrail: {target:,} events ({(target - start) / seconds:,.0f} events/s in the last segment)")
        # The library's bulk append folds no view (the write path alone is what the append goal judges); a read
        # brings it up now, untimed, as an import's writes would have (``append_many(keep_view=True)``), so the
        # milestone's reads measure reading, not the one-off fold of everything appended since.
        t0 = time.perf_counter()
        ledger.state(run.task)
        log(f"tasktrail: view brought to {target:,} in {time.perf_counter() - t0:,.1f} s (not in the append rate)")
        _at_milestone(plan, run, target)
    run.build_seconds = time.perf_counter() - began
    return run


def _at_milestone(plan: Plan, run: TrailRun, size: int) -> None:
    checkpoint_wal(run.db)
    run.disk[size] = disk_bytes(run.db)
    with sqlite3.connect(run.db) as con:
        row = con.execute("SELECT coalesce(sum(length(state)), 0) FROM stored_snapshots").fetchone()
        last = con.execute("SELECT length(state) FROM stored_snapshots WHERE originator_id = ? "
                           "ORDER BY originator_version DESC LIMIT 1", (run.task.hex,)).fetchone()
    run.snapshot_bytes[size] = int(row[0])
    run.last_snapshot[size] = int(last[0]) if last else 0
    if size in plan.resume_sizes or size == plan.milestones[-1]:
        run.resume_inproc[size] = [_cold_resume(run) for _ in range(9)]
        if run.smallest is None:
            copy = run.db.with_name(f"smallest-{size}.db")
            _copy_db(run.db, copy)
            run.smallest = (copy, run.home.with_name(f"smallest-{size}-home"))
        own: list[tuple[float, float]] = []
        smallest: list[tuple[float, float]] = []
        for _ in range(plan.resume_repeat):
            own.append(wall_and_cpu([*TRAIL, "--db", str(run.db), "resume", "1"], env={"TRAIL_HOME": str(run.home)}))
            smallest.append(wall_and_cpu([*TRAIL, "--db", str(run.smallest[0]), "resume", "1"],
                                         env={"TRAIL_HOME": str(run.smallest[1])}))
        run.resume_process[size], run.resume_smallest[size] = own, smallest


def _copy_db(source: Path, target: Path) -> None:
    """``source`` copied through SQLite's backup API: a plain file copy would open and close the file
    in this process, and closing any descriptor of it drops the ledger's own POSIX locks on it."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def _cold_resume(run: TrailRun) -> float:
    """Seconds for state + brief with the ledger's aggregate cache emptied first, as in a new
    process, so the read goes to the store (a warm ledger would answer from memory). A second
    ledger on the same file is not used: closing it disturbed the first one's WAL."""
    repository = run.ledger.repository
    if repository.cache is not None:
        repository.cache = LRUCache(maxsize=64)
    began = time.perf_counter()
    brief.render(run.ledger.state(run.task))
    return time.perf_counter() - began


def travel_points(plan: Plan, size: int, salt: int = 0) -> list[int]:
    rng = random.Random(plan.seed + salt)
    return [rng.randint(2, size) for _ in range(plan.travel_points)]


@dataclass
class FloorRun:
    batched_seconds: float = 0.0
    batched_events: int = 0
    each_seconds: float = 0.0
    each_events: int = 0
    plain_seconds: float = 0.0
    plain_events: int = 0
    """The batched floor's rows again, into a plain rowid table (``Floor(rowid=True)``), batch by batch in turn."""
    promised_seconds: float = 0.0
    promised_events: int = 0
    """The batched floor's first ``append_events`` again, redacted and hash-chained (``append_promised``)."""
    disk: dict[int, int] = field(default_factory=dict)


def grow_floor(plan: Plan, directory: Path, log: Callable[[str], None]) -> FloorRun:
    run = FloorRun()
    floor = Floor(directory / "floor.db")
    plain = Floor(directory / "floor-plain.db", rowid=True)
    events = workload.dicts(plan.seed, max(plan.append_events, *plan.storage_sizes))
    at = 1  # position 1 is the task's opening in every system; the floor stores from 2 like the rest
    for target in sorted({plan.append_events, *plan.storage_sizes}):
        while at < target:
            batch = [next(events) for _ in range(min(BATCH, target - at))]
            run.batched_seconds += floor.append_batch(batch)
            run.batched_events += len(batch)
            run.plain_seconds += plain.append_batch(batch)  # in turn, so load falls on both alike
            run.plain_events += len(batch)
            at += len(batch)
        floor.checkpoint()
        run.disk[target] = disk_bytes(floor.path)
    floor.close()
    plain.close()
    promised = Floor(directory / "floor-promised.db", task=UUID(int=1).hex)  # the chain hashes a task id
    for batch in _batched(workload.dicts(plan.seed, plan.append_events), BATCH):
        run.promised_seconds += promised.append_promised(batch)
        run.promised_events += len(batch)
    promised.close()
    each = Floor(directory / "floor-each.db")
    run.each_seconds = each.append_each(workload.dicts(plan.seed, plan.each_events))
    run.each_events = plan.each_events
    each.close()
    log(f"floor: {run.batched_events / run.batched_seconds:,.0f} events/s batched "
        f"({run.plain_events / run.plain_seconds:,.0f} into a plain table), "
        f"{run.each_events / run.each_seconds:,.0f} one transaction each")
    return run


def _batched(items: Iterator[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class GraphRun:
    variant: str
    steps: int = 0
    seconds: float = 0.0
    disk: dict[int, int] = field(default_factory=dict)
    latest: dict[int, float] = field(default_factory=dict)
    by_id: list[float] = field(default_factory=list)
    by_id_cpu: list[float] = field(default_factory=list)
    """CPU seconds (this process's) of each lookup by id: what the time-travel goal is judged by."""
    walk: list[float] = field(default_factory=list)
    walk_misses: int = 0
    walked: int = 0
    available: bool = True
    peer: Any = None


def grow_langgraph(plan: Plan, directory: Path, variant: str, sizes: tuple[int, ...],
                   log: Callable[[str], None]) -> GraphRun:
    run = GraphRun(variant)
    try:
        from bench.langgraph_peer import LangGraphPeer, has_delta
    except ImportError as exc:  # no `.[bench]` extra: LangGraph's goals are printed as not measured
        log(f"LangGraph {variant}: not run ({exc})")
        run.available = False
        return run
    if variant == "delta" and not has_delta():
        run.available = False
        return run
    peer = LangGraphPeer(directory / f"langgraph-{variant}.db", variant)  # type: ignore[arg-type]
    events = workload.dicts(plan.seed, max(sizes))
    at = 1
    for target in sizes:
        batch = [next(events) for _ in range(target - at)]
        run.seconds += peer.run(batch)
        run.steps += len(batch)
        at = target
        peer.checkpoint()
        run.disk[target] = disk_bytes(peer.path)
        run.latest[target] = median(timed(peer.latest, 5))
        log(f"langgraph ({variant}): {target:,} steps ({run.steps / run.seconds:,.0f} steps/s)")
    run.peer = peer
    return run


def travel_langgraph(plan: Plan, run: GraphRun) -> None:
    """State at random past steps by checkpoint id, and by walking the history (with a time cap)."""
    peer = run.peer
    if peer is None:
        return
    size = max(run.disk)
    points = travel_points(plan, size, salt=1)
    for position in points:
        checkpoint_id = peer.ids[position]
        t0, c0 = time.perf_counter(), time.process_time()
        peer.state_at(checkpoint_id)
        run.by_id.append(time.perf_counter() - t0)
        run.by_id_cpu.append(time.process_time() - c0)
    deadline = time.perf_counter() + plan.walk_budget
    for position in points[:5]:
        t0 = time.perf_counter()
        found, walked = peer.state_by_walk(position, deadline)
        run.walked += walked
        if found is None:
            run.walk_misses += 1
            break
        run.walk.append(time.perf_counter() - t0)
