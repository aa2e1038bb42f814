"""Fold version 8 (issue 20, from reading held-out-5's briefs): a question asking why something fails is
answered once the user asks for work, a report of a command's error is replaced by the next report on that
command after the agent's changes, a whole run of the same suite through another runner resolves the first,
a background command's outcome comes from the task it became, and a requirement cut short is shown whole when
the budget has room. Small transcripts of our own through the real importer into a real ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from projections.brief import render
from projections.intent import enquiry
from tests.test_fidelity_fold import _brief
from tests.test_fidelity_fold6 import _S
from tests.test_fidelity_rules import _section

pytestmark = pytest.mark.sqlite_only("one backend is enough: what the fold makes of a session, not the store")


def test_a_why_is_it_failing_question_is_answered_once_the_user_asks_for_work(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    assert enquiry("why is the nightly job failing?") and not enquiry("but why do you think the cache is stale?")
    t = _S()
    t.user("why is the nightly job failing?")
    t.bash("make nightly-job", 2, "error: linker timed out")
    t.said("The linker times out on the big test binary; raising its timeout would fix it.")
    t.user("yes please raise the timeout")
    brief, state = _brief(ledger, location, t.write(tmp_path / "why.jsonl"))
    assert [r.text for r in state.requirements] == ["yes please raise the timeout"]
    (gone,) = state.withdrawn
    assert gone.text == "why is the nightly job failing?" and (gone.withdrawn_because or "").startswith("answered")
    assert "nightly job failing" not in _section(brief, "## Requirements")


def test_pushback_asking_why_stays_a_requirement(ledger: Ledger, location: Location, tmp_path: Path) -> None:
    t = _S()
    t.user("But why do you think the cache is stale?")
    t.said("Its key leaves out the config file.")
    t.user("fix the key then")
    _, state = _brief(ledger, location, t.write(tmp_path / "pushback.jsonl"))
    assert [r.text for r in state.requirements] == ["But why do you think the cache is stale?", "fix the key then"]


def _reports(first: str, second: str) -> _S:
    """The user's report ``first``, the agent's fix of a file, then the user's report ``second``."""
    t = _S()
    t.user(first)
    t.tool("Edit", {"file_path": "/work/pkg/manifest.toml", "old_string": "widgets-core", "new_string": "widgets"},
           "The file /work/pkg/manifest.toml has been updated.")
    t.said("Fixed; run it again.")
    t.user(second)
    return t


def test_the_next_error_report_on_a_command_replaces_the_last_one_after_a_fix(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _reports("when I run `make publish:pkg` I am getting this error:\n$ make publish:pkg\n"
                 "error: manifest names widgets-core, which is not in the workspace",
                 "now I am getting 409 Conflict: version 1.2.0 exists\nerror: target publish:pkg exited with code 1")
    brief, state = _brief(ledger, location, t.write(tmp_path / "again.jsonl"))
    assert [r.text[:22] for r in state.requirements] == ["now I am getting 409 C"]
    (gone,) = state.withdrawn
    assert "not in the workspace" in gone.text and (gone.withdrawn_because or "").startswith("replaced")
    assert "not in the workspace" not in _section(brief, "## Requirements")
    # A report on another command is other work: both stay.
    other = _reports("I am getting this error from `make lint:all`: unused import in app.py",
                     "also getting an error from `make docs:build`: missing index.rst")
    _, state = _brief(ledger, location, other.write(tmp_path / "other.jsonl"))
    assert [r.text[:20] for r in state.requirements][-2:] == ["I am getting this er", "also getting an erro"], state


def test_a_whole_run_of_the_same_suite_by_another_runner_resolves_the_failed_one(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("fix the trailing commas in the generated code")
    t.bash("pnpm test", 1, "ERR_PNPM_NO_SCRIPT  Missing script: test\nFor help, run: pnpm help test")
    t.bash("bun test", 0, " 18 pass\n 0 fail\nRan 18 tests across 3 files.")
    t.bash("cargo test", 101, "test result: FAILED. 1 passed; 1 failed")
    brief, state = _brief(ledger, location, t.write(tmp_path / "runner.jsonl"))
    failing = _section(brief, "## Failing now")
    assert "pnpm test" not in failing and "cargo test" in failing, failing
    assert [f.resolved_at is not None for f in state.failures if "pnpm" in f.what] == [True]


def _background(t: _S, command: str, task: str) -> None:
    call = f"toolu_{len(t.lines)}"
    t._add("assistant", {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                                           "input": {"command": command, "run_in_background": True}}]})
    t._add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                 "content": f"Command running in background with ID: {task}."}]},
           toolUseResult={"stdout": "", "stderr": "", "interrupted": False, "backgroundTaskId": task})


