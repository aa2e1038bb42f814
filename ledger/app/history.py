"""The task's log as the Task aggregate's rules look positions up in it (``decision_state.History``).

The decision state keeps no sets of positions; when a rule needs to know what sits at a position
(a rewording names a requirement from the first day), the stored row says, by its topic alone:
from the live store, or below a compaction boundary from the task's archive.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder
from eventsourcing.utils import TopicError, resolve_topic

from ledger.domain import events as ev
from ledger.stores import archived

CHUNK = 256
"""Rows read at a time when walking back through the live store (topics only)."""


class LogHistory:
    """What the rules read of a ledger's stored events; one per ledger, shared by its tasks."""

    def __init__(self, ledger: archived.Source, recorder: AggregateRecorder) -> None:
        self._ledger = ledger
        self._recorder = recorder
        self._classes: dict[str, type[ev.TaskEvent] | None] = {}

    def _class(self, topic: str) -> type[ev.TaskEvent] | None:
        found = self._classes.get(topic, ev.TaskEvent)
        if found is ev.TaskEvent:  # not seen yet (the base class is no stored event's)
            try:
                found = cast(type[ev.TaskEvent], resolve_topic(topic))  # an old module path resolves too
            except TopicError:  # a topic nothing registers decides nothing
                found = None
            self._classes[topic] = found
        return found

    def type_at(self, task_id: UUID, position: int) -> type[ev.TaskEvent] | None:
        rows = self._recorder.select_events(task_id, gt=position - 1, lte=position, limit=1)
        if rows:
            return self._class(rows[0].topic)
        topic = archived.archived_topic(self._ledger, task_id, position)
        return None if topic is None else self._class(topic)

    def earlier(self, task_id: UUID, event_class: type[ev.TaskEvent], before: int) -> Iterator[int]:
        below = before
        while below > 1:
            rows = self._recorder.select_events(task_id, lte=below - 1, desc=True, limit=CHUNK)
            for row in rows:
                if self._class(row.topic) is event_class:
                    yield row.originator_version
            if len(rows) < CHUNK:
                break
            below = rows[-1].originator_version
        # The live rows are all above the archived ones: the archive carries on from where they stop.
        for position, topic in archived.archived_topics(self._ledger, task_id, before):
            if self._class(topic) is event_class:
                yield position
