"""The chain's canonical forms: v1 (orjson, sorted keys) for ledgers written before, v2 (RFC 8785) from now on."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_serializer

from ledger.app import sample
from ledger.app.store import open_ledger
from ledger.app.verify import verify_task
from ledger.base.location import Location
from ledger.domain import chain
from ledger.domain import events as ev
from tests import old_ledgers

TASK = "5f0c6b1e0d3a4e3f9f1d2c3b4a596877"


def _rows(path: Path, task: str) -> list[tuple[int, str, bytes]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT originator_version, topic, state FROM stored_events WHERE originator_id = ? "
            "ORDER BY originator_version",
            (task,),
        ).fetchall()
    finally:
        db.close()


def _rewrite(path: Path, task: str, position: int, state: dict[str, Any]) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "UPDATE stored_events SET state = ? WHERE originator_id = ? AND originator_version = ?",
            (orjson.dumps(state), task, position),
        )
    db.close()


def _as_v1(path: Path, task: str) -> None:
    """Re-chain a task's stored rows the way tasktrail did before chains had a version."""
    previous = chain.GENESIS
    for position, topic, raw in _rows(path, task):
        state = orjson.loads(raw)
        state["chain"] = previous = chain.link(
            previous, orjson.dumps(chain.document(topic, task, position, state, version=1), option=orjson.OPT_SORT_KEYS)
        )
        _rewrite(path, task, position, state)


def _v1_by_hand(topic: str, task: str, position: int, state: dict[str, Any]) -> bytes:
    """The v1 canonical bytes as the code before chain versions wrote them (kept here as the reference)."""
    kept = {k: v for k, v in state.items() if k not in ("chain", "originator_id", "originator_version")}
    doc = {k: chain._tails_hashed(v) for k, v in kept.items()}
    doc["topic"], doc["task"], doc["position"] = topic, task, position
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


@pytest.mark.sqlite_only("rewrites SQLite rows into the old chain form")
def test_a_ledger_written_before_chain_versions_still_verifies_and_grows_in_v2(location: Location) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    task = final.id.hex
    app.close()
    _as_v1(location.sqlite_path, task)
    with sqlite3.connect(location.sqlite_path) as db:  # nor anchors, nor a chained task list
        old_ledgers.as_before_anchors(db)
    old = _rows(location.sqlite_path, task)
    assert all(chain.version_of(orjson.loads(raw)["chain"]) == 1 for _, _, raw in old)
    previous = chain.GENESIS
    for position, topic, raw in old:  # the rewrite is the old code's form, byte for byte
        state = orjson.loads(raw)
        assert state["chain"] == chain.link(previous, _v1_by_hand(topic, task, position, state))
        previous = state["chain"]

    app = open_ledger(location)
    report = verify_task(app, final.id)
    assert report.ok and report.events == len(old)
    app.append(final.id, ev.NoteAdded, text="written after the upgrade")
    app.append(final.id, ev.NextStepSet, text="and one more")
    report = verify_task(app, final.id)
    assert report.ok and report.events == len(old) + 2 and report.head.startswith("2:")
    app.close()
    new = _rows(location.sqlite_path, task)[len(old):]
    assert [chain.version_of(orjson.loads(raw)["chain"]) for _, _, raw in new] == [2, 2]


@pytest.mark.sqlite_only("reads SQLite rows directly")
def test_new_events_hash_the_rfc8785_bytes_of_their_document(location: Location) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    app.close()
    previous = chain.GENESIS
    for position, topic, raw in _rows(location.sqlite_path, final.id.hex):
        state = orjson.loads(raw)
        doc = chain.document(topic, final.id, position, state)
        assert doc["chain_version"] == 2 and "chain" not in doc["event"]
        expected = "2:" + hashlib.sha256(previous.encode() + b"\n" + rfc8785.dumps(doc)).hexdigest()
        assert state["chain"] == expected, f"position {position}"
        previous = expected


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
@pytest.mark.parametrize("form", ["v1", "v2"])
@pytest.mark.parametrize("position", [3, 19])
def test_tampering_is_caught_under_both_forms(location: Location, form: str, position: int) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    app.close()
    task = final.id.hex
    if form == "v1":
        _as_v1(location.sqlite_path, task)
    state = orjson.loads(dict((p, raw) for p, _, raw in _rows(location.sqlite_path, task))[position])
    state["actor"] = "agent:mallory"
    _rewrite(location.sqlite_path, task, position, state)
    app = open_ledger(location)
    report = verify_task(app, final.id)
    app.close()
    assert report.first_break is not None and report.first_break.position == position
    assert report.first_break.kind == ("altered" if position < 19 else "out of place")


