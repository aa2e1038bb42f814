"""What each event contributes: the one definition the task state and the DuckDB read model share.

Pure and small. For each event type that adds a counted or displayed fact, one function
turns the event into plain data (a frozen dataclass). ``projections.state.fold`` and
``projections.readmodel`` both read these, so that "an attempt that ended abandoned counts
as failed" or "a command's output tail is the last 5 lines of stderr, else of stdout" is
said once; ``tests/test_fold_agreement.py`` checks on random histories that the two agree.

What a fact does to *earlier* items (an attempt's end closes it, a rewording replaces a
requirement's text, a reclassification moves an intent) is stated here as data; each
consumer applies it to its own store (tuples in the state, rows in DuckDB).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from ledger.base.lazyregex import lazy
from ledger.domain import events as ev
from projections.commands import is_read_only

FAILED_OUTCOMES: frozenset[str] = frozenset({"failed", "abandoned"})
"""Attempt outcomes counted as failed (``attempts_failed``, the failed-attempts query)."""

FAILING_TESTS: frozenset[str] = frozenset({"failed", "error"})
"""Test outcomes that are a failure (a later ``passed`` of the same name resolves it)."""

OUTPUT_TAIL_LINES = 5
"""Lines of a command's output kept as its tail."""
_ERROR_WORDS = ("error", "exception", "traceback", "fail", "fatal", "panic", "cannot", "not found")
_ERROR = lazy("|".join(_ERROR_WORDS), re.IGNORECASE)

IntentKind = Literal["requirement", "correction"]


def attempt_failed(outcome: str | None) -> bool:
    """Whether an attempt that ended with ``outcome`` counts as failed."""
    return outcome in FAILED_OUTCOMES


def command_failed(exit_code: int | None) -> bool:
    """Whether a command failed: a known, non-zero exit code."""
    return exit_code not in (0, None)


_TAIL_WINDOW = 2048
"""How much of a long text's end ``tail_lines`` reads first."""


