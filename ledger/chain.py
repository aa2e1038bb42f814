"""The per-task hash chain: each event's hash covers its canonical bytes and its predecessor's hash.

The same function runs at append time (on the model about to be stored) and at
verify time (on the raw stored row), so it is defined on the stored form: topic,
task id, position and the stored JSON state without the ``chain`` field itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any
from uuid import UUID

import orjson

GENESIS = ""


def canonical(topic: str, task_id: UUID | str, position: int, state: dict[str, Any]) -> bytes:
    doc = {k: v for k, v in state.items() if k not in ("chain", "originator_id", "originator_version")}
    doc["topic"] = topic
    doc["task"] = UUID(str(task_id)).hex
    doc["position"] = position
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def link(previous: str, canonical_bytes: bytes) -> str:
    return hashlib.sha256(previous.encode("ascii") + b"\n" + canonical_bytes).hexdigest()


def breaks(rows: Iterable[tuple[UUID | str, int, str, bytes]]) -> list[str]:
    """Recompute each task's chain over stored rows (task id, position, topic, stored JSON).

    Returns what does not hold, first break per task: a missing or repeated position, or a
    stored ``chain`` that differs from the recomputed one. Empty means every chain verifies.
    """
    tasks: dict[str, list[tuple[int, str, bytes]]] = {}
    for task_id, position, topic, state in rows:
        tasks.setdefault(str(task_id), []).append((position, topic, state))
    problems: list[str] = []
    for task_id, task_rows in tasks.items():
        task_rows.sort()
        previous = GENESIS
        for expected, (position, topic, state) in enumerate(task_rows, start=1):
            if position != expected:
                problems.append(f"task {task_id}: position {position} where {expected} was due")
                break
            stored = orjson.loads(state)
            previous = link(previous, canonical(topic, task_id, position, stored))
            if stored.get("chain") != previous:
                problems.append(f"task {task_id}: chain broken at position {position}")
                break
    return problems
