"""Snapshots of our aggregates as pydantic models, so nested state comes back typed.

The library's own snapshot class copies ``vars(aggregate)`` into an untyped dict,
which would bring pydantic values back as plain dicts and datetimes as strings. Here
each aggregate names a body model whose fields are the attributes to keep.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Self
from uuid import UUID

from eventsourcing.domain import CanSnapshotAggregate
from eventsourcing.utils import get_topic, resolve_topic
from pydantic import BaseModel, ConfigDict

_CLOCK = ("created_on", "modified_on")


class SnapshotBody(BaseModel):
    """The aggregate's attributes worth keeping; subclasses add typed fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    created_on: datetime
    modified_on: datetime


class ModelSnapshot(BaseModel, CanSnapshotAggregate[UUID]):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    TOPIC: ClassVar[str]
    originator_id: UUID
    originator_version: int
    timestamp: datetime
    topic: str
    state: SnapshotBody

    @classmethod
    def body_class(cls) -> type[SnapshotBody]:
        annotation = cls.model_fields["state"].annotation
        assert isinstance(annotation, type) and issubclass(annotation, SnapshotBody)
        return annotation

    @classmethod
    def take(cls, aggregate: Any) -> Self:
        body_class = cls.body_class()
        kept = {name: getattr(aggregate, name) for name in body_class.model_fields if name not in _CLOCK}
        body = body_class(created_on=aggregate.created_on, modified_on=aggregate.modified_on, **kept)
        return cls(
            originator_id=aggregate.id,
            originator_version=aggregate.version,
            timestamp=cls.create_timestamp(),
            topic=get_topic(type(aggregate)),
            state=body,
        )

    def mutate(self, _: None) -> Any:
        # The aggregate comes back as the library builds one from its created event: a bare
        # instance, its id, version and clock set by the library's own ``__base_init__`` (so no
        # private attribute of the library is written here), then our typed attributes.
        aggregate = object.__new__(resolve_topic(self.topic))
        aggregate.__base_init__(self.originator_id, self.originator_version, self.state.created_on)
        aggregate.modified_on = self.state.modified_on
        for name in type(self.state).model_fields:
            if name not in _CLOCK:
                setattr(aggregate, name, getattr(self.state, name))
        return aggregate
