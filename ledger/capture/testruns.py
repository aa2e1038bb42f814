"""Test runs in shell lines: which runner and target, its outcome and the counts it printed.

Pure and shared by the Claude Code and Codex importers. A shell line is a test run when one of
its simple commands (see ``shell_effects.commands``: after ``cd X &&``, ``VAR=1``, ``source
.venv/bin/activate &&`` …) is a test runner, possibly behind a wrapper (``uv run``, ``poetry
run``, ``python -m``, ``npx``, ``bundle exec``, ``.venv/bin/``…). Its name is the runner and its
targets with flags dropped (``pytest tests/test_x.py``), so re-runs of one target share a name
and a later pass can resolve an earlier failure. Selection options that change what runs
(pytest ``-k``/``-m``, tox/nox ``-e``/``-s``, cargo ``-p``) stay in the name.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from ledger.capture.items import Item
from ledger.capture.shell_effects import commands, file_effects
from ledger.domain import events as ev

_ENV_WRAPPERS = frozenset({"env", "time", "nice", "sudo", "command", "exec", "nohup", "xvfb-run", "dotenv"})
_RUN_WRAPPERS = {
    # program: the subcommand words that hand the rest of the line to another program
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pdm": ("run",),
    "rye": ("run",),
    "hatch": ("run",),
    "conda": ("run",),
    "bundle": ("exec",),
    "pnpm": ("exec", "dlx"),
    "yarn": ("exec", "dlx"),
    "npm": ("exec",),
    "npx": (),
    "bunx": (),
    "pnpx": (),
}
_WRAPPER_VALUE_FLAGS = frozenset(
    {"--with", "--python", "-p", "--project", "--directory", "--env-file", "--extra", "--group", "-n", "--name", "-C"}
)
_PY_VALUE_FLAGS = frozenset(
    {
        "-k", "-m", "-p", "-c", "-o", "-W", "-n", "--numprocesses", "--maxfail", "--rootdir", "--deselect",
        "--ignore", "--ignore-glob", "--confcutdir", "--basetemp", "--junitxml", "--junit-xml", "--cov",
        "--cov-report", "--cov-config", "--durations", "--tb", "--log-level", "--timeout", "-r", "--count",
        "--dist", "--reruns", "--import-mode", "--capture", "--color", "--override-ini", "--lf-scope",
    }
)  # fmt: skip
_PY_KEEP = ("-k", "-m")
_PY_NOT_A_RUN = frozenset({"--collect-only", "--co", "--markers", "--fixtures", "--version", "-V", "-h", "--help"})
_JS_VALUE_FLAGS = frozenset(
    {"-c", "--config", "-t", "--testNamePattern", "--reporter", "--project", "--shard", "--maxWorkers", "-w",
     "--environment", "--root", "--dir", "--testTimeout", "--coverage.provider"}
)  # fmt: skip
_SELECT = frozenset({"-t", "--testNamePattern", "--grep", "-g"})
_TEST_DIRS = ("tests", "test", "spec", "specs", "__tests__", "testing")


@dataclass
class Run:
    name: str
    runner: str


def _strip_wrappers(words: list[str]) -> list[str]:
    """The words from the actual program on: env prefixes and run wrappers removed."""
    changed = True
    while words and changed:
        changed = False
        while words and ("=" in words[0] and not words[0].startswith("-")):
            words, changed = words[1:], True
        if not words:
            break
        prog = posixpath.basename(words[0])
        if prog in _ENV_WRAPPERS:
            words, changed = words[1:], True
            while words and (words[0].startswith("-") or re.fullmatch(r"\d+[smh]?", words[0])):
                words = words[1:]
            continue
        if prog in ("timeout", "gtimeout"):
            words, changed = [w for w in words[1:]], True
            while words and (words[0].startswith("-") or re.fullmatch(r"[\d.]+[smhd]?", words[0])):
                words = words[1:]
            continue
        if prog in _RUN_WRAPPERS:
            subs = _RUN_WRAPPERS[prog]
            rest = words[1:]
            if subs:
                # options before the subcommand (``uv --directory x run``), then the subcommand itself
                j = 0
                while j < len(rest) and rest[j].startswith("-"):
                    j += 2 if rest[j] in _WRAPPER_VALUE_FLAGS else 1
                if j >= len(rest) or rest[j] not in subs:
                    break
                rest = rest[j + 1 :]
            j = 0
            while j < len(rest) and rest[j].startswith("-"):
                j += 2 if rest[j] in _WRAPPER_VALUE_FLAGS else 1
            words, changed = rest[j:], True
    return words


def _py_module(words: list[str]) -> list[str]:
    """``python -m pytest …`` → ``pytest …``; other python invocations unchanged."""
    if words and re.fullmatch(r"python[\d.]*|pypy[\d.]*|py", posixpath.basename(words[0])):
        rest = words[1:]
        while rest and rest[0] in ("-u", "-B", "-X", "-W", "-O", "-E", "-s", "-I") and rest[0] != "-m":
            rest = rest[2:] if rest[0] in ("-X", "-W") else rest[1:]
        if len(rest) >= 2 and rest[0] == "-m":
            return rest[1:]
    return words


def _target(arg: str, base: str | None) -> str:
    """A test target, made comparable across runs: relative to the ``cd`` directory when absolute
    under it, else cut to its test folder, ``./`` dropped."""
    path, sep, node = arg.partition("::")
    if path.startswith("/"):
        if base and (path == base or path.startswith(base.rstrip("/") + "/")):
            path = posixpath.relpath(path, base)
        else:
            parts = path.split("/")
            cut = max((i for i, p in enumerate(parts) if p in _TEST_DIRS), default=None)
            if cut is not None:
                path = "/".join(parts[cut:])
    path = posixpath.normpath(path) if path else path
    return path + sep + node


def _positional(
    args: list[str], value_flags: frozenset[str], keep: tuple[str, ...] = ()
) -> tuple[list[str], list[str]]:
    """(kept selection options with their values, positional arguments); other flags dropped."""
    kept: list[str] = []
    pos: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            pos.extend(args[i + 1 :])
            break
        if a.startswith("-"):
            flag = a.split("=", 1)[0]
            if flag in keep:
                value = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
                kept.append(f"{flag} {_quote(value)}")
            if "=" not in a and a in value_flags:
                i += 1
            i += 1
            continue
        pos.append(a)
        i += 1
    return kept, pos


def _quote(value: str) -> str:
    return f'"{value}"' if re.search(r"\s", value) else value


def _recognise(words: list[str], base: str | None) -> Run | None:
    words = _py_module(_strip_wrappers(words))
    if not words:
        return None
    prog = posixpath.basename(words[0])
    args = words[1:]
    sub = args[0] if args else ""

    if prog in ("pytest", "py.test") or prog.startswith("pytest-"):
        if any(a.split("=", 1)[0] in _PY_NOT_A_RUN for a in args):
            return None
        kept, pos = _positional(args, _PY_VALUE_FLAGS, _PY_KEEP)
        return Run(" ".join(["pytest", *kept, *(_target(p, base) for p in pos)]), "pytest")
    if prog == "unittest":
        kept, pos = _positional(args, frozenset({"-k", "-p", "-s", "-t"}), ("-k",))
        return Run(" ".join(["unittest", *kept, *pos]), "unittest")
    if prog in ("tox", "nox"):
        if sub in ("--version", "-h", "--help", "-l", "--list", "--listenvs", "-a"):
            return None
        keep = ("-e",) if prog == "tox" else ("-s", "--session", "-e")
        kept, _ = _positional(args, frozenset({"-e", "-s", "--session", "-c", "-p"}), keep)
        return Run(" ".join([prog, *kept]), prog)
    if prog in ("npm", "pnpm", "yarn", "bun"):
        rest = args
        while rest and rest[0].startswith("-"):  # npm --prefix x test, pnpm -C dir test, pnpm --filter a test
            rest = rest[2:] if rest[0] in ("--prefix", "-C", "--dir", "--filter", "-F", "--cwd", "-w") else rest[1:]
        if not rest:
            return None
        if rest[0] in ("test", "t", "tst") and not (prog == "bun" and rest[0] != "test"):
            _, pos = _positional(rest[1:], _JS_VALUE_FLAGS)
            runner = "bun test" if prog == "bun" else f"{prog} test"
            return Run(" ".join([runner, *(_target(p, base) for p in pos if not p.startswith("-"))]), runner)
        script = rest[1] if rest[0] in ("run", "run-script") and len(rest) > 1 else rest[0] if prog == "yarn" else ""
        if re.fullmatch(r"test(?:[:_-][\w:.-]*)?|e2e|unit|spec", script):
            if prog == "yarn" and rest[0] not in ("run", "run-script"):
                return Run(f"yarn {script}", "yarn test")
            return Run(f"{prog} run {script}", f"{prog} test")
        if prog in ("yarn", "pnpm") and rest[0] in ("jest", "vitest", "mocha", "playwright"):
            return _recognise(rest, base)
        return None
    if prog in ("jest", "vitest", "mocha", "ava", "karma") or prog == "playwright":
        rest = args
        if prog == "vitest" and rest and rest[0] in ("run", "watch"):
            rest = rest[1:]
        elif prog == "vitest" and rest and rest[0] in ("bench", "init", "list", "typecheck"):
            return None
        if prog == "playwright":
            if not rest or rest[0] != "test":
                return None
            rest = rest[1:]
        if prog == "karma" and (not rest or rest[0] != "start"):
            return None
        if any(a in ("--listTests", "--version", "--help", "-h", "--init") for a in rest):
            return None
        kept, pos = _positional(rest, _JS_VALUE_FLAGS, tuple(_SELECT))
        name = "playwright test" if prog == "playwright" else prog
        return Run(" ".join([name, *kept, *(_target(p, base) for p in pos)]), name)
    if prog == "cargo":
        rest = args
        while rest and rest[0].startswith("+"):
            rest = rest[1:]
        if not rest:
            return None
        if rest[0] in ("test", "t"):
            body, runner = rest[1:], "cargo test"
        elif rest[0] == "nextest" and len(rest) > 1 and rest[1] == "run":
            body, runner = rest[2:], "cargo nextest"
        elif rest[0] == "llvm-cov" and not (len(rest) > 1 and rest[1] in ("report", "clean", "show-env")):
            body, runner = rest[1:], "cargo llvm-cov"
        else:
            return None
        if "--" in body:
            body = body[: body.index("--")]
        kept, pos = _positional(
            body,
            frozenset({"-p", "--package", "--features", "-F", "--target", "-j", "--jobs", "--manifest-path",
                       "--test", "--bin", "--example", "--bench", "--profile", "--exclude", "--fail-under-lines",
                       "--output-dir", "--output-path", "-E", "--color"}),
            ("-p", "--package", "--test"),
        )  # fmt: skip
        return Run(" ".join([runner, *kept, *pos]), runner)
    if prog == "go" and sub == "test":
        kept, pos = _positional(
            args[1:],
            frozenset({"-run", "-count", "-timeout", "-tags", "-coverprofile", "-p", "-parallel", "-bench",
                       "-covermode", "-coverpkg", "-o", "-exec", "-skip", "-shuffle"}),
            ("-run",),
        )  # fmt: skip
        return Run(" ".join(["go test", *kept, *pos]), "go test")
    if prog in ("mvn", "mvnw", "gradle", "gradlew"):
        tool = "mvn" if prog.startswith("mvn") else "gradle"
        goals = [a for a in args if not a.startswith("-")]
        hits = [g for g in goals if re.fullmatch(r":?(?:[\w-]+:)*(?:test|check|verify|integrationTest)", g)]
        if not hits:
            return None
        return Run(" ".join([tool, *hits]), f"{tool} test")
    if prog == "make" or prog == "just" or prog == "task":
        goals = [a for a in args if not a.startswith("-") and "=" not in a]
        hits = [g for g in goals if re.fullmatch(r"test[\w.:-]*|check|tests|[\w-]*-tests?|unittest", g)]
        if not hits:
            return None
        return Run(" ".join([prog, *hits]), f"{prog} test")
    if prog in ("rspec", "phpunit", "pest", "ctest"):
        _, pos = _positional(args, frozenset({"--format", "-f", "-r", "--require", "-c", "--configuration",
                                              "--filter", "-C", "-R", "-E", "-j", "--output-on-failure"}))  # fmt: skip
        return Run(" ".join([prog, *(_target(p, base) for p in pos)]), prog)
    if prog in ("rake",) and sub in ("test", "spec"):
        return Run(f"rake {sub}", "rake")
    if prog in ("dotnet", "swift", "mix", "deno", "bazel", "bazelisk", "zig", "flutter", "dart") and sub == "test":
        _, pos = _positional(args[1:], frozenset({"--filter", "-c", "--configuration", "--allow-read", "--config"}))
        tool = "bazel" if prog == "bazelisk" else prog
        return Run(" ".join([f"{tool} test", *pos]), f"{tool} test")
    return None


def recognise(line: str) -> Run | None:
    """The first test run in a shell line, or None."""
    cmds = commands(line)
    if not cmds:
        return None
    for cmd in cmds:
        run = _recognise(cmd.words, cmd.cwd)
        if run is not None:
            return run
    return None


# -- what the runner printed ---------------------------------------------------------------------------


@dataclass
class Counts:
    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    skipped: int | None = None
    message: str | None = None

    @property
    def found(self) -> bool:
        return any(v is not None for v in (self.passed, self.failed, self.errors, self.skipped))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PYTEST_WORD = re.compile(
    r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun|no tests ran)\b"
)
_PYTEST_SUMMARY = re.compile(
    r"^[=\s]*(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)"
    r"(?:, )?)+.*?(?: in [\d.]+\s*s.*)?[=\s]*$|^=+ no tests ran.*=+$"
)
_JEST = re.compile(r"^\s*Tests:\s+(.*?)\s*$")
_VITEST = re.compile(r"^\s*Tests\s{2,}(.*?)\s*$")
_CARGO = re.compile(r"test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored")
_NEXTEST = re.compile(r"Summary \[.*?\]\s+(\d+) tests? run: (.*)$")
_GO_PKG = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)|\[)")
_GO_TEST = re.compile(r"^\s*--- (PASS|FAIL|SKIP): ")
_RSPEC = re.compile(r"^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?")
_PHPUNIT_OK = re.compile(r"^OK \((\d+) tests?")
_PHPUNIT = re.compile(r"^Tests: (\d+), Assertions: \d+(.*)$")
_MAVEN = re.compile(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)")
_GRADLE = re.compile(r"(\d+) tests? completed(?:, (\d+) failed)?(?:, (\d+) skipped)?")
_MOCHA = re.compile(r"^\s*(\d+) (passing|failing|pending)\b")
_BUN = re.compile(r"^\s*(\d+) (pass|fail|skip)\s*$")
_UNITTEST = re.compile(r"^Ran (\d+) tests? in")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?\s*$")


def _kv(text: str, sep: str = ",") -> dict[str, int]:
    out: dict[str, int] = {}
    for part in re.split(r"[,|]", text):
        m = re.match(r"\s*(\d+)\s+(\w+)", part)
        if m:
            out[m.group(2).lower()] = out.get(m.group(2).lower(), 0) + int(m.group(1))
    return out


def parse_counts(output: str) -> Counts:
    """Counts and a summary line from a runner's output, trying every known runner's format."""
    lines = [_ANSI.sub("", ln).rstrip() for ln in output.splitlines()]
    # pytest: the last summary line ("=== 3 failed, 12 passed in 1.2s ===" or with -q "3 failed, 12 passed in 1.2s")
    for ln in reversed(lines):
        s = ln.strip()
        if _PYTEST_SUMMARY.match(s) and (" in " in s or s.startswith("=")):
            words = {w.rstrip("s") if w.startswith("error") else w: int(n) for n, w in _PYTEST_WORD.findall(s)}
            return Counts(
                passed=words.get("passed", 0) + words.get("xpassed", 0),
                failed=words.get("failed", 0),
                errors=words.get("error", 0),
                skipped=words.get("skipped", 0) + words.get("xfailed", 0),
                message=s.strip("= "),
            )
    # jest "Tests:       1 failed, 5 passed, 6 total"; vitest "Tests  1 failed | 5 passed (6)"
    for ln in reversed(lines):
        m = _JEST.match(ln) or _VITEST.match(ln)
        if m and re.search(r"\d+ (passed|failed)", m.group(1)):
            kv = _kv(m.group(1))
            return Counts(kv.get("passed", 0), kv.get("failed", 0), None, kv.get("skipped", 0) + kv.get("todo", 0),
                          ln.strip())  # fmt: skip
    results = [m for m in map(_CARGO.search, lines) if m]
    if results:
        failing = next((m for m in results if m.group(1) == "FAILED"), results[-1])
        return Counts(
            passed=sum(int(m.group(2)) for m in results),
            failed=sum(int(m.group(3)) for m in results),
            skipped=sum(int(m.group(4)) for m in results),
            message=failing.group(0),
        )
    for ln in reversed(lines):
        m = _NEXTEST.search(ln)
        if m:
            kv = _kv(m.group(2))
            return Counts(kv.get("passed", 0), kv.get("failed", 0), None, kv.get("skipped", 0), ln.strip())
    for ln in reversed(lines):
        m = _MAVEN.search(ln)
        if m:
            run, failed, errors, skipped = map(int, m.groups())
            return Counts(
                run - failed - errors - skipped, failed, errors, skipped, re.sub(r"^\s*\[\w+\]\s*", "", ln).strip()
            )
    for ln in reversed(lines):
        m = _GRADLE.search(ln)
        if m:
            total, failed, skipped = int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)
            return Counts(total - failed - skipped, failed, None, skipped, ln.strip())
    for ln in reversed(lines):
        m = _RSPEC.match(ln.strip())
        if m:
            total, failed, pending = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
            return Counts(total - failed - pending, failed, None, pending, ln.strip())
    for ln in reversed(lines):
        s = ln.strip()
        m = _PHPUNIT_OK.match(s)
        if m:
            return Counts(int(m.group(1)), 0, 0, 0, s)
        m = _PHPUNIT.match(s)
        if m:
            kv = {k.lower(): int(v) for k, v in re.findall(r"(\w+): (\d+)", m.group(2))}
            total, failed, errors = int(m.group(1)), kv.get("failures", 0), kv.get("errors", 0)
            skipped = kv.get("skipped", 0) + kv.get("incomplete", 0)
            return Counts(total - failed - errors - skipped, failed, errors, skipped, s)
    mocha = {m.group(2): int(m.group(1)) for m in (_MOCHA.match(ln) for ln in lines) if m}
    if "passing" in mocha or "failing" in mocha:
        msg = ", ".join(f"{n} {w}" for w, n in mocha.items())
        return Counts(mocha.get("passing", 0), mocha.get("failing", 0), None, mocha.get("pending", 0), msg)
    bun = {m.group(2): int(m.group(1)) for m in (_BUN.match(ln) for ln in lines) if m}
    if "pass" in bun and any(ln.strip().startswith("Ran ") for ln in lines):
        msg = next(ln.strip() for ln in reversed(lines) if ln.strip().startswith("Ran "))
        return Counts(bun.get("pass", 0), bun.get("fail", 0), None, bun.get("skip", 0), msg)
    for i, ln in enumerate(lines):
        m = _UNITTEST.match(ln)
        if m:
            end = next((_UNITTEST_END.match(x) for x in lines[i + 1 :] if _UNITTEST_END.match(x)), None)
            kv = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", end.group(2) or "")} if end else {}
            failed, errors, skipped = kv.get("failures", 0), kv.get("errors", 0), kv.get("skipped", 0)
            total = int(m.group(1))
            message = f"{ln.strip()}: {end.group(0).strip()}" if end else ln.strip()
            return Counts(total - failed - errors - skipped, failed, errors, skipped, message)
    tests = [m.group(1) for m in map(_GO_TEST.match, lines) if m]
    pkgs = [m.group(1) for m in map(_GO_PKG.match, lines) if m]
    if pkgs or tests:
        if tests:
            counts = Counts(tests.count("PASS"), tests.count("FAIL"), None, tests.count("SKIP"))
        else:
            counts = Counts(passed=pkgs.count("ok"), failed=pkgs.count("FAIL"))
        go_failing = [ln for ln in lines if _GO_PKG.match(ln) and ln.startswith("FAIL")]
        passing = [ln for ln in lines if _GO_PKG.match(ln) and ln.startswith("ok")]
        summary = go_failing[:1] or passing[-1:] or [ln for ln in lines if _GO_TEST.match(ln)][-1:]
        counts.message = " ".join(summary[0].split())
        return counts
    return Counts()


_ERROR_SIGNS = re.compile(
    r"error\[E\d+\]|could not compile|ERROR collecting|ImportError while|SyntaxError|ModuleNotFoundError|"
    r"command not found|No such file or directory|Cannot find module|no tests ran|No tests found|"
    r"found no test|no test files|usage: ",
    re.IGNORECASE,
)


def test_item(
    line: str, exit_code: int | None, output: str, actor: str, source: ev.SourceKey, timestamp: Any
) -> Item | None:
    """A ``TestResult`` when the shell ``line`` ran a test runner, else None (see the module doc).

    ``exit_code`` None means unknown (Codex's hooks give none; Claude Code's benign non-zero): the
    runner's own summary decides, and with no summary there is no evidence, so no result. Otherwise
    the outcome follows the exit code, except that printed failures fail a run whose exit code a pipe
    hid (``pytest | tail``); a run that failed without running tests (collection or compile error, no
    tests found, runner missing) is an error."""
    run = recognise(line)
    if run is None:
        return None
    counts = parse_counts(output or "")
    failed = bool(counts.failed)
    if exit_code is None and not failed and not counts.errors:
        if counts.passed:
            exit_code = 0  # "1 passed in 0.28s" and nothing failed: the summary is the evidence
        elif not counts.found and not _ERROR_SIGNS.search(output or ""):
            return None  # neither an exit code nor a summary: nothing says how the run went
    if exit_code == 0 and not failed and not counts.errors:
        outcome = "passed"
    elif failed:
        outcome = "failed"
    elif (
        counts.errors
        or exit_code in (126, 127)
        or (counts.found and not counts.passed)  # nothing ran: "205 deselected", "0 passed"
        or (not counts.passed and _ERROR_SIGNS.search(output or ""))
    ):
        outcome = "error"
    elif exit_code == 0:
        outcome = "passed"
    else:
        outcome = "failed"
    message = counts.message
    if message is None and outcome != "passed":
        message = next((ln.strip() for ln in reversed((output or "").splitlines()) if ln.strip()), None)
        if message and message.startswith("Exit code"):
            message = None
    return ev.TestResult, {
        "name": run.name,
        "outcome": outcome,
        "message": message[:500] if message else None,
        "passed": counts.passed,
        "failed": counts.failed,
        "errors": counts.errors,
        "skipped": counts.skipped,
        "actor": actor,
        "timestamp": timestamp,
        "source": source.model_copy(update={"record": source.record + "#test"}),
    }


test_item.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when a test module imports it


def command_facts(
    line: str, exit_code: int | None, output: str, cwd: str | None, actor: str, source: ev.SourceKey, timestamp: Any
) -> list[Item]:
    """What a finished shell command adds beside its ``CommandRan``, for every agent's mapper: the test
    run it was (``test_item``) and, when it succeeded, the deletes and renames it made (``file_effects``)."""
    test = test_item(line, exit_code, output, actor, source, timestamp)
    effects = file_effects(line, cwd, actor, source, timestamp) if exit_code == 0 else []
    return ([test] if test is not None else []) + effects
