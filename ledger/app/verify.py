"""Checking a task against tampering: the full walk (`trail verify`) and the quick checks reads make.

The walk reads rows through the recorder (any backend) and never trusts the mapper for the
chain, so upcasting cannot mask a change; it names the first break with its position:

- ``missing``: a position has no event (a row was deleted).
- ``altered``: the event's content no longer matches its hash, yet the next event
  still chains from that hash (the row was edited in place).
- ``out of place``: the chain breaks here and does not resume (an event was inserted,
  removed with the rest renumbered, or two events swapped).
- ``truncated``: the anchor (``ledger.base.schema.HEADS``), a snapshot or ``--head`` records a later
  position than the last event (events were cut off the end).
- ``anchor``: the event at the anchor's position is not the one it recorded (the log was
  rewritten, its chain recomputed), or ``--head`` is not in the chain.
- ``undecodable``: a stored event cannot be read.
- ``snapshot``: a snapshot cannot be read, or is not what the events up to its position fold to.
- ``collected``: an output marked collected (`trail compact --gc-artifacts`) still holds text:
  collecting empties it, so the text was put there afterwards.
- ``registry``: the task list's entry (number, slug, title) is not what the task's opening says.
- ``archive``: an archive of compacted events (``trail compact``) is missing, altered or unreadable.
- ``journal``: the database's edit journal (``ledger.base.schema.EDITS``) records a change of a stored event
  made outside tasktrail (even one put back as it was), or its triggers are not as tasktrail installed them.

The registry (the task list) is walked the same way (``verify_registry``): its own chain, its
anchor, its snapshots against its events, and an erased entry only under a recorded forget.

Reads cannot afford the walk on every call, so ``checked_state`` and ``check_events`` check
only what a read loads anyway (its snapshot, the last event, the anchor, the rows after the view
snapshot it folds from) and the edit journal, which names a change of any row below that snapshot
without the row being read, and raise ``LedgerBroken`` with the same kinds; the walk stays here for
`trail verify`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast
from uuid import UUID

from eventsourcing.domain import OriginatorVersionError
from eventsourcing.persistence import ApplicationRecorder, EventStore, StoredEvent

from ledger.base.errors import BadInput, TrailError
from ledger.base.oneline import reason
from ledger.domain import chain
from ledger.domain import registry as reg
from ledger.domain.events import Bounded, OutputsCollected, TaskRetitled
from ledger.domain.mapper import PydanticMapper
from ledger.domain.registry import REGISTRY_ID
from ledger.domain.task import TaskSnapshot
from ledger.stores import archived as archive
from ledger.stores.base import Head
from projections.state import FOLD_VERSION, TaskState, fold

if TYPE_CHECKING:
    from ledger.app.views import Views
    from ledger.domain import events as ev
    from ledger.domain.registry import Entry
    from ledger.domain.task import Task


class Verifiable(archive.Source, Protocol):
    """What verify reads of a ledger: the ``Ledger`` application (``ledger.app.store``) is one. A protocol,
    since the store calls verify before each append and verify must not import the store back."""

    @property
    def recorder(self) -> ApplicationRecorder: ...

    @property
    def snapshots(self) -> EventStore[UUID] | None: ...

    @property
    def views(self) -> Views: ...

    def task(self, task_id: UUID, at: int | None = None) -> Task: ...

    def state_of(self, task: Task) -> TaskState: ...

    def task_events(self, task_id: UUID, after: int = 0, upto: int | None = None) -> Iterator[ev.TaskEvent]: ...

Kind = Literal[
    "missing", "altered", "out of place", "truncated", "anchor", "undecodable", "snapshot", "collected",
    "registry", "archive", "journal",
]


class LedgerBroken(TrailError):
    """What a read or `trail verify` met is not what was recorded; nothing is shown from it."""

    exit_code = 5


@dataclass(frozen=True)
class Break:
    position: int
    kind: Kind
    detail: str


@dataclass(frozen=True)
class Report:
    task_id: UUID
    events: int
    head: str
    first_break: Break | None
    anchor: Head | None = None
    """The anchor's record of the task; None when the ledger keeps none for it."""
    stale_snapshots: int = 0
    """Snapshots of an older release whose view another version of the fold made: reads fold the
    view again, so only their head is checked."""

    @property
    def ok(self) -> bool:
        return self.first_break is None

    @property
    def head_token(self) -> str:
        """The head as `trail checkpoint` prints it and `verify --head` takes it: ``CHAIN@POSITION``."""
        return f"{self.head}@{self.events}" if self.head else ""


class _Found(Exception):
    """Carries the first break out of the walk."""

    def __init__(self, found: Break) -> None:
        super().__init__(found.detail)
        self.found = found


