"""Reading JSON input within bounds: any JSON text (``loads``, refused before parsing when nested
deeper than ``MAX_DEPTH``), and transcripts as a stream of numbered lines (``Lines``, none longer than
``MAX_LINE``) and their JSON objects (``records``). What cannot be read is skipped with its line
number and why, never fatal.

Standard library only: the hook (``ledger.capture.hook``) parses its payload here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from os import PathLike

MAX_DEPTH = 128
"""Levels of arrays and objects taken. Real transcripts nest about 10 deep; what reads a payload next
(redaction's walk, the store's encoder) recurses, so much deeper JSON would crash it, not this."""
MAX_LINE = 64 * 1024 * 1024
"""Bytes of one transcript line taken: a longer line is skipped unread, so memory stays bounded."""

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.S)
"""A JSON string, or the rest of the text after a string's opening quote when it never closes (a torn
line): possessive, so one pass. Requiring the closing quote, each escaped quote inside a torn string
began a new try that read to the end (a 256 KiB torn line took 125 s)."""
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class Skipped(NamedTuple):
    line: int
    reason: str


class TooDeep(ValueError):
    """JSON nested deeper than ``MAX_DEPTH``."""


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text``'s arrays and objects nest deeper than ``limit`` (brackets in strings do not count)."""
    if text.count("[") + text.count("{") <= limit:
        return False  # cannot nest deeper than it has openings: the common case costs two counts
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    level = 0
    for char in brackets:
        if char in "[{":
            level += 1
            if level > limit:
                return True
        else:
            level -= 1
    return False


def loads(text: str | bytes, limit: int = MAX_DEPTH) -> Any:
    """``json.loads``, refusing (``TooDeep``, a ValueError) text nested deeper than ``limit`` before parsing."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if too_deep(text, limit):
        raise TooDeep(f"JSON nested deeper than {limit} levels")
    try:
        return json.loads(text)
    except RecursionError:  # a limit above what the parser's own recursion takes
        raise TooDeep(f"JSON nested deeper than {limit} levels") from None


class Lines:
    """The numbered lines of a file, read as a stream each time it is iterated (a mapper that needs
    session-level facts first may read it twice). Bytes are decoded line by line, bad UTF-8 replaced.
    A line longer than ``max_line`` bytes is never held: it is read past in pieces and noted in
    ``skipped`` (the notes of the latest pass)."""

    def __init__(self, path: str | PathLike[str], max_line: int = MAX_LINE) -> None:
        self.path = path
        self.max_line = max_line
        self.skipped: list[Skipped] = []

    def __iter__(self) -> Iterator[tuple[int, str]]:
        self.skipped = []
        with open(self.path, "rb") as handle:
            number = 0
            while True:
                raw = handle.readline(self.max_line + 1)
                if not raw:
                    return
                number += 1
                if len(raw) > self.max_line and not raw.endswith(b"\n"):
                    size = len(raw)
                    del raw
                    size += _skip_line(handle, self.max_line)
                    self.skipped.append(Skipped(number, f"line of {size} bytes is longer than {self.max_line}"))
                    continue
                text = raw.decode("utf-8", "replace")
                del raw  # a long line is held once, not as bytes and text both
                yield number, text


def _skip_line(handle: Any, piece: int) -> int:
    """Read past the rest of a line in pieces of at most ``piece`` bytes; how many bytes that was."""
    size = 0
    while chunk := handle.readline(piece):
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return size


def records(lines: Iterable[tuple[int, str]], skipped: list[Skipped]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every line that holds a JSON object; the others go to ``skipped``."""
    for number, raw in lines:
        if not raw.strip():
            continue
        try:
            record = loads(raw)
            del raw  # while the record is mapped, its text is no longer held
        except TooDeep as exc:
            skipped.append(Skipped(number, str(exc)))
            continue
        except json.JSONDecodeError as exc:
            skipped.append(Skipped(number, f"not JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            skipped.append(Skipped(number, "not a JSON object"))
            continue
        yield number, record
