"""What a successful shell line did to files: ``rm``/``mv``/``git rm``/``git mv`` (and the folder ``git submodule
add`` makes, so a submodule removed and added again is not left deleted) as ``FileChanged`` items.

Pure and shared by the Claude Code and Codex importers. The line is split into simple commands
by the shell tokenizer the fold reads commands with (``ledger.base.shell``: quotes, ``&&``/``||``/``;``/``|``,
subshells, redirections, heredocs);
``cd DIR`` moves the working directory for the commands after it. Only shapes we are sure of give
effects: no globs, variables or ``~`` are expanded (such arguments are skipped), options we do not
know make the command count for nothing, and commands after ``||`` are ignored (they may not
have run). Paths are made absolute against ``cwd``, since the edit tools report absolute paths.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from ledger.base.shell import Op, tokens
from ledger.capture.items import Item
from ledger.domain import events as ev


@dataclass
class Command:
    words: list[str]
    cwd: str | None
    after: str
    """The operator before this command (``""`` for the first)."""


def commands(line: str, cwd: str | None = None) -> list[Command] | None:
    """The simple commands of a line with the directory each runs in (``cd`` followed).

    Leading ``VAR=value`` assignments are dropped from the words; a subshell's ``cd`` ends with it."""
    toks = tokens(line)
    if toks is None:
        return None
    out: list[Command] = []
    stack: list[str | None] = []
    words: list[str] = []
    here = cwd
    after = ""

    def flush() -> None:
        nonlocal here
        while words and _is_assignment(words[0]):
            words.pop(0)
        if not words:
            return
        if words[0] == "cd":
            target = next((w for w in words[1:] if not w.startswith("-")), None)
            here = absolute(target, here) if target else None
        elif words[0] in ("pushd",) and len(words) > 1:
            here = absolute(words[1], here)
        out.append(Command(list(words), here, after))
        words.clear()

    for tok in toks:
        if isinstance(tok, Op):
            flush()
            if tok == "(":
                stack.append(here)
            elif tok == ")":
                here = stack.pop() if stack else here
            after = str(tok) if tok not in ("(", ")") else after
        elif isinstance(tok, str):
            words.append(tok)  # a redirection names no file we act on
    flush()
    return out


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _unsafe(arg: str) -> bool:
    """An argument the shell would expand: we cannot know what it names."""
    return any(ch in arg for ch in "*?[]{}$`") or arg.startswith("~") or not arg


def absolute(path: str | None, cwd: str | None) -> str | None:
    """``path`` made absolute against ``cwd`` and normalised; ``None`` when it cannot be known."""
    if path is None or _unsafe(path):
        return None
    if path.startswith("/"):
        return posixpath.normpath(path)
    if cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, path))


def _operands(args: list[str], flags_with_value: frozenset[str], known: frozenset[str]) -> list[str] | None:
    """Non-option arguments, or None when an option we do not know appears."""
    operands: list[str] = []
    rest = False
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if rest or not a.startswith("-") or a == "-":
            operands.append(a)
        elif a == "--":
            rest = True
        elif a in flags_with_value:
            skip = True
        elif a.startswith("--"):
            if a.split("=", 1)[0] not in known:
                return None
        elif not all(f"-{ch}" in known for ch in a[1:]):
            return None
    return operands


_RM_FLAGS = frozenset({"-r", "-R", "-f", "-i", "-v", "-d", "--force", "--recursive", "--verbose", "--dir"})
_MV_FLAGS = frozenset({"-f", "-i", "-n", "-v", "-k", "--force", "--verbose", "--no-clobber"})
_GIT_RM_FLAGS = frozenset({"-r", "-f", "-q", "--force", "--quiet", "-n", "--dry-run", "--cached"})
_GIT_MV_FLAGS = frozenset({"-f", "-k", "-v", "-n", "--force", "--verbose", "--dry-run"})


