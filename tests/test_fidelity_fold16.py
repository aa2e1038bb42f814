"""Fold version 16 (issue 20, from reading held-out-13's briefs): where it stopped names the commit before the last
one too when no push took either; a refused Write that would bring back a file the task deleted is a refused new
file; the user saying they just want one thing replaces the earlier request about it; a plan the user turned down is
shown by its words, and a call's input in any script reads as written; capture: a task notification's "Full
transcript" line and an agent team's teammate messages are not the user, and a task Claude Code no longer has leaves
the plan. Small transcripts of our own through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.classify import request_text
from projections.remote import commit_subject
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold6 import REJECTED
from tests.test_fidelity_fold10 import _T
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")


def test_where_it_stopped_names_the_commits_since_the_last_push(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert commit_subject("[main 9f2591a] refactor: convert to OOP\n 6 files changed") == "refactor: convert to OOP"
    t = _T()
    t.user("refactor the queue into a class, then commit")
    pushed = "[main 1111111] docs\nTo g:o/r.git\n   0000000..1111111  main -> main"
    t.bash("git commit -am 'docs' && git push", 0, pushed)
    t.edit("/r/src/lib/Queue.ts", "", "export class Queue {}")
    t.bash("git commit -am 'refactor: convert to OOP'", 0, "[main 9f2591a] refactor: convert to OOP\n 6 files changed")
    t.edit("/r/tsconfig.json", "*.ts", "src/**/*.ts")
    t.bash("git commit -am 'fix: exclude config files'", 0, "[main 303a53d] fix: exclude config files\n 1 file changed")
    t.said("Two commits ahead of origin.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "commits.jsonl"))
    assert [(c.commit, c.subject) for c in state.unpushed] == [
        ("9f2591a", "refactor: convert to OOP"), ("303a53d", "fix: exclude config files")]
    assert state.unpushed_count == 2
    stopped = _section(brief, "## Where it stopped")
    assert (f"- last commit 303a53d [{state.last_commit_at}], after the last push; before it, also not pushed: "
            f"9f2591a [{state.unpushed[0].position}]; pushed 1111111 to main [") in stopped
    assert "docs" not in stopped  # pushed: not among them


def test_a_push_takes_the_commits_before_it_and_only_the_latest_are_named(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("make the renames, one commit each")
    for i in range(5):
        t.bash(f"git commit -am 'rename {i}'", 0, f"[main {i}aaaaaa] rename {i}\n 1 file changed")
    t.said("Five commits.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "many.jsonl"))
    assert state.unpushed_count == 5 and [c.subject for c in state.unpushed] == ["rename 2", "rename 3", "rename 4"]
    assert "also not pushed: 3aaaaaa [" in brief and "(and 3 earlier)" in brief and "2aaaaaa" not in brief
    t.bash("git push", 0, "To g:o/r.git\n   0000000..4aaaaaa  main -> main")
    _, state = _brief(ledger, location, t.write(tmp_path / "pushed.jsonl"))
    assert state.unpushed == () and state.unpushed_count == 0


def test_a_refused_write_bringing_back_a_deleted_file_withdraws_the_request_for_it(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("we can drop vamp.md and the related pre-push hook")
    t.bash("rm /r/commands/vamp.md /r/.git/hooks/pre-push.pre-entire")
    t.said("Removed both.")
    t.user("woah, I didn't want to delete .git/hooks/pre-push.pre-entire")
    t.tool("Write", {"file_path": "/r/.git/hooks/pre-push.pre-entire", "content": "#!/bin/bash\n"}, REJECTED,
           error=True)
    t.user("[Request interrupted by user for tool use]")
    t.user("ah but it's about the old vamp note, so we don't need it")
    brief, state = _brief(ledger, location, t.write(tmp_path / "restore.jsonl"))
    assert "I didn't want to delete" not in _section(brief, "## Requirements")
    (gone,) = [r for r in state.withdrawn if "pre-push.pre-entire" in r.text]
    assert gone.withdrawn_because is not None and gone.withdrawn_because.startswith(
        "the user refused its Write of pre-push.pre-entire")


def test_the_user_saying_they_just_want_one_thing_replaces_the_earlier_request_about_it(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("expand philosophy.md with the ensemble idea")
    t.edit("/r/notes/philosophy.md", "## Design", "## The Ensemble\n\n## Design")
    t.user("can we put 1 or 2 lines of summarizing the philosophy's metaphor into the readme?")
    t.edit("/r/README.md", "## Getting Started", "Two lines.\n\n## Getting Started")
    t.user("can we tighten the tagline?")
    t.edit("/r/README.md", "A plugin", "Skills")
    t.user("the philosophy section of the readme is too long... really i just want a oneliner")
    brief, state = _brief(ledger, location, t.write(tmp_path / "oneliner.jsonl"))
    current = _section(brief, "## Requirements")
    assert "1 or 2 lines" not in current and "tighten the tagline" in current and "oneliner" in current
    (gone,) = state.withdrawn
    assert gone.withdrawn_because is not None and gone.withdrawn_because.startswith("replaced: the user said at [")
    # Just wanting what was asked before the agent changed anything for it, or something of another subject:
    # nothing is replaced.
    t = _T()
    t.user("set up the project")
    t.user("add a release workflow for the docs site")  # nothing changed for it yet
    t.user("i just want a release workflow for the docs site, nothing fancy")
    t.edit("/r/.github/workflows/docs.yml", "", "on: push")
    t.user("I just want a short answer: which node version?")  # shares no two naming words with a request
    for line in t.lines:
        line["sessionId"] = "another-session"  # its own task
    _, state = _brief(ledger, location, t.write(tmp_path / "kept.jsonl"))
    assert not state.withdrawn


def test_a_plan_the_user_turned_down_is_shown_by_its_words_in_its_own_script(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    plan = "# YAML 수정 계획\n\n원인은 `spec-design/writing-guide.md`의 언어 정책이다."
    t = _T()
    t.user("yaml frontmatter 부분을 영어로 작성해줘")
    t.said("원인을 파악했습니다. 이제 계획을 작성하겠습니다.")
    t.tool("ExitPlanMode", {"plan": plan}, REJECTED, error=True)
    t.user("[Request interrupted by user for tool use]")
    brief, _ = _brief(ledger, location, t.write(tmp_path / "plan.jsonl"))
    stopped = _section(brief, "## Where it stopped")
    assert "ExitPlanMode, its plan: # YAML 수정 계획 원인은 `spec-design/writing-guide.md`의 언어 정책이다." in stopped
    assert "\\u" not in stopped


def test_a_notifications_transcript_line_and_teammate_messages_are_not_the_user() -> None:
    notice = ("<task-notification>\n<task-id>a37ae0e</task-id>\n<status>completed</status>\n</task-notification>\n"
              "Full transcript available at: /private/tmp/claude-501/tasks/a37ae0e.output")
    assert request_text(notice) is None
    teammate = ('<teammate-message teammate_id="renamer" color="yellow" summary="Task #3 complete">\nTask #3 is '
                'complete.\n</teammate-message>\n\n<teammate-message teammate_id="renamer">\n{"type":"idle"}\n'
                '</teammate-message>')
    assert request_text(teammate) is None
    assert request_text(f"{teammate}\nnow commit it") == "now commit it"


def test_a_task_claude_code_no_longer_has_leaves_the_plan(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _T()
    t.user("use a team of agents to execute all 3")
    for i, subject in enumerate(("Absorb Telos", "Absorb Flow", "Rename Lineage to Lore"), 1):
        t.tool("TaskCreate", {"subject": subject, "description": subject}, f"Task #{i} created successfully: {subject}")
    t.tool("TaskUpdate", {"taskId": "1", "status": "completed"}, "Updated task #1 status")
    t.tool("TaskUpdate", {"taskId": "2", "status": "completed"}, "Updated task #2 status")
    t.user('<teammate-message teammate_id="renamer" summary="Task #3 complete">\nTask #3 is complete.\n'
           '</teammate-message>')
    # Claude Code answers so without marking the result an error.
    t.tool("TaskUpdate", {"taskId": "3", "status": "completed"}, "Task not found")
    t.said("All steps complete.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "team.jsonl"))
    assert state.plan is not None and [s.text for s in state.plan.steps] == ["Absorb Telos", "Absorb Flow"]
    assert "Rename Lineage to Lore" not in _section(brief, "## Next step")
    assert [r.text for r in state.requirements] == ["use a team of agents to execute all 3"]
