"""`trail export TASK --agent-trace FILE`: Agent Trace records from recorded diffs, checked against the spec's rules.

The rules are those of the spec's JSON Schema (cursor/agent-trace, schemas/trace-record.json, v0.1 RFC),
checked field by field below: required fields, types, enums, formats, no properties the schema does
not name, 1-based line ranges.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from ledger.app.store import Ledger
from ledger.domain import events as ev
from projections import agent_trace
from tests.conftest import run_here, run_trail

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?Z$")


def _object(value: Any, required: set[str], allowed: set[str], where: str) -> None:
    assert isinstance(value, dict), f"{where}: not an object"
    assert required <= value.keys(), f"{where}: missing {required - value.keys()}"
    assert value.keys() <= allowed, f"{where}: properties the schema does not allow: {value.keys() - allowed}"


def _uri(value: Any, where: str) -> None:
    assert isinstance(value, str) and urlparse(value).scheme and ":" in value, f"{where}: not a URI: {value!r}"


def _contributor(value: Any, where: str) -> None:
    _object(value, {"type"}, {"type", "model_id"}, where)
    assert value["type"] in ("human", "ai", "mixed", "unknown"), where
    if "model_id" in value:
        assert isinstance(value["model_id"], str) and len(value["model_id"]) <= 250, where


def validate(record: Any) -> None:
    """Every rule of the spec's trace-record schema, or an AssertionError naming the field."""
    _object(record, {"version", "id", "timestamp", "files"},
            {"version", "id", "timestamp", "vcs", "tool", "files", "metadata"}, "record")
    assert isinstance(record["version"], str) and re.match(r"^[0-9]+\.[0-9]+$", record["version"])
    assert isinstance(record["id"], str) and UUID_RE.match(record["id"]), record["id"]
    assert isinstance(record["timestamp"], str) and TIME_RE.match(record["timestamp"]), record["timestamp"]
    datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
    if "vcs" in record:
        _object(record["vcs"], {"type", "revision"}, {"type", "revision"}, "vcs")
        assert record["vcs"]["type"] in ("git", "jj", "hg", "svn")
        assert isinstance(record["vcs"]["revision"], str)
    if "tool" in record:
        _object(record["tool"], {"name", "version"}, {"name", "version"}, "tool")
        assert all(isinstance(record["tool"][k], str) for k in ("name", "version"))
    if "metadata" in record:
        assert isinstance(record["metadata"], dict)
    assert isinstance(record["files"], list)
    for i, file in enumerate(record["files"]):
        _object(file, {"path", "conversations"}, {"path", "conversations"}, f"files[{i}]")
        assert isinstance(file["path"], str) and not file["path"].startswith("/")
        assert isinstance(file["conversations"], list)
        for j, conv in enumerate(file["conversations"]):
            where = f"files[{i}].conversations[{j}]"
            _object(conv, {"ranges"}, {"url", "contributor", "ranges", "related"}, where)
            if "url" in conv:
                _uri(conv["url"], where + ".url")
            if "contributor" in conv:
                _contributor(conv["contributor"], where + ".contributor")
            for k, related in enumerate(conv.get("related", [])):
                _object(related, {"type", "url"}, {"type", "url"}, f"{where}.related[{k}]")
                _uri(related["url"], f"{where}.related[{k}].url")
            assert isinstance(conv["ranges"], list)
            for k, r in enumerate(conv["ranges"]):
                _object(r, {"start_line", "end_line"}, {"start_line", "end_line", "content_hash", "contributor"},
                        f"{where}.ranges[{k}]")
                assert type(r["start_line"]) is int and type(r["end_line"]) is int
                assert 1 <= r["start_line"] <= r["end_line"], r
                if "content_hash" in r:
                    assert isinstance(r["content_hash"], str)
                if "contributor" in r:
                    _contributor(r["contributor"], f"{where}.ranges[{k}].contributor")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.sqlite_only("the export is built from the task's events, whichever store holds them")
