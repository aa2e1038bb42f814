"""Capping huge strings in hook payloads before they reach the inbox (standard library only).

A hook payload can carry a 50 MB command output. The inbox row must stay small, yet the
event built from it later must still state the full size and hash, so a capped string
keeps its tail behind a prefix that records both; ``ledger.bounds.bound`` reads it back.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

LIMIT = 1 << 20
"""Characters of a payload string kept whole; longer ones keep their last LIMIT."""

_PREFIX = "\x00trail-cut "
_CUT = re.compile(r"^\x00trail-cut (\d+) ([0-9a-f]{64})\x00")


def cap(text: str, limit: int = LIMIT) -> str:
    if len(text) <= limit:
        return text
    raw = text.encode("utf-8", "replace")
    return f"{_PREFIX}{len(raw)} {hashlib.sha256(raw).hexdigest()}\x00{text[-limit:]}"


def uncap(text: str) -> tuple[str, int | None, str | None]:
    """(tail, full size in bytes, full sha256) of a capped string; (text, None, None) otherwise."""
    match = _CUT.match(text)
    if match is None:
        return text, None, None
    return text[match.end():], int(match.group(1)), match.group(2)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (parsed JSON) with ``change`` applied to every string value inside it."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    if isinstance(value, dict):
        return {k: map_strings(v, change) for k, v in value.items()}
    return value
