"""Fold version 13 (issue 20, from reading held-out-10's briefs): a failed check the user pasted (CI's output) is fixed
once a local check of its kind passed after a change; a request asked again that the agent answers as done already
is done; a request to remove a file is done once it is deleted; a numbered pick is done once the user picks other
numbers; a lint run on named files is answered by a whole lint run; `go run ./cmd/x` answers a failed `x`. Small
transcripts of our own through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.commands import as_built, passed_checks, path_checks, whole_checks
from projections.intent import asks_removal, enquiry, reported_check, says_already_done, selects
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold10 import _T
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

STATICCHECK = ("I'm getting this error on GH Actions:\n"
               "  Running [/home/runner/golangci-lint run --new-from-patch=/tmp/pull.patch] in [/w/cli] ...\n"
               "  cmd/cli/telemetry/detached_test.go:100:23: SA5011: possible nil pointer dereference (staticcheck)\n"
               "  1 issues:\n  * staticcheck: 1")
GOFMT = "fix :\nThe following files need gofmt formatting:\ncmd/cli/versioncheck/versioncheck_test.go"


def test_what_a_pasted_failed_check_is() -> None:
    assert reported_check(STATICCHECK) == {"lint"} and reported_check(GOFMT) == {"format"}
    assert reported_check("CI says:\n--- FAIL: TestParse (0.00s)\nFAIL\tgithub.com/o/r/parse") == {"test"}
    # The user's own request in the same message: not only a report, so no check answers it.
    assert not reported_check(f"{STATICCHECK}\nalso add a test for the payload builder")
    assert not reported_check("fix lint")  # no output: the user's words alone
    assert not reported_check("The tests:\n- cover the parser\n- cover the printer")  # a list, no failure
    assert passed_checks('mise run lint && mise run test 2>&1 | grep -E "PASS|FAIL"') == {"lint"}  # test's exit: grep's
    assert passed_checks("gofmt -l cmd/cli/versioncheck/versioncheck_test.go") == {"format"}  # a path is no test
    assert not passed_checks("mise run build; mise run lint")  # after ";" a part's failure does not show


def test_a_pasted_failed_check_is_fixed_once_a_check_of_its_kind_passed_after_a_change(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("add a payload builder to the detached telemetry")
    t.edit("/r/cli/telemetry/detached.go", "a", "b")
    t.said("Added.")
    t.user(STATICCHECK)
    t.bash("mise run lint")  # before any change: the same code passing locally fixes nothing
    t.edit("/r/cli/telemetry/detached_test.go", "if payload == nil {", "if payload == nil {\n\treturn")
    t.bash("mise run test")  # tests pass: not the lint CI failed
    t.bash('mise run lint && mise run test 2>&1 | grep -E "PASS|FAIL"')  # lint passed, after a change
    t.said("Added returns after the nil checks.")
    t.user(GOFMT)
    t.edit("/r/cli/versioncheck/versioncheck_test.go", "a  :", "a :")
    t.bash("gofmt -l cmd/cli/versioncheck/versioncheck_test.go")
    t.said("Formatted.")
    t.user(f"{STATICCHECK}\nalso add a test for the payload builder")  # a request besides: stays
    t.edit("/r/cli/telemetry/detached_test.go", "b", "c")
    t.bash("mise run lint")
    t.said("Added the test.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "ci.jsonl"))
    current = _section(brief, "## Requirements")
    assert "need gofmt formatting" not in current and "also add a test" in current, current
    assert "payload builder to the detached" in current
    assert [r.text for r in state.requirements if "SA5011" in r.text] == [
        f"{STATICCHECK}\nalso add a test for the payload builder"]
    fixed = {r.text.split("\n")[0]: r.withdrawn_because or "" for r in state.withdrawn}
    assert fixed["I'm getting this error on GH Actions:"].startswith("fixed: a failed lint check the user pasted")
    assert "`mise run lint && mise run test" in fixed["I'm getting this error on GH Actions:"]
    assert fixed["fix :"].startswith("fixed: a failed format check the user pasted")


def test_a_lint_run_on_named_files_is_answered_by_a_whole_lint_run(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert path_checks("golangci-lint run ./cmd/cli/strategy/push_common.go 2>&1") == {"lint"}
    assert whole_checks("mise run fmt && mise run lint") == {"format", "lint"}
    assert not whole_checks("golangci-lint run ./cmd/cli/a.go")
    t = _T()
    t.user("use the git CLI for the fetch")
    t.bash("golangci-lint run ./cmd/cli/strategy/push_common.go 2>&1", 1, "undefined: OpenRepository (typecheck)")
    t.bash("go build ./cmd/cli/strategy/", 1, "undefined: x")  # a build: a lint run answers nothing of it
    t.bash("mise run fmt && mise run lint 2>&1")
    brief, state = _brief(ledger, location, t.write(tmp_path / "lint.jsonl"))
    assert [f.what for f in state.failures if f.failing] == ["go build ./cmd/cli/strategy/"]
    assert "push_common.go" not in _section(brief, "## Failing now")


def test_a_request_asked_again_and_answered_as_done_already_is_done(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert says_already_done("The timeout is already in place for both functions.")
    assert says_already_done("\n\nThose tests were already added in the previous step.")
    assert says_already_done("All 7 pass. Nothing else to do here.")
    assert not says_already_done("Added the timeout. The fetch was already slow, so 2 minutes.")  # no done word
    assert not says_already_done("Added it. Tests pass. The flag is already in place.")  # past two sentences
    t = _T()
    first = ("git fetch is run with context.Background() and no timeout. Since this is a network operation, it can "
             "hang indefinitely. Consider using context.WithTimeout so the command is guaranteed to terminate.")
    t.user(first)
    t.edit("/r/cli/git_operations.go", "context.Background()", "ctx")
    t.said("Added a 2-minute timeout.")
    t.user("the error of fetchCmd.CombinedOutput() is not wrapped; use %w")
    t.said("The error is already wrapped with %w.")  # asked once: the agent's word alone does not close it
    t.user("FetchMetadataBranch runs git fetch with context.Background() and no timeout. Consider using "
           "context.WithTimeout for this network operation to avoid indefinite hangs.")
    t.said("The timeout is already in place for both functions.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "again.jsonl"))
    current = _section(brief, "## Requirements")
    assert "no timeout" not in current and "use %w" in current, current
    assert len(state.withdrawn) == 2 and state.withdrawn[0].text == first
    assert "FetchMetadataBranch" in state.withdrawn[1].text
    assert state.last_reply is not None
    again, reply = state.withdrawn[1].position, state.last_reply.position
    assert {r.withdrawn_because for r in state.withdrawn} == {
        f"done already: asked again at [{again}], and the agent said at [{reply}]: The timeout is already in place "
        "for both functions."}


def test_a_request_to_remove_a_file_is_done_once_the_file_is_deleted(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert asks_removal("Remove the docs/task-honor-ignore-lists.md file as the work is done",
                        "task-honor-ignore-lists.md")
    assert not asks_removal("Remove the flag from docs/task-honor-ignore-lists.md", "ignore.md")
    t = _T()
    t.user("implement the task in docs/task.md")
    t.edit("/r/docs/task.md", "a", "b")
    t.said("Implemented.")
    t.user("Remove the docs/task.md file as the work is done, and the notes.md too")
    t.bash("rm docs/task.md")
    t.said("Removed docs/task.md.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "rm.jsonl"))
    assert "Remove the docs/task.md" not in _section(brief, "## Requirements")
    (done,) = state.withdrawn
    assert (done.withdrawn_because or "").startswith("done: task.md deleted at [")


def test_a_numbered_pick_is_done_once_the_user_picks_other_numbers_after_changes(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert selects("let's start with implementing suggestions 1-4 first") == {1, 2, 3, 4}
    assert selects("okay now let's do 6,7,8,10") == {6, 7, 8, 10} and selects("do 5 and 9") == {5, 9}
    assert not selects("run step 3") and not selects("fix the 2 failing tests")
    t = _T()
    t.user("suggest updates to the README")
    t.said("1. A TOC 2. Why 3. Requirements 4. go install 5. FAQ 6. A diagram")
    t.user("let's do 1-2 first")
    t.said("Which file?")  # nothing changed yet: the pick is not done
    t.user("do 3 and 4 as well")
    t.edit("/r/README.md", "a", "b")
    t.said("Done 1-4.")
    t.user("okay now let's do 5, 6")
    brief, state = _brief(ledger, location, t.write(tmp_path / "pick.jsonl"))
    current = _section(brief, "## Requirements")
    assert "let's do 5, 6" in current and "1-2 first" not in current and "3 and 4" not in current, current
    assert [r.text for r in state.withdrawn] == ["let's do 1-2 first", "do 3 and 4 as well"]


def test_a_program_run_from_its_source_answers_its_missing_or_stale_binary(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert as_built("cd ../brain && go run ./cmd/entire-brain index /p --force") == "entire-brain index /p --force"
    assert as_built("go run main.go") is None and as_built("go test ./cmd/x") is None
    t = _T()
    t.user("validate with entire-brain index")
    t.bash("entire-brain index /r/agentviz --sem-binary /tmp/provider --worktree", 127,
           "zsh:1: command not found: entire-brain")
    t.bash("./entire-brain index /r/agentviz --sem-binary /tmp/provider --worktree", 1,
           'Error: unknown command "index" for "entire-brain"')
    t.bash("./entire-brain doctor --json", 1, "doctor failed")  # another verb: not what passed
    t.bash("go run ./cmd/entire-brain index /r/agentviz --sem-binary /tmp/wrapper --worktree --force")
    brief, state = _brief(ledger, location, t.write(tmp_path / "built.jsonl"))
    assert [f.what for f in state.failures if f.failing] == ["./entire-brain doctor --json"]
    assert "unknown command" not in _section(brief, "## Failing now")


def test_a_why_about_a_limit_of_the_code_is_an_enquiry(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    assert enquiry("why this method does only work on unix and not windows?")
    assert enquiry("why does the exporter only support JSON?")
    assert not enquiry("why do we only support bash?")  # about what we chose: pushback
    assert not enquiry("why does this only work on unix? make it work on windows")  # asks for work
    t = _T()
    t.user("why this method does only work on unix and not windows?")
    t.said("It uses Setpgid, which only exists on Unix.")
    t.user("add a non-Unix implementation of spawnDetached behind a build tag")
    t.edit("/r/telemetry/detached_other.go", "", "//go:build !unix")
    t.said("Added.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "why.jsonl"))
    assert "only work on unix" not in _section(brief, "## Requirements")
    assert [r.text for r in state.withdrawn] == ["why this method does only work on unix and not windows?"]


def test_what_the_done_already_and_removal_rules_do_not_read() -> None:
    # Read on two earlier parts' sessions (codemie-clear-tracking, drm-python-to-rust-port), where fold 13's first
    # draft moved a current request: a heading of the reply's body is not its answer, and a folder is no file.
    assert not says_already_done("You're absolutely right - I'm overcomplicating it. Let me simplify to the "
                                 "essential logic:\n\n## Plan\n\n### What Already Exists\n- HistoryParser")
    assert not asks_removal("Delete all the Python source files when you're done (but keep the Justfile - update "
                            "it to run Rust tests instead).", "tests")
