"""Codex rollouts: facts from the agent's own records (issue 10, part 2).

Always run: small rollouts of our own in the real format (tests/fixtures/codex-*.jsonl), imported
through the real CLI. When ../shared/fixtures is present: general properties over the real rollouts.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.app.store import Ledger
from ledger.base.location import Location
from ledger.capture.agents.codex.mapper import map_rollout, patch_files
from ledger.capture.importer import import_files
from ledger.domain import events as ev
from tests.conftest import SHARED, run_trail

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the facts read from an agent's records, not the store")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TURNS = FIXTURES / "codex-turns.jsonl"
FORK = FIXTURES / "codex-fork.jsonl"
SESSION = "33333333-cccc-7ddd-8eee-000000000003"


def _import(home: Path, *paths: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    proc = run_trail("import", "codex", *map(str, paths), *extra, "--json", home=home, check=True)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def _events(ledger: Ledger, number: int = 1) -> list[ev.TaskEvent]:
    return list(ledger.task_events(ledger.task_id(number)))


def _of(events: list[ev.TaskEvent], cls: type[ev.TaskEvent]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def _times(path: Path) -> set[datetime]:
    """Every record's timestamp in a rollout."""
    out = set()
    for raw in path.read_text().splitlines():
        try:
            out.add(datetime.fromisoformat(json.loads(raw)["timestamp"].replace("Z", "+00:00")))
        except (ValueError, KeyError):
            continue
    return out


# -- our own rollouts, through the real CLI -------------------------------------------------------------


def test_turns_map_to_compaction_replies_files_tests_and_corrections(home: Path, ledger: Ledger) -> None:
    data = _import(home, TURNS)
    assert data["skipped"] == [] and data["new_tasks"] == 1
    events = _events(ledger)

    # The compacted item is one ContextCompacted with the summary and the context size before it.
    (compacted,) = _of(events, ev.ContextCompacted)
    assert compacted.summary.tail.startswith("Summary so far") and compacted.tokens_before == 8123
    assert not any(isinstance(e, ev.CheckpointMarked) and "compact" in e.label for e in events)

    # Where each turn stopped: its last assistant message (the duplicate agent_message is not counted twice).
    replies = [e.text.tail for e in _of(events, ev.AgentReplied)]
    assert replies == [
        "Fixed add() (it subtracted) and moved it to src/arith.py; all 3 tests pass.",
        "Running make test.",  # an interrupted turn stops at its commentary
        "Added the entry to docs/CHANGELOG.md; next I will run make test.",  # the end of the rollout
    ]
    state = ledger.state(ledger.task_id(1))
    assert state.last_reply is not None and state.last_reply.text.startswith("Added the entry")
    assert state.compaction is not None and state.compaction.summary.startswith("Summary so far")

    # apply_patch without patch_apply_end: delete, move and add; shell rm / git mv from the shared reader.
    changes = {(e.path, e.operation, e.renamed_from) for e in _of(events, ev.FileChanged)}
    assert changes == {
        ("/work/tt/docs/old.md", "deleted", None),
        ("/work/tt/src/arith.py", "renamed", "/work/tt/src/calc.py"),
        ("/work/tt/tests/test_arith.py", "created", None),
        ("/work/tt/notes.txt", "deleted", None),
        ("/work/tt/README.md", "renamed", "/work/tt/README.txt"),
    }
    tests = [(t.outcome, t.passed, t.failed) for t in _of(events, ev.TestResult)]
    assert tests == [("failed", 2, 1), ("passed", 3, 0)]
    commands = [(c.shell, c.exit_code) for c in _of(events, ev.CommandRan)]
    assert ("pytest -q", 1) in commands and not any(shell.startswith("tox") for shell, _ in commands)

    # A declined exec, then an interrupted turn: each following prompt is a correction naming what it corrects.
    corrections = _of(events, ev.CorrectionMade)
    assert [c.text for c in corrections] == [
        "use make test for the suite, tox is not set up here",
        "the CHANGELOG lives in docs/CHANGELOG.md",
    ]
    assert "tox -e all" in (corrections[0].wrong or "") and "make test" in (corrections[1].wrong or "")
    assert [e.text for e in _of(events, ev.RequirementStated)] == [
        "Fix add() in src/calc.py so the tests pass",
        "Now add a CHANGELOG entry and run the full suite",
    ]


def test_every_imported_event_keeps_its_records_time(home: Path, ledger: Ledger) -> None:
    _import(home, TURNS)
    events = _events(ledger)
    times = _times(TURNS)
    assert all(e.timestamp in times for e in events[1:]), [
        (type(e).__name__, e.timestamp) for e in events[1:] if e.timestamp not in times
    ]
    (link,) = _of(events, ev.ConversationLinked)
    assert link.timestamp == min(times) and link.session_id == SESSION
    assert all(e.source is not None for e in events[1:])


