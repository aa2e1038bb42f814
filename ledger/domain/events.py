"""The event catalogue: every fact a task can record, as a frozen, versioned model.

Events are pure data. Each one is a pydantic model that also satisfies the
`eventsourcing` library's event protocol (``CanMutateAggregate``), so the library
can store, order and replay it; the only behaviour they carry is the library's
own ``mutate`` plumbing, which hands the event to the Task aggregate's fold.

Stable topics: every class sets ``TOPIC`` so stored events survive a module move.
Versioning: ``class_version`` plus ``upcast_vN_vN+1(state)`` static methods, run
by ``ledger.domain.mapper.PydanticMapper`` on read.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, ClassVar, Literal
from uuid import UUID

from eventsourcing.domain import CanInitAggregate, CanMutateAggregate
from eventsourcing.utils import get_topic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ledger.base.schema import LINKED_TOPIC

ACTOR_RE = re.compile(r"^(user|system|agent:[^\s]+|tool:[^\s]+)$")

Outcome = Literal["failed", "succeeded", "abandoned"]
Status = Literal["active", "paused", "blocked", "done", "abandoned"]
FileOperation = Literal["created", "modified", "deleted", "renamed"]
TestOutcome = Literal["passed", "failed", "error", "skipped"]
Relation = Literal["parent", "child", "blocks", "blocked_by", "related", "branched_from"]
PlanStatus = Literal["pending", "in_progress", "completed"]


INT64_MAX = 2**63 - 1
"""The largest whole number the stores take (orjson, SQLite, PostgreSQL's bigint): a count or time
from captured text over it is refused by the model, never left to fail in the store, where every
later drain met it again."""
EXIT_CODE_MIN, EXIT_CODE_MAX = -(2**31), 2**32 - 1
"""Exit codes a process can have: a signal's negative number (Python), 0-255 (POSIX), a 32-bit
status (Windows: 0xC0000005)."""


class Value(BaseModel):
    """A small immutable value nested inside events."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class SourceKey(Value):
    """Where a captured event came from; equal keys mean the same fact (idempotent imports)."""

    agent: str
    session: str
    record: str


class Bounded(Value):
    """Text kept up to a byte budget: the tail, plus the size and hash of the whole.

    ``trail compact --gc-artifacts`` may later drop the tail itself (``collected``), keeping
    ``tail_sha256``; the hash chain covers the tail only through that hash, so it still verifies.
    """

    tail: str
    size: int = Field(ge=0, le=INT64_MAX, description="bytes of the full text (UTF-8)")
    sha256: str | None = Field(default=None, description="hash of the full text, set when cut")
    truncated: bool = False
    collected: bool = False
    tail_sha256: str | None = Field(default=None, description="hash of the tail, set when it was collected")


class Provenance(Value):
    """Why an action happened: positions of the attempt open then, the latest user intent
    (requirement or correction) and the latest decision before it. Filled at append time."""

    attempt: int | None = None
    intent: int | None = None
    decision: int | None = None
    explicit: bool = False
    """True when the user named the cause (``--because EVENT``) instead of the rules."""


class TaskEvent(BaseModel, CanMutateAggregate[UUID]):
    """Fields every event carries. ``originator_id`` is the task, ``originator_version`` its position."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    TOPIC: ClassVar[str]
    class_version: ClassVar[int] = 1

    originator_id: UUID
    originator_version: int = Field(ge=1)
    timestamp: datetime
    actor: str = "user"
    causation: int | None = Field(default=None, ge=1, description="position of the event this answers")
    source: SourceKey | None = None
    chain: str = Field(default="", description="sha256 of this event chained to its predecessor")

    @field_validator("actor")
    @classmethod
    def _actor_shape(cls, value: str) -> str:
        if not ACTOR_RE.match(value):
            raise ValueError("actor must be 'user', 'system', 'agent:<name>' or 'tool:<name>'")
        return value

    def apply(self, aggregate: Any) -> None:
        # The library calls apply() during mutate(); the aggregate owns the fold.
        aggregate.fold_event(self)


def _text(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("text must not be empty")
    return value


class TaskOpened(TaskEvent, CanInitAggregate[UUID]):
    TOPIC = "tasktrail/TaskOpened"
    originator_topic: str
    number: int = Field(ge=1, description="the short numeric id users type")
    title: str
    slug: str
    cwd: str | None = None
    project: str | None = Field(default=None, description="the git top level of cwd, else cwd: where the task lives")

    _check_title = field_validator("title")(_text)


class TaskRetitled(TaskEvent):
    """The user renamed the task (`trail title`). Number and slug stay, so every reference still holds;
    the task list's entry takes the new title in the same write (``Ledger.write``)."""

    TOPIC = "tasktrail/TaskRetitled"
    title: str

    _check_title = field_validator("title")(_text)


class RequirementStated(TaskEvent):
    TOPIC = "tasktrail/RequirementStated"
    text: str
    _check = field_validator("text")(_text)


class RequirementChanged(TaskEvent):
    """A new wording of an earlier requirement; ``supersedes`` is that requirement's position."""

    TOPIC = "tasktrail/RequirementChanged"
    text: str
    supersedes: int = Field(ge=1)
    _check = field_validator("text")(_text)


class CorrectionMade(TaskEvent):
    """The user corrects a misunderstanding; ``wrong`` says what the agent had wrong."""

    TOPIC = "tasktrail/CorrectionMade"
    text: str
    wrong: str | None = None
    _check = field_validator("text")(_text)


class IntentReclassified(TaskEvent):
    """The user says the prompt recorded at ``target`` was really another kind of intent.

    The log keeps the original event; the state moves it. For ``change``, ``supersedes``
    names the requirement it rewords."""

    TOPIC = "tasktrail/IntentReclassified"
    target: int = Field(ge=1)
    kind: Literal["requirement", "correction", "change"]
    supersedes: int | None = Field(default=None, ge=1)


class DecisionRecorded(TaskEvent):
    """A decision with its reason. v1 called the reason ``why`` and had no alternatives."""

    TOPIC = "tasktrail/DecisionRecorded"
    class_version: ClassVar[int] = 2
    text: str
    reason: str | None = None
    rejected: tuple[str, ...] = ()
    _check = field_validator("text")(_text)

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state["reason"] = state.pop("why", None)
        state["rejected"] = []


class AttemptStarted(TaskEvent):
    TOPIC = "tasktrail/AttemptStarted"
    text: str
    _check = field_validator("text")(_text)


class AttemptEnded(TaskEvent):
    """Ends the attempt started at position ``attempt``."""

    TOPIC = "tasktrail/AttemptEnded"
    attempt: int = Field(ge=1)
    outcome: Outcome
    reason: str | None = None


class ToolCalled(TaskEvent):
    TOPIC = "tasktrail/ToolCalled"
    because: Provenance | None = None
    tool: str
    call_id: str | None = None
    input: Bounded


_V1_STOPPED = ("The user doesn't want to", "Error: The user doesn't want to", "[Request interrupted by user")
_V1_NOT_RUN = ("requires approval", "haven't granted it yet", "was blocked. For security")
"""How the fold read a v1 ``ToolResult``'s output (Claude Code's words, applied to every agent): frozen
here, as the meaning of what v1 stored; v2 events carry the agent's own reading in ``refused``."""


class ToolResult(TaskEvent):
    """A tool call's result. ``refused``: not ok, and no failure (``ledger.capture.agent.Refusal``): the
    user stopped it, or it never ran for want of a permission. v1 had no ``refused`` (upcast: read from
    the output's wording, as the fold of v1 did)."""

    TOPIC = "tasktrail/ToolResult"
    class_version: ClassVar[int] = 2
    because: Provenance | None = None
    tool: str
    call_id: str | None = None
    ok: bool
    output: Bounded
    refused: Literal["stopped", "not_run"] | None = None

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        output = state.get("output")
        text = "" if not isinstance(output, dict) or output.get("collected") else str(output.get("tail") or "")
        refused = None
        if not state.get("ok"):
            if text.lstrip().startswith(_V1_STOPPED):
                refused = "stopped"
            elif any(phrase in text[:300] for phrase in _V1_NOT_RUN):
                refused = "not_run"
        state["refused"] = refused


class CommandRan(TaskEvent):
    """A command and its result: ``argv`` when exec'd directly, ``shell`` for a shell line."""

    TOPIC = "tasktrail/CommandRan"
    because: Provenance | None = None
    argv: tuple[str, ...] | None = None
    shell: str | None = None
    cwd: str | None = None
    exit_code: int | None = Field(default=None, ge=EXIT_CODE_MIN, le=EXIT_CODE_MAX)
    duration_ms: int | None = Field(default=None, ge=0, le=INT64_MAX)
    stdout: Bounded | None = None
    stderr: Bounded | None = None


class FileChanged(TaskEvent):
    TOPIC = "tasktrail/FileChanged"
    because: Provenance | None = None
    path: str
    operation: FileOperation
    before_sha256: str | None = None
    after_sha256: str | None = None
    diff: Bounded | None = None
    renamed_from: str | None = None


class TestResult(TaskEvent):
    """One test, or one run of a test target (``pytest tests/x.py``) with the counts its runner printed."""

    TOPIC = "tasktrail/TestResult"
    because: Provenance | None = None
    __test__ = False  # not a pytest test class
    name: str
    outcome: TestOutcome
    duration_ms: int | None = Field(default=None, ge=0, le=INT64_MAX)
    message: str | None = None
    passed: int | None = Field(default=None, ge=0, le=INT64_MAX)
    failed: int | None = Field(default=None, ge=0, le=INT64_MAX)
    errors: int | None = Field(default=None, ge=0, le=INT64_MAX)
    skipped: int | None = Field(default=None, ge=0, le=INT64_MAX)


CONTEXT_CLEARED = "context cleared"
"""The label of the checkpoint an import marks where the user cleared the conversation (``/clear``): what was
asked before it in that conversation is closed."""


class CheckpointMarked(TaskEvent):
    TOPIC = "tasktrail/CheckpointMarked"
    label: str
    git_head: str | None = None
    git_dirty: bool | None = None
    note: str | None = None


class NextStepSet(TaskEvent):
    TOPIC = "tasktrail/NextStepSet"
    text: str
    _check = field_validator("text")(_text)


class StatusChanged(TaskEvent):
    TOPIC = "tasktrail/StatusChanged"
    status: Status
    reason: str | None = None


class NoteAdded(TaskEvent):
    TOPIC = "tasktrail/NoteAdded"
    text: str
    _check = field_validator("text")(_text)


class ConversationLinked(TaskEvent):
    TOPIC = LINKED_TOPIC
    agent: str
    session_id: str
    transcript: str | None = None


class TaskLinked(TaskEvent):
    TOPIC = "tasktrail/TaskLinked"
    relation: Relation
    other: UUID
    other_number: int | None = None


class PlanStep(Value):
    text: str
    status: PlanStatus
    id: str | None = None
    """The agent's own id of the step, where it has one (Claude Code's task list: ``TaskCreate`` ids)."""


class PlanUpdated(TaskEvent):
    """The agent's plan as it now stands (Claude Code TodoWrite or task list, Codex update_plan); replaces
    the last one. v1 steps had no ``id``."""

    TOPIC = "tasktrail/PlanUpdated"
    class_version: ClassVar[int] = 2
    steps: tuple[PlanStep, ...]

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state["steps"] = [{**step, "id": None} for step in state.get("steps") or ()]


class ContextCompacted(TaskEvent):
    """The agent's context was compacted; ``summary`` is the agent's own account of the work so far
    (its pending work and current state feed "where it stopped" until newer facts supersede them)."""

    TOPIC = "tasktrail/ContextCompacted"
    trigger: str | None = None
    tokens_before: int | None = Field(default=None, ge=0, le=INT64_MAX)
    summary: Bounded | None = None


class AgentReplied(TaskEvent):
    """The agent's closing message of a turn: where it stopped, in its own words."""

    TOPIC = "tasktrail/AgentReplied"
    text: Bounded


class EventsArchived(TaskEvent):
    """Positions ``first``..``last`` moved to a Parquet archive (``trail compact``).

    ``head`` is the hash-chain head at ``last``; the task's state at ``last`` stays in the
    live store as a snapshot, so reads from ``last`` on never need the archive."""

    TOPIC = "tasktrail/EventsArchived"
    archive: str
    sha256: str
    first: int = Field(ge=1)
    last: int = Field(ge=1)
    events: int = Field(ge=1)
    head: str


class OutputsCollected(TaskEvent):
    """`trail compact --gc-artifacts` is about to drop the tails of this task's bulky outputs stamped
    before ``before`` (kept tail over ``threshold`` bytes); their size and hashes stay.

    Recorded before the tails go, so a collected tail is legitimate only with one of these in the
    chain (``trail verify`` names any other as forged)."""

    TOPIC = "tasktrail/OutputsCollected"
    before: datetime
    threshold: int = Field(ge=0)


ACTIONS: tuple[type[TaskEvent], ...] = (ToolCalled, ToolResult, CommandRan, FileChanged, TestResult)
"""Events that change the world; each carries a ``because`` provenance link."""

CATALOGUE: tuple[type[TaskEvent], ...] = (
    TaskOpened,
    TaskRetitled,
    RequirementStated,
    RequirementChanged,
    CorrectionMade,
    IntentReclassified,
    DecisionRecorded,
    AttemptStarted,
    AttemptEnded,
    ToolCalled,
    ToolResult,
    CommandRan,
    FileChanged,
    TestResult,
    CheckpointMarked,
    NextStepSet,
    StatusChanged,
    NoteAdded,
    ConversationLinked,
    TaskLinked,
    PlanUpdated,
    ContextCompacted,
    AgentReplied,
    EventsArchived,
    OutputsCollected,
)
"""Every event type, in the order the docs list them."""

BY_NAME: dict[str, type[TaskEvent]] = {cls.__name__: cls for cls in CATALOGUE}

for _cls in CATALOGUE:
    get_topic(_cls)  # registers the explicit topic so stored events resolve on read
