"""The task registry: one aggregate that hands out task numbers and unique slugs.

Numbering through one aggregate means two concurrent ``trail start`` calls conflict
on the registry's version and one retries, instead of both taking number N.

Its events are hash-chained like a task's (``ledger.domain.chain``, the registry's id in place
of a task's), so a forged ``TaskForgotten`` or a renumbering is a break `trail verify` names.
A registered entry's title and slug enter the chain by their sha256 (``sealable``): forgetting
a task rewrites its entry without them (``ledger.app.forget``) and keeps those hashes in the row
(``erased``), so the chain still holds. Registry events written before the chain carry no hash;
each is hashed as it is stored now (``head_of``), and the first chained event links from that,
so the chain starts at the first new event and covers the older ones from then on.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.domain import Aggregate, CanInitAggregate, CanMutateAggregate
from eventsourcing.utils import get_topic
from pydantic import BaseModel, ConfigDict

from ledger.base.schema import REGISTRY_HEX
from ledger.domain import chain
from ledger.domain.snapshot import ModelSnapshot, SnapshotBody

REGISTRY_ID = UUID(REGISTRY_HEX)
SLUG_MAX = 48


def slugify(title: str) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:SLUG_MAX].rstrip("-") or "task"


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    number: int
    task_id: UUID
    slug: str
    title: str


class RegistryEvent(BaseModel, CanMutateAggregate[UUID]):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    TOPIC: ClassVar[str]
    class_version: ClassVar[int] = 1
    originator_id: UUID
    originator_version: int
    timestamp: datetime
    chain: str = ""
    """The event's hash (``sealed``); empty on events stored before the registry was chained."""

    def apply(self, aggregate: Any) -> None:
        aggregate.fold_event(self)


class RegistryCreated(RegistryEvent, CanInitAggregate[UUID]):
    TOPIC = "tasktrail/RegistryCreated"
    originator_topic: str


class Erased(BaseModel):
    """What a forgotten task's rewritten entry keeps of its title and slug: their sha256, for the chain."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    title_sha256: str
    slug_sha256: str


class TaskRegistered(RegistryEvent):
    """A task's entry: its first, or a later one for the same number and task with a new title (a
    ``TaskRetitled`` of the task, saved with it). The latest for a number is the one listed."""

    TOPIC = "tasktrail/TaskRegistered"
    entry: Entry
    erased: Erased | None = None
    """Set when forgetting rewrote ``entry`` without its title and slug."""


class Tombstone(BaseModel):
    """What stays of a forgotten task: enough for the ledger's own audit, none of its content."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    number: int
    task_id: UUID
    title_sha256: str
    at: datetime
    by: str


class TaskForgotten(RegistryEvent):
    TOPIC = "tasktrail/TaskForgotten"
    tombstone: Tombstone


class RegistryBody(SnapshotBody):
    entries: dict[int, Entry]
    tombstones: dict[int, Tombstone] = {}
    head: str = ""
    """The chain hash of the last event ("" in a snapshot from before the chain: ``head_of`` finds it)."""


class RegistrySnapshot(ModelSnapshot):
    TOPIC: ClassVar[str] = "tasktrail/RegistrySnapshot"
    state: RegistryBody


