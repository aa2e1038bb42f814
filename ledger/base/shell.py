"""Splitting one shell line into words, control operators and redirections: the one tokenizer behind
reading a command in the fold (``projections.commands``) and its file effects at capture
(``ledger.capture.shell_effects``).

Quotes and escapes are removed as the shell removes them; ``$(...)`` stays whole, one word (its body
is not split); comments are dropped; a heredoc's body is skipped (it is input, not commands); a
redirection is one ``Redirect`` (its operator and target), so a reader can tell ``2>/dev/null`` from
``> out.txt`` and a word list never holds a redirection's target. Nothing is expanded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ledger.base.lazyregex import lazy


class Op(str):
    """A control operator between commands: ``&&``, ``||``, ``;``, ``;;``, ``|``, ``|&``, ``&``, ``(``,
    ``)``, newline. A word is a plain ``str``, so a quoted ``'&&'`` is never taken for one."""


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: ``operator`` as written without its fd number (``>``, ``>>``, ``<``, ``<<``,
    ``>&``, ``&>``…) and its target (a file, a heredoc's delimiter, the fd of ``2>&1``)."""

    operator: str
    target: str

    @property
    def writes_file(self) -> bool:
        """Whether it writes a file: output to anything but ``/dev/null`` or another fd."""
        if ">" not in self.operator or self.target == "/dev/null":
            return False
        return not (self.operator.endswith("&") and (self.target.isdigit() or self.target == "-"))


Token = str | Redirect
"""A word (``str``), an ``Op`` (a ``str`` too: test with ``isinstance``) or a ``Redirect``."""

_REDIRECTION = lazy(r"&>>|&>|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>")

_PLAIN = lazy(r"""[\\'"#;&|()<>]|\$\(|[^\S \t]""")
"""What makes a line more than words between blanks (spaces and tabs; ``str.split`` splits at more)."""


def tokens(line: str) -> list[Token] | None:
    """Words, control operators and redirections of a shell line, in order; comments and heredoc bodies
    dropped. ``None`` when a quote or ``$(`` does not close (the line is not one we can read safely)."""
    if len(line) > MEMO_LINE:
        return _tokens(line)
    found = _remembered(line)
    return None if found is None else list(found)  # the caller's own list: the tokens themselves are immutable


MEMO_LINE = 4096
"""Lines up to this long are split once each (``_remembered``): one command is read by capture (its file
effects, its test run) and by several of the fold's rules, each of which split it again."""


@lru_cache(maxsize=1024)
def _remembered(line: str) -> tuple[Token, ...] | None:
    found = _tokens(line)
    return None if found is None else tuple(found)


def _tokens(line: str) -> list[Token] | None:
    if not _PLAIN.search(line):
        return list(line.split())  # no quote, operator or escape: the words between blanks
    try:
        return _Lexer(line).run()
    except ValueError:
        return None


def words(toks: list[Token]) -> list[list[str]]:
    """``toks`` split at every control operator into the words of each simple command (redirections
    left out); a command with no words gives an empty list."""
    out: list[list[str]] = [[]]
    for tok in toks:
        if isinstance(tok, Op):
            out.append([])
        elif isinstance(tok, str):
            out[-1].append(tok)
    return out


