"""Fold version 9 (issue 20, from reading held-out-6's briefs): a branch move done is a request done (a file
checked out is not one), a question is answered once the user asks the agent to pull or try again, "i dont need X"
withdraws the request naming X, a failure the user called off is no longer failing now, /clear closes what was
asked before it in that conversation only, a commit's subject shows in Last results, and a background task's
notice queued in the user's turn is no request. Small transcripts of our own through the real importer into a
real ledger."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.commands import commit_subject, switches_to
from projections.intent import calls_off, enquiry, not_needed
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold6 import _S
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

CLEAR = "<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n" \
        "            <command-args></command-args>"
"""/clear as Claude Code's transcript records it in the user's turn."""


def test_a_branch_move_the_agent_made_is_the_request_done(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _S()
    t.user("ok lets get back to main")
    t.bash("git checkout main && git pull", 0, "Switched to branch 'main'\nAlready up to date.")
    t.said("On main, pulled the latest.")
    t.user("add a health check endpoint to the api")
    brief, state = _brief(ledger, location, t.write(tmp_path / "branch.jsonl"))
    assert [r.text for r in state.requirements] == ["add a health check endpoint to the api"]
    assert "lets get back to main" not in _section(brief, "## Requirements")
    (done,) = state.withdrawn
    assert (done.withdrawn_because or "").startswith("done: the agent moved to branch main")
    assert state.title == "lets get back to main"  # "ok" steers, it names nothing of the task


@pytest.mark.parametrize("revert", ["git checkout -- main.py", "git checkout main.py", "git checkout HEAD main"])
def test_a_file_checked_out_is_a_revert_not_a_branch_move(
    ledger: Ledger, location: Location, tmp_path: Path, revert: str
) -> None:
    assert switches_to(revert) == ()
    t = _S()
    t.user("go back to main")
    t.bash(revert, 0, "Updated 1 path from the index")
    t.said("Restored it.")
    t.user("add a health check endpoint to the api")
    _, state = _brief(ledger, location, t.write(tmp_path / "revert.jsonl"))
    assert [r.text for r in state.requirements] == ["go back to main", "add a health check endpoint to the api"]


def test_a_question_is_answered_once_the_user_asks_to_pull_and_try_again(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    question = ("I had a quick question about the folder keys - are these random so that another user can update "
                "the folder without the other keys? am I interpreting this correctly?")
    assert enquiry(question)  # its verbs ("update") describe the design asked about
    t = _S()
    t.user(question)
    t.said("Yes: each folder's keypair is generated fresh, so sharing one exposes no other.")
    t.user("pull in the latest and try that again please")
    brief, state = _brief(ledger, location, t.write(tmp_path / "question.jsonl"))
    assert [r.text for r in state.requirements] == ["pull in the latest and try that again please"]
    assert "folder keys" not in _section(brief, "## Requirements")
    assert (state.withdrawn[0].withdrawn_because or "").startswith("answered")


def test_i_dont_need_x_withdraws_the_request_naming_x(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    assert not_needed("ahh ok looks like i dont need the token to set the endpoint") == "token"
    assert not_needed("I need the token now") is None
    t = _S()
    t.user("start the dev server and the tunnel")
    t.said("Both are up.")
    t.user("I think I also need you to generate me a jwt token so that I can validate everything.")
    t.said("Getting an OTP first.")
    t.user("ahh ok looks like i dont need the token to set the jwks endpoint")
    brief, state = _brief(ledger, location, t.write(tmp_path / "token.jsonl"))
    current = [r.text for r in state.requirements]
    assert "start the dev server and the tunnel" in current
    assert not any("generate me a jwt token" in text for text in current)
    (gone,) = [r for r in state.withdrawn if "jwt token" in r.text]
    assert "do not need the token" in (gone.withdrawn_because or "")
    assert "generate me a jwt" not in _section(brief, "## Requirements")


def test_a_failure_the_user_called_off_is_not_failing_now(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    assert calls_off("why do you need docker for the api logs?") == {"docker"}
    assert calls_off("forget the tests, just commit") == {"test"}
    t = _S()
    t.user("get me the api logs")
    t.bash("docker compose up -d", 127, "(eval):1: command not found: docker")
    t.bash("pnpm test", 1, "1 failed")
    t.user("why do you need docker for the api logs?")
    brief, state = _brief(ledger, location, t.write(tmp_path / "docker.jsonl"))
    docker = next(f for f in state.failures if "docker" in f.what)
    assert docker.called_off is not None and docker.resolved_at is None and not docker.failing
    failing = _section(brief, "## Failing now")
    assert "docker compose" not in failing and "pnpm test" in failing  # only what the user named
    assert "docker compose up -d: failed at" in _section(brief, "## Called off by the user")


def test_a_withdrawal_calls_off_what_failed_for_the_request_and_a_new_failure_is_failing_again(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("run the e2e suite against staging")
    t.bash("pnpm e2e --env staging", 1, "3 failed")
    t.user("skip that")
    t.said("Skipped.")
    _, state = _brief(ledger, location, t.write(tmp_path / "skip.jsonl"))
    assert [f.failing for f in state.failures] == [False]
    t.user("ok run it once more")
    t.bash("pnpm e2e --env staging", 1, "3 failed")
    brief, state = _brief(ledger, location, t.write(tmp_path / "skip.jsonl"))
    assert [f.failing for f in state.failures] == [True]
    assert "pnpm e2e --env staging" in _section(brief, "## Failing now")


def _todo(t: _S, text: str, status: str) -> None:
    t.tool("TodoWrite", {"todos": [{"content": text, "status": status, "activeForm": text}]},
           "Todos have been modified successfully.")


@pytest.mark.parametrize("clear", [CLEAR, "clear"])
def test_clear_closes_what_was_asked_before_it_in_the_conversation(
    ledger: Ledger, location: Location, tmp_path: Path, clear: str
) -> None:
    t = _S()
    t.user("Implement the following plan: drop errorDefaultGuidance from the prompt generator")
    _todo(t, "Replace errorDefaultGuidance", "in_progress")
    t.user("commit")
    t.bash('git commit -m "Fix output type bias"', 0, "[main 1a2b3c4] Fix output type bias")
    t.user(clear)
    t.user("at the top of the report, make the git url always visible")
    brief, state = _brief(ledger, location, t.write(tmp_path / "clear.jsonl"))
    assert [r.text for r in state.requirements] == ["at the top of the report, make the git url always visible"]
    # "commit" is done by the commit before the clear (fold 14); the plan is closed by the clear.
    assert {r.text.split(":")[0]: (r.withdrawn_because or "").split(":")[0] for r in state.withdrawn} == {
        "Implement the following plan": "closed", "commit": "done"}
    assert state.plan is None and "errorDefaultGuidance" not in _section(brief, "## Requirements")


def _continued(t: _S, after: _S) -> list[dict[str, Any]]:
    """``t``'s records as another session continuing ``after`` (Claude Code's new file after /clear): its own
    session id and uuids, its first record hung from ``after``'s last."""
    lines = json.loads(json.dumps(t.lines))
    for line in lines:
        line["sessionId"] = "second-session"
        line["uuid"] = "v" + str(line["uuid"])
        line["parentUuid"] = "v" + str(line["parentUuid"]) if line["parentUuid"] else after.last_uuid
    return lines