class Registry(Aggregate):
    TOPIC = "tasktrail/Registry"
    Event = RegistryEvent  # type: ignore[assignment]
    Created = RegistryCreated  # type: ignore[assignment]
    Snapshot = RegistrySnapshot  # type: ignore[assignment]

    entries: dict[int, Entry]
    tombstones: dict[int, Tombstone]
    head: str
    """The chain hash of the last event; "" after events from before the chain (``Ledger`` fills it in)."""

    @classmethod
    def create(cls) -> Registry:
        draft = RegistryCreated(originator_id=REGISTRY_ID, originator_version=cls.INITIAL_VERSION,
                                timestamp=RegistryCreated.create_timestamp(), originator_topic=get_topic(cls))
        registry: Registry = cls._create(RegistryCreated, id=REGISTRY_ID, timestamp=draft.timestamp,
                                         chain=sealed(chain.GENESIS, draft))
        return registry

    def __init__(self) -> None:
        self.entries = {}
        self.tombstones = {}
        self.head = chain.GENESIS

    def fold_event(self, event: RegistryEvent) -> None:
        self.head = event.chain
        if isinstance(event, TaskRegistered):
            self.entries = {**self.entries, event.entry.number: event.entry}
        elif isinstance(event, TaskForgotten):
            number = event.tombstone.number
            self.entries = {n: e for n, e in self.entries.items() if n != number}
            self.tombstones = {**self.tombstones, number: event.tombstone}

    def next_number(self) -> int:
        # A forgotten task's number is never handed out again: old references must not change meaning.
        return max((*self.entries, *self.tombstones), default=0) + 1

    def unique_slug(self, title: str) -> str:
        base = slugify(title)
        taken = {e.slug for e in self.entries.values()}
        slug, n = base, 2
        while slug in taken:
            slug, n = f"{base}-{n}", n + 1
        return slug

    def register(self, entry: Entry) -> None:
        self.trigger_event(TaskRegistered, entry=entry)

    def retitle(self, number: int, title: str) -> None:
        """The entry of task ``number`` again, under ``title``: what its ``TaskRetitled`` recorded."""
        entry = self.entries.get(number)
        if entry is None:
            raise ValueError(f"task #{number} is not in the task list")
        if entry.title != title:
            self.register(entry.model_copy(update={"title": title}))

    def forget(self, tombstone: Tombstone) -> None:
        self.trigger_event(TaskForgotten, tombstone=tombstone)

    def trigger_event(self, event_class: type[Any], **kwargs: Any) -> None:
        # The library's, with the event sealed onto the chain first (the head must be known:
        # ``Ledger`` computes it for a registry whose last events predate the chain).
        if not self.head and self.version > 0:
            raise ValueError("the registry's chain head is not known; it is computed from the stored events")
        draft = event_class(originator_id=self.id, originator_version=self.version + 1,
                            timestamp=event_class.create_timestamp(), **kwargs)
        super().trigger_event(event_class, timestamp=draft.timestamp, chain=sealed(self.head, draft), **kwargs)


def _sha256(text: Any) -> str:
    return hashlib.sha256(str(text).encode("utf-8", "surrogatepass")).hexdigest()


def sealable(state: dict[str, Any]) -> dict[str, Any]:
    """The stored state as the chain hashes it: an entry's title and slug by their sha256 (kept in
    ``erased`` once forgetting removed them), ``erased`` itself left out."""
    entry = state.get("entry")
    if not isinstance(entry, dict):
        return state
    erased = state.get("erased")
    if isinstance(erased, dict):
        hashes = {"title_sha256": erased.get("title_sha256"), "slug_sha256": erased.get("slug_sha256")}
    else:
        hashes = {"title_sha256": _sha256(entry.get("title")), "slug_sha256": _sha256(entry.get("slug"))}
    kept = {k: v for k, v in entry.items() if k not in ("title", "slug")}
    return {**{k: v for k, v in state.items() if k != "erased"}, "entry": {**kept, **hashes}}


def seal_stored(previous: str, topic: str, position: int, state: dict[str, Any]) -> str:
    """The ``chain`` a stored registry row should carry (its state as stored, without id and version)."""
    return chain.seal(previous, topic, REGISTRY_ID, position, sealable(state))


def sealed(previous: str, event: RegistryEvent) -> str:
    state = event.model_dump(mode="json", exclude={"originator_id", "originator_version"})
    return seal_stored(previous, get_topic(type(event)), event.originator_version, state)


def erase(state: dict[str, Any], title: str, slug: str) -> dict[str, Any]:
    """A stored ``TaskRegistered`` state with its entry's title and slug replaced, their hashes kept."""
    entry = state["entry"]
    if not isinstance(state.get("erased"), dict):
        state = {**state, "erased": {"title_sha256": _sha256(entry.get("title")),
                                     "slug_sha256": _sha256(entry.get("slug"))}}
    return {**state, "entry": {**entry, "title": title, "slug": slug}}


def head_of(rows: Iterable[tuple[str, int, dict[str, Any]]]) -> str:
    """The chain head after stored rows (topic, position, state), in order: a row's own hash, or for
    a row from before the chain, its hash computed now, so the next event covers it."""
    head = chain.GENESIS
    for topic, position, state in rows:
        head = str(state.get("chain") or "") or seal_stored(head, topic, position, state)
    return head


for _cls in (RegistryCreated, TaskRegistered, TaskForgotten, RegistrySnapshot):
    get_topic(_cls)  # registers the explicit topic so stored events resolve
