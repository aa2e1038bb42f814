"""What the Task aggregate decides on: which intents, decisions and attempts exist, which is open.

This is the aggregate's own state, apart from the brief's bounded view (``projections.state``):
small (positions only), unbounded (a requirement from the first day can still be reworded after
thousands of events), and folded by ``advance``, a pure function. Rules read it and nothing else,
so no view window can change what a command may do.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ledger import events as ev


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


def advance(state: DecisionState, event: ev.TaskEvent) -> DecisionState:
    """The decision state after ``event``. Pure; events that decide nothing return ``state`` itself."""
    pos = event.originator_version
    update: dict[str, Any]
    match event:
        case ev.RequirementStated():
            update = {"requirements": state.requirements | {pos}, "last_intent": pos}
        case ev.RequirementChanged():
            update = {"rewordings": state.rewordings | {pos}, "last_intent": pos}
        case ev.CorrectionMade():
            update = {"corrections": state.corrections | {pos}, "last_intent": pos}
        case ev.IntentReclassified():
            target = {event.target}
            if not (event.target in state.requirements or event.target in state.corrections):
                return state  # a rewording stays one
            update = {"requirements": state.requirements - target, "corrections": state.corrections - target}
            if event.kind == "requirement":
                update["requirements"] = update["requirements"] | target
            elif event.kind == "correction":
                update["corrections"] = update["corrections"] | target
            else:
                update["rewordings"] = state.rewordings | target
        case ev.DecisionRecorded():
            update = {"decisions": state.decisions | {pos}, "last_decision": pos}
        case ev.AttemptStarted():
            update = {"attempts": state.attempts | {pos}, "open_attempt": pos}
        case ev.AttemptEnded():
            update = {"open_attempt": None if state.open_attempt == event.attempt else state.open_attempt}
        case ev.StatusChanged():
            update = {"status": event.status}
        case _:
            return state
    return state.model_copy(update=update)


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
