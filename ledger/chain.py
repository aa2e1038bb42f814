"""The per-task hash chain: each event's hash covers its canonical bytes and its predecessor's hash.

The same function runs at append time (on the model about to be stored) and at
verify time (on the raw stored row), so it is defined on the stored form: topic,
task id, position and the stored JSON state without the ``chain`` field itself.
"""

from __future__ import annotations

import hashlib
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
