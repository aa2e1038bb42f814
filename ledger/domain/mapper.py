"""Storing pydantic events through `eventsourcing`: an orjson transcoder and a mapper.

`eventsourcing` 9.5.6 ships neither. The mapper stores ``model_dump(mode="json")``
without the id and version (they are columns), writes ``class_version`` when above 1,
and runs the event class's ``upcast_vN_vN+1`` methods on read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast
from uuid import UUID

import orjson
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import Mapper, StoredEvent, Transcoder
from eventsourcing.utils import get_topic, resolve_topic

_NONE: Mapping[int, Any] = {}


class OrjsonTranscoder(Transcoder):
    def encode(self, obj: Any) -> bytes:
        return orjson.dumps(obj)

    def decode(self, data: bytes) -> Any:
        return orjson.loads(data)


def upcast(cls: type, state: dict[str, Any]) -> dict[str, Any]:
    """Bring a stored state dict up to ``cls.class_version``, in place."""
    version = state.pop("class_version", 1)
    target = getattr(cls, "class_version", 1)
    while version < target:
        getattr(cls, f"upcast_v{version}_v{version + 1}")(state)
        version += 1
    return state


def stored_state(model: Any) -> dict[str, Any]:
    """The dict a model is stored as (id and version included; the mapper pops them)."""
    state: dict[str, Any] = model.model_dump(mode="json")
    class_version = getattr(type(model), "class_version", 1)
    if class_version > 1:
        state["class_version"] = class_version
    return state


Prepared = Mapping[int, tuple[Any, dict[str, Any]]]
"""Events whose stored state is already built, by the event's id: (the event, its state without id
and version)."""


class PydanticMapper(Mapper[UUID]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._local = threading.local()

    @contextmanager
    def prepared(self, states: Prepared) -> Iterator[None]:
        """While a save runs on this thread, store these events' states as built (``Task.trigger_event``
        built each once, for its chain hash) instead of serialising the events again."""
        self._local.states = states
        try:
            yield
        finally:
            self._local.states = {}

    def to_stored_event(self, domain_event: DomainEventProtocol[UUID]) -> StoredEvent:
        model = cast(Any, domain_event)
        found = getattr(self._local, "states", _NONE).get(id(model))
        if found is not None and found[0] is model:  # the very event (an id is unique while it lives)
            state = found[1]
        else:
            state = stored_state(model)
            state.pop("originator_id")
            state.pop("originator_version")
        data = self.sealed(self.transcoder.encode(state))
        return StoredEvent(
            originator_id=model.originator_id,
            originator_version=model.originator_version,
            topic=get_topic(type(model)),
            state=data,
        )

    def plain(self, data: bytes) -> bytes:
        """A stored payload's JSON bytes: deciphered and decompressed when the ledger does either."""
        if self.cipher:
            data = self.cipher.decrypt(data)
        if self.compressor:
            data = self.compressor.decompress(data)
        return data

    def sealed(self, data: bytes) -> bytes:
        """The bytes to store for a payload's JSON bytes (``plain``'s inverse)."""
        if self.compressor:
            data = self.compressor.compress(data)
        if self.cipher:
            data = self.cipher.encrypt(data)
        return data

    def decode_state(self, data: bytes) -> dict[str, Any]:
        """The stored state as written (before upcasting), from its raw bytes."""
        state = self.transcoder.decode(self.plain(data))
        if not isinstance(state, dict):
            raise ValueError("stored state is not a JSON object")
        return state

    def to_domain_event(self, stored_event: Any) -> DomainEventProtocol[UUID]:
        return self.event_of(stored_event, self.decode_state(stored_event.state))

    def event_of(self, stored_event: Any, state: dict[str, Any]) -> DomainEventProtocol[UUID]:
        """The event of a stored row whose state ``decode_state`` already gave (a read that also re-hashes
        the row decodes it once); ``state`` is upcast in place and taken by the event."""
        cls = resolve_topic(stored_event.topic)
        upcast(cls, state)
        state["originator_id"] = stored_event.originator_id
        state["originator_version"] = stored_event.originator_version
        return cast(DomainEventProtocol[UUID], cls(**state))
