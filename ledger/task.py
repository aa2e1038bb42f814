"""The Task aggregate: decides whether a fact may be recorded, then appends it as an event.

Its state is the projection state itself (``projections.state.TaskState``), so a
snapshot of the aggregate is a snapshot of what the brief needs. Each appended
event is linked into the task's hash chain before it is applied.
"""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic

from ledger import chain
from ledger import events as ev
from ledger.errors import RuleBroken
from ledger.mapper import stored_state
from ledger.snapshot import ModelSnapshot, SnapshotBody
from projections.state import TaskState, fold


def task_id_for(number: int) -> UUID:
    """Task ids derive from their number, so two writers cannot both create task N."""
    return uuid5(NAMESPACE_URL, f"tasktrail:task/{number}")


def linked(previous: str, event: ev.TaskEvent) -> ev.TaskEvent:
    """``event`` with its chain hash set, given the previous event's hash."""
    state = stored_state(event)
    digest = chain.link(
        previous, chain.canonical(get_topic(type(event)), event.originator_id, event.originator_version, state)
    )
    return event.model_copy(update={"chain": digest})


class TaskBody(SnapshotBody):
    head: str
    state: TaskState


class TaskSnapshot(ModelSnapshot):
    """A snapshot of a task: the folded state and the chain head at a position."""

    TOPIC: ClassVar[str] = "tasktrail/TaskSnapshot"
    state: TaskBody


class Task(Aggregate):
    TOPIC = "tasktrail/Task"
    # Our pydantic classes stand in for the library's generated event classes.
    Event = ev.TaskEvent  # type: ignore[assignment]
    Created = ev.TaskOpened  # type: ignore[assignment]
    Snapshot = TaskSnapshot  # type: ignore[assignment]

    state: TaskState
    head: str
    snapshot_every: int = 0
    """K, set by the ledger that loaded this task: at every K-th position the task offers a
    snapshot of itself as it is then, so saving need not rebuild that version from the store."""

    @classmethod
    def open(cls, number: int, title: str, slug: str, cwd: str | None, actor: str = "user") -> Task:
        task_id = task_id_for(number)
        timestamp = ev.TaskOpened.create_timestamp()
        draft = ev.TaskOpened(
            originator_id=task_id,
            originator_version=cls.INITIAL_VERSION,
            originator_topic=get_topic(cls),
            timestamp=timestamp,
            number=number,
            title=title,
            slug=slug,
            cwd=cwd,
            actor=actor,
        )
        opened = linked(chain.GENESIS, draft)
        fields = opened.model_dump(exclude={"originator_id", "originator_version", "originator_topic"})
        task: Task = cls._create(ev.TaskOpened, id=task_id, **fields)
        return task

    def __init__(self) -> None:
        self.state = TaskState()
        self.head = chain.GENESIS

    def fold_event(self, event: ev.TaskEvent) -> None:
        self.state = fold(self.state, event)
        self.head = event.chain

    def trigger_event(self, event_class: type[Any], **kwargs: Any) -> None:
        # Overridden to link each event into the chain before it is applied.
        kwargs.setdefault("timestamp", None)
        if kwargs["timestamp"] is None:
            kwargs["timestamp"] = event_class.create_timestamp()
        draft = event_class(originator_id=self.id, originator_version=self.version + 1, **kwargs)
        event = linked(self.head, draft)
        event.mutate(self)
        self._pending_events.append(event)
        if self.snapshot_every and self.version % self.snapshot_every == 0:
            self.__dict__.setdefault("due_snapshots", []).append(TaskSnapshot.take(self))

    def _check_reclassify(self, fields: dict[str, Any]) -> None:
        target, kind = fields.get("target"), fields.get("kind")
        state = self.state
        current = (
            "requirement" if any(r.position == target for r in state.requirements)
            else "correction" if any(c.position == target for c in state.corrections)
            else None
        )
        if current is None:
            raise RuleBroken(f"position {target} is not a requirement or correction of this task")
        if current == kind:
            raise RuleBroken(f"position {target} is already a {kind}")
        if kind == "change":
            supersedes = fields.get("supersedes")
            if supersedes is None:
                earlier = [r.position for r in state.requirements if r.position < (target or 0)]
                if not earlier:
                    raise RuleBroken(f"no requirement before position {target} for it to change")
                fields["supersedes"] = earlier[-1]
            elif not any(r.position == supersedes and r.position != target for r in state.requirements):
                raise RuleBroken(f"no requirement at position {supersedes} to change")

    def explicit_provenance(self, position: int) -> ev.Provenance:
        """Provenance naming the event at ``position`` as the cause (``--because EVENT``)."""
        return _explicit(self, position)

    # -- commands: check the rule, then append ------------------------------------

    def record(self, event_class: type[ev.TaskEvent], **fields: Any) -> None:
        """Append any catalogue event after checking the rules that involve state."""
        if event_class is ev.TaskOpened:
            raise RuleBroken("a task is opened once")
        if event_class is ev.AttemptStarted and self.state.open_attempt is not None:
            raise RuleBroken(
                f"attempt at position {self.state.open_attempt} is still open; "
                "end it first (trail fail / succeed / abandon)"
            )
        if event_class is ev.AttemptEnded:
            attempt = fields.get("attempt") or self.state.open_attempt
            if attempt is None:
                raise RuleBroken("no open attempt to end; start one with `trail attempt`")
            if attempt != self.state.open_attempt:
                raise RuleBroken(f"position {attempt} is not the open attempt")
            fields["attempt"] = attempt
        if event_class is ev.RequirementChanged:
            target = fields.get("supersedes")
            if not any(r.position == target for r in self.state.requirements):
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
                attempt=self.state.open_attempt, intent=self.state.last_intent, decision=self.state.last_decision
            )
        cause = fields.get("causation")
        if cause is not None and cause > self.version:
            raise RuleBroken(f"causation points at position {cause}, past the end ({self.version})")
        self.trigger_event(event_class, **fields)


get_topic(TaskSnapshot)  # registers the explicit topic so stored snapshots resolve


def _explicit(task: Task, position: int) -> ev.Provenance:
    state = task.state
    intents = [r.position for r in state.requirements] + [c.position for c in state.corrections]
    intents += [r.changed_at for r in state.requirements if r.changed_at]
    if position in intents:
        return ev.Provenance(attempt=state.open_attempt, intent=position, explicit=True)
    if any(d.position == position for d in state.decisions):
        return ev.Provenance(attempt=state.open_attempt, decision=position, explicit=True)
    if any(a.position == position for a in state.attempts):
        return ev.Provenance(attempt=position, explicit=True)
    raise RuleBroken(f"event {position} is not a requirement, correction, decision or attempt of this task")