def parse_head(token: str) -> tuple[str, int | None]:
    """``CHAIN@POSITION`` (or a bare ``CHAIN``) as `verify --head` takes it; BadInput when malformed."""
    hash_part, sep, position = token.strip().rpartition("@")
    if not sep:
        hash_part, position = token.strip(), ""
    if chain.version_of(hash_part) == 0 or len(hash_part.rpartition(":")[2]) != 64:
        raise BadInput(f"--head {token!r}: expected a chain hash such as 2:<64 hex digits>, optionally @POSITION")
    if position and not position.isdigit():
        raise BadInput(f"--head {token!r}: the position after @ must be a whole number")
    return hash_part, int(position) if position else None


# -- the full walk ---------------------------------------------------------------------------


def verify_task(ledger: Verifiable, task_id: UUID, entry: Entry | None = None, expect: str | None = None) -> Report:
    """Walk the task: archives, every event's link, every snapshot against the fold up to it,
    collected outputs, the registry entry, the anchor, and ``expect`` (a ``--head`` token)."""
    anchor = ledger.store.head(task_id)
    walk = _Walk(ledger, task_id)
    try:
        walk.run()
        walk.check_collected()
        walk.check_end(anchor, expect)
        if entry is not None:
            walk.check_entry(entry)
        if (found := journal_problem(ledger, task_id)) is not None:
            raise _Found(found)
    except _Found as stop:
        return Report(task_id, walk.count, walk.previous, stop.found, anchor, walk.stale_snapshots)
    return Report(task_id, walk.count, walk.previous, None, anchor, walk.stale_snapshots)


def verify_all(ledger: Verifiable, task_ids: list[UUID], entries: Iterable[Entry] = ()) -> Iterator[Report]:
    by_id = {e.task_id: e for e in entries}
    for task_id in task_ids:
        yield verify_task(ledger, task_id, by_id.get(task_id))


def verify_registry(ledger: Verifiable) -> Report:
    """Walk the registry: each event's link (events from before the chain are hashed as stored, so
    the first chained one covers them), its anchor, and each snapshot against the events up to it."""
    anchor = ledger.store.head(REGISTRY_ID)
    mapper = cast(PydanticMapper, ledger.mapper)
    rows = ledger.recorder.select_events(REGISTRY_ID)
    previous, chained, count = chain.GENESIS, False, 0
    erased: dict[int, int] = {}
    forgotten: set[int] = set()
    folded: Any = None
    snapshots = {} if ledger.snapshots is None else {
        s.originator_version: s for s in ledger.snapshots.recorder.select_events(REGISTRY_ID)}

    def broken(found: Break) -> Report:
        return Report(REGISTRY_ID, count, previous, found, anchor)

    for index, row in enumerate(rows):
        position = index + 1
        if row.originator_version != position:
            return broken(Break(position, "missing",
                                f"no registry event at {position}; the next stored is {row.originator_version}"))
        try:
            state = mapper.decode_state(row.state)
            expected = reg.seal_stored(previous, row.topic, position, state)
        except Exception as exc:  # any decoding failure is a finding, not a crash
            return broken(Break(position, "undecodable", f"undecodable registry event: {reason(exc, 300)}"))
        stored = str(state.get("chain") or "")
        if stored and stored != expected:
            return broken(Break(position, "out of place", "the registry event does not chain from the one before "
                                "(forged, edited, inserted or renumbered)"))
        if not stored and chained:
            return broken(Break(position, "out of place", "a registry event without a hash after the chain began "
                                "(inserted outside tasktrail)"))
        chained = chained or bool(stored)
        if isinstance(state.get("erased"), dict):
            erased[position] = int((state.get("entry") or {}).get("number", 0))
        if row.topic == reg.TaskForgotten.TOPIC:
            forgotten.add(int((state.get("tombstone") or {}).get("number", 0)))
        try:
            folded = cast(Any, mapper.to_domain_event(row)).mutate(folded)
        except Exception as exc:
            return broken(Break(position, "undecodable", f"does not load as a registry event: {reason(exc, 300)}"))
        previous, count = expected, position
        if position in snapshots and (found := _registry_snapshot_problem(mapper, snapshots[position], folded)):
            return broken(found)
    if past := [v for v in snapshots if v > count]:
        return broken(Break(count + 1, "truncated",
                            f"a registry snapshot records position {max(past)}, but its log ends at {count}"))
    for position, number in erased.items():
        if number not in forgotten:
            return broken(Break(position, "registry",
                                f"task #{number}'s entry is erased, but no forget of it is recorded"))
    if anchor is None:
        if chained or anchors_kept(ledger):
            return broken(Break(count, "anchor", "the registry's anchor is gone (deleted outside tasktrail)"))
    elif anchor.version > count:
        return broken(Break(count + 1, "truncated",
                            f"the anchor records position {anchor.version}, but the registry ends at {count}"))
    elif anchor.version < count:
        return broken(Break(anchor.version + 1, "anchor",
                            f"registry events past the anchor's {anchor.version} (inserted outside tasktrail)"))
    elif anchor.chain and anchor.chain != previous:
        return broken(Break(count, "anchor", "the registry's last event is not the one the anchor recorded"))
    return Report(REGISTRY_ID, count, previous, None, anchor)


