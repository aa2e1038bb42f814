"""The ledger's head: one token over every task's head and the task list's head, for someone outside.

Each task's anchor and the task list's anchor live in the same database as the rows they anchor, so
someone with write access can delete a whole task (its rows, snapshots, anchor and entry, the list
renumbered) or cut or rewrite a task with its chain and anchor recomputed, and `trail verify` cannot
tell. A token printed by `trail checkpoint --ledger` and kept elsewhere can: `trail verify --head
TOKEN` holds today's ledger to it and names what changed since.

The token is ``ledger1:`` + base64url of: a sha256 over every task's (number, id, position, full
chain hash) and the task list's (position, full chain hash), then per task its number, the first 4
bytes of its id, its position and the first 16 bytes of its chain hash, and the task list's position and
first 16 bytes. The digest binds the whole state (checked with the full hashes read back at the
recorded positions); the prefixes only say which task broke and how. A ledger that grew since (new
events, new tasks) still holds the token; a task forgotten since, with its forget recorded in the task
list, is named but is not a break.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast
from uuid import UUID

from ledger.base.errors import BadInput
from ledger.domain import registry as reg
from ledger.domain.mapper import PydanticMapper
from ledger.domain.registry import REGISTRY_ID
from ledger.stores import archived as archive

if TYPE_CHECKING:
    from ledger.app.store import Ledger

PREFIX = "ledger1:"
_TASK = struct.Struct(">I4sI16s")
_HEAD = struct.Struct(">32sII16s")
"""The digest, how many tasks, the task list's position and its hash's first 16 bytes."""


@dataclass(frozen=True)
class Held:
    """One task's head as the token holds it."""

    number: int
    id_prefix: bytes
    position: int
    chain_prefix: bytes


@dataclass(frozen=True)
class Token:
    digest: bytes
    tasks: list[Held]
    registry_position: int
    registry_prefix: bytes


@dataclass(frozen=True)
class Finding:
    """What differs from the token: ``kind`` is gone, renumbered, swapped, truncated, rewritten,
    registry, digest, or forgotten (recorded, so not a break)."""

    number: int | None
    kind: str
    detail: str

    @property
    def is_break(self) -> bool:
        return self.kind != "forgotten"


def _raw(chain_hash: str) -> bytes:
    """The hash part of a chain string (``2:<hex>`` or a v1 bare hex) as bytes; empty for none."""
    try:
        return bytes.fromhex(chain_hash.rpartition(":")[2])
    except ValueError:
        return b""


def _digest(tasks: list[tuple[int, UUID, int, str]], registry: tuple[int, str]) -> bytes:
    hasher = hashlib.sha256(b"tasktrail ledger head 1\n")
    for number, task_id, position, chain_hash in tasks:
        hasher.update(f"{number} {task_id.hex} {position} {chain_hash}\n".encode())
    hasher.update(f"registry {registry[0]} {registry[1]}\n".encode())
    return hasher.digest()


def encode(tasks: list[tuple[int, UUID, int, str]], registry: tuple[int, str]) -> str:
    """The token for these task heads (number, id, position, chain hash) and the task list's head."""
    body = _HEAD.pack(_digest(tasks, registry), len(tasks), registry[0], _raw(registry[1])[:16])
    body += b"".join(_TASK.pack(n, t.bytes[:4], p, _raw(c)[:16]) for n, t, p, c in tasks)
    return PREFIX + base64.urlsafe_b64encode(zlib.compress(body, 9)).decode().rstrip("=")


def decode(token: str) -> Token:
    """The token `trail checkpoint --ledger` printed; BadInput naming it when it is not one."""
    text = token.strip()
    bad = BadInput(f"--head {text[:40]!r}{'...' if len(text) > 40 else ''}: not a ledger head "
                   "(as `trail checkpoint --ledger` prints it, ledger1:...)")
    if not text.startswith(PREFIX):
        raise bad
    try:
        data = text.removeprefix(PREFIX)
        body = zlib.decompress(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))
        digest, count, registry_position, registry_prefix = _HEAD.unpack_from(body)
        if len(body) != _HEAD.size + count * _TASK.size:
            raise ValueError("length")
        held = [Held(*_TASK.unpack_from(body, _HEAD.size + i * _TASK.size)) for i in range(count)]
    except (ValueError, zlib.error, struct.error, binascii.Error):
        raise bad from None
    return Token(digest, held, registry_position, registry_prefix)


def is_ledger_token(token: str) -> bool:
    return token.strip().startswith(PREFIX)


# -- reading the heads back ------------------------------------------------------------------------


