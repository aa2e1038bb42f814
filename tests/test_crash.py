"""Crash safety: kill -9 at random moments during a large import; the ledger always verifies and a
re-run finishes with no loss and no duplicate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from ledger.app.store import open_ledger
from ledger.base.location import Location
from tests.conftest import REPO, run_here

SESSION = "22222222-aaaa-4bbb-8ccc-00000000beef"


def _transcript(path: Path, pairs: int) -> None:
    """A long Claude Code session: a prompt, then many shell commands and edits with their results."""
    lines = []
    stamp = 0

    def record(kind: str, uuid: str, message: dict[str, object], **extra: object) -> None:
        nonlocal stamp
        stamp += 1
        lines.append(json.dumps({
            "type": kind, "uuid": uuid, "parentUuid": None, "sessionId": SESSION, "cwd": "/work/big",
            "version": "2.0.55", "timestamp": f"2026-02-01T10:{stamp // 3600 % 60:02d}:{stamp % 60:02d}.000Z",
            "message": message, **extra,
        }))

    record("user", "p0", {"role": "user", "content": "Make the whole suite green"})
    for i in range(pairs):
        call = f"toolu_{i:06d}"
        if i % 3:
            record("assistant", f"a{i}", {"role": "assistant", "content": [
                {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"pytest -q -k case{i}"}}]})
            failed = i % 7 == 0
            text = f"Exit code 1\nFAILED case{i}" if failed else f"{i} passed"
            record("user", f"r{i}", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": failed}]},
                toolUseResult=f"Error: {text}" if failed else {"stdout": text, "stderr": "", "interrupted": False})
        else:
            record("assistant", f"a{i}", {"role": "assistant", "content": [
                {"type": "tool_use", "id": call, "name": "Edit",
                 "input": {"file_path": f"/work/big/m{i % 40}.py", "old_string": "x", "new_string": f"y{i}"}}]})
            record("user", f"r{i}", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": "The file has been updated."}]},
                toolUseResult={"filePath": f"/work/big/m{i % 40}.py", "oldString": "x", "newString": f"y{i}",
                               "originalFile": "x\n", "structuredPatch": [
                                   {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                    "lines": ["-x", f"+y{i}"]}]})
    path.write_text("\n".join(lines) + "\n")


def _events(home: Path) -> list[tuple[str, str]]:
    """(type, source) of every event of task 1, read through the ledger as any command would."""
    if not (home / "ledger.db").exists():
        return []
    app = open_ledger(Location(url=f"sqlite:{home / 'ledger.db'}", home=home))
    try:
        if not app.entries():
            return []
        return [(type(e).__name__, json.dumps(e.source.model_dump() if e.source else None))
                for e in app.task_events(app.task_id(1))]
    finally:
        app.close()


def _import_cmd(home: Path, transcript: Path, crash_at: str | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO)}
    env.pop("TRAIL_DATABASE_URL", None)
    if crash_at is not None:
        env["TRAIL_CRASH_AT"] = crash_at
    return subprocess.Popen(
        [sys.executable, "-c", "from cli.main import main; main()", "import", "claude-code", str(transcript)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def test_kill_9_during_import_never_corrupts_and_rerun_completes(tmp_path: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    _transcript(transcript, pairs=3000)

    reference = tmp_path / "reference"
    assert _import_cmd(reference, transcript).wait(timeout=300) == 0
    expected = _events(reference)
    assert len(expected) > 3000

    home = tmp_path / "crashing"
    seen_counts = []
    # The import's own crash points (ledger/base/crashpoints.py), not sleeps: right after the task opened
    # with its first batch (the window that used to leave an orphan task), then after later batches.
    # Each re-run walks the batches already stored before reaching its kill.
    for step in ("import-opened", "import-batch-1", "import-batch-2", "import-batch-4", "import-batch-6"):
        proc = _import_cmd(home, transcript, crash_at=step)
        assert proc.wait(timeout=300) == -signal.SIGKILL, f"{step}: the crash point was never reached"
        verify = run_here("verify", home=home)  # the checks run in this process
        assert verify.returncode == 0, verify.stdout + verify.stderr
        events = _events(home)
        keys = [source for _, source in events if source != "null"]
        assert len(keys) == len(set(keys)), "a source record landed twice"
        assert len(json.loads(run_here("list", "--json", home=home, check=True).stdout)) == 1  # never a second task
        seen_counts.append(len(events))
    assert seen_counts == sorted(seen_counts) and seen_counts[0] > 0  # progress is never lost between kills
    assert seen_counts[-1] < len(expected)

    assert _import_cmd(home, transcript).wait(timeout=300) == 0
    final = _events(home)
    assert run_here("verify", home=home).returncode == 0
    assert len(json.loads(run_here("list", "--json", home=home, check=True).stdout)) == 1
    assert Counter(final) == Counter(expected)


def test_a_file_of_one_batch_is_stored_settled_or_not_at_all(tmp_path: Path) -> None:
    """The status a session ended in is recorded with the file's last records, in one transaction: killed
    right after the write that opened the task (its only one), the task is there and already settled."""
    transcript = REPO / "tests" / "fixtures" / "claude-small.jsonl"
    home = tmp_path / "crashing"
    assert _import_cmd(home, transcript, crash_at="import-opened").wait(timeout=300) == -signal.SIGKILL
    events = _events(home)
    assert events and events[-1][0] == "StatusChanged"
    assert run_here("verify", home=home).returncode == 0
    assert _import_cmd(home, transcript).wait(timeout=300) == 0
    assert _events(home) == events  # the re-run finds everything stored: nothing to add, nothing to settle
