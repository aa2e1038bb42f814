"""Edits of Codex's ``config.toml`` that keep the user's comments, order, spacing and line endings (tomlkit).

The file is the user's own, so it is never re-serialised from data: tomlkit keeps every byte of what an edit
does not touch. What an edit adds carries the comment ``MARK``, so the reverse edit finds it (and a table of
the same name the user wrote, without it, is theirs: never replaced nor removed). A key line it takes over
(the user's ``hooks = false``, an older install's ``codex_hooks``) is kept whole in the mark,
``(was: "hooks=false   # off for now")``, and put back byte for byte. Tables are added at the end, after one
blank line, as the hand-written editor before this one did (installs it made read the same).
The caller re-parses the result with ``tomllib`` and refuses to write anything that does not parse to what it
meant, so an unusual layout (an inline ``features = {…}``, dotted keys at the top level) is an error, never a
damaged file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Item, Key, Table

MARK = "# trail install codex"
_WAS = re.compile(r"\(was: (.*)\)\s*$")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


class Unusual(ValueError):
    """The file does not parse, or holds the key where this editor cannot reach it (an inline table)."""


def _parse(text: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise Unusual(str(exc)) from exc


Node = Container | Table | OutOfOrderTableProxy
"""What holds tables: the document, a table, or tomlkit's view of a table written in parts (``[a.x]`` ...
``[b]`` ... ``[a.y]``)."""


def _node(doc: Node, key: tuple[str, ...]) -> Node | None:
    """The table ``key`` or the parts of one, or None when there is none."""
    node: Any = doc
    for part in key:
        node = node.get(part) if isinstance(node, Node) else None
        if node is None:
            return None
    if isinstance(node, Node):
        return node
    raise Unusual(f"{'.'.join(key)} is not a [table]")


def _table(doc: Node, key: tuple[str, ...]) -> Table | None:
    """The table ``key`` (a real ``[a.b]`` table, a super table too), or None when it is not one."""
    node = _node(doc, key)
    if node is None or isinstance(node, Table):
        return node
    raise Unusual(f"[{'.'.join(key)}] is written in parts")


def _walk(node: Node, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Table]]:
    for name, item in node.items():
        if isinstance(item, Table):
            yield (*prefix, str(name)), item
        if isinstance(item, Table | OutOfOrderTableProxy):
            yield from _walk(item, (*prefix, str(name)))


def _line(key: Key, item: Item) -> str:
    """The line ``key = item`` as the file holds it, without its line ending (how tomlkit writes one back)."""
    t = item.trivia
    return f"{t.indent}{key.as_string()}{key.sep}{item.as_string()}{t.comment_ws}{t.comment}"


def _entry(table: Table, name: str) -> tuple[Key, Item] | None:
    for key, item in table.value.body:
        if key is not None and key.key == name:
            return key, item
    return None


def _quote(part: str) -> str:
    """One part of a table header: bare when TOML allows it, else a basic string."""
    return part if _BARE.fullmatch(part) else json.dumps(part, ensure_ascii=False)


JOINED = "(and the line break before it)"
"""Added to the mark of a table appended to a file without a final line break: its removal takes that away."""


def _append(text: str, block: str) -> str:
    """``block`` at the end of ``text``, after one blank line, in the file's own line endings."""
    end = "\r\n" if "\r\n" in text else "\n"
    block = block.replace("\n", end)
    if not text.strip():
        return block
    if not text.endswith("\n"):
        header, _, rest = block.partition(end)
        return f"{text}{end}{end}{header} {JOINED}{end}{rest}"
    return text + end + block


def _block(table: tuple[str, ...], values: dict[str, Any], marked_keys: bool = False) -> str:
    """``[table]  MARK`` and its ``values``, as TOML text (tomlkit's own rendering of each value)."""
    note = f"  {MARK}" if marked_keys else ""
    lines = [f"[{'.'.join(_quote(p) for p in table)}]  {MARK}\n"]
    lines += [f"{_quote(k)} = {tomlkit.item(v).as_string()}{note}\n" for k, v in values.items()]
    return "".join(lines)


def is_marked(text: str, table: tuple[str, ...]) -> bool | None:
    """Whether ``[table]`` is one an install added (True), the user's own (False), or absent (None)."""
    try:
        found = _table(_parse(text), table)
    except Unusual:
        return False  # not a table we could have written
    return None if found is None else MARK in found.trivia.comment


def marked_tables(text: str) -> list[tuple[str, ...]]:
    """The tables whose header carries ``MARK``: the ones ``set_table`` added."""
    return [key for key, table in _walk(_parse(text)) if MARK in table.trivia.comment and not table.is_super_table()]