def test_reimport_adds_nothing_and_a_grown_rollout_only_its_new_records(
    home: Path, ledger: Ledger, tmp_path: Path
) -> None:
    lines = TURNS.read_text().splitlines(keepends=True)
    rollout = tmp_path / "rollout-2026-03-02T09-00-00-33333333.jsonl"
    cut = next(i for i, raw in enumerate(lines) if '"turn_aborted"' in raw) - 1  # mid-turn, before the abort
    rollout.write_text("".join(lines[:cut]))
    first = _import(home, rollout)
    assert _import(home, rollout)["events_total"] == 0
    before = ledger.state(ledger.task_id(1)).last_reply
    assert before is not None and before.text.startswith("Fixed add()")
    rollout.write_text("".join(lines))  # `codex resume` appends to the same file
    grown = _import(home, rollout)
    assert grown["tasks"] == first["tasks"] and grown["new_tasks"] == 0
    assert grown["events"].get("CommandRan", 0) == 0  # the commands were all in the first part
    assert grown["events"]["CorrectionMade"] == 2 and grown["events"]["AgentReplied"] == 2
    # The same records under another file name add nothing: keys do not depend on the file.
    assert _import(home, TURNS, extra=("--task", "1"))["events_total"] == 0
    sources = [e.source for e in _events(ledger) if e.source is not None]
    assert len(sources) == len(set(sources))


def test_a_fork_joins_the_task_it_continues_and_adds_only_its_own_facts(home: Path, ledger: Ledger) -> None:
    data = _import(home, FORK, TURNS)  # either order on the command line: earlier sessions go first
    assert data["new_tasks"] == 1 and len(data["tasks"]) == 1
    events = _events(ledger)
    assert {c.session_id for c in _of(events, ev.ConversationLinked)} == {
        SESSION,
        "44444444-dddd-7eee-8fff-000000000004",
    }
    # The history the fork copied is not recorded twice.
    assert Counter(c.shell for c in _of(events, ev.CommandRan)) == Counter(
        {"pytest -q": 3, "rm -f notes.txt && git mv README.txt README.md": 1}
    )
    assert [e.text for e in _of(events, ev.RequirementStated)][-1] == "Also add a subtract() next to add()"
    assert sum(e.text.startswith("Fix add()") for e in _of(events, ev.RequirementStated)) == 1
    assert _of(events, ev.AgentReplied)[-1].text.tail == "Added subtract(); 4 tests pass."


def test_a_fork_imported_first_takes_in_the_session_it_came_from(home: Path, ledger: Ledger) -> None:
    _import(home, FORK)
    later = _import(home, TURNS)
    assert later["new_tasks"] == 0 and [t["number"] for t in later["tasks"]] == [1]
    assert later["events"].get("TestResult", 0) == 0  # both test runs came with the fork's copy
    assert later["events"]["CorrectionMade"] == 2


def test_patch_files_reads_moves_deletes_and_adds() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b/a.py\n@@\n-x\n+y\n"
        "*** Delete File: c.txt\n*** Add File: d.md\n+hi\n*** Update File: e.py\n@@\n-1\n+2\n*** End Patch"
    )
    assert [(op, path, old) for op, path, old, _ in patch_files(patch)] == [
        ("renamed", "b/a.py", "a.py"),
        ("deleted", "c.txt", None),
        ("created", "d.md", None),
        ("modified", "e.py", None),
    ]


def test_desktop_prompt_wrapper_and_polled_exec_without_end_event() -> None:
    records = [
        {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}},
        {
            "timestamp": "2026-01-01T00:00:01Z",
            "type": "event_msg",
            "payload": {
                "type": "user_message",
                "message": (
                    "\n# Files mentioned by the user:\n\n## a.vtt: /tmp/a.vtt\n\n"
                    "## My request for Codex:\nsummarise it\n"
                ),
            },
        },
        {
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd": "npm test"}',
                "call_id": "c1",
            },
        },
        {
            "timestamp": "2026-01-01T00:00:03Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Process running with session ID 9\n",
            },
        },
        {
            "timestamp": "2026-01-01T00:00:04Z",
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "write_stdin",
                "arguments": '{"session_id": 9}',
                "call_id": "c2",
            },
        },
        {
            "timestamp": "2026-01-01T00:00:09Z",
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "c2",
                "output": "Process exited with code 1\nTests: 1 failed, 4 passed, 5 total",
            },
        },
    ]
    session = map_rollout(enumerate((json.dumps(r) for r in records), 1), "x")
    prompts = [f for cls, f in session.items if cls is ev.RequirementStated]
    assert [p["text"] for p in prompts] == ["summarise it"] and session.title == "summarise it"
    (command,) = [f for cls, f in session.items if cls is ev.CommandRan]
    assert command["shell"] == "npm test" and command["exit_code"] == 1 and command["source"].record == "c1"
    assert command["timestamp"] == "2026-01-01T00:00:09Z"  # when it finished


