"""A session's mapped items, held in a private temporary file once there are more than a few thousand.

A mapper appends a whole transcript's items before the import writes any (it may still insert a queued
prompt where it was typed, or fill in a compaction's summary, at the file's end), so a list of them grew
with the file: 103k small calls took 359 MB (issue 24). Past ``KEEP`` items the spool pickles each into
an unlinked temporary file and keeps only where it is (16 bytes an item); the import reads them back a
batch at a time. Only this process writes and reads the file (``tempfile.TemporaryFile``: mode 0600,
no name), so unpickling reads back nothing but what it wrote.

No secret reaches the file in clear: items go to it redacted, ``CHUNK`` at a time (one redactor, and
one call of the vendor ruleset where this process runs it, per chunk, as a write redacts its batch);
until then they wait in memory. The write redacts them again, which leaves a redacted text as it is.

An item is copied into the file when it is added: changing a stored item's fields in place afterwards
would not reach the copy. Mappers replace an item (``spool[i] = ...``) rather than change it, and
``tests/test_spool.py`` maps every fixture both ways to hold them to it.
"""

from __future__ import annotations

import pickle
import tempfile
from array import array
from collections.abc import Iterable, Iterator, MutableSequence
from typing import IO, Any, overload

from ledger.capture.items import Item
from ledger.domain.redact import Redactor

KEEP = 2_000
"""Items held in memory before the spool moves them to its file: a small session never makes one."""
CHUNK = 500
"""Items redacted together on their way to the file (and held in memory until then)."""


class Spool(MutableSequence[Item]):
    """A list of items (indexing, slicing to a list, insert, replace, delete) that spills past ``keep``
    (``KEEP`` as it is when the spool is made)."""

    def __init__(self, items: Iterable[Item] = (), keep: int | None = None) -> None:
        self._keep = KEEP if keep is None else keep
        self._memory: list[Item] | None = []
        self._file: IO[bytes] | None = None
        self._slots = array("q")
        """Past ``keep``: each item's slot, in order (a replaced item gets a new one)."""
        self._offsets = array("q")
        """Each slot's offset in the file, -1 while its item waits in ``_unwritten``."""
        self._unwritten: dict[int, Item] = {}
        """Items not yet redacted into the file, by slot."""
        self._kinds: list[type] = []
        """Each spilled item's event class, beside its slot: a look for one kind reads no item back."""
        self.extend(items)

    def __len__(self) -> int:
        return len(self._memory) if self._memory is not None else len(self._slots)

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> list[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | list[Item]:
        if self._memory is not None:
            return self._memory[index]
        if isinstance(index, slice):
            return [self._read(self._slots[i]) for i in range(*index.indices(len(self)))]
        return self._read(self._slots[index])

    @overload
    def __setitem__(self, index: int, value: Item) -> None: ...

    @overload
    def __setitem__(self, index: slice, value: Iterable[Item]) -> None: ...

    def __setitem__(self, index: int | slice, value: Any) -> None:
        if isinstance(index, slice):
            raise TypeError("a spool replaces one item at a time")
        if self._memory is not None:
            self._memory[index] = value
        else:
            self._slots[index] = self._slot(value)
            self._kinds[index] = value[0]

    def __delitem__(self, index: int | slice) -> None:
        if self._memory is not None:
            del self._memory[index]
        else:
            del self._slots[index]  # its slot (and bytes) stay, read by nobody
            del self._kinds[index]

    def insert(self, index: int, value: Item) -> None:
        if self._memory is not None:
            self._memory.insert(index, value)
            if len(self._memory) > self._keep:
                self._spill()
        else:
            self._slots.insert(index, self._slot(value))
            self._kinds.insert(index, value[0])

    def append(self, value: Item) -> None:
        if self._memory is not None:
            self._memory.append(value)
            if len(self._memory) > self._keep:
                self._spill()
        else:
            self._slots.append(self._slot(value))
            self._kinds.append(value[0])

    def __iter__(self) -> Iterator[Item]:
        if self._memory is not None:
            yield from self._memory
            return
        for i in range(len(self._slots)):
            yield self._read(self._slots[i])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Spool | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # changes: not a key

    def __repr__(self) -> str:
        where = "memory" if self._memory is not None else "file"
        return f"Spool({len(self)} items in {where})"

    def kinds(self) -> list[type]:
        """Each item's event class, in order, without reading the items back."""
        return [cls for cls, _ in self._memory] if self._memory is not None else list(self._kinds)

    @property
    def spilled(self) -> bool:
        """Whether the items are in the file (more than ``keep`` were added)."""
        return self._memory is None

    def _spill(self) -> None:
        held, self._memory = self._memory or [], None
        # Open for as long as the spool lives (it goes with the session), closed and gone when it is collected.
        self._file = tempfile.TemporaryFile(prefix="tasktrail-spool-")  # noqa: SIM115
        for item in held:
            self._slots.append(self._slot(item))
            self._kinds.append(item[0])

    def _slot(self, item: Item) -> int:
        """A new slot holding ``item``, in memory until its chunk is full."""
        slot = len(self._offsets)
        self._offsets.append(-1)
        self._unwritten[slot] = item
        if len(self._unwritten) >= CHUNK:
            self._flush()
        return slot

    def _flush(self) -> None:
        """Redact the waiting items and write them to the file."""
        assert self._file is not None
        handle, waiting, self._unwritten = self._file, self._unwritten, {}
        redactor = Redactor().prescan(fields for _, fields in waiting.values())
        offset = handle.seek(0, 2)
        for slot, (cls, fields) in waiting.items():
            self._offsets[slot] = offset
            pickle.dump((cls, redactor.fields(fields)), handle, protocol=pickle.HIGHEST_PROTOCOL)
            offset = handle.tell()

    def _read(self, slot: int) -> Item:
        offset = self._offsets[slot]
        if offset < 0:
            return self._unwritten[slot]
        assert self._file is not None
        self._file.seek(offset)
        item: Item = pickle.load(self._file)  # our own bytes, in a file only this process holds
        return item