@pytest.mark.sqlite_only("tampers with SQLite rows directly")
@pytest.mark.parametrize("forged", ["", "1:", "3:", "x:"])
def test_a_rewritten_version_prefix_is_caught(location: Location, forged: str) -> None:
    """Relabelling an event's chain version (dropping or changing ``2:``) breaks the chain."""
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    app.close()
    task = final.id.hex
    state = orjson.loads(_rows(location.sqlite_path, task)[6][2])
    state["chain"] = forged + state["chain"].removeprefix("2:")
    _rewrite(location.sqlite_path, task, 7, state)
    app = open_ledger(location)
    report = verify_task(app, final.id)
    app.close()
    assert report.first_break is not None and report.first_break.position == 7


def test_version_of() -> None:
    assert chain.version_of("ab" * 32) == 1
    assert chain.version_of("2:" + "ab" * 32) == 2
    assert chain.version_of("9:" + "ab" * 32) == 0 and chain.version_of("x:y") == 0


# -- the canonical bytes are RFC 8785's --------------------------------------------------------

# Keys from the whole of Unicode (JCS orders them by UTF-16 code units, which differs from code
# point order above U+FFFF), strings with control characters, integers past 2^53 and floats of
# every magnitude: everything a stored state could hold, and more than our events do.
_keys = st.one_of(st.text(max_size=6), st.sampled_from(["tail", "size", "truncated", "a", "\ue000", "\U0001f600"]))
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), _text,
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
)
_bounded = st.fixed_dictionaries(
    {"tail": _text, "size": st.integers(0, 10**6), "truncated": st.booleans()},
    optional={"sha256": _text, "collected": st.booleans(), "tail_sha256": _text},
)
_values = st.recursive(
    st.one_of(_scalars, _bounded),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=20,
)
_states = st.dictionaries(_keys, _values, max_size=8)


@settings(max_examples=400, deadline=None)
@given(state=_states, topic=_text, position=st.integers(1, 2**40))
def test_canonical_bytes_are_rfc8785_of_the_document(state: dict[str, Any], topic: str, position: int) -> None:
    doc = chain.document(topic, TASK, position, state)
    assert chain.canonical(topic, TASK, position, state) == rfc8785.dumps(doc)


@settings(max_examples=200, deadline=None)
@given(state=_states)
def test_the_document_keeps_what_the_chain_must_cover(state: dict[str, Any]) -> None:
    doc = chain.document("t", TASK, 4, state)
    assert set(doc) == {"chain_version", "topic", "task", "position", "event"}
    assert set(doc["event"]) == set(state) - {"chain", "originator_id", "originator_version"}
    changed = {**state, "__extra__": 1}
    assert chain.canonical("t", TASK, 4, changed) != chain.canonical("t", TASK, 4, state)


def test_integers_beyond_ijson_enter_as_their_decimal_string() -> None:
    state = {"size": 2**60, "n": -(2**53)}
    doc = chain.document("t", TASK, 1, state)
    assert doc["event"] == {"size": str(2**60), "n": str(-(2**53))}
    assert chain.canonical("t", TASK, 1, state) == rfc8785.dumps(doc)


def test_a_collected_tail_keeps_its_hash_in_both_forms() -> None:
    tail = "x" * 100
    whole = {"output": {"tail": tail, "size": 100, "truncated": False}}
    collected = {"output": {"tail": "", "size": 100, "truncated": False, "collected": True,
                            "tail_sha256": hashlib.sha256(tail.encode()).hexdigest()}}
    for version in chain.VERSIONS:
        assert chain.canonical("t", TASK, 1, whole, version) == chain.canonical("t", TASK, 1, collected, version)


# -- the append path's form (``seal_dumped``) is the same bytes -------------------------------------

# Every character but lone surrogates (which no stored text holds: orjson refuses them), control
# characters and characters above U+FFFF included.
_any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_some_text = _any_text.map(lambda t: t.strip() or "x")  # the events' texts are stripped, non-empty
_big = st.integers(0, 2**63 - 1)  # past 2^53 too: those enter as their decimal string
_position = st.integers(1, 2**40)
_bounded_value = st.builds(ev.Bounded, tail=_any_text, size=_big, sha256=st.none() | _any_text,
                           truncated=st.booleans(), collected=st.booleans(), tail_sha256=st.none() | _any_text)