def _effects(words: list[str], cwd: str | None) -> list[tuple[str, str, str | None]]:
    """``(path, operation, renamed_from)`` for one simple command; [] when unsure."""
    while words and words[0] in ("sudo", "command", "nohup", "time"):
        words = words[1:]
    if not words:
        return []
    prog = posixpath.basename(words[0])
    args = words[1:]
    if prog == "git":
        while len(args) >= 2 and args[0] == "-C":
            cwd = absolute(args[1], cwd)
            args = args[2:]
        if args[:2] == ["submodule", "add"]:
            return _submodule_added(args[2:], cwd)
        if not args or args[0] not in ("rm", "mv"):
            return []
        sub, args = args[0], args[1:]
        if sub == "rm":
            ops = _operands(args, frozenset(), _GIT_RM_FLAGS)
            if ops is None or any(a in args for a in ("--cached", "-n", "--dry-run")):
                return []
            return _deleted(ops, cwd)
        ops = _operands(args, frozenset(), _GIT_MV_FLAGS)
        if ops is None or any(a in args for a in ("-n", "--dry-run")):
            return []
        return _renamed(ops, cwd, None)
    if prog in ("rm", "unlink", "rmdir"):
        ops = _operands(args, frozenset(), _RM_FLAGS | {"-p", "--parents"})
        if ops is None or "-i" in args:
            return []
        return _deleted(ops, cwd)
    if prog == "mv":
        target_dir = None
        flags = [a for a in args if a.startswith("-t") or a.startswith("--target-directory")]
        if flags:
            if len(flags) > 1 or not (flags[0] == "-t" or flags[0].startswith("--target-directory=")):
                return []
            if flags[0] == "-t":
                at = args.index("-t")
                if at + 1 >= len(args):
                    return []
                target_dir = args[at + 1]
                args = args[:at] + args[at + 2 :]
            else:
                target_dir = flags[0].split("=", 1)[1]
                args = [a for a in args if a != flags[0]]
        ops = _operands(args, frozenset(), _MV_FLAGS)
        if ops is None:
            return []
        return _renamed(ops, cwd, target_dir)
    return []


Effect = tuple[str, str, str | None]

_SUBMODULE_VALUED = frozenset({"-b", "--branch", "--name", "--reference", "--depth"})
_SUBMODULE_FLAGS = frozenset({"-f", "--force", "-q", "--quiet", "--"})


def _submodule_added(args: list[str], cwd: str | None) -> list[Effect]:
    """``git submodule add [options] <repository> [<path>]``: the folder it checks out, created (by default
    the repository's name, as git names it)."""
    ops: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _SUBMODULE_VALUED:
            skip = True
        elif a.startswith("-"):
            if a not in _SUBMODULE_FLAGS and a.split("=", 1)[0] not in _SUBMODULE_VALUED:
                return []
        else:
            ops.append(a)
    if len(ops) not in (1, 2):
        return []
    name = ops[1] if len(ops) == 2 else posixpath.basename(ops[0].rstrip("/")).removesuffix(".git")
    path = absolute(name.rstrip("/"), cwd) if name and ":" not in name else None
    return [] if path is None or path == "/" else [(path, "created", None)]


def _deleted(ops: list[str], cwd: str | None) -> list[Effect]:
    out: list[Effect] = []
    for a in ops:
        path = absolute(a, cwd)
        if path is not None and path != "/":
            out.append((path, "deleted", None))
    return out


def _renamed(ops: list[str], cwd: str | None, target_dir: str | None) -> list[Effect]:
    if target_dir is not None:
        sources, dest, into = ops, target_dir, True
    else:
        if len(ops) < 2:
            return []
        sources, dest = ops[:-1], ops[-1]
        base = posixpath.basename(dest.rstrip("/"))
        into = (
            len(sources) > 1
            or dest.endswith("/")
            or base in (".", "..")
            # `mv notes.md docs`: a dotted name moved to a dotless one is almost always into a folder
            or ("." in posixpath.basename(sources[0]).lstrip(".") and "." not in base and base != "")
        )
    dest_abs = absolute(dest, cwd)
    if dest_abs is None:
        return []
    out: list[Effect] = []
    for src in sources:
        src_abs = absolute(src, cwd)
        if src_abs is None:
            continue
        new = posixpath.join(dest_abs, posixpath.basename(src_abs)) if into else dest_abs
        if new != src_abs:
            out.append((new, "renamed", src_abs))
    return out


def file_effects(line: str, cwd: str | None, actor: str, source: ev.SourceKey, timestamp: Any) -> list[Item]:
    """``FileChanged`` items for the deletes and renames a successful shell ``line`` made (see module doc).

    Call it only when the line exited 0. Sources are ``source`` with ``#fs<i>`` appended."""
    cmds = commands(line, cwd)
    if not cmds:
        return []
    found: list[tuple[str, str, str | None]] = []
    for cmd in cmds:
        if cmd.after == "||":
            break  # what follows ran only if something failed; we cannot know
        if cmd.after in ("|",):
            continue
        found.extend(_effects(cmd.words, cmd.cwd))
    items: list[Item] = []
    for i, (path, operation, renamed_from) in enumerate(found):
        fields: dict[str, Any] = {
            "path": path,
            "operation": operation,
            "actor": actor,
            "timestamp": timestamp,
            "source": source.model_copy(update={"record": f"{source.record}#fs{i}"}),
        }
        if renamed_from is not None:
            fields["renamed_from"] = renamed_from
        items.append((ev.FileChanged, fields))
    return items