def tail_lines(text: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    text = text.rstrip()
    if len(text) > _TAIL_WINDOW:
        # Once the window's end holds more than ``lines`` line breaks, the lines after its first
        # break are the text's own (a cut \r\n only changes the partial first one): no need to split
        # all of a long output.
        window = text[-_TAIL_WINDOW:].splitlines()
        if len(window) > lines:
            return "\n".join(window[-lines:])
    return "\n".join(text.splitlines()[-lines:])


def shown(text: ev.Bounded | None) -> str:
    """A bounded text's tail, or what is left of it once `trail compact --gc-artifacts` collected it."""
    if text is None:
        return ""
    if text.collected:
        return f"[{text.size} bytes collected by gc-artifacts; sha256 {text.sha256 or text.tail_sha256}]"
    return text.tail


def command_line(event: ev.CommandRan) -> str:
    if event.shell is not None:
        return event.shell
    return shlex.join(event.argv or ())


def output_tail(event: ev.CommandRan) -> str:
    """The last lines of stderr, or of stdout when stderr shows nothing; for a failed command, the
    lines that name the error when the end does not (a build's summary hides its TypeError)."""
    out = shown(event.stderr)
    if not out or out.isspace():
        out = shown(event.stdout)
    tail = tail_lines(out)
    # No line can name an error when the whole output does not (no error word spans a line break).
    if command_failed(event.exit_code) and not names_error(tail) and names_error(out):
        telling: list[str] = []
        for line in reversed(out.splitlines()):  # the last ones are kept: read from the end
            if names_error(line):
                telling.append(line)
                if len(telling) == OUTPUT_TAIL_LINES - 1:
                    break
        last = tail.rsplit("\n", 1)[-1]  # the output's last line
        return tail_lines("\n".join([*reversed(telling), last]))
    return tail


def names_error(text: str) -> bool:
    """Whether ``text`` names an error (``_ERROR``, any case)."""
    if text.isascii():
        # The same answer ~15x faster than the case-blind regex; beyond ASCII its case folding
        # (the Kelvin sign for k, a dotless i for i) is the regex's to apply.
        lowered = text.lower()
        return any(word in lowered for word in _ERROR_WORDS)
    return _ERROR.search(text) is not None


def acting_attempt(event: ev.TaskEvent, open_attempt: int | None) -> int | None:
    """The attempt an action belongs to: its ``because`` link when it has one, else the attempt open then."""
    because = getattr(event, "because", None)
    return because.attempt if because is not None else open_attempt


# -- the facts, one per event type that contributes one ---------------------------------


@dataclass(frozen=True)
class AttemptEnd:
    """Closes the attempt started at ``attempt``."""

    attempt: int
    outcome: ev.Outcome
    reason: str | None
    failed: bool


@dataclass(frozen=True)
class CommandRun:
    line: str
    cwd: str | None
    exit_code: int | None
    duration_ms: int | None
    failed: bool
    read_only: bool
    """Only looked (``ls``, ``sed -n``, ``git status``): counted, but not one of the task's recent commands."""
    output_tail: str


@dataclass(frozen=True)
class FileChange:
    path: str
    operation: ev.FileOperation
    renamed_from: str | None
    """A path that no longer exists in the task once this change is in (a rename to itself keeps it)."""
    before_sha256: str | None
    after_sha256: str | None
    diff_size: int | None


@dataclass(frozen=True)
class TestRun:
    __test__ = False  # not a pytest test class
    name: str
    outcome: ev.TestOutcome
    duration_ms: int | None
    message: str | None
    failing: bool


@dataclass(frozen=True)
class NextStep:
    """The next step as this event leaves it: set by a person, taken from a plan, or none (a finished plan)."""

    text: str | None
    source: Literal["person", "plan"] | None


@dataclass(frozen=True)
class IntentStated:
    kind: IntentKind
    text: str
    wrong: str | None


@dataclass(frozen=True)
class Reworded:
    """The requirement at ``requirement`` now reads ``text``; its old wording becomes history."""

    requirement: int
    text: str


@dataclass(frozen=True)
class Reclassified:
    """The intent at ``target`` is really a ``kind``; for ``change`` it rewords ``supersedes`` instead.

    Applies only while ``target`` is a requirement or correction (a rewording stays one). A
    moved intent keeps its position, text and author and loses its earlier wordings and ``wrong``.
    """

    target: int
    kind: Literal["requirement", "correction", "change"]
    supersedes: int | None


def attempt_ended(event: ev.AttemptEnded) -> AttemptEnd:
    return AttemptEnd(attempt=event.attempt, outcome=event.outcome, reason=event.reason,
                      failed=attempt_failed(event.outcome))


def command_ran(event: ev.CommandRan) -> CommandRun:
    line = command_line(event)
    return CommandRun(line=line, cwd=event.cwd, exit_code=event.exit_code, duration_ms=event.duration_ms,
                      failed=command_failed(event.exit_code), read_only=is_read_only(line),
                      output_tail=output_tail(event))


def file_changed(event: ev.FileChanged) -> FileChange:
    return FileChange(path=event.path, operation=event.operation, renamed_from=event.renamed_from,
                      before_sha256=event.before_sha256, after_sha256=event.after_sha256,
                      diff_size=event.diff.size if event.diff else None)


def tested(event: ev.TestResult) -> TestRun:
    return TestRun(name=event.name, outcome=event.outcome, duration_ms=event.duration_ms, message=event.message,
                   failing=event.outcome in FAILING_TESTS)



def next_step(event: ev.NextStepSet | ev.PlanUpdated) -> NextStep:
    """The newest of a ``trail next`` and a plan wins; a plan's step in progress, else its first pending one."""
    if isinstance(event, ev.NextStepSet):
        return NextStep(text=event.text, source="person")
    step = next((s for s in event.steps if s.status == "in_progress"), None) or next(
        (s for s in event.steps if s.status == "pending"), None
    )
    return NextStep(text=step.text, source="plan") if step else NextStep(text=None, source=None)


def intent(event: ev.RequirementStated | ev.CorrectionMade) -> IntentStated:
    if isinstance(event, ev.CorrectionMade):
        return IntentStated(kind="correction", text=event.text, wrong=event.wrong)
    return IntentStated(kind="requirement", text=event.text, wrong=None)


def reworded(event: ev.RequirementChanged) -> Reworded:
    return Reworded(requirement=event.supersedes, text=event.text)


def reclassified(event: ev.IntentReclassified) -> Reclassified:
    return Reclassified(target=event.target, kind=event.kind, supersedes=event.supersedes)
