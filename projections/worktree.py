"""What a ``git status`` or ``git diff`` the session ran says is changed in the working tree: pure readings of a
command's line and output, for the files no edit the log holds accounts for (a sub-agent's, whose own transcript
was not kept)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Literal

from ledger.base import shell
from ledger.base.lazyregex import lazy

Status = Literal["modified", "created", "deleted"]

SUBAGENT_TOOLS = frozenset({"Agent", "Task"})
"""Claude Code's tools that hand work to a sub-agent: its edits show in the main log only as their effects."""

_SHORT = lazy(r"^(?! {2})([ MADRCU?!]{2}) (\S.*?)(?: -> (\S.*))?$")
"""``git status --short`` / ``--porcelain``: `` M src/a.go``, ``?? new.go``, ``R  old -> new``."""
_LONG = lazy(r"^\t(modified|new file|deleted|renamed):\s+(\S.*?)(?: -> (\S.*))?$")
"""``git status``'s long form: ``\tmodified:   src/a.go``."""
_STAT = lazy(r"^ (\S.*?)\s+\|\s+(?:\d+|Bin)\b")
"""``git diff --stat``: `` src/a.go | 3 ++-``."""
_DIFF = lazy(r"^diff --git a/(\S+) b/(\S+)$")
_NAME_STATUS = lazy(r"^([MADR])\d*\t(\S+)(?:\t(\S+))?$")
_COMMAND = lazy(r'"command":\s*"((?:[^"\\]|\\.)*)"')


def _status(code: str) -> Status:
    code = code.strip()
    if code in ("??", "A") or code.startswith("A") or code == "new file":
        return "created"
    if "D" in code or code == "deleted":
        return "deleted"
    return "modified"


@lru_cache(maxsize=1024)
def asks_tree(line: str) -> tuple[bool, bool] | None:
    """``(whole, diff)`` when the shell ``line`` runs ``git status`` or ``git diff`` (``git -C dir status``, in a
    chain): ``whole`` when a ``git status`` of it names no path (so it lists every changed file), ``diff`` when a
    part is a ``git diff``; None when it runs neither."""
    toks = shell.tokens(line)
    if toks is None:
        return None
    found, whole, diff = False, False, False
    for part in shell.words(toks):
        words = [w for w in part if w not in ("{", "}")]
        if not words or words[0].rsplit("/", 1)[-1] != "git":
            continue
        args = words[1:]
        while args and args[0] in ("-C", "-c"):
            args = args[2:]  # git -C <dir>: where, not what
        bare = [a for a in args if not a.startswith("-")]
        if not bare or bare[0] not in ("status", "diff"):
            continue
        found = True
        if bare[0] == "status":
            whole = whole or len(bare) == 1
        else:
            diff = True
    return (whole, diff) if found else None


def shell_command(tool_input: str) -> str | None:
    """The shell command a tool call ran, read from its input as the fold keeps it (``{"command": "…"}``: a
    PowerShell call, which the log keeps as a tool call, not a command), or None."""
    match = _COMMAND.search(tool_input)
    if match is None:
        return None
    try:
        return str(json.loads(f'"{match.group(1)}"'))
    except ValueError:
        return None


def changed_files(output: str) -> dict[str, Status]:
    """The files a ``git status`` / ``git diff`` output names as changed, by repository path, each with how."""
    found: dict[str, Status] = {}
    for raw in output.splitlines():
        line = raw.rstrip("\r")
        if short := _SHORT.match(line):
            if short.group(1) == "!!":
                continue  # ignored files
            found[_unquoted(short.group(3) or short.group(2))] = _status(short.group(1))
        elif long := _LONG.match(line):
            found[_unquoted(long.group(3) or long.group(2))] = _status(long.group(1))
        elif named := _NAME_STATUS.match(line):
            found[named.group(3) or named.group(2)] = _status(named.group(1))
        elif diff := _DIFF.match(line):
            found.setdefault(diff.group(2), "modified")
        elif stat := _STAT.match(line):
            path = stat.group(1).strip()
            if "=>" not in path and not path.startswith("..."):  # a rename's or a cut path's stat
                found.setdefault(path, "modified")
    return found


def _unquoted(path: str) -> str:
    return path[1:-1] if len(path) > 1 and path[0] == path[-1] == '"' else path


def same_file(edited: str, listed: str) -> bool:
    """Whether the file an edit named (often absolute, ``D:\\r\\src\\a.go``) is the repository path ``listed``."""
    edited = edited.replace("\\", "/")
    return edited == listed or edited.endswith("/" + listed)
