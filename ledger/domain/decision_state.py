"""What the Task aggregate decides on: which intents, decisions and attempts exist, which is open.

This is the aggregate's own state, apart from the brief's bounded view (``projections.state``):
small (positions only), unbounded (a requirement from the first day can still be reworded after
thousands of events), and folded by ``advance``, a pure function. Rules read it and nothing else,
so no view window can change what a command may do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_serializer

from ledger.domain import events as ev


class DecisionState(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    requirements: frozenset[int] = frozenset()
    """Positions of the requirements in force (rewordings keep the original's position)."""
    rewordings: frozenset[int] = frozenset()
    """Positions of requirement changes (and prompts reclassified as one): intents a cause may name."""
    corrections: frozenset[int] = frozenset()
    decisions: frozenset[int] = frozenset()
    attempts: frozenset[int] = frozenset()
    open_attempt: int | None = None
    last_intent: int | None = None
    """Position of the latest requirement, requirement change or correction."""
    last_decision: int | None = None
    status: ev.Status = "active"

    @property
    def latest_requirement(self) -> int | None:
        return max(self.requirements) if self.requirements else None

    def is_intent(self, position: int) -> bool:
        return position in self.requirements or position in self.corrections or position in self.rewordings

    @field_serializer("requirements", "rewordings", "corrections", "decisions", "attempts", when_used="json")
    def _in_order(self, positions: frozenset[int]) -> list[int]:
        # Stored in order: a set's own order depends on how it was built (one write or many), and
        # the same state must give the same snapshot bytes however it was reached.
        return sorted(positions)


_SETS = ("requirements", "rewordings", "corrections", "decisions", "attempts")
_VALUES = ("open_attempt", "last_intent", "last_decision", "status")


class Rules:
    """A decision state the aggregate advances in place: what its rules read, event by event.

    ``advance`` on the frozen state copies every set it adds to, so a task with thousands of
    decisions and attempts paid for all of them on each new one (a 1M-event import slowed to half
    its early rate). The aggregate keeps one of these instead and freezes it only when the frozen
    form is asked for (a snapshot, a caller); ``apply`` is the one definition of the rules' fold.
    """

    __slots__ = (*_SETS, *_VALUES)

    requirements: set[int]
    rewordings: set[int]
    corrections: set[int]
    decisions: set[int]
    attempts: set[int]
    open_attempt: int | None
    last_intent: int | None
    last_decision: int | None
    status: ev.Status

    def __init__(self, state: DecisionState | Rules) -> None:
        for name in _SETS:
            setattr(self, name, set(getattr(state, name)))
        for name in _VALUES:
            setattr(self, name, getattr(state, name))

    def frozen(self) -> DecisionState:
        # Built from a validated state by validated events: constructed, not validated again
        # (validating every position of a long task's sets is what this class exists to avoid).
        values: dict[str, Any] = {name: frozenset(getattr(self, name)) for name in _SETS}
        values.update((name, getattr(self, name)) for name in _VALUES)
        return DecisionState.model_construct(None, **values)

    @property
    def latest_requirement(self) -> int | None:
        return max(self.requirements) if self.requirements else None

    def is_intent(self, position: int) -> bool:
        return position in self.requirements or position in self.corrections or position in self.rewordings

    def __deepcopy__(self, memo: dict[int, Any]) -> Rules:
        return Rules(self)  # its own sets; the values are immutable

    def __eq__(self, other: object) -> bool:
        # By value: the library compares aggregates attribute by attribute, so a task and its copy are equal.
        return type(other) is Rules and all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # changed in place: not a key

    def apply(self, event: ev.TaskEvent) -> bool:
        """Advance by ``event``, in place; whether anything changed."""
        pos = event.originator_version
        match event:
            case ev.RequirementStated():
                self.requirements.add(pos)
                self.last_intent = pos
            case ev.RequirementChanged():
                self.rewordings.add(pos)
                self.last_intent = pos
            case ev.CorrectionMade():
                self.corrections.add(pos)
                self.last_intent = pos
            case ev.IntentReclassified():
                target = event.target
                if not (target in self.requirements or target in self.corrections):
                    return False  # a rewording stays one
                self.requirements.discard(target)
                self.corrections.discard(target)
                if event.kind == "requirement":
                    self.requirements.add(target)
                elif event.kind == "correction":
                    self.corrections.add(target)
                else:
                    self.rewordings.add(target)
            case ev.DecisionRecorded():
                self.decisions.add(pos)
                self.last_decision = pos
            case ev.AttemptStarted():
                self.attempts.add(pos)
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


def from_view(view: dict[str, Any]) -> dict[str, Any]:
    """A decision state derived from a stored v1 snapshot's view (the only state v1 kept).

    Exact for tasks within the view's windows; beyond them v1 had already forgotten the older
    positions, so they stay unknown, as they were to v1's rules.
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
