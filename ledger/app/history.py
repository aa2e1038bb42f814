"""The task's log as the Task aggregate's rules look positions up in it (``decision_state.History``).

The decision state keeps no sets of positions; when a rule needs to know what sits at a position
(a rewording names a requirement from the first day), the stored row says, by its topic alone (no
state is read): from the live store, or below a compaction boundary from the task's archive.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import cast
from uuid import UUID

from eventsourcing.utils import TopicError, resolve_topic

from ledger.domain import events as ev
from ledger.stores import archived

CHUNK = 1_000
"""Rows read at a time when walking back through the live store."""


class LogHistory:
    """What the rules read of a ledger's stored events; one per ledger, shared by its tasks."""

    def __init__(self, ledger: archived.Source) -> None:
        self._ledger = ledger
        self._classes: dict[str, type[ev.TaskEvent] | None] = {}

    def _class(self, topic: str) -> type[ev.TaskEvent] | None:
        if topic not in self._classes:
            try:
                found = cast(type[ev.TaskEvent], resolve_topic(topic))  # an old module path resolves too
            except TopicError:  # a topic nothing registers decides nothing
                found = None
            self._classes[topic] = found
        return self._classes[topic]

    def type_at(self, task_id: UUID, position: int) -> type[ev.TaskEvent] | None:
        return self.types_at(task_id, (position,)).get(position)

    def types_at(self, task_id: UUID, positions: Iterable[int]) -> dict[int, type[ev.TaskEvent] | None]:
        """The class of the stored event at each of ``positions`` (None where there is none)."""
        wanted = set(positions)
        topics = self._ledger.store.topics(task_id, wanted)
        for position in wanted - topics.keys():  # archived, or none at all
            topic = archived.archived_topic(self._ledger, task_id, position)
            if topic is not None:
                topics[position] = topic
        return {position: self._class(topics[position]) if position in topics else None for position in wanted}

    def earlier(self, task_id: UUID, event_class: type[ev.TaskEvent], before: int) -> Iterator[int]:
        below = before
        while below > 1:
            rows = self._ledger.store.topics_before(task_id, below, CHUNK)
            for position, topic in rows:
                if self._class(topic) is event_class:
                    yield position
            if len(rows) < CHUNK:
                break
            below = rows[-1][0]
        # Every live row is above every archived one: the archive carries on below them.
        for position, topic in archived.archived_topics(self._ledger, task_id, before):
            if self._class(topic) is event_class:
                yield position
