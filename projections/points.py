"""Points in a task's history, as users name them for `--at`: N, -N, a time, or checkpoint:LABEL."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from ledger.base.errors import BadInput, BadSetting
from ledger.base.lazyregex import lazy
from ledger.domain import events as ev

WHOLE = lazy(r"-?[0-9]+")
"""A whole number as users type one: ASCII digits only (``str.isdigit`` also takes ``²``, which ``int`` refuses)."""


@dataclass(frozen=True)
class Point:
    kind: Literal["position", "back", "time", "checkpoint"]
    position: int = 0
    time: datetime | None = None
    label: str = ""

    @property
    def needs_events(self) -> bool:
        return self.kind in ("time", "checkpoint")


def parse(spec: str) -> Point:
    """Parse an ``--at`` value; a bad one is a one-line BadInput."""
    text = spec.strip()
    if text.startswith("checkpoint:"):
        label = text.removeprefix("checkpoint:")
        if not label:
            raise BadInput("--at checkpoint: needs a label, e.g. checkpoint:green-tests")
        return Point("checkpoint", label=label)
    if WHOLE.fullmatch(text):
        number = int(text)
        if number < 0:
            return Point("back", position=-number)
        if number == 0:
            raise BadInput("--at 0: positions start at 1")
        return Point("position", position=number)
    try:
        return Point("time", time=parse_time(text, "--at"))
    except BadInput:
        raise BadInput(
            f"--at {spec!r}: expected a position (4), a count back (-5), a time (2026-11-28T14:00) "
            "or checkpoint:LABEL"
        ) from None


def parse_time(text: str, option: str) -> datetime:
    """An ISO time; without a zone it is taken as UTC."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"{option} {text!r}: expected an ISO time such as 2026-11-28T14:00") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def locate(point: Point, last: int, events: Iterable[ev.TaskEvent] = ()) -> int:
    """The position ``point`` names in a task whose last position is ``last``."""
    if point.kind == "position":
        if point.position > last:
            raise BadInput(f"--at {point.position} is past the end: the task has {last} events")
        return point.position
    if point.kind == "back":
        if point.position >= last:
            raise BadInput(f"--at -{point.position} goes before the first event: the task has {last} events")
        return last - point.position
    found = 0
    for event in events:
        if point.kind == "time":
            assert point.time is not None
            if event.timestamp > point.time:
                break
            found = event.originator_version
        elif isinstance(event, ev.CheckpointMarked) and event.label == point.label:
            found = event.originator_version  # the latest checkpoint of that name wins
    if found == 0:
        if point.kind == "time":
            raise BadInput(f"--at {point.time:%Y-%m-%dT%H:%M:%S%z} is before the task was opened")
        raise BadInput(f"--at checkpoint:{point.label}: no checkpoint with that label")
    return found


_AGE = lazy(r"^(\d+)([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_age(value: str, option: str = "--older-than") -> timedelta:
    """An age such as 30d, 12h or 90m."""
    match = _AGE.match(value.strip())
    if not match:
        raise BadSetting(f"{option} must look like 30d, 12h or 90m, not {value!r}")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
