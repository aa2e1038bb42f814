"""Telling a command that only looks (``ls``, ``sed -n``, ``git status``) from one that does work.

Agents read files through the shell all the time; those reads stay in the log but would crowd
"Last results" out of what matters (builds, tests, scripts). Pure and conservative: a line is
read-only only when every part of its pipeline is a known reader and nothing is redirected to a
file, so an unknown command always counts as work.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ledger.base import shell
from ledger.base.lazyregex import lazy
from ledger.domain.redact import MARKER, MARKER_PREFIX, marker

READERS = frozenset({
    "ls", "ll", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "nl", "pwd", "tree", "file",
    "stat", "du", "df", "which", "type", "less", "more", "jq", "sort", "uniq", "cut", "tr", "date", "whoami",
    "realpath", "readlink", "dirname", "basename", "column", "xxd", "od", "hexdump", "echo", "printf", "cd",
    "awk", "fd", "bat", "env", "printenv", "uname", "id", "true", "diff", "cmp", "sha256sum", "md5sum",
    "ps", "pgrep", "whereis", "command", "test", "[", "lsof", "hostname", "locate", "zcat",
})
GIT_READERS = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog", "grep", "ls-tree",
    "cat-file", "reflog",
})


def _reads(words: list[str]) -> bool:
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return True
    program = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if program == "env":
        # `env` alone prints; `env PATH=… node …` runs node in that environment: the run is what it does.
        rest = list(args)
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest = rest[2:] if rest[0] in ("-u", "--unset", "-C", "--chdir", "-S") else rest[1:]
        return _reads(rest) if rest else True
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


@lru_cache(maxsize=1024)  # pure, and a task runs the same commands again and again
def is_read_only(line: str) -> bool:
    """Whether the shell ``line`` only reads (every pipeline part a known reader, no file written)."""
    if not line.strip() or "$(" in line or "`" in line:
        return False
    toks = shell.tokens(line)
    if toks is None or any(isinstance(t, shell.Redirect) and t.writes_file for t in toks):
        return False  # unreadable, or writes a file
    return all(_reads([w for w in part if w not in ("{", "}")]) for part in shell.words(toks))


_SETUP = frozenset({"cd", "source", ".", "export", "set", "pushd", "popd"})
_WRAPPERS = frozenset({"uv", "poetry", "pipenv", "npx", "pnpx", "bunx", "time", "timeout", "nice", "env", "sudo"})
_SUBCOMMANDED = frozenset({
    "git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "kubectl", "make", "gh", "terraform", "ruff",
    "dotnet", "mvn", "gradle", "bundle", "rails", "deno", "pip", "brew", "helm", "just",
})

_GROUPED = frozenset({"gh", "az", "gcloud", "aws"})
"""Programs whose commands are a group and a verb (``gh pr checks``, ``gh pr view``): both name what it did."""


@lru_cache(maxsize=1024)  # pure; a failure's head is matched against every later success
def command_head(line: str) -> str:
    """What a command runs, without its flags: the program, its subcommand and the base names of the
    paths it names (``cd /r && python -m pytest -q tests/t.py`` -> ``pytest t.py``). Two runs with
    the same head did the same thing, whatever their flags or how their paths were spelled."""
    toks = shell.tokens(line)
    head = _head(shell.words(toks)) if toks is not None else None
    return " ".join(line.split()) if head is None else head


def _head(segments: list[list[str]]) -> str | None:
    """``command_head`` of a line split into its simple commands; None when no program is named."""
    program_words = _from_program((_working(segments) or [segments[0]])[0])
    if not program_words:
        return None
    program = program_words[0].rsplit("/", 1)[-1]
    args = program_words[1:]
    if program.startswith("python") and args[:1] == ["-m"] and len(args) > 1:
        program, args = args[1], args[2:]
    head = [program]
    positional = [a for a in args if not a.startswith("-")]
    if program in _SUBCOMMANDED and positional:
        head.append(positional[0])
        if (positional[0] in ("run", "exec", "x") or program in _GROUPED) and len(positional) > 1:
            head.append(positional[1])
        if program == "git":
            return " ".join(head)  # the rest is messages and refs
        positional = positional[len(head) - 1 :]
    head += sorted({a.rstrip("/").rsplit("/", 1)[-1] for a in positional if "/" in a or "." in a.strip(".")})
    return " ".join(head)


_PROBES = {"python": "-c", "python3": "-c", "node": "-e", "ruby": "-e", "perl": "-e", "bun": "-e", "deno": "eval"}


def is_probe(line: str) -> bool:
    """Whether ``line`` runs an inline script (``python -c …``, ``node -e …``): the agent trying something
    out, whose failure says nothing about the project."""
    words = line.replace("&&", " ; ").split()
    for i, word in enumerate(words[:-1]):
        flag = _PROBES.get(word.rsplit("/", 1)[-1])
        if flag is not None and words[i + 1] == flag:
            return True
    return False


_WHOLE_RUNS = frozenset({
    "pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit", "tox", "nox", "cargo test",
    "cargo nextest", "npm test", "yarn test", "pnpm test", "bun test", "dotnet test", "mix test", "make test",
    "make check", "ctest", "bundle exec",
})
"""Test runners whose run with no target runs every test, so its pass answers for any narrower run's failure
(``go test`` alone runs one package: only ``go test ./...`` is whole)."""

_SAME_SUITE = (
    frozenset({"npm test", "yarn test", "pnpm test", "bun test"}),
    frozenset({"pytest", "py.test"}),
)
"""Whole runs that run one project's same suite through another runner of its language (``bun test`` where
``pnpm test`` was refused: the project uses bun): a pass of one answers for a failure of another."""


def chain_heads(line: str) -> tuple[str, ...]:
    """The heads of each part of an ``&&`` chain (``git pull --rebase && git push`` -> ``git pull``, ``git
    push``): when the line exits 0, every part ran and passed. Just its head for any other line (after ``;``
    or ``||`` a part's failure does not show in the exit code)."""
    toks = shell.tokens(line)
    while toks and isinstance(toks[-1], shell.Op) and toks[-1] == "\n":
        toks.pop()  # a line ending in a newline is the same chain
    ops = {t for t in toks or () if isinstance(t, shell.Op)}
    if toks is None or "&&" not in ops or ops - {"&&", "(", ")"}:
        return (command_head(line),)
    # Only && among the operators (a subshell of && parts passes only if each part did), so the simple
    # commands are the chain's parts.
    return tuple(dict.fromkeys(_head([part]) or " ".join(part) for part in shell.words(toks) if part))


_RUNNERS_LONGEST_FIRST = tuple(sorted(_WHOLE_RUNS, key=len, reverse=True))
"""``_WHOLE_RUNS``, longest first: a runner's name is never taken for a shorter one it starts with."""


def covers(passed: str, failed: str) -> bool:
    """Whether a passing run named ``passed`` (a command head or a test run's name) answers for the failure
    of ``failed``: the same, or a broader run of the same test runner or one running the same suite
    (``_SAME_SUITE``): no target (``pytest`` after ``pytest t.py::x``, ``bun test`` after ``pnpm test``),
    ``./...`` (``go test ./...`` after ``go test -run X ./pkg``), or a folder the failed
    target is in (``pytest tests`` after ``pytest tests/test_a.py``)."""
    if passed == failed:
        return True
    words = passed.split()
    whole = " ".join(w for w in words if w not in ("./...", "..."))
    if whole in _WHOLE_RUNS or (whole == "go test" and len(words) > 2):
        suite = next((group for group in _SAME_SUITE if whole in group), ())
        return any(failed == r or failed.startswith(r + " ") for r in suite) or failed.startswith(whole + " ")
    runner = next((r for r in _RUNNERS_LONGEST_FIRST if passed.startswith(r + " ")), None)
    if runner is None or not failed.startswith(runner + " "):
        return False
    targets, failing = passed[len(runner) + 1:].split(), failed[len(runner) + 1:].split()
    # Every target the failed run named sits inside one the passing run named.
    return bool(failing) and all(any(f == t or f.startswith(t.rstrip("/") + "/") for t in targets) for f in failing)


def first_words(line: str, program: str) -> set[str]:
    """The first bare word after ``program`` in each of ``line``'s simple commands that runs it (``doppler run
    -- x`` -> ``run``): for a program not known to take subcommands, what it was asked to do."""
    toks = shell.tokens(line)
    out: set[str] = set()
    for segment in shell.words(toks) if toks is not None else ():
        words = _from_program(segment)
        if words and words[0].rsplit("/", 1)[-1] == program:
            out.update(w for w in words[1:2] if not w.startswith("-") and "/" not in w and "." not in w)
    return out


def other_verb(passed: str, failed: str, head: str) -> bool:
    """Whether two lines whose head is only the program ``head`` asked it for different things (``doppler setup``
    is not ``doppler run -- deploy``): their heads match, but the pass does not answer for the failure."""
    if " " in head:
        return False
    done, asked = first_words(passed, head), first_words(failed, head)
    return bool(done and asked) and not done & asked


_ADDRESS = lazy(
    r"""^(?:[a-z][a-z0-9+.-]*://\S+|              # a URL
        [\w.-]+@[\w.-]+:\S*|                      # git@host:path
        (?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[\w-]+(?:\.[\w-]+)+)(?::\d+)?/\S*)$  # host[:port]/path""",
    re.IGNORECASE | re.VERBOSE,
)
_PACKAGE = lazy(r"^(@?[\w.-]+(?:/[\w.-]+)?)(?:@|==|>=|<=|~=|!=|\^)\S+$")
"""A package at a version (``left-pad@1.2``, ``requests==2.31``): its name, then what was asked of it."""


def _work_words(line: str) -> list[str] | None:
    """The first part of ``line`` that does work, from its program on (``cd x && VAR=1 uv run curl …``
    -> ``curl …``); None when it cannot be read."""
    toks = shell.tokens(line)
    if toks is None:
        return None
    work = _working(shell.words(toks))
    return (_from_program(work[0]) or None) if work else None


def _working(segments: list[list[str]]) -> list[list[str]]:
    """The segments that do work: not a set-up step (``cd``, ``export`` …) nor a bare assignment."""
    return [s for s in segments if s and s[0] not in _SETUP and "=" not in s[0]]


def _from_program(words: list[str]) -> list[str]:
    """``words`` from the program on: VAR=1, uv run, timeout 60 … dropped."""
    while words and ("=" in words[0] or words[0].rsplit("/", 1)[-1] in _WRAPPERS or words[0] == "run"
                     or words[0].startswith("-")):
        words = words[1:]
    return words



_RUNNERS = frozenset({"pytest", "py.test", "jest", "vitest", "mocha", "rspec", "phpunit", "tox", "nox", "ctest"})


def _targets(args: list[str]) -> list[str] | None:
    """What a command's arguments aim it at: its bare words and paths, in order. Options, a long option's
    value (``--profile ollama``), free text (a message, a prompt: it has blanks), addresses and package
    versions say how, not at what, and are left out. None when the line cannot be read."""
    out: list[str] = []
    value = False
    for a in args:
        if a.startswith("-"):
            value = a.startswith("--") and "=" not in a
            continue
        package = _PACKAGE.match(a)
        if package is not None:
            out.append(package.group(1))  # the package is the target, its version how
        elif not (value or any(c.isspace() for c in a) or _ADDRESS.match(a)):
            out.append(a)
        value = False
    return out


@lru_cache(maxsize=1024)
def readdresses(passed: str, failed: str) -> bool:
    """Whether the passing command ``passed`` is the failed command ``failed`` run again with other
    arguments at the same targets: the same program, the same bare words and paths, only its options and
    their values, its free text, its addresses or its package versions changed (``curl …/v1/user`` then
    ``curl …/v2/users``, ``pip install x==1.0`` then ``x==1.2``, ``tool --task "…"`` then ``tool --profile
    ollama --task "…"``). Another target is other work (``python a.py`` is not ``python b.py``, ``npm run
    build`` not ``npm run lint``), and a test runner's selection is its target whatever its shape (``pytest
    -k a`` is not ``pytest -k b``), so those never answer."""
    p, f = _work_words(passed), _work_words(failed)
    if p is None or f is None or p[0].rsplit("/", 1)[-1] != f[0].rsplit("/", 1)[-1] or p[1:] == f[1:]:
        return False
    runner = command_head(failed).split()[:2]
    if runner and (runner[0] in _RUNNERS or "test" in runner or "check" in runner):
        return False
    return _targets(p[1:]) == _targets(f[1:])


_FILE_LIKE = lazy(r"\.[A-Za-z0-9]{1,5}$")
"""A target ending in a file's extension (``a.py``): ``git checkout a.py`` reverts that file."""


def switches_to(line: str) -> tuple[str, ...]:
    """The branches an exit-0 ``line`` moved to: each ``git checkout <branch>`` / ``git switch <branch>`` part of
    it (``-b``/``-c`` and the like make the branch). ``git checkout -- a.py``, ``git checkout a.py`` and
    ``git checkout HEAD a.py`` name files: a revert of files, not a branch move, so they give none."""
    toks = shell.tokens(line)
    if toks is None:
        return ()
    ops = {t for t in toks if isinstance(t, shell.Op)} - {"\n"}
    if ops - {"&&", "(", ")"}:
        return ()  # after ";" or "||" a part's failure does not show in the exit code
    moved = []
    for part in shell.words(toks):
        words = [w for w in part if not w.startswith("-") or w == "--"]
        if len(words) < 3 or words[0] != "git" or words[1] not in ("checkout", "switch"):
            continue
        targets = words[2:]
        if "--" in targets or len(targets) != 1 or _FILE_LIKE.search(targets[0]):
            continue
        moved.append(targets[0])
    return tuple(moved)


_COMMIT_MESSAGE = lazy(
    r"""\bgit\s+(?:-\S+\s+)*commit\b[^\n]*?\s-(?:[a-zA-Z]*m|-message(?:=|\s))\s*
        (?:"\$\(cat\s+<<-?\s*['"]?(\w+)['"]?\s*\n\s*([^\n]+)|"([^"\n]+)|'([^'\n]+)|([^\s"'$][^\s]*))""",
    re.VERBOSE,
)


def commit_subject(line: str) -> str | None:
    """The subject of the commit a ``git commit -m …`` line makes (a heredoc's first line too: ``-m "$(cat
    <<'EOF'\\nSubject\\n…EOF)"``), or None: what a reader looks for in a long commit line cut short."""
    match = _COMMIT_MESSAGE.search(line)
    if match is None:
        return None
    subject = next((g for g in match.groups()[1:] if g), "").strip()
    return subject or None


_RUN = lazy(r"[A-Za-z0-9+/_-]{16,}={0,2}")
"""A run of base64 characters: what ``ledger.domain.redact``'s high-entropy check weighs and hides whole."""


@lru_cache(maxsize=1024)
def unmasked(failed: str, passed: str) -> str | None:
    """``failed`` with each value redaction hid in it put back from ``passed``, where the same value stands in
    clear (a quoted path the entropy check took for a key, unquoted in the rerun): a marker names its value's
    digest, so the value is known when a run of ``passed`` has that digest. None when no marker's value is in
    ``passed``; nothing is revealed that ``passed`` does not already show."""
    if MARKER_PREFIX not in failed:
        return None
    runs = set(_RUN.findall(passed))
    found = False

    def put_back(match: re.Match[str]) -> str:
        nonlocal found
        clear = next((run for run in runs if marker(match.group(1), run) == match.group(0)), None)
        found = found or clear is not None
        return clear if clear is not None else match.group(0)

    line = MARKER.sub(put_back, failed)
    return line if found else None


_LINTERS = frozenset({"golangci-lint", "staticcheck", "eslint", "ruff", "flake8", "pylint", "clippy", "rubocop",
                      "shellcheck", "biome", "go vet", "vet", "mypy", "tsc"})
_FORMATTERS = frozenset({"gofmt", "goimports", "prettier", "black", "rustfmt", "fmt", "format"})
_TESTERS = frozenset({"test", "tests", "pytest", "jest", "vitest", "mocha", "rspec", "phpunit", "tox", "nox"})


def _kinds(words: list[str]) -> set[str]:
    """The kinds of check a simple command runs, read from its program and bare words (``mise run lint``,
    ``gofmt -d x.go``, ``npm run test:unit``, ``go build ./...``)."""
    words = _from_program(words)
    if not words:
        return set()
    # The program and the bare words after it (a script's name: ``lint``, ``test:unit``); a path names what is
    # checked, not the check (``gofmt -d x_test.go`` runs no test).
    bare = [words[0].rsplit("/", 1)[-1].lower()] + [
        w.lower() for w in words[1:4] if not w.startswith("-") and "/" not in w and "." not in w]
    parts = {p for w in bare for p in w.split(":") if p}
    kinds = set()
    if parts & _LINTERS or any(p.endswith("lint") for p in parts):
        kinds.add("lint")
    if parts & _FORMATTERS or any(p.endswith("fmt") for p in parts):
        kinds.add("format")
    if parts & _TESTERS:
        kinds.add("test")
    if "build" in parts:
        kinds.add("build")
    return kinds


@lru_cache(maxsize=1024)
def passed_checks(line: str) -> frozenset[str]:
    """The kinds of check (``lint``, ``format``, ``test``, ``build``: as ``projections.intent.reported_check``
    names them) that ``line``'s exit 0 shows passed: each simple command whose own exit the line's exit
    answers for (a part of an ``&&`` chain, not one piped into another: in ``mise run lint && mise run test |
    grep X`` the lint passed, the test's exit is grep's). Empty when the line cannot be read or joins its parts
    otherwise (``;``, ``||``)."""
    return frozenset(kind for kind, _ in _checked_parts(line))


@lru_cache(maxsize=1024)
def whole_checks(line: str) -> frozenset[str]:
    """Of ``passed_checks``, the kinds run over the whole project: a part that names no path (``mise run lint``,
    ``npm run lint``, not ``golangci-lint run ./a.go``)."""
    return frozenset(kind for kind, whole in _checked_parts(line) if whole)


@lru_cache(maxsize=1024)
def path_checks(line: str) -> frozenset[str]:
    """The kinds of check ``line`` runs on named paths (``golangci-lint run ./cmd/x/a.go``, ``gofmt -l a.go``):
    what a whole run of the same kind passing later answers for."""
    return frozenset(kind for kind, whole in _checked_parts(line, proven=False) if not whole)


def _checked_parts(line: str, proven: bool = True) -> tuple[tuple[str, bool], ...]:
    """``(kind, whole)`` for each check a simple command of ``line`` runs; with ``proven``, only the parts whose
    exit the line's exit answers for (see ``passed_checks``)."""
    toks = shell.tokens(line)
    if toks is None:
        return ()
    ops = [t for t in toks if isinstance(t, shell.Op) and t != "\n"]
    if set(ops) - {"&&", "|", "(", ")"}:
        return ()
    parts: list[list[str]] = [[]]
    after: list[str] = []
    for t in toks:
        if isinstance(t, shell.Op) and t in ("&&", "|"):
            after.append(str(t))
            parts.append([])
        elif isinstance(t, str) and not isinstance(t, shell.Op):
            parts[-1].append(t)
    after.append("")
    out: list[tuple[str, bool]] = []
    for i, part in enumerate(parts):
        piped = after[i] == "|" or (i > 0 and after[i - 1] == "|")
        if not part or (proven and piped):
            continue
        words = _from_program([w for w in part if w not in ("{", "}")])
        whole = not any("/" in w or _FILE_LIKE.search(w) for w in words[1:] if not w.startswith("-"))
        out += [(kind, whole) for kind in sorted(_kinds(words))]
    return tuple(out)


_BUILT_FROM = lazy(r"^(?:\.{1,2}/)?(?:[\w.-]+/)*cmd/([\w.-]+?)/?$")
"""A Go main package's path (``./cmd/entire-brain``): ``go run`` of it runs the program of that name."""


@lru_cache(maxsize=1024)
def as_built(line: str) -> str | None:
    """``go run ./cmd/NAME ARGS`` as the program it builds and runs, ``NAME ARGS``: the program from the current
    source, so its pass answers for a failed ``NAME ARGS`` (not on the path, ``command not found``) or ``./NAME
    ARGS`` (a stale binary: ``unknown command "index"``). None for any other line."""
    words = _work_words(line)
    if words is None or len(words) < 3 or words[0].rsplit("/", 1)[-1] != "go" or words[1] != "run":
        return None
    match = _BUILT_FROM.match(words[2])
    return " ".join([match.group(1), *words[3:]]) if match else None


def runs_same(passed: str, failed: str) -> bool:
    """Whether ``passed`` runs the program ``failed`` ran with the same targets (``readdresses``, or the same
    words): the same run, however the program was reached (``./entire-brain`` or ``entire-brain``)."""
    p, f = _work_words(passed), _work_words(failed)
    if p is None or f is None:
        return False
    same = p[0].rsplit("/", 1)[-1] == f[0].rsplit("/", 1)[-1] and p[1:] == f[1:]
    return same or readdresses(passed, failed)


_INSTALLERS = {
    "npm": ("js", frozenset({"install", "i", "add"})),
    "pnpm": ("js", frozenset({"install", "i", "add"})),
    "yarn": ("js", frozenset({"install", "add"})),
    "bun": ("js", frozenset({"install", "i", "add"})),
    "pip": ("python", frozenset({"install"})),
    "pip3": ("python", frozenset({"install"})),
}
"""Package managers by the packages they install (a language's registry) and their verbs of installing."""


def _installs(line: str) -> tuple[str, str, frozenset[str]] | None:
    """What an install ``line`` asks for: the packages' language, the manager, and the packages by name (their
    versions left out: how, not what); None for any other line."""
    words = _work_words(line)
    if words is None or len(words) < 2:
        return None
    manager = words[0].rsplit("/", 1)[-1]
    kind = _INSTALLERS.get(manager)
    if kind is None or words[1] not in kind[1]:
        return None
    targets = _targets(words[2:])
    return None if targets is None else (kind[0], manager, frozenset(targets))


@lru_cache(maxsize=1024)
def installs_same(passed: str, failed: str) -> bool:
    """Whether the passing ``passed`` installs the packages the failed ``failed`` installs, through another
    manager of the same language (``pnpm add feed`` after ``npm install feed`` failed: the project uses pnpm).
    The same packages; more or fewer are other work."""
    p, f = _installs(passed), _installs(failed)
    return p is not None and f is not None and p[0] == f[0] and p[1] != f[1] and p[2] == f[2]
