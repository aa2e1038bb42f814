"""The capture writer's questions on a small and a large task: `python -m bench.dedupe [--size N] [--runs N]`.

Every capture write asks which of its batch's source keys the task holds already (``LedgerStore.held_keys``), and
the inbox asks which prompts a session has (``session_records``). Two SQLite ledgers of captured events (a note
with a source each, as an import or a drain leaves them), 1,000 events and ``--size`` (default 100,000), each
asked in turn about a batch of 500 keys (250 the task holds, 250 it does not); CPU of the process, median of
``--runs``. Goal: the large task's dedupe at most 1.2x the small one's. Beside it, today's read without the
capture index (``_source_keys``: every source of the task from its JSON), and what the index costs an append:
batches of 500 captured events into two ledgers in turn, one with the index and one without it.
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

from bench.tables import Table, scale_main, size
from ledger.app.store import Ledger, open_ledger
from ledger.base import upkeep
from ledger.base.location import Location
from ledger.base.schema import SOURCES
from ledger.domain import events as ev

SMALL = 1_000
SIZE = 100_000
RUNS = 9
BATCH = 500
FLAT = 1.2
AGENT, SESSION = "claude-code", "bench-session"


def _items(start: int, stop: int) -> list[tuple[type[ev.TaskEvent], dict[str, Any]]]:
    return [(ev.NoteAdded, {"text": f"captured note {i} " + "x" * 120, "actor": "agent:claude-code",
                            "source": ev.SourceKey(agent=AGENT, session=SESSION, record=f"toolu_{i:08d}")})
            for i in range(start, stop)]


def _ledger(path: Path, events: int) -> tuple[Ledger, UUID]:
    ledger = open_ledger(Location(url=f"sqlite:{path}", home=path.parent))
    task = ledger.open_task("captured").id
    assert task is not None
    for start in range(0, events - 1, BATCH):
        ledger.append_many(task, _items(start, min(events - 1, start + BATCH)))
    return ledger, task


def _cpu(call: Callable[..., object], *args: Any) -> float:
    began = time.process_time()
    call(*args)
    return time.process_time() - began


def measure(large: int = SIZE, runs: int = RUNS, seed: int = 7, directory: Path | None = None
            ) -> dict[str, dict[int, list[float]]]:
    """CPU seconds of each question per ledger size, and of each appended event with and without the index."""
    rng = random.Random(seed)
    found: dict[str, dict[int, list[float]]] = {"held": {}, "scan": {}, "prompts": {}, "records": {}, "append": {}}
    with tempfile.TemporaryDirectory(prefix="trail-dedupe-", dir=directory) as tmp:
        root = Path(tmp)
        ledgers = {events: _ledger(root / f"ledger-{events}.db", events) for events in (SMALL, large)}
        try:
            for name in ("held", "scan", "prompts", "records"):
                for events in ledgers:
                    found[name][events] = []
            for round_ in range(runs + 1):  # one warm-up round, not counted
                for events, (ledger, task) in ledgers.items():  # in turn, so a busy moment slows both alike
                    end = ledger.state(task).position
                    held = [(AGENT, SESSION, f"toolu_{rng.randrange(events - 1):08d}") for _ in range(BATCH // 2)]
                    keys = held + [(AGENT, SESSION, f"new_{round_}_{n}") for n in range(BATCH - len(held))]
                    store = ledger.store
                    timed = {
                        "held": _cpu(store.held_keys, task, end, keys),
                        "scan": _cpu(store._source_keys, task, end),  # then "& set(keys)": microseconds
                        "prompts": _cpu(store.session_records, task, end, AGENT, SESSION, "prompt:"),
                        "records": _cpu(store.task_for_records, AGENT, [f"never_{round_}", keys[0][2]]),
                    }
                    if round_:
                        for name, cpu in timed.items():
                            found[name][events].append(cpu)
        finally:
            for ledger, _ in ledgers.values():
                ledger.close()
        found["append"] = _append_cost(root, runs)
    return found


def _append_cost(root: Path, runs: int) -> dict[int, list[float]]:
    """CPU per appended captured event, into a ledger with the capture index (1) and one without it (0)."""
    with_index, task = _ledger(root / "append-with.db", SMALL)
    without, other = _ledger(root / "append-without.db", SMALL)
    without.close()
    with sqlite3.connect(root / "append-without.db") as con:
        con.execute(f"DROP TABLE {SOURCES}")
    kept = upkeep.deferring, upkeep.BOUNDED_ROWS
    upkeep.deferring, upkeep.BOUNDED_ROWS = True, 0  # opened as a hook would: the index is not rebuilt
    try:
        without = open_ledger(Location(url=f"sqlite:{root / 'append-without.db'}", home=root))
    finally:
        upkeep.deferring, upkeep.BOUNDED_ROWS = kept
    assert not without.store._indexed()
    samples: dict[int, list[float]] = {1: [], 0: []}
    start = SMALL
    try:
        for round_ in range(2 * runs + 1):
            for keyed, (ledger, owner) in ((1, (with_index, task)), (0, (without, other))):
                items = _items(start, start + BATCH)
                cpu = _cpu(ledger.append_many, owner, items)
                if round_:
                    samples[keyed].append(cpu / BATCH)
            start += BATCH
    finally:
        with_index.close()
        without.close()
    return samples


def table(large: int = SIZE, runs: int = RUNS, directory: Path | None = None) -> Table:
    found = measure(large, runs, directory=directory)
    result = Table(f"capture dedupe against task size (SQLite), median CPU of {runs}",
                   ("question", "task events", "median CPU", f"vs {size(SMALL)}", "goal", "goal met"))
    labels = {"held": f"which of {BATCH} keys the task holds (capture index)",
              "scan": "the same by reading every source of the task (without the index, as before)",
              "prompts": "a session's prompts (capture index)",
              "records": "which task holds a record (capture index)"}
    for name, label in labels.items():
        small = statistics.median(found[name][SMALL])
        for events, cpu in found[name].items():
            median = statistics.median(cpu)
            goal = name == "held" and events == large
            ok = result.check(f"capture dedupe {size(large)} CPU <= {FLAT:g}x {size(SMALL)}",
                              median <= FLAT * small) if goal else ""
            result.add(label if events == SMALL else "", f"{events:,}", f"{median * 1000:,.2f} ms",
                       f"{median / small:.2f}x" if small else "-", f"<= {FLAT:g}x" if goal else "", ok)
    keyed, bare = (statistics.median(found["append"][k]) for k in (1, 0))
    result.add(f"append_many of {BATCH} captured events, per event, with the index", f"{SMALL:,}+",
               f"{keyed * 1e6:,.1f} us", f"{keyed / bare:.3f}x of without", "", "")
    result.add("  the same into a ledger without it (in turn)", f"{SMALL:,}+", f"{bare * 1e6:,.1f} us", "", "", "")
    result.notes.append("In-process CPU (`time.process_time`) of each question on a ledger of notes each sourced "
                        "from one session; the keys asked are half held, half new, drawn afresh each round.")
    result.data = {"samples_cpu_s": {name: {str(k): v for k, v in by.items()} for name, by in found.items()}}
    return result


def main() -> None:
    scale_main("python -m bench.dedupe", __doc__, table, SIZE, RUNS, "events of the large task")


if __name__ == "__main__":
    main()
