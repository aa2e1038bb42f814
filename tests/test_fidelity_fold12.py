"""Fold version 12 (issue 20, from reading held-out-9's briefs): a question whose verbs of work only say what is asked
about ("where else is X used?", "is the cli adding this …?") is an enquiry; a yes/no question the agent answers
with a yes or a no, changing nothing, is answered; a merge stopped on conflicts is over once a commit passed after
it. Small transcripts of our own through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.intent import answers_yes_no, enquiry, yes_no_question
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold10 import _T
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

CONFLICT = ("Auto-merging src/hooks.go\nCONFLICT (content): Merge conflict in src/hooks.go\n"
            "Automatic merge failed; fix conflicts and then commit the result.")


def test_a_verb_that_only_says_what_is_asked_about_names_no_work() -> None:
    assert enquiry("where else is settings.Telemetry used ?")
    assert enquiry("is the cli adding this to the global git ignore? I don't recall adding it there myself")
    assert enquiry("but while that test is running my local git config is messed up, right?")
    assert not enquiry("where is the file created? fix it")  # "fix it" asks for work
    assert not enquiry("is the README updated? also commit it")
    assert not enquiry("add the test to CI, right?")  # a request with a tag: work
    assert not enquiry("can you add the flag?")


def test_a_question_whose_verb_says_what_is_asked_about_is_answered_once_work_is_asked(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("make telemetry off by default")
    t.edit("/r/cli/setup.go", "a", "b")
    t.said("Done.")
    t.user("where else is settings.Telemetry used ?")
    t.said("main.go reads it; its comment is stale.")
    t.user("update that stale comment in main.go")
    t.edit("/r/cli/main.go", "enabled", "disabled")
    t.said("Updated.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "w.jsonl"))
    current = _section(brief, "## Requirements")
    assert "settings.Telemetry" not in current and "stale comment" in current, current
    assert [r.text for r in state.withdrawn] == ["where else is settings.Telemetry used ?"]


def test_a_yes_no_question_answered_with_a_yes_or_no_is_not_current(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert yes_no_question("oh, do we have another merge conflict now?")
    assert yes_no_question("but while that test is running my local git config is messed up, right?")
    assert not yes_no_question("where else is settings.Telemetry used ?")  # not answered by a yes or no
    assert not yes_no_question("can you add the flag?")
    assert answers_yes_no("No, it's only the temp repo's config.") and answers_yes_no("No merge conflicts — clean.")
    assert not answers_yes_no("No problem, I'll look.") and not answers_yes_no("Notably, the hook runs first.")
    t = _T()
    t.user("add a test for the global ignore")
    t.edit("/r/git_test.go", "a", "b")
    t.said("Added.")
    t.user("do we have another merge conflict now?")
    t.bash("git status", 0, "On branch x\nnothing to commit, working tree clean")
    t.said("No merge conflicts — the merge is clean and pushed.")
    t.user("but while that test is running my local git config is messed up, right?")
    t.said("No, it's only setting core.excludesfile in the temp repo's own config.")
    t.user("is the cache still warm after the test?")
    t.edit("/r/cache.go", "a", "b")  # the agent changed a file for it: more than an answer
    t.said("No, it was cold; I warm it now.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "y.jsonl"))
    current = _section(brief, "## Requirements")
    assert "merge conflict" not in current and "messed up" not in current, current
    assert "cache still warm" in current and "global ignore" in current
    assert {r.text for r in state.withdrawn} == {
        "do we have another merge conflict now?",
        "but while that test is running my local git config is messed up, right?"}


def test_a_yes_no_question_answered_otherwise_stays(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _T()
    t.user("is the cli adding this to the global git ignore?")
    t.said("Let me look at the setup code first.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "o.jsonl"))
    assert "global git ignore" in _section(brief, "## Requirements") and not state.withdrawn


def test_a_merge_stopped_on_conflicts_is_over_once_a_commit_passed(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("merge origin/main and push")
    t.bash("git fetch origin main && git merge origin/main", 1, CONFLICT)
    t.edit("/r/src/hooks.go", "<<<<<<< HEAD", "merged")
    t.bash("go build ./...")
    t.bash("git add src/hooks.go && git commit -m 'Merge origin/main' && git push", 0,
           "[x af4f21de] Merge origin/main\nTo github.com:o/r.git\n   aa50bdd9..af4f21de  x -> x")
    t.bash("git merge other", 1, CONFLICT)  # after the commit: still stopped
    t.bash("git status")  # passes, but ends no merge
    brief, state = _brief(ledger, location, t.write(tmp_path / "m.jsonl"))
    failing = [f.what for f in state.failures if f.failing]
    assert failing == ["git merge other"], failing
    assert "origin/main" not in _section(brief, "## Failing now")


def test_a_proposal_answered_risky_is_settled_once_the_user_asks_for_other_work(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("fix the empty repo error in both strategies")
    t.edit("/r/strategy/auto_commit.go", "a", "b")
    t.said("Fixed in both strategies.")
    t.user("rather than modifying initializeSession, could we call IsEmptyRepository inside OpenRepository()?")
    t.said("That would be risky. OpenRepository() is called broadly; most callers work on empty repos.")
    t.user("make a PR for this")
    t.said("Opened.")
    t.user("could we also log the repository path inside OpenRepository()?")
    t.said("That would be risky: the path may hold a user name.")
    t.user("then log it inside OpenRepository() at debug level")  # takes the proposal up: it stays
    brief, state = _brief(ledger, location, t.write(tmp_path / "r.jsonl"))
    current = _section(brief, "## Requirements")
    assert "IsEmptyRepository" not in current and "make a PR for this" in current, current
    assert "log the repository path" in current
    assert [r.withdrawn_because for r in state.withdrawn] == [
        "answered no at [7]; the user asked for other work at [8]"]
