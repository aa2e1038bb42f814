"""Appending captured items exactly once: the source-key index and the write that honours it.

Idempotency rests on one fact: a task's stored events carry their ``source`` keys, and the recorder writes each
key into the capture index (``schema.SOURCES``) in the transaction that stores its event, so the index cannot
disagree with the log. ``append_unseen`` reads the task, asks the store which of its items' keys the task holds
up to the version it read (``LedgerStore.held_keys``: a look-up per key, however long the task), and saves; when
a concurrent writer got there first the save conflicts, and the retry asks again on a fresh read, so two importers
(or two inbox drains) never append one source twice. Keys of a forgotten task stay tombstoned (a sha256 of each,
kept by ``trail forget``): items with such a key are refused, naming the task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import ValidationError

from ledger.app.store import NewTask
from ledger.base.errors import Refused, RuleBroken
from ledger.base.location import Location
from ledger.base.schema import key_hash
from ledger.capture.items import LATEST_REQUIREMENT, Item
from ledger.capture.session import END
from ledger.domain import events as ev

if TYPE_CHECKING:
    from ledger.app.store import Draft, Ledger

Key = tuple[str, str, str]


def key_of(source: ev.SourceKey | None) -> Key | None:
    # An import holds every key of its task (``Known``), each read back from its own copy of the item
    # (``ledger.capture.spool``): one string per agent and per session, not one a key (150 B an item).
    return (intern(source.agent), intern(source.session), source.record) if source is not None else None


def session_records(
    ledger: Ledger, location: Location, task_id: UUID, upto: int, agent: str, session: str, prefix: str
) -> set[str]:
    """The records starting with ``prefix`` of this agent's session that the task holds at positions ``<= upto``."""
    return ledger.store.session_records(task_id, upto, agent, session, prefix)


def task_for_session(ledger: Ledger, location: Location, agent: str, session_id: str) -> UUID | None:
    """The task a conversation was linked to, if any (the latest link wins: a session whose task was
    closed under it moves on to a new task)."""
    return ledger.store.task_for_session(agent, session_id)


def task_for_records(ledger: Ledger, location: Location, agent: str, records: Iterable[str]) -> UUID | None:
    """A task that already holds one of ``records`` (e.g. the parent of a resumed session's first line)."""
    wanted = sorted(set(records))
    if not wanted:
        return None
    # A record may be referenced as itself or as the transcript-end checkpoint keyed after it.
    return ledger.store.task_for_records(agent, wanted + [f"{END}{r}" for r in wanted])


Forgotten = Callable[[list[Key]], dict[Key, int]]
"""Which of these source keys a forgotten task held, with its number."""


def forgotten_keys(ledger: Ledger) -> Forgotten:
    """The tombstone check for ``record_unseen``: one store query per batch."""

    def check(keys: list[Key]) -> dict[Key, int]:
        hashes = {key_hash(k): k for k in keys}
        return {hashes[h]: number for h, number in ledger.store.forgotten(hashes).items()}

    return check


class ForgottenSession(Refused):
    """Every record of a session belongs to a forgotten task: nothing of it is imported again."""

    def __init__(self, number: int, rejected: list[tuple[Item, str]]) -> None:
        super().__init__(f"skipped: these records belong to forgotten task #{number}; nothing imported")
        self.number = number
        self.rejected = rejected


@dataclass
class Appended:
    items: list[Item] = field(default_factory=list)
    rejected: list[tuple[Item, str]] = field(default_factory=list)
    """Items the catalogue or the task's rules refused, with why; the rest still land."""


Known = dict[UUID, tuple[int, set[Key]]]
"""Per task this import opened, every source key it held at a version, as the import's writes left it."""


class Seen:
    """The source keys a write treats as its task's: those it was given, and, unless those are all the task holds
    (``complete``: a task this import opened, ``Known``), those the store holds of each batch it is asked about
    (``learn``, one question per batch: ``LedgerStore.held_keys``)."""

    def __init__(self, keys: set[Key], ask: Callable[[set[Key]], set[Key]] | None = None) -> None:
        self.keys = keys
        self.ask = ask
        self.asked: set[Key] = set()

    @property
    def complete(self) -> bool:
        return self.ask is None

    def learn(self, keys: Iterable[Key]) -> None:
        if self.ask is None:
            return
        new = {k for k in keys if k not in self.keys and k not in self.asked}
        if new:
            self.asked |= new
            self.keys |= self.ask(new)

    def __contains__(self, key: Key) -> bool:
        return key in self.keys

    def add(self, key: Key) -> None:
        self.keys.add(key)


Record = Callable[[list[Item]], Appended]
"""Records more items on a write's draft, each under the write's own rules (source keys, tombstones)."""
Then = Callable[["Draft", Record], None]
"""Run in a write once its items are recorded, with the draft and how to record more on it: what the
write's own events decide is added in the same transaction (an import's ending status, ``importer``)."""


