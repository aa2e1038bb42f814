"""Import in bounded memory (issue 24): a session's mapped items past a few thousand sit in a temporary file
(``ledger.capture.spool``) and the import writes them a batch at a time.

The spool must be a list to the mappers (they append, insert a queued prompt where it was typed and replace
a compaction's item at the end), so every fixture, the real agents' logs included, maps to the same items
spilled at once as held in memory; and a generated 10k-call transcript imports in a subprocess whose traced
peak stays under a bound that holding its items in memory exceeded (``PEAK``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.capture import agents, spool
from ledger.capture.importer import read_session
from ledger.capture.spool import Spool
from tests.conftest import REPO, SHARED

FIXTURES = sorted(
    [(a, p) for a, folder in (("claude-code", "claude-code"), ("codex", "codex"))
     for p in (SHARED / "fixtures" / folder).glob("*.jsonl")]
    + [("claude-code", p) for p in (REPO / "tests" / "fixtures").glob("claude-*.jsonl")]
    + [("codex", p) for p in (REPO / "tests" / "fixtures").glob("codex-*.jsonl")],
    key=lambda found: str(found[1]),
)


@pytest.mark.parametrize(("agent", "path"), FIXTURES, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_a_spilled_session_maps_to_the_same_items_as_one_held_in_memory(
    agent: str, path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(spool, "KEEP", 10**9)
    held = read_session(agents.load(agent), path)
    monkeypatch.setattr(spool, "KEEP", 0)
    spilled = read_session(agents.load(agent), path)
    assert isinstance(spilled.items, Spool) and spilled.items.spilled and not held.items.spilled  # type: ignore[attr-defined]
    assert list(spilled.items) == list(held.items) and held.items
    assert (spilled.session_id, spilled.title, spilled.references) == (held.session_id, held.title, held.references)


def test_a_spool_behaves_as_a_list_in_memory_and_in_its_file() -> None:
    rng = random.Random(24)
    for keep in (0, 3, 10**6):
        model: list[tuple[type, dict[str, int]]] = []
        items = Spool(keep=keep)
        for step in range(400):
            op = rng.choice(("append", "append", "insert", "set", "del", "extend"))
            item = (int, {"n": step})
            if op == "append":
                model.append(item)
                items.append(item)
            elif op == "extend":
                model.extend([item, item])
                items.extend([item, item])
            elif op == "insert":
                at = rng.randint(-len(model) - 1, len(model) + 1)
                model.insert(at, item)
                items.insert(at, item)
            elif model and op == "set":
                at = rng.randrange(-len(model), len(model))
                model[at] = item
                items[at] = item
            elif model and op == "del":
                at = rng.randrange(-len(model), len(model))
                del model[at]
                del items[at]
            assert len(items) == len(model)
        assert list(items) == model and items == model and items[5:17:3] == model[5:17:3]
        assert items[-1] == model[-1] and items[::-1] == model[::-1]
        assert items.spilled == (keep < 400)
        with pytest.raises(IndexError):
            items[len(model)]


GENERATE = '''
import json, sys
sid = "22222222-aaaa-4bbb-8ccc-000000000002"
base = {"isSidechain": False, "userType": "external", "cwd": sys.argv[3], "sessionId": sid, "version": "2.0.55"}
with open(sys.argv[1], "w") as f:
    parent = None
    def line(kind, uuid, message, **extra):
        global parent
        ts = "2026-01-01T10:00:00.000Z"
        f.write(json.dumps({"parentUuid": parent, **base, "type": kind, "uuid": uuid, "timestamp": ts,
                            "message": message, **extra}) + "\\n")
        parent = uuid
    line("user", "p0", {"role": "user", "content": "Keep the build green"})
    for i in range(int(sys.argv[2])):
        line("assistant", f"a{i}", {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"ls src/{i}"}}]})
        line("user", f"r{i}", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"file{i}.py"}]},
             toolUseResult={"stdout": f"file{i}.py", "stderr": "", "interrupted": False})
'''

MEASURE = '''
import json, sys, tracemalloc
from pathlib import Path
from ledger.app.store import open_ledger
from ledger.base.location import resolve
from ledger.capture import agents, importer
agent, location = agents.load("claude-code"), resolve(sys.argv[2])
ledger = open_ledger(location)
tracemalloc.start()
report = importer.import_files(ledger, location, agent, [Path(sys.argv[1])])
print(json.dumps([tracemalloc.get_traced_memory()[1], sum(report.events.values())]))
'''

CALLS = 10_000
PEAK = 16_000_000
"""Bytes traced at the import's peak: 10.4 MB measured with the spool, 30.7 MB with the items in a list
(before the spool: every item held, each key's strings its own, the last read folding every event)."""


@pytest.mark.sqlite_only("measures the import's own memory, not a server's")
def test_a_long_transcript_imports_in_bounded_memory(home: Path, tmp_path: Path) -> None:
    transcript, db = tmp_path / "long.jsonl", tmp_path / "long.db"
    env = {**{k: v for k, v in os.environ.items() if k != "TRAIL_DB"}, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", GENERATE, str(transcript), str(CALLS), str(tmp_path)], check=True,
                   timeout=120)
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(transcript), str(db)], capture_output=True,
                          text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    peak, events = json.loads(proc.stdout.splitlines()[-1])
    assert events == CALLS + 4  # each call, the request, the link, the end checkpoint and the status: all landed
    assert peak < PEAK, f"the import's traced peak was {peak / 1e6:.1f} MB"


