"""The ledger application: opens the event store and appends and reads task events.

Built on ``eventsourcing.application.Application`` with the pydantic mapper and orjson
transcoder from ``ledger.domain.mapper``. SQLite is the zero-set-up default; snapshots of
each task are taken automatically every ``SNAPSHOT_EVERY`` events, and of each task's view
(``ledger.app.views``) by the reads and writes that fold past each such position.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar, cast
from uuid import UUID

import orjson
from eventsourcing.application import AggregateNotFoundError, Application, ProjectorFunction, project_aggregate
from eventsourcing.persistence import IntegrityError, OperationalError, PersistenceError
from eventsourcing.utils import get_topic
from pydantic import ValidationError

from ledger.app import verify
from ledger.app.history import LogHistory
from ledger.app.views import Views
from ledger.base import atrest, private
from ledger.base.errors import BadInput, BadSetting, NotFound, PermissionDenied, StoreUnavailable
from ledger.base.ledger_file import foreign_tables
from ledger.base.location import Location
from ledger.base.project import project_of
from ledger.domain import events as ev
from ledger.domain.mapper import OrjsonTranscoder, PydanticMapper
from ledger.domain.redact import Redactor, redact_fields
from ledger.domain.registry import REGISTRY_ID, Entry, Registry, Tombstone, head_of
from ledger.domain.snapshot import ModelSnapshot
from ledger.domain.task import Task, task_id_for
from ledger.stores import LedgerStore, archived, for_ledger
from projections.state import TaskState

SNAPSHOT_EVERY = 500
"""Events between automatic task snapshots (see bench/ for the measurement behind it).
Overridden by ``TRAIL_SNAPSHOT_EVERY`` in the environment or in the ``Ledger(env=...)``."""

RETRY_ATTEMPTS = 200
T = TypeVar("T")
R = TypeVar("R")

Item = tuple[type[ev.TaskEvent], dict[str, Any]]
"""An event to record: its class and its fields."""


@dataclass(frozen=True)
class Written:
    """Where a write left its task (its view is folded by ``Ledger.state``, or by a write passing a K-th position)."""

    id: UUID
    position: int
    """The position of the task's last event."""
    number: int


@dataclass(frozen=True)
class NewTask:
    """The target of a write that opens a task: its first event, ``TaskOpened``."""

    title: str
    cwd: str | None = None
    actor: str = "user"
    project: str | None = None
    """Where the task lives; the project of ``cwd`` (``ledger.base.project``) when None."""
    timestamp: datetime | None = None
    """When it began (an imported session's first record); now when None."""


class _Redacted:
    """A write's items, redacted once for all its attempts; and, when first asked, their values' ids."""

    def __init__(self, items: Iterable[Item]) -> None:
        items = list(items)
        # One for the whole write: patterns looked up once, repeated texts scanned once, the vendor ruleset
        # (where this process runs it) called once over the whole batch.
        self.redactor = Redactor().prescan(fields for _, fields in items)
        self.items = [(event_class, redact_fields(fields, self.redactor)) for event_class, fields in items]
        self._ids: set[int] | None = None

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is one of the redacted values (the very object: the items are alive for
        the whole write, so no other object can have its id)."""
        if self._ids is None:
            self._ids = {id(v) for _, fields in self.items for v in fields.values()}
        return id(value) in self._ids


class Draft:
    """One attempt of a write (``Ledger.write``): the task as read for it, and the only ways to add
    events to it. Everything recorded through a draft is redacted: the write's items were redacted
    once, before the first attempt, and any other value is redacted as it is recorded."""

    def __init__(self, task: Task, redacted: _Redacted) -> None:
        self._task = task
        self._redacted = redacted
        self.items = redacted.items
        """The write's items, redacted."""

    @property
    def id(self) -> UUID:
        task_id: UUID = self._task.id
        return task_id

    @property
    def version(self) -> int:
        """The position of the task's last event (read or recorded)."""
        return self._task.version

    @property
    def recorded(self) -> list[ev.TaskEvent]:
        """The events this attempt recorded so far, in order (a new task's ``TaskOpened`` first): not stored yet."""
        return cast(list[ev.TaskEvent], self._task.pending_events)

    def latest_requirement(self) -> int | None:
        """The position of the task's latest requirement in force, as this write leaves it so far."""
        return self._task.latest_requirement()

    def record(self, event_class: type[ev.TaskEvent], **fields: Any) -> None:
        """Record an event under the Task aggregate's rules (``Task.record``)."""
        self._task.record(event_class, **self._clean(fields))

    def record_all(self) -> None:
        """Record every item of the write, in order (all or none: a refused one raises)."""
        for event_class, fields in self.items:
            self._task.record(event_class, **fields)  # redacted by the write already

    def copy(self, event_class: type[ev.TaskEvent], **fields: Any) -> None:
        """Record an event another task recorded, as it was (its rules held once; ``Ledger.branch``)."""
        self._task.copy_event(event_class, **self._clean(fields))

    def _clean(self, fields: dict[str, Any]) -> dict[str, Any]:
        # A value of the write's items is redacted already; anything else, from the caller, is redacted here.
        fresh = {name: value for name, value in fields.items() if not self._redacted.holds(value)}
        return {**fields, **redact_fields(fresh, self._redacted.redactor.prescan([fresh]))} if fresh else fields


