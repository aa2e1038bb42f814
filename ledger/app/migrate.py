"""Copying a ledger to another store (SQLite to PostgreSQL, or any way round) with its chains intact.

Stored rows are copied as they are, bytes and all, through the library's recorders, and the
archives of compacted events with them (their files and index rows, through the target's
``LedgerStore``), so every hash chain carries over untouched and is recomputed on the copy.

The copy is built in a staging place the target's store provides (a temporary file beside an
SQLite target, a schema of its own for PostgreSQL), verified there (every source event, live or
archived, byte for byte; every task's chain across its archives), and only then published over
the target in one step. A copy that fails, or a run that dies, leaves no target behind (or the
old one untouched). A target that already holds part of the ledger (an earlier copy) is taken
into the staging copy first, so a re-run copies only what the target lacks and one that lacks
nothing writes nothing; a target holding different events under the same ids is refused before
anything is written.

Encryption at rest (``ledger.base.atrest``): the source is read with the environment's key (or none);
the target is written with ``target_cipher`` (another key, or {} for none; the same as the source's when
None). When the two differ every payload is deciphered and enciphered again (events, snapshots, and
archives rewritten with their new sha256), which is how a plain ledger becomes an encrypted one and back;
events are compared by their plaintext, so the byte-for-byte check holds across the change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast
from uuid import UUID

import orjson
from eventsourcing.persistence import ApplicationRecorder, StoredEvent

from ledger.app import verify
from ledger.app.archive import write_parquet
from ledger.app.store import Ledger, open_ledger
from ledger.base import atrest, private
from ledger.base.crashpoints import CRASH_ENV
from ledger.base.errors import BadInput, Refused, StoreUnavailable
from ledger.base.location import Location
from ledger.domain.mapper import PydanticMapper
from ledger.domain.registry import REGISTRY_ID
from ledger.stores import archived, store_class
from ledger.stores.base import Archive

BATCH = 500
"""Events per write transaction on the target (and per progress line)."""

Key = tuple[UUID, int]


CRASH_STEP = "migrate-verified"
"""Test seam: with ``TRAIL_CRASH_AT`` set to this, migrate kills itself (kill -9) after verifying
the staging copy and before publishing it."""


@dataclass(frozen=True)
class Report:
    source: str
    target: str
    events: int
    """Events in the source, live and archived."""
    copied: int
    already_there: int
    snapshots_copied: int
    tasks_verified: int
    seconds: float
    archives_copied: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Content:
    """What a ledger holds: its live events in notification order, its archives, a digest of every event."""

    live: list[StoredEvent]
    archives: list[Archive]
    digests: dict[Key, str] = field(default_factory=dict)
    """Every event, live or archived."""

    @property
    def tasks(self) -> list[UUID]:
        return sorted({k[0] for k in self.digests} - {REGISTRY_ID})


def _content(ledger: Ledger) -> _Content:
    live = list(_all_events(ledger.recorder))
    found = ledger.store.archives(None)
    plain = cast(PydanticMapper, ledger.mapper).plain
    digests = {}
    for one in found:
        digests.update({_key(e): _digest(e, plain) for _, e in archived.archived_rows(one, -1)})
    digests.update({_key(e): _digest(e, plain) for e in live})
    return _Content(live, found, digests)


Recode = Callable[[bytes], bytes]


def _recoder(frm: Ledger, to: Ledger) -> Recode | None:
    """Stored bytes of ``frm`` as ``to`` stores them, when the two ledgers' keys differ (None: the same)."""
    if frm.env.get("CIPHER_KEY") == to.env.get("CIPHER_KEY"):
        return None
    plain, sealed = cast(PydanticMapper, frm.mapper).plain, cast(PydanticMapper, to.mapper).sealed
    return lambda state: sealed(plain(state))


def run(source: Location, target: Location, progress: Callable[[str], None],
        target_cipher: dict[str, str] | None = None) -> Report:
    """Copy ``source`` into ``target`` (created on first use), verify, publish, and report. ``target_cipher``:
    the target's key settings (``atrest.cipher_env``; {} for a plain target), when not the source's."""
    if source.key == target.key:
        raise BadInput(f"--from and --to are the same ledger ({source.display})")
    if not store_class(source).exists(source):
        raise BadInput(f"--from {source.display}: no ledger there")
    started = time.perf_counter()
    src = open_ledger(source, create="nothing")
    try:
        content = _content(src)
        if not content.digests:
            raise BadInput(f"--from {source.display}: the ledger holds no events")
        if problems := _chain_problems(src, content.tasks):
            raise Refused(f"source {source.display} does not verify ({problems[0]}); nothing copied")
        # The target is opened (and so created) only once the source is known to be worth copying.
        cipher = target_cipher if target_cipher is not None else atrest.cipher_env()
        return _copy(src, content, source, target, progress, started, cipher)
    finally:
        src.close()