def _registry_snapshot_problem(mapper: PydanticMapper, stored: StoredEvent, folded: Any) -> Break | None:
    position = stored.originator_version
    try:
        kept = mapper.to_domain_event(stored)
        if not isinstance(kept, reg.RegistrySnapshot):
            raise ValueError(f"a {stored.topic} where the registry's snapshot belongs")
    except Exception as exc:
        return Break(position, "snapshot", f"registry snapshot cannot be read: {reason(exc, 300)}")
    derived = reg.RegistrySnapshot.take(folded)
    skip = {"head"} if not kept.state.head else set()  # a snapshot from before the chain kept none
    differs = _differences(kept.state.model_dump(exclude=skip), derived.state.model_dump(exclude=skip))
    if differs:
        return Break(position, "snapshot",
                     f"registry snapshot is not what its events fold to (differs in {', '.join(differs)})")
    return None


def anchors_kept(ledger: Verifiable) -> bool:
    """Whether this ledger anchors its aggregates: the registry has an anchor row, or chained events
    (written by a version that anchors every insert), so a missing anchor row is a deletion."""
    if ledger.store.head(REGISTRY_ID) is not None:
        return True
    mapper = cast(PydanticMapper, ledger.mapper)
    last = ledger.recorder.select_events(REGISTRY_ID, desc=True, limit=1)
    try:
        return bool(last) and bool(mapper.decode_state(last[0].state).get("chain"))
    except Exception:  # an undecodable last row is the registry walk's to name
        return True


