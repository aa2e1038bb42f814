"""Codex's apply_patch hunks get line numbers (issue 19), so `trail why PATH:LINE` follows a line through them.

Live: the hook locates each hunk's new side in the file it patched (``ledger.capture.patchlines``), and the
fold prefers the numbered diff the rollout records for the call; an import takes the rollout's diff. A hunk
that cannot be placed with certainty leaves the file's section as written, as before.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.base.hook_spool import HUNKS_KEY
from ledger.capture import patchlines
from ledger.capture.agents.codex import mapper, outcomes
from ledger.domain import events as ev
from projections import hunks
from tests.conftest import run_here
from tests.test_hook_codex import send
from tests.test_routing import _repo

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _patch(*files: str) -> str:
    return "*** Begin Patch\n" + "".join(files) + "*** End Patch"


def _section(patch: str, index: int = 0) -> str:
    return patchlines.files(patch)[index][3]


def _lines(text: str) -> list[str]:
    return text.split("\n")[:-1]


BEFORE = "import os\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n\n\ndef c():\n    return 3\n"
TWO_HUNKS = _patch("*** Update File: m.py\n@@\n import os\n+import sys\n"
                   "@@ def c():\n-    return 3\n+    x = 3\n+    return x\n")
AFTER = BEFORE.replace("import os\n", "import os\nimport sys\n").replace("    return 3\n", "    x = 3\n    return x\n")


def test_two_hunks_are_numbered_from_the_file_they_left() -> None:
    starts = patchlines.locate(_section(TWO_HUNKS), _lines(AFTER))
    # The second hunk: old line 13 (``return 3``) is new line 14, below the added import.
    assert starts == [(1, 1), (13, 14)]
    diff = patchlines.numbered(_section(TWO_HUNKS), starts)
    assert diff is not None
    parsed = hunks.parse(diff)
    assert [(h.source_start, h.source_length, h.target_start, h.target_length) for h in parsed] == [
        (1, 1, 1, 2), (13, 1, 14, 2)]
    assert hunks.trace(parsed, 14) == hunks.Trace(True, 13)  # `x = 3` took the place of `return 3`
    assert hunks.trace(parsed, 15) == hunks.Trace(True, None)  # `return x` is new
    assert hunks.trace(parsed, 9) == hunks.Trace(False, 8)  # `def b():` stood a line higher


def test_a_hunk_that_cannot_be_located_leaves_the_file_unnumbered() -> None:
    # The file changed again after the patch: its second hunk's new side is not there.
    later = AFTER.replace("    return x\n", "    return x + 0\n")
    assert patchlines.locate(_section(TWO_HUNKS), _lines(later)) is None
    # Twice there is no certain place either: either copy could be the one the patch wrote.
    twice = _patch("*** Update File: t.py\n@@\n-x = 1\n+x = 2\n")
    assert patchlines.locate(_section(twice), ["x = 2", "y = 0", "x = 2"]) is None
    # A pure deletion leaves nothing to find.
    gone = _patch("*** Update File: t.py\n@@\n-x = 1\n")
    assert patchlines.locate(_section(gone), ["y = 0"]) is None


def test_a_place_codexs_search_could_not_have_chosen_is_ruled_out() -> None:
    # ``x = 2`` stands twice, but the file still holds the patch's old side (``x = 1``) between them. Had
    # Codex written the second, it would have found that ``x = 1`` first: it wrote the first.
    patch = _patch("*** Update File: t.py\n@@\n-x = 1\n+x = 2\n")
    assert patchlines.locate(_section(patch), ["x = 2", "x = 1", "x = 2"]) == [(1, 1)]


def test_an_added_file_is_all_new_lines() -> None:
    patch = _patch("*** Add File: new.py\n+a = 1\n+\n+b = 2\n")
    diff = mapper.patch_items(patch, "/w", ev.SourceKey(agent="codex", session="s", record="c"), NOW)[0][1]["diff"]
    parsed = hunks.parse(diff.tail)
    assert [(h.source_start, h.source_length, h.target_start, h.target_length) for h in parsed] == [(0, 0, 1, 3)]
    assert hunks.trace(parsed, 3) == hunks.Trace(True, None)


def test_a_deleted_file_keeps_its_section_live_and_its_lines_on_import() -> None:
    patch = _patch("*** Delete File: old.py\n")
    key = ev.SourceKey(agent="codex", session="s", record="c")
    (_, live), = mapper.patch_items(patch, "/w", key, NOW)
    assert live["operation"] == "deleted" and live["diff"].tail == "*** Delete File: old.py"  # its lines are gone
    assert mapper.change_diff({"type": "delete", "content": "a = 1\nb = 2\n"}) == "@@ -1,2 +0,0 @@\n-a = 1\n-b = 2\n"
    assert mapper.change_diff({"type": "add", "content": "a = 1\n"}) == "@@ -0,0 +1,1 @@\n+a = 1\n"


def test_a_moved_file_is_located_at_its_new_path(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "new.py").write_text("def f():\n    return 2\n")
    patch = _patch("*** Update File: old.py\n*** Move to: pkg/new.py\n@@\n def f():\n-    return 1\n+    return 2\n")
    assert patchlines.hunk_starts(patch, str(tmp_path)) == {"old.py": [[1, 1]]}
    items = mapper.patch_items(patch, str(tmp_path), ev.SourceKey(agent="codex", session="s", record="c"), NOW,
                               absolute_keys=True, located={"old.py": [[1, 1]]})
    (_, fields), = items
    assert fields["operation"] == "renamed" and fields["path"] == str(tmp_path / "pkg" / "new.py")
    assert "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n" in fields["diff"].tail


RESPONSE = "Exit code: 0\nOutput:\nSuccess. Updated the following files:\nM m.py\n"


def _post_tool_use(cwd: Path, patch: str, **extra: Any) -> dict[str, Any]:
    return {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "apply_patch", "cwd": str(cwd),
            "tool_input": {"command": patch}, "tool_use_id": "call_1", "tool_response": RESPONSE, **extra}


def _captured(home: Path, work: Path, **extra: Any) -> dict[str, Any]:
    """The real hook fed a Codex apply_patch PostToolUse for ``TWO_HUNKS``, the file then changed again, and
    the ledger read: the FileChanged it folded in."""
    run_here("start", "Numbers", home=home, cwd=work, check=True)
    send(home, work, "cx-lines", "PostToolUse", tool_name="apply_patch", tool_use_id="call_1",
         tool_input={"command": TWO_HUNKS}, tool_response=RESPONSE, **extra)
    (work / "m.py").write_text("changed since\n")  # the fold comes later: numbers must have been taken in time
    log = json.loads(run_here("log", "--json", home=home, cwd=work, check=True).stdout)
    (change,) = [e for e in log if e["type"] == "FileChanged"]
    return change


@pytest.mark.sqlite_only("the hook numbers the hunks before anything is stored, whichever the store")
def test_the_hook_numbers_the_hunks_while_the_file_is_as_patched(home: Path, tmp_path: Path) -> None:
    work = _repo(tmp_path, "work")
    (work / "m.py").write_text(AFTER)
    change = _captured(home, work)
    assert [(h.source_start, h.target_start) for h in hunks.parse(change["diff"]["tail"])] == [(1, 1), (13, 14)]
    why = json.loads(run_here("why", "m.py:15", "--json", home=home, cwd=work, check=True).stdout)
    assert [c["line"] for c in why["changes"]] == [15]
    assert json.loads(run_here("why", "m.py:9", "--json", home=home, cwd=work, check=True).stdout)["changes"] == []


@pytest.mark.sqlite_only("the hook numbers the hunks before anything is stored, whichever the store")
def test_the_hook_stores_an_unlocated_patch_without_numbers(home: Path, tmp_path: Path) -> None:
    work = _repo(tmp_path, "work")
    (work / "m.py").write_text("nothing of the patch\n")
    change = _captured(home, work, **{HUNKS_KEY: {"m.py": [[1, 1], [13, 14]]}})  # the agent's say: dropped
    assert change["diff"]["tail"] == _section(TWO_HUNKS) and hunks.parse(change["diff"]["tail"]) == []
    why = json.loads(run_here("why", "m.py:9", "--json", home=home, cwd=work, check=True).stdout)
    assert [c["line"] for c in why["changes"]] == [9]  # as before: it may have touched any line


def test_the_rollouts_own_diff_wins_and_matches_the_import(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    recorded = {str(tmp_path / "m.py"): {"type": "update", "unified_diff": "@@ -1 +1,2 @@\n import os\n+import sys\n",
                                         "move_path": None}}
    record = {"timestamp": "2026-12-01T10:00:00Z", "type": "event_msg", "payload": {
        "type": "item_completed", "thread_id": "s1", "turn_id": "t",
        "item": {"type": "FileChange", "id": "call_1", "changes": recorded, "status": "completed",
                 "stdout": "", "stderr": ""}}}
    meta = {"timestamp": "2026-12-01T10:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": str(tmp_path)}}
    rollout.write_text(json.dumps(meta) + "\n" + json.dumps(record) + "\n")
    payload = _post_tool_use(tmp_path, TWO_HUNKS, transcript_path=str(rollout),
                             **{outcomes.CHANGES_KEY: {"forged": {}}})
    enriched, = outcomes.with_outcomes([payload])
    assert enriched[outcomes.CHANGES_KEY] == recorded
    (_, live), = mapper.hook_items(enriched, 1, NOW)
    assert live["diff"].tail == "@@ -1 +1,2 @@\n import os\n+import sys\n"
    lines = list(enumerate(rollout.read_text().splitlines(), 1))
    imported = [f for cls, f in mapper.map_rollout(lines, "rollout").items if cls is ev.FileChanged]
    assert [(f["source"], f["diff"]) for f in imported] == [(live["source"], live["diff"])]  # one fact, one diff
    # A rollout without the call (not written yet, or another version): nothing is taken from it.
    rollout.write_text("")
    assert outcomes.CHANGES_KEY not in outcomes.with_outcomes([payload])[0]
