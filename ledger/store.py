"""The ledger application: opens the event store and appends and reads task events.

Built on ``eventsourcing.application.Application`` with the pydantic mapper and orjson
transcoder from ``ledger.mapper``. SQLite is the zero-set-up default; snapshots of
each task are taken automatically every ``SNAPSHOT_EVERY`` events.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError, OperationalError, PersistenceError
from eventsourcing.utils import get_topic
from pydantic import ValidationError

from ledger import archive
from ledger import events as ev
from ledger.errors import BadInput, BadSetting, NotFound, StoreUnavailable
from ledger.location import Location
from ledger.mapper import OrjsonTranscoder, PydanticMapper
from ledger.project import project_of
from ledger.redact import redact_fields
from ledger.registry import REGISTRY_ID, Entry, Registry, Tombstone
from ledger.stores import LedgerStore, for_ledger
from ledger.task import Task, task_id_for
from projections.state import TaskState

SNAPSHOT_EVERY = 500
"""Events between automatic task snapshots (see bench/ for the measurement behind it).
Overridden by ``TRAIL_SNAPSHOT_EVERY`` in the environment or in the ``Ledger(env=...)``."""

RETRY_ATTEMPTS = 200
T = TypeVar("T")


class Ledger(Application[UUID]):
    name = "tasktrail"
    conflicts = 0
    """Write races lost (and retried) by this instance: the measure of contention."""
    snapshotting_intervals = {Task: SNAPSHOT_EVERY, Registry: 100}
    env = {
        "TRANSCODER_TOPIC": get_topic(OrjsonTranscoder),
        "MAPPER_TOPIC": get_topic(PydanticMapper),
        # Keep recent tasks in memory and read only their newer events on each command: a lost
        # write race then costs a few rows, not a replay from the last snapshot (up to 500 events,
        # ~20 ms); 8 processes x 500 appends to one task went from minutes to seconds (docs/backends.md).
        # Commands get a deep copy, so a failed save never leaves a dirty aggregate behind.
        "AGGREGATE_CACHE_MAXSIZE": "64",
    }

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        # Checked before the store opens, so a bad value leaves nothing open.
        raw = (env or {}).get("TRAIL_SNAPSHOT_EVERY", os.environ.get("TRAIL_SNAPSHOT_EVERY"))
        every = snapshot_interval(raw)
        super().__init__(env)
        if raw is not None and raw.strip():
            # Per instance, so K can differ between ledgers in one process (tests, bench/);
            # unset, the class attribute (or a subclass's) stands.
            self.snapshotting_intervals = {**type(self).snapshotting_intervals, Task: every}  # type: ignore[misc]

    @cached_property
    def store(self) -> LedgerStore:
        """What the lifecycle needs beyond the library's recorders (``ledger.stores``), for this backend."""
        return for_ledger(self)

    # -- writing ----------------------------------------------------------------

    def _retrying(self, command: Callable[[], T]) -> T:
        """Run ``command`` (which re-reads what it needs) until it wins any write race."""
        for attempt in range(RETRY_ATTEMPTS):
            try:
                return command()
            except ValidationError as exc:
                raise BadInput(_first_problem(exc)) from None
            except IntegrityError:
                # Another writer took this position; back off with jitter and re-read.
                self.conflicts += 1
                time.sleep(random.uniform(0, min(0.2, 0.002 * 2 ** min(attempt, 7))))
            except OperationalError as exc:
                if "locked" not in str(exc):
                    raise StoreUnavailable(f"ledger write failed: {exc}") from exc
                time.sleep(0.05 * (0.5 + random.random()))
        raise StoreUnavailable(f"gave up after {RETRY_ATTEMPTS} write conflicts")

    def _registry(self) -> Registry:
        try:
            registry: Registry = self.repository.get(REGISTRY_ID)
        except AggregateNotFoundError:
            registry = Registry.create()
        return registry

    def open_task(
        self,
        title: str,
        cwd: str | None = None,
        actor: str = "user",
        *,
        project: str | None = None,
        timestamp: datetime | None = None,
        first: Callable[[Task], None] | None = None,
    ) -> TaskState:
        """Register a new task under the next free number and append its opening event.

        ``project`` defaults to the project of ``cwd`` (``ledger.project``); ``timestamp`` to now.
        ``first`` records the task's first events on the new aggregate before it is saved, so the
        task, its registry entry and those events land in one transaction (an import killed
        midway never leaves an empty task behind for a re-run to duplicate)."""
        if project is None:
            project = project_of(cwd)
        title, cwd, project = redact_fields({"title": title, "cwd": cwd, "project": project}).values()

        def attempt() -> TaskState:
            registry = self._registry()
            number = registry.next_number()
            slug = registry.unique_slug(title)
            task = self._loaded(Task.open(number=number, title=title, slug=slug, cwd=cwd, actor=actor,
                                          project=project, timestamp=timestamp))
            if first is not None:
                first(task)
            registry.register(Entry(number=number, task_id=task.id, slug=slug, title=task.state.title))
            self.save(registry, task)  # one transaction: all or nothing
            return task.state

        return self._retrying(attempt)

    def branch(self, task_id: UUID, at: int, title: str, actor: str = "user") -> TaskState:
        """Start a new task whose history is this task's first ``at`` events (same positions,
        so provenance pointers stay valid), linked back to it. The original is left untouched."""
        title = redact_fields({"title": title})["title"]  # the copied history was redacted when recorded
        origin = self.state(task_id, at=at)
        history = list(self.task_events(task_id, after=1, upto=at))

        def attempt() -> TaskState:
            registry = self._registry()
            number = registry.next_number()
            slug = registry.unique_slug(title)
            task = self._loaded(Task.open(number=number, title=title, slug=slug, cwd=origin.cwd, actor=actor,
                                          project=origin.project))
            for event in history:
                fields = event.model_dump(exclude={"originator_id", "originator_version", "chain"})
                task.trigger_event(type(event), **fields)  # already valid once: copied as recorded
            task.record(ev.TaskLinked, relation="branched_from", other=task_id, other_number=origin.number,
                        actor=actor)
            registry.register(Entry(number=number, task_id=task.id, slug=slug, title=task.state.title))
            self.save(registry, task)
            return task.state

        return self._retrying(attempt)

    def append(self, task_id: UUID, event_class: type[ev.TaskEvent], **fields: Any) -> TaskState:
        """Append one event to a task; the Task aggregate checks its rules first."""
        return self.append_many(task_id, [(event_class, fields)])

    def append_many(
        self, task_id: UUID, items: list[tuple[type[ev.TaskEvent], dict[str, Any]]]
    ) -> TaskState:
        """Append several events to one task in one transaction (all or none)."""
        # Secrets never reach the log; redacted once, not on every retry of a lost write race.
        clean = [(event_class, redact_fields(fields)) for event_class, fields in items]

        def attempt() -> TaskState:
            task = self.task(task_id)
            for event_class, fields in clean:
                task.record(event_class, **fields)
            self.save(task)
            return task.state

        return self._retrying(attempt)

    # -- reading ----------------------------------------------------------------

    def mark_forgotten(self, tombstone: Tombstone) -> None:
        """Record in the registry that a task was forgotten (its entry goes, the tombstone stays)."""

        def attempt() -> None:
            registry = self._registry()
            if tombstone.number in registry.tombstones:
                return  # a re-run after an interrupted forget
            registry.forget(tombstone)
            self.save(registry)

        self._retrying(attempt)

    def tombstones(self) -> list[Tombstone]:
        """Every forgotten task's tombstone, by number."""
        registry = self._registry()
        return [registry.tombstones[n] for n in sorted(registry.tombstones)]

    def entries(self) -> list[Entry]:
        """Every registered task, by number."""
        registry = self._registry()
        return [registry.entries[n] for n in sorted(registry.entries)]

    def task(self, task_id: UUID, at: int | None = None) -> Task:
        # Below a compaction boundary the live store would silently answer with an older
        # version (pitfall 9), so those points are read from the archive.
        if at is not None and at < archive.live_from(self, task_id) - 1:
            return archive.task_at(self, task_id, at)
        try:
            task: Task = self.repository.get(task_id, version=at)
        except AggregateNotFoundError as exc:
            raise NotFound(f"no task with id {task_id}") from exc
        return self._loaded(task)

    def _loaded(self, task: Task) -> Task:
        task.snapshot_every = self.snapshotting_intervals.get(Task, 0)
        return task

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        # Tasks offer their snapshots from memory as they pass each K-th position (Task.trigger_event);
        # the library would rebuild each of those versions from the store (a fifth of append time).
        # Other aggregates (the small registry) the library's way.
        assert self.snapshots is not None
        offered: set[tuple[UUID, int]] = set()
        for aggregate in processing_event.aggregates.values():
            if due := aggregate.__dict__.pop("due_snapshots", None):
                self.snapshots.put(due)
                offered.update((s.originator_id, s.originator_version) for s in due)
        for event in processing_event.events:
            owner = processing_event.aggregates.get(event.originator_id)
            interval = self.snapshotting_intervals.get(type(owner)) if owner is not None else None
            key = (event.originator_id, event.originator_version)
            if interval and event.originator_version % interval == 0 and key not in offered:
                # Not offered from memory (the registry; a task's opening event): rebuild it from the store.
                self.take_snapshot(event.originator_id, version=event.originator_version)

    def state(self, task_id: UUID, at: int | None = None) -> TaskState:
        """The task's state after event ``at`` (the latest when None), from the nearest snapshot."""
        return self.task(task_id, at).state

    def task_events(self, task_id: UUID, after: int = 0, upto: int | None = None) -> Iterator[ev.TaskEvent]:
        """The task's events with ``after < position <= upto``, in order (archived ones included)."""
        live = archive.live_from(self, task_id)
        if after < live - 1:
            yield from archive.archived_events(self, task_id, after, live - 1 if upto is None else min(upto, live - 1))
            after = live - 1
        if upto is not None and upto <= after:
            return
        yield from self.events.get(task_id, gt=after or None, lte=upto)  # type: ignore[misc]

    def task_id(self, number: int) -> UUID:
        return task_id_for(number)


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or exc.title
    message = str(error["msg"]).removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {message}{more}"