def _copy(
    src: Ledger, content: _Content, source: Location, target: Location, progress: Callable[[str], None],
    started: float, cipher: dict[str, str],
) -> Report:
    kind = store_class(target)
    dst = open_ledger(target, create="nothing", cipher=cipher) if kind.exists(target) else None
    try:
        have = _content(dst) if dst is not None else _Content([], [])
        # Re-enciphered archives are new files: they are the same archive when they cover the same chain.
        _refuse_clashes(content, have, target, by_file=src.env.get("CIPHER_KEY") == cipher.get("CIPHER_KEY"))
        missing = [e for e in content.live if _key(e) not in have.digests]
        missing_archives = [a for a in content.archives if (a.task_id, a.first) not in _archive_keys(have)]
        total = len(content.digests)
        if not missing and not missing_archives:
            progress(f"{target.display} already holds all {total} events; nothing to copy")
            assert dst is not None
            tasks = _verify(dst, content, target)
            return _report(source, target, content, 0, 0, 0, tasks, started)
        progress(f"copying {total - len(have.digests.keys() & content.digests.keys())} of {total} events "
                 f"to {target.display}")
        staging = kind.stage(target)
        try:
            stg = open_ledger(staging, cipher=cipher)
            try:
                if dst is not None:
                    _transfer(dst, have, stg, lambda _: None)  # what the target holds already comes along
                copied, archives_copied, snapshots = _transfer(src, content, stg, progress)
                tasks = _verify(stg, content, target, have)
            finally:
                stg.close()
            if dst is not None:
                dst.close()
                dst = None
            if os.environ.get(CRASH_ENV) == CRASH_STEP:
                os.kill(os.getpid(), signal.SIGKILL)
            kind.publish(staging, target)
        except BaseException:
            kind.discard(staging)
            raise
        if have.digests:
            from projections.readmodel import readmodel_path

            readmodel_path(target).unlink(missing_ok=True)  # built from the ledger that was replaced
        progress(f"verified {tasks} task chains and {total} events on {target.display}")
        return _report(source, target, content, copied, archives_copied, snapshots, tasks, started)
    finally:
        if dst is not None:
            dst.close()


def _report(source: Location, target: Location, content: _Content, copied: int, archives_copied: int,
            snapshots: int, tasks: int, started: float) -> Report:
    return Report(
        source=source.display,
        target=target.display,
        events=len(content.digests),
        copied=copied,
        already_there=len(content.digests) - copied,
        snapshots_copied=snapshots,
        tasks_verified=tasks,
        seconds=round(time.perf_counter() - started, 3),
        archives_copied=archives_copied,
    )


def _archive_keys(content: _Content) -> dict[tuple[UUID, int], Archive]:
    return {(a.task_id, a.first): a for a in content.archives}


def _refuse_clashes(content: _Content, have: _Content, target: Location, by_file: bool = True) -> None:
    """Refuse, before anything is written, a target whose events or archives differ from the source's."""
    clashes = [k for k, digest in content.digests.items() if k in have.digests and have.digests[k] != digest]
    if clashes:
        task, position = sorted(clashes)[0]
        raise Refused(
            f"target {target.display} already holds different events under the same ids "
            f"({len(clashes)}, first {task} position {position}); nothing copied"
        )
    ours, theirs = _archive_keys(content), _archive_keys(have)
    shared = {k[0] for k in content.digests} & {k[0] for k in have.digests}
    for task in sorted(shared - {REGISTRY_ID}):
        mine = sorted((a.first, a.last, a.sha256 if by_file else a.head) for k, a in ours.items() if k[0] == task)
        other = sorted((a.first, a.last, a.sha256 if by_file else a.head) for k, a in theirs.items() if k[0] == task)
        if mine != other:
            raise Refused(f"target {target.display} holds task {task} compacted differently; nothing copied")


