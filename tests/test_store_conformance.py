"""The ``LedgerStore`` contract: one body of checks that every backend runs.

As the library's ``*RecorderTestCase`` classes (``eventsourcing.tests.persistence``) check each
recorder, ``LedgerStoreContract`` checks each store through the interface alone. It is abstract:
a backend subclasses it, saying how to make a new empty ledger there and how to remove one
(``create``, ``remove``) and which store class it must get (``store_class``); the ``ledger`` and
``new_store`` fixtures and every check come with it. ``TestSQLiteStore`` and ``TestPostgresStore``,
at the end, are its two uses; docs/backends.md says how a third backend plugs in. A new backend
passes it or is not done.
"""

from __future__ import annotations

import io
import shutil
import sqlite3
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from ledger.app import archive
from ledger.app.store import Ledger, open_ledger
from ledger.base.location import resolve
from ledger.base.schema import LINKED_SESSION_SQL, LINKS_INDEX, SOURCES, key_hash
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from ledger.domain.registry import REGISTRY_ID
from ledger.stores import LedgerStore, archived, store_class
from ledger.stores.base import GC_TOPICS, Archive
from ledger.stores.postgres import PostgresStore
from ledger.stores.sqlite import SQLiteStore
from projections.state import FOLD_VERSION
from tests.conftest import POSTGRES_URL, drop_schemas, with_schema


def _task(ledger: Ledger, title: str, notes: int, session: str | None = None) -> UUID:
    task = ledger.open_task(title).id
    assert task is not None
    items: list[tuple[type[ev.TaskEvent], dict[str, object]]] = []
    if session is not None:
        items.append((ev.ConversationLinked, {"agent": "claude-code", "session_id": session, "actor": "system",
                                              "source": ev.SourceKey(agent="claude-code", session=session,
                                                                     record="link")}))
    items += [(ev.NoteAdded, {"text": f"note {n} " + "x" * 200,
                              "source": ev.SourceKey(agent="claude-code", session=session or "s", record=f"r{n}")})
              for n in range(notes)]
    ledger.append_many(task, items)
    return task


def _closed_task(new_store: Callable[[], str], notes: int) -> tuple[str, UUID]:
    """A new ledger holding one task of ``notes`` notes linked to session s1, closed: what an older ledger is
    before a test takes its index away."""
    url = new_store()
    first = open_ledger(resolve(url))
    try:
        return url, _task(first, "old", notes, session="s1")
    finally:
        first.close()


def _rows(ledger: Ledger, task: UUID) -> list[StoredEvent]:
    return list(ledger.recorder.select_events(task))


