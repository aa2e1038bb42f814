"""The per-task hash chain: each event's hash covers its canonical bytes and its predecessor's hash.

The same function runs at append time (on the model about to be stored) and at
verify time (on the raw stored row), so it is defined on the stored form: topic,
task id, position and the stored JSON state without the ``chain`` field itself. Bounded
texts enter through the hash of their tail, so that `trail compact --gc-artifacts` can drop
a bulky tail (keeping its hash) without breaking the chain.

Two versions of the canonical form, each event verified with its own:

- **v1** (ledgers written before the chain had a version): the state's fields with ``topic``,
  ``task`` and ``position`` added beside them, as orjson writes it with sorted keys. Its
  ``chain`` is the bare sha256 hex.
- **v2** (every event written now): RFC 8785, the JSON Canonicalization Scheme, of
  ``{"chain_version": 2, "topic", "task", "position", "event": <the state's fields>}`` (the
  event's own fields nested, so no field name can collide with the envelope). Its ``chain``
  is ``"2:"`` + the sha256 hex, so a reader knows the form without trying both, and the
  version is hashed too (inside the document, and through the next event, which chains from
  the whole string). JCS is defined by the ``rfc8785`` package; since it is pure Python (about
  60 µs an event, twice the rest of an append), a document that holds only what orjson
  already writes the JCS way (strings, ASCII keys, integers in the I-JSON range, no floats) is
  written by orjson, and anything else by ``rfc8785``. A property test holds the two to the same
  bytes (``tests/test_chain.py``). Integers outside the I-JSON range (beyond +-(2^53 - 1)),
  which JCS cannot write, enter as their decimal string, as RFC 7493 advises. On the append
  path ``seal_dumped`` gives the same hash from an event's stored state with fewer steps (its
  class's string fields are not looked at, the envelope is not built as a document).

``link`` is the bare step both versions share: sha256(previous + newline + canonical bytes).
"""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin
from uuid import UUID

import orjson
import rfc8785

GENESIS = ""
CURRENT = 2
"""The chain version every new event is written with."""
VERSIONS = (1, 2)

_PREFIX = {2: "2:"}
_SAFE_INT = 2**53 - 1
_ENVELOPE = ("chain", "originator_id", "originator_version")


def is_bounded(value: dict[str, Any]) -> bool:
    """Whether a stored dict is a ``Bounded`` text (its stored JSON form)."""
    return "tail" in value and "size" in value and "truncated" in value


def _tail_hashed(value: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in value.items() if k not in ("tail", "collected", "tail_sha256")}
    if value.get("collected"):
        kept["tail_sha256"] = value.get("tail_sha256")
    else:
        kept["tail_sha256"] = hashlib.sha256(str(value["tail"]).encode("utf-8", "surrogatepass")).hexdigest()
    return kept


def _tails_hashed(value: Any) -> Any:
    """Bounded texts with their tail replaced by its hash, so collecting a tail keeps the chain."""
    if isinstance(value, dict):
        if is_bounded(value):
            return _tail_hashed(value)
        return {k: _tails_hashed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tails_hashed(v) for v in value]
    return value


class _Plain:
    """Whether a v2 document holds only what orjson writes exactly as JCS does."""

    __slots__ = ("plain",)

    def __init__(self) -> None:
        self.plain = True


def _v2_value(value: Any, seen: _Plain) -> Any:
    """``_tails_hashed`` for v2: also brings integers into JCS's range and notes what orjson can write."""
    kind = type(value)  # exact types first: this runs for every value of every event appended
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value if -_SAFE_INT <= value <= _SAFE_INT else str(value)
    if kind is dict:
        return _v2_fields(_tail_hashed(value) if is_bounded(value) else value, seen)
    if kind is list or kind is tuple:
        return [_v2_value(v, seen) for v in value]
    if isinstance(value, str | bool):  # subclasses, as the exact types
        return value
    if isinstance(value, int):
        return value if -_SAFE_INT <= value <= _SAFE_INT else str(value)
    if isinstance(value, dict):
        return _v2_fields(_tail_hashed(value) if is_bounded(value) else value, seen)
    if isinstance(value, list | tuple):
        return [_v2_value(v, seen) for v in value]
    seen.plain = False  # floats (and anything else) are written by rfc8785 (or refused there)
    return value


def _v2_fields(fields: dict[str, Any], seen: _Plain, leave: tuple[str, ...] = ()) -> dict[str, Any]:
    out = {}
    for k, v in fields.items():
        if k in leave:
            continue
        if type(k) is not str or not k.isascii():
            seen.plain = False  # JCS orders keys by UTF-16 code units; leave it to rfc8785
        kind = type(v)
        out[k] = v if kind is str or v is None or kind is bool else _v2_value(v, seen)
    return out


def _hex(task_id: UUID | str) -> str:
    return task_id.hex if isinstance(task_id, UUID) else UUID(str(task_id)).hex


def document(topic: str, task_id: UUID | str, position: int, state: dict[str, Any], version: int = CURRENT) -> Any:
    """The JSON document whose canonical bytes are hashed (v2: exactly what ``rfc8785.dumps`` is given)."""
    if version == 1:
        doc = {k: _tails_hashed(v) for k, v in state.items() if k not in _ENVELOPE}
        doc.update(topic=topic, task=_hex(task_id), position=position)
        return doc
    if version == 2:
        return _v2_document(topic, task_id, position, state, _Plain())
    raise ValueError(f"unknown chain version {version}")


