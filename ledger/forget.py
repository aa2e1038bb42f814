"""Forgetting a task: its content leaves every store irreversibly; a tombstone stays.

Order, so that an interruption is finished by running the same command again:

1. the registry records a ``TaskForgotten`` tombstone (number, id, sha256 of the title,
   when, by whom): from here on the task is gone from `trail list`, and the ledger's
   own log says that, when and by whom it was forgotten;
2. in one transaction of the ledger's store (``LedgerStore.delete_task``): the task's
   events and snapshots are deleted, its registry entry is rewritten without title or
   slug, the registry's snapshots (which hold titles) are deleted, its archive index rows
   go, and a sha256 of each source key it held is kept, so a re-import skips those records;
3. the bytes are scrubbed (``reclaim_space(scrub=True)``): SQLite deletes with
   ``secure_delete`` (freed pages are zeroed), the WAL is checkpointed and truncated, and
   the file is vacuumed; PostgreSQL tables are rewritten with ``VACUUM FULL``;
4. the files around the ledger: archives, the DuckDB read model (rebuilt on next use),
   the diff blob cache, capture inbox rows and dead letters of its sessions, and the
   active-task pointer.

Limits, in docs/lifecycle.md: branches of a task are tasks of their own (forget them
too); PostgreSQL's own write-ahead log and backups are the server's to expire.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import orjson

from ledger import archive, refs
from ledger import events as ev
from ledger.capture.inbox import inbox_path
from ledger.errors import NotFound
from ledger.location import Location
from ledger.registry import Entry, Tombstone
from ledger.store import Ledger
from ledger.stores.base import key_hash

FORGOTTEN_TITLE = "[forgotten]"


@dataclass(frozen=True)
class Forgotten:
    tombstone: Tombstone
    events: int
    files_removed: int


@dataclass(frozen=True)
class _Traces:
    """What of the task lives outside its event rows, found before the rows go."""

    sessions: frozenset[str]
    blobs: frozenset[str]
    archives: tuple[Path, ...]
    keys: frozenset[str]
    """sha256 of each source key the task's events held (``stores.base.key_hash``)."""


def _traces(ledger: Ledger, task_id: UUID) -> _Traces:
    sessions: set[str] = set()
    blobs: set[str] = set()
    keys: set[str] = set()
    for event in ledger.task_events(task_id):
        if isinstance(event, ev.ConversationLinked):
            sessions.add(event.session_id)
        elif isinstance(event, ev.FileChanged):
            blobs.update(h for h in (event.before_sha256, event.after_sha256) if h)
        if event.source is not None:
            sessions.add(event.source.session)
            keys.add(key_hash((event.source.agent, event.source.session, event.source.record)))
    paths: list[Path] = []
    for found in archive.archives(ledger, task_id):
        paths += [found.path, found.path.with_suffix(".manifest.json")]
    return _Traces(frozenset(sessions), frozenset(blobs), tuple(paths), frozenset(keys))


def _tombstoned_entry(raw: bytes, number: int) -> bytes | None:
    """The registry row for task ``number`` rewritten without its title and slug (None: not that row)."""
    state = orjson.loads(raw)
    entry = state.get("entry") or {}
    if entry.get("number") != number:
        return None
    state["entry"] = {**entry, "title": FORGOTTEN_TITLE, "slug": f"forgotten-{number}"}
    return orjson.dumps(state)


def _remove(path: Path) -> int:
    try:
        path.unlink()
        return 1
    except FileNotFoundError:
        return 0


def _scrub_files(ledger: Ledger, location: Location, traces: _Traces) -> int:
    removed = sum(_remove(p) for p in traces.archives)
    from projections.readmodel import readmodel_path

    model = readmodel_path(location)  # rebuilt from the ledger on next use: no forgotten row survives
    removed += sum(_remove(p) for p in (model, model.with_name(model.name + ".wal")))
    blobs = location.home / "blobs"
    removed += sum(_remove(blobs / digest[:2] / digest) for digest in traces.blobs)
    deadletters = location.home / "deadletter"
    if deadletters.is_dir():
        for letter in deadletters.glob("*.json"):
            text = letter.read_text(errors="replace")
            if any(session in text for session in traces.sessions):
                removed += _remove(letter)
    inbox = inbox_path(location)  # the hook's queue: the ledger file, or a local file for a server ledger
    if traces.sessions and inbox.is_file():
        con = sqlite3.connect(inbox, timeout=30)
        try:
            with con:
                for session in traces.sessions:
                    con.execute(
                        "DELETE FROM capture_inbox WHERE json_extract(payload, '$.session_id') = ?", (session,)
                    )
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
        finally:
            con.close()
    return removed


def forget(
    ledger: Ledger, location: Location, entry: Entry | Tombstone, by: str,
    progress: Callable[[str], None] | None = None,
) -> Forgotten:
    """Forget one task (an ``Entry``, or a ``Tombstone`` whose wipe was interrupted)."""
    say = progress or (lambda _: None)
    traces = _traces(ledger, entry.task_id)
    if isinstance(entry, Entry):
        tombstone = Tombstone(
            number=entry.number, task_id=entry.task_id, at=datetime.now(UTC), by=by,
            title_sha256=hashlib.sha256(entry.title.encode()).hexdigest(),
        )
        ledger.mark_forgotten(tombstone)
        say(f"#{entry.number}: tombstone recorded")
    else:
        tombstone = entry
    deleted = ledger.store.delete_task(
        entry.task_id, entry.number, traces.keys, lambda raw: _tombstoned_entry(raw, entry.number)
    )
    ledger.store.reclaim_space(scrub=True)  # no byte of the deleted rows stays readable in the files
    say(f"#{entry.number}: {deleted} events deleted and scrubbed")
    removed = _scrub_files(ledger, location, traces)
    refs.clear(location, entry.task_id)
    say(f"#{entry.number}: {removed} files removed")
    return Forgotten(tombstone, deleted, removed)


def stale(ledger: Ledger, cutoff: datetime) -> list[Entry]:
    """Tasks whose last event is older than ``cutoff``."""
    found = []
    for entry in ledger.entries():
        updated = ledger.state(entry.task_id).updated_at
        if updated is not None and updated < cutoff:
            found.append(entry)
    return found


def pending(ledger: Ledger, number: int) -> Tombstone:
    """The tombstone of task ``number``, to finish a forget that was interrupted."""
    for tombstone in ledger.tombstones():
        if tombstone.number == number:
            return tombstone
    raise NotFound(f"no task #{number}, forgotten or not")