def snapshot_interval(raw: str | None) -> int:
    """K, the events between task snapshots, from a ``TRAIL_SNAPSHOT_EVERY`` value (None: the default)."""
    if raw is None or not raw.strip():
        return SNAPSHOT_EVERY
    try:
        every = int(raw)
    except ValueError:
        every = 0
    if every < 1:
        raise BadSetting(f"TRAIL_SNAPSHOT_EVERY must be a positive whole number of events, not {raw!r}")
    return every


Create = Literal["path", "file", "nothing"]
"""What opening a missing SQLite ledger may create (``open_ledger``)."""

LEDGER_TABLES = frozenset({"stored_events", "capture_inbox"})
"""Tables only a tasktrail ledger file holds: the library's events, and the capture inbox, which
the hook may create before the library first opens the file."""


def open_ledger(location: Location, ledger_class: type[Ledger] = Ledger, *, create: Create = "path") -> Ledger:
    """Open the ledger at ``location``, or fail with one clear line and nothing created.

    ``create`` says what a missing SQLite ledger may bring into being: ``"path"`` its folders
    and file (the default location, created on first use), ``"file"`` the file in a folder that
    exists (a command that writes to a location named with ``--db``), ``"nothing"`` (a command
    that only reads one). A file that exists must be a tasktrail ledger, whatever ``create`` says.
    """
    # A bad setting fails every command, so it is named before anything about the location.
    snapshot_interval(os.environ.get("TRAIL_SNAPSHOT_EVERY"))
    if location.is_sqlite:
        path = location.sqlite_path
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(path),
            "SQLITE_LOCK_TIMEOUT": "30",
        }
        _check_sqlite_path(path, create)
    elif location.is_postgres:
        from ledger.stores import postgres  # psycopg loads only for PostgreSQL ledgers

        with postgres.setting_up(location) as target:
            return _construct(ledger_class, postgres.library_env(target), location)
    else:
        raise StoreUnavailable(
            f"unsupported ledger URL {location.display!r}; use a file path, sqlite:PATH or postgresql://..."
        )
    return _construct(ledger_class, env, location)


