"""What is current at the end, fold version 5 (issue 20): a request that only asked for an answer, once answered
and the user asked for work; a new file's Write the user refused before asking for something else; "Thanks, that
works"; where each plan step took its status. Small transcripts of our own through the real importer, a real
ledger and the brief."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.agents.codex.mapper import map_rollout
from ledger.capture.classify import classify
from ledger.capture.importer import import_files
from ledger.domain import events as ev
from projections.brief import render
from projections.intent import acknowledgement, enquiry
from tests.test_fidelity_rules import _brief, _section, _Transcript


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Hey, please have a look at the git diff of app/render.py and explain what _nav and _links do", True),
        ("Is everything OK with this project? Do all the tests pass?", True),
        ("show tools", True),
        ("How does the cache decide what is stale?", True),
        ("explain the parser and then fix it", False),  # names work
        ("show tools and store the response in a file", False),
        ("Fix the login bug", False),
        ("But why do you think X?", False),  # pushback: reconsider, not answered by an answer
        ("Do we even need the second parser then?", False),
    ],
)
def test_enquiry(text: str, asks: bool) -> None:
    assert enquiry(text) is asks


@pytest.mark.parametrize(
    ("text", "thanks"),
    [
        ("Thanks, that works", True),
        ("perfect, that fixed it!", True),
        ("great, works now", True),
        ("Thanks! That works perfectly.", True),
        ("thanks, now add the PDF export", False),
        ("that works but the colour is wrong", False),
    ],
)
def test_acknowledgement(text: str, thanks: bool) -> None:
    assert acknowledgement(text) is thanks
    assert (classify(text, first=False) == "reply") is thanks


def test_an_answered_enquiry_is_not_current_once_the_user_asks_for_work(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Transcript()
    t.user("please explain what _nav_links does in app/render.py")
    t.said("_nav_links builds the sidebar of links to every session.")
    t.user("no, I meant _nav_items")  # a correction that names no work: the question is still open
    t.said("_nav_items lists the sessions of one project.")
    _, state = _brief(ledger, location, t.write(tmp_path / "asked.jsonl"))
    assert [r.text[:14] for r in state.requirements] == ["please explain"]
    t.user("Is everything OK with this project? Do all the tests pass?")  # not answered before the end
    brief, state = _brief(ledger, location, t.write(tmp_path / "asked-again.jsonl"))
    # Another question builds on the answer: both are current until the user asks for work.
    assert [r.text[:13] for r in state.requirements] == ["please explai", "Is everything"]
    t.said("All 42 tests pass.")
    t.user("oh, I did not find those links helpful, please replace them with one link to the index")
    brief, state = _brief(ledger, location, t.write(tmp_path / "asked-then-work.jsonl"))
    current = _section(brief, "## Requirements") + _section(brief, "## Corrections")
    assert "explain what _nav_links" not in current and "Do all the tests pass" not in current
    assert "replace them with one link" in current
    withdrawn = _section(brief, "## Withdrawn")
    assert "explain what _nav_links" in withdrawn and "Do all the tests pass" in withdrawn
    assert "(it asked for an answer, not a change)" in withdrawn
    assert {r.text[:13] for r in state.withdrawn} == {"please explai", "Is everything"}


def _refused_write(t: _Transcript, path: str, content: str = "# Tools\n") -> None:
    call = f"toolu_{len(t.lines)}"
    t._add("assistant", {"role": "assistant", "content": [
        {"type": "tool_use", "id": call, "name": "Write", "input": {"file_path": path, "content": content}}]})
    t._add("user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call, "is_error": True,
         "content": "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
                    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
                    "user to tell you how to proceed."}]},
        toolUseResult="User rejected tool use")
    t.user("[Request interrupted by user for tool use]")


@pytest.mark.parametrize("content", ["# Tools\n", "# Tools\n" + "- a tool\n" * 20_000])
def test_a_refused_new_file_then_another_request_leaves_what_it_was_for(
    ledger: Ledger, location: Location, tmp_path: Path, content: str
) -> None:
    t = _Transcript()
    t.user("list the tools and keep the list in a markdown document")
    _refused_write(t, "/work/site/available-tools.md", content)  # a long one's input keeps only its tail
    t.user("explore more of the current repo")
    brief, state = _brief(ledger, location, t.write(tmp_path / "refused.jsonl"))
    assert "keep the list in a markdown" not in _section(brief, "## Requirements")
    withdrawn = _section(brief, "## Withdrawn")
    assert "keep the list in a markdown" in withdrawn and "refused its Write of available-tools.md" in withdrawn
    assert "explore more of the current repo" in _section(brief, "## Corrections")
    assert state.refused_write is None  # the user has spoken since
    assert "available-tools.md" not in _section(brief, "## Files changed")


def test_a_refused_new_file_the_user_comes_back_to_keeps_the_requirement(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Transcript()
    t.user("replace the session links with one link to the index")
    _refused_write(t, "/work/site/test_index_link.py")
    t.user("I'd love that test to be saved as a permanent unit test")
    brief, state = _brief(ledger, location, t.write(tmp_path / "kept.jsonl"))
    assert "one link to the index" in _section(brief, "## Requirements") and state.withdrawn == ()


def test_thanks_that_works_is_a_note_not_a_requirement(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _Transcript()
    t.user("Make /tokenizer redirect to the new site")
    t.edit("/work/site/vercel.json", "{}", '{"rewrites": []}')
    t.said("Moved it to a rewrite in vercel.json.")
    t.user("Thanks, that works")
    brief, state = _brief(ledger, location, t.write(tmp_path / "thanks.jsonl"))
    assert "Thanks" not in _section(brief, "## Requirements") and "Thanks" not in _section(brief, "## Corrections")
    assert [r.text for r in state.requirements] == ["Make /tokenizer redirect to the new site"]
    assert state.notes[-1].text == "user: Thanks, that works"


def _todos(t: _Transcript, *steps: tuple[str, str]) -> None:
    call = f"toolu_{len(t.lines)}"
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in steps]
    t._add("assistant", {"role": "assistant", "content": [
        {"type": "tool_use", "id": call, "name": "TodoWrite", "input": {"todos": todos}}]})
    t._add("user", {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call, "content": "Todos have been modified successfully."}]})


def test_every_plan_step_says_where_it_took_its_status(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _Transcript()
    t.user("Add a CSV export to the report page")
    _todos(t, ("Write the exporter", "in_progress"), ("Add the button", "pending"))
    t.edit("/work/site/export.py", "pass", "return rows")
    _todos(t, ("Write the exporter", "completed"), ("Add the button", "in_progress"))
    t.edit("/work/site/page.py", "pass", "button()")
    _todos(t, ("Write the exporter", "completed"), ("Add the button", "in_progress"))
    brief, state = _brief(ledger, location, t.write(tmp_path / "plan.jsonl"))
    assert state.number is not None and state.plan is not None
    plans = [e.originator_version for e in ledger.task_events(ledger.task_id(state.number))
             if isinstance(e, ev.PlanUpdated)]
    assert len(plans) == 3
    # Done at the second update, in progress since the second: neither changed at the third.
    assert state.plan.since == (plans[1], plans[1])
    plan = _section(brief, "## Plan")
    assert f"- [x] Write the exporter [{plans[1]}]" in plan and f"- [>] Add the button [{plans[1]}]" in plan


def _rollout(path: Path, *, answered: bool) -> Path:
    """A Codex rollout that ends on a call with no output (``answered``: the agent spoke after it)."""
    records: list[dict[str, Any]] = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s-open", "cwd": "/w"}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "build the release binary"}},
        {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "cargo build --release"}',
                     "call_id": "c1"}},
    ]
    if answered:
        records.append({"timestamp": "2026-01-01T00:00:03Z", "type": "response_item",
                        "payload": {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": "Building now."}]}})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_codex_rollout_that_ends_on_a_call_stops_mid_action(ledger: Ledger, location: Location,
                                                              tmp_path: Path) -> None:
    report = import_files(ledger, location, "codex", [_rollout(tmp_path / "open.jsonl", answered=False)])
    (number,) = report.tasks
    state = ledger.state(ledger.task_id(number))
    assert state.open_call is not None and state.open_call.tool == "exec_command"
    stopped = _section(render(state), "## Where it stopped")
    assert "it stopped mid-action: its last call, `$ cargo build --release`, got no result" in stopped
    session = map_rollout(enumerate(_rollout(tmp_path / "said.jsonl", answered=True).read_text().splitlines(), 1),
                          "said")
    assert not [f for cls, f in session.items if cls is ev.ToolCalled]  # the agent spoke after it