def _transfer(frm: Ledger, content: _Content, to: Ledger, progress: Callable[[str], None]) -> tuple[int, int, int]:
    """Copy into ``to`` what of ``content`` (read from ``frm``) it lacks: live events (the registry
    last), archives (files and index rows), snapshots, tombstoned source keys. Returns (events,
    of them archived ones; archives; snapshots) copied."""
    recode = _recoder(frm, to)
    there = {_key(e) for e in _all_events(to.recorder)}
    archived_there = _archive_keys(_Content([], to.store.archives(None)))
    missing = [e for e in content.live if _key(e) not in there]
    missing.sort(key=lambda e: _key(e)[0] == REGISTRY_ID)
    done = 0
    for batch in _batches(missing, BATCH):
        to.recorder.insert_events(_recoded(batch, recode))
        done += len(batch)
        progress(f"  {done}/{len(missing)} events")
    moved = archives = 0
    directory = to.store.archive_dir()
    for found in content.archives:
        if (found.task_id, found.first) in archived_there:
            continue
        private.folder(directory)
        placed = directory / found.path.name
        digest = found.sha256
        if recode is None:
            shutil.copyfile(found.path, placed)
        else:
            write_parquet(
                [("event", nid, e.originator_version, e.topic, recode(e.state)) for nid, e in
                 archived.archived_rows(found, -1)]
                + [("snapshot", None, s.originator_version, s.topic, recode(s.state)) for s in
                   archived.archived_snapshots(found)],
                placed,
            )
            digest = archived.file_sha256(placed)
        manifest = found.path.with_suffix(".manifest.json")
        if manifest.exists():
            said = {**orjson.loads(manifest.read_bytes()), "sha256": digest}
            placed.with_suffix(".manifest.json").write_bytes(orjson.dumps(said, option=orjson.OPT_INDENT_2))
        to.store.put_archive(Archive(found.task_id, found.first, found.last, placed, digest, found.head,
                                     found.events))
        moved, archives = moved + found.events, archives + 1
        progress(f"  archive {found.path.name} ({found.events} events)")
    snapshots = _copy_snapshots(frm, to, {k[0] for k in content.digests}, recode)
    if keys := frm.store.tombstoned_keys():
        to.store.tombstone_keys(keys)
    return done + moved, archives, snapshots
def _recoded(rows: Sequence[StoredEvent], recode: Recode | None) -> Sequence[StoredEvent]:
    if recode is None:
        return rows
    return [StoredEvent(r.originator_id, r.originator_version, r.topic, recode(r.state)) for r in rows]


def _copy_snapshots(src: Ledger, dst: Ledger, originators: set[UUID], recode: Recode | None = None) -> int:
    """Snapshots are derived, so one the target already has at a position (its own or ours) is kept."""
    if src.snapshots is None or dst.snapshots is None:
        return 0
    copied = 0
    for originator in sorted(originators):
        have = {s.originator_version for s in dst.snapshots.recorder.select_events(originator)}
        new = [s for s in src.snapshots.recorder.select_events(originator) if s.originator_version not in have]
        if new:
            dst.snapshots.recorder.insert_events(_recoded(new, recode))
            copied += len(new)
    return copied


def _verify(dst: Ledger, content: _Content, target: Location, have: _Content | None = None) -> int:
    """Re-read ``dst``: every source event (and every event the target held) there byte for byte,
    live or archived, and every task's chain recomputed across its archives."""
    stored = _content(dst).digests
    expected = {**(have.digests if have else {}), **content.digests}
    lost = [k for k, digest in expected.items() if stored.get(k) != digest]
    if lost:
        raise StoreUnavailable(f"the copy for {target.display} lacks {len(lost)} events; nothing published")
    if problems := _chain_problems(dst, sorted({k[0] for k in expected} - {REGISTRY_ID})):
        raise StoreUnavailable(f"the copy for {target.display} does not verify: {problems[0]}; nothing published")
    return len(content.tasks)


def _chain_problems(ledger: Ledger, tasks: list[UUID]) -> list[str]:
    """Each task's chain recomputed over the rows ``ledger`` stores (``trail verify``'s walk)."""
    return [
        f"task {report.task_id}: chain broken at position {report.first_break.position} "
        f"({report.first_break.kind}: {report.first_break.detail})"
        for report in verify.verify_all(ledger, tasks)
        if report.first_break is not None
    ]


def _all_events(recorder: ApplicationRecorder) -> Iterator[StoredEvent]:
    """Every stored event in notification order, read a page at a time."""
    start = 1
    while True:
        page = recorder.select_notifications(start=start, limit=BATCH)
        if not page:
            return
        for n in page:
            yield StoredEvent(n.originator_id, n.originator_version, n.topic, bytes(n.state))
        start = page[-1].id + 1


def _batches(items: Sequence[StoredEvent], size: int) -> Iterator[Sequence[StoredEvent]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _key(event: StoredEvent) -> Key:
    return UUID(str(event.originator_id)), event.originator_version


def _digest(event: StoredEvent, plain: Recode) -> str:
    """The event's identity whatever key it is stored under: its topic and its payload's plaintext."""
    return hashlib.sha256(event.topic.encode() + b"\0" + plain(event.state)).hexdigest()
