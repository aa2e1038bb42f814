"""What is current at the end (issue 20, items 2, 3 and 5): who really speaks in a user-role record, requirements
the user withdrew or replaced, questions, and approaches the user said did not work. Small transcripts of our
own through the real importer and a real ledger, and the real sessions in ../shared (skipped without them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.agents.claude_code.mapper import map_transcript
from ledger.capture.classify import classify, request_text
from ledger.capture.importer import import_files
from ledger.domain import events as ev
from projections.brief import render
from projections.intent import pasted_output, question, says_failed, withdrawal
from tests.conftest import SHARED, run_trail

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")

REAL = SHARED / "fixtures" / "claude-code"
SESSION = "22222222-aaaa-4bbb-8ccc-000000000002"

# -- who speaks: item 3 ---------------------------------------------------------------------------------

TRACEBACK = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\nKeyError: \'user\''
LOG = ("2026-01-02 10:00:01 INFO starting\n2026-01-02 10:00:02 ERROR db: connection refused\n"
       "2026-01-02 10:00:02 ERROR retry 1/3 failed")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (TRACEBACK, "output"),
        (LOG, "output"),
        ("$ npm run build\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1", "output"),
        ('{\n  "status": 500,\n  "error": "boom"\n}', "output"),
        # The user's own words around a paste: the user speaks, and the other rules read them.
        (f"still failing:\n{TRACEBACK}", "correction"),
        (f"{TRACEBACK}\nfix this please", "requirement"),
        # Pushback is a requirement, never a mere question.
        ("But why do you think the cache is stale?", "requirement"),
        ("Do we even need the second parser then?", "requirement"),
    ],
)
def test_output_pasted_alone_is_not_the_user_speaking(text: str, kind: str) -> None:
    assert classify(text, first=False) == kind


def test_a_log_pasted_as_the_first_prompt_is_still_not_a_requirement() -> None:
    assert classify(LOG, first=True) == "output"
    assert not pasted_output("Fix the login bug\nit fails on 3G")


@pytest.mark.parametrize(
    "text",
    [
        "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>",
        "  <system-reminder>x</system-reminder><task-notification><status>failed</status></task-notification>\n",
        "Stop hook feedback:\n[stop.sh]: Cannot exit with unstaged changes.",
        "Operation stopped by hook: the command touches .env",
    ],
)
def test_notifications_and_hook_feedback_are_no_request(text: str) -> None:
    assert request_text(text) is None


def test_a_notification_before_the_users_own_words_leaves_those_words() -> None:
    text = "<task-notification><status>completed</status></task-notification>\nnow deploy it"
    assert request_text(text) == "now deploy it"


def test_a_request_sent_again_is_a_correction() -> None:
    assert classify("add the --json flag", first=False, resent=True) == "correction"
    assert classify("continue", first=False, resent=True) == "reply"  # a nudge stays a nudge


# -- withdrawn, replaced, questions: item 2 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("never mind, we'll look at it later", "withdrawn"),
        ("Nevermind.", "withdrawn"),
        ("ok forget that", "withdrawn"),
        ("forget about it for now", "withdrawn"),
        ("let's leave that for later, it's not important", "withdrawn"),
        ("forget that, use SQLite instead", "replaced"),
        ("never mind, just log the error", "replaced"),
        ("Fix the login bug", None),
        ("don't forget the README", None),
    ],
)
def test_withdrawal(text: str, kind: str | None) -> None:
    assert withdrawal(text) == kind


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("what about edge cases and error handling?", True),
        ("show me json strcuture for session tracking", True),
        ("How does the cache decide what is stale?", True),
        ("what about adding a retry?", False),  # names work
        ("show me the diff and then commit it", False),
        ("But why do you think X?", False),
        ("Can you list, in 5 bullet points, the strengths?", False),
        ("Is everything OK with this project? Do all the tests pass?", False),
    ],
)
def test_question(text: str, asks: bool) -> None:
    assert question(text) is asks


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("Still doesn't work, maybe a build step is missing?", True),
        ("The redirection doesn't work :(", True),
        ("it still fails", True),
        ("same error", True),
        ("Please add a test that the parser doesn't work on empty input", False),
        ("works now, thanks", False),
    ],
)
def test_says_failed(text: str, failed: bool) -> None:
    assert says_failed(text) is failed


# -- through the importer, the fold and the brief -------------------------------------------------------


class _Transcript:
    """A Claude Code 2.x transcript written line by line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def _add(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        n = len(self.lines) + 1
        self.lines.append({"parentUuid": f"u{n - 1}" if n > 1 else None, "isSidechain": False, "userType": "external",
                           "cwd": "/work/site", "sessionId": SESSION, "version": "2.1.14", "type": kind,
                           "uuid": f"u{n}", "timestamp": f"2026-01-02T10:{n // 60:02d}:{n % 60:02d}.000Z",
                           "message": message, **extra})

    def user(self, text: str) -> None:
        self._add("user", {"role": "user", "content": text})

    def said(self, text: str) -> None:
        self._add("assistant", {"role": "assistant", "content": [{"type": "text", "text": text}]})

    def edit(self, path: str, old: str, new: str) -> None:
        call = f"toolu_{len(self.lines)}"
        self._add("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": call, "name": "Edit",
             "input": {"file_path": path, "old_string": old, "new_string": new}}]})
        self._add("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": f"The file {path} has been updated."}]},
            toolUseResult={"filePath": path, "oldString": old, "newString": new, "originalFile": old + "\n",
                           "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                                "lines": [f"-{old}", f"+{new}"]}]})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def _brief(ledger: Ledger, location: Location, path: Path) -> tuple[str, Any]:
    report = import_files(ledger, location, "claude-code", [path])
    (number,) = report.tasks
    state = ledger.state(ledger.task_id(number))
    return render(state), state


def _section(text: str, heading: str) -> str:
    """The lines of the brief's section that opens with ``heading``, up to the next heading."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.startswith(heading)
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def test_withdrawn_requirements_and_questions_are_not_current(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Transcript()
    t.user("Add a CSV export to the report page")
    t.said("Done: the report page has an Export CSV button.")
    t.user("Also add a PDF export")
    t.said("Which PDF library should I use?")
    t.user("never mind, we'll look at it later")
    t.said("OK, leaving PDF export for later.")
    t.user("what about edge cases and error handling?")
    t.said("Empty reports export a header row only.")
    t.user("Add a row count under the table")
    t.said("Added.")
    t.user("Use a dark theme for the export button")
    t.user("forget that, use the brand colour instead")
    brief, state = _brief(ledger, location, t.write(tmp_path / "withdrawn.jsonl"))
    current = _section(brief, "## Requirements")
    assert "CSV export" in current and "row count" in current
    assert "PDF export" not in current and "never mind" not in current  # withdrawn, and the withdrawal itself
    assert "edge cases" not in current  # a question
    assert "brand colour" in current and "dark theme" not in current  # replaced: the new wording is current
    withdrawn = _section(brief, "## Withdrawn by the user")
    assert "Also add a PDF export" in withdrawn and "never mind, we'll look at it later" in withdrawn
    assert [r.text for r in state.withdrawn] == ["Also add a PDF export"]
    assert any(n.text == "user asked: what about edge cases and error handling?" for n in state.notes)
    assert "earlier in the log" not in brief  # the withdrawn one is listed, not said to be elsewhere


def test_an_approach_the_user_said_did_not_work_is_tried_and_failed(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Transcript()
    t.user("Make /tokenizer redirect to the new site")
    t.edit("/work/site/next.config.js", "redirects: []", "redirects: [{source: '/tokenizer'}]")
    t.said("I added a redirect in next.config.js. It should work after the next deploy.")
    t.user("Still doesn't work, maybe the rewrite has to go in vercel.json?")
    t.edit("/work/site/vercel.json", "{}", '{"rewrites": []}')
    t.said("Moved it to a rewrite in vercel.json.")
    t.user("Thanks, that works")
    brief, state = _brief(ledger, location, t.write(tmp_path / "failed.jsonl"))
    tried = _section(brief, "## Tried and did not work")
    assert "FAILED changed site/next.config.js: I added a redirect in next.config.js." in tried
    assert "Still doesn't work, maybe the rewrite has to go in vercel.json?" in tried  # the user's words, as why
    assert "vercel.json" not in tried.split(":", 1)[0]  # the approach that worked is not a dead end
    (failed,) = [a for a in state.attempts if a.outcome == "failed"]
    assert failed.ended_position is not None and state.attempts_failed == 1


def test_a_correction_that_is_not_a_failure_report_closes_no_attempt(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Transcript()
    t.user("Make /tokenizer redirect to the new site")
    t.edit("/work/site/next.config.js", "redirects: []", "redirects: [{source: '/tokenizer'}]")
    t.user("no, use a 308 not a 307")
    _, state = _brief(ledger, location, t.write(tmp_path / "redirect.jsonl"))
    assert state.attempts == () and state.corrections[-1].text == "no, use a 308 not a 307"


def test_a_pasted_log_is_a_note_not_a_requirement(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _Transcript()
    t.user("Fix the db connection")
    t.user(LOG)
    brief, state = _brief(ledger, location, t.write(tmp_path / "log.jsonl"))
    assert [r.text for r in state.requirements] == ["Fix the db connection"] and state.corrections == ()
    assert "connection refused" not in _section(brief, "## Requirements")
    assert any(n.text.startswith("user pasted output: 2026-01-02 10:00:01 INFO") for n in state.notes)


# -- the real sessions ----------------------------------------------------------------------------------


def _real(name: str) -> Path:
    path = REAL / name
    if not path.is_file():
        pytest.skip(f"needs ../shared/fixtures/claude-code/{name}")
    return path


def test_real_dead_ends_of_the_redirect_session_are_tried_with_the_users_words(
    ledger: Ledger, location: Location
) -> None:
    brief, state = _brief(ledger, location, _real("website-redirect-9e953218.jsonl"))
    reasons = [a.reason or "" for a in state.attempts if a.outcome == "failed"]
    assert any(r.startswith("The redirection doesn't work :(") for r in reasons), reasons
    assert any(r.startswith("Still doesn't work, maybe there's a step needed") for r in reasons), reasons
    assert "Still doesn't work" in _section(brief, "## Tried and did not work")
    # The user's own words with a pasted log stay the user's (L93, L102, L163), never a note of pasted output.
    texts = [c.text for c in state.corrections] + [r.text for r in state.requirements]
    assert any(t.startswith("FGS:") and "disallowed MIME type" in t for t in texts)
    assert any(t.startswith("This is annoying, maybe we should use the https repo address?") for t in texts)
    assert any(t.startswith("Next.js is being really annoying:") for t in texts)
    assert not any(n.text.startswith("user pasted output") for n in state.notes)


def test_real_questions_of_the_design_session_are_not_requirements(ledger: Ledger, location: Location) -> None:
    brief, state = _brief(ledger, location, _real("codemie-sync-design-compacted-624a4a58.jsonl"))
    current = _section(brief, "## Requirements")
    assert "what about edge cases" not in current and "show me json" not in current
    asked = [n.text for n in state.notes if n.text.startswith("user asked: ")]
    assert asked == ["user asked: what about edge cases and error handling?",
                     "user asked: show me json strcuture for session tracking"]
    # A question that pushes back stays what the user asked for.
    assert "there are no tracking of failures for metrics" in current


def test_real_stop_hook_feedback_is_no_prompt_even_without_its_meta_flag() -> None:
    path = _real("drm-coverage-test-fix.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    hooked = [r for r in records if "Stop hook feedback:" in json.dumps(r.get("message"))]
    assert len(hooked) == 2
    for r in hooked:
        r.pop("isMeta")  # as a transcript that does not flag it would carry it
    session = map_transcript(enumerate((json.dumps(r) for r in records), start=1), path.stem)
    intents = [f["text"] for cls, f in session.items
               if cls in (ev.RequirementStated, ev.RequirementChanged, ev.CorrectionMade, ev.NoteAdded)]
    assert intents == ["Add a function called multiply_numbers(a: int, b: int) -> int that multiplies two numbers "
                       "together. Add a test for it."]


def test_a_request_sent_again_after_an_interrupt_is_a_correction_but_a_rewind_repeat_is_not(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _Transcript()
    t.user("Add a CSV export to the report page")
    t.user("List the report's columns")
    t.user("Add a CSV export to the report page")  # a rewound branch may repeat an older request: not re-sent
    t.user("Add a PDF export too")
    t.user("Add a PDF export too")  # sent again at once: the agent missed it
    _, state = _brief(ledger, location, t.write(tmp_path / "resent.jsonl"))
    assert [c.text for c in state.corrections] == ["Add a PDF export too"]
    assert [r.text for r in state.requirements].count("Add a CSV export to the report page") == 2


def test_live_prompts_follow_the_same_rules(home: Path, ledger: Ledger) -> None:
    from tests.test_hook import SESSION as LIVE
    from tests.test_hook import hook

    run_trail("start", "Live rules", home=home, check=True)
    for prompt in ("Add CSV export", "Add PDF export", "never mind, we'll look at it later",
                   "<task-notification><status>completed</status></task-notification>", LOG,
                   "show me the JSON structure", "Add a row count", "Add a row count"):
        assert hook({"session_id": LIVE, "hook_event_name": "UserPromptSubmit", "prompt": prompt}, home).returncode == 0
    run_trail("list", home=home, check=True)  # drains the inbox
    state = ledger.state(ledger.task_id(1))
    assert [r.text for r in state.requirements] == ["Add CSV export", "Add a row count"]
    assert [r.text for r in state.withdrawn] == ["Add PDF export"]
    assert [c.text for c in state.corrections] == ["Add a row count"]
    notes = [n.text for n in state.notes]
    assert "user asked: show me the JSON structure" in notes and any(n.startswith("user pasted output") for n in notes)
    assert not any("task-notification" in n for n in notes)
