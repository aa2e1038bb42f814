"""One bound per field: a diff keeps ``bounds.DIFF`` bytes whether `trail changed` records it or an agent's
edit is captured, so the same change stores the same bytes either way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import bounds
from ledger.domain import events as ev
from tests.conftest import run_trail


@pytest.mark.sqlite_only("one backend is enough: this is about what capture and the command line keep")
def test_a_captured_diff_and_a_trail_changed_diff_of_one_change_store_the_same_bytes(
    home: Path, location: Location, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    source = repo / "m.py"
    source.write_text("".join(f"old_value_{i:03d} = {i}  # a line of the module as it was\n" for i in range(100)))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "m.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    source.write_text("".join(f"new_value_{i:03d} = {i}  # a line of the module as it is now\n" for i in range(100)))

    run_trail("start", "by hand", home=home, cwd=repo, check=True)
    run_trail("changed", "m.py", home=home, cwd=repo, check=True)
    with open_ledger(location) as app:
        [by_hand] = [e for t in app.entries() for e in app.task_events(t.task_id) if isinstance(e, ev.FileChanged)]
    assert by_hand.diff is not None and not by_hand.diff.truncated
    diff = by_hand.diff.tail
    assert bounds.OUTPUT < len(diff.encode()) <= bounds.DIFF  # about 10 KiB: over an output's bound, within a diff's

    # The same change as Codex's rollout records it (its ``unified_diff`` is kept as written).
    rollout = tmp_path / "rollout-2026-01-01T00-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
    records = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
         "payload": {"id": "0199aaaa-0000-7000-8000-000000000001", "cwd": str(repo)}},
        {"timestamp": "2026-01-01T00:00:01Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "rename the module's values"}},
        {"timestamp": "2026-01-01T00:00:02Z", "type": "event_msg",
         "payload": {"type": "patch_apply_end", "call_id": "call_1", "success": True,
                     "changes": {str(source): {"type": "update", "unified_diff": diff}}}},
    ]
    rollout.write_text("".join(json.dumps(r) + "\n" for r in records))
    run_trail("import", "codex", str(rollout), home=home, cwd=repo, check=True)
    with open_ledger(location) as app:
        changes = [e for t in app.entries() for e in app.task_events(t.task_id) if isinstance(e, ev.FileChanged)]
    [captured] = [e for e in changes if e.actor == "agent:codex"]
    assert captured.diff == by_hand.diff
