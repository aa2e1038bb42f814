"""Sessions land in the right task: per project, never in a finished task, and their briefs fit.

Real hook processes (`trail hook claude-code` fed Claude Code's payload shapes on stdin, run in
the session's folder), a real ledger, real `trail` commands.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev
from tests.conftest import SHARED, run_here, run_trail
from tests.test_hook import _env

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _repo(root: Path, name: str) -> Path:
    path = root / name
    (path / ".git").mkdir(parents=True)
    return path


def send(home: Path, cwd: Path, session: str, event: str, **fields: Any) -> subprocess.CompletedProcess[str]:
    """One hook invocation as Claude Code makes it: in the session's folder, with its common fields."""
    payload = {
        "session_id": session,
        "transcript_path": f"/home/u/.claude/projects/x/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
        input=json.dumps(payload), capture_output=True, text=True, env=_env(home), timeout=120, cwd=cwd,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc


def injected(proc: subprocess.CompletedProcess[str]) -> str:
    if not proc.stdout:
        return ""
    answer = json.loads(proc.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    return str(answer["additionalContext"])


@contextlib.contextmanager
def _opened(location: Location) -> Iterator[Ledger]:
    """The ledger, opened in this process once the hooks are done: not held open across them, so set-up and
    reads between them may run here (``run_here``; the hooks under test are processes of their own)."""
    app = open_ledger(location)
    try:
        yield app
    finally:
        app.close()


def _edit(path: str) -> dict[str, Any]:
    return {
        "tool_name": "Edit", "tool_use_id": f"toolu_{abs(hash(path)) % 10**8}",
        "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"},
        "tool_response": {"filePath": path, "originalFile": "a\n",
                          "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                               "lines": ["-a", "+b"]}]},
    }


def test_two_projects_get_two_tasks_and_neither_sees_the_other(home: Path, tmp_path: Path,
                                                               location: Location) -> None:
    web, rust, empty = _repo(tmp_path, "web"), _repo(tmp_path, "rust"), tmp_path / "scratch"
    (web / "src").mkdir()
    empty.mkdir()
    assert injected(send(home, web / "src", "s-web-1", "SessionStart", source="startup")) == ""
    send(home, web / "src", "s-web-1", "UserPromptSubmit", prompt="Add CSV export to the report page")
    send(home, web / "src", "s-web-1", "PostToolUse", **_edit(str(web / "src" / "report.py")))
    send(home, rust, "s-rust-1", "UserPromptSubmit", prompt="Set up a Rust workspace with two crates")
    send(home, rust, "s-rust-1", "PostToolUse", **_edit(str(rust / "Cargo.toml")))

    tasks = json.loads(run_here("list", "--json", home=home, check=True).stdout)
    assert len(tasks) == 2
    by_title = {t["title"]: t for t in tasks}
    assert set(by_title) == {"Add CSV export to the report page", "Set up a Rust workspace with two crates"}
    with _opened(location) as ledger:
        for entry in ledger.entries():
            state = ledger.state(entry.task_id)
            texts = " ".join(r.text for r in state.requirements)
            assert ("CSV" in texts) != ("Rust" in texts)  # each task holds its own project's prompt only
            assert state.project in (str(web), str(rust))

    # A fresh session in the web project (from its root, or any folder in it) resumes the web task only.
    web_brief = injected(send(home, web, "s-web-2", "SessionStart", source="startup"))
    assert "CSV export" in web_brief and "Rust" not in web_brief and "Cargo.toml" not in web_brief
    assert "task #" in web_brief and "trail decide" in web_brief and len(web_brief) <= 10_000
    rust_brief = injected(send(home, rust, "s-rust-2", "SessionStart", source="clear"))
    assert "Rust workspace" in rust_brief and "CSV" not in rust_brief
    # A project with no task gets nobody's brief, and its first prompt opens its own task.
    assert injected(send(home, empty, "s-scratch", "SessionStart", source="startup")) == ""
    send(home, empty, "s-scratch", "UserPromptSubmit", prompt="Write a haiku about sqlite")
    assert len(json.loads(run_here("list", "--json", home=home, check=True).stdout)) == 3
    # `trail` commands follow the project they run in (a process of its own, as a person's shell runs it).
    here = json.loads(run_trail("resume", "--json", home=home, cwd=rust, check=True).stdout)
    assert here["schema"] == 2 and "Rust workspace" in here["brief"]


def test_a_done_task_takes_no_new_prompt_and_stays_done(home: Path, tmp_path: Path, location: Location) -> None:
    app = _repo(tmp_path, "app")
    send(home, app, "s-1", "UserPromptSubmit", prompt="Add a dark mode toggle")
    run_trail("done", home=home, cwd=app, check=True)  # a process in the project's folder, as a person runs it
    assert injected(send(home, app, "s-2", "SessionStart", source="startup")) == ""  # nothing open to resume
    send(home, app, "s-2", "UserPromptSubmit", prompt="Now add a high-contrast theme")
    run_here("list", home=home, check=True)  # folds the inbox in (reads and set-up in this process)

    with _opened(location) as ledger:
        first, second = (ledger.state(e.task_id) for e in ledger.entries())
    assert first.status == "done" and [r.text for r in first.requirements] == ["Add a dark mode toggle"]
    assert second.status == "active" and [r.text for r in second.requirements] == ["Now add a high-contrast theme"]
    assert [(link.relation, link.other_number) for link in second.links] == [("related", first.number)]
    # The same session, still running after its task was closed under it, moves on too.
    run_here("done", home=home, cwd=app, check=True)
    send(home, app, "s-2", "UserPromptSubmit", prompt="And a print stylesheet")
    run_here("list", home=home, check=True)
    with _opened(location) as ledger:
        assert len(ledger.entries()) == 3
        assert ledger.state(ledger.entries()[1].task_id).status == "done"


def test_a_paused_task_is_taken_up_by_the_next_session(home: Path, tmp_path: Path, location: Location) -> None:
    app = _repo(tmp_path, "app")
    send(home, app, "s-1", "UserPromptSubmit", prompt="Port the parser to Rust")
    run_here("pause", home=home, cwd=app, check=True)  # set-up, in this process
    brief = injected(send(home, app, "s-2", "SessionStart", source="startup"))
    assert "Port the parser to Rust" in brief
    with _opened(location) as ledger:
        (entry,) = ledger.entries()
        assert ledger.state(entry.task_id).status == "active"


def _todo(call: str, *statuses: str) -> dict[str, Any]:
    todos = [{"content": f"step {i}", "status": s, "activeForm": f"doing step {i}"} for i, s in enumerate(statuses)]
    return {"tool_name": "TodoWrite", "tool_use_id": call, "tool_input": {"todos": todos},
            "tool_response": {"oldTodos": [], "newTodos": todos}}


def test_a_finished_plan_leaves_no_stale_next_step(home: Path, tmp_path: Path) -> None:
    app = _repo(tmp_path, "app")
    send(home, app, "s-1", "UserPromptSubmit", prompt="Ship the release notes")
    send(home, app, "s-1", "PostToolUse", **_todo("toolu_p1", "completed", "in_progress", "pending"))
    # The reads and `trail next` in this process (each opens the ledger afresh); the hooks in their own.
    state = json.loads(run_here("resume", "--json", home=home, cwd=app, check=True).stdout)["state"]
    assert state["next_step"] == "step 1"
    send(home, app, "s-1", "PostToolUse", **_todo("toolu_p2", "completed", "completed", "completed"))
    shown = json.loads(run_here("resume", "--json", home=home, cwd=app, check=True).stdout)
    assert shown["state"]["next_step"] is None
    assert "every step of the plan is done" in shown["brief"] and "## Next step\nstep" not in shown["brief"]
    # A person's `trail next` wins until a newer plan supersedes it.
    run_here("next", "Tag v2.0 and push", home=home, cwd=app, check=True)
    assert "Tag v2.0" in run_here("resume", home=home, cwd=app, check=True).stdout
    send(home, app, "s-1", "PostToolUse", **_todo("toolu_p3", "pending"))
    assert json.loads(run_here("resume", "--json", home=home, cwd=app, check=True).stdout)["state"][
        "next_step"] == "step 0"


def test_an_imported_task_opens_at_the_transcripts_time(home: Path, location: Location) -> None:
    run_trail("import", "claude-code", str(FIXTURES / "claude-small.jsonl"), home=home, check=True)
    with _opened(location) as ledger:
        events = list(ledger.task_events(ledger.entries()[0].task_id))
    opened, linked = events[0], next(e for e in events if isinstance(e, ev.ConversationLinked))
    first = datetime.fromisoformat("2026-01-01T10:00:01+00:00")
    assert opened.timestamp == first and linked.timestamp <= events[2].timestamp
    # So a time inside the session is a point of the task, not "before the task was opened".
    at = run_here("replay", "1", "--at", "2026-01-01T10:00:02+00:00", "--json", home=home, check=True)
    assert json.loads(at.stdout)["position"] >= 1


ALL_SOURCES = ("startup", "resume", "clear", "compact")


def test_every_session_start_source_injects_within_the_cap_on_a_task_from_every_fixture(
    home: Path, tmp_path: Path
) -> None:
    root = SHARED / "fixtures"
    if not root.is_dir():
        pytest.skip("../shared/fixtures is absent")
    app = _repo(tmp_path, "big")
    run_here("start", "Everything at once", home=home, cwd=app, check=True)
    for agent, folder in (("claude-code", "claude-code"), ("codex", "codex")):
        files = [str(p) for p in sorted((root / folder).glob("*.jsonl"))]
        run_here("import", agent, *files, "--task", "1", home=home, cwd=app, check=True)  # set-up, in this process
    run_here("next", "NEXT-STEP-MARKER: re-run the migration check", home=home, cwd=app, check=True)
    assert len(run_here("resume", home=home, cwd=app, check=True).stdout) > 10_000  # uncut, it would not fit
    for source in ALL_SOURCES:
        text = injected(send(home, app, f"s-{source}", "SessionStart", source=source))
        assert 0 < len(text) <= 10_000, source
        assert "NEXT-STEP-MARKER" in text and "task #1" in text


def test_a_pointer_file_from_before_projects_never_routes_another_projects_session(
    home: Path, tmp_path: Path, location: Location
) -> None:
    web, rust = _repo(tmp_path, "web"), _repo(tmp_path, "rust")
    run_here("start", "Web work", home=home, cwd=web, check=True)  # set-up and reads in this process
    pointers = home / "active.json"
    legacy = {k: v for k, v in json.loads(pointers.read_text()).items() if "\x1fproject:" not in k}
    pointers.write_text(json.dumps(legacy))  # as an older tasktrail wrote it: one ledger-wide pointer
    # Inside the task's own project the old pointer still stands in.
    assert "Web work" in run_here("resume", home=home, cwd=web, check=True).stdout
    assert injected(send(home, rust, "s-rust", "SessionStart", source="startup")) == ""
    send(home, rust, "s-rust", "UserPromptSubmit", prompt="Set up a Rust workspace")
    run_here("list", home=home, check=True)
    with _opened(location) as ledger:
        web_task, rust_task = (ledger.state(e.task_id) for e in ledger.entries())
    assert web_task.requirements == () and [r.text for r in rust_task.requirements] == ["Set up a Rust workspace"]