def chain_at(ledger: Ledger, task_id: UUID, position: int) -> str | None:
    """The stored chain hash of the task's event at ``position`` (live or archived); None when there is none."""
    mapper = cast(PydanticMapper, ledger.mapper)
    rows = ledger.recorder.select_events(task_id, gt=position - 1, lte=position)
    if rows and rows[0].originator_version == position:
        return str(mapper.decode_state(rows[0].state).get("chain") or "")
    for found in archive.archives(ledger, task_id):
        if found.first <= position <= found.last:
            if position == found.last and found.head:
                return found.head
            for _, stored in archive.archived_rows(found, -1):
                if stored.originator_version == position:
                    return str(mapper.decode_state(stored.state).get("chain") or "")
    return None


def registry_chain_at(ledger: Ledger, position: int) -> str | None:
    """The task list's chain head after its event ``position`` (computed for events from before the
    chain, as ``registry.head_of`` does); None when it has fewer events."""
    decode_state = cast(PydanticMapper, ledger.mapper).decode_state
    rows = ledger.recorder.select_events(REGISTRY_ID, lte=position)
    if len(rows) < position:
        return None
    return reg.head_of((r.topic, r.originator_version, decode_state(r.state)) for r in rows)


def current(ledger: Ledger) -> str:
    """The token of the ledger as it stands (every task's anchored head and the task list's)."""
    tasks: list[tuple[int, UUID, int, str]] = []
    for entry in ledger.entries():
        anchor = ledger.store.head(entry.task_id)
        if anchor is None:
            continue  # a ledger from before anchors: the verify walk before this names what it holds
        tasks.append((entry.number, entry.task_id, anchor.version, anchor.chain or chain_at(
            ledger, entry.task_id, anchor.version) or ""))
    count = len(ledger.recorder.select_events(REGISTRY_ID))
    return encode(tasks, (count, registry_chain_at(ledger, count) or ""))


def check(ledger: Ledger, token: str) -> list[Finding]:
    """What in the ledger is not what ``token`` recorded, tasks by number and then the task list."""
    kept = decode(token)
    entries = ledger.entries()
    by_prefix = {e.task_id.bytes[:4]: e for e in entries}
    forgotten = {t.number: t for t in ledger.tombstones()}
    recorded = {held.number: held for held in kept.tasks}
    numbers = {prefix: e.number for prefix, e in by_prefix.items()}
    findings: list[Finding] = []
    rebuilt: list[tuple[int, UUID, int, str]] = []
    for held in kept.tasks:
        entry = by_prefix.get(held.id_prefix)
        name = f"task #{held.number}"
        if entry is None:
            tomb = forgotten.get(held.number)
            if tomb is not None and tomb.task_id.bytes[:4] == held.id_prefix:
                findings.append(Finding(held.number, "forgotten", f"{name} was forgotten since (its forget is "
                                        "recorded in the task list)"))
                rebuilt.append((held.number, tomb.task_id, held.position, "forgotten"))
                continue
            findings.append(Finding(held.number, "gone", f"{name} is gone: no task in the list has its id "
                                    "(deleted whole, outside tasktrail)"))
            continue
        if entry.number != held.number:
            other = recorded.get(entry.number)
            now = numbers.get(other.id_prefix) if other is not None else None
            if now == held.number:
                findings.append(Finding(held.number, "swapped", f"{name} is now #{entry.number}, and "
                                        f"#{entry.number} is now #{held.number} (the two were swapped)"))
            else:
                findings.append(Finding(held.number, "renumbered", f"{name} is now #{entry.number} (a task "
                                        "before it deleted and the list renumbered)"))
        found = chain_at(ledger, entry.task_id, held.position)
        rebuilt.append((held.number, entry.task_id, held.position, found or ""))
        if found is None:
            last = ledger.store.head(entry.task_id)
            ends = last.version if last is not None else 0
            findings.append(Finding(held.number, "truncated", f"{name}'s log ends before position "
                                    f"{held.position}, which the head recorded (at {ends} now)"))
        elif _raw(found)[:16] != held.chain_prefix:
            findings.append(Finding(held.number, "rewritten", f"{name}'s event at position {held.position} is not "
                                    "the one the head recorded (rewritten, its hash recomputed)"))
    registry = registry_chain_at(ledger, kept.registry_position)
    if registry is None:
        findings.append(Finding(None, "registry", f"the task list ends before position {kept.registry_position}, "
                                "which the head recorded (cut)"))
    elif _raw(registry)[:16] != kept.registry_prefix:
        findings.append(Finding(None, "registry", f"the task list's event at position {kept.registry_position} is "
                                "not the one the head recorded (rewritten: tasks removed, renumbered or swapped)"))
    if not findings and _digest(rebuilt, (kept.registry_position, registry or "")) != kept.digest:
        findings.append(Finding(None, "digest", "the ledger's heads do not hash to the head recorded "
                                "(rewritten past what the token's prefixes tell)"))
    return findings