class _Walk:
    def __init__(self, ledger: Verifiable, task_id: UUID) -> None:
        self.ledger = ledger
        self.task_id = task_id
        self.mapper = cast(PydanticMapper, ledger.mapper)
        self.previous = chain.GENESIS
        self.count = 0
        self.chains: list[str] = []
        self.opened: dict[str, Any] = {}
        self.task: Any = None
        self.collected: list[tuple[int, datetime | None, str]] = []
        """Outputs found collected: position, the event's time, the field."""
        self.collected_before: datetime | None = None
        """The latest ``before`` of the task's ``OutputsCollected`` events."""
        self.stale_snapshots = 0
        """Older snapshots whose view another version of the fold made (their ``fold_version``)."""
        self.view = TaskState()
        """The brief's view, folded as the walk goes: what each kept view is held to."""
        found = ledger.store.view_snapshot(task_id, None, FOLD_VERSION)
        self.latest_view = found
        """The newest view snapshot of this fold (the one reads start from), checked where the walk passes it."""

    def run(self) -> None:
        rows: list[StoredEvent] = []
        snapshots: dict[int, StoredEvent] = {}
        for found in archive.archives(self.ledger, self.task_id):
            problem = archive.check_file(found)
            if problem is not None:
                raise _Found(Break(found.first, "archive", problem))
            try:
                rows += [stored for _, stored in archive.archived_rows(found, -1)]
                snapshots.update((s.originator_version, s) for s in archive.archived_snapshots(found))
            except Exception as exc:  # a file that hashes right yet cannot be read is still a finding
                raise _Found(Break(found.first, "archive", f"archive {found.path} cannot be read: {exc}")) from None
        rows += self.ledger.recorder.select_events(self.task_id)
        if self.ledger.snapshots is not None:
            live = self.ledger.snapshots.recorder.select_events(self.task_id)
            snapshots.update((s.originator_version, s) for s in live)
        for index, row in enumerate(rows):
            self._event(index, rows, row)
            if row.originator_version in snapshots:
                self._snapshot(snapshots[row.originator_version])
            if self.latest_view is not None and row.originator_version == self.latest_view[0]:
                self._view_snapshot()
        past = [v for v in snapshots if v > self.count]
        if past:
            raise _Found(Break(self.count + 1, "truncated",
                               f"a snapshot records position {max(past)}, but the log ends at {self.count}"))

    def _decode(self, row: StoredEvent) -> dict[str, Any]:
        try:
            return self.mapper.decode_state(row.state)
        except Exception as exc:  # any decoding failure is a finding, not a crash
            raise _Found(Break(row.originator_version, "undecodable", f"undecodable state: {exc}")) from None

    def _event(self, index: int, rows: Sequence[StoredEvent], row: StoredEvent) -> None:
        position = index + 1
        if row.originator_version != position:
            raise _Found(Break(position, "missing",
                               f"no event at position {position}; the next stored is {row.originator_version}"))
        state = self._decode(row)
        stored_hash = str(state.get("chain", ""))
        if _link(self.previous, row, state) != stored_hash:
            kind: Kind = "out of place"
            if index + 1 < len(rows):
                try:
                    following = self.mapper.decode_state(rows[index + 1].state)
                    if _link(stored_hash, rows[index + 1], following) == following.get("chain"):
                        kind = "altered"
                except Exception:  # an unreadable successor only means we cannot tell "altered" apart
                    pass
            detail = "content does not match its hash" if kind == "altered" else "does not chain from the event before"
            raise _Found(Break(position, kind, detail))
        if (forged := _collected(state, with_text=True)) is not None:
            raise _Found(Break(position, "collected", f"{forged} is marked collected but holds text"))
        if row.topic == OutputsCollected.TOPIC:
            before = _stamp(state.get("before"))
            if before is not None and (self.collected_before is None or before > self.collected_before):
                self.collected_before = before
        elif (emptied := _collected(state)) is not None:
            self.collected.append((position, _stamp(state.get("timestamp")), emptied))
        if position == 1:
            self.opened = state
        elif row.topic == TaskRetitled.TOPIC:
            self.opened = {**self.opened, "title": state.get("title")}  # the entry is held to the latest title
        try:
            event = self.mapper.to_domain_event(row)
            self.task = cast(Any, event).mutate(self.task)
            self.view = fold(self.view, cast("ev.TaskEvent", event))
        except Exception as exc:
            raise _Found(Break(position, "undecodable", f"does not load as an event: {reason(exc, 300)}")) from None
        self.previous = stored_hash
        self.chains.append(stored_hash)
        self.count = position

    def _snapshot(self, stored: StoredEvent) -> None:
        position = stored.originator_version
        try:
            raw = self.mapper.decode_state(stored.state)
            kept = cast(TaskSnapshot, self.mapper.to_domain_event(stored))
            if not isinstance(kept, TaskSnapshot):
                raise ValueError(f"a {stored.topic} where a task snapshot belongs")
        except Exception as exc:
            raise _Found(Break(position, "snapshot", f"snapshot cannot be read: {reason(exc, 300)}")) from None
        derived = TaskSnapshot.take(self.task)
        body = raw.get("state") or {}
        view = body.get("state")  # an older release's snapshot carried the view
        if view is not None and body.get("fold_version", 1) != FOLD_VERSION:
            # Another fold made its view: reads fold it again and never show it, so its content is
            # not this fold's to judge (its head still is, where reads use it).
            self.stale_snapshots += 1
            if kept.state.head != derived.state.head:
                raise _Found(Break(position, "snapshot",
                                   "the snapshot's head is not the hash of the event at its position"))
            return
        skip = set() if raw.get("class_version", 1) >= 2 else {"decision"}  # v1 kept none; it is derived on read
        differs = _differences(kept.state.model_dump(exclude=skip),
                               derived.state.model_dump(exclude=skip))
        if view is not None:  # this fold's view, which reads of an older ledger start from
            try:
                kept_view = TaskState.model_validate(view).model_dump()
            except Exception as exc:
                raise _Found(Break(position, "snapshot", f"snapshot cannot be read: {reason(exc, 300)}")) from None
            differs += _differences(kept_view, self.view.model_dump(), "state.")
        if differs:
            raise _Found(Break(position, "snapshot",
                               f"snapshot is not what the events up to it fold to (differs in {', '.join(differs)})"))

    def _view_snapshot(self) -> None:
        """The newest view snapshot, where the walk reached its position: reads start from it, so it
        must be what the events fold to. One that cannot be read is no finding: reads fold it again."""
        assert self.latest_view is not None
        position, data = self.latest_view
        try:
            kept = TaskState.model_validate_json(self.ledger.views.decoded(data))
        except Exception:  # unreadable: reads fold the view from the events instead
            return
        if differs := _differences(kept.model_dump(), self.view.model_dump()):
            detail = f"view snapshot is not what the events up to it fold to (differs in {', '.join(differs)})"
            raise _Found(Break(position, "snapshot", detail))

    def check_collected(self) -> None:
        """A collected output is legitimate only when an ``OutputsCollected`` of the task covers its time."""
        for position, stamp, where in self.collected:
            if stamp is None or self.collected_before is None or stamp >= self.collected_before:
                raise _Found(Break(position, "collected", f"{where} is marked collected, but no recorded "
                                   "collection (OutputsCollected) covers it"))

    def check_end(self, anchor: Head | None, expect: str | None) -> None:
        if anchor is None and anchors_kept(self.ledger):
            # Every insert anchors its aggregate in its own transaction: on a ledger that anchors,
            # a task without an anchor row lost it outside tasktrail (as reads say too).
            raise _Found(Break(self.count, "anchor", "the task's anchor is gone (deleted outside tasktrail)"))
        if anchor is not None:
            if anchor.version > self.count:
                raise _Found(Break(self.count + 1, "truncated",
                                   f"the anchor records position {anchor.version}, but the log ends at {self.count}"))
            if anchor.chain and self.chains[anchor.version - 1] != anchor.chain:
                raise _Found(Break(anchor.version, "anchor",
                                   "the event there is not the one the anchor recorded (the log was rewritten)"))
            if anchor.version < self.count:  # every insert moves the anchor in its own transaction
                raise _Found(Break(anchor.version + 1, "anchor",
                                   f"events past the anchor's position {anchor.version} (inserted outside tasktrail)"))
        if expect is not None:
            wanted, at = parse_head(expect)
            if at is not None and at > self.count:
                raise _Found(Break(self.count + 1, "truncated",
                                   f"--head names position {at}, but the log ends at {self.count}"))
            if at is not None and self.chains[at - 1] != wanted:
                raise _Found(Break(at, "anchor", "the chain there is not the --head given (the log was rewritten)"))
            if at is None and wanted not in self.chains:
                raise _Found(Break(self.count, "anchor", "--head is not in the chain (rewritten or truncated)"))

    def check_entry(self, entry: Entry) -> None:
        if not self.opened:
            return
        problem = _entry_problem(entry, self.opened.get("number"), self.opened.get("slug"), self.opened.get("title"))
        if problem:
            raise _Found(Break(1, "registry", problem))


