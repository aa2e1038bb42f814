"""The Task aggregate: decides whether a fact may be recorded, then appends it as an event.

It keeps only what it decides with: ``decision`` (``ledger.domain.decision_state``), the small
state its rules read, advanced by every event, whose size does not grow with the task (what kind
of event sits at an older position is looked up in the log: ``kind_of``); its number; and the head
of its hash chain. The brief's view is a projection of the events with snapshots of its own
(``ledger.app.views``), so an append never folds it and a change of that fold never touches a
task snapshot. Snapshots are versioned: older ones (which carried the view) upcast on read.
Each appended event is linked into the task's hash chain before it is applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from copy import deepcopy
from datetime import datetime
from typing import Any, ClassVar, cast
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, ProgrammingError
from eventsourcing.utils import get_topic

from ledger.base.errors import RuleBroken
from ledger.domain import chain
from ledger.domain import decision_state as ds
from ledger.domain import events as ev
from ledger.domain.decision_state import DECIDING, KIND_OF, MOVABLE, DecisionState, Rules, RulesView
from ledger.domain.mapper import stored_state
from ledger.domain.snapshot import ModelSnapshot, SnapshotBody


def task_id_for(number: int) -> UUID:
    """Task ids derive from their number, so two writers cannot both create task N."""
    return uuid5(NAMESPACE_URL, f"tasktrail:task/{number}")


def linked(previous: str, event: ev.TaskEvent) -> ev.TaskEvent:
    """``event`` with its chain hash set, given the previous event's hash."""
    digest, _ = chained(previous, event)
    return event.model_copy(update={"chain": digest})


def chained(previous: str, event: ev.TaskEvent) -> tuple[str, dict[str, Any]]:
    """``event``'s chain hash, and the state it is stored as with that hash in it (``ledger.domain.mapper``:
    without id and version). The event is serialised once: the hash is computed from that same dict."""
    state = stored_state(event)
    del state["originator_id"], state["originator_version"]  # columns; the hash takes them apart
    kind = type(event)
    digest = chain.seal_dumped(previous, kind, get_topic(kind), event.originator_id, event.originator_version, state)
    state["chain"] = digest  # the field keeps its place: the dict is what model_dump gives of the sealed event
    return digest, state


class TaskBody(SnapshotBody):
    head: str
    decision: DecisionState
    number: int


class TaskSnapshot(ModelSnapshot):
    """A snapshot of a task: its decision state, its number and the chain head at a position.

    v1 held the brief's view alone (and the rules read it); v2 added the decision state, derived
    from the view when an older snapshot is read; v3 named the fold that made the view; v4 holds
    no view (the view has snapshots of its own): the number is taken from an older one's view,
    and the rest of that view is dropped, to be folded again from the events when read; v5's
    decision state keeps no sets of positions (``decision_state.from_sets``)."""

    TOPIC: ClassVar[str] = "tasktrail/TaskSnapshot"
    class_version: ClassVar[int] = 5
    state: TaskBody

    @staticmethod
    def upcast_v1_v2(stored: dict[str, Any]) -> None:
        body = stored["state"]
        body["decision"] = ds.from_view(body.get("state") or {})

    @staticmethod
    def upcast_v2_v3(stored: dict[str, Any]) -> None:
        stored["state"]["fold_version"] = 1

    @staticmethod
    def upcast_v3_v4(stored: dict[str, Any]) -> None:
        body = stored["state"]
        view = body.pop("state", None) or {}
        body.pop("fold_version", None)
        body["number"] = view.get("number") or 0

    @staticmethod
    def upcast_v4_v5(stored: dict[str, Any]) -> None:
        body = stored["state"]
        body["decision"] = ds.from_sets(body.get("decision") or {})