SECRETS = ("AKIAQWERTYUIOPASDFGH", "ghp_" + "Zq7" * 12, "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx")
"""An AWS key id, a GitHub token, a Slack bot token: kinds the built-in rules redact."""


def test_no_secret_reaches_the_spool_file_or_the_ledger_in_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ledger.app.store import open_ledger
    from ledger.base.location import resolve
    from ledger.capture import importer

    monkeypatch.setattr(spool, "KEEP", 40)
    monkeypatch.setattr(spool, "CHUNK", 7)  # chunks end inside the items, a last one is left to flush at a read
    files: list[Path] = []

    def named_file(**_: object) -> object:
        # The spool's own file, but with a name, kept after the import: every byte it was given is read here.
        files.append(tmp_path / f"spool-{len(files)}.bin")
        return files[-1].open("w+b")

    monkeypatch.setattr(spool.tempfile, "TemporaryFile", named_file)
    transcript = tmp_path / "long.jsonl"
    sid = "33333333-aaaa-4bbb-8ccc-000000000003"
    base = {"isSidechain": False, "userType": "external", "cwd": str(tmp_path), "sessionId": sid, "version": "2.0.55"}
    with transcript.open("w") as out:
        parent = None
        for n, (kind, message, extra) in enumerate(_long_session(150)):
            uuid = f"u{n}"
            out.write(json.dumps({"parentUuid": parent, **base, "type": kind, "uuid": uuid,
                                  "timestamp": "2026-01-01T10:00:00.000Z", "message": message, **extra}) + "\n")
            parent = uuid
    db = tmp_path / "t.db"
    location = resolve(str(db))
    ledger = open_ledger(location)
    try:
        report = importer.import_files(ledger, location, agents.load("claude-code"), [transcript])
        assert report.events["CommandRan"] == 150  # every call landed, with its result
    finally:
        ledger.close()
    assert files and files[0].stat().st_size > 10_000  # spilled: most items went through the file
    stored = [files[0], db, *(p for p in (tmp_path / "t.db-wal",) if p.exists())]
    for path in stored:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret[:6]}... in clear in {path.name}"
    assert b"[REDACTED:" in files[0].read_bytes()


def _long_session(calls: int) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    yield "user", {"role": "user", "content": f"Deploy with key {SECRETS[0]}"}, {}
    for i in range(calls):
        secret = SECRETS[i % len(SECRETS)]
        yield "assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"echo {secret} {i}"}}]}, {}
        yield "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"token {secret} line {i}"}]}, {
            "toolUseResult": {"stdout": f"token {secret} line {i}", "stderr": "", "interrupted": False}}