class Ledger(Application[UUID]):
    name = "tasktrail"
    conflicts = 0
    """Write races lost (and retried) by this instance: the measure of contention."""
    snapshotting_intervals = {Task: SNAPSHOT_EVERY, Registry: 100}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The library names a subclass after itself, and PostgreSQL tables after the name; the stores write
        # tasktrail's own tables (tasktrail_snapshots, ...) beside the library's, so a subclass (another
        # snapshot interval) keeps the name unless it sets one.
        if "name" not in cls.__dict__:
            cls.name = "tasktrail"
        super().__init_subclass__(**kwargs)
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
        self._offered = threading.local()
        """Snapshots the tasks being saved by this thread took of themselves (``_save``)."""
        super().__init__(env)
        mapper = cast(PydanticMapper, self.mapper)
        if mapper.cipher is not None:
            # The anchor reads the chain of a last row the save did not name (``stores.base.heads_of``).
            self.recorder.plain = mapper.plain  # type: ignore[attr-defined]
        if raw is not None and raw.strip():
            # Per instance, so K can differ between ledgers in one process (tests, bench/);
            # unset, the class attribute (or a subclass's) stands.
            self.snapshotting_intervals = {**type(self).snapshotting_intervals, Task: every}  # type: ignore[misc]

    @cached_property
    def store(self) -> LedgerStore:
        """What the lifecycle needs beyond the library's recorders (``ledger.stores``), for this backend."""
        store = for_ledger(self.env, self.recorder)
        mapper = cast(PydanticMapper, self.mapper)
        if mapper.cipher is not None:
            store.cipher = (mapper.plain, mapper.sealed)
        return store

    @cached_property
    def views(self) -> Views:
        """The brief's view of each task, folded on read from its own snapshots (``ledger.app.views``)."""
        return Views(
            lambda: self.store,
            self.mapper,
            lambda task_id, after, upto: self.task_events(task_id, after=after, upto=upto),
            lambda: self.snapshotting_intervals.get(Task, 0),
            self._legacy_view,
        )

    def _legacy_view(self, task_id: UUID, upto: int | None) -> tuple[int, dict[str, Any]] | None:
        """The task's newest own snapshot at or before ``upto``, undecoded past its body (``Views``)."""
        if self.snapshots is None:
            return None
        found = self.snapshots.recorder.select_events(task_id, lte=upto, desc=True, limit=1)
        if not found:
            return None
        body: dict[str, Any] = cast(PydanticMapper, self.mapper).decode_state(found[0].state)["state"]
        return found[0].originator_version, body

    def close(self) -> None:
        held: Path | None = self.__dict__.pop("_held", None)
        if held is not None:
            _HELD[held] -= 1
            if not _HELD[held]:
                del _HELD[held]
        super().close()

    # -- writing ----------------------------------------------------------------

    def write(
        self,
        target: UUID | NewTask,
        items: Iterable[Item],
        decide: Callable[[Draft], R],
        *,
        persist: Callable[[list[ev.TaskEvent]], None] | None = None,
        keep_view: bool = True,
    ) -> tuple[Written, R]:
        """The one way events get into the store: redact, record, chain, save, retried on a lost race.

        ``target`` is a task's id, or a ``NewTask`` to open (under the next free number, with its
        registry entry). ``items`` are redacted here, once; ``decide`` gets a ``Draft`` of the task
        as read for each attempt and records on it (``Draft.record``: the Task aggregate's rules,
        then the event is linked into the hash chain), returning what the caller wants back. Then
        the task, with its registry entry when it is new, is saved in one transaction; when another
        writer took a position first, the whole attempt runs again on a fresh read (``decide`` must
        be safe to re-run). Returns where the write left the task and what ``decide`` returned; no
        view is folded unless the write passes a K-th position (``Views.advance``: then up to its end).

        ``persist`` stores an existing task's new events in a transaction of the caller's own instead
        of the library's save (compaction commits its marker event with the rows it archives); it
        must raise the library's ``IntegrityError`` when another writer took a position first.

        ``keep_view=False`` leaves the view to the next read even past a K-th position: the library's bulk
        append (``append_many``) measures the write path alone, without the view's fold (issues 21, 24)."""
        redacted = _Redacted(items)
        opening = _opening(target) if isinstance(target, NewTask) else None
        stored: list[ev.TaskEvent] = []
        """The task's events the last attempt saved: the view is brought up to them once stored."""

        def attempt() -> tuple[Written, R]:
            registry: Registry | None = None
            if opening is not None:
                registry = self._registry(writing=True)
                number, slug = self._next_number(registry), registry.unique_slug(opening.title)
                task = self._loaded(Task.open(
                    number=number, title=opening.title, slug=slug, cwd=opening.cwd, actor=opening.actor,
                    project=opening.project, timestamp=opening.timestamp,
                ))
            else:
                assert isinstance(target, UUID)
                task = self.task(target)
                self._check_end(task)
            outcome = decide(Draft(task, redacted))
            projects = None
            if registry is not None:
                assert opening is not None
                registry.register(Entry(number=number, task_id=task.id, slug=slug, title=opening.title))
                # One transaction: the task, its first events, its entry, and its project for the access
                # policies (``stores.pgaccess``; SQLite keeps no such row).
                project = opening.project or opening.cwd or ""
                projects = [(task.id, project, number, registry.version)]
            if retitled := [e for e in task.pending_events if isinstance(e, ev.TaskRetitled)]:
                # The task list shows the title: its entry follows the task's own record in the same commit.
                assert persist is None, "a retitle is not written through a caller's own transaction"
                registry = registry or self._registry(writing=True)
                registry.retitle(task.number, retitled[-1].title)
                if (kept := self.store.task_projects().get(task.id)) is not None:
                    # The new entry's row, so the access policies let this task's writers add it, readers see it.
                    projects = [*(projects or []), (task.id, kept, task.number, registry.version)]
            stored[:] = [] if persist is not None else cast(list[ev.TaskEvent], task.pending_events)
            if registry is not None:
                self._save(registry, task, projects=projects)
            elif persist is not None:
                persist([cast(ev.TaskEvent, event) for event in task.collect_events()])
            elif task.pending_events:
                self._save(task)
            return Written(task.id, task.version, task.number), outcome

        try:
            done = self._retrying(attempt)
        except PersistenceError as exc:
            if not denied(exc):
                raise
            where = (opening.project or opening.cwd) if opening is not None else self._project_of(cast(UUID, target))
            raise PermissionDenied(f"this role may not write to project {where!r}: it has no write grant there "
                                   "(`trail access` lists grants); nothing was written") from None
        # A bulk write (an import's batch) leaves the view at its end, kept every K events, so the first read
        # after it folds at most K events, not all since the last read (``Views.advance``).
        if keep_view:
            self.views.advance(done[0].id, stored)
        return done

    def _project_of(self, task_id: UUID) -> str:
        return self.store.task_projects().get(task_id, "?")

    def _check_end(self, task: Task) -> None:
        """Refuse to chain from a last event that is not what was recorded: an append after an edit or
        insert outside tasktrail would otherwise bury it under events that verify from then on."""
        if (found := verify.end_problem(self, task.id, task.version, task.head)) is not None:
            raise verify.refusal(task.number, found)

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
                # "pipeline aborted": on PostgreSQL a racing insert failed inside the library's pipeline and the
                # transaction was rolled back, its own error masked by the pipeline's; re-read and try again.
                if "locked" not in str(exc) and "pipeline aborted" not in str(exc):
                    raise StoreUnavailable(f"ledger write failed: {exc}") from exc
                self.conflicts += "pipeline aborted" in str(exc)
                time.sleep(0.05 * (0.5 + random.random()))
        raise StoreUnavailable(f"gave up after {RETRY_ATTEMPTS} write conflicts")

    def _save(self, *aggregates: Task | Registry, projects: list[tuple[UUID, str, int, int]] | None = None) -> None:
        """``save`` in one transaction with the snapshots tasks took of themselves (``take_snapshot``)
        and the anchor rows of their heads (the recorder's ``heads`` and ``snapshots``), so a batch is
        one commit and its last row is not read back for its chain."""
        offered = {
            (snapshot.originator_id, snapshot.originator_version): snapshot
            for aggregate in aggregates if isinstance(aggregate, Task)
            for snapshot in aggregate.offered_snapshots()
        }
        prepared = {
            key: found for aggregate in aggregates if isinstance(aggregate, Task)
            for key, found in aggregate.prepared_states().items()
        }
        mapper = cast(PydanticMapper, self.mapper)
        # Stored with the events: the library asks for a snapshot at every K-th position after the
        # save, and each it asks for here is one of these (``take_snapshot`` finds it offered).
        snapshots = [mapper.to_stored_event(s) for s in offered.values()] if self.snapshots is not None else []
        heads = [(a.id.hex, a.version, a.head) for a in aggregates if a.pending_events]
        # The capture index's rows (``schema.SOURCES``), from the events themselves: the recorder parses nothing.
        sources = [(a.id, e.originator_version, s.agent, s.session, s.record) for a in aggregates
                   if isinstance(a, Task) for e in a.pending_events if (s := e.source) is not None]  # type: ignore[attr-defined]
        self._offered.snapshots = offered
        try:
            with mapper.prepared(prepared):
                self.save(*aggregates, heads=heads, snapshots=snapshots, sources=sources,
                          **({"projects": projects} if projects else {}))
        finally:
            self._offered.snapshots = {}
        cache = self.repository.cache
        if cache is not None:
            # The library keeps a saved aggregate in its cache only without fast-forward; with it,
            # the next command read this write's events back and folded each one again (a third of
            # batched append time). What was just stored is exactly this version, so it is cached;
            # fast-forward still brings in whatever another writer stores after it.
            for aggregate in aggregates:
                cache.put(aggregate.id, aggregate)

    def take_snapshot(
        self,
        aggregate_id: UUID,
        version: int | None = None,
        projector_func: ProjectorFunction[Any, Any] = project_aggregate,
    ) -> None:
        # The library calls this after each save for every position its snapshotting interval
        # names (``snapshotting_intervals``). A task being saved offers the snapshot it took of
        # itself in memory as it passed that position (``Task.trigger_event``), and ``_save`` stored
        # it with the events; rebuilding that version from the store, as the library otherwise
        # does, was a fifth of append time, and storing it after, a second commit. Other snapshots
        # (the registry's, a task's opening event, a direct call) the library's way.
        offered: ModelSnapshot | None = self._offered.__dict__.get("snapshots", {}).pop((aggregate_id, version), None)
        if offered is not None:
            return
        if aggregate_id == REGISTRY_ID and not self.sees_all:
            return  # a grantee's registry lacks the other projects' entries; the owner's saves snapshot it
        super().take_snapshot(aggregate_id, version, projector_func)

    @cached_property
    def sees_all(self) -> bool:
        """Whether this connection sees every task (``LedgerStore.sees_all``: False for a PostgreSQL
        grantee, whose rows the server's policies filter)."""
        return self.store.sees_all()

    def _next_number(self, registry: Registry) -> int:
        # A grantee's registry holds only its projects' entries; the server knows the ledger's next number.
        return registry.next_number() if self.sees_all else max(registry.next_number(), self.store.next_number())

    def _registry(self, writing: bool = False) -> Registry:
        """The registry; ``writing``: with its chain head known, to append to it."""
        if not self.sees_all:
            return self._partial_registry()
        try:
            registry: Registry = self.repository.get(REGISTRY_ID)
        except AggregateNotFoundError:
            registry = Registry.create()
        if writing and not registry.head and registry.version > 0:
            # Its last events (or the snapshot it loaded from) predate the chain: the head is their
            # hash as stored now, so the next event chains them in (``registry.head_of``).
            decode = cast(PydanticMapper, self.mapper).decode_state
            rows = self.recorder.select_events(REGISTRY_ID, lte=registry.version)
            registry.head = head_of((r.topic, r.originator_version, decode(r.state)) for r in rows)
        return registry

    def _partial_registry(self) -> Registry:
        """The registry as a grantee sees it: its own projects' entries (the library's fold would refuse the
        gaps between them), at the ledger's position and chain head (the anchor row every grantee sees),
        so an entry it appends chains onto the whole registry."""
        rows = self.recorder.select_events(REGISTRY_ID)
        if not rows:
            return Registry.create()
        events = [cast(Any, self.mapper.to_domain_event(row)) for row in rows]
        registry = cast(Registry, events[0].mutate(None))
        for event in events[1:]:
            event.apply(registry)
        if (anchor := self.store.head(REGISTRY_ID)) is not None:
            registry.version, registry.head = anchor.version, anchor.chain
        return registry

    def open_task(
        self,
        title: str,
        cwd: str | None = None,
        actor: str = "user",
        *,
        project: str | None = None,
        timestamp: datetime | None = None,
    ) -> TaskState:
        """Register a new task under the next free number and append its opening event (``write``)."""
        written, _ = self.write(NewTask(title, cwd, actor, project, timestamp), (), _nothing)
        return self.state(written.id)

    def branch(self, task_id: UUID, at: int, title: str, actor: str = "user") -> TaskState:
        """Start a new task whose history is this task's first ``at`` events (same positions,
        so provenance pointers stay valid), linked back to it. The original is left untouched."""
        origin = self.state(task_id, at=at)
        history: list[Item] = [
            (type(event), {name: getattr(event, name) for name in type(event).model_fields if name not in _COPIED_NOT})
            for event in self.task_events(task_id, after=1, upto=at)
        ]

        def decide(draft: Draft) -> None:
            for event_class, fields in draft.items:
                draft.copy(event_class, **fields)
            draft.record(ev.TaskLinked, relation="branched_from", other=task_id, other_number=origin.number,
                         actor=actor)

        written, _ = self.write(NewTask(title, origin.cwd, actor, origin.project), history, decide)
        return self.state(written.id)

    def append(self, task_id: UUID, event_class: type[ev.TaskEvent], **fields: Any) -> TaskState:
        """Append one event to a task; the Task aggregate checks its rules first. Returns the task's
        view after it (folded once the event is stored: a view that fails to fold loses nothing)."""
        written = self.append_many(task_id, [(event_class, fields)])
        return self.state(written.id, at=written.position)

    def retitle(self, task_id: UUID, title: str, actor: str = "user") -> TaskState:
        """Rename a task: a ``TaskRetitled`` of its own and its task-list entry under the new title, in one
        transaction (``write``). Number and slug stay."""
        return self.append(task_id, ev.TaskRetitled, title=title, actor=actor)

    def append_many(self, task_id: UUID, items: list[Item], keep_view: bool = False) -> Written:
        """Append several events to one task in one transaction (all or none). No view is folded unless
        ``keep_view`` asks (then a batch passing a K-th position brings it to its end, ``Views.advance``), as an
        import's writes do: a caller appending many batches and reading once wants it, the write path alone not."""
        written, _ = self.write(task_id, items, Draft.record_all, keep_view=keep_view)
        return written

    # -- reading ----------------------------------------------------------------

    def mark_forgotten(self, tombstone: Tombstone) -> None:
        """Record in the registry that a task was forgotten (its entry goes, the tombstone stays)."""

        def attempt() -> None:
            registry = self._registry(writing=True)
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
        if at is not None and at < archived.live_from(self, task_id) - 1:
            return self._loaded(archived.task_at(self, task_id, at))
        try:
            task: Task = self.repository.get(task_id, version=at)
        except AggregateNotFoundError as exc:
            raise NotFound(f"no task with id {task_id}") from exc
        return self._loaded(task)

    def _loaded(self, task: Task) -> Task:
        task.snapshot_every = self.snapshotting_intervals.get(Task, 0)
        task.history = self._history
        if len(task.rules.reclassified) > TRIM_ABOVE:
            task.trimmed()  # read from a snapshot of v4 or before, which listed every intent
        return task

    @cached_property
    def _history(self) -> LogHistory:
        return LogHistory(self)

    def state(self, task_id: UUID, at: int | None = None) -> TaskState:
        """The task's view after event ``at`` (the latest when None, or when ``at`` is past it), from
        its nearest view snapshot and the events after it (the aggregate is not loaded)."""
        found = self.views.at(task_id, at)
        if found is None:
            raise NotFound(f"no task with id {task_id}")
        return found

    def state_of(self, task: Task) -> TaskState:
        """The view of ``task`` as loaded (``task``), at its version."""
        return self.state(task.id, task.version)

    def task_events(self, task_id: UUID, after: int = 0, upto: int | None = None) -> Iterator[ev.TaskEvent]:
        """The task's events with ``after < position <= upto``, in order (archived ones included)."""
        live = archived.live_from(self, task_id)
        if after < live - 1:
            yield from archived.archived_events(self, task_id, after, live - 1 if upto is None else min(upto, live - 1))
            after = live - 1
        if upto is not None and upto <= after:
            return
        yield from self.events.get(task_id, gt=after or None, lte=upto)  # type: ignore[misc]

    def task_id(self, number: int) -> UUID:
        return task_id_for(number)