def test_export_gives_valid_line_ranges_for_recorded_changes(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    _git(work, "init", "-q")
    (work / "app.py").write_text("one\ntwo\nthree\n")
    _git(work, "add", "app.py")
    _git(work, "commit", "-qm", "base")
    head = _git(work, "rev-parse", "HEAD")

    def trail(*args: str) -> str:  # set-up, in this process; the export under test stays a process
        return run_here(*args, home=home, cwd=work, check=True).stdout

    trail("start", "Attribute lines")
    trail("checkpoint", "base")
    (work / "app.py").write_text("one\nTWO\nthree\nfour\nfive\n")  # line 2 rewritten, 4-5 added
    trail("changed", "app.py")
    (work / "new.py").write_text("a = 1\nb = 2\n")
    trail("changed", "new.py", "--actor", "agent:claude-code")
    (work / "app.py").write_text("one\nTWO\nthree\n")  # only removals: nothing to attribute
    trail("changed", "app.py")
    out = run_trail("export", "1", "--agent-trace", "trace.jsonl", home=home, cwd=work, check=True).stdout
    assert "2 Agent Trace records" in out and "1 no added lines" in out

    records = [json.loads(line) for line in (work / "trace.jsonl").read_text().splitlines()]
    for record in records:
        validate(record)
    first, second = records
    assert first["vcs"] == {"type": "git", "revision": head}
    assert first["tool"]["name"] == "tasktrail"
    (file,) = first["files"]
    assert file["path"] == "app.py"
    (conv,) = file["conversations"]
    assert conv["contributor"] == {"type": "human"} and "url" not in conv
    assert [(r["start_line"], r["end_line"]) for r in conv["ranges"]] == [(2, 2), (4, 5)]
    import hashlib

    assert conv["ranges"][1]["content_hash"] == "sha256:" + hashlib.sha256(b"four\nfive\n").hexdigest()
    assert second["files"][0]["path"] == "new.py"
    assert second["files"][0]["conversations"][0]["contributor"] == {"type": "ai"}
    assert second["files"][0]["conversations"][0]["ranges"][0] == {
        "start_line": 1, "end_line": 2, "content_hash": "sha256:" + hashlib.sha256(b"a = 1\nb = 2\n").hexdigest()}
    assert second["metadata"]["dev.tasktrail"]["position"] == 4

    again = trail("export", "1", "--agent-trace", "-")  # same ledger, same records (ids included)
    assert [json.loads(line) for line in again.splitlines()] == records


@pytest.mark.sqlite_only("the export is built from the task's events, whichever store holds them")
def test_a_captured_change_is_the_agents_under_its_session(ledger: Ledger) -> None:
    task = ledger.open_task("captured", "/work/p/src", project="/work/p").id
    assert task is not None
    source = ev.SourceKey(agent="claude-code", session="s 1/x", record="r1")
    diff = "@@ -0,0 +1,2 @@\n+x\n+y\n"
    ledger.append_many(task, [
        (ev.ConversationLinked, {"agent": "claude-code", "session_id": "s 1/x",
                                 "transcript": "/home/u/.claude/projects/p/s 1.jsonl", "actor": "agent:claude-code"}),
        (ev.FileChanged, {"path": "/work/p/src/a.py", "operation": "created", "after_sha256": "0" * 64,
                          "diff": ev.Bounded(tail=diff, size=len(diff)), "actor": "agent:claude-code",
                          "source": source}),
        (ev.ConversationLinked, {"agent": "codex", "session_id": "c2", "actor": "agent:codex"}),
        (ev.FileChanged, {"path": "b.py", "operation": "created", "diff": ev.Bounded(tail=diff, size=len(diff)),
                          "actor": "agent:codex"}),
        (ev.FileChanged, {"path": "c.py", "operation": "modified",
                          "diff": ev.Bounded(tail=diff[-6:], size=400, sha256="1" * 64, truncated=True)}),
    ])
    built = agent_trace.build(ledger.task_events(task), "9.9")
    assert built.skipped == {"diff cut": 1}
    first, second = built.records
    for record in built.records:
        validate(record)
    assert first["files"][0]["path"] == "src/a.py"  # from the repository root
    conv = first["files"][0]["conversations"][0]
    assert conv["url"] == "file:///home/u/.claude/projects/p/s%201.jsonl"
    assert conv["contributor"]["type"] == "ai"
    assert "vcs" not in first  # no checkpoint with a git HEAD
    assert second["files"][0]["conversations"][0]["url"] == "urn:tasktrail:session:codex:c2"
    assert uuid.UUID(first["id"]).version == 5


def test_added_ranges_read_hunks_as_unidiff_counts_them() -> None:
    # A removed line reading "-- x" is "--- x" in the diff: a body line, not a file header.
    diff = "@@ -1,3 +1,3 @@\n a\n--- x\n+b\n c\n@@ -10,2 +10,4 @@\n k\n+l\n+m\n k2\n"
    assert [(s, e) for s, e, _ in agent_trace.added_ranges(diff)] == [(2, 2), (11, 12)]
