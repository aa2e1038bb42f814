"""What redaction costs an event: `python -m bench.redaction`.

The bench workload's events (``bench.workload``: commands with output, diffs, tool calls, notes), in
batches of 1,000 as a write redacts them (one ``Redactor`` a batch), CPU microseconds an event, median
of the rounds: the built-in rules alone, and with the vendor ruleset (``ledger.domain.ruleset``) called
once a batch. The ruleset's one-time load (its library, then its rules compiled) is shown apart. Run with
``PYTHONPATH`` at another checkout to measure its rules on the same events (``prescan`` absent there:
the built-in rules alone).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

BATCH = 1_000
ROUNDS = 5


def _batches(seed: int, count: int) -> list[list[dict[str, Any]]]:
    from bench.workload import Workload

    workload = Workload(seed)
    return [[dict(workload.item()[1]) for _ in range(BATCH)] for _ in range(count)]


def _per_event(batches: list[list[dict[str, Any]]], prescan: bool) -> float:
    from ledger.domain.redact import Redactor

    began = time.process_time()
    for batch in batches:
        redactor = Redactor()
        if prescan and hasattr(redactor, "prescan"):
            redactor.prescan(batch)
        for fields in batch:
            redactor.fields(fields)
    return (time.process_time() - began) / sum(len(b) for b in batches) * 1e6


def main() -> None:
    batches = _batches(seed=7, count=3)
    rows = [("built-in rules", [_per_event(batches, prescan=False) for _ in range(ROUNDS)])]
    try:
        from ledger.domain import ruleset
    except ImportError:
        ruleset = None  # type: ignore[assignment]
    if ruleset is not None:
        os.environ[ruleset.RULESET_ENV] = "on"
        began = time.process_time()
        ruleset.vendor_secrets(["warm up"])
        load = (time.process_time() - began) * 1e3
        rows.append(("built-in + vendor ruleset", [_per_event(batches, prescan=True) for _ in range(ROUNDS)]))
        print(f"vendor ruleset one-time load: {load:.0f} ms CPU", file=sys.stderr)
    print("| rules | CPU us/event (median of 5 rounds of 3,000 events) |")
    print("|---|---:|")
    for name, samples in rows:
        print(f"| {name} | {statistics.median(samples):.1f} |")


if __name__ == "__main__":
    main()
