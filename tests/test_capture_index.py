"""The capture index (``schema.SOURCES``) beside the events: never out of step with them, whatever ends a write,
whichever way events arrive (the writer, a migration's copy), and nothing of it in clear on an enciphered ledger."""

from __future__ import annotations

import base64
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from ledger.app import migrate
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.base.schema import SOURCES
from ledger.capture import writer
from ledger.domain import events as ev
from tests.conftest import REPO

Key = tuple[str, str, str]


def _note(record: str, session: str = "s1") -> writer.Item:
    return ev.NoteAdded, {"text": f"note {record}", "source": ev.SourceKey(agent="codex", session=session,
                                                                           record=record)}


def _held(ledger: Ledger, task: UUID, keys: set[Key]) -> set[Key]:
    """``held_keys`` at the task's end, checked against a read of the events themselves."""
    end = ledger.state(task).position
    found = ledger.store.held_keys(task, end, keys)
    assert found == ledger.store._source_keys(task, end) & keys
    return found


APPEND = """
import sys
from ledger.app.store import open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
with open_ledger(resolve(sys.argv[1])) as ledger:
    task = ledger.task_id(1)
    ledger.append_many(task, [(ev.NoteAdded, {"text": "late", "source": ev.SourceKey(
        agent="codex", session="s1", record="late")})])
"""


def test_a_kill_between_the_events_and_their_keys_leaves_neither(new_store: Callable[[], str]) -> None:
    url = new_store()
    with open_ledger(resolve(url)) as ledger:
        task = ledger.open_task("crash").id
        assert task is not None
        ledger.append_many(task, [_note("a")])
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRAIL_CRASH_AT": "sources-insert"}
    killed = subprocess.run([sys.executable, "-c", APPEND, url], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # the crash point was reached
    keys = {("codex", "s1", "a"), ("codex", "s1", "late")}
    with open_ledger(resolve(url)) as ledger:
        assert [e.source.record for e in ledger.task_events(task) if e.source is not None] == ["a"]
        assert _held(ledger, task, keys) == {("codex", "s1", "a")}
    env.pop("TRAIL_CRASH_AT")
    subprocess.run([sys.executable, "-c", APPEND, url], env=env, check=True, timeout=120)
    with open_ledger(resolve(url)) as ledger:
        assert _held(ledger, task, keys) == keys


def test_a_migrated_ledger_answers_from_its_index(new_store: Callable[[], str], tmp_path: Path) -> None:
    # A migration copies rows through the recorder without the writer's keys: the recorder reads them itself.
    source = resolve(f"sqlite:{tmp_path / 'from.db'}")
    with open_ledger(source) as ledger:
        task = ledger.open_task("moved").id
        assert task is not None
        ledger.append_many(task, [_note(str(n)) for n in range(5)] + [_note("x", session="s2")])
    target = resolve(new_store())
    migrate.run(source, target, lambda _: None)
    with open_ledger(target, create="nothing") as ledger:
        assert ledger.store._indexed()
        assert _held(ledger, task, {("codex", "s1", "3"), ("codex", "s2", "x"), ("codex", "s2", "3")}) == {
            ("codex", "s1", "3"), ("codex", "s2", "x")}
        assert ledger.store.session_records(task, 100, "codex", "s1", "") == {str(n) for n in range(5)}
        assert ledger.store.task_for_records("codex", ["x"]) == task


def test_an_enciphered_ledger_keeps_no_key_in_clear_and_still_appends_each_once(tmp_path: Path) -> None:
    # A prompt's record is a hash of its text: beside enciphered events it would tell which text was typed.
    location = resolve(f"sqlite:{tmp_path / 'sealed.db'}")
    cipher = {"CIPHER_TOPIC": "eventsourcing.cryptography:AESCipher",
              "CIPHER_KEY": base64.b64encode(b"k" * 32).decode()}
    with open_ledger(location, cipher=cipher) as ledger:
        task, _ = writer.open_with(ledger, "sealed", [_note("prompt:abc:0"), _note("1")], cwd="/w",
                                   actor="agent:codex")
        done = writer.append_unseen(ledger, location, task, [_note("1"), _note("2"), _note("prompt:abc:1")])
        assert [fields["source"].record for _, fields in done.items] == ["2", "prompt:abc:1"]
        assert ledger.store.session_records(task, 100, "codex", "s1", "prompt:") == {"prompt:abc:0", "prompt:abc:1"}
        assert ledger.store.task_for_records("codex", ["2"]) == task
    with sqlite3.connect(location.sqlite_path) as con:
        assert con.execute(f"SELECT count(*) FROM {SOURCES}").fetchone() == (0,)
    for path in tmp_path.glob("sealed.db*"):
        assert b"prompt:abc" not in path.read_bytes()