_COPIED_NOT = frozenset({"originator_id", "originator_version", "chain"})
"""What a branch does not copy of an event: the new task gives each copy its own."""


TRIM_ABOVE = 16
"""More reclassified positions than this (a user reclassifies a handful) are an upcast state's list of
every intent: the task trims them on load (``Task.trimmed``)."""


def _nothing(_: Draft) -> None:
    return None


def _opening(new: NewTask) -> NewTask:
    """``new`` with its project filled in and every text redacted, as the first event will hold it."""
    project = project_of(new.cwd) if new.project is None else new.project
    given = {"title": new.title, "cwd": new.cwd, "project": project}
    fields = redact_fields(given, Redactor().prescan([given]))
    # Stripped as the event's own validator strips it: the task list's entry must equal the opening's
    # title, and a redacted key block can end the title in a newline the raw title did not have.
    return NewTask(fields["title"].strip(), fields["cwd"], new.actor, fields["project"], new.timestamp)


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


def open_ledger(
    location: Location, ledger_class: type[Ledger] = Ledger, *, create: Create = "path",
    cipher: Mapping[str, str] | None = None,
) -> Ledger:
    """Open the ledger at ``location``, or fail with one clear line and nothing created.

    ``create`` says what a missing SQLite ledger may bring into being: ``"path"`` its folders
    and file (the default location, created on first use), ``"file"`` the file in a folder that
    exists (a command that writes to a location named with ``--db``), ``"nothing"`` (a command
    that only reads one). A file that exists must be a tasktrail ledger, whatever ``create`` says.
    ``cipher``: the key settings (``atrest.cipher_env``; {} for none), when not the environment's (migrate).
    """
    # A bad setting fails every command, so it is named before anything about the location.
    snapshot_interval(os.environ.get("TRAIL_SNAPSHOT_EVERY"))
    private.tighten(str(location.home))  # what an older release left open to others (one stat when nothing is)
    # A bad key, key file or missing AES package is named before anything opens.
    keyed = atrest.cipher_env() if cipher is None else dict(cipher)
    if location.is_sqlite:
        path = location.sqlite_path
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(path),
            "SQLITE_LOCK_TIMEOUT": "30",
            # The library's recorder plus the per-task head anchor (ledger/stores/sqlite.py).
            "APPLICATION_RECORDER_TOPIC": "ledger.stores.sqlite:AnchoredRecorder",
            **keyed,
        }
        held = path.resolve()
        if not _HELD[held]:
            _check_sqlite_path(path, create)
            private.create_file(str(path))  # before SQLite makes it: its -wal and -shm take the file's mode
            for kept in (path, Path(f"{path}.duckdb"), Path(f"{path}.archive")):
                private.tighten(str(kept))
        ledger = _construct(ledger_class, env, location)
        ledger.__dict__["_held"] = held
        _HELD[held] += 1
        return ledger
    elif location.is_postgres:
        from ledger.stores import postgres  # psycopg loads only for PostgreSQL ledgers

        with postgres.setting_up(location) as (target, owner):
            return _construct(ledger_class, {**postgres.library_env(target, owner), **keyed}, location)
    raise StoreUnavailable(
        f"unsupported ledger URL {location.display!r}; use a file path, sqlite:PATH or postgresql://..."
    )


