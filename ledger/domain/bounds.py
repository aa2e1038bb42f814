"""Bounding bulky text (command output, diffs, tool results) before it enters an event."""

from __future__ import annotations

import hashlib

from ledger.base.caps import Cut
from ledger.domain.events import Bounded
from ledger.domain.redact import redact_text

OUTPUT = 4096
"""Bytes of tail kept of a command's output, a tool's input and result, by default: enough for a test
failure's last lines."""
REPLY = 8000
"""Bytes kept of an agent's closing message (``AgentReplied.text``), by every agent: whole in practice (its
opening and its end both matter; the brief shows both)."""
SUMMARY = 12_000
"""Bytes kept of a compaction summary (``ContextCompacted.summary``), by every agent: the tail holds the
pending work and the current state."""
SUBAGENT_REPORT = 2000
"""Bytes of a sub-agent's closing report kept on its stop checkpoint (its end, where the result is)."""
DIFF = 16384
"""Bytes kept of a file change's diff (``FileChanged.diff``), by `trail changed` and by capture alike: a diff
is the record of what changed (``trail why`` reads its lines), so it keeps four times an output's tail."""
REDACT_MARGIN = 16384
"""Bytes before the kept tail redacted with it: the key of a value at the cut (a line's ``NAME=``, a
private key's BEGIN line, 3 KB before its end) lies within them."""


def bound(
    text: str | bytes, limit: int = OUTPUT, *, full_size: int | None = None, full_sha256: str | None = None
) -> Bounded:
    """Keep the last ``limit`` bytes; record the full size, and the full hash when cut.

    ``full_size``/``full_sha256`` describe the whole stream when ``text`` is already only its tail.
    A text that is cut is redacted first, its tail with the ``REDACT_MARGIN`` bytes before it: cut
    first, a cut between ``DB_PASSWORD=`` and its value would leave a value no detector can tell from
    any other (the hook's ``Cut`` strings were redacted by the hook). Size and hash are the original's.
    """
    if isinstance(text, Cut) and full_size is None:  # a string the hook cut: its size and hash ride along
        full_size, full_sha256 = text.size, text.sha256
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    size = len(raw) if full_size is None else full_size
    if size <= limit and len(raw) == size:
        return Bounded(tail=raw.decode("utf-8", "replace"), size=size)
    digest = full_sha256 or hashlib.sha256(raw).hexdigest()
    if not isinstance(text, Cut):
        # The kept tail and what leads up to it, so the work stays bounded however long the text.
        near = raw[-(limit + REDACT_MARGIN) :].decode("utf-8", "ignore")
        raw = redact_text(near).encode("utf-8", "replace")
    tail = raw[-limit:].decode("utf-8", "ignore")  # "ignore" drops a split leading code point
    return Bounded(tail=tail, size=size, sha256=digest, truncated=True)
