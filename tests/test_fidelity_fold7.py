"""Fold version 7 (issue 20, from reading held-out-4's briefs and two known cases): a permission prompt the user
aborted is a rejection, a long Write that did not go through is still named by its file, "it worked!" resolves
the reports that it did not, an answered check is done once the plan finished, and a failure in a file deleted
since is not failing now. Small transcripts of our own through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.intent import acknowledgement, enquiry, reports_problem, says_works
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold6 import _S
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

ABORTED = "Permission prompt was aborted."


def test_an_aborted_permission_prompt_is_a_rejection_and_a_long_write_keeps_its_file(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("write an md doc detailing what this project does")
    t.said("I'll write the overview now.")
    # A long file: its content comes first in the call's input, and a kept tail must still name the file.
    t.tool("Write", {"file_path": "/work/site/OVERVIEW.md", "content": "# Overview\n" + "line of text\n" * 2000},
           ABORTED, error=True)
    t.user("[Request interrupted by user for tool use]")
    brief, state = _brief(ledger, location, t.write(tmp_path / "aborted.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert "the user rejected its last call, so it never ran (interrupted there): Write /work/site/OVERVIEW.md" in (
        stopped), stopped
    assert [c.outcome for c in state.recent_calls] == ["refused"]
    assert not state.failures and "OVERVIEW.md" not in _section(brief, "## Files changed")


def test_it_worked_resolves_the_reports_that_it_did_not(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _S()
    t.user("Import the session into the test folder so I can resume it")
    t.said("Copied; try `claude -c` there.")
    t.user("still no\n\njim@box:/work/test$ claude -c\nNo conversation found to continue")
    t.said("The folder name must use hyphens; copied again.")
    t.user("it worked!")
    t.said("Good.")
    t.user("now export it with its config")
    brief, state = _brief(ledger, location, t.write(tmp_path / "worked.jsonl"))
    assert [r.text for r in state.requirements] == ["Import the session into the test folder so I can resume it",
                                                    "now export it with its config"]
    (gone,) = [r for r in state.withdrawn if "No conversation found" in r.text]
    assert gone.withdrawn_because is not None and gone.withdrawn_because.startswith("resolved: the user said it works")
    assert "No conversation found" not in _section(brief, "## Requirements")
    assert any(n.text == "user: it worked!" for n in state.notes)


def test_saying_things_work_with_a_new_request_resolves_the_hang_report_and_keeps_the_request(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Build the CLI and its end to end test")
    t.said("Done; run npm test.")
    t.user("It still seems to be hanging when I run it\n\nme@mac cli % npm test\n  1 passing")
    t.said("Fixed the hang: the child is killed after its answer.")
    t.user("Other than the encryption issues things are working smoothly it seems. Make a hypothesis why.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "smoothly.jsonl"))
    texts = [r.text for r in state.requirements]
    assert texts[0] == "Build the CLI and its end to end test" and texts[-1].startswith("Other than the encryption")
    assert not any("hanging" in text for text in texts)
    assert "hanging" not in _section(brief, "## Requirements")


def _research(check: str, last: str) -> _S:
    """Two research steps, the user's ``check`` while B runs, B's status then ``last``, and the agent's answer."""
    t = _S()
    t.user("Run the three research tasks with teammates")
    t.tool("TodoWrite", {"todos": [{"content": "Research A", "status": "completed", "activeForm": "A"},
                                   {"content": "Research B", "status": "in_progress", "activeForm": "B"}]}, "ok")
    t.user(check)
    t.tool("TodoWrite", {"todos": [{"content": "Research A", "status": "completed", "activeForm": "A"},
                                   {"content": "Research B", "status": last, "activeForm": "B"}]}, "ok")
    t.said("Here is where the research stands.")
    return t


def test_an_answered_check_is_done_once_the_plan_finished(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _research("Well, the subagents seem to be either stuck or done... can you check?", "completed")
    brief, state = _brief(ledger, location, t.write(tmp_path / "checked.jsonl"))
    assert [r.text for r in state.requirements] == ["Run the three research tasks with teammates"]
    (gone,) = state.withdrawn
    assert gone.text.endswith("can you check?") and "after the plan finished" in (gone.withdrawn_because or "")
    assert "can you check" not in _section(brief, "## Requirements")


def test_a_check_stays_current_while_the_plan_is_open(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _research("check again", "in_progress")
    _, state = _brief(ledger, location, t.write(tmp_path / "open.jsonl"))
    assert [r.text for r in state.requirements] == ["Run the three research tasks with teammates", "check again"]


def test_a_check_answered_by_the_checks_it_ran_is_done_when_the_user_asks_for_more(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Implement the review page")
    t.said("The tests run in the background.")
    t.user("check again")
    t.bash("tail -20 /tmp/tests.output", 0, "43 tests, 0 failures")  # the check, with no word said after it
    t.user("new beads for the epic were added. tackle them")
    _, state = _brief(ledger, location, t.write(tmp_path / "again.jsonl"))
    assert [r.text for r in state.requirements] == ["Implement the review page",
                                                    "new beads for the epic were added. tackle them"]
    assert [r.text for r in state.withdrawn] == ["check again"]


def test_a_failure_in_a_file_deleted_since_is_not_failing_now(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Make the spawn test pass")
    t.bash("npm test src/claude/simple-spawn.test.ts", 1, "1 failing")
    t.bash("npm test src/claude/other.test.ts", 1, "1 failing")
    t.bash("rm -f src/claude/simple-spawn.test.ts src/claude/debug-spawn.test.ts")
    brief, state = _brief(ledger, location, t.write(tmp_path / "deleted.jsonl"))
    failing = _section(brief, "## Failing now")
    assert "simple-spawn.test.ts" not in failing and "other.test.ts" in failing, failing
    (still,) = [f.what for f in state.failures if f.resolved_at is None]
    assert still.endswith("npm test src/claude/other.test.ts")


@pytest.mark.parametrize(("text", "ack", "works"), [
    ("it worked!", True, True), ("that works", True, True), ("Thanks, that works", True, True),
    ("did it work?", False, False), ("it works?", False, False), ("it is not working", False, False),
    ("it still doesn't work", False, False), ("things are working smoothly, now add the logout", False, True),
])
def test_what_says_it_works(text: str, ack: bool, works: bool) -> None:
    assert (acknowledgement(text), says_works(text)) == (ack, works)


@pytest.mark.parametrize(("text", "asks"), [
    ("can you check?", True), ("check again", True), ("could you verify it?", True),
    ("can you check the tests and fix them", False), ("check the build and deploy it", False),
])
def test_a_request_to_check_is_an_enquiry(text: str, asks: bool) -> None:
    assert enquiry(text) is asks


@pytest.mark.parametrize(("text", "reports"), [
    ("still no\n\njim@box:/work/test$ claude -c\nNo conversation found", True),
    ("It still seems to hang\n\nme@mac cli % npm test", True), ("it still doesn't work", True),
    ("implement the enhanced export now", False), ("mail a@b.com for the $ 5 plan", False),
])
def test_what_reports_a_problem(text: str, reports: bool) -> None:
    assert reports_problem(text) is reports
