"""Codex "code mode" cells, read without running them: the tool calls a cell's JavaScript makes, and what
its output says.

In code mode (0.171's ``features.code_mode_host``; Codex Desktop 0.144) the model calls one custom tool,
``exec``, whose ``input`` is a script: ``const r = await tools.exec_command({"cmd": …}); text(r.output)``.
This module finds each ``tools.NAME(`` outside string literals and comments and reads its first argument
when it is a literal: an object or array literal (balanced-bracket scanning that respects string literals,
then bare keys quoted, single-quoted and plain template strings re-encoded, trailing commas dropped, and
the result parsed as JSON), a string literal, or the name of a ``const`` bound once to such a literal
(``const patch = "*** Begin Patch…"; await tools.apply_patch(patch)``). Anything else (a variable in a
value, a concatenation, a template with ``${}``) is unreadable: ``args`` None, never a guess.

The output (``custom_tool_call_output``, or a ``wait`` poll's ``function_call_output``) is a header,
``Script completed|running with cell ID N…\\nWall time S seconds\\nOutput:\\n``, then one text part per
``text()`` the script called. A part that is ``JSON.stringify`` of an ``exec_command`` result is an
object with ``exit_code``, ``output``, ``wall_time_seconds`` (``session_id`` while it still runs).

Live (Codex 0.171, ``features.code_mode``): the ``exec`` call itself fires no hook; each tool call its
script makes fires PreToolUse and PostToolUse as the direct call would (``Bash``, ``apply_patch``,
``update_plan``, ``mcp__<server>__<tool>``, the same ``tool_input`` and ``tool_response``) under an id
Codex gives it, ``exec-<uuid>`` (``inner_call``). The rollout writes that id on the call's own
``item_completed`` CommandExecution and FileChange, so a command or a patch keys alike on both paths. A
plan has no record of its own there: both key it by the turn and its steps (``plan_record``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

_NEXT = re.compile(
    r"""["'`]|//|/\*|tools\s*\.\s*(?P<tool>[A-Za-z_$][\w$]*)\s*\(|const\s+(?P<const>[A-Za-z_$][\w$]*)\s*=(?!=)\s*"""
)
"""What the scan of a script stops at: a string or a comment (skipped), a tool call, a ``const``."""
_STRINGS = {  # unrolled (runs of plain characters, then one escape): linear, and fast on a long patch
    '"': re.compile(r'"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"'),
    "'": re.compile(r"'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'"),
    "`": re.compile(r"`[^`\\]*(?:\\[\s\S][^`\\]*)*`"),
}
_BRACKETS = re.compile(r"[\"'`{}\[\]()]")
_ESCAPE = re.compile(r'\\(x[0-9A-Fa-f]{2}|u\{|0\d|[\s\S])|"')
READ_CALLS = 64
"""Arguments read per cell, at most (a real cell makes one call or a few)."""
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_HEAD = re.compile(
    r"^Script (\w+)(?: with cell ID (\S+))?[^\n]*\nWall time:? ([\d.]+) seconds?[^\n]*\n(?:Output:\n)?"
)
_INNER_ID = re.compile(r"exec-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_JS_ESCAPES = {"'": "'", "`": "`", "v": "\\u000b", "0": "\\u0000", "\n": "", "$": "$"}
_JSON_ESCAPES = set('"\\/bfnrtu')


class Unreadable(ValueError):
    """A literal this reader does not take (it is never guessed at)."""


class _Unclosed(Unreadable):
    """A literal that runs to the end of the script: reading the next would scan all of it again."""


@dataclass(frozen=True)
class Call:
    """One ``tools.NAME(…)`` of a cell: its first argument as JSON data, or None when it cannot be read."""

    name: str
    args: Any


@dataclass(frozen=True)
class _Ref:
    name: str


@dataclass
class Output:
    """A cell's output: ``status`` ("completed", "running", another word Codex wrote, or None when the
    header is not there), the cell's id while it runs, its wall time, and the parts the script printed."""

    status: str | None
    cell_id: str | None
    wall_ms: int | None
    parts: list[str] = field(default_factory=list)


def _string_end(src: str, i: int) -> int:
    """The index after the string literal opening at ``i``; -1 when it does not close (a plain JS string
    cannot span lines; a template can)."""
    m = _STRINGS[src[i]].match(src, i)
    return m.end() if m else -1


def _unescape(m: re.Match[str]) -> str:
    """One JS escape (or a bare ``"``) of a string's body, as JSON writes it."""
    whole, nxt = m.group(0), m.group(1)
    if whole == '"':
        return '\\"'
    if nxt.startswith("x"):
        return "\\u00" + nxt[1:]
    if nxt == "u{" or (len(nxt) == 2 and nxt[0] == "0"):
        raise Unreadable("\\u{…} or octal escape")
    if nxt in _JS_ESCAPES:
        return _JS_ESCAPES[nxt]
    if nxt in _JSON_ESCAPES:
        return whole
    return json.dumps(nxt)[1:-1]  # JS keeps an unknown escape's character


def _decode_string(literal: str) -> str:
    """A JS string literal's value (``"…"``, ``'…'``, or a template without ``${}``)."""
    quote, body = literal[0], literal[1:-1]
    if quote == "`" and "${" in body:
        raise Unreadable("template with substitutions")
    try:
        if quote == '"':
            try:  # JSON's escapes are JS's, with the same meaning: most strings need no more
                return str(json.loads(literal, strict=False))  # strict=False: JS allows a raw tab
            except ValueError:
                pass  # a JS-only escape (``\\'``, ``\\x41``, ``\\v``)
        # strict=False: a template's raw newlines are its text
        return str(json.loads('"' + _ESCAPE.sub(_unescape, body) + '"', strict=False))
    except ValueError as exc:
        raise Unreadable(str(exc)) from exc


def _balanced_end(src: str, i: int) -> int:
    """The index after the bracket closing the one at ``i``, string literals skipped; -1 when unbalanced."""
    depth, j = 0, i
    while (m := _BRACKETS.search(src, j)) is not None:
        c, j = m.group(), m.start()
        if c in "\"'`":
            j = _string_end(src, j)
            if j < 0:
                return -1
            continue
        depth += 1 if c in "{[(" else -1
        j += 1
        if depth == 0:
            return j
    return -1


def _as_json(text: str) -> Any:
    """A JS object or array literal made of literals only, as JSON data."""
    out: list[str] = []
    significant = ""  # the last token that was not whitespace
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            out.append(c)
            i += 1
        elif c in "\"'`":
            end = _string_end(text, i)
            if end < 0:
                raise Unreadable("unclosed string")
            out.append(json.dumps(_decode_string(text[i:end])))
            significant, i = "s", end
        elif c in "{[:,":
            out.append(c)
            significant, i = c, i + 1
        elif c in "}]":
            if significant == ",":  # JS allows a trailing comma, JSON does not
                drop = max(k for k, t in enumerate(out) if t == ",")
                del out[drop]
            out.append(c)
            significant, i = c, i + 1
        elif (m := _IDENT.match(text, i)) is not None:
            word, after = m.group(), text[m.end() :].lstrip()
            if significant in ("{", ",") and after.startswith(":"):
                out.append(json.dumps(word))  # a bare key
            elif word in ("true", "false", "null"):
                out.append(word)
            else:
                raise Unreadable(f"not a literal: {word}")
            significant, i = "w", m.end()
        elif (m := _NUMBER.match(text, i)) is not None:
            out.append(m.group())
            significant, i = "n", m.end()
        else:
            raise Unreadable(f"not a literal at {c!r}")
    try:
        return json.loads("".join(out))
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting too deep for json
        raise Unreadable(str(exc)) from exc


def _literal(src: str, i: int, ends: str) -> tuple[Any, int]:
    """The literal (or a bare name, as ``_Ref``) at ``i``, which the next character (after spaces) must
    close: one of ``ends``, or the end of the source. Raises ``Unreadable`` otherwise."""
    while i < len(src) and src[i].isspace():
        i += 1
    c = src[i : i + 1]
    if c in ("{", "["):
        end = _balanced_end(src, i)
        if end < 0:
            raise _Unclosed("unbalanced")
        value: Any = _as_json(src[i:end])
    elif c and c in "\"'`":
        end = _string_end(src, i)
        if end < 0:
            raise _Unclosed("unclosed string")
        value = _decode_string(src[i:end])
    elif (m := _IDENT.match(src, i)) is not None and m.group() not in ("await", "new", "function", "async"):
        end, value = m.end(), _Ref(m.group())
    else:
        raise Unreadable("no literal")
    rest = src[end:].lstrip(" \t")
    if rest and rest[0] not in ends:
        raise Unreadable("more than a literal")  # ``"a" + b``, ``x.y``, a call: an expression, not read
    return value, end


def tool_calls(src: str) -> list[Call]:
    """Each ``tools.NAME(…)`` of the script ``src``, in order, with its first argument where it is read
    (at most ``READ_CALLS`` arguments, and none after one that never closes: each read may scan the rest
    of the script, so these bound the work to a few passes over it)."""
    found: list[tuple[str, Any]] = []
    consts: dict[str, Any] = {}
    bound_twice: set[str] = set()
    i, reading = 0, True
    while (m := _NEXT.search(src, i)) is not None:
        i, token = m.start(), m.group()
        if token in ("\"", "'", "`"):
            i = _string_end(src, i)
            if i < 0:
                break  # the rest is inside a string that never closes
            continue
        if token in ("//", "/*"):
            end = src.find("\n" if token == "//" else "*/", i + 2)
            i = len(src) if end < 0 else end + (0 if token == "//" else 2)
            continue
        if i and (src[i - 1].isalnum() or src[i - 1] in "_$."):
            i = m.end()  # ``mytools.x(``, ``a.tools.x(``, ``myconst x``: not ours
            continue
        name, is_tool = m.group("tool") or m.group("const"), m.group("tool") is not None
        value: Any = None
        if reading and len(found) + len(consts) < READ_CALLS:
            try:
                value, _ = _literal(src, m.end(), ")," if is_tool else ";\n")
            except _Unclosed:
                reading = False  # broken from here on: what follows is not read either
            except Unreadable:
                value = None
        if is_tool:
            found.append((name, value))
        else:
            if name in consts:
                bound_twice.add(name)
            consts[name] = value
        i = m.end()  # the argument is scanned on: a string in it is skipped as a string
    calls = []
    for name, value in found:
        if isinstance(value, _Ref):
            known = value.name in consts and value.name not in bound_twice
            value = consts[value.name] if known else None
            if isinstance(value, _Ref):
                value = None  # a name bound to another name: not followed
        calls.append(Call(name, value))
    return calls


def _texts(output: Any) -> list[str] | None:
    if isinstance(output, str):
        return [output]
    if isinstance(output, list):
        return [str(p["text"]) for p in output if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return None


def read_output(output: Any) -> Output:
    """What a cell's output (a string or a list of ``input_text`` parts) says; ``status`` None when it does
    not start with a cell's header."""
    texts = _texts(output)
    if not texts:
        return Output(None, None, None, [])
    head = _HEAD.match(texts[0])
    if head is None:
        return Output(None, None, None, texts)
    rest = texts[0][head.end() :]
    parts = ([rest] if rest else []) + texts[1:]
    return Output(head.group(1).lower(), head.group(2), int(float(head.group(3)) * 1000), parts)


def exec_result(part: str) -> dict[str, Any] | None:
    """A printed part that is an ``exec_command`` result (``JSON.stringify(r)``), else None."""
    if not part.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(part)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and isinstance(data.get("output"), str) and (
        "exit_code" in data or "session_id" in data or "chunk_id" in data
    ):
        return data
    return None


def inner_call(call_id: Any) -> bool:
    """Whether ``call_id`` is the id Codex gave a tool call a cell's script made (``exec-<uuid>``), not one
    the model gave its own call (``call_…``)."""
    return isinstance(call_id, str) and _INNER_ID.fullmatch(call_id) is not None


def plan_record(turn_id: str, steps: list[tuple[str, str]]) -> str:
    """The record a plan a cell made is keyed by, live and imported alike: nothing else both paths see
    names that call (the hook has its ``exec-<uuid>``, which the rollout never writes for a plan; the
    rollout has the cell's call id and the call's place in the script, which the hook never sees). The
    same steps set twice in one turn are one fact."""
    digest = hashlib.sha256(json.dumps(steps, ensure_ascii=False).encode()).hexdigest()[:16]
    return f"cell-plan:{turn_id}:{digest}"