def _read_task(t: _S, task: str, outcome: dict[str, Any]) -> None:
    call = f"toolu_{len(t.lines)}"
    t._add("assistant", {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "TaskOutput",
                                                           "input": {"task_id": task, "block": True}}]})
    t._add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                 "content": f"<task_id>{task}</task_id>"}]},
           toolUseResult={"retrieval_status": "success",
                          "task": {"task_id": task, "task_type": "local_bash", **outcome}})


def test_a_background_command_that_failed_is_failing_and_one_still_running_is_not(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("open the PR and merge it when the checks pass")
    _background(t, "gh pr checks 7 --watch", "b1")
    _read_task(t, "b1", {"status": "failed", "output": "verify\tfail\t1m7s", "exitCode": 1})
    _background(t, "npm run e2e", "b2")
    _read_task(t, "b2", {"status": "running", "output": "started"})
    t.bash("gh pr view 7 --json state", 0, '{"state": "MERGED"}')  # another verb of gh: answers for nothing
    t.said("Done. Merged; the failures are unrelated.")
    brief, state = _brief(ledger, location, t.write(tmp_path / "background.jsonl"))
    assert [(c.line, c.exit_code) for c in state.commands if "checks" in c.line][-1] == ("gh pr checks 7 --watch", 1)
    assert "gh pr checks 7 --watch" in _section(brief, "## Failing now")
    assert not [c for c in state.commands if c.line == "npm run e2e" and c.exit_code]


def test_a_requirement_cut_short_is_shown_whole_when_the_budget_has_room(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    point = "so that we deploy every app on merge"
    t = _S()
    t.user("set up CD for the docs")
    t.user("Make one deploy job that runs the deploy script of each package " + "and its settings " * 12 + point)
    for later in ("add the secrets", "run it once", "update the tool and retry"):
        t.said("Done.")
        t.user(later)
    _, state = _brief(ledger, location, t.write(tmp_path / "long.jsonl"))
    assert point in render(state, max_chars=10_000)
    tight = render(state, max_chars=len(render(state, max_chars=10_000)) - 60)
    assert point not in tight and "run it once" in tight  # no room: cut as before, nothing else dropped for it


def test_another_verb_of_the_same_program_does_not_fix_its_failure(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("deploy the docs with the vault credentials")
    t.bash("vaultctl run -- npm run deploy", 1, "Error: no project selected")
    t.bash("vaultctl setup --project docs --config ci", 0, "configured")
    t.bash("vaultctl run -- npm run deploy 2>&1", 1, "Error: Failed to publish")
    brief, state = _brief(ledger, location, t.write(tmp_path / "verb.jsonl"))
    assert "vaultctl run -- npm run deploy" in _section(brief, "## Failing now")
    assert not [f for f in state.failures if f.resolved_at is not None]  # setup fixed neither run
    t.bash("vaultctl run -- npm run deploy", 0, "published")
    _, state = _brief(ledger, location, t.write(tmp_path / "verb-passed.jsonl"))
    assert state.failures and all(f.resolved_at is not None for f in state.failures)


def test_a_greeting_and_a_bare_retry_are_not_requirements(
    ledger: Ledger, location: Location, tmp_path: Path
) -> None:
    t = _S()
    t.user("Hi")
    t.said("Hello! What should we work on?")
    t.user("fix the trailing commas in the generated schema")
    t.bash("npm run gen", 1, "Error: ETIMEDOUT")
    t.user("retry")
    _, state = _brief(ledger, location, t.write(tmp_path / "host.jsonl"))
    assert [r.text for r in state.requirements] == ["fix the trailing commas in the generated schema"]
    assert not state.corrections and [n.text for n in state.notes][-2:] == ["user: Hi", "user: retry"]
