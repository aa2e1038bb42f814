"""The brief's view of a task (``projections.state.TaskState``): a projection of its events, with
snapshots of its own.

The Task aggregate keeps only what it decides with, so no append folds the view. A read folds it:
from the task's newest view snapshot at or before the position asked for, made by this code's
``FOLD_VERSION``, plus the events after it; and as the fold passes each K-th position it keeps the
view there (``LedgerStore.put_view_snapshot``), so the next read starts from it. A change of the fold
makes every view snapshot another version's: they are passed over and new ones are folded; the
task's own snapshots stay as they are.

A write that passes a K-th position (a batch of an import or of ``append_many``) brings the view up
to its last event once it is stored (``advance``): its own events are folded as it holds them, not read
back, with a view snapshot at each K-th position passed, so the first read after a bulk write folds and
re-hashes at most K events, not every event since the last read.

Below a compaction boundary the live store keeps no view snapshots (compaction deletes them): there
the archive holds one every ``ledger.app.archive.VIEWS_EVERY`` positions (``ledger.stores.archived.archived_view``),
so a read of an archived point folds at most that many archived events; such a fold keeps nothing in the
live store (it would grow back what compaction gave up).

A view snapshot is a cache: one that is missing or cannot be read is folded again from the events,
and failing to keep one (a read-only file, a lock held elsewhere, a fault in the fold during a write)
loses nothing and fails no read or write.
The bytes are the view's JSON, compressed and enciphered as the ledger's own snapshots are.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import suppress
from itertools import chain
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.persistence import PersistenceError

from ledger.stores import archived
from projections.state import FOLD_VERSION, TaskState, replay

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from eventsourcing.persistence import Mapper

    from ledger.domain import events as ev
    from ledger.stores import LedgerStore

KEEP = 64
"""Views a ledger holds in memory, newest used last: a command reads its task's view more than once."""


