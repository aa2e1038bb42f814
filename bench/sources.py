"""What the idempotency check costs: `python -m bench.sources`.

The writer's question, which of a batch's keys the task holds, asked of the capture index
(``LedgerStore.held_keys``: a look-up per key), against reading every source key of the task with
``json_extract`` over the stored events (how it was answered before the index, and still is on a
ledger whose index is not built yet), and against decoding the task's events, for tasks of growing size.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev

SIZES = (100, 1000, 5000)


def main() -> None:
    print("| task events | capture index, 500 keys (ms) | json_extract of every key (ms) | decode events (ms) |")
    print("|---:|---:|---:|---:|")
    for size in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            location = Location(url=f"sqlite:{Path(tmp) / 'ledger.db'}", home=Path(tmp))
            ledger = open_ledger(location)
            state = ledger.open_task("bench")
            assert state.id is not None
            for start in range(0, size, 500):
                ledger.append_many(state.id, [
                    (ev.NoteAdded, {"text": f"note {i}", "source": ev.SourceKey(agent="a", session="s", record=str(i))})
                    for i in range(start, min(size, start + 500))
                ])
            version = ledger.task(state.id).version
            asked = [("a", "s", str(i)) for i in range(0, 2 * size, max(1, 2 * size // 500))]
            index, sql, scan = [], [], []
            for _ in range(5):
                t = time.perf_counter()
                held = ledger.store.held_keys(state.id, version, asked)
                index.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                keys = ledger.store._source_keys(state.id, version)
                sql.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                scanned = {e.source for e in ledger.task_events(state.id) if e.source}
                scan.append((time.perf_counter() - t) * 1000)
            assert len(keys) == len(scanned) == size and held == keys & set(asked)
            ledger.close()
        print(f"| {size} | {statistics.median(index):.1f} | {statistics.median(sql):.1f} | "
              f"{statistics.median(scan):.1f} |")


if __name__ == "__main__":
    main()