def _v2_document(topic: str, task_id: UUID | str, position: int, state: dict[str, Any], seen: _Plain) -> Any:
    return {
        "chain_version": 2,
        "topic": topic,
        "task": _hex(task_id),
        "position": _v2_value(position, seen),
        "event": _v2_fields(state, seen, leave=_ENVELOPE),
    }


def canonical(topic: str, task_id: UUID | str, position: int, state: dict[str, Any], version: int = CURRENT) -> bytes:
    """The bytes hashed for an event, in the canonical form of chain ``version``."""
    if version == 1:
        return orjson.dumps(document(topic, task_id, position, state, 1), option=orjson.OPT_SORT_KEYS)
    if version == 2:
        seen = _Plain()
        doc = _v2_document(topic, task_id, position, state, seen)
        if seen.plain:
            return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        return rfc8785.dumps(doc)
    raise ValueError(f"unknown chain version {version}")


def _plain_annotation(annotation: Any) -> bool:
    """Whether a field so annotated is dumped (``model_dump(mode="json")``) as a string, a bool or None:
    what JCS and orjson write alike, so the fast form copies it without a look."""
    if annotation in _PLAIN_TYPES:
        return True
    args = get_args(annotation)
    if get_origin(annotation) is Literal:
        return all(type(a) is str for a in args)
    if get_origin(annotation) in (Union, UnionType):
        return all(_plain_annotation(a) for a in args)
    return False


def _walked_fields(model_class: type) -> tuple[str, ...] | None:
    """The stored fields of ``model_class``'s events that ``_v2_value`` must walk (numbers, nested models,
    lists, bounded texts), the rest being plain; None when the class's dump cannot be read off its
    annotations (a custom serializer, a non-ASCII field name): then the whole state is walked."""
    if model_class in _WALKED:
        return _WALKED[model_class]
    walked: tuple[str, ...] | None = None
    decorators = getattr(model_class, "__pydantic_decorators__", None)
    fields = getattr(model_class, "model_fields", None)
    if decorators is not None and fields is not None and not decorators.field_serializers \
            and not decorators.model_serializers and all(name.isascii() for name in fields):
        walked = tuple(name for name, info in fields.items()
                       if name not in _ENVELOPE and not _plain_annotation(info.annotation))
        walked += ("class_version",)  # ``mapper.stored_state`` adds it above version 1
    _WALKED[model_class] = walked
    return walked


def seal_dumped(previous: str, model_class: type, topic: str, task_id: UUID | str, position: int,
                state: dict[str, Any]) -> str:
    """``seal`` in the current version of ``state``, a ``mapper.stored_state`` of a ``model_class``
    event (the append path): the same bytes, fewer steps. The plain fields (strings, bools, None: see
    ``_walked_fields``) go to orjson as they are, the envelope is written around the event's bytes
    rather than built as a document, and anything JCS writes otherwise than orjson falls back to
    ``canonical``. ``tests/test_chain.py`` holds the two to the same bytes."""
    walked = _walked_fields(model_class)
    if walked is None or not -_SAFE_INT <= position <= _SAFE_INT:
        return seal(previous, topic, task_id, position, state)
    event = dict(state)
    for name in _ENVELOPE:
        event.pop(name, None)
    seen = _Plain()
    for name in walked:
        value = event.get(name)
        if value is not None:
            event[name] = _v2_value(value, seen)
    if not seen.plain:
        return seal(previous, topic, task_id, position, state)
    digest = hashlib.sha256(previous.encode("ascii"))
    # JCS sorts the envelope's keys too: chain_version, event, position, task, topic.
    digest.update(b'\n{"chain_version":2,"event":')
    digest.update(orjson.dumps(event, option=orjson.OPT_SORT_KEYS))
    digest.update(b',"position":%d,"task":"%s","topic":' % (position, _hex(task_id).encode("ascii")))
    digest.update(orjson.dumps(topic))
    digest.update(b"}")
    return _PREFIX[CURRENT] + digest.hexdigest()


_PLAIN_TYPES: frozenset[Any] = frozenset({str, bool, type(None), datetime, date, UUID})
_WALKED: dict[type, tuple[str, ...] | None] = {}
"""By event class: the fields ``seal_dumped`` walks (None: the whole state). Classes live as long as the process."""


def link(previous: str, canonical_bytes: bytes) -> str:
    """The bare sha256 step both versions share."""
    return hashlib.sha256(previous.encode("ascii") + b"\n" + canonical_bytes).hexdigest()


def seal(
    previous: str, topic: str, task_id: UUID | str, position: int, state: dict[str, Any], version: int = CURRENT
) -> str:
    """The ``chain`` value of an event: its hash in ``version``'s form, with that version's prefix."""
    return _PREFIX.get(version, "") + link(previous, canonical(topic, task_id, position, state, version))


def version_of(stored_chain: str) -> int:
    """The chain version a stored ``chain`` value was written with (a bare hex hash is v1)."""
    head, sep, _ = stored_chain.partition(":")
    if not sep:
        return 1
    return int(head) if head.isdigit() and int(head) in VERSIONS else 0


def recompute(previous: str, topic: str, task_id: UUID | str, position: int, state: dict[str, Any]) -> str:
    """What the stored event's ``chain`` should be, in the version it claims (``""``: no known version)."""
    version = version_of(str(state.get("chain", "")))
    if version not in VERSIONS:
        return ""
    try:
        return seal(previous, topic, task_id, position, state, version)
    except (ValueError, TypeError):  # content no canonical form can write (rfc8785 refuses it)
        return ""
