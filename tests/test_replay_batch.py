"""``replay`` folds a batch onto one working copy: it must be exactly ``reduce(fold, events)``, at any split."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from hypothesis import given, settings
from hypothesis import strategies as st

from bench import workload
from ledger.capture.agents.claude_code.refusals import NOT_RUN, STOPPED
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections.state import TaskState, fold, replay

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# Few values each, so that failures meet the successes that resolve them (the same command, another
# spelling of it, the same test, an editing tool), paths are renamed onto paths already touched, and
# reclassifications and rewordings hit the intents they name.
COMMANDS = ("pytest -q tests/t.py", "python -m pytest tests/t.py", "ruff check src/a.py", "ruff check /r/src/a.py",
            "git status", "git commit -m 'x'", "python -c 'import x'", "cat a > b")
OUTPUTS = ("ok", "Traceback (most recent call last):\nValueError: bad", "1 failed\n2 passed", "nothing to commit",
           "lines\nmore lines\n" * 4 + "summary", "E   assert 1 == 2\n" + "x\n" * 8, "")
PATHS = ("a.py", "b/c.py", "README.md", "d.py")
TOOLS = ("Read", "Edit", "Write", "Bash", "MultiEdit")
TOOL_OUTPUTS = ("done", STOPPED, f"{NOT_RUN[0]} here", "Error: no such file", "File has not been read yet")
TESTS = ("t1", "t2", "tests/t.py")
small = st.sampled_from(("a", "b", "fix it", "the parser", "use X not Y"))
back = st.integers(1, 6)
"""An intent or attempt named by how many events before this one it came (``events_of`` resolves it)."""
REFERENCES = ("supersedes", "target", "attempt")

Fields = dict[str, Any]
kinds: list[tuple[type[ev.TaskEvent], st.SearchStrategy[Fields]]] = [
    (ev.RequirementStated, st.fixed_dictionaries({"text": small})),
    (ev.RequirementChanged, st.fixed_dictionaries({"text": small, "supersedes": back})),
    (ev.CorrectionMade, st.fixed_dictionaries({"text": small, "wrong": st.none() | small})),
    (ev.IntentReclassified, st.fixed_dictionaries({"target": back, "kind": st.sampled_from(
        ["requirement", "correction", "change"]), "supersedes": st.none() | back})),
    (ev.DecisionRecorded, st.fixed_dictionaries({"text": small, "reason": st.none() | small,
                                                 "rejected": st.lists(small, max_size=2).map(tuple)})),
    (ev.AttemptStarted, st.fixed_dictionaries({"text": small})),
    (ev.AttemptEnded, st.fixed_dictionaries({"attempt": back, "outcome": st.sampled_from(
        ["failed", "succeeded", "abandoned"]), "reason": st.none() | small})),
    (ev.ToolCalled, st.fixed_dictionaries({"tool": st.sampled_from(TOOLS), "input": small.map(bound)})),
    (ev.ToolResult, st.fixed_dictionaries({"tool": st.sampled_from(TOOLS), "ok": st.booleans(),
                                           "output": st.sampled_from(TOOL_OUTPUTS).map(bound)})),
    (ev.CommandRan, st.fixed_dictionaries({"shell": st.sampled_from(COMMANDS), "exit_code": st.sampled_from(
        [0, 0, 1, 2, None]), "stdout": st.sampled_from(OUTPUTS).map(bound),
        "stderr": st.none() | st.sampled_from(OUTPUTS).map(bound)})),
    (ev.FileChanged, st.fixed_dictionaries({"path": st.sampled_from(PATHS), "operation": st.sampled_from(
        ["created", "modified", "deleted", "renamed"]), "renamed_from": st.none() | st.sampled_from(PATHS)})),
    (ev.TestResult, st.fixed_dictionaries({"name": st.sampled_from(TESTS), "outcome": st.sampled_from(
        ["passed", "failed", "error", "skipped"]), "message": st.none() | small,
        "passed": st.none() | st.integers(0, 3), "failed": st.none() | st.integers(0, 2)})),
    (ev.CheckpointMarked, st.fixed_dictionaries({"label": small, "git_dirty": st.none() | st.booleans()})),
    (ev.NextStepSet, st.fixed_dictionaries({"text": small})),
    (ev.PlanUpdated, st.fixed_dictionaries({"steps": st.lists(st.builds(
        ev.PlanStep, text=small, status=st.sampled_from(["pending", "in_progress", "completed"])),
        max_size=3).map(tuple)})),
    (ev.ContextCompacted, st.fixed_dictionaries({"trigger": st.none() | st.just("auto"),
                                                 "summary": st.none() | small.map(bound)})),
    (ev.AgentReplied, st.fixed_dictionaries({"text": small.map(bound)})),
    (ev.StatusChanged, st.fixed_dictionaries({"status": st.sampled_from(["active", "paused", "blocked", "done"]),
                                              "reason": st.none() | small})),
    (ev.NoteAdded, st.fixed_dictionaries({"text": small})),
    (ev.ConversationLinked, st.fixed_dictionaries({"agent": st.just("claude-code"), "session_id": small})),
    (ev.TaskLinked, st.fixed_dictionaries({"relation": st.sampled_from(["parent", "blocks", "related"]),
                                           "other": st.uuids(), "other_number": st.none() | st.integers(1, 9)})),
]
# What fails and what resolves failures comes up most, as in a session.
HOT = (ev.CommandRan, ev.TestResult, ev.ToolResult, ev.FileChanged, ev.IntentReclassified, ev.AttemptEnded)
step = st.one_of([st.tuples(st.just(cls), fields) for cls, fields in kinds for _ in range(4 if cls in HOT else 1)])
# Minutes from the start, not always rising: a sub-agent's records come after its session's.
steps = st.lists(st.tuples(step, st.integers(0, 50)), min_size=20, max_size=80)


def events_of(task: UUID, drawn: list[tuple[tuple[type[ev.TaskEvent], Fields], int]]) -> list[ev.TaskEvent]:
    opened = ev.TaskOpened(originator_id=task, originator_version=1, timestamp=START, originator_topic="x",
                           number=1, title="t", slug="t")
    events: list[ev.TaskEvent] = [opened]
    for i, ((cls, fields), minutes) in enumerate(drawn, start=2):
        named = {k: max(1, i - v) for k, v in fields.items() if k in REFERENCES and v is not None}
        events.append(cls(originator_id=task, originator_version=i, timestamp=START + timedelta(minutes=minutes),
                          **{**fields, **named}))
    return events


def assert_same(batch: TaskState, folded: TaskState) -> None:
    assert batch == folded
    # == on dicts ignores their order; the state's order is meaningful (most recent last).
    assert list(batch.files) == list(folded.files) and list(batch.tests) == list(folded.tests)
    assert list(batch.counts) == list(folded.counts)
    assert batch.model_dump_json() == folded.model_dump_json()
    assert batch.model_fields_set == folded.model_fields_set


@settings(max_examples=300, deadline=None)
@given(drawn=steps, split=st.integers(0, 60))
def test_replay_is_the_fold_of_every_event_in_turn(drawn: list[tuple[tuple[type[ev.TaskEvent], Fields], int]],
                                                   split: int) -> None:
    events = events_of(uuid4(), drawn)
    folded = functools.reduce(fold, events, TaskState())
    assert_same(replay(events), folded)
    # Onto a state of its own: the first part's state is left as it was.
    first = replay(events[:split])
    before = (first.model_dump_json(), list(first.files), list(first.counts), first.files, first.counts)
    assert_same(replay(events[split:], first), folded)
    assert (first.model_dump_json(), list(first.files), list(first.counts), first.files, first.counts) == before
    assert replay([], first) == first


def test_replay_of_a_long_workload_equals_the_fold_with_its_windows_full() -> None:
    # 3,000 events of the benchmark's workload: more paths and tests than the windows keep.
    task = uuid4()
    events = events_of(task, [])
    for position, (cls, fields) in enumerate(workload.Workload(7).items(3_000), start=2):
        events.append(cls(originator_id=task, originator_version=position, **fields))
    folded = functools.reduce(fold, events, TaskState())
    assert len(folded.files) == 200 and any(f.resolved_at is not None for f in folded.failures)
    assert_same(replay(events), folded)
    assert_same(replay(events[1_234:], replay(events[:1_234])), folded)
