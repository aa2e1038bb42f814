"""Unified-diff hunks, and following one line back through a diff to the version before it."""

from __future__ import annotations

import re
from dataclasses import dataclass

HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    lines: tuple[str, ...]
    """Body lines, each starting with ' ', '-' or '+'."""


def parse(diff: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    header: tuple[int, int, int, int] | None = None
    body: list[str] = []
    for line in diff.splitlines():
        match = HUNK_RE.match(line)
        if match:
            if header:
                hunks.append(Hunk(*header, tuple(body)))
            old_start, old_len, new_start, new_len = match.groups()
            header = (int(old_start), int(old_len or 1), int(new_start), int(new_len or 1))
            body = []
        elif header and line[:1] in (" ", "-", "+") and not line.startswith(("---", "+++")):
            body.append(line)
    if header:
        hunks.append(Hunk(*header, tuple(body)))
    return hunks


@dataclass(frozen=True)
class Trace:
    touched: bool
    """The diff added or replaced this line."""
    old_line: int | None
    """Where the line was before the diff (None: it did not exist before)."""


def trace(hunks: list[Hunk], new_line: int) -> Trace:
    """Follow line ``new_line`` of the new version back to the old version."""
    shift = 0  # new minus old line numbers, from hunks ending above the line
    for hunk in hunks:
        if new_line < hunk.new_start:
            break
        if new_line >= hunk.new_start + hunk.new_len:
            shift += hunk.new_len - hunk.old_len
            continue
        old, new = hunk.old_start, hunk.new_start
        removed: list[int] = []  # old line numbers of the current run of '-' lines
        added = 0  # '+' lines since that run
        for body in hunk.lines:
            tag = body[0]
            if tag == " ":
                if new == new_line:
                    return Trace(False, old)
                old, new, removed, added = old + 1, new + 1, [], 0
            elif tag == "-":
                if added:
                    removed, added = [], 0
                removed.append(old)
                old += 1
            else:
                if new == new_line:
                    # The k-th '+' after a run of '-' replaced the k-th of them; beyond those it is new.
                    return Trace(True, removed[added] if added < len(removed) else None)
                new += 1
                added += 1
        return Trace(True, None)  # malformed or cut hunk: treat the line as born here
    return Trace(False, new_line - shift)
