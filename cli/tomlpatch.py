"""Targeted edits of a TOML file that keep the user's comments, order and spacing: `trail install codex`.

Codex's ``config.toml`` is the user's own file, so it is never re-serialised. Each edit touches only
the lines it owns: one key line inside ``[features]``, or a whole ``[name]`` table appended at the end.
Lines it adds carry the comment ``MARK``, so the reverse edit finds them, and a line it replaces is
kept whole in the mark (``(was: "codex_hooks = false  # mine")``) to be put back byte for byte.
The caller re-parses the result with ``tomllib`` and refuses to write anything that does not parse
to what it meant, so an unusual layout (an inline ``features = {…}``, dotted keys at the top level)
is an error, never a damaged file.
"""

from __future__ import annotations

import json
import re
from typing import Any

MARK = "# trail install codex"
_WAS = re.compile(r"\(was: (.*)\)\s*$")
_HEADER = re.compile(r"^\s*\[(?!\[)\s*(.+?)\s*\]\s*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")
_BARE = re.compile(r"[A-Za-z0-9_-]+")


def split_key(text: str) -> tuple[str, ...]:
    """``a."b.c".d`` -> ``("a", "b.c", "d")``: a dotted TOML key, quotes honoured (escapes kept literal)."""
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if rest[0] in "\"'":
            end = rest.find(rest[0], 1)
            if end < 0:
                return ()
            parts.append(rest[1:end])
            rest = rest[end + 1 :].lstrip()
        else:
            match = _BARE.match(rest)
            if not match:
                return ()
            parts.append(match.group(0))
            rest = rest[match.end() :].lstrip()
        if rest.startswith("."):
            rest = rest[1:].lstrip()
        elif rest:
            return ()
    return tuple(parts)


def _tables(lines: list[str]) -> list[tuple[int, tuple[str, ...] | None]]:
    """Each table header: its line index and key (None for an ``[[array]]`` header), skipping
    lines inside multi-line strings."""
    out: list[tuple[int, tuple[str, ...] | None]] = []
    inside: str | None = None
    for index, line in enumerate(lines):
        if inside is not None:
            if line.count(inside) % 2 == 1:
                inside = None
            continue
        if _ARRAY_HEADER.match(line):
            out.append((index, None))
        elif match := _HEADER.match(line):
            out.append((index, split_key(match.group(1))))
        else:
            for quote in ('"""', "'''"):
                if line.count(quote) % 2 == 1:
                    inside = quote
                    break
    return out


def _region(lines: list[str], key: tuple[str, ...]) -> tuple[int, int] | None:
    """``(header, end)`` of table ``key``: its header line and the line after its body."""
    tables = _tables(lines)
    for n, (index, found) in enumerate(tables):
        if found == key:
            end = tables[n + 1][0] if n + 1 < len(tables) else len(lines)
            return index, end
    return None


