"""Fold version 10 (issue 20, from reading held-out-7's briefs): a failure fixed by another route is not failing now
(a program missing from PATH run through `env PATH=…`, a pull request opened by another route from the same
branch, a remote's refusal of the caller's key once a command got in over another transport), and Where it stopped
names the last commit pushed and the last pull request opened. Small transcripts of our own through the real
importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.commands import is_read_only
from projections.remote import pr_created, pushed, tool_pr_created
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold6 import _S
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

NODE = "/home/u/.cache/runtime/node/bin"


class _T(_S):
    def bash(self, command: str, exit_code: int = 0, output: str = "") -> None:
        """As ``_S.bash``, a failure's output also in its ``toolUseResult``, where Claude Code 2.x puts it."""
        super().bash(command, exit_code, output)
        if exit_code:
            self.lines[-1]["toolUseResult"] = f"Error: Exit code {exit_code}\n{output}"


def test_a_program_missing_from_path_is_fixed_when_run_with_the_path_set(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    line = f"env PATH={NODE}:/usr/bin {NODE}/node --run format:check"
    assert not is_read_only(line) and is_read_only("env") and is_read_only("env FOO=1 ls")  # env runs what follows
    t = _T()
    t.user("run the format check")
    t.bash("node --run format:check", 127, "zsh:1: command not found: node")
    t.bash(f"{NODE}/node --run format:check", 1, "node_modules/.bin/oxfmt: line 20: exec: node: not found")
    t.bash(line, 0, "All matched files use the correct format.")
    t.bash("npm run lint", 127, "zsh:1: command not found: npm")
    t.bash(f"env PATH={NODE}:/usr/bin {NODE}/npm run build")  # another verb of the same program
    brief, state = _brief(ledger, location, t.write(tmp_path / "path.jsonl"))
    assert "node --run" not in _section(brief, "## Failing now")
    assert [f.what for f in state.failures if f.failing] == ["npm run lint"]  # `npm run build` is not lint


def test_a_pull_request_opened_another_way_answers_the_failed_openings_of_the_same_branch(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    create = "gh pr create --draft --base main --head feat/x --title 'Add x' --body 'b'"
    assert pr_created(create) == "feat/x" and pr_created("/opt/bin/gh pr create --title t") == ""
    assert pr_created("gh api repos/o/r/pulls -X POST -f head=feat/x -f base=main") == "feat/x"
    assert pr_created("gh pr view 4") is None
    assert tool_pr_created("mcp__github__create_pull_request", '{"owner": "o", "head": "feat/x", "ba') == "feat/x"
    t = _T()
    t.user("open a pull request for feat/x and one for feat/y")
    t.bash(create, 127, "zsh:1: command not found: gh")
    t.bash(f"/opt/bin/{create}", 1, "pull request create failed: GraphQL: Head sha can't be blank (createPullRequest)")
    t.bash("/opt/bin/gh api repos/o/r/pulls -X POST -f head=feat/y -f base=main", 1, "gh: Validation Failed (HTTP 422)")
    # The tool said ok, but GitHub answered with an error: no PR, nothing answered.
    t.tool("mcp__github__create_pull_request", {"owner": "o", "repo": "r", "head": "feat/x", "base": "main"},
           '{"error": "GitHub API error 422: Validation Failed"}')
    t.tool("mcp__github__create_pull_request", {"owner": "o", "repo": "r", "head": "feat/x", "base": "main"},
           '{"url": "https://github.com/o/r/pull/50", "number": 50}')
    t.said("Opened PR #50.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "b.jsonl"))
    # feat/y's PR was never opened.
    assert [f.what for f in state.failures if f.failing] == [
        "/opt/bin/gh api repos/o/r/pulls -X POST -f head=feat/y -f base=main"]
    assert "gh pr create" not in _section(brief, "## Failing now")
    assert "last pull request opened: PR #50" in _section(brief, "## Where it stopped")
    opened = state.pull_request
    assert opened is not None and opened.number == 50
    # Answered by the call that opened it, not by the one GitHub refused.
    assert {f.resolved_at for f in state.failures if "feat/x" in f.what} == {opened.position}


def test_a_refused_key_is_fixed_once_a_command_gets_in_to_the_same_host(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    denied = "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository."
    t = _T()
    t.user("fetch main and rebase on it")
    t.bash("ssh -T -o BatchMode=yes git@github.com", 255, "git@github.com: Permission denied (publickey).")
    t.bash("ssh -T git@gitlab.example.org", 255, "git@gitlab.example.org: Permission denied (publickey).")
    t.bash("git fetch upstream main", 128, denied)
    t.bash("git remote set-url origin https://github.com/o/r.git")
    t.bash("gh api user")  # passes, but reaches no git remote: it says nothing of the key
    t.bash("git fetch origin main", 0, "From https://github.com/o/r\n * branch            main       -> FETCH_HEAD")
    brief, state = _brief(ledger, location, t.write(tmp_path / "b.jsonl"))
    assert [f.what for f in state.failures if f.failing] == ["ssh -T git@gitlab.example.org"]  # another host
    fetched = next(c.position for c in state.commands if c.line == "git fetch origin main")
    assert {f.resolved_at for f in state.failures if "github.com" in f.what + f.output_tail} == {fetched}
    assert "git@github.com" not in _section(brief, "## Failing now")


def test_where_it_stopped_names_the_last_commit_pushed(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    assert pushed("To https://github.com/o/r.git\n   fe2db25..2f72d05  main -> main\n") == ("2f72d05", "main")
    assert pushed(" + c6553d3...0ff9e2e feat -> feat (forced update)") == ("0ff9e2e", "feat")
    assert pushed(" * [new branch]      main -> main") == (None, "main")
    t = _T()
    t.user("commit this and push it")
    t.bash("git commit -m 'Initial release'", 0, "[main (root-commit) 1a2b3c4] Initial release\n 3 files changed")
    t.bash("git push -u origin main 2>&1", 0, "To https://github.com/o/r.git\n * [new branch]      main -> main")
    t.bash("git add a.py && git commit -m 'Add trace'", 0, "[main 2f72d05] Add trace\n 1 file changed")
    t.bash("git push origin main 2>&1", 0, "To https://github.com/o/r.git\n   1a2b3c4..2f72d05  main -> main")
    t.said("Pushed.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "b.jsonl"))
    assert "- pushed 2f72d05 to main [" in _section(brief, "## Where it stopped")
    assert state.pushed is not None and state.pushed.commit == "2f72d05" and state.pull_request is None


def test_a_new_branch_pushed_names_the_commit_made_before_it(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("commit this and push it")
    t.bash("git commit -m 'Initial release'", 0, "[main (root-commit) 1a2b3c4] Initial release\n 3 files changed")
    t.bash("git push -u origin main 2>&1", 0, "To https://github.com/o/r.git\n * [new branch]      main -> main")
    t.said("Pushed.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "a.jsonl"))
    assert "- pushed 1a2b3c4 to main [" in _section(brief, "## Where it stopped")  # git printed no hash for it
