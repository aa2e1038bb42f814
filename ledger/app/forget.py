"""Forgetting a task: its content leaves every store irreversibly; a tombstone stays.

Order, so that an interruption at any point is finished by running the same command again
(each step ends at a crash point, ``forget:<step>``, that tests kill the process at):

1. ``tombstoned``: the registry records a ``TaskForgotten`` tombstone (number, id, sha256 of
   the title, when, by whom): from here on the task is gone from `trail list`, and the
   ledger's own log says that, when and by whom it was forgotten;
2. ``journaled``: what of the task lives outside its event rows (archive files, sessions,
   diff blobs, sha256 of its source keys) is read from its events and written to a journal,
   ``$TRAIL_HOME/forgetting/<task id>.json``, before anything is deleted: the rows that tell
   where those traces are go in step 4, so a re-run reads the journal instead. The journal
   holds ids, hashes and paths, never content. An archive that is missing or unreadable is
   noted (its events' keys are lost) and never stops the forget;
3. ``archives-removed``: the archive files (and this machine's cached copies), found by the
   journal and by the task's number in the file names, go *before* the index rows that find them;
4. ``rows-deleted``: in one transaction of the ledger's store (``LedgerStore.delete_task``):
   the task's events and snapshots, its archive index rows (on PostgreSQL with the archives'
   bytes) and the registry's snapshots (which hold titles) are deleted, its registry entry is
   rewritten without title or slug, and the hashes of its source keys are kept, so a
   re-import skips those records;
5. ``scrubbed``: ``reclaim_space(scrub=True)``: SQLite deletes with ``secure_delete`` (freed
   pages are zeroed), the WAL is checkpointed and truncated, and the file is vacuumed;
   PostgreSQL tables are rewritten with ``VACUUM FULL``;
6. the files around the ledger, one step each: ``readmodel-removed`` (the DuckDB read model,
   rebuilt on next use), ``briefs-removed`` (the brief cache, refilled by the next resume),
   ``blobs-removed`` (its diff baselines), ``deadletters-removed`` (dead letters of its
   sessions), ``inbox-cleared`` (capture inbox rows of its sessions), ``pointer-cleared``
   (active-task pointers); then the journal goes.

Limits, in docs/lifecycle.md: branches of a task are tasks of their own (forget them
too); PostgreSQL's own write-ahead log and backups are the server's to expire.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import orjson
from eventsourcing.utils import TopicError

from ledger.app import refs
from ledger.app.briefcache import cache_file
from ledger.app.store import Ledger
from ledger.app.verify import LedgerBroken, verify_registry
from ledger.base import private
from ledger.base.crashpoints import crash_point
from ledger.base.errors import NotFound, TrailError
from ledger.base.location import Location, inbox_path
from ledger.base.schema import key_hash
from ledger.domain import events as ev
from ledger.domain.registry import Entry, Tombstone, erase
from ledger.stores import archived as archive
from ledger.stores.base import Archive

FORGOTTEN_TITLE = "[forgotten]"
JOURNALS = "forgetting"
"""The folder under ``$TRAIL_HOME`` that holds the journal of each forget under way."""
STEPS = ("tombstoned", "journaled", "archives-removed", "rows-deleted", "scrubbed", "readmodel-removed",
         "briefs-removed", "blobs-removed", "deadletters-removed", "inbox-cleared", "pointer-cleared")
"""The crash points of ``forget``, in order (``crash_point(f"forget:{step}")``)."""


@dataclass(frozen=True)
class Forgotten:
    tombstone: Tombstone
    events: int
    files_removed: int
    lost: tuple[str, ...] = ()
    """Archives that could not be read: what their events named (source keys, sessions, blobs) is not known."""


@dataclass(frozen=True)
class _Traces:
    """What of the task lives outside its event rows, found before the rows go (the journal's content)."""

    sessions: frozenset[str]
    blobs: frozenset[str]
    archives: tuple[Path, ...]
    keys: frozenset[str]
    """sha256 of each source key the task's events held (``ledger.base.schema.key_hash``)."""
    lost: tuple[str, ...]

    def dump(self) -> bytes:
        return orjson.dumps({
            "sessions": sorted(self.sessions), "blobs": sorted(self.blobs), "keys": sorted(self.keys),
            "archives": [str(p) for p in self.archives], "lost": list(self.lost),
        })

    @classmethod
    def load(cls, raw: bytes) -> _Traces:
        data = orjson.loads(raw)
        return cls(frozenset(data["sessions"]), frozenset(data["blobs"]), tuple(Path(p) for p in data["archives"]),
                   frozenset(data["keys"]), tuple(data["lost"]))


def _readable_events(ledger: Ledger, task_id: UUID, found: list[Archive], lost: list[str]) -> Iterator[ev.TaskEvent]:
    """Every event of the task that can still be read: each of its archives ``found`` on its own, then the live log."""
    for part in found:
        if not part.path.exists():
            lost.append(f"archive {part.path} (positions {part.first}-{part.last}) is missing")
            continue
        import duckdb  # only a compacted task pays for loading it

        try:
            # Listed whole before yielding, so a file that breaks halfway adds nothing twice.
            yield from list(archive.archived_events(ledger, task_id, part.first - 1, part.last, [part]))
        except (TrailError, ValueError, TopicError, duckdb.Error) as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            lost.append(f"archive {part.path} (positions {part.first}-{part.last}) cannot be read: {reason}")
    yield from ledger.events.get(task_id, gt=found[-1].last if found else None)  # type: ignore[misc]


def _traces(ledger: Ledger, task_id: UUID) -> _Traces:
    sessions: set[str] = set()
    blobs: set[str] = set()
    keys: set[str] = set()
    lost: list[str] = []
    found = archive.archives(ledger, task_id)
    for event in _readable_events(ledger, task_id, found, lost):
        if isinstance(event, ev.ConversationLinked):
            sessions.add(event.session_id)
        elif isinstance(event, ev.FileChanged):
            blobs.update(h for h in (event.before_sha256, event.after_sha256) if h)
        if event.source is not None:
            sessions.add(event.source.session)
            keys.add(key_hash((event.source.agent, event.source.session, event.source.record)))
    paths = [p for part in found for p in (part.path, part.path.with_suffix(".manifest.json"))]
    return _Traces(frozenset(sessions), frozenset(blobs), tuple(paths), frozenset(keys), tuple(lost))


def journal_path(location: Location, task_id: UUID) -> Path:
    return location.home / JOURNALS / f"{task_id}.json"


def _being_written(journal: Path) -> Path:
    return journal.with_name(f".{journal.name}.tmp")


def _journaled(ledger: Ledger, location: Location, task_id: UUID) -> _Traces:
    """The task's traces: from the journal of an interrupted forget, else read now and journaled first."""
    path = journal_path(location, task_id)
    if path.is_file():
        # Written before the first deletion, so it holds all a later read could find, and more.
        return _Traces.load(path.read_bytes())
    traces = _traces(ledger, task_id)
    private.folder(path.parent)
    tmp = _being_written(path)
    with tmp.open("wb") as handle:
        handle.write(traces.dump())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)  # whole or absent: a torn journal would lose the traces for good
    return traces


