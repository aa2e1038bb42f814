"""Unified-diff hunks, and following one line back through a diff to the version before it.

The hunks are read by ``unidiff``, which counts each hunk's lines against its header, so a
removed line that reads ``-- comment`` (``--- comment`` in the diff) is a body line, not a
file header.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from unidiff.constants import RE_HUNK_HEADER
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk, PatchSet

# Stored diffs are often bare hunks (importers keep no file headers) and may start mid-hunk
# (a bounded tail); unidiff wants a file header before the first hunk, so one is supplied.
_HEADER = ("--- a\n", "+++ b\n")


def parse(diff: str) -> list[Hunk]:
    """The diff's hunks, in order. Text before the first hunk header is ignored.

    Each hunk is parsed on its own, so a cut or malformed one costs only itself: it is kept
    with its header and no body (``trace`` then treats its lines as born there).
    """
    chunks: list[list[str]] = []
    for line in io.StringIO(diff):  # splits at "\n" only, as the diff was written
        if RE_HUNK_HEADER.match(line):
            chunks.append([line])
        elif chunks:
            chunks[-1].append(line)
    hunks: list[Hunk] = []
    for chunk in chunks:
        try:
            hunks.append(PatchSet([*_HEADER, *chunk])[0][0])
        except UnidiffParseError:
            header = RE_HUNK_HEADER.match(chunk[0])
            assert header is not None
            hunks.append(Hunk(*header.groups()))
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
        # A side of length 0 names the line before the hunk, not its first line.
        first = hunk.target_start if hunk.target_length else hunk.target_start + 1
        if new_line < first:
            break
        if new_line >= first + hunk.target_length:
            shift += hunk.target_length - hunk.source_length
            continue
        removed: list[int | None] = []  # old line numbers of the current run of '-' lines
        added = 0  # '+' lines since that run
        for line in hunk:
            if line.is_context:
                if line.target_line_no == new_line:
                    return Trace(False, line.source_line_no)
                removed, added = [], 0
            elif line.is_removed:
                if added:
                    removed, added = [], 0
                removed.append(line.source_line_no)
            elif line.is_added:
                if line.target_line_no == new_line:
                    # The k-th '+' after a run of '-' replaced the k-th of them; beyond those it is new.
                    return Trace(True, removed[added] if added < len(removed) else None)
                added += 1
        return Trace(True, None)  # malformed or cut hunk: treat the line as born here
    return Trace(False, new_line - shift)