class Views:
    """The views of one ledger's tasks: folded on read, kept every ``every`` events."""

    def __init__(
        self,
        store: Callable[[], LedgerStore],
        mapper: Mapper[UUID],
        events: Callable[[UUID, int, int | None], Iterator[ev.TaskEvent]],
        every: Callable[[], int],
        legacy: Callable[[UUID, int | None], tuple[int, dict[str, Any]] | None],
    ) -> None:
        self._store = store
        self._mapper = mapper
        self._events = events
        """The task's events ``after < position <= upto`` (archived ones included)."""
        self._every = every
        self._legacy = legacy
        """The task's newest snapshot at or before a position as an older release wrote it (its body
        holding the view and the fold version that made it), or None."""
        self._held: OrderedDict[UUID, tuple[int, TaskState]] = OrderedDict()
        self.folded = 0
        """Events this object has folded (reads and writes): what a read after a write cost, counted."""

    # What ``ledger.stores.archived`` reads archives through (its ``Source``).
    @property
    def store(self) -> LedgerStore:
        return self._store()

    @property
    def mapper(self) -> Mapper[UUID]:
        return self._mapper

    def at(self, task_id: UUID, upto: int | None) -> TaskState | None:
        """The task's view after event ``upto`` (its last when None, or when ``upto`` is past it);
        None when the task has no events."""
        start, view = self._nearest(task_id, upto)
        view = self._fold(task_id, view, self._events(task_id, start, upto))
        if view.position == 0:
            return None
        self._hold(task_id, view.position, view)
        return view

    def advance(self, task_id: UUID, written: Sequence[ev.TaskEvent]) -> None:
        """After ``written`` (a write's events, in order) are stored: when they pass a K-th position, the
        task's view brought up to the last of them, kept at each K-th position passed and held. A write
        passing none leaves the view to the next read (a hook's few events cost no fold)."""
        every = self._every()
        if not written or not every:
            return
        first, last = written[0].originator_version, written[-1].originator_version
        if last // every == (first - 1) // every:
            return
        try:
            start, view = self._nearest(task_id, first - 1)
            view = self._fold(task_id, view, chain(self._events(task_id, start, first - 1), written))
        except Exception:  # the events are stored: a fault in the fold is the next read's to raise
            self.forget(task_id)
            return
        self._hold(task_id, view.position, view)

    def hold(self, task_id: UUID, view: TaskState) -> None:
        """Hold ``view`` as the task's view at its position, folded by the caller from the task's events as
        they were stored (an import's last write: ``ledger.capture.importer``); no snapshot is kept."""
        self._hold(task_id, view.position, view)

    def sealed_at(self, task_id: UUID, position: int) -> bytes:
        """The stored bytes of the task's view at ``position`` (compaction writes them to the archive): the
        view snapshot kept there, else folded from the nearest one, keeping none on the way."""
        with suppress(Exception):  # a cache: whatever is wrong with it, the events answer
            found = self._store().view_snapshot(task_id, position, FOLD_VERSION)
            if found is not None and found[0] == position:
                return found[1]
        start, view = self._nearest(task_id, position)
        view = self._fold(task_id, view, self._events(task_id, start, position), keep=False)
        self._hold(task_id, view.position, view)
        return self._encode(view)

    def _fold(
        self, task_id: UUID, view: TaskState, events: Iterable[ev.TaskEvent], keep: bool = True
    ) -> TaskState:
        """``view`` after ``events``, keeping a view snapshot at each K-th position passed at or after the
        live boundary (below it the archive holds the views)."""
        every = self._every()
        batch: list[ev.TaskEvent] = []
        floor: int | None = None
        for event in events:
            batch.append(event)
            if every and event.originator_version % every == 0:
                # Folded in batches (``replay``: one copy of the view per batch, not per event), cut at each K-th.
                view = replay(batch, view)
                self.folded += len(batch)
                batch = []
                if keep and floor is None:
                    floor = archived.live_from(self, task_id) - 1  # asked once a fold, when it would keep one
                if keep and view.position >= (floor or 0):
                    self._keep(task_id, view.position, view)
        if batch:
            view = replay(batch, view)
            self.folded += len(batch)
        return view

    def forget(self, task_id: UUID) -> None:
        """Drop what this process holds of the task's view (its events were rewritten or deleted)."""
        self._held.pop(task_id, None)

    def keep(self, task_id: UUID, position: int, view: TaskState) -> None:
        """Keep ``view`` as the task's view snapshot at ``position`` (compaction's boundary)."""
        self._keep(task_id, position, view)

    def _nearest(self, task_id: UUID, upto: int | None) -> tuple[int, TaskState]:
        held = self._held.get(task_id)
        every = self._every()
        if held is not None and upto is not None and upto - every < held[0] <= upto:
            self._held.move_to_end(task_id)
            return held  # no stored one can be nearer
        stored = self._stored(task_id, upto) or self._from_legacy(task_id, upto)
        if upto is not None and (stored is None or upto - stored[0] >= max(every, 1)):
            # Far from any live one: below a compaction boundary, the archive's may be nearer.
            kept = self._archived(task_id, upto)
            if kept is not None and (stored is None or kept[0] > stored[0]):
                stored = kept
        if held is not None and (upto is None or held[0] <= upto) and (stored is None or held[0] >= stored[0]):
            self._held.move_to_end(task_id)
            return held
        return stored or (0, TaskState())

    def _stored(self, task_id: UUID, upto: int | None) -> tuple[int, TaskState] | None:
        try:
            found = self._store().view_snapshot(task_id, upto, FOLD_VERSION)
            if found is None:
                return None
            return found[0], TaskState.model_validate_json(self._decode(found[1]))
        except Exception:  # a cache: whatever is wrong with it, the events answer
            return None

    def _archived(self, task_id: UUID, upto: int) -> tuple[int, TaskState] | None:
        try:
            found = archived.archived_view(self, task_id, upto, FOLD_VERSION)
            if found is None:
                return None
            return found[0], TaskState.model_validate_json(self._decode(found[1]))
        except Exception:  # as above: the events answer (and a missing or altered archive is named by them)
            return None

    def _from_legacy(self, task_id: UUID, upto: int | None) -> tuple[int, TaskState] | None:
        """The view an older release kept in the task's own snapshot, when this fold made it: a
        ledger written before view snapshots answers from it rather than fold its whole log once."""
        try:
            found = self._legacy(task_id, upto)
            if found is None or "state" not in found[1] or found[1].get("fold_version", 1) != FOLD_VERSION:
                return None
            return found[0], TaskState.model_validate(found[1]["state"])
        except Exception:  # as above: the events answer
            return None

    def _keep(self, task_id: UUID, position: int, view: TaskState) -> None:
        # A cache: a read that cannot write it (a read-only file, the lock held elsewhere) still answers.
        with suppress(PersistenceError):
            self._store().put_view_snapshot(task_id, position, FOLD_VERSION, self._encode(view))

    def _hold(self, task_id: UUID, position: int, view: TaskState) -> None:
        held = self._held.get(task_id)
        if held is None or held[0] <= position:
            self._held[task_id] = (position, view)
            self._held.move_to_end(task_id)
            while len(self._held) > KEEP:
                self._held.popitem(last=False)

    def _encode(self, view: TaskState) -> bytes:
        mapper: Any = self._mapper
        return bytes(mapper.sealed(view.model_dump_json().encode()))  # as the ledger's own snapshots are

    def decoded(self, data: bytes) -> bytes:
        """A view snapshot's JSON, from its stored bytes (`trail verify` reads them too)."""
        return self._decode(data)

    def _decode(self, data: bytes) -> bytes:
        mapper: Any = self._mapper
        return bytes(mapper.plain(data))