# -- the real rollouts (../shared/fixtures), general properties ------------------------------------------


def _real(synthetic: bool = False) -> Any:
    """The rollouts in ../shared/fixtures/codex; SYNTHETIC-* only when asked (its ids and times are trimmed)."""
    root = SHARED / "fixtures" / "codex"
    files = (
        sorted(p for p in root.glob("*.jsonl") if synthetic or not p.name.startswith("SYNTHETIC-"))
        if root.is_dir()
        else []
    )
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/fixtures/codex is absent"))]
    return [pytest.param(p, id=p.stem) for p in files]


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_text().splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _map(path: Path) -> Any:
    return map_rollout(enumerate(path.read_text().splitlines(), 1), path.name.removesuffix(".jsonl"), str(path))


@pytest.mark.parametrize("path", _real())
def test_real_rollout_mapping_is_deterministic_keyed_and_timed(path: Path) -> None:
    first, again = _map(path), _map(path)
    assert first.items == again.items and first.references == again.references
    keys = [(f["source"].session, f["source"].record) for _, f in first.items]
    assert len(keys) == len(set(keys)), [k for k, n in Counter(keys).items() if n > 1]
    stamps = {r.get("timestamp") for r in _records(path)}
    assert all(f.get("timestamp") in stamps for _, f in first.items)
    assert first.first_timestamp and first.session_id and first.cwd


@pytest.mark.parametrize("path", _real(synthetic=True))
def test_real_rollout_replies_compactions_and_patches(path: Path) -> None:
    records = _records(path)
    session = _map(path)
    items = [(cls, f) for cls, f in session.items]
    replies = [f["text"].tail for cls, f in items if cls is ev.AgentReplied]
    assistant = [
        "\n".join(c.get("text", "") for c in r["payload"].get("content") or [] if isinstance(c, dict))
        for r in records
        if r.get("type") == "response_item"
        and r["payload"].get("type") == "message"
        and r["payload"].get("role") == "assistant"
    ]
    assistant = [a for a in assistant if a.strip()]
    if assistant:  # the rollout's last words are where it stopped
        assert replies and replies[-1] == assistant[-1].strip()[-len(replies[-1]) :]
    finals = [
        r["payload"]["last_agent_message"]
        for r in records
        if r.get("type") == "event_msg"
        and r["payload"].get("type") == "task_complete"
        and isinstance(r["payload"].get("last_agent_message"), str)
        and r["payload"]["last_agent_message"].strip()
    ]
    for final in finals:  # every finished turn's closing message is recorded
        assert any(final.strip().endswith(reply) for reply in replies)
    prompts = sum(1 for r in records if r.get("type") == "event_msg" and r["payload"].get("type") == "user_message")
    assert len(replies) <= prompts + 1
    compacted = sum(1 for r in records if r.get("type") == "compacted")
    assert sum(cls is ev.ContextCompacted for cls, _ in items) == compacted
    assert all(
        f["summary"] is None or len(f["summary"].tail.encode()) <= 12000
        for cls, f in items
        if cls is ev.ContextCompacted
    )
    changes = sum(
        len(r["payload"].get("changes") or {})
        for r in records
        if r.get("type") == "event_msg"
        and r["payload"].get("type") == "patch_apply_end"
        and r["payload"].get("success")
    )
    patched = sum(1 for cls, f in items if cls is ev.FileChanged and "#fs" not in f["source"].record)
    assert patched == changes


@pytest.mark.parametrize("path", _real())
def test_real_rollout_imports_once_with_source_times(path: Path, ledger: Ledger, location: Location) -> None:
    report = import_files(ledger, location, "codex", [path])
    assert not report.skipped, report.skipped
    (number,) = report.tasks
    again = import_files(ledger, location, "codex", [path])
    assert sum(again.events.values()) == 0 and list(again.tasks) == [number]
    events = _events(ledger, number)
    times = _times(path)
    assert all(e.timestamp in times for e in events[1:])
    state = ledger.state(ledger.task_id(number))
    if any(isinstance(e, ev.AgentReplied) for e in events):
        assert state.last_reply is not None