def _link(previous: str, stored: StoredEvent, state: dict[str, Any]) -> str:
    """The hash the row should carry, in the chain version its own ``chain`` names (``ledger.domain.chain``)."""
    return chain.recompute(previous, stored.topic, stored.originator_id, stored.originator_version, state)


def _stamp(value: Any) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _collected(value: Any, with_text: bool = False, where: str = "") -> str | None:
    """The field of a stored state holding an output marked collected (and still holding text, when
    ``with_text``), if any."""
    if isinstance(value, dict):
        if chain.is_bounded(value):
            held = value.get("collected") and (not with_text or value.get("tail"))
            return (where or "an output") if held else None
        for key, item in value.items():
            if (found := _collected(item, with_text, f"{where}.{key}" if where else str(key))) is not None:
                return found
    elif isinstance(value, list):
        for n, item in enumerate(value):
            if (found := _collected(item, with_text, f"{where}[{n}]")) is not None:
                return found
    return None


def _differences(kept: dict[str, Any], derived: dict[str, Any], prefix: str = "") -> list[str]:
    """The leaf fields where two dumped models differ (at most 3 named)."""
    found: list[str] = []
    for key in sorted(set(kept) | set(derived)):
        a, b = kept.get(key), derived.get(key)
        if a == b:
            continue
        name = f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            found += _differences(a, b, name + ".")
        else:
            found.append(name)
        if len(found) >= 3:
            break
    return found[:3]


def _entry_problem(entry: Entry, number: Any, slug: Any, title: Any) -> str | None:
    # Older releases registered the title as typed while the opening event stripped it.
    listed_title = entry.title.strip() if isinstance(title, str) else entry.title
    for field, recorded, listed in (("number", number, entry.number), ("slug", slug, entry.slug),
                                    ("title", title, listed_title)):
        if recorded is not None and recorded != listed:
            return f"the task list's {field} {listed!r} is not the task's own {recorded!r}"
    return None


# -- the quick checks reads make ----------------------------------------------------------------


def refusal(number: int | None, found: Break) -> LedgerBroken:
    """The one-line refusal of a read (or a write) that met ``found``."""
    task = f"task #{number}" if number is not None else "task"
    return LedgerBroken(f"{task} is broken at position {found.position} ({found.kind}): {found.detail}; "
                        "run `trail verify` for the full check")


