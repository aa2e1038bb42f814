"""What one transcript file maps to, whichever agent wrote it (each agent's mapper returns one)."""

from __future__ import annotations

from collections.abc import MutableSequence
from dataclasses import dataclass, field

from ledger.capture.items import Item
from ledger.capture.jsonl import Skipped
from ledger.capture.spool import Spool


@dataclass
class Session:
    """What one transcript file maps to."""

    session_id: str = ""
    title: str | None = None
    cwd: str | None = None
    items: MutableSequence[Item] = field(default_factory=Spool)
    """In the order they land; a long session's are in a temporary file (``ledger.capture.spool``)."""
    skipped: list[Skipped] = field(default_factory=list)
    references: set[str] = field(default_factory=set)
    """uuids this file points at outside itself (summary leafs, parents): links to earlier sessions."""
    is_subagent: bool = False
    first_timestamp: str = ""


END = "end:"
"""Source-record prefix of the transcript-end checkpoint."""
