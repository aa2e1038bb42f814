"""The ``LedgerStore`` interface: what the lifecycle needs from a ledger's database beyond the library.

The ``eventsourcing`` library's recorders append and read events and snapshots; they have no
way to remove or rewrite rows, to find events by what their payload says, or to give space
back. Those operations live here, one module per backend (``sqlite.py``, ``postgres.py``),
as the library keeps one module per backend behind its recorder interfaces. Compaction
(``ledger.app.archive``), payload collection (``ledger.app.artifacts``), forgetting (``ledger.app.forget``),
migration (``ledger.app.migrate``) and the capture index (``ledger.capture.writer``) are written
against this interface only; ``tests/test_store_conformance.py`` runs the same checks on each
backend.

Rows are the library's ``StoredEvent`` (id, position, topic, the state bytes), so everything
here moves bytes as stored: hash chains never depend on a backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from ledger.base.schema import LINKED_TOPIC, Key

if TYPE_CHECKING:
    from ledger.base.location import Location

UNBOUNDED = 2**63 - 1
"""The bound a query on positions is given for "no bound" (the largest integer both backends store): a bound
parameter keeps the index's range, where ``position <= coalesce(?, position)`` made a time-travel read to an early
point read every later view snapshot (0.7 s on a task of a million events)."""

GC_TOPICS = ("tasktrail/CommandRan", "tasktrail/FileChanged", "tasktrail/ToolResult", "tasktrail/ToolCalled")
"""Event types that carry bulky bounded text (outputs, diffs, tool inputs and results)."""


@dataclass(frozen=True)
class Archive:
    """An archive of a task's compacted positions ``first..last``: a Parquet file and its index row."""

    task_id: UUID
    first: int
    last: int
    path: Path
    """Where the Parquet file is read from on this machine."""
    sha256: str
    head: str
    """The hash-chain head at ``last``."""
    events: int


@dataclass(frozen=True)
class Head:
    """What the anchor holds of an aggregate: its last position and the chain hash there
    (empty for a registry whose last event predates its chain)."""

    version: int
    chain: str


Plain = Callable[[bytes], bytes]
"""A stored payload's JSON bytes from its stored bytes (``PydanticMapper.plain``: deciphered on an encrypted ledger)."""


def heads_of(stored_events: Iterable[StoredEvent], plain: Plain | None = None) -> list[tuple[str, int, str]]:
    """(id hex, position, chain) of the last event of each aggregate in one append, for the anchor's upsert.

    One decode per aggregate per transaction (the last event's state), however many events it holds."""
    last: dict[str, StoredEvent] = {}
    for stored in stored_events:
        key = stored.originator_id.hex if isinstance(stored.originator_id, UUID) else str(stored.originator_id)
        if key not in last or stored.originator_version > last[key].originator_version:
            last[key] = stored
    return [(key, s.originator_version, chain_of(s.state, plain)) for key, s in last.items()]


def refill(last_rows: list[tuple[Any, int, str]], registry_key: object) -> list[tuple[Any, int, str]]:
    """The anchor rows to start a new anchor table with, from each aggregate's last row (id, position,
    chain): all of them for a ledger from before the anchor; none when the registry's last event is
    chained, for that ledger had anchors (a version that chains the registry anchors every insert),
    so its table was dropped outside tasktrail and refilling it from the log would hide a cut."""
    if any(key == registry_key and hashed for key, _, hashed in last_rows):
        return []
    return last_rows


def chain_of(state: bytes, plain: Plain | None = None) -> str:
    """The ``chain`` field of a stored state ("" when it has none or cannot be read)."""
    try:
        found = orjson.loads(plain(state) if plain is not None else state)
    except (orjson.JSONDecodeError, ValueError):
        return ""
    return str(found.get("chain") or "") if isinstance(found, dict) else ""


Source = tuple[UUID, int, str, str, str]
"""A row of the capture index (``schema.SOURCES``): task id, position, agent, session, record."""

_HAS_SOURCE = b'"source":{'


def sources_of(stored_events: Iterable[StoredEvent], plain: Plain | None) -> list[Source]:
    """The capture index rows of events stored without the writer's (``Ledger._save`` hands them over): a
    migration's copies, the library's own save. Read from their JSON; none on an encrypted ledger (``SOURCES``)."""
    if plain is not None:
        return []
    found: list[Source] = []
    for stored in stored_events:
        if (key := source_in(stored.state)) is not None:
            owner = stored.originator_id
            found.append((owner if isinstance(owner, UUID) else UUID(str(owner)), stored.originator_version, *key))
    return found


