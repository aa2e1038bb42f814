"""Fold version 15 (issue 20, from reading held-out-12's briefs): words that only take up the agent's proposal ("yes
to all") are neither a requirement in their own words nor a correction; a CI job's log pasted run after run; a
request replaced by the user's next, finer wording; the last commit where it stopped, a push that failed after it
included; the files changed kept before the history sections when the budget cuts. Small transcripts of our own
through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.brief import render
from projections.intent import accepts, ci_run, reports_problem
from projections.remote import committed
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold10 import _T
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

MKDOCS = ("Run mkdocs build --strict\n/home/runner/work/_temp/ad16.sh: line 1: mkdocs: command not found\n"
          "Error: Process completed with exit code 127.")
PYTEST = ("1s\nRun python -m pytest -q\n..F....\n=================== FAILURES ===================\n"
          "FAILED tests/test_gui.py::test_import - ImportError: libEGL.so.1: cannot open shared object file\n"
          "1 failed, 6 passed in 0.55s\nError: Process completed with exit code 1.\n0s")
PAGES = ("Run actions/deploy-pages@v4\nCreating Pages deployment failed\n"
         "Error: Process completed with exit code 1.")


def test_what_takes_up_a_proposal() -> None:
    for text in ("yes to all", "Yes to both", "yes please", "lets go", "go ahead and implement it", "Sure, do both"):
        assert accepts(text), text
    # Words of the user's own: a request.
    for text in ("Yes to all, also add bundler for Cura.", "yes, then commit, push", "yes please fix them",
                 "yeah merge from main", "all good"):
        assert not accepts(text), text


def test_words_that_take_up_the_agents_proposal_are_the_proposal_not_a_requirement_or_a_correction(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("map the process defaults into the Cura generator")
    t.edit("/r/opk/gen/cura.py", "pass", "return defaults")
    t.said("Mapped the defaults.\n\nWant me to map a few more fields (cooling) or add a preview dialog?")
    t.user("yes to both")
    t.edit("/r/opk/gen/cura.py", "return defaults", "return defaults | cooling")
    t.said("Added cooling and a preview dialog.\n\nWould you like me to:\n- document the new keys\n- add tests")
    t.user("yes to both")  # sent again: capture files it as a correction
    brief, state = _brief(ledger, location, t.write(tmp_path / "yes.jsonl"))
    assert not state.corrections and "yes to both" not in _section(brief, "## Corrections")
    (current,) = [r for r in state.requirements if r.accepted_at is not None]
    assert current.proposal == "Would you like me to: - document the new keys - add tests"
    shown = _section(brief, "## Requirements")
    assert f"the agent's proposal at [{current.accepted_at}], taken up by the user (\"yes to both\"): Would you " \
           "like me to: - document the new keys" in shown
    assert "cooling" not in shown  # the first proposal was carried out before the user went on
    (done,) = [r for r in state.withdrawn if r.accepted_at is not None]
    assert done.withdrawn_because is not None and done.withdrawn_because.startswith("done: the agent answered at")


def test_a_ci_job_log_as_github_actions_shows_it() -> None:
    assert ci_run(MKDOCS) and ci_run(PYTEST) and reports_problem(PYTEST)
    assert not ci_run(f"{MKDOCS}\nplease fix this")  # the user's own words after the log
    assert not ci_run("Run the tests again please")  # no runner's exit line
    assert not ci_run("mkdocs: command not found\nError: Process completed with exit code 127.")  # no step


def test_a_ci_log_pasted_again_after_the_agents_changes_replaces_the_one_before(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("the docs workflow fails, fix it")
    t.user(MKDOCS)
    t.edit("/r/pdl-spec/requirements.txt", "", "mkdocs\n")
    t.said("Added mkdocs to the docs requirements.")
    t.user(PAGES)
    t.user(PYTEST)  # another job of the same run: no change between, both stay
    brief, state = _brief(ledger, location, t.write(tmp_path / "ci.jsonl"))
    current = _section(brief, "## Requirements")
    assert "mkdocs: command not found" not in current
    assert "deploy-pages" in current and "libEGL" in current
    (gone,) = [r for r in state.withdrawn if "mkdocs" in r.text]
    assert gone.withdrawn_because is not None and gone.withdrawn_because.startswith(
        "replaced: the user pasted the next CI run at [")


def test_a_request_is_replaced_by_the_users_next_finer_wording(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("Build a session details webview")
    t.user("Message text should be aligned in the middle of the avatar and time")
    t.edit("/r/src/panel.ts", "align-items: start;", "align-items: center;")
    t.said("Centered the message against the avatar and time column.")
    t.user("Should be aligned with just the avatar in the middle")
    t.edit("/r/src/panel.ts", "align-items: center;", "align-items: start;")
    t.said("Aligned to the avatar.")
    t.user("the avatar should also be aligned in the middle")  # adds to it: stays
    t.edit("/r/src/panel.ts", "a", "b")
    t.user("Is the avatar aligned in the middle?")  # a question: the request stays
    brief, state = _brief(ledger, location, t.write(tmp_path / "finer.jsonl"))
    current = _section(brief, "## Requirements")
    assert "avatar and time" not in current and "with just the avatar in the middle" in current
    assert "should also be aligned" in current
    (gone,) = state.withdrawn
    assert gone.withdrawn_because is not None
    assert gone.withdrawn_because.startswith("replaced: the user's finer wording")


def test_where_it_stopped_names_the_last_commit_a_failed_push_came_after(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert committed("failed in sandbox LinuxSeccomp, exit code: 128, stdout: [main 548dd49] feat: x") == "548dd49"
    t = _T()
    t.user("commit the converters")
    t.bash("git commit -m 'docs' && git push origin main", 0,
           "[main e3cfa5a] docs\n 1 file changed\nTo github.com:o/r.git\n   a1b2c3d..e3cfa5a  main -> main")
    t.edit("/r/opk/conv.py", "pass", "return 1")
    t.bash("git add -A && git commit -m 'feat: converters' && git push origin main", 128,
           "[main 548dd49] feat: converters\n 3 files changed\nfatal: unable to access 'https://github.com/o/r/'")
    t.said("Committed; the push failed in the sandbox.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "commit.jsonl"))
    assert state.last_commit == "548dd49"
    assert f"- last commit 548dd49 [{state.last_commit_at}], after the last push; pushed e3cfa5a to main [" in \
        _section(brief, "## Where it stopped")


def test_the_budget_cuts_the_history_before_the_files_changed_and_the_users_latest_words(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("split the plugins into one module each")
    for i in range(35):
        t.edit(f"/r/opk/plugins/mod{i:02}.py", "pass", "return 1")
    for i in range(5):
        t.bash(f"pytest tests/test_mod{i}.py -q", 0, "1 passed")
    t.said("Split them.")
    t.user("continue implementation")  # a reply: a note, the user's latest words
    _, state = _brief(ledger, location, t.write(tmp_path / "budget.jsonl"))
    full = render(state)
    assert "mod00.py" in full and "continue implementation" in full
    cut = render(state, max_chars=len(full) - 80)
    assert "lines left out" in cut
    # The first file changed (the oldest, past the thirtieth) and the user's latest words stay; a result goes.
    assert "mod00.py" in cut and "continue implementation" in cut
    assert sum(line.startswith("- test ") or line.startswith("- $ ") for line in _section(cut, "## Last results")
               .splitlines()) < sum(line.startswith("- test ") or line.startswith("- $ ")
                                    for line in _section(full, "## Last results").splitlines())
