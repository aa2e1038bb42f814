"""Fold version 6 (issue 20, from held-out-new and the reading for held-out-3): who speaks after a background task's
notification, the prompt a bare slash command expands to, where it stopped when the user rejected the last calls or
spoke after the agent's last words, a question answered or a command run once the user moves on, the user's answers
to the agent's questions, a claim to have created a file that was never written, a long reply's opening and its cut,
and a fixed failure that no longer leads "Last results". Small transcripts of our own through the real importer into
a real ledger, and the real demo through the real CLI."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.items import REPLY_HEAD, reply_bound
from tests.conftest import run_trail
from tests.test_fidelity_fold import _brief, _Session
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")


class _S(_Session):
    def meta(self, text: str) -> None:
        """A user-role record Claude Code writes itself (``isMeta``): a slash command's expanded prompt."""
        self._add("user", {"role": "user", "content": [{"type": "text", "text": text}]}, isMeta=True)

    def tool(self, name: str, data: dict[str, Any], result: str, *, error: bool = False) -> None:
        call = f"toolu_{len(self.lines)}"
        self._add("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": call, "name": name, "input": data}]})
        self._add("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": result, **({"is_error": True} if error else {})}]})


REJECTED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
            "edit, the new_string was NOT written to the file)")


def test_a_task_notification_and_its_read_the_output_line_are_not_the_user(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Implement the review page")
    t.said("Done; the review page is in.")
    t.user("<task-notification>\n<task-id>bd0afab</task-id>\n<status>completed</status>\n</task-notification>\n"
           "Read the output file to retrieve the result: /tmp/claude-1000/tasks/bd0afab.output")
    brief, state = _brief(ledger, location, t.write(tmp_path / "notified.jsonl"))
    assert [r.text for r in state.requirements] == ["Implement the review page"]
    assert not state.corrections and "bd0afab" not in brief


def test_a_bare_slash_command_is_asked_in_the_words_it_expands_to(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>")
    t.meta("Please analyze this codebase and create a CLAUDE.md file, which will be given to future instances.\n\n"
           "What to add:\n1. Commands")
    t.said("I'll look at the codebase.")
    t.user("<command-name>/model</command-name>\n<command-message>model</command-message>")  # steers, asks nothing
    t.meta("Set model to Default")
    # A custom command's template is its author's boilerplate, not the user's request.
    t.user("<command-name>/bmad:create-tech-spec</command-name>\n<command-message>create-tech-spec</command-message>")
    t.meta("IT IS CRITICAL THAT YOU FOLLOW THESE STEPS - while staying in character")
    t.user("Now fix the broken recorder APIs in js/recorder.js")
    _, state = _brief(ledger, location, t.write(tmp_path / "init.jsonl"))
    assert [r.text for r in state.requirements] == [
        "/init: Please analyze this codebase and create a CLAUDE.md file, which will be given to future instances.",
        "Now fix the broken recorder APIs in js/recorder.js"]
    assert state.title.startswith("fix the broken recorder APIs")  # the user's own words name the task


def test_calls_the_user_rejected_are_where_it_stopped(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _S()
    t.user("mix phx.server doesnt seem to start")
    t.said("Let me try running the server to see the error.")
    t.tool("Bash", {"command": "mix phx.server 2>&1 | head -80"}, REJECTED, error=True)
    t.user("[Request interrupted by user for tool use]")
    brief, state = _brief(ledger, location, t.write(tmp_path / "rejected.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert re.search(r"- the user rejected its last call, so it never ran \(interrupted there\): "
                     r"`\$ mix phx\.server 2>&1 \| head -80` \[\d+\]", stopped), stopped
    assert [c.outcome for c in state.recent_calls] == ["refused"]


def test_calls_after_the_users_last_words_are_where_it_stopped_when_it_said_nothing_since(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Start phoenix in the background")
    t.bash("mix phx.server &", 0, "Running")
    t.said("Phoenix is starting in the background.")
    t.user("scrolling back in xterm.js still does not work, look it up")
    t.tool("WebSearch", {"query": "xterm.js scrollback"}, "results")
    t.tool("WebFetch", {"url": "https://github.com/xtermjs/xterm.js/issues/1343", "prompt": "fixes?"}, "answer")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "after.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert re.search(r"- the agent's last words \[\d+\] \(before the user spoke at \[\d+\]\):", stopped), stopped
    assert re.search(r"its last calls: .*WebFetch https://github\.com/xtermjs/xterm\.js/issues/1343 \[\d+\]",
                     stopped), stopped


def test_the_agents_words_after_the_user_say_where_it_stopped_not_its_calls(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Look up the xterm.js scrollback issue")
    t.tool("WebFetch", {"url": "https://github.com/xtermjs/xterm.js/issues/1343"}, "answer")
    t.said("Issue 1343 says to attach the wheel handler to the viewport.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "spoke.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert "its last calls" not in stopped and "(before the user spoke" not in stopped


def test_an_answered_question_is_not_current_once_the_user_moves_to_another_subject(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Fix the login redirect")
    t.edit("/work/site/login.js", "a", "b")
    t.user("show tools")
    t.said("Read, Edit, Bash.")
    t.user("explore the billing module and give an overview")  # another subject: the answer is behind
    _, state = _brief(ledger, location, t.write(tmp_path / "moved.jsonl"))
    assert [r.text for r in state.requirements] == ["Fix the login redirect",
                                                    "explore the billing module and give an overview"]
    assert state.withdrawn[-1].text == "show tools" and "moved on" in (state.withdrawn[-1].withdrawn_because or "")


def test_a_question_that_builds_on_the_answer_keeps_it(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _S()
    t.user("Fix the login redirect")
    t.edit("/work/site/login.js", "a", "b")
    t.user("explain what the tools of the agent module do")
    t.said("Read, Edit, Bash.")
    t.user("and which of them are the slowest?")  # points back ("them"): the question stays
    _, state = _brief(ledger, location, t.write(tmp_path / "builds.jsonl"))
    assert "explain what the tools of the agent module do" in [r.text for r in state.requirements]


def test_a_command_run_once_is_done_when_the_user_moves_on(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _S()
    t.user("start phoenix in background")
    t.bash("mix phx.server", 0, "Running SpotterWeb.Endpoint")
    t.said("Phoenix server is starting in the background.")
    t.user("scrolling back in xterm.js still does not work? websearch xterm.js tmux interactions")
    brief, state = _brief(ledger, location, t.write(tmp_path / "once.jsonl"))
    assert "start phoenix in background" not in _section(brief, "## Requirements")
    assert state.withdrawn[-1].text == "start phoenix in background"
    assert (state.withdrawn[-1].withdrawn_because or "").startswith("done: a command to run")


def test_a_command_run_once_stays_when_the_user_comes_back_to_it(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("start phoenix in background")
    t.bash("mix phx.server", 0, "Running SpotterWeb.Endpoint")
    t.said("Phoenix server is starting in the background.")
    t.user("phoenix still does not answer on port 4000")  # the same thing: it is not done
    _, state = _brief(ledger, location, t.write(tmp_path / "back.jsonl"))
    assert "start phoenix in background" in [r.text for r in state.requirements]


def test_the_users_answers_to_the_agents_questions_are_in_the_brief(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Draft beads for the quality tools")
    t.tool("AskUserQuestion", {"questions": [{"question": "Which tools?"}]},
           'User has answered your questions: "Which rig?"="No rig", "Which tools?"="Credo + Dialyxir + mix_audit". '
           "You can now continue with the user's answers in mind.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "asked.jsonl"))
    assert "user answered: Which rig? -> No rig; Which tools? -> Credo + Dialyxir + mix_audit" in brief


def test_a_claim_to_have_created_a_file_no_write_made_is_shown_as_a_claim(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Create a CLAUDE.md for this repository")
    t.tool("Write", {"file_path": "/work/site/CLAUDE.md", "content": "# CLAUDE.md"},
           "Claude requested permissions to write to /work/site/CLAUDE.md, but you haven't granted it yet.",
           error=True)
    t.said("I've created a basic CLAUDE.md file for this empty repository.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "claimed.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert re.search(r"- the agent said \[\d+\] \(a claim the log contradicts: \"I've created a basic CLAUDE\.md\", "
                     r"but no Write or Edit of CLAUDE\.md ran in this task \(its Write at \[\d+\] did not go "
                     r"through\)\):", stopped), stopped


def test_a_claim_to_have_created_a_file_that_was_written_is_its_last_words(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Create a CLAUDE.md for this repository")
    t.edit("/work/site/CLAUDE.md", "", "# CLAUDE.md")
    t.said("I've created a basic CLAUDE.md file for this repository.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "made.jsonl"))
    assert "the agent's last words" in _section(brief, "## Where it stopped") and "contradicts" not in brief


def test_a_long_last_reply_keeps_its_opening_and_is_cut_at_line_ends_saying_so(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("tell me about the agent module")
    body = "\n".join(f"- point {i}: the adapter reads the session file and writes its metrics." for i in range(400))
    t.said(f"# Deep Dive: Agent Module\n\n{body}\n\nSummary: the agent module is the heart of the CLI.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "long.jsonl"))
    assert state.last_reply is not None and state.last_reply.text.startswith("# Deep Dive: Agent Module")
    stopped = _section(brief, "## Where it stopped")
    quoted = [line for line in stopped.splitlines() if line.startswith("  ")]
    assert quoted[0] == "  \\# Deep Dive: Agent Module" and quoted[-1].endswith("the heart of the CLI.")
    cut = [line for line in quoted if "characters of it not shown" in line]
    assert len(cut) == 1, quoted
    # Every other quoted line is a whole line of the reply: none stops mid-word.
    whole = {"  " + line for line in body.splitlines()}
    assert all(line in whole for line in quoted[1:-1] if line not in cut), quoted


def test_a_long_reply_is_redacted_before_it_is_cut() -> None:
    """A token at the opening's cut would keep a prefix too short for any rule to find, once cut."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "x" * (REPLY_HEAD - 11) + " " + token + " " + "word " * 3000 + "tail: " + token + " end"
    kept = reply_bound(text)
    assert kept.truncated and kept.size == len(text)
    assert "ghp_" not in kept.tail and "A1b2C3" not in kept.tail, kept.tail[:REPLY_HEAD + 80]
    assert kept.tail.count("[REDACTED:github-token") == 1  # the one at the end; the opening's is cut away


def test_the_demo_brief_does_not_lead_its_last_results_with_the_failure_fixed_since(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_trail("demo", "--keep", home=home, check=True)
    brief = run_trail("resume", home=home, check=True).stdout
    results = _section(brief, "## Last results").splitlines()
    assert results[0] == "- test tests/test_login.py::test_login_3g PASSED [16]", results
    assert "- $ pytest tests/test_login.py -> exit 1 [7], passes since [16]" in results
    # Its last command ran and passed, then a checkpoint and a next step were set: not a session cut off.
    stopped = _section(brief, "## Where it stopped")
    assert "its last calls" not in stopped and "checkpoint 'unit-tests-green'" in stopped, stopped