def checked_state(
    ledger: Verifiable, task_id: UUID, at: int | None = None, entry: Entry | None = None, number: int | None = None,
) -> TaskState:
    """The task's view after event ``at`` (the latest when None), as reads load it, or ``LedgerBroken``.

    Cheap: besides the load, the snapshot used is read again with the event at its position
    (its ``head`` must be that event's hash), the latest load is held to the anchor, and the
    state's identity to the task list's entry and the opening event. Events between the snapshot
    and ``at`` are not re-hashed; `trail verify` does that."""
    number = entry.number if entry is not None else number
    # The snapshot the load will start from is checked first, so an unreadable one is named as such.
    if (found := _snapshot_problem(ledger, task_id, at)) is not None:
        raise refusal(number, found)
    try:
        task = ledger.task(task_id, at)
    except OriginatorVersionError as exc:
        raise refusal(number, Break(exc.args[1] if len(exc.args) > 1 else 0, "missing",
                                    f"the events do not follow on ({reason(exc, 300)})")) from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise refusal(number, Break(at or 0, "undecodable", f"cannot be loaded: {reason(exc, 300)}")) from None
    found = _anchor_problem(ledger, task_id, task, at)
    if found is None:
        # What is shown is folded from the newest view snapshot (or the task's own) and the rows after it:
        # those rows are re-hashed, so an edit in place of any of them is refused, not shown.
        found = rows_problem(ledger, task_id, _fold_start(ledger, task_id, at), task.version)
    state = ledger.state_of(task) if found is None else None
    if state is not None and found is None:
        found = _view_problem(ledger, task_id, state)
    if state is not None and found is None and (forged := _collected(state.model_dump(), with_text=True)) is not None:
        found = Break(task.version, "collected", f"{forged} is marked collected but holds text")
    # The entry holds the latest title: a view of an earlier position may hold an earlier one.
    title = state.title if state is not None and at is None else None
    if state is not None and found is None and entry is not None and (
        problem := _entry_problem(entry, state.number, state.slug, title)
    ) is not None:
        found = Break(1, "registry", problem)
    if found is None:
        # Last, so whatever the checks above name keeps its kind; this one covers every row, below the view
        # snapshot the fold started from too, without reading them.
        found = journal_problem(ledger, task_id)
    if found is not None:
        raise refusal(number, found)
    assert state is not None
    return state


def journal_problem(ledger: Verifiable, task_id: UUID) -> Break | None:
    """What the database's edit journal holds against the task (``LedgerStore.changed_outside``), as a break."""
    found = ledger.store.changed_outside(task_id)
    if found is None:
        return None
    position, change = found
    if change == "guard":
        return Break(0, "journal", "the ledger's edit journal triggers are not as tasktrail installed them "
                     "(dropped, altered or disabled outside tasktrail)")
    done = {"update": "updated", "delete": "deleted", "replace": "replaced"}.get(change, change)
    return Break(position, "journal", f"the stored event was {done} outside tasktrail (the ledger's edit "
                 "journal records it)")


def _fold_start(ledger: Verifiable, task_id: UUID, upto: int | None) -> int:
    """The position the view's fold starts after: its newest view snapshot of this fold at or before
    ``upto``, else 0 (a view an older release kept in the task's snapshot is re-hashed from the start)."""
    found = ledger.store.view_snapshot(task_id, upto, FOLD_VERSION)
    return found[0] if found is not None else 0


def _snapshot_problem(ledger: Verifiable, task_id: UUID, upto: int | None) -> Break | None:
    if ledger.snapshots is None:
        return None
    used = ledger.snapshots.recorder.select_events(task_id, lte=upto, desc=True, limit=1)
    if not used:
        return None
    snap = used[0]
    position = snap.originator_version
    try:
        body = cast(PydanticMapper, ledger.mapper).decode_state(snap.state)["state"]
        head, view = body["head"], body.get("state")  # an older release's snapshot carried the view
        identity = ((view["title"], view["slug"]) if view is not None else None, body.get("number"))
        # A view another fold made is folded again, never shown: its identity is not what reads use.
        own_fold = view is None or body.get("fold_version", 1) == FOLD_VERSION
    except Exception as exc:
        return Break(position, "snapshot", f"snapshot cannot be read: {reason(exc, 300)}")
    rows = ledger.recorder.select_events(task_id, gt=max(position - 1, 0), lte=position)
    if rows and rows[0].originator_version == position:
        there = cast(PydanticMapper, ledger.mapper).decode_state(rows[0].state)
        if there.get("chain") != head:
            return Break(position, "snapshot", "the snapshot's head is not the hash of the event at its position")
    opened = ledger.recorder.select_events(task_id, lte=1) if own_fold else []
    if opened:
        first = cast(PydanticMapper, ledger.mapper).decode_state(opened[0].state)
        titled, number = identity
        if titled is not None and (first.get("title"), first.get("slug")) != titled:
            return Break(position, "snapshot", "the snapshot's title or slug is not the task's opening one")
        if number is not None and first.get("number") != number:
            return Break(position, "snapshot", "the snapshot's number is not the task's opening one")
    return None