_why = st.none() | st.builds(ev.Provenance, attempt=st.none() | _position, intent=st.none() | _position,
                             decision=st.none() | _position, explicit=st.booleans())
_source = st.none() | st.builds(ev.SourceKey, agent=_any_text, session=_any_text, record=_any_text)
_common = {"actor": st.sampled_from(["user", "agent:claude", "tool:ruff"]), "causation": st.none() | _position,
           "source": _source}
_events = st.one_of(
    st.fixed_dictionaries({"cls": st.just(ev.CommandRan), "because": _why, "shell": st.none() | _any_text,
                           "argv": st.none() | st.lists(_any_text, max_size=4).map(tuple),
                           "exit_code": st.none() | st.integers(-(2**31), 2**32 - 1), "duration_ms": st.none() | _big,
                           "stdout": st.none() | _bounded_value, "stderr": st.none() | _bounded_value, **_common}),
    st.fixed_dictionaries({"cls": st.just(ev.ToolResult), "because": _why, "tool": _any_text, "ok": st.booleans(),
                           "output": _bounded_value, "refused": st.sampled_from([None, "stopped", "not_run"]),
                           **_common}),
    st.fixed_dictionaries({"cls": st.just(ev.DecisionRecorded), "text": _some_text, "reason": st.none() | _any_text,
                           "rejected": st.lists(_any_text, max_size=3).map(tuple), **_common}),
    st.fixed_dictionaries({"cls": st.just(ev.PlanUpdated), **_common, "steps": st.lists(st.builds(
        ev.PlanStep, text=_some_text, status=st.sampled_from(["pending", "in_progress", "completed"]),
        id=st.none() | _any_text), min_size=1, max_size=3).map(tuple)}),
    st.fixed_dictionaries({"cls": st.just(ev.TestResult), "name": _any_text, "outcome": st.just("passed"),
                           "passed": st.none() | _big, "message": st.none() | _any_text, **_common}),
)


@settings(max_examples=400, deadline=None)
@given(fields=_events, position=_position, previous=st.sampled_from(["", "2:" + "ab" * 32]))
def test_the_append_paths_form_is_the_rfc8785_bytes(fields: dict[str, Any], position: int, previous: str) -> None:
    from ledger.domain.mapper import stored_state

    cls = fields.pop("cls")
    when = datetime(2026, 1, 1, tzinfo=UTC)
    event = cls(originator_id=UUID(TASK), originator_version=position, timestamp=when, **fields)
    state = stored_state(event)
    del state["originator_id"], state["originator_version"]
    reference = "2:" + chain.link(previous, rfc8785.dumps(chain.document(cls.TOPIC, TASK, position, state)))
    assert chain.seal_dumped(previous, cls, cls.TOPIC, TASK, position, state) == reference


def test_the_append_paths_form_seals_every_bench_event_as_seal_does() -> None:
    from bench import workload
    from ledger.domain.mapper import stored_state

    seen = set()
    for position, (cls, fields) in enumerate(workload.Workload(7).items(3_000), start=2):
        state = stored_state(cls(originator_id=UUID(TASK), originator_version=position, **fields))
        del state["originator_id"], state["originator_version"]
        assert chain.seal_dumped("", cls, cls.TOPIC, TASK, position, state) == chain.seal("", cls.TOPIC, TASK,
                                                                                        position, state)
        seen.add(cls)
    assert len(seen) >= 10


class _Unusual(BaseModel):
    """What no event holds today: a float, a free dict (non-ASCII keys), a custom serializer."""

    ratio: float
    extra: dict[str, Any]


class _Serialised(BaseModel):
    when: str

    @field_serializer("when")
    def _upper(self, value: str) -> str:
        return value.upper()


@settings(max_examples=200, deadline=None)
@given(ratio=st.floats(allow_nan=False, allow_infinity=False), extra=st.dictionaries(_keys, _values, max_size=3))
def test_what_orjson_writes_otherwise_falls_back_to_rfc8785(ratio: float, extra: dict[str, Any]) -> None:
    state = _Unusual(ratio=ratio, extra=extra).model_dump(mode="json")
    assert chain.seal_dumped("", _Unusual, "t", TASK, 3, state) == chain.seal("", "t", TASK, 3, state)
    assert chain._walked_fields(_Serialised) is None  # its dump is not its annotations': all of it is walked