class LedgerStoreContract(ABC):
    """The checks every ``LedgerStore`` passes; subclass it once per backend (pytest collects ``Test*``)."""

    store_class: type[LedgerStore]
    """What ``Ledger.store`` and ``store_class`` must give for a ledger made by ``create``."""

    @abstractmethod
    def create(self) -> str:
        """The URL of a new, empty ledger on this backend (nothing need exist there yet)."""

    @abstractmethod
    def remove(self, url: str) -> None:
        """Remove whatever a test left at ``url`` (a ``create`` of this instance)."""

    @pytest.fixture
    def new_store(self) -> Iterator[Callable[[], str]]:
        """Makes new empty ledgers (``create``), all removed after the test."""
        made: list[str] = []

        def make() -> str:
            made.append(self.create())
            return made[-1]

        yield make
        for url in made:
            self.remove(url)

    @pytest.fixture
    def ledger(self, new_store: Callable[[], str]) -> Iterator[Ledger]:
        opened = open_ledger(resolve(new_store()))
        assert type(opened.store) is self.store_class
        yield opened
        opened.close()

    # -- archives -----------------------------------------------------------------------

    def test_archives_are_empty_until_a_compaction_records_one(self, ledger: Ledger) -> None:
        task = _task(ledger, "archive me", 30)
        store = ledger.store
        assert store.archives(task) == [] and store.archives(None) == []
        assert store.range_size(task, 1, 20)[0] == 20
        found = store.read_range(task, 1, 20)
        assert [e.originator_version for _, e in found.events] == list(range(1, 21))
        ids = [n for n, _ in found.events]
        assert ids == sorted(ids) and len(set(ids)) == 20
        assert [e.state for _, e in found.events] == [e.state for e in _rows(ledger, task)[:20]]

        done = archive.compact(ledger, task, 21)
        [listed] = store.archives(task)
        assert listed == done and store.archives(None) == [done]
        assert listed.path.is_file() and archived.check_file(listed) is None
        assert [e.originator_version for e in _rows(ledger, task)] == list(range(21, 33))  # + the marker
        assert [s for _, s in archived.archived_rows(listed, -1)] == [e for _, e in found.events]
        assert store.range_size(task, 1, 20)[0] == 0

    def test_time_travel_into_an_archive_folds_from_its_nearest_view(self, new_store: Callable[[], str]) -> None:
        # Read by a fresh ledger, latest point first, so no view held in memory answers: the count of events
        # folded is what the archive's views save (an archive written without them folds from the start).
        url = new_store()
        with open_ledger(resolve(url)) as ledger:
            kept, bare = _task(ledger, "with views", 40), _task(ledger, "as before", 40)
            before = {task: {p: ledger.state(task, at=p) for p in range(1, 31)} for task in (kept, bare)}
            archive.compact(ledger, kept, 31, views_every=8)
            archive.compact(ledger, bare, 31, views_every=0)
        with open_ledger(resolve(url)) as fresh:
            assert archived.archived_view(fresh, kept, 20, FOLD_VERSION)[0] == 16  # type: ignore[index]
            assert archived.archived_view(fresh, kept, 20, FOLD_VERSION + 1) is None  # another fold's: none
            assert archived.archived_view(fresh, bare, 20, FOLD_VERSION) is None
            for task, nearest in ((kept, lambda p: p // 8 * 8), (bare, lambda p: 0)):
                for position in range(29, 0, -1):
                    folded = fresh.views.folded
                    assert fresh.state(task, at=position) == before[task][position]
                    assert fresh.views.folded - folded == position - nearest(position), (task, position)
            assert fresh.store.view_snapshot(kept, 29, FOLD_VERSION) is None  # the reads kept none live
            assert archive.verify(fresh, kept) == [] and archive.verify(fresh, bare) == []

    def test_commit_archive_is_all_or_nothing_and_once(self, ledger: Ledger, tmp_path: Path) -> None:
        task = _task(ledger, "twice", 10)
        found = store_range = ledger.store.read_range(task, 1, 5)
        path = ledger.store.archive_dir() / "task-x-1-5.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not really parquet")
        record = Archive(task, 1, 5, path, "0" * 64, "head", 5)
        snapshot = StoredEvent(task, 5, "tasktrail/TaskSnapshot", b"{}")
        taken = StoredEvent(task, 11, "tasktrail/NoteAdded", _rows(ledger, task)[-1].state)

        def boom() -> None:
            raise RuntimeError("dies before the commit")

        with pytest.raises(RuntimeError):
            ledger.store.commit_archive(record, snapshot, StoredEvent(task, 12, "t", b"{}"), boom)
        assert ledger.store.archives(task) == [] and len(_rows(ledger, task)) == 11
        with pytest.raises(IntegrityError):  # another writer holds position 11: the caller retries
            ledger.store.commit_archive(record, snapshot, taken, lambda: None)
        assert ledger.store.archives(task) == [] and len(_rows(ledger, task)) == 11
        marker = StoredEvent(task, 12, "tasktrail/NoteAdded", taken.state)
        assert ledger.store.commit_archive(record, snapshot, marker, lambda: None) is True
        assert [e.originator_version for e in _rows(ledger, task)] == [6, 7, 8, 9, 10, 11, 12]
        assert ledger.store.commit_archive(record, snapshot, marker, lambda: None) is False
        assert len(store_range.events) == len(found.events) == 5

    def test_put_archive_records_a_copied_archive(self, ledger: Ledger) -> None:
        task = _task(ledger, "copied", 3)
        path = ledger.store.archive_dir() / "task-9-1-2.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"bytes of an archive")
        ledger.store.put_archive(Archive(task, 1, 2, path, "a" * 64, "h", 2))
        [listed] = ledger.store.archives(task)
        assert (listed.first, listed.last, listed.sha256, listed.path.read_bytes()) == (
            1, 2, "a" * 64, b"bytes of an archive")

    # -- snapshots of the view -------------------------------------------------------------

    def test_view_snapshots_are_kept_per_fold_version_and_found_at_or_before_a_position(self, ledger: Ledger) -> None:
        task, other = _task(ledger, "views", 3), _task(ledger, "other", 1)
        assert ledger.store.view_snapshot(task, None, 1) is None  # none yet (on an older ledger, no table yet)
        ledger.store.put_view_snapshot(task, 2, 1, b"at two")
        ledger.store.put_view_snapshot(task, 4, 1, b"at four")
        ledger.store.put_view_snapshot(task, 4, 2, b"another fold at four")
        ledger.store.put_view_snapshot(other, 2, 1, b"the other task")
        assert ledger.store.view_snapshot(task, None, 1) == (4, b"at four")
        assert ledger.store.view_snapshot(task, 3, 1) == (2, b"at two")
        assert ledger.store.view_snapshot(task, 1, 1) is None
        assert ledger.store.view_snapshot(task, None, 2) == (4, b"another fold at four")
        ledger.store.put_view_snapshot(task, 4, 1, b"at four, again")  # replaced, not a second row
        assert ledger.store.view_snapshot(task, 4, 1) == (4, b"at four, again")
        assert ledger.store.drop_view_snapshots(task, 3) == 2  # both folds' rows from position 3 on
        assert ledger.store.view_snapshot(task, None, 1) == (2, b"at two")
        assert ledger.store.view_snapshot(task, None, 2) is None
        assert ledger.store.view_snapshot(other, None, 1) == (2, b"the other task")

    def test_deleting_or_rewriting_a_task_drops_its_view_snapshots(self, ledger: Ledger) -> None:
        task, other = _task(ledger, "forgotten views", 3, session="s-views"), _task(ledger, "kept", 1)
        for position in (2, 4):
            ledger.store.put_view_snapshot(task, position, 1, b"view")
        ledger.store.put_view_snapshot(other, 2, 1, b"kept view")
        ledger.store.delete_task(task, 1, [], lambda raw: None)
        assert ledger.store.view_snapshot(task, None, 1) is None
        assert ledger.store.view_snapshot(other, None, 1) == (2, b"kept view")

        gc = ledger.open_task("gc views").id
        assert gc is not None
        ledger.append_many(gc, [(ev.NoteAdded, {"text": "n"}),
                                (ev.CommandRan, {"shell": "make", "exit_code": 0, "stdout": bound("out " * 50)})])
        for position in (2, 3):
            ledger.store.put_view_snapshot(gc, position, 1, b"holds the output")
        ledger.store.rewrite_states(gc, GC_TOPICS, lambda raw: raw, dry_run=False)
        assert ledger.store.view_snapshot(gc, None, 1) == (2, b"holds the output")  # before the rewritten event

    # -- rewriting and deleting -----------------------------------------------------------

    def test_rewrite_states_changes_only_what_it_is_told_and_drops_later_snapshots(self, ledger: Ledger) -> None:
        task = ledger.open_task("gc").id
        assert task is not None
        for i in range(4):
            ledger.append(task, ev.CommandRan, shell=f"make {i}", exit_code=0, stdout=bound("out " * 500))
        ledger.append(task, ev.NoteAdded, text="kept")
        ledger.take_snapshot(task)
        before = _rows(ledger, task)
        assert ledger.snapshots is not None and list(ledger.snapshots.get(task))

        def shorten(raw: bytes) -> bytes | None:
            state = orjson.loads(raw)
            if state["shell"] == "make 0":
                return None
            state["stdout"]["tail"] = ""
            return orjson.dumps(state)

        assert ledger.store.rewrite_states(task, GC_TOPICS, shorten, dry_run=True) == {task: 6}
        assert _rows(ledger, task) == before
        assert ledger.store.rewrite_states(task, GC_TOPICS, shorten, dry_run=False) == {task: 6}
        after = _rows(ledger, task)
        assert [orjson.loads(r.state).get("stdout", {}).get("tail", "x") == "" for r in after] == [
            False, False, True, True, True, False]
        assert list(ledger.snapshots.get(task)) == []  # the snapshot at 6 held the old outputs
        assert ledger.store.rewrite_states(None, ["tasktrail/NoSuchTopic"], shorten, dry_run=False) == {}

    def test_delete_task_keeps_a_tombstone_of_its_keys_and_nothing_else(self, ledger: Ledger) -> None:
        keep = _task(ledger, "keep", 3, session="s-keep")
        gone = _task(ledger, "gone", 40, session="s-gone")
        archive.compact(ledger, gone, 10)
        ledger.take_snapshot(REGISTRY_ID)
        hashes = {key_hash(("claude-code", "s-gone", f"r{n}")) for n in range(40)}

        def retitle(raw: bytes) -> bytes | None:
            state = orjson.loads(raw)
            if state["entry"]["number"] != 2:
                return None
            state["entry"]["title"] = "[forgotten]"
            return orjson.dumps(state)

        deleted = ledger.store.delete_task(gone, 2, hashes, retitle)
        assert deleted == 42 - 9 + 1  # live: opened, link and notes past the archive, plus the marker
        assert _rows(ledger, gone) == [] and ledger.store.archives(gone) == []
        assert ledger.snapshots is not None
        assert list(ledger.snapshots.get(gone)) == [] and list(ledger.snapshots.get(REGISTRY_ID)) == []
        titles = [orjson.loads(r.state)["entry"]["title"] for r in _rows(ledger, REGISTRY_ID)
                  if r.topic == "tasktrail/TaskRegistered"]
        assert titles == ["keep", "[forgotten]"]
        assert len(_rows(ledger, keep)) == 5
        assert ledger.store.forgotten([*hashes, key_hash(("claude-code", "s-keep", "r0"))]) == dict.fromkeys(hashes, 2)
        assert ledger.store.tombstoned_keys() == dict.fromkeys(hashes, 2)
        assert ledger.store.delete_task(gone, 2, hashes, retitle) == 0  # a re-run finds nothing left

    def test_tombstone_keys_are_kept_once(self, ledger: Ledger) -> None:
        assert ledger.store.forgotten([]) == {} and ledger.store.tombstoned_keys() == {}
        ledger.store.tombstone_keys({"a" * 64: 3, "b" * 64: 4})
        ledger.store.tombstone_keys({"a" * 64: 3})
        assert ledger.store.tombstoned_keys() == {"a" * 64: 3, "b" * 64: 4}
        assert ledger.store.forgotten(["b" * 64, "c" * 64]) == {"b" * 64: 4}

    # -- the capture index ------------------------------------------------------------------

    def test_held_keys_up_to_a_position(self, ledger: Ledger) -> None:
        task = _task(ledger, "keys", 5, session="s1")
        other = _task(ledger, "other", 5, session="s2")
        ledger.append(task, ev.NoteAdded, text="no source")
        asked = {("claude-code", "s1", "link"), ("claude-code", "s1", "r3"), ("claude-code", "s2", "r3"),
                 ("codex", "s1", "r3"), ("claude-code", "s1", "nope")}
        assert ledger.store.held_keys(task, 2, asked) == {("claude-code", "s1", "link")}
        assert ledger.store.held_keys(task, 100, asked) == {("claude-code", "s1", "link"), ("claude-code", "s1", "r3")}
        assert ledger.store.held_keys(other, 100, asked) == {("claude-code", "s2", "r3")}
        assert ledger.store.held_keys(task, 100, []) == set()
        many = [("claude-code", "s1", f"r{n}") for n in range(-1500, 5)]  # past any bound on a statement's parameters
        assert ledger.store.held_keys(task, 100, many) == {("claude-code", "s1", f"r{n}") for n in range(5)}

    def test_session_records_of_a_prefix(self, ledger: Ledger) -> None:
        task = _task(ledger, "records", 0, session="s1")
        keys = ["prompt:ab:0", "prompt:ab:1", "prompt;", "promptx", "task:1:done:0", "prompt:"]
        ledger.append_many(task, [(ev.NoteAdded, {"text": k, "source": ev.SourceKey(
            agent="claude-code", session="s1", record=k)}) for k in keys])
        ledger.append(task, ev.NoteAdded, text="other session", source=ev.SourceKey(
            agent="claude-code", session="s2", record="prompt:cd:0"))
        ledger.append(task, ev.NoteAdded, text="other agent", source=ev.SourceKey(
            agent="codex", session="s1", record="prompt:ef:0"))
        other = _task(ledger, "other", 0, session="s1")
        ledger.append(other, ev.NoteAdded, text="other task", source=ev.SourceKey(
            agent="claude-code", session="s1", record="prompt:gh:0"))
        assert ledger.store.session_records(task, 100, "claude-code", "s1", "prompt:") == {
            "prompt:ab:0", "prompt:ab:1", "prompt:"}
        assert ledger.store.session_records(task, 3, "claude-code", "s1", "prompt:") == {"prompt:ab:0"}
        assert ledger.store.session_records(task, 100, "claude-code", "s1", "task:") == {"task:1:done:0"}
        assert ledger.store.session_records(task, 100, "codex", "s1", "prompt:") == {"prompt:ef:0"}
        assert ledger.store.session_records(task, 100, "claude-code", "s3", "prompt:") == set()

    def test_the_capture_index_follows_compaction_collection_and_forget(self, ledger: Ledger) -> None:
        # Each rewrite of the events leaves the index answering as a read of the events would.
        task = _task(ledger, "rewritten", 40, session="s1")
        gone = _task(ledger, "forgotten", 3, session="s2")
        ledger.append(task, ev.CommandRan, argv=["make"], cwd="/w", exit_code=0, duration_ms=1,
                      stdout=bound("out " * 500), source=ev.SourceKey(agent="claude-code", session="s1", record="cmd"))
        everything = {("claude-code", "s1", r) for r in ["link", "cmd", *(f"r{n}" for n in range(40))]}
        archive.compact(ledger, task, 21)  # positions 1..20: the opening, the link, r0..r17
        assert self._consistent(ledger, task, everything) == everything - {
            ("claude-code", "s1", r) for r in ["link", *(f"r{n}" for n in range(18))]}
        ledger.store.rewrite_states(task, GC_TOPICS, lambda raw: raw.replace(b"out ", b"OUT "), dry_run=False)
        assert ("claude-code", "s1", "cmd") in self._consistent(ledger, task, everything)
        ledger.store.delete_task(gone, 2, [], lambda _: None)
        assert self._consistent(ledger, gone, {("claude-code", "s2", "r1")}) == set()
        assert ledger.store.task_for_records("claude-code", ["r1", "r30"]) == task
        assert ledger.store.task_for_records("claude-code", ["r1"]) is None  # r1 of both: archived and forgotten

    @staticmethod
    def _consistent(ledger: Ledger, task: UUID, keys: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
        """``held_keys`` of ``keys``, checked against a read of the events (the index's answer without it)."""
        held = ledger.store.held_keys(task, 10**6, keys)
        assert held == ledger.store._source_keys(task, 10**6) & keys
        return held

    def test_a_ledger_from_before_the_capture_index_gets_it_on_open(self, new_store: Callable[[], str]) -> None:
        url, task = _closed_task(new_store, 3)
        self._drop_sources(url)
        again = open_ledger(resolve(url))
        try:
            assert again.store._indexed()
            assert again.store.held_keys(task, 100, [("claude-code", "s1", "r1"), ("claude-code", "s1", "r9")]) == {
                ("claude-code", "s1", "r1")}
            assert again.store.session_records(task, 100, "claude-code", "s1", "r") == {"r0", "r1", "r2"}
            assert again.store.task_for_records("claude-code", ["link"]) == task
        finally:
            again.close()

    def test_a_hook_leaves_the_capture_index_of_a_large_older_ledger_to_a_command(
        self, new_store: Callable[[], str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # As for the link index: until it is built every question reads the events, and what is written
        # meanwhile is in the index once a command builds it.
        from ledger.base import upkeep

        url, task = _closed_task(new_store, 6)
        self._drop_sources(url)
        monkeypatch.setattr(upkeep, "BOUNDED_ROWS", 5)
        monkeypatch.setattr(upkeep, "deferring", True)
        hooked = open_ledger(resolve(url))
        try:
            assert not hooked.store._indexed()
            assert hooked.store.held_keys(task, 100, [("claude-code", "s1", "r5")]) == {("claude-code", "s1", "r5")}
            assert hooked.store.task_for_records("claude-code", ["r5"]) == task
            hooked.append(task, ev.NoteAdded, text="while deferred",
                          source=ev.SourceKey(agent="claude-code", session="s1", record="late"))
            monkeypatch.setattr(upkeep, "deferring", False)
            command = open_ledger(resolve(url))
            try:
                assert command.store._indexed()
                # The hook's ledger, open since before the build, writes the index's rows from now on.
                hooked.append(task, ev.NoteAdded, text="after the build",
                              source=ev.SourceKey(agent="claude-code", session="s1", record="later"))
                keys = {("claude-code", "s1", r) for r in ("r5", "late", "later", "never")}
                assert self._consistent(command, task, keys) == keys - {("claude-code", "s1", "never")}
            finally:
                command.close()
        finally:
            hooked.close()

    @abstractmethod
    def _drop_sources(self, url: str) -> None:
        """Make the ledger at ``url`` one from before the capture index (``schema.SOURCES``)."""

    def test_session_lookup_takes_the_newest_link(self, ledger: Ledger) -> None:
        assert ledger.store.task_for_session("claude-code", "s1") is None
        first = _task(ledger, "first", 1, session="s1")
        assert ledger.store.task_for_session("claude-code", "s1") == first
        second = _task(ledger, "second", 1, session="s1")
        assert ledger.store.task_for_session("claude-code", "s1") == second
        assert ledger.store.task_for_session("codex", "s1") is None

    def test_record_lookup(self, ledger: Ledger) -> None:
        task = _task(ledger, "records", 3, session="s1")
        assert ledger.store.task_for_records("claude-code", ["nope", "r2"]) == task
        assert ledger.store.task_for_records("claude-code", ["nope"]) is None
        assert ledger.store.task_for_records("codex", ["r2"]) is None
        assert ledger.store.task_for_records("claude-code", []) is None

    # -- space --------------------------------------------------------------------------------

    def test_reclaim_space_gives_the_bytes_of_deleted_rows_back(self, ledger: Ledger) -> None:
        big = ledger.open_task("big").id
        assert big is not None
        for start in range(0, 2000, 500):
            ledger.append_many(big, [(ev.NoteAdded, {"text": f"{n} " + "y" * 1500}) for n in range(start, start + 500)])
        ledger.store.reclaim_space()
        full = ledger.store.file_bytes()
        assert full is not None and full > 2000 * 1500
        ledger.store.delete_task(big, 1, [], lambda _: None)
        ledger.store.reclaim_space(scrub=True)
        after = ledger.store.file_bytes()
        assert after is not None and after < full / 3

    # -- whole ledgers ---------------------------------------------------------------------------

    def test_stage_publish_and_discard(self, new_store: Callable[[], str]) -> None:
        target = resolve(new_store())
        kind = store_class(target)
        assert kind is self.store_class and not kind.exists(target)
        staging = kind.stage(target)
        with open_ledger(staging) as built:
            _task(built, "staged", 2)
        assert kind.exists(staging) and not kind.exists(target)
        kind.discard(staging)
        assert not kind.exists(staging) and not kind.exists(target)

        staging = kind.stage(target)
        with open_ledger(staging) as built:
            task = _task(built, "published", 2)
            archive.compact(built, task, 3)
        kind.publish(staging, target)
        assert kind.exists(target) and not kind.exists(staging)
        with open_ledger(target, create="nothing") as ledger:
            assert [e.title for e in ledger.entries()] == ["published"]
            assert ledger.state(task, at=1).title == "published"  # from the archive, moved along
            assert archive.verify(ledger, task) == []

        # Publishing again replaces the ledger there, whole.
        staging = kind.stage(target)
        with open_ledger(staging) as built:
            _task(built, "replacement", 1)
        kind.publish(staging, target)
        with open_ledger(target, create="nothing") as ledger:
            assert [e.title for e in ledger.entries()] == ["replacement"]
            assert ledger.store.archives(None) == []


class TestSQLiteStore(LedgerStoreContract):
    store_class = SQLiteStore

    def create(self) -> str:
        return f"sqlite:{Path(tempfile.mkdtemp(prefix='store-')) / 'ledger.db'}"

    def remove(self, url: str) -> None:
        shutil.rmtree(resolve(url).sqlite_path.parent, ignore_errors=True)

    def _drop_sources(self, url: str) -> None:
        with sqlite3.connect(resolve(url).sqlite_path) as con:
            con.execute(f"DROP TABLE {SOURCES}")

    def test_session_lookup_reads_the_link_index_not_the_table(self, ledger: Ledger) -> None:
        # A session never linked (each new session's SessionStart) must not read every row of a large ledger.
        task = _task(ledger, "linked", 3, session="s1")
        assert isinstance(ledger.store, SQLiteStore)
        with sqlite3.connect(ledger.store.path) as con:
            plan = " ".join(str(row[-1]) for row in con.execute(
                f"EXPLAIN QUERY PLAN {LINKED_SESSION_SQL}", ("claude-code", "never")))
            assert f"USING INDEX {LINKS_INDEX}" in plan, plan
            assert con.execute(LINKED_SESSION_SQL, ("claude-code", "s1")).fetchone() == (task.hex,)

    def test_a_ledger_from_before_the_link_index_gets_it_on_open(self, new_store: Callable[[], str]) -> None:
        url, task = _closed_task(new_store, 1)
        path = resolve(url).sqlite_path
        with sqlite3.connect(path) as con:
            con.execute(f"DROP INDEX {LINKS_INDEX}")
        again = open_ledger(resolve(url))
        try:
            with sqlite3.connect(path) as con:
                assert con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LINKS_INDEX,)).fetchone()
            assert again.store.task_for_session("claude-code", "s1") == task
        finally:
            again.close()

    def test_a_view_snapshot_lookup_reads_a_range_of_the_key(self, ledger: Ledger) -> None:
        # Time travel to an early point of a long task: a bound the index cannot range over read every later view
        # snapshot (each a task's whole view) to find the one below the point.
        from ledger.stores.sqlite import VIEW_AT

        task = _task(ledger, "views", 3)
        for position in (1, 2, 3):
            ledger.store.put_view_snapshot(task, position, 1, b"view %d" % position)
        assert isinstance(ledger.store, SQLiteStore)
        with sqlite3.connect(ledger.store.path) as con:
            plan = " ".join(str(row[-1]) for row in con.execute(f"EXPLAIN QUERY PLAN {VIEW_AT}", (task.hex, 1, 2)))
        assert "position<?" in plan, plan
        assert ledger.store.view_snapshot(task, 2, 1) == (2, b"view 2")

    def test_a_hook_leaves_the_link_index_of_a_large_older_ledger_to_a_command(
        self, new_store: Callable[[], str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Built inside a hook, the one read of a large table could outlast the agent's timeout, be rolled back,
        # and start again in every hook after it.
        from ledger.base import upkeep
        from ledger.capture import detach, hook

        url, task = _closed_task(new_store, 6)
        path = resolve(url).sqlite_path

        def index_after_open() -> bool:
            with sqlite3.connect(path) as con:
                con.execute(f"DROP INDEX IF EXISTS {LINKS_INDEX}")
            opened = open_ledger(resolve(url))
            try:
                assert opened.store.task_for_session("claude-code", "s1") == task
            finally:
                opened.close()
            with sqlite3.connect(path) as con:
                return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LINKS_INDEX,)).fetchone() is not None

        def has_index() -> bool:
            with sqlite3.connect(path) as con:
                return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LINKS_INDEX,)).fetchone() is not None

        monkeypatch.setattr(upkeep, "BOUNDED_ROWS", 5)  # the ledger's few rows stand for a large one
        monkeypatch.setenv("TRAIL_DB", str(path))
        monkeypatch.setenv(detach.SWITCH, "off")  # no background drain: it would build the index, as a command
        with sqlite3.connect(path) as con:
            con.execute(f"DROP INDEX {LINKS_INDEX}")
        body = orjson.dumps({"session_id": "s2", "hook_event_name": "SessionStart", "source": "startup",
                             "cwd": str(path.parent)})
        assert hook.run(["claude-code"], io.BytesIO(body)) == 0  # it opens the ledger to find the session's task
        assert not has_index()
        assert not upkeep.deferring  # for the hook's call only: the process goes on as a command
        assert index_after_open()  # a command builds it
        monkeypatch.setattr(upkeep, "BOUNDED_ROWS", 10**9)
        monkeypatch.setattr(upkeep, "deferring", True)
        assert index_after_open()  # a hook on a small ledger too

    def test_a_link_row_that_is_not_json_is_not_refused_by_the_index(self, ledger: Ledger) -> None:
        # An enciphered ledger's rows are not JSON: json_extract in the index would raise and refuse the insert.
        _task(ledger, "plain", 1, session="s1")
        assert isinstance(ledger.store, SQLiteStore)
        with sqlite3.connect(ledger.store.path) as con:
            con.execute("INSERT INTO stored_events VALUES (?, 1, ?, ?)",
                        (uuid.uuid4().hex, ev.ConversationLinked.TOPIC, b"\x78\x9c not json"))


