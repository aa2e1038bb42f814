"""What releases before view snapshots stored as a task snapshot (class version 3): the body carried
the brief's view and the version of the fold that made it, and no number."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from ledger.app.store import Ledger
from ledger.domain.mapper import PydanticMapper
from ledger.domain.task import TaskSnapshot
from projections.state import FOLD_VERSION


def v3_doc(ledger: Ledger, task: UUID, at: int | None = None) -> dict[str, Any]:
    """The stored JSON of a v3 snapshot of ``task`` after event ``at`` (the latest when None)."""
    mapper = ledger.mapper
    assert isinstance(mapper, PydanticMapper)
    stored = mapper.to_stored_event(TaskSnapshot.take(ledger.task(task, at)))
    doc: dict[str, Any] = orjson.loads(stored.state)
    doc["class_version"] = 3
    del doc["state"]["number"]
    doc["state"]["state"] = ledger.state(task, at).model_dump(mode="json")
    doc["state"]["fold_version"] = FOLD_VERSION
    return doc


def stored(ledger: Ledger, task: UUID, version: int, doc: dict[str, Any]) -> StoredEvent:
    return StoredEvent(task, version, TaskSnapshot.TOPIC, orjson.dumps(doc))