def _construct(ledger_class: type[Ledger], env: dict[str, str], location: Location) -> Ledger:
    try:
        return ledger_class(env=env)
    except (PersistenceError, sqlite3.Error, OSError) as exc:
        shown = location.sqlite_path if location.is_sqlite else location.display
        raise StoreUnavailable(f"cannot open ledger {shown}: {' '.join(str(exc).split())}") from exc


def _check_sqlite_path(path: Path, create: Create) -> None:
    """Refuse, before anything is written, a path that is not a ledger or may not become one."""
    if path.is_dir():
        raise StoreUnavailable(f"ledger path {path} is a directory; give a file path")
    if path.exists():
        with path.open("rb") as handle:
            header = handle.read(100)
        if header and not header.startswith(b"SQLite format 3\x00"):
            raise StoreUnavailable(f"{path} is not a tasktrail ledger (not an SQLite file)")
        tables = _sqlite_tables(path, header) if header else set()
        if tables and not tables & LEDGER_TABLES:
            # Another application's database: the library would add its tables to it.
            raise StoreUnavailable(f"{path} is not a tasktrail ledger (an SQLite database without its tables)")
        if not tables and create == "nothing":
            raise StoreUnavailable(
                f"no ledger at {path}: the file is empty (reads create nothing; `trail start` begins one)"
            )
        return
    if not path.parent.is_dir() and create != "path":
        # A mistyped --db names a folder that does not exist: create nothing, say so.
        if create == "nothing":
            raise StoreUnavailable(f"no ledger at {path}: no folder {path.parent}")
        raise StoreUnavailable(f"cannot create ledger in {path.parent}: no such folder")
    if create == "nothing":
        raise StoreUnavailable(f"no ledger at {path} (reads create nothing; `trail start` begins one)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.parent / f".{path.name}.probe"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise StoreUnavailable(f"cannot create ledger in {path.parent}: {exc.strerror or exc}") from exc


def _sqlite_tables(path: Path, header: bytes) -> set[str]:
    """The tables of an existing SQLite file, read without writing to it or beside it."""
    # Opened read-only, a WAL-mode file still gets -wal and -shm files made beside it; when it
    # has no -wal file its whole content is in the main file, which "immutable" reads alone.
    quiet = header[18:20] == b"\x02\x02" and not Path(f"{path}-wal").exists()
    uri = f"{path.resolve().as_uri()}?{'immutable=1' if quiet else 'mode=ro'}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=30)
        try:
            return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot read ledger {path}: {' '.join(str(exc).split())}") from exc