def _view_problem(ledger: Verifiable, task_id: UUID, state: TaskState) -> Break | None:
    """The view's identity against the opening event: the view starts from a view snapshot, a cache
    outside the chain, and one edited to another title must not reach a brief."""
    opened = ledger.recorder.select_events(task_id, lte=1)
    if not opened:
        return None  # compacted: the archive's own checks hold the opening event
    decode = cast(PydanticMapper, ledger.mapper).decode_state
    first = decode(opened[0].state)
    title = first.get("title")
    if state.titled_at > 1:  # renamed: the title is the one the event at ``titled_at`` recorded
        rows = ledger.recorder.select_events(task_id, gt=state.titled_at - 1, lte=state.titled_at)
        renamed = rows and rows[0].topic == TaskRetitled.TOPIC and state.titled_at <= state.position
        title = decode(rows[0].state).get("title") if renamed else None
    if (first.get("number"), title, first.get("slug")) != (state.number, state.title, state.slug):
        return Break(state.position, "snapshot",
                     "the view snapshot's title, slug or number is not the task's recorded one")
    return None


def _anchor_problem(ledger: Verifiable, task_id: UUID, task: Task, at: int | None) -> Break | None:
    return None if at is not None else end_problem(ledger, task_id, task.version, task.head)


def end_problem(ledger: Verifiable, task_id: UUID, version: int, head: str) -> Break | None:
    """A latest load (``version`` events, the last with hash ``head``) held to the anchor: its end where
    the anchor says, and its last event's content re-hashed, so a one-row edit or insert of the latest
    event (the row a brief is made from) is refused."""
    anchor = ledger.store.head(task_id)
    if anchor is None:
        # Every insert anchors its task in the same transaction, so a ledger that anchors at all (its
        # task list has an anchor) and not this task lost the row to someone outside tasktrail.
        if task_id != REGISTRY_ID and anchors_kept(ledger):
            return Break(version, "anchor", "the task's anchor is gone (deleted outside tasktrail)")
        return None
    if version < anchor.version:
        if ledger.recorder.select_events(task_id, gt=version, lte=anchor.version, limit=1):
            return None  # another writer appended after this load read the log: a stale load, not a cut
        return Break(version + 1, "truncated",
                     f"the anchor records position {anchor.version}, but the log ends at {version}")
    if version > anchor.version:
        return Break(anchor.version + 1, "anchor",
                     f"events past the anchor's position {anchor.version} (inserted outside tasktrail)")
    if anchor.chain and head != anchor.chain:
        return Break(anchor.version, "anchor",
                     "the last event is not the one the anchor recorded (the log was rewritten)")
    return _last_event_problem(ledger, task_id, anchor.version)


def _last_event_problem(ledger: Verifiable, task_id: UUID, position: int) -> Break | None:
    """The last event's stored content against its own hash (one row and its predecessor's hash)."""
    rows = ledger.recorder.select_events(task_id, gt=max(position - 2, 0), lte=position)
    if not rows or rows[-1].originator_version != position:
        return None  # not in the live store: the load above already failed on it
    mapper = cast(PydanticMapper, ledger.mapper)
    try:
        if position == 1:
            previous = chain.GENESIS
        elif len(rows) == 2:
            previous = str(mapper.decode_state(rows[0].state).get("chain", ""))
        else:  # the event before was compacted: its hash is the archive's head
            found = [a for a in archive.archives(ledger, task_id) if a.last == position - 1]
            if not found:
                return None
            previous = found[-1].head
        state = mapper.decode_state(rows[-1].state)
    except Exception as exc:
        return Break(position, "undecodable", f"cannot be read: {reason(exc, 300)}")
    if _link(previous, rows[-1], state) != state.get("chain"):
        return Break(position, "altered", "the last event's content does not match its hash")
    return None


def rows_problem(ledger: Verifiable, task_id: UUID, after: int, upto: int | None) -> Break | None:
    """The live rows ``after < position <= upto`` re-hashed, as the walk does them: each one's content against
    its own hash, linked from the one before (the first from its live predecessor or the archive's head), no
    position missing. A read checks the rows it folds or shows, so an edit in place of any of them is refused."""
    rows = ledger.recorder.select_events(task_id, gt=after, lte=upto)
    if not rows:
        return None
    mapper = cast(PydanticMapper, ledger.mapper)
    position = rows[0].originator_version
    try:
        previous = _hash_before(ledger, task_id, position)
        states = [mapper.decode_state(row.state) for row in rows]
    except Exception as exc:  # any decoding failure is a finding, not a crash
        return Break(position, "undecodable", f"cannot be read: {reason(exc, 300)}")
    return _chain_problem(rows, states, previous)


