"""What the Task aggregate decides on: which intents, decisions and attempts exist, which is open.

This is the aggregate's own state, apart from the brief's bounded view (``projections.state``),
and its size does not grow with the task: it holds the open and latest positions, the latest
stated requirement, and the few positions the user reclassified. What kind of event sits at any
other position (a requirement from the first day can still be reworded after a million events)
is looked up in the log when a rule asks (``Task.kind_of``, through a ``History``), since an
event's type never changes. Folded by ``advance``, a pure function; rules read it and the log,
so no view window can change what a command may do.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict, field_serializer

from ledger.domain import events as ev

Kind = Literal["requirement", "correction", "change", "decision", "attempt"]
"""What the event at a position is to the rules; ``change``: a requirement change (rewording)."""

KIND_OF: dict[type[ev.TaskEvent], Kind] = {
    ev.RequirementStated: "requirement", ev.CorrectionMade: "correction", ev.RequirementChanged: "change",
    ev.DecisionRecorded: "decision", ev.AttemptStarted: "attempt",
}
"""Each kind's event: what a position is when nobody reclassified it."""

MOVABLE: frozenset[Kind | None] = frozenset({"requirement", "correction"})
"""The kinds a reclassification moves (a rewording stays one; a decision or attempt is no intent)."""


class History(Protocol):
    """The task's stored log, as the rules look positions up in it (live and archived rows alike)."""

    def type_at(self, task_id: UUID, position: int) -> type[ev.TaskEvent] | None:
        """The class of the stored event at ``position``, None when there is none."""
        ...

    def types_at(self, task_id: UUID, positions: Iterable[int]) -> dict[int, type[ev.TaskEvent] | None]:
        """``type_at`` of each of ``positions``, in one look-up."""
        ...

    def earlier(self, task_id: UUID, event_class: type[ev.TaskEvent], before: int) -> Iterator[int]:
        """Positions below ``before`` of the stored events of ``event_class``, latest first."""
        ...


