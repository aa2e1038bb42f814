"""Bounding bulky text (command output, diffs, tool results) before it enters an event."""

from __future__ import annotations

import hashlib

from ledger.events import Bounded

DEFAULT_LIMIT = 4096
"""Bytes of tail kept by default: enough for a test failure's last lines."""


def bound(text: str | bytes, limit: int = DEFAULT_LIMIT) -> Bounded:
    """Keep the last ``limit`` bytes; record the full size, and the full hash when cut."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return Bounded(tail=raw.decode("utf-8", "replace"), size=len(raw))
    tail = raw[-limit:].decode("utf-8", "ignore")  # "ignore" drops a split leading code point
    return Bounded(tail=tail, size=len(raw), sha256=hashlib.sha256(raw).hexdigest(), truncated=True)
