"""Line numbers for the hunks of an ``apply_patch`` text (Codex's patch format), so ``trail why PATH:LINE``
can follow a line through it.

A patch's hunks say no line (``@@`` or ``@@ CONTEXT``): Codex finds each one by searching the file. Once
it has applied the patch, the file holds each hunk's new side (context and ``+`` lines, as the patch
wrote them) verbatim, so ``locate`` finds them in that post-image, in order, and derives each old start
from the running offset of the hunks above. A hunk is located only where the answer is certain: its
new side occurs at exactly one place after the previous hunk that Codex's search (first exact match of
the old side from there) could have produced. A hunk it cannot place (its new side is not there, or
is there twice, or is empty: a pure deletion), makes the whole file unlocated: a diff numbered in part
would shift every line below the missing hunk, so the section stays as written and `why` keeps every
such change for every line, as before.

Standard library only, and only what the hook loads already (no dataclasses): the Codex hook locates a
patch's hunks in its PostToolUse, while the patched files are as the patch left them (``inbox_queue.HUNKS_KEY``),
before the inbox folds the row in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, NamedTuple

MAX_BYTES = 8 << 20
"""A patched file larger than this is not read: its hunks stay unlocated."""
_FILE_HEAD = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
_MOVE = re.compile(r"^\*\*\* Move to: (.+)$")
_EOF = "*** End of File"


class Chunk(NamedTuple):
    context: str | None
    """The text after ``@@``: a line Codex seeks before the hunk's lines."""
    old: tuple[str, ...]
    new: tuple[str, ...]
    body: tuple[str, ...]
    """The hunk's lines as a unified diff writes them (``' '``, ``-``, ``+`` and the text)."""
    end_of_file: bool


def chunks(section: str) -> list[Chunk]:
    """The hunks of one ``*** Update File`` section (its head lines and ``*** End Patch`` are skipped)."""
    out: list[Chunk] = []
    context: str | None = None
    old: list[str] = []
    new: list[str] = []
    body: list[str] = []
    eof, started = False, False

    def close() -> None:
        if started and (old or new):
            out.append(Chunk(context, tuple(old), tuple(new), tuple(body), eof))

    for line in section.split("\n"):
        if _FILE_HEAD.match(line) or _MOVE.match(line) or line.startswith("*** End Patch"):
            continue
        if not line and not started:
            continue
        if line == "@@" or line.startswith("@@ "):
            close()
            context, old, new, body, eof, started = line[3:] or None, [], [], [], False, True
            continue
        if line == _EOF:
            eof = True
            continue
        started = True  # Codex takes a first hunk without its "@@"
        mark, text = (line[:1], line[1:]) if line[:1] in (" ", "-", "+") else (" ", line)
        if mark != "+":
            old.append(text)
        if mark != "-":
            new.append(text)
        body.append(mark + text)
    close()
    return out


def _seek(lines: list[str], target: str, start: int) -> int | None:
    """Where Codex finds a ``@@ CONTEXT`` line from ``start``: exact first, then ignoring trailing, then any
    surrounding whitespace (its own order)."""
    for norm in (_same, str.rstrip, str.strip):
        want = norm(target)
        for i in range(start, len(lines)):
            if norm(lines[i]) == want:
                return i
    return None


def _same(text: str) -> str:
    return text


def _at(lines: list[str] | tuple[str, ...], block: tuple[str, ...], i: int) -> bool:
    return tuple(lines[i:i + len(block)]) == block


def _earlier(above: list[str], old: tuple[str, ...]) -> bool:
    """Whether ``old`` starts anywhere in ``above`` followed by ``old`` itself, before ``old``'s own place."""
    pre = [*above, *old]
    return any(pre[j] == old[0] and _at(pre, old, j) for j in range(len(above)))