def test_clear_leaves_what_an_earlier_session_of_the_task_asked(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    first = _S()
    first.user("add the export button to the report")
    first.said("The export button is in.")
    second = _S()
    second.user(CLEAR)  # the new session opens on it: nothing of this conversation to close yet
    second.user("also fix the footer links")
    second.said("Fixed.")
    second.user(CLEAR)
    second.user("now the header colours")
    later = tmp_path / "second.jsonl"
    later.write_text("".join(json.dumps(line) + "\n" for line in _continued(second, first)))
    _, state = _brief(ledger, location, first.write(tmp_path / "first.jsonl"), later)
    assert [r.text for r in state.requirements] == ["add the export button to the report", "now the header colours"]
    assert [r.text for r in state.withdrawn] == ["also fix the footer links"]


def test_a_commits_subject_shows_in_last_results(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    command = ("git add frontend/assets/agents/cursor-logo.svg frontend/src/components/AgentLogos.tsx && git commit -m "
               "\"$(cat <<'EOF'\nFix Cursor logo: replace corrupted SVG asset with official logo\n\nThe file held a "
               "404 page.\nEOF\n)\"")
    assert commit_subject(command) == "Fix Cursor logo: replace corrupted SVG asset with official logo"
    t = _S()
    t.user("commit it")
    t.bash(command, 0, "[main 19780ba] Fix Cursor logo")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "commit.jsonl"))
    assert 'commit "Fix Cursor logo: replace corrupted SVG asset with official logo"' in _section(
        brief, "## Last results")


def test_a_background_tasks_notice_queued_in_the_users_turn_is_no_request(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("run the build in the background and commit")
    t.lines.append({"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-01-02T10:00:30.000Z",
                    "sessionId": t.lines[0]["sessionId"],
                    "content": json.dumps({"task_id": "bb02ed9", "description": "git commit -m wip",
                                           "task_type": "local_bash"})})
    t.said("Built and committed.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "notice.jsonl"))
    assert [r.text for r in state.requirements] == ["run the build in the background and commit"]
    assert "bb02ed9" not in brief
