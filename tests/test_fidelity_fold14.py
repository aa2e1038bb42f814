"""Fold version 14 (issue 20, from reading held-out-11's briefs): a failed install is fixed once another package
manager of the same language installed the same packages; a request to commit or push and nothing more is done once
a commit or a push passed after it; prose like "login and password reset" is no netrc entry to redact. Small
transcripts of our own through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.domain.redact import BUILTIN, redact_text
from projections.commands import installs_same
from projections.intent import asks_publish
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold10 import _T
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

NPM_NULL = "npm error Cannot read properties of null (reading 'matches')"


def test_a_failed_install_is_fixed_by_the_same_packages_through_another_manager(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert installs_same("pnpm add feed", "npm install feed")
    assert installs_same("cd /r && yarn add feed@4.2", "npm i feed")  # a version says how, not what
    assert not installs_same("pnpm add feed rss", "npm install feed")  # more packages: other work
    assert not installs_same("npm install feed", "npm install feed")  # the same manager: a rerun's own rule
    assert not installs_same("pip install feed", "npm install feed")  # another language's registry
    assert not installs_same("pnpm test", "npm test")  # not an install
    t = _T()
    t.user("create a /feed endpoint that outputs the links as RSS")
    t.bash("npm install feed", 1, NPM_NULL)
    t.bash("npm install left-pad", 1, NPM_NULL)  # never installed since: still failing
    t.user("we use pnpm, please remember that, and try again.")
    t.bash("pnpm add feed", 0, "dependencies:\n+ feed 5.1.0")
    t.said("Installed feed with pnpm.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "pnpm.jsonl"))
    assert [f.what for f in state.failures if f.failing] == ["npm install left-pad"]
    failing = _section(brief, "## Failing now")
    assert "npm install feed" not in failing and "left-pad" in failing, failing


def test_what_a_request_to_commit_or_push_is() -> None:
    assert asks_publish("Did you commit and pushed the code?") == {"commit", "push"}
    assert asks_publish("ok, push it to main please") == {"push"}
    assert asks_publish("commit this") == {"commit"}
    assert not asks_publish("Next time you made changes to the code, let me commit.")  # not to commit
    assert not asks_publish("don't push yet")
    assert not asks_publish("commit this and open a PR")  # more than git: the PR stays to be done
    assert not asks_publish("Seems you did commit by yourselve?")


def test_a_request_to_commit_and_push_is_done_once_a_push_passed_after_it(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("make the page width a percentage of the window")
    t.edit("/r/web/index.html", "max-width: 820px;", "width: 90%;")
    t.said("Done.")
    t.user("Did you commit and pushed the code?")
    t.bash("git add web/index.html && git commit -m 'fix: responsive width'", 0,
           "[main 42a45e1] fix: responsive width\n 1 file changed")
    t.user("commit and push")  # asked again after the commit: only a push answers it
    t.bash("git push", 0, "To https://github.com/o/r.git\n   f0f7524..42a45e1  main -> main")
    t.said("Committed and pushed 42a45e1.")
    t.user("commit this and open a PR")  # more than a commit: stays
    t.bash("git commit -am 'docs'", 0, "[main 5ffc3fe] docs\n 1 file changed")
    t.user("commit the docs")
    t.said("Which docs?")  # nothing committed since it was asked: stays
    brief, state = _brief(ledger, location, t.write(tmp_path / "push.jsonl"))
    current = _section(brief, "## Requirements")
    assert "Did you commit" not in current and "commit and push" not in current, current
    assert "open a PR" in current and "commit the docs" in current and "percentage" in current
    pushed = next(c.position for c in state.commands if c.line == "git push")
    assert {r.text: r.withdrawn_because for r in state.withdrawn} == {
        "Did you commit and pushed the code?": f"done: pushed 42a45e1 to main at [{pushed}]",
        "commit and push": f"done: pushed 42a45e1 to main at [{pushed}]"}


def test_login_and_password_in_prose_is_no_netrc_entry(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    netrc = "machine api.example.com\n  login deploy\n  password hunter2x"
    assert "hunter2x" not in redact_text(netrc, BUILTIN)
    assert "p4ss" not in redact_text("machine h login andrew password p4ss", BUILTIN)  # a name that starts "and"
    t = _T()
    t.user("After the move of the server I can not login and password reset does also not work?")
    brief, state = _brief(ledger, location, t.write(tmp_path / "login.jsonl"))
    assert "password reset does also not work" in _section(brief, "## Requirements")
    assert "REDACTED" not in state.title