def append_unseen(
    ledger: Ledger, location: Location, task_id: UUID, items: list[Item], known: Known | None = None,
    then: Then | None = None,
) -> Appended:
    """Append the items whose source key the task does not hold yet, in one transaction.

    Items without a source are always appended. Written through ``Ledger.write``, which redacts the
    items once and re-runs the filter on a fresh read when another writer got there first.

    ``known`` carries the task's keys from one write to the next (an import's batches and files):
    the store is read only when the task is not at the version they were known at (its first write
    in the import, or another writer's events since), and the keys this write stored are added.

    ``then`` runs after the items are recorded, in each attempt (``Then``).
    """
    forgotten = forgotten_keys(ledger)
    after: list[tuple[int, set[Key]]] = []

    def decide(draft: Draft) -> Appended:
        held = known.get(task_id) if known is not None else None
        if held is not None and held[0] == draft.version:
            seen = Seen(set(held[1]))
        else:
            version = draft.version
            seen = Seen(set(), lambda keys: ledger.store.held_keys(task_id, version, keys))
        done = _recorded(draft, seen, forgotten, then)
        # Carried on only while complete: keys asked of the store are only those of this write's items.
        after[:] = [(draft.version, held[1] | _keys(done))] if seen.complete and held is not None else []
        return done

    _, outcome = ledger.write(task_id, items, decide)
    if known is not None:
        # Only once the write is stored (``after`` is its last attempt's); a task another writer moved on is
        # asked about from then on, its keys no longer held here.
        if after:
            known[task_id] = after[0]
        else:
            known.pop(task_id, None)
    return outcome


def _keys(done: Appended) -> set[Key]:
    """The source keys of what a write recorded."""
    return {k for _, fields in done.items if (k := key_of(fields.get("source"))) is not None}


def open_with(
    ledger: Ledger, title: str, items: list[Item], *, cwd: str | None, actor: str,
    project: str | None = None, timestamp: Any = None, known: Known | None = None, then: Then | None = None,
) -> tuple[UUID, Appended]:
    """Open a task whose first events are ``items``, all in one transaction (``Ledger.write`` of a
    ``NewTask``): an import killed midway never leaves an empty task behind for a re-run to duplicate.
    With ``known``, the new task's keys are added to it, and ``then`` runs as it does there (``append_unseen``).

    When every item with a source belongs to a forgotten task, no task is opened (its title would
    bring the forgotten session back): ``ForgottenSession`` says so."""
    forgotten = forgotten_keys(ledger)
    # Source keys are identifiers, which redaction leaves alone: checked before the write redacts.
    keys = [k for _, fields in items if (k := key_of(fields.get("source"))) is not None]
    if keys and len(gone := forgotten(keys)) == len(set(keys)):
        number = min(gone.values())
        raise ForgottenSession(number, [(item, f"forgotten task #{number}") for item in items])
    opening = NewTask(title, cwd=cwd, actor=actor, project=project, timestamp=timestamp)
    state, outcome = ledger.write(opening, items, lambda draft: _recorded(draft, Seen(set()), forgotten, then))
    assert state.id is not None
    if known is not None:
        known[state.id] = (state.position, _keys(outcome))  # a new task holds just these
    return state.id, outcome


def _recorded(draft: Draft, seen: Seen, forgotten: Forgotten, then: Then | None) -> Appended:
    """``record_unseen`` of the draft's items, then ``then``'s, all in one ``Appended``."""
    done = record_unseen(draft, seen, forgotten)
    if then is not None:

        def record(more: list[Item]) -> Appended:
            added = record_unseen(draft, seen, forgotten, more)
            done.items.extend(added.items)
            done.rejected.extend(added.rejected)
            return added

        then(draft, record)
    return done


def record_unseen(
    draft: Draft, seen: Seen, forgotten: Forgotten | None = None, items: list[Item] | None = None
) -> Appended:
    """Record on the task the draft's items (or ``items``, redacted as the draft records them) whose source
    key is not in ``seen`` (updated); refused ones are reported, and the rest still land.

    With ``forgotten``, items whose key a forgotten task held are refused too, naming that task."""
    result = Appended()
    items = draft.items if items is None else items
    keys = [k for _, f in items if (k := key_of(f.get("source"))) is not None]
    seen.learn(keys)
    gone = forgotten(keys) if forgotten else {}
    for event_class, fields in items:
        key = key_of(fields.get("source"))
        if key is not None and key in seen:
            continue
        if key is not None and key in gone:
            result.rejected.append(((event_class, fields), f"forgotten task #{gone[key]}"))
            continue
        if key is not None:
            seen.add(key)  # a source repeated inside one batch lands once
        cls, values = _resolve(draft, event_class, fields)
        try:
            # A refused event leaves the task unchanged (events are validated before they
            # are applied), so the batch goes on.
            draft.record(cls, **values)
        except ValidationError as exc:
            result.rejected.append(((event_class, fields), _invalid(cls, exc)))
            continue
        except RuleBroken as exc:
            result.rejected.append(((event_class, fields), str(exc).splitlines()[0]))
            continue
        result.items.append((event_class, fields))
    return result


def _invalid(cls: type[ev.TaskEvent], exc: ValidationError) -> str:
    """One line naming the event and each field refused with why (never the value: it may be a secret)."""
    why = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'event'}: {e['msg']}" for e in exc.errors())
    return f"{cls.__name__} refused: {why}"


def _resolve(draft: Draft, event_class: type[ev.TaskEvent], fields: dict[str, Any]) -> Item:
    """Turn the importer's ``LATEST_REQUIREMENT`` placeholder into a position (or a new requirement)."""
    if event_class is ev.RequirementChanged and fields.get("supersedes") == LATEST_REQUIREMENT:
        latest = draft.latest_requirement()
        if latest is None:
            return ev.RequirementStated, {k: v for k, v in fields.items() if k != "supersedes"}
        return event_class, {**fields, "supersedes": latest}
    return event_class, fields