def denied(exc: BaseException) -> bool:
    """Whether a storage error is the server refusing this role (SQLSTATE 42501: no privilege on the table,
    or a row its access policies do not let it write; ``stores.pgaccess``)."""
    cause = exc.__cause__ or exc.__context__
    return getattr(cause, "sqlstate", None) == "42501"


_HELD: Counter[Path] = Counter()
"""SQLite ledgers this process has open (``open_ledger``), by resolved path. A file is checked only
when none is open: the check reads its header through an ordinary descriptor, and closing any
descriptor of a file drops every POSIX lock the process holds on it, SQLite's shared lock
included; another process closing the ledger could then checkpoint and cut the WAL under the
open one ("database disk image is malformed", seen with an in-process second open)."""


def _construct(ledger_class: type[Ledger], env: dict[str, str], location: Location) -> Ledger:
    shown = location.sqlite_path if location.is_sqlite else location.display
    try:
        ledger = ledger_class(env=env)
    except (PersistenceError, sqlite3.Error, OSError) as exc:
        raise StoreUnavailable(f"cannot open ledger {shown}: {' '.join(str(exc).split())}") from exc
    try:
        _check_cipher(ledger, str(shown))
    except BaseException:
        ledger.close()
        raise
    return ledger


def _check_cipher(ledger: Ledger, shown: str) -> None:
    """Refuse a key that does not open the ledger, a ledger that needs one, and a plain ledger opened with
    one, before anything is read or written: the registry's first row is deciphered (one row)."""
    rows = ledger.recorder.select_events(REGISTRY_ID, limit=1)
    if not rows:
        return  # a new ledger: it is encrypted from its first row when a key is set
    raw = rows[0].state
    mapper = cast(PydanticMapper, ledger.mapper)
    try:
        mapper.decode_state(raw)
        return
    except Exception:  # the cipher's own errors differ by package (pycryptodome, cryptography)
        pass
    if mapper.cipher is None:
        raise StoreUnavailable(f"ledger {shown} is encrypted: set {atrest.KEY_VAR} or {atrest.KEY_FILE_VAR} to its key")
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise StoreUnavailable(f"the cipher key does not open ledger {shown} (a wrong key?)") from None
    # Mixed rows would be unreadable under any one setting; a plain ledger is encrypted by migrating it.
    raise StoreUnavailable(
        f"ledger {shown} is not encrypted but a cipher key is set: unset {atrest.KEY_VAR}/{atrest.KEY_FILE_VAR},"
        " or `trail migrate` it to an encrypted copy"
    )


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
        if foreign_tables(tables):
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
        private.folder(path.parent)
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
