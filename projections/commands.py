"""Telling a command that only looks (``ls``, ``sed -n``, ``git status``) from one that does work.

Agents read files through the shell all the time; those reads stay in the log but would crowd
"Last results" out of what matters (builds, tests, scripts). Pure and conservative: a line is
read-only only when every part of its pipeline is a known reader and nothing is redirected to a
file, so an unknown command always counts as work.
"""

from __future__ import annotations

import re
import shlex

READERS = frozenset({
    "ls", "ll", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "nl", "pwd", "tree", "file",
    "stat", "du", "df", "which", "type", "less", "more", "jq", "sort", "uniq", "cut", "tr", "date", "whoami",
    "realpath", "readlink", "dirname", "basename", "column", "xxd", "od", "hexdump", "echo", "printf", "cd",
    "awk", "fd", "bat", "env", "printenv", "uname", "id", "true", "diff", "cmp", "sha256sum", "md5sum",
})
GIT_READERS = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog", "grep", "ls-tree",
    "cat-file", "reflog",
})
_SPLIT = re.compile(r"\|\||&&|[|;\n]")
_WRITE_REDIRECT = re.compile(r"(?<![0-9&])>(?!&)|[0-9]>(?!&)")


def _reads(segment: str) -> bool:
    try:
        words = shlex.split(segment)
    except ValueError:
        return False
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return True
    program = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if program == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        if sub == "branch":
            return all(a.startswith("-") and a not in ("-d", "-D", "-m", "-M") for a in args[1:])
        return sub in GIT_READERS
    if program == "sed":
        return "-n" in args and not any(a.startswith("-i") or a == "--in-place" for a in args)
    if program == "find":
        return not any(a in ("-delete", "-exec", "-execdir", "-ok") for a in args)
    if program == "sort":
        return "-o" not in args
    return program in READERS


def is_read_only(line: str) -> bool:
    """Whether the shell ``line`` only reads (every pipeline part a known reader, no file written)."""
    if not line.strip():
        return False
    unredirected = re.sub(r"[0-9]?>\s*/dev/null|2>&1", " ", line)
    if _WRITE_REDIRECT.search(unredirected) or "$(" in line or "`" in line:
        return False
    return all(_reads(part) for part in _SPLIT.split(line))
