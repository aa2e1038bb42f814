"""The benchmark workload cannot rot silently: it stays seeded, valid, and shaped as specified.

Benchmarks are not tests; this only runs the generator at a tiny size (well under a second).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import orjson

from bench.workload import Workload, as_dict, dicts
from ledger import events as ev
from ledger.location import resolve
from ledger.store import open_ledger

SIZE = 2_000


def _text_bytes(cls: type[ev.TaskEvent], fields: dict[str, object]) -> int:
    """The payload a user would call the event's size: its text, output or diff."""
    def n(value: object) -> int:
        if isinstance(value, ev.Bounded):
            return len(value.tail.encode())
        return len(str(value).encode()) if value else 0

    keys = {
        ev.RequirementStated: ("text",), ev.CorrectionMade: ("text", "wrong"), ev.ToolCalled: ("input",),
        ev.CommandRan: ("stdout", "stderr"), ev.FileChanged: ("diff",), ev.DecisionRecorded: ("text", "reason"),
    }[cls]
    return sum(n(fields.get(k)) for k in keys)


def test_same_seed_same_events_and_other_seed_differs() -> None:
    first = [orjson.dumps(d) for d in dicts(3, 300)]
    assert first == [orjson.dumps(d) for d in dicts(3, 300)]
    assert first != [orjson.dumps(d) for d in dicts(4, 300)]


def test_mix_and_sizes_match_the_spec() -> None:
    workload = Workload(11)
    sizes: dict[type[ev.TaskEvent], list[int]] = defaultdict(list)
    for cls, fields in workload.items(SIZE):
        if cls in (ev.RequirementStated, ev.CorrectionMade, ev.ToolCalled, ev.CommandRan, ev.FileChanged,
                   ev.DecisionRecorded):
            sizes[cls].append(_text_bytes(cls, fields))
        else:
            sizes[cls].append(0)
    # Every kind the issue names shows up, tool traffic dominates, user input is rare.
    for cls in (ev.RequirementStated, ev.CorrectionMade, ev.ToolCalled, ev.CommandRan, ev.FileChanged,
                ev.DecisionRecorded, ev.AttemptStarted, ev.AttemptEnded):
        assert sizes[cls], cls.__name__
    assert len(sizes[ev.ToolCalled]) > 10 * len(sizes[ev.RequirementStated])
    # Sizes: ~200 B user text, ~150 B tool calls, ~1 KB diffs, 200 B to 8 KB (kept to 4 KB) outputs.
    assert 150 <= statistics.mean(sizes[ev.RequirementStated]) <= 250
    assert 150 <= statistics.mean(sizes[ev.CorrectionMade]) <= 250
    assert 150 <= statistics.mean(sizes[ev.DecisionRecorded]) <= 250
    assert 110 <= statistics.mean(sizes[ev.ToolCalled]) <= 190
    assert 800 <= statistics.mean(sizes[ev.FileChanged]) <= 1_200
    outputs = sorted(sizes[ev.CommandRan])
    assert outputs[0] >= 190 and outputs[-1] <= 4_096
    assert statistics.median(outputs) < statistics.mean(outputs)  # skewed: a long tail of big outputs
    assert outputs[-1] > 4 * statistics.median(outputs)


def test_items_are_accepted_by_the_ledger_and_dicts_mirror_them(tmp_path: Path) -> None:
    ledger = open_ledger(resolve(str(tmp_path / "ledger.db")))
    task = ledger.open_task("bench smoke").id
    assert task is not None
    workload = Workload(5)
    for batch in workload.batches(600, 250):
        ledger.append_many(task, batch)
    assert ledger.state(task).position == 601
    again = Workload(5)
    item = again.item()
    plain = as_dict(item, again.position)
    assert plain["type"] == item[0].__name__ and plain["position"] == 2
    orjson.dumps(plain)  # JSON-able as it stands
    ledger.close()
