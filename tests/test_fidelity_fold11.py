"""Fold version 11 (issue 20, from reading held-out-8's briefs): questions answered are not current (one that
supposes a cause, one that asks how the work could be done, one whose words name "the user", a proposal the agent
answered no to and the user accepted); a request narrowed by the user's later words is listed apart; a value the
redactor hid in a failed command is matched to the rerun that shows it in clear; a user-reported error the agent
changed files for is behind once the user reports on something else; and the files a sub-agent changed, seen only
in a git status the session ran, are named. Small transcripts of our own through the real importer into a real
ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.intent import agrees, declines, drops, enquiry, reports_error
from projections.worktree import asks_tree, changed_files, shell_command
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold10 import _T
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")


def test_questions_answered_are_not_current_once_the_user_asks_for_the_work(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert enquiry("maybe the transparent keyword isn't allowed in the schema for palette?")
    assert not enquiry("maybe we should try the https address?")  # prescribes a way: not a question
    assert enquiry("How can we support Yash with the most minimal setup? Maybe a shell has similar semantics.")
    assert enquiry("how does Render(x, nil) solve the user's request when no context is passed?")  # "user": no verb
    assert not enquiry("how does Render(x, nil) solve it? use the cache instead")  # "use" is one
    t = _T()
    t.user("How can we support the Yash shell with the most minimal setup?")
    t.said("Yash maps onto the bash integration almost one to one.")
    t.user("maybe the prompt keyword isn't allowed in the schema?")
    t.said("No, it is allowed: the schema's colour pattern includes it.")
    t.user("go ahead and implement it")
    t.edit("/r/src/shell/yash.go", "a", "b")
    t.said("Implemented.")
    t.user("how does render(color, nil) solve the user's request when no context is passed?")
    t.said("The global cache is merged into every render.")
    t.user("Why aren't we using table-driven tests for these cases?")
    brief, state = _brief(ledger, location, t.write(tmp_path / "q.jsonl"))
    current = _section(brief, "## Requirements")
    assert "minimal setup" not in current and "keyword" not in current and "no context" not in current, current
    assert "go ahead and implement it" in current and "table-driven" in brief
    assert {r.text[:20] for r in state.withdrawn} >= {"How can we support t", "maybe the prompt key"}


def test_a_proposal_the_agent_answered_no_to_is_settled_once_the_user_agrees(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert declines("No — and the reason is ordering.") and declines("Short answer: we already do.")
    assert not declines("Yes, we can: a trap on EXIT.") and not declines("Notably, the hook runs first.")
    assert agrees("Okay, you can comment on the issue.") and agrees("Fine by me. I agree with the observations")
    assert not agrees("okay, that still doesn't work")
    t = _T()
    t.user("analyse the daemon issue")
    t.said("The daemon is started with job control on.")
    t.user("Can we not capture the Ctrl+C and kill the daemon before the shell exits?")
    t.said("No — the IDE checks for children before any exit hook runs.")
    t.user("Okay, I agree with the observations. Fix the job notice and create a commit.")
    t.said("Committed.")
    t.user("Can we also add a trap on EXIT?")
    t.said("Yes, a trap on EXIT works here; shall I?")
    t.user("okay, do it")  # a yes: the proposal is what is asked now
    _, state = _brief(ledger, location, t.write(tmp_path / "p.jsonl"))
    assert [r.text for r in state.withdrawn] == ["Can we not capture the Ctrl+C and kill the daemon before the shell "
                                                 "exits?"]
    assert any("trap on EXIT" in r.text for r in state.requirements)


def test_a_request_the_user_narrowed_is_listed_apart_from_the_current_ones(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert drops("don't create a pr, just a commit") == ("create", "pr")
    assert drops("do not open the PR yet") == ("open", "pr") and drops("don't worry about it") is None
    t = _T()
    t.user("create a PR against next to solve issue 7670: the TargetFramework from Directory.Build.props")
    t.edit("/r/src/project.go", "a", "b")
    t.user("also add a test for it")
    t.user("don't create a pr, just a commit")
    t.bash("git commit -am 'fix(project): resolve TargetFramework'", 0, "[next cde612d] fix(project)\n 1 file changed")
    brief, state = _brief(ledger, location, t.write(tmp_path / "n.jsonl"))
    assert "PR against next" not in _section(brief, "## Requirements")
    assert "also add a test" in _section(brief, "## Requirements")
    narrowed = _section(brief, "## Narrowed by the user")
    assert "create a PR against next to solve issue 7670" in narrowed and "don't create a pr, just a commit" in narrowed
    (goal,) = [r for r in state.requirements if r.narrowed_at is not None]
    assert goal.narrowed_by == "don't create a pr, just a commit"


SCRATCH = "/mnt/c/Users/u/AppData/Local/Temp/claude/D--proj/8521e3ab-d00f-4fdc-b013-609c00860cc3/scratchpad"


def test_a_failed_command_whose_path_was_redacted_is_fixed_by_the_rerun_that_shows_it(
    ledger: Ledger, location: Location, tmp_path: Path, home: Path
) -> None:
    # The redactor no longer hides such a path; ledgers written before keep it hidden, as this rule (the
    # entropy check's old verdict on the quoted run) writes it: the fold must still match the rerun.
    home.mkdir(parents=True, exist_ok=True)
    (home / "redact.toml").write_text('[[pattern]]\nname = "high-entropy"\nregex = "(?<=\\")/mnt/c/[A-Za-z0-9+/_-]+"\n')
    t = _T()
    t.user("run the serve test against both binaries")
    # Git Bash mangles the quoted path; the redactor took it for a key (a quoted, random-looking value).
    t.bash(f'wsl -e bash "{SCRATCH}/run-test.sh" omp-control', 127,
           f"bash: C:/Program Files/Git{SCRATCH}/run-test.sh: No such file or directory")
    t.bash(f'wsl -e bash "{SCRATCH}/other-test.sh" omp-control', 127, "bash: other-test.sh: No such file or directory")
    t.bash(f"MSYS_NO_PATHCONV=1 wsl -e bash {SCRATCH}/run-test.sh omp-control", 0, "TEST-DONE")
    brief, state = _brief(ledger, location, t.write(tmp_path / "r.jsonl"))
    hidden = [f for f in state.failures if "[REDACTED:high-entropy:" in f.what]
    assert len(hidden) == 2  # the premise: both failures keep the path hidden
    assert [f.failing for f in hidden] == [False, True]  # other-test.sh never ran again
    failing = _section(brief, "## Failing now")
    assert "Program Files/Git" not in failing and "other-test.sh" in failing
    assert "[REDACTED:high-entropy:" in failing and SCRATCH not in failing  # what was hidden stays hidden


def test_an_error_the_user_reported_is_behind_once_they_report_on_something_else(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    report = "I get .: cannot open file `$/home/jan/.cache/omp/init.1322.yash': No such file or directory"
    assert reports_error(report)
    t = _T()
    t.user("add yash support")
    t.edit("/r/src/shell/yash.go", "a", "b")
    t.said("Done.")
    t.user(report)
    t.edit("D:\\r\\src\\shell\\init.go", "$'", "'")  # a Windows path: named by its folder and name
    t.said("Fixed: plain single quotes now.")
    t.user("Jobs seem to count up, but the counter is not decremented when they finish.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "e.jsonl"))
    assert "cannot open file" not in _section(brief, "## Requirements")
    (gone,) = [r for r in state.withdrawn if r.text == report]
    assert gone.withdrawn_because is not None and gone.withdrawn_because.startswith(
        "addressed: the agent changed shell/init.go after it")
    assert "not decremented" in _section(brief, "## Requirements")


def test_an_error_the_user_reports_again_or_never_saw_fixed_stays(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("add yash support")
    t.user("I get .: cannot open file `init.yash': No such file or directory")
    t.edit("/r/src/shell/init.go", "$'", "'")
    t.said("Fixed.")
    t.user("still the same error when I open yash")  # it still fails: the failed-attempt rule, not this one
    t.edit("/r/src/shell/init.go", "'", '"')
    t.user("now I get: cannot open file `init.yash' again")  # comes back to it
    _, state = _brief(ledger, location, t.write(tmp_path / "s.jsonl"))
    assert [r.text for r in state.requirements if "cannot open file" in r.text] == [
        "now I get: cannot open file `init.yash' again"]
    assert not any(r.withdrawn_because and r.withdrawn_because.startswith("addressed") for r in state.withdrawn)


STATUS_BEFORE = " M website/notes.md\n"
STATUS_AFTER = (" M src/cli/init.go\n M website/notes.md\n M website/docs/customize.mdx\n?? src/shell/yash.go\n"
                "?? src/shell/yash_test.go\n D src/shell/old.go\n")


def test_files_a_sub_agent_changed_are_named_from_a_git_status_after_it(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert asks_tree("git -C /r status --short; git -C /r diff --stat") == (True, True)
    assert asks_tree("git status -- src") == (False, False) and asks_tree("git stash pop") is None
    assert changed_files(" src/a.go | 3 ++-\n 1 file changed, 2 insertions(+)\nR  old.go -> new.go\n") == {
        "src/a.go": "modified", "new.go": "modified"}
    assert shell_command('{"command": "git -C D:\\\\r status --short", "description": "x"}') == (
        "git -C D:\\r status --short")
    t = _T()
    t.user("implement yash support with a sub-agent, and update the docs")
    t.bash("git status --short", 0, STATUS_BEFORE)  # dirty before the sub-agent: not its change
    t.tool("Agent", {"description": "Implement yash", "prompt": "Implement yash support"}, "Agent launched.")
    t.edit("/r/src/cli/init.go", "a", "b")  # the main agent's own edit: under Files changed
    # Run through PowerShell, which the log keeps as a tool call: its output is read all the same.
    t.tool("PowerShell", {"command": "git -C D:\\r status --short; git -C D:\\r diff --stat"}, STATUS_AFTER)
    t.said("The sub-agent finished.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "a.jsonl"))
    assert state.delegated is not None and state.tree_checked is not None
    seen = _section(brief, "## Changed in the working tree after the sub-agent")
    assert "src/shell/yash_test.go (created" in seen and "website/docs/customize.mdx (modified" in seen
    assert "src/shell/old.go (DELETED" in seen
    assert "notes.md" not in seen and "src/cli/init.go" not in seen  # changed before it, or edited in the log
    assert "none changed in the git status before it" in brief
    assert "/r/src/cli/init.go (modified" in _section(brief, "## Files changed")


def test_a_git_status_without_a_sub_agent_names_no_files(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _T()
    t.user("what is changed here?")
    t.bash("git status --short", 0, STATUS_AFTER)  # the user's own work in progress, from before the session
    t.said("Six files are changed.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "n.jsonl"))
    assert not state.tree_files and "## Changed in the working tree" not in brief
