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

_LINK_TEXT = "CAST(state AS TEXT)"
_LINK_ROWS = f"topic = '{LINKED_TOPIC}' AND json_valid({_LINK_TEXT})"
"""The rows of session links: json_valid keeps an enciphered or compressed row (not JSON) out of the index,
where json_extract would raise and refuse the insert."""
_LINK_KEY = f"json_extract({_LINK_TEXT}, '$.agent'), json_extract({_LINK_TEXT}, '$.session_id')"
LINKS_INDEX = "tasktrail_links"
CREATE_LINKS_INDEX = f"CREATE INDEX IF NOT EXISTS {LINKS_INDEX} ON stored_events ({_LINK_KEY}) WHERE {_LINK_ROWS}"
"""A partial index of the session links by (agent, session id): without it, the lookup of a session never
linked (every SessionStart of a new session) reads the whole table, seconds at a million events. The
lookup below repeats the index's expressions and WHERE word for word, which is how SQLite matches them."""

LINKED_SESSION_SQL = (
    f"SELECT originator_id FROM stored_events WHERE {_LINK_ROWS} "
    f"AND json_extract({_LINK_TEXT}, '$.agent') = ? AND json_extract({_LINK_TEXT}, '$.session_id') = ? "
    "ORDER BY rowid DESC LIMIT 1"
)
"""The task an (agent, session) was last linked to in an SQLite ledger (the latest link wins); parameters:
the agent, the session id."""

Key = tuple[str, str, str]
"""A captured item's source: (agent, session, record)."""

SOURCES = "tasktrail_sources"
"""The capture index: a row (task id, position, agent, session, record) per live event that has a source, written
by the recorder in the transaction that appends the event (the writer hands the keys over, so nothing is parsed)
and kept by every rewrite of the events (compaction, forget, collection). Keyed for the three questions capture
asks (``LedgerStore.held_keys``, ``session_records``, ``task_for_records``), none of which reads a task's rows. An
enciphered ledger keeps no rows here: a prompt's key is a hash of its text, which the cipher hides."""
SOURCES_BY_TASK = "tasktrail_sources_task"
"""Its index by (task, agent, session, record): a session's records of a prefix in a task, and the rows a rewrite
of one task's events removes."""


def key_hash(key: Key) -> str:
    """What a tombstone keeps of a source key: its sha256, nothing readable."""
    return hashlib.sha256("\x1f".join(key).encode("utf-8", "surrogatepass")).hexdigest()


EDITS = "tasktrail_edits"
"""The edit journal: a row (task id, position, what was done) for each stored event changed after it was
appended (updated, deleted, or replaced by an insert at its position) by anyone but tasktrail's own rewrites,
written by triggers of the database itself (``SQLITE_GUARDS``; ``postgres.GUARD_FUNCTION``). Reads refuse a
task with a row here, wherever the row is, so an edit below a view snapshot is refused without the rows
there being read again."""
REWRITING = "tasktrail_rewriting"
"""Holds one row only inside a transaction of tasktrail's own rewrites (redaction, collection, compaction,
forget): the SQLite triggers record nothing while it does."""

CREATE_EDITS = (
    f"CREATE TABLE {EDITS} (id INTEGER PRIMARY KEY, originator_id TEXT NOT NULL, position INTEGER NOT NULL,"
    " change TEXT NOT NULL, at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    f"CREATE INDEX {EDITS}_task ON {EDITS} (originator_id, position)",
    f"CREATE TABLE {REWRITING} (one INTEGER PRIMARY KEY CHECK (one = 1))",
)
_UNSANCTIONED = f"WHEN NOT EXISTS (SELECT 1 FROM {REWRITING})"
_RECORD = f"INSERT INTO {EDITS} (originator_id, position, change)"
SQLITE_GUARDS = {
    "tasktrail_guard_update": (
        f"CREATE TRIGGER tasktrail_guard_update AFTER UPDATE ON stored_events {_UNSANCTIONED} BEGIN"
        f" {_RECORD} VALUES (OLD.originator_id, OLD.originator_version, 'update');"
        f" {_RECORD} SELECT NEW.originator_id, NEW.originator_version, 'update' WHERE"
        " NEW.originator_id IS NOT OLD.originator_id OR NEW.originator_version IS NOT OLD.originator_version; END"),
    "tasktrail_guard_delete": (
        f"CREATE TRIGGER tasktrail_guard_delete AFTER DELETE ON stored_events {_UNSANCTIONED} BEGIN"
        f" {_RECORD} VALUES (OLD.originator_id, OLD.originator_version, 'delete'); END"),
    # INSERT OR REPLACE deletes the row it replaces without firing the delete trigger: caught before it.
    "tasktrail_guard_replace": (
        "CREATE TRIGGER tasktrail_guard_replace BEFORE INSERT ON stored_events WHEN EXISTS (SELECT 1 FROM"
        " stored_events WHERE originator_id = NEW.originator_id AND originator_version = NEW.originator_version)"
        f" AND NOT EXISTS (SELECT 1 FROM {REWRITING}) BEGIN"
        f" {_RECORD} VALUES (NEW.originator_id, NEW.originator_version, 'replace'); END"),
}
"""The SQLite triggers that fill the edit journal, by name, exactly as ``sqlite_master`` holds them: a read
holds the ledger's triggers to this text (a dropped or altered one refuses every task)."""
