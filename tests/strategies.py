"""Hypothesis strategies: random but plausible task histories."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import strategies as st

from ledger.app.store import Ledger
from ledger.base.errors import RuleBroken
from ledger.domain import events as ev
from ledger.domain.bounds import bound

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda s: s.strip() != ""
)
actors = st.sampled_from(["user", "agent:claude-code", "agent:codex", "tool:Bash", "system"])

Step = tuple[type[ev.TaskEvent], dict[str, Any]]


def _with_actor(event_class: type[ev.TaskEvent], fields: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Step]:
    return st.tuples(st.just(event_class), st.builds(lambda f, a: {**f, "actor": a}, fields, actors))


steps: st.SearchStrategy[Step] = st.one_of(
    _with_actor(ev.RequirementStated, st.fixed_dictionaries({"text": text})),
    _with_actor(ev.RequirementChanged, st.fixed_dictionaries({"text": text, "supersedes": st.integers(1, 12)})),
    _with_actor(ev.CorrectionMade, st.fixed_dictionaries({"text": text, "wrong": st.none() | text})),
    _with_actor(ev.IntentReclassified, st.fixed_dictionaries(
        {"target": st.integers(1, 12), "kind": st.sampled_from(["requirement", "correction", "change"])})),
    _with_actor(ev.DecisionRecorded, st.fixed_dictionaries(
        {"text": text, "reason": st.none() | text, "rejected": st.lists(text, max_size=2).map(tuple)})),
    _with_actor(ev.AttemptStarted, st.fixed_dictionaries({"text": text})),
    _with_actor(ev.AttemptEnded, st.fixed_dictionaries(
        {"attempt": st.none(), "outcome": st.sampled_from(["failed", "succeeded", "abandoned"]),
         "reason": st.none() | text})),
    _with_actor(ev.CommandRan, st.fixed_dictionaries(
        {"shell": text, "exit_code": st.integers(0, 3), "duration_ms": st.integers(0, 10_000),
         "stdout": text.map(bound), "stderr": st.text(max_size=30).map(bound)})),
    _with_actor(ev.FileChanged, st.fixed_dictionaries(
        {"path": st.sampled_from(["a.py", "b/c.py", "README.md"]),
         "operation": st.sampled_from(["created", "modified", "deleted"]),
         "after_sha256": st.none() | st.text("0123456789abcdef", min_size=64, max_size=64)})),
    _with_actor(ev.TestResult, st.fixed_dictionaries(
        {"name": st.sampled_from(["t1", "t2", "t3"]), "outcome": st.sampled_from(["passed", "failed", "skipped"])})),
    _with_actor(ev.ToolCalled, st.fixed_dictionaries({"tool": st.sampled_from(["Read", "Grep"]),
                                                      "input": text.map(bound)})),
    _with_actor(ev.ToolResult, st.fixed_dictionaries({"tool": st.just("Read"), "ok": st.booleans(),
                                                      "output": text.map(bound)})),
    _with_actor(ev.CheckpointMarked, st.fixed_dictionaries({"label": st.sampled_from(["a", "b"])})),
    _with_actor(ev.NextStepSet, st.fixed_dictionaries({"text": text})),
    _with_actor(ev.StatusChanged, st.fixed_dictionaries(
        {"status": st.sampled_from(["active", "paused", "blocked", "done"]), "reason": st.none() | text})),
    _with_actor(ev.NoteAdded, st.fixed_dictionaries({"text": text})),
    _with_actor(ev.PlanUpdated, st.fixed_dictionaries({"steps": st.lists(
        st.builds(ev.PlanStep, text=text, status=st.sampled_from(["pending", "in_progress", "completed"])),
        max_size=4).map(tuple)})),
    _with_actor(ev.ContextCompacted, st.fixed_dictionaries({"trigger": st.none() | st.just("auto"),
                                                            "summary": st.none() | text.map(bound)})),
    _with_actor(ev.AgentReplied, st.fixed_dictionaries({"text": text.map(bound)})),
)

histories = st.lists(steps, min_size=1, max_size=40)


def record_history(ledger: Ledger, history: list[Step], title: str = "property task") -> int:
    """Open a task and append what its rules allow of ``history``; returns the last position."""
    state = ledger.open_task(title)
    assert state.id is not None
    for event_class, fields in history:
        # A step the rules refuse (ending an attempt when none is open) appends nothing.
        with contextlib.suppress(RuleBroken):
            state = ledger.append(state.id, event_class, **fields)
    return state.position