def set_key(text: str, table: tuple[str, ...], key: str, value: bool, replaces: tuple[str, ...] = ()) -> str:
    """``key = value`` in ``[table]``: the key's line taken over (kept whole in the mark), else the line of an
    older name of the key (``replaces``) taken over the same way, else a line added at the table's end; the
    table appended when it is missing. Unchanged when the key already holds ``value``."""
    doc = _parse(text)
    found = _table(doc, table)
    if found is None:
        return _append(text, _block(table, {key: value}, marked_keys=True))
    for name in (key, *replaces):
        entry = _entry(found, name)
        if entry is None:
            continue
        old_key, old = entry
        if name == key and old.unwrap() == value:
            return text
        if MARK in old.trivia.comment:  # ours already: what it replaced stays the note
            was = _WAS.search(old.trivia.comment)
            note = f" (was: {was.group(1)})" if was else ""
        else:
            note = f" (was: {json.dumps(_line(old_key, old), ensure_ascii=False)})"
        new = tomlkit.item(value)
        new.trivia.indent, new.trivia.trail = old.trivia.indent, old.trivia.trail
        new.comment(f"{MARK}{note}")
        new.trivia.comment_ws = "  "
        found.value._replace(old_key, tomlkit.key(key), new)
        return doc.as_string()
    new = tomlkit.item(value)
    new.comment(MARK)
    new.trivia.comment_ws = "  "
    found.add(key, new)
    return doc.as_string()


def unset_key(text: str, table: tuple[str, ...], key: str) -> str:
    """Undo ``set_key``: our key line goes (or the line it took over comes back); a table we added goes when
    nothing else is left in it."""
    doc = _parse(text)
    found = _table(doc, table)
    entry = _entry(found, key) if found is not None else None
    if found is None or entry is None or MARK not in entry[1].trivia.comment:
        return text
    ours_key, ours = entry
    was = _WAS.search(ours.trivia.comment)
    line = _was_line(was.group(1), key) if was else None
    if line is None:
        found.remove(key)
    else:
        restored = _parse(line.rstrip("\r\n") + (ours.trivia.trail or "\n"))
        (old_key, old), = [(k, v) for k, v in restored.body if k is not None]
        indent, space, comment = old.trivia.indent, old.trivia.comment_ws, old.trivia.comment
        found.value._replace(ours_key, old_key, old)
        # tomlkit keeps the replaced line's comment where the new line has none: the user's line as it was
        old.trivia.indent, old.trivia.comment_ws, old.trivia.comment = indent, space, comment
    if MARK in found.trivia.comment and not any(k is not None for k, _ in found.value.body):
        return remove_table(doc.as_string(), table)
    return doc.as_string()


def _was_line(was: str, key: str) -> str | None:
    """The user's line a mark's note holds: the whole line (JSON), or the bare value older installs noted."""
    if was.startswith('"'):
        try:
            whole = json.loads(was)
        except ValueError:
            whole = None
        if isinstance(whole, str) and "=" in whole:
            return whole
    return f"{key} = {was}" if was else None


class Theirs(Unusual):
    """A table of the name an edit would write is the user's own (no ``MARK``), and holds something else."""


def set_table(text: str, table: tuple[str, ...], values: dict[str, Any], take_over: bool = False) -> str:
    """``[table]`` holding ``values``: the body of our own (marked) table replaced, its sub-tables left alone;
    else the table appended. A table of that name the user wrote is theirs: left as it is when it holds
    ``values`` already, else refused (``Theirs``), unless ``take_over`` (then its body is replaced and marked)."""
    doc = _parse(text)
    found = _table(doc, table)
    if found is None:
        return _append(text, _block(table, values))
    if {k: v for k, v in found.unwrap().items() if not isinstance(found.get(k), Table)} == values:
        return text
    if MARK not in found.trivia.comment:
        if not take_over:
            raise Theirs(f"[{'.'.join(table)}] is your own")
        found.comment(MARK)
        found.trivia.comment_ws = "  "
    for name in [str(k) for k, item in found.items() if not isinstance(item, Table)]:
        found.remove(name)
    for name, value in values.items():
        found.add(name, value)
    return doc.as_string()


def remove_table(text: str, table: tuple[str, ...]) -> str:
    """``text`` without ``[table]`` and its sub-tables, the blank line ``_append`` put before it taken away
    again when it is the file's end; parent tables nothing is left in go too."""
    doc = _parse(text)
    parent = _node(doc, table[:-1]) if len(table) > 1 else doc
    if parent is None or table[-1] not in parent:
        return text
    removed = parent[table[-1]]
    joined = isinstance(removed, Table) and JOINED in removed.trivia.comment
    del parent[table[-1]]
    for depth in range(len(table) - 1, 0, -1):  # [hooks.state."k"] alone made [hooks] and [hooks.state]
        holder = _node(doc, table[:depth])
        implicit = isinstance(holder, OutOfOrderTableProxy) or (isinstance(holder, Table) and holder.is_super_table())
        if holder is None or len(holder) or not implicit:
            break
        above = _node(doc, table[: depth - 1]) if depth > 1 else doc
        assert above is not None
        del above[table[depth - 1]]
    after = doc.as_string()
    if text.startswith(after) and after.endswith(("\n\n", "\n\r\n")):  # it was the last: the blank line
        end = 2 if after.endswith("\r\n") else 1                       # before it was ours, and with JOINED
        after = after[: -end * (2 if joined else 1)]                     # the line break before that too
    return after