def locate(section: str, post: list[str]) -> list[tuple[int, int]] | None:
    """The 1-based ``(old start, new start)`` of each hunk of ``section``, as a unified diff numbers them (a
    side of no lines names the line before it), found in ``post``, the file's lines after the patch; None
    when a hunk cannot be placed with certainty (see the module's doc) or there are none."""
    found = chunks(section)
    starts: list[tuple[int, int]] = []
    pos = shift = 0  # post-image index past the previous hunk; new minus old lines above it
    for number, chunk in enumerate(found):
        if chunk.context is not None:
            at = _seek(post, chunk.context, pos)
            if at is None:
                return None
            pos = at + 1
        size = len(chunk.new)
        if not chunk.new:
            return None  # a pure deletion leaves nothing to find
        if not chunk.old:
            # Codex appends a hunk without old lines at the end of the file: certain only as the last hunk.
            q = len(post) - size
            if number != len(found) - 1 or q < pos or not _at(post, chunk.new, q):
                return None
            candidates = [q]
        elif chunk.end_of_file:
            q = len(post) - size
            candidates = [q] if q >= pos and _at(post, chunk.new, q) else []
        else:
            first = chunk.new[0]
            candidates = [q for q in range(pos, len(post) - size + 1) if post[q] == first and _at(post, chunk.new, q)]
            # Codex took the old side's first exact match: none may start in the unchanged lines above.
            candidates = [q for q in candidates if not _earlier(post[pos:q], chunk.old)]
        if len(candidates) != 1:
            return None
        q = candidates[0]
        p = q - shift
        starts.append((p + 1 if chunk.old else p, q + 1))
        pos, shift = q + size, shift + size - len(chunk.old)
    return starts or None


def numbered(section: str, starts: list[tuple[int, int]]) -> str | None:
    """``section`` as a unified diff, its hunks headed with ``starts`` (``locate``'s), after the section's file
    lines; None when ``starts`` does not fit its hunks."""
    found = chunks(section)
    if len(found) != len(starts) or not found:
        return None
    head = [line for line in section.split("\n") if _FILE_HEAD.match(line) or _MOVE.match(line)]
    out = head[:]
    for chunk, (old, new) in zip(found, starts, strict=True):
        out.append(f"@@ -{old},{len(chunk.old)} +{new},{len(chunk.new)} @@" + (f" {chunk.context}" if chunk.context
                                                                                 else ""))
        out.extend(chunk.body)
    return "\n".join(out) + "\n"


def content_diff(content: str, added: bool) -> str:
    """A whole file as a unified diff: every line added (a new file) or every line removed (a deleted one)."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    mark = "+" if added else "-"
    side = f"{1 if lines else 0},{len(lines)}"
    header = f"@@ -0,0 +{side} @@" if added else f"@@ -{side} +0,0 @@"
    return "\n".join([header, *(mark + line for line in lines)]) + "\n"


def added_diff(section: str) -> str:
    """An ``*** Add File`` section as a unified diff: its ``+`` lines are the new file."""
    lines = [line[1:] for line in section.split("\n") if line.startswith("+")]
    head = [line for line in section.split("\n") if _FILE_HEAD.match(line)]
    return "\n".join(head) + ("\n" if head else "") + content_diff("".join(f"{line}\n" for line in lines), True)


def read_lines(path: str) -> list[str] | None:
    """A file's lines as Codex splits them (at ``\\n``, no final empty line); None when unreadable or too big."""
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _absolute(path: str, cwd: str | None) -> str:
    return os.path.normpath(os.path.join(cwd, path)) if cwd and not os.path.isabs(path) else path


def files(patch: str) -> list[tuple[str, str, str | None, str]]:
    """``(kind, path as written, moved to, section)`` of each file of a patch (kind: Add, Update or Delete)."""
    out: list[list[Any]] = []
    for line in patch.splitlines():
        head = _FILE_HEAD.match(line)
        if head:
            out.append([head.group(1), head.group(2).strip(), None, [line]])
            continue
        if line.startswith("*** End Patch"):
            break
        if not out:
            continue
        move = _MOVE.match(line)
        if move:
            out[-1][2] = move.group(1).strip()
        out[-1][3].append(line)
    return [(kind, path, moved, "\n".join(lines)) for kind, path, moved, lines in out]


def hunk_starts(patch: str, cwd: str | None,
                read: Callable[[str], list[str] | None] = read_lines) -> dict[str, list[list[int]]]:
    """For each updated file of ``patch`` whose hunks ``locate`` places in the file as it is now (moved: at
    its new path), their ``[old, new]`` starts, by the path as the patch wrote it. Never raises for a file."""
    out: dict[str, list[list[int]]] = {}
    for kind, path, moved, section in files(patch):
        if kind != "Update":
            continue
        post = read(_absolute(moved or path, cwd))
        starts = locate(section, post) if post is not None else None
        if starts:
            out[path] = [list(s) for s in starts]
    return out