def _tombstoned_entry(raw: bytes, number: int) -> bytes | None:
    """The registry row for task ``number`` rewritten without its title and slug (None: not that row)."""
    state = orjson.loads(raw)
    entry = state.get("entry") or {}
    if entry.get("number") != number:
        return None
    return orjson.dumps(erase(state, FORGOTTEN_TITLE, f"forgotten-{number}"))  # the hashes keep the chain


def _remove(path: Path) -> int:
    try:
        path.unlink()
        return 1
    except FileNotFoundError:
        return 0


def _remove_archives(ledger: Ledger, number: int, traces: _Traces) -> int:
    """The journal's archive files, and any file named for the task's number in the archive folder
    (``task-N-FIRST-LAST.parquet``, its manifest, temporary files of a compaction or a cache fetch)."""
    directory = archive.archive_dir(ledger)
    named = [*directory.glob(f"task-{number}-*"), *directory.glob(f".task-{number}-*")] if directory.is_dir() else []
    return sum(_remove(p) for p in {*traces.archives, *named})


def _remove_read_model(location: Location) -> int:
    from projections.readmodel import readmodel_path

    model = readmodel_path(location)  # rebuilt from the ledger on next use: no forgotten row survives
    found = [model, model.with_name(model.name + ".wal")]
    if location.is_sqlite:  # find's index of it (ledger.app.findindex), filled again by the next find
        from ledger.app.findindex import index_files

        found += [Path(p) for p in index_files(os.path.realpath(location.sqlite_path))]
    return sum(_remove(p) for p in found)


