"""What a successful shell line did to files: ``rm``/``mv``/``git rm``/``git mv`` (and the folder ``git submodule
add`` makes, so a submodule removed and added again is not left deleted) as ``FileChanged`` items.

Pure and shared by the Claude Code and Codex importers. The line is split into simple commands
by a small shell tokenizer (quotes, ``&&``/``||``/``;``/``|``, subshells, redirections, heredocs);
``cd DIR`` moves the working directory for the commands after it. Only shapes we are sure of give
effects: no globs, variables or ``~`` are expanded (such arguments are skipped), options we do not
know make the command count for nothing, and commands after ``||`` are ignored (they may not
have run). Paths are made absolute against ``cwd``, since the edit tools report absolute paths.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from ledger.capture.items import Item
from ledger.domain import events as ev


class Op(str):
    """A control operator between commands: ``&&``, ``||``, ``;``, ``|``, ``&``, ``(``, ``)``, newline."""


Token = str  # a word (str) or an Op


def tokens(line: str) -> list[Token] | None:
    """Words and control operators of a shell line; redirections and comments dropped.

    ``None`` when the quoting is unbalanced (the line is not one we can read safely)."""
    out: list[Token] = []
    word: list[str] = []
    in_word = False
    heredocs: list[tuple[str, bool]] = []
    i, n = 0, len(line)

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            out.append("".join(word))
        word.clear()
        in_word = False

    def read_word(j: int) -> tuple[str, int]:
        """One word from position j (after blanks), quotes removed."""
        while j < n and line[j] in " \t":
            j += 1
        buf: list[str] = []
        while j < n and line[j] not in " \t\n;&|()<>":
            c = line[j]
            if c in "'\"":
                close = line.find(c, j + 1)
                if close < 0:
                    raise ValueError("unbalanced quote")
                buf.append(line[j + 1 : close])
                j = close + 1
            else:
                buf.append(c)
                j += 1
        return "".join(buf), j

    try:
        while i < n:
            c = line[i]
            if c == "\\" and i + 1 < n:
                if line[i + 1] != "\n":
                    word.append(line[i + 1])
                    in_word = True
                i += 2
                continue
            if c == "'":
                close = line.find("'", i + 1)
                if close < 0:
                    return None
                word.append(line[i + 1 : close])
                in_word = True
                i = close + 1
                continue
            if c == '"':
                j = i + 1
                while j < n and line[j] != '"':
                    if line[j] == "\\" and j + 1 < n:
                        word.append(line[j + 1] if line[j + 1] in '"\\$`\n' else line[j : j + 2])
                        j += 2
                        continue
                    if line.startswith("$(", j):
                        end = _close_paren(line, j + 2)
                        if end < 0:
                            return None
                        word.append(line[j : end + 1])
                        j = end + 1
                        continue
                    word.append(line[j])
                    j += 1
                if j >= n:
                    return None
                in_word = True
                i = j + 1
                continue
            if c == "$" and line.startswith("$(", i):
                end = _close_paren(line, i + 2)
                if end < 0:
                    return None
                word.append(line[i : end + 1])
                in_word = True
                i = end + 1
                continue
            if c == "#" and not in_word:
                while i < n and line[i] != "\n":
                    i += 1
                continue
            if c in " \t":
                end_word()
                i += 1
                continue
            if c == "\n":
                end_word()
                out.append(Op("\n"))
                i += 1
                while heredocs:  # skip each heredoc body up to its delimiter line
                    delim, strip = heredocs.pop(0)
                    while i < n:
                        nl = line.find("\n", i)
                        body_line = line[i : nl if nl >= 0 else n]
                        i = nl + 1 if nl >= 0 else n
                        if (body_line.lstrip("\t") if strip else body_line) == delim:
                            break
                continue
            if c in "<>" or (c == "&" and line.startswith("&>", i)):
                # A redirection: drop an fd number just before it, the operator and its target.
                if in_word and "".join(word).isdigit():
                    word.clear()
                    in_word = False
                end_word()
                j = i
                while j < n and line[j] in "<>&|-":
                    j += 1
                operator = line[i:j]
                if operator.endswith("&") and j < n and (line[j].isdigit() or line[j] == "-"):
                    while j < n and (line[j].isdigit() or line[j] == "-"):
                        j += 1
                    i = j
                    continue
                target, j = read_word(j)
                if operator.startswith("<<") and not operator.startswith("<<<"):
                    heredocs.append((target, operator.startswith("<<-")))
                i = j
                continue
            if c in ";&|()":
                end_word()
                two = line[i : i + 2]
                if two in ("&&", "||", ";;", "|&"):
                    out.append(Op(two))
                    i += 2
                else:
                    out.append(Op(c))
                    i += 1
                continue
            word.append(c)
            in_word = True
            i += 1
    except ValueError:
        return None
    end_word()
    return out


def _close_paren(line: str, start: int) -> int:
    """Index of the ``)`` closing a ``$(`` whose body starts at ``start``; -1 when none."""
    depth, j, quote = 1, start, ""
    while j < len(line):
        c = line[j]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


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
        else:
            words.append(tok)
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