class Task(Aggregate):
    TOPIC = "tasktrail/Task"
    # Our pydantic classes stand in for the library's generated event classes.
    Event = ev.TaskEvent  # type: ignore[assignment]
    Created = ev.TaskOpened  # type: ignore[assignment]
    Snapshot = TaskSnapshot  # type: ignore[assignment]

    head: str
    number: int
    """The task's number, from its opening event (a refusal names it; nothing else changes it)."""
    snapshot_every: int = 0
    """K, set by the ledger that loaded this task: at every K-th position the task offers a
    snapshot of itself as it is then, so saving need not rebuild that version from the store."""
    history: ds.History | None = None
    """The stored log, set by the ledger that loaded this task: where ``kind_of`` looks positions up
    (the events recorded since the load are the task's own, ``pending_events``)."""

    @classmethod
    def open(
        cls, number: int, title: str, slug: str, cwd: str | None, actor: str = "user",
        project: str | None = None, timestamp: datetime | None = None,
    ) -> Task:
        """A new task; ``timestamp`` is when it began (an imported session's first record), else now."""
        task_id = task_id_for(number)
        timestamp = timestamp or ev.TaskOpened.create_timestamp()
        draft = ev.TaskOpened(
            originator_id=task_id,
            originator_version=cls.INITIAL_VERSION,
            originator_topic=get_topic(cls),
            timestamp=timestamp,
            number=number,
            title=title,
            slug=slug,
            cwd=cwd,
            project=project,
            actor=actor,
        )
        opened = linked(chain.GENESIS, draft)
        fields = opened.model_dump(exclude={"originator_id", "originator_version", "originator_topic"})
        task: Task = cls._create(ev.TaskOpened, id=task_id, **fields)
        return task

    def __init__(self) -> None:
        self.decision = DecisionState()
        self.head = chain.GENESIS
        self.number = 0

    @property
    def decision(self) -> DecisionState:
        """What the rules read at this version, frozen (for a snapshot, or a caller to keep)."""
        frozen: DecisionState | None = self.__dict__["_decision"]
        if frozen is None:
            frozen = self.__dict__["_decision"] = self.__dict__["_rules"].frozen()
        return frozen

    @decision.setter
    def decision(self, value: DecisionState) -> None:
        self.__dict__["_decision"] = value
        self.__dict__["_rules"] = None  # made from it when an event first advances it

    @property
    def rules(self) -> RulesView:
        """What the rules read at this version: read, never change."""
        rules: RulesView = self.__dict__["_rules"] or self.__dict__["_decision"]
        return rules

    # -- what the rules look up --------------------------------------------------

    def _type_at(self, position: int) -> type[ev.TaskEvent] | None:
        """The class of the event at ``position``: recorded since the load, or stored."""
        if not 0 < position <= self.version:
            return None
        first_pending = self.version - len(self.pending_events) + 1
        if position >= first_pending:
            return type(cast(ev.TaskEvent, self.pending_events[position - first_pending]))
        if self.history is None:
            raise RuntimeError("a task read without its ledger cannot look up its stored events")
        return self.history.type_at(self.id, position)

    def kind_of(self, position: object) -> ds.Kind | None:
        """What the event at ``position`` is to the rules now: its own kind, or, for a requirement or
        correction, what the user reclassified it as; None for any other event or none at all."""
        if type(position) is not int:
            return None
        own = KIND_OF.get(self._type_at(position))  # type: ignore[arg-type]
        return self.rules.reclassified.get(position, own) if own in MOVABLE else own

    def latest_requirement(self, before: int | None = None) -> int | None:
        """The position of the latest requirement in force (below ``before`` when given), or None."""
        bound = self.version + 1 if before is None else before
        moved = self.rules.reclassified
        best = max((p for p, kind in moved.items() if kind == "requirement" and p < bound
                    and KIND_OF.get(self._type_at(p)) in MOVABLE), default=None)  # type: ignore[arg-type]
        for position in self._stated_before(bound):
            if best is not None and position < best:
                break
            if moved.get(position, "requirement") == "requirement":
                return position
        return best

    def _stated_before(self, bound: int) -> Iterator[int]:
        """Positions below ``bound`` of ``RequirementStated`` events, latest first: the newest from
        the state itself, older ones from this load's events, then the log (a search only when the
        newest was reclassified away, or for an older bound)."""
        top = self.rules.latest_stated
        if top is None:
            return
        if top < bound:
            yield top
            bound = top
        first_pending = self.version - len(self.pending_events) + 1
        for event in reversed(self.pending_events):
            if event.originator_version < bound and type(event) is ev.RequirementStated:
                yield event.originator_version
        if self.history is not None:
            yield from self.history.earlier(self.id, ev.RequirementStated, min(bound, first_pending))

    def trimmed(self) -> None:
        """Drop the reclassifications that say what the log says already (an upcast state holds every
        intent position of its task): the same answers from a state that does not grow with the task."""
        moved = self.rules.reclassified
        first_pending = self.version - len(self.pending_events) + 1
        stored = [p for p in moved if p < first_pending]
        types = self.history.types_at(self.id, stored) if self.history is not None and stored else {}
        types.update((p, self._type_at(p)) for p in moved if p >= first_pending)
        kept = {p: kind for p, kind in moved.items() if (own := KIND_OF.get(types.get(p))) in MOVABLE  # type: ignore[arg-type]
                and own != kind}
        if len(kept) != len(moved):
            self.decision = self.decision.model_copy(update={"reclassified": kept})

    def fold_event(self, event: ev.TaskEvent) -> None:
        # The rules' state, in place: the next event's rules read it.
        if type(event) is ev.TaskOpened:
            self.number = event.number
        elif type(event) in DECIDING:
            rules: Rules | None = self.__dict__["_rules"]
            if rules is None:  # the first since the frozen state was set: one copy, then in place
                rules = self.__dict__["_rules"] = Rules(self.__dict__["_decision"])
            if rules.apply(event):
                self.__dict__["_decision"] = None  # frozen again when next asked for
        self.head = event.chain

    def trigger_event(self, event_class: type[Any], **kwargs: Any) -> None:
        # Replaces the library's own, which every event of a batch paid for: a topic-registration
        # check, a copy of the arguments, then ``mutate``'s id and version checks of an event it had
        # just numbered itself, before the fold; and the chain hash needed the event serialised
        # again. Here the event is built at the next position (pydantic validates it: a refused
        # event changes nothing), serialised once for both its chain hash and its stored row
        # (``chained``; handed to the mapper by ``prepared_states``), applied to the rules, and queued.
        if not event_class.__dict__.get("TOPIC"):
            # Refused as the library refuses the base class and a topic not the class's own: stored,
            # such an event would carry its module path, which a module move breaks.
            raise ProgrammingError(f"{event_class.__qualname__} has no TOPIC of its own; it cannot be recorded")
        position = self.version + 1
        kwargs["originator_id"] = self.id
        kwargs["originator_version"] = position
        if kwargs.get("timestamp") is None:
            kwargs["timestamp"] = event_class.create_timestamp()
        event = event_class(**kwargs)
        digest, state = chained(self.head, event)
        # Built just above and held by nothing else yet, the event gets its hash in place rather
        # than as a copy of the whole model (a copy cost 5 us an event, a tenth of a batched append).
        event.__dict__["chain"] = digest
        event.__pydantic_fields_set__.add("chain")
        self.fold_event(event)
        self.version = position
        self.modified_on = event.timestamp
        self.pending_events.append(event)
        self.__dict__.setdefault("prepared", {})[id(event)] = (event, state)
        if self.snapshot_every and position % self.snapshot_every == 0:
            self.__dict__.setdefault("due_snapshots", []).append(TaskSnapshot.take(self))

    def copy_event(self, event_class: type[ev.TaskEvent], **fields: Any) -> None:
        """Append an event another task recorded, as it was (``Ledger.branch``): its rules held once."""
        self.trigger_event(event_class, **fields)

    def offered_snapshots(self) -> list[TaskSnapshot]:
        """The snapshots this task took of itself at each K-th position since it was read (taken once)."""
        due: list[TaskSnapshot] = self.__dict__.pop("due_snapshots", [])
        return due

    def prepared_states(self) -> dict[int, tuple[ev.TaskEvent, dict[str, Any]]]:
        """The stored state of each event recorded since the task was read, by the event's id (taken once)."""
        prepared: dict[int, tuple[ev.TaskEvent, dict[str, Any]]] = self.__dict__.pop("prepared", {})
        return prepared

    def __deepcopy__(self, memo: dict[int, Any]) -> Task:
        # The library hands each command a deep copy of the cached task; its frozen decision state
        # is replaced (never changed) by events, so the copy shares it and copies the rest.
        copy = object.__new__(type(self))
        copy.__dict__.update({
            name: value if type(value) in _SHARED or name in _SHARED_NAMES else deepcopy(value, memo)
            for name, value in vars(self).items()
        })
        return copy

    def _check_reclassify(self, fields: dict[str, Any]) -> None:
        target, kind = fields.get("target"), fields.get("kind")
        current = self.kind_of(target)
        if current not in MOVABLE:
            raise RuleBroken(f"position {target} is not a requirement or correction of this task")
        if current == kind:
            raise RuleBroken(f"position {target} is already a {kind}")
        if kind == "change":
            supersedes = fields.get("supersedes")
            if supersedes is None:
                earlier = self.latest_requirement(before=target)
                if earlier is None:
                    raise RuleBroken(f"no requirement before position {target} for it to change")
                fields["supersedes"] = earlier
            elif supersedes == target or self.kind_of(supersedes) != "requirement":
                raise RuleBroken(f"no requirement at position {supersedes} to change")

    def explicit_provenance(self, position: int) -> ev.Provenance:
        """Provenance naming the event at ``position`` as the cause (``--because EVENT``)."""
        return _explicit(self, position)

    # -- commands: check the rule, then append ------------------------------------

    def record(self, event_class: type[ev.TaskEvent], **fields: Any) -> None:
        """Append any catalogue event after checking the rules that involve state."""
        if event_class is ev.TaskOpened:
            raise RuleBroken("a task is opened once")
        rules = self.rules
        if event_class is ev.AttemptStarted and rules.open_attempt is not None:
            raise RuleBroken(
                f"attempt at position {rules.open_attempt} is still open; "
                "end it first (trail fail / succeed / abandon)"
            )
        if event_class is ev.AttemptEnded:
            attempt = fields.get("attempt") or rules.open_attempt
            if attempt is None:
                raise RuleBroken("no open attempt to end; start one with `trail attempt`")
            if attempt != rules.open_attempt:
                raise RuleBroken(f"position {attempt} is not the open attempt")
            fields["attempt"] = attempt
        if event_class is ev.RequirementChanged:
            target = fields.get("supersedes")
            if self.kind_of(target) != "requirement":
                raise RuleBroken(f"no requirement at position {target} to change")
        if event_class is ev.IntentReclassified:
            self._check_reclassify(fields)
        cause_of = fields.pop("because_event", None)
        if cause_of is not None:
            if event_class not in ev.ACTIONS:
                raise RuleBroken(f"--because applies to actions, not to {event_class.__name__}")
            fields["because"] = self.explicit_provenance(cause_of)
        if event_class in ev.ACTIONS and fields.get("because") is None:
            fields["because"] = ev.Provenance(
                attempt=rules.open_attempt, intent=rules.last_intent, decision=rules.last_decision
            )
        cause = fields.get("causation")
        if cause is not None and cause > self.version:
            raise RuleBroken(f"causation points at position {cause}, past the end ({self.version})")
        self.trigger_event(event_class, **fields)


get_topic(TaskSnapshot)  # registers the explicit topic so stored snapshots resolve

_SHARED_NAMES = frozenset({"history"})
"""Attributes a task's copy shares with it whatever their type: the ledger's log reader."""
_SHARED = frozenset({DecisionState, str, int, datetime, UUID})
"""What a task's copy shares with it: frozen models and immutable values."""


def _explicit(task: Task, position: int) -> ev.Provenance:
    rules = task.rules
    kind = task.kind_of(position)
    if kind in ("requirement", "correction", "change"):
        return ev.Provenance(attempt=rules.open_attempt, intent=position, explicit=True)
    if kind == "decision":
        return ev.Provenance(attempt=rules.open_attempt, decision=position, explicit=True)
    if kind == "attempt":
        return ev.Provenance(attempt=position, explicit=True)
    raise RuleBroken(f"event {position} is not a requirement, correction, decision or attempt of this task")