def _key_line(line: str, key: str) -> re.Match[str] | None:
    return re.match(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=\s*(.*?)\s*(#.*)?$", line)


def _append(text: str, block: list[str]) -> str:
    """``block`` at the end of ``text``, after one blank line (``_drop`` takes that line away again)."""
    if not text.strip():
        return "".join(block)
    return text + ("" if text.endswith("\n") else "\n") + "\n" + "".join(block)


def _drop(lines: list[str], start: int, end: int) -> list[str]:
    """``lines`` without ``[start, end)`` and the blank line ``_append`` put before it."""
    if start > 0 and not lines[start - 1].strip():
        start -= 1
    return lines[:start] + lines[end:]


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _note(line: str) -> str:
    """What a replaced line leaves in our mark: the user's line itself, or the note our own line carries."""
    if MARK in line:
        was = _WAS.search(line)
        return f" (was: {was.group(1)})" if was else ""
    return f" (was: {json.dumps(line.rstrip(chr(13) + chr(10)))})"


def set_key(text: str, table: tuple[str, ...], key: str, value: str, replaces: tuple[str, ...] = ()) -> str:
    """``key = value`` in ``[table]``: the key line replaced (kept whole in the mark), else the line of an
    older name of the key (``replaces``) taken over the same way, else a line added after the header;
    the table appended when it is missing. Unchanged when the line already says ``value``."""
    lines = text.splitlines(keepends=True)
    region = _region(lines, table)
    header = "[" + ".".join(_quote(part) for part in table) + "]"
    if region is None:
        return _append(text, [f"{header}  {MARK}\n", f"{key} = {value}  {MARK}\n"])
    start, end = region
    for name in (key, *replaces):
        for index in range(start + 1, end):
            match = _key_line(lines[index], name)
            if match:
                if name == key and match.group(1) == value:
                    return text
                line = lines[index]
                lines[index] = f"{key} = {value}  {MARK}{_note(line)}{_ending(line) or chr(10)}"
                return "".join(lines)
    lines.insert(start + 1, f"{key} = {value}  {MARK}\n")
    return "".join(lines)


def _restored(line: str, key: str) -> str | None:
    """The line our marked ``line`` replaced, or None when it replaced nothing."""
    match = _WAS.search(line)
    if match is None:
        return None
    was = match.group(1)
    if was.startswith('"'):
        try:
            whole = json.loads(was)
        except ValueError:
            whole = None
        if isinstance(whole, str) and "=" in whole:
            return whole + (_ending(line) or "\n")
    return f"{key} = {was}\n"  # the value-only note of trail versions before the whole-line one


def unset_key(text: str, table: tuple[str, ...], key: str) -> str:
    """Undo ``set_key``: our key line goes (or the line it replaced comes back); a table we added goes
    when nothing else is left in it."""
    lines = text.splitlines(keepends=True)
    region = _region(lines, table)
    if region is None:
        return text
    start, end = region
    for index in range(start + 1, end):
        if _key_line(lines[index], key) and MARK in lines[index]:
            was = _restored(lines[index], key)
            if was is not None:
                lines[index] = was
            else:
                del lines[index]
                end -= 1
            break
    else:
        return text
    if MARK in lines[start] and all(not ln.strip() for ln in lines[start + 1 : end]):
        lines = _drop(lines, start, end)
    return "".join(lines)


def _quote(part: str) -> str:
    """One part of a table header: bare when TOML allows it, else a basic string."""
    return part if _BARE.fullmatch(part) else json.dumps(part, ensure_ascii=False)


def marked_tables(text: str) -> list[tuple[str, ...]]:
    """The tables whose header carries ``MARK``: the ones ``set_table`` added."""
    lines = text.splitlines(keepends=True)
    return [found for index, found in _tables(lines) if found is not None and MARK in lines[index]]


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def set_table(text: str, table: tuple[str, ...], values: dict[str, Any]) -> str:
    """``[table]`` holding ``values`` (strings, lists of strings): its body replaced when it exists
    (sub-tables such as ``[table.env]`` are left alone), else the table appended."""
    header = "[" + ".".join(_quote(part) for part in table) + "]"
    block = [f"{header}  {MARK}\n", *(f"{k} = {_toml_value(v)}\n" for k, v in values.items())]
    lines = text.splitlines(keepends=True)
    region = _region(lines, table)
    if region is None:
        return _append(text, block)
    start, end = region
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1  # the blank lines before the next table stay
    return "".join(lines[:start] + block + lines[end:])


def remove_table(text: str, table: tuple[str, ...]) -> str:
    """``text`` without ``[table]`` and its sub-tables (``[table.env]`` …)."""
    lines = text.splitlines(keepends=True)
    while True:
        tables = _tables(lines)
        for n, (index, found) in enumerate(tables):
            if found is not None and found[: len(table)] == table:
                end = tables[n + 1][0] if n + 1 < len(tables) else len(lines)
                while end > index + 1 and not lines[end - 1].strip():
                    end -= 1
                lines = _drop(lines, index, end)
                break
        else:
            return "".join(lines)