@pytest.mark.skipif(not POSTGRES_URL, reason="TRAIL_TEST_POSTGRES_URL is not set (.ci/run starts a server and sets it)")
class TestPostgresStore(LedgerStoreContract):
    store_class = PostgresStore

    def create(self) -> str:
        return with_schema(POSTGRES_URL, f"t_{uuid.uuid4().hex[:16]}")

    def remove(self, url: str) -> None:
        drop_schemas([resolve(url).postgres().schema])

    def _drop_sources(self, url: str) -> None:
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as con:
            con.execute(f'DROP TABLE "{resolve(url).postgres().schema}".{SOURCES}')

    def test_session_lookup_can_read_the_link_index(self, new_store: Callable[[], str]) -> None:
        # A session never linked must not need the whole table: the partial index serves the store's own query.
        from psycopg import sql

        from ledger.stores import postgres

        url = new_store()
        opened = open_ledger(resolve(url))
        try:
            task = _task(opened, "linked", 3, session="s1")
            schema = resolve(url).postgres().schema
            events = sql.Identifier(schema, postgres.EVENTS_TABLE)
            query = sql.SQL(postgres.LINKED_SESSION).format(events)
            with postgres.connect(resolve(url).postgres(), url) as conn:
                conn.execute("SET enable_seqscan = off")
                plan = " ".join(str(row[0]) for row in conn.execute(
                    sql.SQL("EXPLAIN ") + query, ("claude-code", "never")).fetchall())
                assert LINKS_INDEX in plan, plan
                assert conn.execute(query, ("claude-code", "s1")).fetchone()[0] == task
        finally:
            opened.close()

    def test_a_view_snapshot_lookup_reads_a_range_of_the_key(self, new_store: Callable[[], str]) -> None:
        from psycopg import sql

        from ledger.stores import postgres

        url = new_store()
        opened = open_ledger(resolve(url))
        try:
            task = _task(opened, "views", 3)
            for position in (1, 2, 3):
                opened.store.put_view_snapshot(task, position, 1, b"view %d" % position)
            schema = resolve(url).postgres().schema
            query = sql.SQL(postgres.VIEW_AT).format(sql.Identifier(schema, postgres.VIEWS))
            with postgres.connect(resolve(url).postgres(), url) as conn:
                conn.execute("SET enable_seqscan = off")
                plan = " ".join(str(row[0]) for row in conn.execute(sql.SQL("EXPLAIN ") + query,
                                                                   (task, 1, 2)).fetchall())
            assert 'AND ("position" <= ' in plan.split("Index Cond")[1], plan  # in the index's range, not a filter
            assert opened.store.view_snapshot(task, 2, 1) == (2, b"view 2")
        finally:
            opened.close()