def _decoded_rows_problem(ledger: Verifiable, task_id: UUID, rows: Sequence[StoredEvent],
                          states: list[dict[str, Any]]) -> Break | None:
    """``rows_problem`` of rows read and decoded already (``states``, as ``decode_state`` gave them)."""
    if not rows:
        return None
    try:
        previous = _hash_before(ledger, task_id, rows[0].originator_version)
    except Exception as exc:
        return Break(rows[0].originator_version, "undecodable", f"cannot be read: {reason(exc, 300)}")
    return _chain_problem(rows, states, previous)


def _chain_problem(rows: Sequence[StoredEvent], states: list[dict[str, Any]], previous: str | None) -> Break | None:
    """The first row, in order, that does not follow its predecessor or whose content is not its hash."""
    for index, (row, state) in enumerate(zip(rows, states, strict=True)):
        position = row.originator_version
        if index and position != rows[index - 1].originator_version + 1:
            return Break(rows[index - 1].originator_version + 1, "missing",
                         f"no event at position {rows[index - 1].originator_version + 1}")
        stored = str(state.get("chain", ""))
        if previous is not None and _link(previous, row, state) != stored:
            following = index + 1 < len(rows) and _link(stored, rows[index + 1], states[index + 1]) == states[
                index + 1].get("chain")
            return Break(position, "altered", "content does not match its hash") if following else Break(
                position, "out of place", "does not chain from the event before")
        previous = stored
    return None


def _hash_before(ledger: Verifiable, task_id: UUID, position: int) -> str | None:
    """The chain hash of the event before ``position``: genesis, the live row's, or the archive's head there;
    None when it is not at hand (the first row's link is then left to `trail verify`)."""
    if position == 1:
        return chain.GENESIS
    rows = ledger.recorder.select_events(task_id, gt=position - 2, lte=position - 1)
    if rows:
        return str(cast(PydanticMapper, ledger.mapper).decode_state(rows[0].state).get("chain", ""))
    found = [a for a in archive.archives(ledger, task_id) if a.last == position - 1]
    return found[-1].head if found else None


def check_events(ledger: Verifiable, task_id: UUID, events: list[ev.TaskEvent], number: int | None = None,
                 rehashed: Callable[[], Break | None] | None = None) -> None:
    """Refuse (``LedgerBroken``) a task's whole timeline, as a read loaded it, when a position is
    missing, an output marked collected holds text, or its end is not where the anchor says.
    ``rehashed``: what re-hashing every live row finds, when the caller already read them (``load_events``)."""
    for expected, event in enumerate(events, start=1):
        if event.originator_version != expected:
            raise refusal(number, Break(expected, "missing", f"no event at position {expected}"))
        for name in type(event).model_fields:
            value = getattr(event, name)
            if isinstance(value, Bounded) and value.collected and value.tail:
                raise refusal(number, Break(expected, "collected", f"{name} is marked collected but holds text"))
    found = end_problem(ledger, task_id, len(events), events[-1].chain if events else "")
    if found is None:  # every event is shown: every live row is re-hashed (archives are held to their sha256)
        found = rows_problem(ledger, task_id, 0, len(events)) if rehashed is None else rehashed()
    if found is None:
        found = journal_problem(ledger, task_id)
    if found is not None:
        raise refusal(number, found)


def load_events(ledger: Verifiable, task_id: UUID, number: int | None = None) -> list[ev.TaskEvent]:
    """Every event of the task (archived ones included), checked as ``check_events`` does.

    The live rows are read and decoded once, both to be re-hashed and to become the events shown (they
    were read twice, ~10% of `trail log` on a 1k-event task); the checks and the order they are made in
    are those of ``ledger.task_events`` then ``check_events``."""
    mapper = cast(PydanticMapper, ledger.mapper)
    rehashed: Callable[[], Break | None] | None = None
    try:
        live = archive.live_from(ledger, task_id)
        rows = ledger.recorder.select_events(task_id)
        if rows and rows[0].originator_version < live:
            # Rows below the archived range (put there outside tasktrail): read as before, so they are
            # re-hashed and named as before.
            events = list(ledger.task_events(task_id))
        else:
            events = list(archive.archived_events(ledger, task_id, 0, live - 1)) if live > 1 else []
            states = [mapper.decode_state(row.state) for row in rows]
            # Re-hashed before the events are made of the states (the mapper upcasts them in place); what it
            # finds is named where ``check_events`` names it.
            hashed = _decoded_rows_problem(ledger, task_id, rows, states)
            rehashed = lambda: hashed  # noqa: E731
            events += [cast("ev.TaskEvent", mapper.event_of(row, state))
                       for row, state in zip(rows, states, strict=True)]
    except (ValueError, TypeError, KeyError) as exc:
        raise refusal(number, Break(0, "undecodable", f"an event cannot be loaded: {reason(exc, 300)}")) from None
    check_events(ledger, task_id, events, number, rehashed=rehashed)
    return events
