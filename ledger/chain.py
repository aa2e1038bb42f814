"""The per-task hash chain: each event's hash covers its canonical bytes and its predecessor's hash.

The same function runs at append time (on the model about to be stored) and at
verify time (on the raw stored row), so it is defined on the stored form: topic,
task id, position and the stored JSON state without the ``chain`` field itself. Bounded
texts enter through the hash of their tail, so that `trail compact --gc-artifacts` can drop
a bulky tail (keeping its hash) without breaking the chain.
"""

from __future__ import annotations

import hashlib
from typing import Any
from uuid import UUID

import orjson

GENESIS = ""


def is_bounded(value: dict[str, Any]) -> bool:
    """Whether a stored dict is a ``Bounded`` text (its stored JSON form)."""
    return "tail" in value and "size" in value and "truncated" in value


def _tails_hashed(value: Any) -> Any:
    """Bounded texts with their tail replaced by its hash, so collecting a tail keeps the chain."""
    if isinstance(value, dict):
        if is_bounded(value):
            kept = {k: v for k, v in value.items() if k not in ("tail", "collected", "tail_sha256")}
            if value.get("collected"):
                kept["tail_sha256"] = value.get("tail_sha256")
            else:
                kept["tail_sha256"] = hashlib.sha256(str(value["tail"]).encode("utf-8", "surrogatepass")).hexdigest()
            return kept
        return {k: _tails_hashed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tails_hashed(v) for v in value]
    return value


def canonical(topic: str, task_id: UUID | str, position: int, state: dict[str, Any]) -> bytes:
    doc = {k: _tails_hashed(v) for k, v in state.items() if k not in ("chain", "originator_id", "originator_version")}
    doc["topic"] = topic
    doc["task"] = UUID(str(task_id)).hex
    doc["position"] = position
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def link(previous: str, canonical_bytes: bytes) -> str:
    return hashlib.sha256(previous.encode("ascii") + b"\n" + canonical_bytes).hexdigest()
