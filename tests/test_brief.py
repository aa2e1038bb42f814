"""The continuation brief: order, content, and the character budget."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.app import sample
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from projections import brief
from projections.state import TaskState
from tests.conftest import run_here

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the brief's order, content and budget, not the store")


def _sample_state(ledger: Ledger) -> TaskState:
    return sample.record(ledger)


def test_sections_come_in_the_order_an_agent_needs(ledger: Ledger) -> None:
    text = brief.render(_sample_state(ledger))
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0].startswith("# Task #1 Fix login timeout on slow networks [paused (end of day)]")
    order = ["Next step", "Requirements", "Corrections", "Tried and did not work", "In progress", "Decisions",
             "Where it stopped", "Files changed", "Last results"]
    positions = [next(i for i, h in enumerate(headings) if name in h) for name in order]
    assert positions == sorted(positions)
    assert "retry loop is in auth/refresh.py" in text
    assert "FAILED Raise the HTTP client timeout to 30 s: Timeout is not the cause" in text
    assert "checkpoint 'unit-tests-green'" in text
    assert headings[1] == "## Next step (set at [18])"  # second, so no cut at the end can lose it; its position
    assert "Run the 3G network profile (tc netem, 2 s RTT) against staging login" in text


def test_brief_is_state_not_chat(ledger: Ledger) -> None:
    """No message replay: every line of the brief comes from a folded fact, and the size stays
    bounded when the same kind of fact repeats."""
    state = _sample_state(ledger)
    assert state.id is not None
    from ledger.domain import events as ev
    from ledger.domain.bounds import bound

    before = len(brief.render(ledger.state(state.id)))
    for i in range(200):
        ledger.append(state.id, ev.CommandRan, shell=f"make step{i}", exit_code=0, stdout=bound("ok"))
    after = brief.render(ledger.state(state.id))
    assert len(after) < before + 400  # only the last five commands and a count are shown
    assert "200" not in after or "(202 commands in all" in after


def test_budget_keeps_goal_and_next_step_and_says_what_it_dropped(ledger: Ledger) -> None:
    state = _sample_state(ledger)
    full = brief.render(state)
    cut = brief.render(state, max_chars=600)
    assert len(cut) <= 600 < len(full)
    assert cut.startswith("# Task #1")
    assert "Run the 3G network profile" in cut
    note = re.search(r"\[\d+ lines left out to fit 600 chars \((.*)\); `trail resume 1` shows all\]", cut)
    assert note is not None
    # Requirements and corrections outrank file lists and command tails, so they survive.
    assert "Login must succeed on 3G" in cut and "retry loop is in auth/refresh.py" in cut
    assert "net/client.py" not in cut


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(min_value=200, max_value=3000))
def test_any_budget_is_respected(budget: int) -> None:
    state = TaskState(number=1, title="t" * 50, next_step="n" * 100)
    for limit in (budget,):
        assert len(brief.render(state, max_chars=limit)) <= limit


def test_last_results_are_in_the_order_they_happened(home: Path, tmp_path: Path) -> None:
    """A test that failed, then passed later, is shown at its latest run, after what happened in between."""
    for args in (["start", "Order"], ["tested", "a", "failed"], ["ran", "--", "touch", "built"], ["note", "built"],
                 ["tested", "b", "passed"], ["tested", "a", "passed"]):
        run_here(*args, home=home, cwd=tmp_path, check=True)
    brief = run_here("resume", home=home, cwd=tmp_path, check=True).stdout
    results = brief.split("## Last results", 1)[1].split("\n## ", 1)[0]
    shown = [int(m) for m in re.findall(r"^- .*\[(\d+)\]", results, re.M)]
    assert shown == [3, 5, 6], results


def test_a_request_after_a_finished_plan_is_the_next_step(home: Path, tmp_path: Path) -> None:
    """Every step done, then the user asked for more: the brief says that, not "none: confirm with the user"."""
    run_here("start", "Plan then more", home=home, cwd=tmp_path, check=True)
    with open_ledger(resolve()) as ledger:
        task = ledger.entries()[0].task_id
        ledger.append(task, ev.PlanUpdated, steps=[ev.PlanStep(text="Fix the bug", status="completed")],
                      actor="agent:claude-code")
    done = run_here("resume", home=home, cwd=tmp_path, check=True).stdout
    assert "every step of the plan is done; confirm with the user" in done
    run_here("require", "Now open the PR", home=home, cwd=tmp_path, check=True)
    brief_text = run_here("resume", home=home, cwd=tmp_path, check=True).stdout
    assert "## Next step (asked at [3], after every step of the plan at [2] was done)\nNow open the PR" in brief_text