class DecisionState(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    latest_stated: int | None = None
    """Position of the latest ``RequirementStated`` (reclassified or not): where a search for the
    latest requirement in force starts."""
    reclassified: dict[int, Literal["requirement", "correction", "change"]] = {}
    """What the user made of a position (``IntentReclassified``), where it moved it: a requirement or
    correction that became a rewording stays one. Applies only to a requirement or correction."""
    open_attempt: int | None = None
    last_intent: int | None = None
    """Position of the latest requirement, requirement change or correction."""
    last_decision: int | None = None
    status: ev.Status = "active"

    @field_serializer("reclassified", when_used="json")
    def _in_order(self, moved: dict[int, str]) -> dict[int, str]:
        # Stored in order: the same state must give the same snapshot bytes however it was reached.
        return dict(sorted(moved.items()))


_VALUES = ("latest_stated", "open_attempt", "last_intent", "last_decision", "status")


class Rules:
    """A decision state the aggregate advances in place: what its rules read, event by event.

    The aggregate keeps one of these and freezes it only when the frozen form is asked for (a
    snapshot, a caller); ``apply`` is the one definition of the rules' fold.
    """

    __slots__ = ("reclassified", *_VALUES)

    reclassified: dict[int, Literal["requirement", "correction", "change"]]
    latest_stated: int | None
    open_attempt: int | None
    last_intent: int | None
    last_decision: int | None
    status: ev.Status

    def __init__(self, state: DecisionState | Rules) -> None:
        self.reclassified = dict(state.reclassified)
        for name in _VALUES:
            setattr(self, name, getattr(state, name))

    def frozen(self) -> DecisionState:
        # Built from a validated state by validated events: constructed, not validated again.
        values: dict[str, Any] = {name: getattr(self, name) for name in _VALUES}
        return DecisionState.model_construct(None, reclassified=dict(self.reclassified), **values)

    def __deepcopy__(self, memo: dict[int, Any]) -> Rules:
        return Rules(self)  # its own map; the values are immutable

    def __eq__(self, other: object) -> bool:
        # By value: the library compares aggregates attribute by attribute, so a task and its copy are equal.
        return type(other) is Rules and all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # changed in place: not a key

    def apply(self, event: ev.TaskEvent) -> bool:
        """Advance by ``event``, in place; whether anything changed."""
        pos = event.originator_version
        match event:
            case ev.RequirementStated():
                self.latest_stated = pos
                self.last_intent = pos
            case ev.RequirementChanged() | ev.CorrectionMade():
                self.last_intent = pos
            case ev.IntentReclassified():
                target = event.target
                if target >= pos or self.reclassified.get(target) == "change":
                    return False  # nothing there yet; a rewording stays one
                # Whether ``target`` is a requirement or correction is the log's to say (``Task.kind_of``
                # applies the move only then), so the fold needs no look-up.
                self.reclassified[target] = event.kind
            case ev.DecisionRecorded():
                self.last_decision = pos
            case ev.AttemptStarted():
                self.open_attempt = pos
            case ev.AttemptEnded():
                if self.open_attempt == event.attempt:
                    self.open_attempt = None
            case ev.StatusChanged():
                self.status = event.status
            case _:
                return False
        return True


RulesView = Rules | DecisionState
"""What the rules read: the task's working copy when it has one, else the frozen state (same names)."""

DECIDING = frozenset({
    ev.RequirementStated, ev.RequirementChanged, ev.CorrectionMade, ev.IntentReclassified, ev.DecisionRecorded,
    ev.AttemptStarted, ev.AttemptEnded, ev.StatusChanged,
})
"""The event types ``Rules.apply`` acts on (exact types: an isinstance check of a pydantic class is slow);
the rest leave the decision state as it is."""


def advance(state: DecisionState, event: ev.TaskEvent) -> DecisionState:
    """The decision state after ``event``. Pure; events that decide nothing return ``state`` itself."""
    rules = Rules(state)
    return rules.frozen() if rules.apply(event) else state


def from_sets(old: dict[str, Any]) -> dict[str, Any]:
    """A decision state from a stored one of snapshot v2-v4, which kept every position of each kind.

    Exact without the log: every intent position the old sets hold goes into ``reclassified`` as the
    kind it had then (a position's own kind there is harmless: ``Task.kind_of`` gives the same).
    Decisions and attempts are the log's to say. The ledger trims the map on load (``Ledger``)."""
    moved: dict[int, str] = {}
    for key, kind in (("requirements", "requirement"), ("corrections", "correction"), ("rewordings", "change")):
        moved.update((int(position), kind) for position in old.get(key) or ())
    requirements = [int(p) for p in old.get("requirements") or ()]
    return {
        "latest_stated": max(requirements) if requirements else None,
        "reclassified": dict(sorted(moved.items())),
        **{name: old.get(name) for name in ("open_attempt", "last_intent", "last_decision")},
        "status": old.get("status", "active"),
    }


def from_view(view: dict[str, Any]) -> dict[str, Any]:
    """A v2 decision state (sets of positions) derived from a stored v1 snapshot's view (the only
    state v1 kept); ``from_sets`` takes it on to today's form.

    Exact for tasks within the view's windows. Beyond them v1 had forgotten the older positions;
    they are now the log's to say (``Task.kind_of``), save a reclassification v1 had forgotten too.
    """

    def positions(key: str) -> list[int]:
        return sorted(int(item["position"]) for item in view.get(key) or ())

    rewordings = sorted(int(r["changed_at"]) for r in view.get("requirements") or () if r.get("changed_at"))
    return {
        "requirements": positions("requirements"),
        "rewordings": rewordings,
        "corrections": positions("corrections"),
        "decisions": positions("decisions"),
        "attempts": positions("attempts"),
        "open_attempt": view.get("open_attempt"),
        "last_intent": view.get("last_intent"),
        "last_decision": view.get("last_decision"),
        "status": view.get("status", "active"),
    }