def source_in(state: bytes) -> Key | None:
    """The source of one stored JSON payload (a rewrite checks it kept its row's)."""
    if _HAS_SOURCE not in state:
        return None
    return key_in(orjson.loads(state))


def key_in(state: Any) -> Key | None:
    """The source key a decoded event payload names, if it has one."""
    source = state.get("source") if isinstance(state, dict) else None
    if not isinstance(source, dict):
        return None
    return str(source.get("agent")), str(source.get("session")), str(source.get("record"))


def past_prefix(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (None: no bound), in code point order,
    which is the byte order of UTF-8 (SQLite's BINARY collation, PostgreSQL's "C"): a prefix as a range."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None


@dataclass(frozen=True)
class Range:
    """A task's stored rows about to be archived."""

    events: list[tuple[int, StoredEvent]]
    """Positions ``first..last`` in order, each with its notification id."""
    snapshots: list[StoredEvent]
    """The task's snapshots before ``last``."""


class LedgerStore(ABC):
    """Operations on one ledger's database that the library's recorders do not offer."""

    backend: str
    """``sqlite`` or ``postgres``."""

    # -- who sees what (PostgreSQL's row-level security, ``pgaccess``) -----------------------

    def sees_all(self) -> bool:
        """Whether this connection sees every row: always on a file, whose only reader is its owner."""
        return True

    def task_projects(self) -> dict[UUID, str]:
        """Each task's project as the access policies know it: none on a file, which has no policies."""
        return {}

    def next_number(self) -> int:
        """The ledger's next free task number, whatever this connection may see (only asked when it
        does not see everything)."""
        raise NotImplementedError

    cipher: tuple[Plain, Plain] | None = None
    """On an encrypted ledger (``ledger.base.atrest``): (plain, sealed), a payload's JSON from its stored
    bytes and back (``PydanticMapper.plain``/``sealed``), set by ``Ledger.store``. Then a rewrite is given
    and returns JSON, and the capture index decodes rows in Python (``_scan``): SQL cannot read an
    enciphered payload."""

    def _through(self, rewrite: Callable[[bytes], bytes | None]) -> Callable[[bytes], bytes | None]:
        """``rewrite`` (JSON in, JSON or None out) over stored bytes."""
        if self.cipher is None:
            return rewrite
        plain, sealed = self.cipher

        def stored(raw: bytes) -> bytes | None:
            changed = rewrite(plain(raw))
            return None if changed is None else sealed(changed)

        return stored

    def _plain(self) -> Plain | None:
        return self.cipher[0] if self.cipher is not None else None

    def _scan(self, task_id: UUID | None, topic: str | None, upto: int | None) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id hex, decoded state) of each live event of the task (every task's when None), of ``topic`` (any when
        None), at positions ``<= upto``, newest first: the capture index of an encrypted ledger."""
        plain = self._plain()
        assert plain is not None
        for owner, raw in self._rows_newest_first(task_id, topic, upto):
            state = orjson.loads(plain(raw))
            if isinstance(state, dict):
                yield owner, state

    def _rows_newest_first(self, task_id: UUID | None, topic: str | None, upto: int | None
                           ) -> Iterator[tuple[str, bytes]]:
        """(id hex, stored state) of the live events ``_scan`` names, by notification id descending."""
        raise NotImplementedError

    def _scanned_source_keys(self, task_id: UUID, upto: int) -> set[Key]:
        found: set[Key] = set()
        for _, state in self._scan(task_id, None, upto):
            if (key := key_in(state)) is not None:
                found.add(key)
        return found

    def _scanned_session(self, agent: str, session_id: str) -> UUID | None:
        for owner, state in self._scan(None, LINKED_TOPIC, None):
            if state.get("agent") == agent and state.get("session_id") == session_id:
                return UUID(hex=owner)
        return None

    def _scanned_records(self, agent: str, records: list[str]) -> UUID | None:
        wanted = set(records)
        for owner, state in self._scan(None, None, None):
            source = state.get("source")
            if isinstance(source, dict) and source.get("agent") == agent and source.get("record") in wanted:
                return UUID(hex=owner)
        return None

    # -- archives of compacted events --------------------------------------------------

    @abstractmethod
    def archives(self, task_id: UUID | None) -> list[Archive]:
        """The task's archives (every task's when None), by task and position; none if never compacted.

        Each ``path`` is a readable local file when the archive is intact; a missing or
        altered one is left for ``archived.check_file`` to report."""

    @abstractmethod
    def archive_dir(self) -> Path:
        """The local folder compaction writes new archive files into (created by the caller)."""

    @abstractmethod
    def range_size(self, task_id: UUID, first: int, last: int) -> tuple[int, int, int]:
        """(events in ``first..last``, snapshots before ``last``, bytes of their stored state)."""

    @abstractmethod
    def read_range(self, task_id: UUID, first: int, last: int) -> Range:
        """The live rows of positions ``first..last`` and the snapshots before ``last``."""

    @abstractmethod
    def commit_archive(
        self, archive: Archive, snapshot: StoredEvent, marker: StoredEvent, before_commit: Callable[[], None]
    ) -> bool:
        """In ONE transaction: record ``archive`` (and keep its file where the backend keeps
        archives), store ``snapshot`` (at ``archive.last``), append ``marker`` (the
        ``EventsArchived`` event), delete the live events ``first..last`` and the task's
        snapshots before ``last``. ``before_commit`` runs last inside the transaction.

        False, and nothing changed, when an archive reaching ``last`` is already recorded.
        Raises the library's ``IntegrityError`` when another writer took the marker's position."""

    @abstractmethod
    def put_archive(self, archive: Archive) -> None:
        """Record an archive copied from another ledger (its file at ``archive.path``), events untouched."""

    # -- the head anchor -----------------------------------------------------------------

    @abstractmethod
    def head(self, task_id: UUID) -> Head | None:
        """The anchor's head of one aggregate; None when the ledger keeps no anchor for it (an
        older ledger, or rows written past the recorder)."""

    # -- snapshots of the view (a cache beside the ledger) -----------------------------------

    @abstractmethod
    def view_snapshot(self, task_id: UUID, upto: int | None, fold_version: int) -> tuple[int, bytes] | None:
        """The task's latest view snapshot at a position ``<= upto`` (any when None) made by
        ``fold_version``, as (position, bytes); None when there is none (or no table yet)."""

    @abstractmethod
    def put_view_snapshot(self, task_id: UUID, position: int, fold_version: int, state: bytes) -> None:
        """Keep a view snapshot, replacing one at the same (task, position, fold version). Reads call it, so it
        never waits for a lock: held elsewhere, it raises the library's ``PersistenceError`` at once."""

    @abstractmethod
    def drop_view_snapshots(self, task_id: UUID, first: int = 0, last: int | None = None) -> int:
        """Delete the task's view snapshots at positions ``first..last`` (to its end when None),
        of every fold version; how many went."""

    # -- the edit journal (``ledger.base.schema.EDITS``) -------------------------------------

    @abstractmethod
    def changed_outside(self, task_id: UUID) -> tuple[int, str] | None:
        """The task's lowest position the database's edit journal records a change of (an update, delete or
        replace not made by tasktrail's own rewrites), with that change; ``(0, "guard")`` when the journal's
        triggers are not as tasktrail installed them (dropped, altered, disabled, or held off); None when
        neither, or when the ledger has no journal (one from before it this process could not add it to)."""

    # -- rewriting and deleting rows ------------------------------------------------------

    @abstractmethod
    def rewrite_states(
        self, task_id: UUID | None, topics: Iterable[str], rewrite: Callable[[bytes], bytes | None], dry_run: bool
    ) -> dict[UUID, int]:
        """In one transaction, replace the state of each live event of ``topics`` (of one task, or all)
        by ``rewrite(state)`` where that is not None, and delete each touched task's snapshots and
        view snapshots from its first rewritten position on. Returns, per task touched, its last position.
        ``dry_run`` calls ``rewrite`` on every row and changes nothing."""

    @abstractmethod
    def delete_task(
        self, task_id: UUID, number: int, key_hashes: Iterable[str], registry_rewrite: Callable[[bytes], bytes | None]
    ) -> int:
        """In one transaction: delete the task's events, snapshots, view snapshots and archive index rows (and the
        archive files the database keeps); pass each ``TaskRegistered`` row of the registry
        through ``registry_rewrite`` (None: unchanged); delete the registry's snapshots (they
        hold titles); keep ``key_hashes`` tombstoned under ``number``.
        Returns how many events were deleted (0 on a re-run)."""

    # -- tombstoned source keys -----------------------------------------------------------

    @abstractmethod
    def forgotten(self, hashes: Iterable[str]) -> dict[str, int]:
        """Of these key hashes, those a forgotten task held, with that task's number."""

    @abstractmethod
    def tombstoned_keys(self) -> dict[str, int]:
        """Every tombstoned key hash with its task's number (to carry them to another ledger)."""

    @abstractmethod
    def tombstone_keys(self, hashes: dict[str, int]) -> None:
        """Keep these key hashes tombstoned (hash -> task number)."""

    # -- the capture index -------------------------------------------------------------------

    def held_keys(self, task_id: UUID, upto: int, keys: Iterable[Key]) -> set[Key]:
        """Of ``keys``, those a live event of the task at a position ``<= upto`` was sourced from (a write's
        dedupe of its batch): a look-up per key in the capture index (``schema.SOURCES``), or, without one, a
        read of every source of the task."""
        wanted = set(keys)
        if not wanted:
            return set()
        if self.cipher is None and self._indexed():
            return self._held(task_id, upto, wanted)
        return self._every_key(task_id, upto) & wanted

    def session_records(self, task_id: UUID, upto: int, agent: str, session: str, prefix: str) -> set[str]:
        """The records starting with ``prefix`` of the task's live events at positions ``<= upto`` sourced from
        this agent's session (the prompts it has seen, its task list's changes)."""
        if self.cipher is None and self._indexed():
            return self._records(task_id, upto, agent, session, prefix)
        return {r for a, s, r in self._every_key(task_id, upto) if a == agent and s == session and r.startswith(prefix)}

    def task_for_records(self, agent: str, records: list[str]) -> UUID | None:
        """A task holding a live event sourced from one of ``records`` of ``agent``."""
        if not records:
            return None
        if self.cipher is not None:
            return self._scanned_records(agent, records)
        return self._task_of_records(agent, records, self._indexed())

    def _every_key(self, task_id: UUID, upto: int) -> set[Key]:
        return self._scanned_source_keys(task_id, upto) if self.cipher is not None else self._source_keys(task_id, upto)

    @abstractmethod
    def _indexed(self) -> bool:
        """Whether the capture index is built (a ledger from before it gets it on an open that may build it:
        ``base.upkeep``; until then every question reads the events)."""

    @abstractmethod
    def _held(self, task_id: UUID, upto: int, keys: set[Key]) -> set[Key]:
        """``held_keys`` from the capture index."""

    @abstractmethod
    def _records(self, task_id: UUID, upto: int, agent: str, session: str, prefix: str) -> set[str]:
        """``session_records`` from the capture index."""

    @abstractmethod
    def _task_of_records(self, agent: str, records: list[str], indexed: bool) -> UUID | None:
        """``task_for_records`` of a plain ledger: from the capture index, or (not ``indexed``) the events."""

    @abstractmethod
    def _source_keys(self, task_id: UUID, upto: int) -> set[Key]:
        """Every source of the task's live events at positions ``<= upto``, read from the stored JSON in SQL (a
        plain ledger without the capture index)."""

    @abstractmethod
    def topics(self, task_id: UUID, positions: Iterable[int]) -> dict[int, str]:
        """The topic of each of the task's live events at ``positions`` (the state is not read)."""

    @abstractmethod
    def topics_before(self, task_id: UUID, before: int, limit: int) -> list[tuple[int, str]]:
        """(position, topic) of the task's live events below ``before``, latest first, at most ``limit``."""

    @abstractmethod
    def task_for_session(self, agent: str, session_id: str) -> UUID | None:
        """The task whose live conversation link (``schema.LINKED_TOPIC``) names this session; the newest wins."""

    # -- space ----------------------------------------------------------------------------------

    @abstractmethod
    def reclaim_space(self, scrub: bool = False) -> None:
        """Give the space of deleted and rewritten rows back. ``scrub``: also leave none of their
        bytes readable in the database's files (forget)."""

    @abstractmethod
    def file_bytes(self) -> int | None:
        """Bytes the ledger's data takes on disk (the file and its WAL; the two tables with
        their indexes and TOAST on PostgreSQL)."""

    # -- whole ledgers (migrate) -----------------------------------------------------------------

    @classmethod
    @abstractmethod
    def exists(cls, location: Location) -> bool:
        """Whether ``location`` holds a ledger (nothing is created to find out)."""

    @classmethod
    @abstractmethod
    def staging_for(cls, target: Location) -> Location:
        """The place beside ``target`` where a copy is built before it is published (one per target,
        so what a killed run left there is found and cleared by the next)."""

    @classmethod
    def stage(cls, target: Location) -> Location:
        """The staging place for ``target``, emptied of any leftovers."""
        staging = cls.staging_for(target)
        cls.discard(staging)
        return staging

    @classmethod
    @abstractmethod
    def publish(cls, staging: Location, target: Location) -> None:
        """Make the verified copy at ``staging`` the ledger at ``target`` in one step (replacing any)."""

    @classmethod
    @abstractmethod
    def discard(cls, staging: Location) -> None:
        """Remove ``staging`` and everything in it."""
