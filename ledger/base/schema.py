"""Names the ledger's stored rows go by, for the lean paths (the hook, the brief cache) that read the
SQLite file with ``sqlite3`` alone and the full paths (the stores, the domain) alike: one definition each.

Standard library only: importing ``ledger.stores.base`` or ``ledger.domain`` loads eventsourcing and
pydantic, which a cached resume never pays for (``tests/test_startup.py``).
"""

from __future__ import annotations

import hashlib

ARCHIVES = "tasktrail_archives"
"""The archive index: one row per archive of compacted events."""
FORGOTTEN_KEYS = "tasktrail_forgotten_keys"
"""sha256 of each source key a forgotten task held, with its number: re-imports skip them."""
HEADS = "tasktrail_heads"
"""The anchor: per aggregate, its last position and that event's chain hash, upserted in the
transaction that appends (``sqlite.AnchoredRecorder``, ``postgres.AnchoredRecorder``), so cutting
events off a log's end leaves the anchor pointing past it."""
VIEWS = "tasktrail_views"
"""Snapshots of the brief's view (``ledger.app.views``): per task, position and fold version, the
view's bytes as the mapper stores a snapshot's (compressed and enciphered when the ledger is).
A cache: reads refresh it every K events, and a missing or unreadable row is folded again."""

LINKED_TOPIC = "tasktrail/ConversationLinked"
"""``events.ConversationLinked.TOPIC``: a session's link to the task it works on."""

REGISTRY_HEX = "ee80e1b01e0d52feb7d0bd406ee24fbe"
"""The task registry's aggregate id, ``uuid5(NAMESPACE_URL, "tasktrail:registry")``, as SQLite keeps it
(``registry.REGISTRY_ID`` is built from it: importing uuid costs a lean path ~10 ms)."""

LINKED_SESSION_SQL = (
    "SELECT originator_id FROM stored_events WHERE topic = ? "
    "AND json_extract(state, '$.agent') = ? AND json_extract(state, '$.session_id') = ? "
    "ORDER BY rowid DESC LIMIT 1"
)
"""The task an (agent, session) was last linked to in an SQLite ledger (the latest link wins); parameters:
the topic (``LINKED_TOPIC``), the agent, the session id."""

Key = tuple[str, str, str]
"""A captured item's source: (agent, session, record)."""


def key_hash(key: Key) -> str:
    """What a tombstone keeps of a source key: its sha256, nothing readable."""
    return hashlib.sha256("\x1f".join(key).encode("utf-8", "surrogatepass")).hexdigest()