def _remove_brief_cache(location: Location) -> int:
    """The brief cache (``ledger.app.briefcache``) holds whole briefs of recent tasks; it refills on the next resume."""
    if not location.is_sqlite:
        return 0  # only an SQLite ledger's briefs are cached
    return _remove(Path(cache_file(os.path.realpath(location.sqlite_path))))


def _remove_blobs(location: Location, traces: _Traces) -> int:
    blobs = location.home / "blobs"
    return sum(_remove(blobs / digest[:2] / digest) for digest in traces.blobs)


def _remove_dead_letters(location: Location, traces: _Traces) -> int:
    removed = 0
    deadletters = location.home / "deadletter"
    if traces.sessions and deadletters.is_dir():
        for letter in deadletters.glob("*.json"):
            text = letter.read_text(errors="replace")
            if any(session in text for session in traces.sessions):
                removed += _remove(letter)
    return removed


def _clear_inbox(location: Location, traces: _Traces) -> None:
    inbox = inbox_path(location)  # the hook's queue: the ledger file, or a local file for a server ledger
    if not traces.sessions or not inbox.is_file():
        return
    con = sqlite3.connect(inbox, timeout=30)
    try:
        with con:
            for session in traces.sessions:
                con.execute("DELETE FROM capture_inbox WHERE json_extract(payload, '$.session_id') = ?", (session,))
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
    finally:
        con.close()


def forget(
    ledger: Ledger, location: Location, entry: Entry | Tombstone, by: str,
    progress: Callable[[str], None] | None = None,
) -> Forgotten:
    """Forget one task (an ``Entry``, or a ``Tombstone`` whose forget was interrupted)."""
    say = progress or (lambda _: None)
    number, task_id = entry.number, entry.task_id
    if isinstance(entry, Entry):
        tombstone = Tombstone(
            number=number, task_id=task_id, at=datetime.now(UTC), by=by,
            title_sha256=hashlib.sha256(entry.title.encode()).hexdigest(),
        )
        ledger.mark_forgotten(tombstone)
        say(f"#{number}: tombstone recorded")
    else:
        tombstone = entry
    crash_point("forget:tombstoned")
    traces = _journaled(ledger, location, task_id)
    crash_point("forget:journaled")
    removed = _remove_archives(ledger, number, traces)
    crash_point("forget:archives-removed")
    deleted = ledger.store.delete_task(task_id, number, traces.keys, lambda raw: _tombstoned_entry(raw, number))
    ledger.views.forget(task_id)
    crash_point("forget:rows-deleted")
    ledger.store.reclaim_space(scrub=True)  # no byte of the deleted rows stays readable in the files
    crash_point("forget:scrubbed")
    say(f"#{number}: {deleted} events deleted and scrubbed")
    removed += _remove_read_model(location)
    crash_point("forget:readmodel-removed")
    removed += _remove_brief_cache(location)
    crash_point("forget:briefs-removed")
    removed += _remove_blobs(location, traces)
    crash_point("forget:blobs-removed")
    removed += _remove_dead_letters(location, traces)
    crash_point("forget:deadletters-removed")
    _clear_inbox(location, traces)
    crash_point("forget:inbox-cleared")
    refs.clear(location, task_id)
    crash_point("forget:pointer-cleared")
    journal = journal_path(location, task_id)
    _remove(journal)
    _remove(_being_written(journal))  # left by a kill while it was written
    if journal.parent.is_dir() and not any(journal.parent.iterdir()):
        journal.parent.rmdir()
    say(f"#{number}: {removed} files removed")
    return Forgotten(tombstone, deleted, removed, traces.lost)


def check_registry(ledger: Ledger) -> None:
    """Refuse (``LedgerBroken``, exit 5) to act on a task list that does not verify: a forged
    tombstone or entry would otherwise choose which live task's content is deleted."""
    found = verify_registry(ledger).first_break
    if found is not None:
        raise LedgerBroken(f"the task list is broken at position {found.position} ({found.kind}: {found.detail}); "
                           "nothing forgotten; run `trail verify`")


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


def unfinished(ledger: Ledger, location: Location) -> list[Tombstone]:
    """Tombstones whose forget was interrupted: a journal is left, or the task still has stored events."""
    return [
        t for t in ledger.tombstones()
        if journal_path(location, t.task_id).is_file() or next(iter(ledger.events.get(t.task_id, limit=1)), None)
    ]
