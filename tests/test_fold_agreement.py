"""The task state and the DuckDB read model agree on random histories.

Both are built from ``projections.facts``; this checks that what ``trail resume --json``
reports (attempts failed, commands total/failed, output tails, tests and files by their
latest result, current requirements and corrections, the next step...) is what
``trail query`` finds in the read model's tables, on real ledgers (SQLite and PostgreSQL)
and a real DuckDB file, caught up in random batch sizes and in several refreshes.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.app.store import open_ledger
from ledger.base.errors import RuleBroken
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections import facts
from projections import readmodel as rm
from projections.state import (
    RECENT_ATTEMPTS,
    RECENT_COMMANDS,
    RECENT_DECISIONS,
    RECENT_FILES,
    RECENT_INTENTS,
    RECENT_TESTS,
    TaskState,
)
from tests.strategies import Step, actors, record_history, steps, text


def _step(event_class: type[ev.TaskEvent], fields: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Step]:
    return st.tuples(st.just(event_class), st.builds(lambda f, a: {**f, "actor": a}, fields, actors))


collected = st.builds(lambda n: ev.Bounded(tail="", size=n, collected=True, tail_sha256="0" * 64), st.integers(1, 99))
"""Output whose tail `trail compact --gc-artifacts` collected."""

# The shared strategy, plus what it draws rarely or never: attempts ended (abandoned too), renames,
# read-only and argv commands, collected output, test errors, rewordings of early requirements.
more_steps: st.SearchStrategy[Step] = st.one_of(
    steps,
    _step(ev.AttemptStarted, st.fixed_dictionaries({"text": text})),
    _step(ev.AttemptEnded, st.fixed_dictionaries(
        {"attempt": st.none(), "outcome": st.sampled_from(["failed", "succeeded", "abandoned"]),
         "reason": st.none() | text})),
    _step(ev.FileChanged, st.fixed_dictionaries(
        {"path": st.sampled_from(["a.py", "b/c.py", "d.py"]), "operation": st.just("renamed"),
         "renamed_from": st.sampled_from(["a.py", "b/c.py", "d.py", "gone.py"])})),
    _step(ev.CommandRan, st.fixed_dictionaries(
        {"shell": st.sampled_from(["ls", "git status", "grep -r x .", "make", "pytest -q"]),
         "exit_code": st.none() | st.integers(0, 2),
         "stdout": st.none() | text.map(bound) | collected,
         "stderr": st.none() | st.sampled_from(["", " \n", "E1\nE2\nE3\nE4\nE5\nE6\n"]).map(bound) | collected})),
    _step(ev.CommandRan, st.fixed_dictionaries(
        {"argv": st.lists(text, min_size=1, max_size=3).map(tuple), "exit_code": st.integers(0, 1)})),
    _step(ev.TestResult, st.fixed_dictionaries(
        {"name": st.sampled_from(["t1", "t2"]), "outcome": st.sampled_from(["error", "passed"]),
         "message": st.none() | text})),
    _step(ev.RequirementChanged, st.fixed_dictionaries({"text": text, "supersedes": st.integers(1, 4)})),
    _step(ev.IntentReclassified, st.fixed_dictionaries(
        {"target": st.integers(2, 6), "kind": st.sampled_from(["requirement", "correction", "change"]),
         "supersedes": st.none() | st.integers(2, 5)})),
)

intents = st.one_of(
    _step(ev.RequirementStated, st.fixed_dictionaries({"text": text})),
    _step(ev.CorrectionMade, st.fixed_dictionaries({"text": text, "wrong": st.none() | text})),
)
many_histories = st.builds(
    lambda first, rest: [*first, *rest],
    st.lists(intents, min_size=2, max_size=4),  # so that rewordings and reclassifications find their targets
    st.lists(more_steps, min_size=3, max_size=36),
)


def _rows(path: Path, sql: str, task: UUID) -> list[tuple[Any, ...]]:
    return rm.query(path, sql, [str(task)]).rows


def disagreements(state: TaskState, path: Path) -> list[str]:
    """Where the read model at ``path`` says something else about the task than ``state``; empty when they agree."""
    task = state.id
    assert task is not None
    out: list[str] = []

    def same(what: str, folded: Any, queried: Any) -> None:
        if folded != queried:
            out.append(f"{what}: state {folded!r} != read model {queried!r}")

    row = _rows(path, "SELECT number, title, status, status_reason, events, last_position, open_attempt, attempts,"
                      " attempts_failed, commands, commands_failed, file_changes, next_step FROM tasks"
                      " WHERE task_id = $1", task)
    counts = state.counts
    same("task row", (state.number, state.title, state.status, state.status_reason, sum(counts.values()),
                      state.position, state.open_attempt, counts.get("AttemptStarted", 0), state.attempts_failed,
                      state.commands_total, state.commands_failed, counts.get("FileChanged", 0), state.next_step),
         row[0] if row else None)
    same("events by type", counts,
         dict(_rows(path, "SELECT type, count(*) FROM events WHERE task_id = $1 GROUP BY type", task)))
    same("tool errors", state.tool_errors, _rows(
        path, "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'ToolResult'"
              " AND NOT (payload->>'ok')::BOOLEAN", task)[0][0])

    attempts = _rows(path, "SELECT position, text, outcome, reason, ended_position, failed FROM attempts"
                           " WHERE task_id = $1 ORDER BY position", task)
    same("attempts", [(a.position, a.text, a.outcome, a.reason, a.ended_position, facts.attempt_failed(a.outcome))
                      for a in state.attempts], attempts[-RECENT_ATTEMPTS:])
    same("attempts failed", state.attempts_failed, sum(1 for a in attempts if a[5]))

    commands = _rows(path, "SELECT position, line, exit_code, duration_ms, output_tail, failed, read_only FROM commands"
                           " WHERE task_id = $1 ORDER BY position", task)
    same("recent commands", [(c.position, c.line, c.exit_code, c.duration_ms, c.output_tail) for c in state.commands],
         [c[:5] for c in commands if not c[6]][-RECENT_COMMANDS:])
    same("read-only commands", state.read_only_commands, sum(1 for c in commands if c[6]))
    last_failed = state.last_failed_command
    same("last failed command", (last_failed.position, last_failed.output_tail) if last_failed else None,
         next(((c[0], c[4]) for c in reversed(commands) if c[5]), None))

    tests = _rows(path, "SELECT name, outcome, position, message FROM current_tests WHERE task_id = $1"
                        " ORDER BY position", task)
    same("tests by latest result", [(t.name, t.outcome, t.position, t.message) for t in state.tests.values()],
         tests[-RECENT_TESTS:])
    same("tests by outcome", Counter(t.outcome for t in state.tests.values()), Counter(t[1] for t in tests))

    files = _rows(path, "SELECT path, operation, position, after_sha256, changes, attempt FROM current_files"
                        " WHERE task_id = $1 ORDER BY position", task)
    same("files by last change", [(f.path, f.operation, f.position, f.after_sha256, f.changes, f.attempt)
                                  for f in state.files.values()], files[-RECENT_FILES:])

    intents = _rows(path, "SELECT kind, position, text, wrong, changed_at FROM intents WHERE task_id = $1"
                          " AND kind IN ('requirement', 'correction') ORDER BY position", task)
    same("current requirements", [(r.position, r.text, r.changed_at) for r in state.requirements],
         [(p, t, c) for k, p, t, _, c in intents if k == "requirement"][-RECENT_INTENTS:])
    same("corrections", [(c.position, c.text, c.wrong) for c in state.corrections],
         [(p, t, w) for k, p, t, w, _ in intents if k == "correction"][-RECENT_INTENTS:])

    same("decisions", [(d.position, d.text, d.reason, list(d.rejected)) for d in state.decisions],
         _rows(path, "SELECT position, text, reason, rejected FROM decisions WHERE task_id = $1 ORDER BY position",
               task)[-RECENT_DECISIONS:])
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=many_histories, second=many_histories, batch_size=st.integers(1, 9))
def test_state_and_read_model_agree_on_random_histories(
    new_store: Callable[[], str], tmp_path_factory: pytest.TempPathFactory,
    first: list[Step], second: list[Step], batch_size: int,
) -> None:
    path = tmp_path_factory.mktemp("readmodel") / "model.duckdb"
    with open_ledger(resolve(new_store())) as ledger:
        record_history(ledger, first, title="one")
        rm.refresh(ledger, path, batch_size=batch_size)  # the second refresh picks up where this one stopped
        record_history(ledger, second, title="two")
        # More of the first task after the refresh: attempts, requirements and files it closes, rewords or renames.
        one = ledger.entries()[0].task_id
        for event_class, fields in second:
            if event_class in (ev.AttemptEnded, ev.RequirementChanged, ev.IntentReclassified, ev.FileChanged):
                with contextlib.suppress(RuleBroken):
                    ledger.append(one, event_class, **fields)
        rm.refresh(ledger, path, batch_size=batch_size)
        for entry in ledger.entries():
            assert disagreements(ledger.state(entry.task_id), path) == []
        assert _rows(path, "SELECT count(*) FROM tasks WHERE task_id <> $1", one)[0][0] == 1


def test_one_abandoned_attempt_counts_as_failed_in_both(ledger: Any, tmp_path: Path) -> None:
    """The issue's example: the state counted it and `trail query` did not."""
    task = ledger.open_task("abandon").id
    start = ledger.append(task, ev.AttemptStarted, text="try").position
    ledger.append(task, ev.AttemptEnded, attempt=start, outcome="abandoned", reason="dead end")
    path = tmp_path / "model.duckdb"
    rm.refresh(ledger, path)
    assert ledger.state(task).attempts_failed == 1
    assert rm.query(path, "SELECT attempts_failed FROM tasks").rows == [(1,)]
    assert rm.query(path, "SELECT outcome, failed FROM attempts").rows == [("abandoned", True)]
    assert disagreements(ledger.state(task), path) == []


def test_collected_output_shows_the_same_placeholder_in_both(ledger: Any, tmp_path: Path) -> None:
    """A stderr collected by gc-artifacts is not an empty stderr: both show the placeholder, not stdout."""
    task = ledger.open_task("gc").id
    gone = ev.Bounded(tail="", size=12, collected=True, tail_sha256="ab" * 32)
    ledger.append(task, ev.CommandRan, shell="make", exit_code=2, stderr=gone, stdout=bound("built\n"))
    path = tmp_path / "model.duckdb"
    rm.refresh(ledger, path)
    tail = ledger.state(task).commands[0].output_tail
    assert tail.startswith("[12 bytes collected by gc-artifacts")
    assert rm.query(path, "SELECT output_tail FROM commands").rows == [(tail,)]
