"""What is current at the end (issue 20, the rest of items 1, 2, 4, 5 and 6): a call that passed with its address
corrected, an approach the user prescribed that failed, an open last call, a claim the log contradicts, a change
the user said broke something, sub-agents' edits, a submodule removed and added again, a rewound conversation,
and each brief line's position. Small transcripts of our own through the real importer into a real ledger, and
the real sessions in ../shared (skipped without them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.agents.claude_code.branches import REWOUND
from ledger.capture.importer import import_files
from projections.brief import render
from tests.test_fidelity_rules import SESSION, _real, _section, _Transcript

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")


class _Session(_Transcript):
    """A transcript with shell calls, calls left open, and records hung from any earlier one (a rewind)."""

    def bash(self, command: str, exit_code: int = 0, output: str = "") -> None:
        call = f"toolu_{len(self.lines)}"
        self._add("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}]})
        if exit_code:
            self._add("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "is_error": True,
                 "content": f"Exit code {exit_code}\n{output}"}]}, toolUseResult=f"Error: Exit code {exit_code}")
        else:
            self._add("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": output}]},
                toolUseResult={"stdout": output, "stderr": "", "interrupted": False})

    def call(self, command: str) -> None:
        """A Bash call that never got its result: the session ended while it ran."""
        self._add("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{len(self.lines)}", "name": "Bash", "input": {"command": command}}]})

    def from_(self, uuid: str) -> None:
        """Hang the next record from ``uuid`` (the user went back there)."""
        self._parent = uuid

    def _add(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        super()._add(kind, message, **extra)
        parent = getattr(self, "_parent", None)
        if parent is not None:
            self.lines[-1]["parentUuid"] = parent
            self._parent = None

    @property
    def last_uuid(self) -> str:
        return str(self.lines[-1]["uuid"])


def _brief(ledger: Ledger, location: Location, *paths: Path) -> tuple[str, Any]:
    report = import_files(ledger, location, "claude-code", list(paths))
    (number,) = report.tasks
    state = ledger.state(ledger.task_id(number))
    return render(state), state


# -- item 1: the call succeeded with other arguments ----------------------------------------------------


def test_a_call_that_passes_with_its_address_corrected_is_no_longer_failing(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Fetch the user list from the staging API and save it")
    t.bash("curl -sf https://api.example.com/v1/user -o users.json", 22, "curl: (22) The requested URL returned 404")
    t.bash("curl -sf https://api.example.com/v2/users -o users.json")
    t.bash("pip install httpx==9.9", 1, "ERROR: No matching distribution found for httpx==9.9")
    t.bash("pip install httpx==0.27")
    t.bash('codemie-codex --task "Calculate 5 factorial, step by step"', 1, "Codex requires compatible models")
    t.bash('codemie-codex --profile ollama --task "Calculate 5 factorial"')  # its options and free text changed
    t.bash("python scripts/load.py", 1, "KeyError: 'id'")
    t.bash("python scripts/show.py")  # another script passing says nothing of load.py
    t.bash("npm run build", 1, "Type error")
    t.bash("npm run lint")  # another script of the same runner
    t.bash("pytest -k test_parse_empty", 1, "1 failed")
    t.bash("pytest -k test_parse_full")  # a test runner's selection is its target
    brief, state = _brief(ledger, location, t.write(tmp_path / "address.jsonl"))
    failing = _section(brief, "## Failing now")
    assert "python scripts/load.py" in failing and "npm run build" in failing and "test_parse_empty" in failing
    assert "curl" not in failing and "pip install" not in failing and "codemie-codex" not in failing
    fixed = _section(brief, "## Failed earlier, passing since")
    assert "curl -sf https://api.example.com/v1/user -o users.json: failed at" in fixed
    assert "pip install httpx==9.9: failed at" in fixed
    assert "codemie-codex --task" in fixed
    open_ = [f.what for f in state.failures if f.resolved_at is None]
    assert "python scripts/load.py" in open_ and "npm run build" in open_ and len(open_) == 3, open_


# -- item 2: an approach the user prescribed that failed ------------------------------------------------


def test_an_approach_the_user_prescribed_that_failed_is_no_longer_a_requirement(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Make /tokenizer redirect to the new site")
    t.edit("/work/site/next.config.js", "redirects: []", "redirects: [{source: '/tokenizer'}]")
    t.user("Also add a PDF export of the page")
    t.edit("/work/site/export.js", "", "export pdf")
    t.user("still doesn't work, the export button does nothing")  # what to do: it stays wanted
    t.user("maybe we should use a rewrite in vercel.json instead?")
    t.edit("/work/site/vercel.json", "{}", '{"rewrites": []}')
    t.said("Moved it to a rewrite in vercel.json.")
    t.user("Still doesn't work, the page is blank")
    t.edit("/work/site/next.config.js", "redirects", "rewrites")
    brief, state = _brief(ledger, location, t.write(tmp_path / "prescribed.jsonl"))
    current = _section(brief, "## Requirements")
    assert "Make /tokenizer redirect" in current and "PDF export" in current
    assert "vercel.json" not in current
    withdrawn = _section(brief, "## Withdrawn by the user, or tried and failed")
    assert "maybe we should use a rewrite in vercel.json instead?" in withdrawn
    assert "tried, and the user said it did not work: Still doesn't work, the page is blank" in withdrawn
    assert "FAILED changed site/vercel.json" in _section(brief, "## Tried and did not work")
    assert [r.text for r in state.withdrawn] == ["maybe we should use a rewrite in vercel.json instead?"]


# -- item 4: the ending ---------------------------------------------------------------------------------


def test_a_last_call_that_never_got_its_result_is_where_it_stopped(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Build the site and deploy it to production")
    t.bash("npm run build", 0, "Compiled successfully")
    t.said("The build passed; deploying now.")
    t.call("vercel deploy --prod")
    brief, state = _brief(ledger, location, t.write(tmp_path / "open.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert re.search(r"- \[\d+\] it stopped mid-action: its last call, `\$ vercel deploy --prod`, got no result",
                     stopped), stopped
    assert state.open_call is not None and state.open_call.tool == "Bash"


def test_a_call_the_user_interrupted_is_not_where_it_stopped_mid_action(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Build the site and deploy it to production")
    t.call("vercel deploy --prod")
    t.user("[Request interrupted by user for tool use]")  # the user stopped it: the call did not end the session
    brief, state = _brief(ledger, location, t.write(tmp_path / "interrupted.jsonl"))
    assert state.open_call is None and "mid-action" not in brief


def test_a_last_claim_the_log_contradicts_is_shown_as_the_agents_claim(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Fix the failing parser test")
    t.edit("/work/site/parser.js", "return null", "return []")
    t.bash("npm test", 1, "FAIL src/parser.test.js\n  parses empty input\nTests: 1 failed, 3 passed, 4 total")
    t.said("I fixed the parser. All tests pass now.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "claim.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert re.search(r'- the agent said \[\d+\] \(a claim the log contradicts: "All tests pass", but .*npm test.* '
                     r"failed at \[\d+\] and has not passed since\):", stopped), stopped
    assert "the agent's last words" not in stopped
    assert "I fixed the parser. All tests pass now." in stopped  # quoted, as its words


def test_a_last_claim_the_log_bears_out_is_the_agents_last_words(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Fix the failing parser test")
    t.bash("npm test", 1, "FAIL src/parser.test.js\nTests: 1 failed, 3 passed, 4 total")
    t.edit("/work/site/parser.js", "return null", "return []")
    t.bash("npm test", 0, "PASS src/parser.test.js\nTests: 4 passed, 4 total")
    t.said("I fixed the parser. All tests pass now.")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "claim-true.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert "the agent's last words" in stopped and "contradicts" not in stopped


# -- item 5: a correction after a change ----------------------------------------------------------------


def test_a_change_the_user_said_broke_something_is_tried_and_failed(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Speed up the login page")
    t.edit("/work/site/auth/session.js", "cache: false", "cache: true")
    t.said("Sessions are cached now.")
    t.user("that broke logout, users stay logged in")
    brief, state = _brief(ledger, location, t.write(tmp_path / "broke.jsonl"))
    tried = _section(brief, "## Tried and did not work")
    assert "FAILED changed auth/session.js: Sessions are cached now.: that broke logout, users stay logged in" in tried
    assert state.attempts_failed == 1


# -- item 6: sub-agents, re-created files, rewinds ------------------------------------------------------


def test_a_sub_agents_edits_are_files_changed(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    main = _Session()
    main.user("Research plan mode and write it up")
    main.said("I asked a teammate to write it up.")
    sub = _Session()
    sub.user("Write work/plan-mode.md")
    sub.edit("/work/site/work/plan-mode.md", "", "# Plan mode")
    for line in sub.lines:
        line.update(isSidechain=True, agentId="a4ca7529")
    folder = tmp_path / SESSION / "subagents"
    folder.mkdir(parents=True)
    _, state = _brief(ledger, location, main.write(tmp_path / f"{SESSION}.jsonl"),
                      sub.write(folder / "agent-a4ca7529.jsonl"))
    assert "/work/site/work/plan-mode.md" in state.files
    assert "plan-mode.md (modified" in render(state)


def test_a_submodule_removed_then_added_again_is_not_deleted(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Move the tokenizer into its own repository, as a submodule")
    t.bash("git submodule add git@github.com:d/online-llm-tokenizer.git public/tokenizer")
    t.bash("git submodule deinit -f public/tokenizer && git rm -f public/tokenizer")
    t.bash("git submodule add https://github.com/d/online-llm-tokenizer.git public/tokenizer")
    brief, state = _brief(ledger, location, t.write(tmp_path / "submodule.jsonl"))
    assert state.files["/work/site/public/tokenizer"].operation == "created"
    assert "public/tokenizer (created, 3 changes" in _section(brief, "## Files changed")
    assert "DELETED" not in brief


def test_a_rewound_branchs_prompts_are_not_current(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _Session()
    t.user("Read the idea file and summarise it")
    t.said("It proposes splitting docs into dev-docs/ and work/.")
    fork = t.last_uuid
    t.user("I like it. List five strengths of the proposal")
    t.said("1. Clear intent ...")
    t.user("Now add them to the README")
    t.said("Added.")
    t.from_(fork)  # the user went back to the summary and asked the opposite
    t.user("List five weak points of the proposal")
    t.said("1. Blurry boundary ...")
    brief, state = _brief(ledger, location, t.write(tmp_path / "rewind.jsonl"))
    assert [r.text for r in state.requirements] == ["Read the idea file and summarise it",
                                                    "List five weak points of the proposal"]
    assert [n.text for n in state.notes] == [REWOUND + "I like it. List five strengths of the proposal",
                                             REWOUND + "Now add them to the README"]
    assert "strengths" not in _section(brief, "## Requirements") and "README" not in _section(brief, "## Next step")


def test_a_chain_that_breaks_is_no_rewind(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _Session()
    t.user("Read the idea file and summarise it")
    t.said("It proposes splitting docs into dev-docs/ and work/.")
    t.from_("not-in-this-file")  # a parent in another file (a continued session): proves nothing
    t.user("List five strengths of the proposal")
    t.said("1. Clear intent ...")
    _, state = _brief(ledger, location, t.write(tmp_path / "broken.jsonl"))
    assert len(state.requirements) == 2 and state.notes == ()


def test_a_local_command_hung_from_the_first_record_is_no_rewind(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t._add("user", {"role": "user", "content": "Caveat: The messages below were generated by the user while running "
                    "local commands."}, isMeta=True)
    t.user("Take the least nested path first, the latest among equals")
    t.edit("/work/site/renderer.py", "paths[0]", "min(paths, key=depth)")
    t.said("The implementation now combines both criteria.")
    t.from_("u1")  # Claude Code hangs a `!` command's lines from the first record, before the prompt
    t.user("<bash-input>uv run pytest test/test_display.py</bash-input>")
    t.user("<bash-stdout>5 passed</bash-stdout><bash-stderr></bash-stderr>")
    _, state = _brief(ledger, location, t.write(tmp_path / "bang.jsonl"))
    assert [r.text for r in state.requirements] == ["Take the least nested path first, the latest among equals"]
    assert not any(n.text.startswith(REWOUND) for n in state.notes)


def test_real_rewound_session_keeps_only_the_branch_the_user_went_on_with(
    ledger: Ledger, location: Location
) -> None:
    brief, state = _brief(ledger, location, _real("ideas-rewind-03eb5929.jsonl"))
    current = _section(brief, "## Requirements")
    assert "what are the strengths of this proposal" not in current  # L18, the branch left behind
    assert "also list 5 strengths of this proposal" in current  # L45, the branch kept
    rewound = [n.text for n in state.notes if n.text.startswith(REWOUND)]
    assert len(rewound) == 3 and "I very much like this idea" in rewound[0]


def test_real_submodule_re_added_in_the_redirect_session_is_not_deleted(
    ledger: Ledger, location: Location
) -> None:
    brief, state = _brief(ledger, location, _real("website-redirect-9e953218.jsonl"))
    (tokenizer,) = [f for f in state.files.values() if f.path.endswith("me-next/public/tokenizer")]
    assert tokenizer.operation == "created"
    assert "public/tokenizer.html (DELETED" in brief  # really gone: moved into the submodule


# -- every line says where it came from -----------------------------------------------------------------


def test_a_reworded_requirement_and_a_set_next_step_say_their_positions(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Session()
    t.user("Use a dark theme for the export button")
    t.user("forget that, use the brand colour instead")
    brief, state = _brief(ledger, location, t.write(tmp_path / "reworded.jsonl"))
    (req,) = state.requirements
    assert f"- [{req.position}] forget that, use the brand colour instead (reworded at [{req.changed_at}])" in brief
