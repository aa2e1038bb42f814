"""Editing a user's JSON file in place: only the members and items that change are written, every other byte
stays as the user wrote it (a one-line array inside an indented file, odd spacing, ``bär`` or ``b\\u00e4r``).

``edited(text, before, after)`` turns ``text`` (which parses to ``before``) into text that parses to ``after``:
a member or item taken out goes with the comma and space that joined it to its neighbour; one added is written
after the last one kept, joined as the container's own items are (on their own lines at their indentation, or
on one line); a changed value inside a container is edited the same way, anything else is written anew in the
file's style. Adding and then taking out the same members gives the text back byte for byte, which is what
uninstall promises. The standard library has no format-preserving JSON editor, hence this one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


@dataclass
class _Node:
    start: int
    end: int
    keys: list[str] = field(default_factory=list)
    """An object's keys, in order (empty for an array or a scalar)."""
    items: list[_Node] = field(default_factory=list)
    """An object's member spans (key to value's end) or an array's items; a scalar has none."""
    values: list[_Node] = field(default_factory=list)
    """An object's values, beside ``items``; an array's are its items."""
    kind: str = "scalar"


def _parse(text: str, at: int) -> _Node:
    at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
    if text.startswith(('{', '['), at):
        kind = "object" if text[at] == "{" else "array"
        node = _Node(at, at, kind=kind)
        pos = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        closing = "}" if kind == "object" else "]"
        while text[pos] != closing:
            if kind == "object":
                key, after_key = scanstring(text, pos + 1)
                colon = _SPACE.match(text, after_key).end()  # type: ignore[union-attr]
                value = _parse(text, colon + 1)
                node.keys.append(key)
                node.values.append(value)
                node.items.append(_Node(pos, value.end))
            else:
                value = _parse(text, pos)
                node.values.append(value)
                node.items.append(value)
            pos = _SPACE.match(text, value.end).end()  # type: ignore[union-attr]
            if text[pos] == ",":
                pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        node.end = pos + 1
        return node
    if text.startswith('"', at):
        return _Node(at, scanstring(text, at + 1)[1])
    found = _SCALAR.match(text, at)
    if found is None:
        raise ValueError(f"not JSON at character {at}")
    return _Node(at, found.end())


@dataclass
class _Style:
    unit: str
    """One level of indentation ("" for a file on one line)."""
    ascii: bool
    colon: str


def _line_indent(text: str, at: int) -> str:
    line = text.rfind("\n", 0, at) + 1
    return text[line:at][: len(text[line:at]) - len(text[line:at].lstrip(" \t"))]


def _dumped(value: Any, style: _Style, indent: str, one_line: bool) -> str:
    if one_line or not style.unit:
        return json.dumps(value, ensure_ascii=style.ascii, separators=(", ", style.colon))
    text = json.dumps(value, ensure_ascii=style.ascii, indent=style.unit, separators=(",", style.colon))
    return text.replace("\n", "\n" + indent)


def _patch(text: str, node: _Node, old: Any, new: Any, style: _Style, edits: list[tuple[int, int, str]]) -> None:
    if old == new:
        return
    if node.kind == "object" and isinstance(old, dict) and isinstance(new, dict):
        keep = [k in new for k in node.keys]
        for index, key in enumerate(node.keys):
            if key in new:
                _patch(text, node.values[index], old[key], new[key], style, edits)
        added = [(k, v) for k, v in new.items() if k not in old]
        _rejoin(text, node, keep, [f"{json.dumps(k, ensure_ascii=style.ascii)}{style.colon}" for k, _ in added],
                [v for _, v in added], style, edits)
        return
    if node.kind == "array" and isinstance(old, list) and isinstance(new, list):
        if len(old) == len(new):
            for index, item in enumerate(node.values):
                _patch(text, item, old[index], new[index], style, edits)
            return
        keep, matched = [], 0
        for item in old:  # items kept in order, the rest of ``new`` appended after them
            hit = matched < len(new) and new[matched] == item
            keep.append(hit)
            matched += hit
        if new[:matched] == [o for o, k in zip(old, keep, strict=True) if k]:
            _rejoin(text, node, keep, ["" for _ in new[matched:]], new[matched:], style, edits)
            return
    edits.append((node.start, node.end, _dumped(new, style, _line_indent(text, node.start), False)))


def _rejoin(text: str, node: _Node, keep: list[bool], prefixes: list[str], added: list[Any], style: _Style,
            edits: list[tuple[int, int, str]]) -> None:
    """Take out the items not kept, each with the comma and space joining it to a neighbour, and write
    ``added`` (each after its prefix: an object's key) after the last item kept."""
    items = node.items
    if not any(keep):  # nothing kept: the inside is written anew ({} when nothing is added), as an insert wrote it
        _fill(text, node, prefixes, added, style, edits)
        return
    for index, item in enumerate(items):
        if keep[index]:
            continue
        if any(keep[:index]):
            edits.append((items[index - 1].end, item.end, ""))
        else:
            edits.append((item.start, items[index + 1].start, ""))  # a kept one follows
    if added:
        last = [item for item, k in zip(items, keep, strict=True) if k][-1]
        # Joined as the container joins its own: the text between its first two items, else after its bracket.
        join = text[items[0].end:items[1].start] if len(items) > 1 else "," + text[node.start + 1:items[0].start]
        if join == ",":  # a one-item list written tight: spaced as the file's members are
            join = "," if style.colon == ":" else ", "
        indent = join.rpartition("\n")[2] if "\n" in join else ""
        one_line = "\n" not in join
        written = "".join(join + p + _dumped(v, style, indent, one_line) for p, v in zip(prefixes, added,
                                                                                       strict=True))
        edits.append((last.end, last.end, written))


def _fill(text: str, node: _Node, prefixes: list[str], added: list[Any], style: _Style,
          edits: list[tuple[int, int, str]]) -> None:
    if not added:
        edits.append((node.start + 1, node.end - 1, ""))
        return
    outer = _line_indent(text, node.start)
    one_line = not style.unit
    indent = "" if one_line else outer + style.unit
    opening = "" if one_line else "\n" + indent
    parts = [p + _dumped(v, style, indent, one_line) for p, v in zip(prefixes, added, strict=True)]
    body = ("," + (" " if one_line else "\n" + indent)).join(parts)
    closing = "" if one_line else "\n" + outer
    edits.append((node.start + 1, node.end - 1, opening + body + closing))


def edited(text: str, before: Any, after: Any, unit: str, ascii_only: bool) -> str | None:
    """``text`` (parsing to ``before``) edited to parse to ``after``, every unchanged byte kept; ``unit`` is the
    file's indentation ("" on one line). None when the text is not one this editor can follow."""
    try:
        root = _parse(text, 0)
    except (ValueError, IndexError):
        return None
    colon = ": "
    if root.kind == "object" and root.items:  # {"a":1} or {"a": 1}, as the file's first member has it
        colon = ":" if text[scanstring(text, root.items[0].start + 1)[1]:root.values[0].start] == ":" else ": "
    edits: list[tuple[int, int, str]] = []
    _patch(text, root, before, after, _Style(unit, ascii_only, colon), edits)
    out = text
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + replacement + out[end:]
    try:
        return out if json.loads(out) == after else None
    except ValueError:
        return None
