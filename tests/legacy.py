"""What releases before view snapshots stored as a task snapshot (class version 3): the body carried
the brief's view and the version of the fold that made it, and no number."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from ledger.app.store import Ledger
from ledger.domain import events as ev
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
    doc["state"]["decision"] = sets_decision(ledger.task_events(task, upto=at))
    del doc["state"]["number"]
    doc["state"]["state"] = ledger.state(task, at).model_dump(mode="json")
    doc["state"]["fold_version"] = FOLD_VERSION
    return doc


def stored(ledger: Ledger, task: UUID, version: int, doc: dict[str, Any]) -> StoredEvent:
    return StoredEvent(task, version, TaskSnapshot.TOPIC, orjson.dumps(doc))


def sets_decision(events: Iterable[ev.TaskEvent]) -> dict[str, Any]:
    """The decision state as snapshots v2-v4 stored it, every position of each kind, folded by those
    releases' rules (``IntentReclassified`` moved a requirement or correction between the sets)."""
    sets: dict[str, set[int]] = {k: set() for k in ("requirements", "rewordings", "corrections", "decisions",
                                                    "attempts")}
    values: dict[str, Any] = {"open_attempt": None, "last_intent": None, "last_decision": None, "status": "active"}
    into = {ev.RequirementStated: "requirements", ev.RequirementChanged: "rewordings",
            ev.CorrectionMade: "corrections", ev.DecisionRecorded: "decisions", ev.AttemptStarted: "attempts"}
    for event in events:
        pos = event.originator_version
        if type(event) in into:
            sets[into[type(event)]].add(pos)
        if type(event) in (ev.RequirementStated, ev.RequirementChanged, ev.CorrectionMade):
            values["last_intent"] = pos
        elif type(event) is ev.DecisionRecorded:
            values["last_decision"] = pos
        elif type(event) is ev.AttemptStarted:
            values["open_attempt"] = pos
        elif isinstance(event, ev.AttemptEnded) and values["open_attempt"] == event.attempt:
            values["open_attempt"] = None
        elif isinstance(event, ev.StatusChanged):
            values["status"] = event.status
        elif isinstance(event, ev.IntentReclassified):
            target = event.target
            if target in sets["requirements"] or target in sets["corrections"]:
                sets["requirements"].discard(target)
                sets["corrections"].discard(target)
                sets[{"requirement": "requirements", "correction": "corrections", "change": "rewordings"}[
                    event.kind]].add(target)
    return {**{k: sorted(v) for k, v in sets.items()}, **values}
