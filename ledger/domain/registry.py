"""The task registry: one aggregate that hands out task numbers and unique slugs.

Numbering through one aggregate means two concurrent ``trail start`` calls conflict
on the registry's version and one retries, instead of both taking number N.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any, ClassVar
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, CanInitAggregate, CanMutateAggregate
from eventsourcing.utils import get_topic
from pydantic import BaseModel, ConfigDict

from ledger.domain.snapshot import ModelSnapshot, SnapshotBody

REGISTRY_ID = uuid5(NAMESPACE_URL, "tasktrail:registry")
SLUG_MAX = 48


def slugify(title: str) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    return slug[:SLUG_MAX].rstrip("-") or "task"


class Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    number: int
    task_id: UUID
    slug: str
    title: str


class RegistryEvent(BaseModel, CanMutateAggregate[UUID]):
    model_config = ConfigDict(frozen=True, extra="forbid")
    TOPIC: ClassVar[str]
    class_version: ClassVar[int] = 1
    originator_id: UUID
    originator_version: int
    timestamp: datetime

    def apply(self, aggregate: Any) -> None:
        aggregate.fold_event(self)


class RegistryCreated(RegistryEvent, CanInitAggregate[UUID]):
    TOPIC = "tasktrail/RegistryCreated"
    originator_topic: str


class TaskRegistered(RegistryEvent):
    TOPIC = "tasktrail/TaskRegistered"
    entry: Entry


class Tombstone(BaseModel):
    """What stays of a forgotten task: enough for the ledger's own audit, none of its content."""

    model_config = ConfigDict(frozen=True, extra="forbid")
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

    @classmethod
    def create(cls) -> Registry:
        registry: Registry = cls._create(RegistryCreated, id=REGISTRY_ID)
        return registry

    def __init__(self) -> None:
        self.entries = {}
        self.tombstones = {}

    def fold_event(self, event: RegistryEvent) -> None:
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

    def forget(self, tombstone: Tombstone) -> None:
        self.trigger_event(TaskForgotten, tombstone=tombstone)


for _cls in (RegistryCreated, TaskRegistered, TaskForgotten, RegistrySnapshot):
    get_topic(_cls)  # registers the explicit topic so stored events resolve