class _Lexer:
    """One pass over ``line``; raises ``ValueError`` on an unclosed quote or ``$(``."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.out: list[Token] = []
        self.word: list[str] = []
        self.in_word = False
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, <<- strips leading tabs)

    def end_word(self) -> None:
        if self.in_word:
            self.out.append("".join(self.word))
        self.word.clear()
        self.in_word = False

    def run(self) -> list[Token]:
        line, n, i = self.line, len(self.line), 0
        while i < n:
            c = line[i]
            if c == "\\" and i + 1 < n:
                if line[i + 1] != "\n":  # a backslash-newline joins two lines
                    self.word.append(line[i + 1])
                    self.in_word = True
                i += 2
            elif c == "'":
                close = line.find("'", i + 1)
                if close < 0:
                    raise ValueError("unbalanced quote")
                self.word.append(line[i + 1 : close])
                self.in_word = True
                i = close + 1
            elif c == '"':
                i = self.double_quoted(i + 1)
            elif c == "$" and line.startswith("$(", i):
                end = _close_paren(line, i + 2)
                self.word.append(line[i : end + 1])
                self.in_word = True
                i = end + 1
            elif c == "#" and not self.in_word:
                while i < n and line[i] != "\n":
                    i += 1
            elif c in " \t":
                self.end_word()
                i += 1
            elif c == "\n":
                self.end_word()
                self.out.append(Op("\n"))
                i = self.skip_heredocs(i + 1)
            elif c in "<>" or (c == "&" and line.startswith("&>", i)):
                i = self.redirect(i)
            elif c in ";&|()":
                self.end_word()
                two = line[i : i + 2]
                op = two if two in ("&&", "||", ";;", "|&") else c
                self.out.append(Op(op))
                i += len(op)
            else:
                self.word.append(c)
                self.in_word = True
                i += 1
        self.end_word()
        return self.out

    def double_quoted(self, j: int) -> int:
        """Read a double-quoted string whose body starts at ``j``; the index after its closing quote."""
        line, n = self.line, len(self.line)
        while j < n and line[j] != '"':
            if line[j] == "\\" and j + 1 < n:
                self.word.append(line[j + 1] if line[j + 1] in '"\\$`\n' else line[j : j + 2])
                j += 2
            elif line.startswith("$(", j):
                end = _close_paren(line, j + 2)
                self.word.append(line[j : end + 1])
                j = end + 1
            else:
                self.word.append(line[j])
                j += 1
        if j >= n:
            raise ValueError("unbalanced quote")
        self.in_word = True
        return j + 1

    def redirect(self, i: int) -> int:
        """Read the redirection at ``i`` (an fd number just before it is part of it); the index after."""
        line, n = self.line, len(self.line)
        if self.in_word and "".join(self.word).isdigit():
            self.word.clear()
            self.in_word = False
        self.end_word()
        found = _REDIRECTION.match(line, i)
        operator = found.group() if found else line[i]
        j = i + len(operator)
        if operator.endswith("&") and j < n and (line[j].isdigit() or line[j] == "-"):
            k = j
            while k < n and (line[k].isdigit() or line[k] == "-"):
                k += 1
            self.out.append(Redirect(operator, line[j:k]))
            return k
        target, j = self.target(j)
        if operator.startswith("<<") and not operator.startswith("<<<"):
            self.heredocs.append((target, operator.startswith("<<-")))
        self.out.append(Redirect(operator, target))
        return j

    def target(self, j: int) -> tuple[str, int]:
        """A redirection's target from ``j`` (after blanks), quotes removed; the index after it."""
        line, n = self.line, len(self.line)
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

    def skip_heredocs(self, i: int) -> int:
        """Skip each pending heredoc's body; the index after."""
        return _skip_bodies(self.line, i, self.heredocs)


_HEREDOC = lazy(r"""<<(-?)[ \t]*(['"]?)([^\s'"();&|<>]+)\2""")


def _close_paren(line: str, start: int) -> int:
    """Index of the ``)`` closing a ``$(`` whose body starts at ``start``. A heredoc in the body is
    skipped, so a quote in its text (``git commit -m "$(cat <<'EOF' … don't … EOF)"``) opens nothing."""
    depth, j, quote = 1, start, ""
    heredocs: list[tuple[str, bool]] = []
    while j < len(line):
        c = line[j]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "<" and (found := _HEREDOC.match(line, j)) and not line.startswith("<<<", j):
            heredocs.append((found.group(3), found.group(1) == "-"))
            j = found.end()
            continue
        elif c == "\n" and heredocs:
            j = _skip_bodies(line, j + 1, heredocs)
            continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ValueError("unclosed $(")


def _skip_bodies(line: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """From ``i`` (a line's start), skip the body of each heredoc in ``heredocs`` (emptied), each up to
    its delimiter line; the index after the last."""
    n = len(line)
    while heredocs:
        delim, strip = heredocs.pop(0)
        while i < n:
            nl = line.find("\n", i)
            body_line = line[i : nl if nl >= 0 else n]
            i = nl + 1 if nl >= 0 else n
            if (body_line.lstrip("\t") if strip else body_line) == delim:
                break
    return i
