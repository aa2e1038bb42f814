"""What every command needs: the ledger location, an opened ledger, task resolution, output.

Kept thin: commands parse and print; the ledger and projections do the work.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from ledger.base.errors import StoreUnavailable, TrailError
from ledger.base.location import Location
from ledger.base.oneline import reason

if TYPE_CHECKING:
    from ledger.app.store import Create, Ledger
    from ledger.capture.inbox import Drained
    from ledger.domain.registry import Entry

F = TypeVar("F", bound=Callable[..., Any])

BEGINS_TASKS = frozenset({"start", "import", "demo"})
"""Commands that may create a ledger file where --db names one (every other command needs one there)."""
FOLD_WAIT_S = 30.0
"""Seconds a command waits for a background drain of the same inbox (about as long as a fold) before it
folds beside it."""


@dataclass
class Context:
    location: Location
    _ledger: Ledger | None = field(default=None, repr=False)
    folded: Drained | None = field(default=None, repr=False)
    """What this command's one fold of the capture inbox did (``catch_up``); None until it ran, and when
    nothing was waiting (the inbox was not opened, nothing of capture loaded)."""
    _caught_up: bool = field(default=False, repr=False)
    no_color: bool = False
    """``--no-color``: no styles even on a terminal (``cli.output``)."""
    no_pager: bool = False
    """``--no-pager``: long output is printed, not paged (``cli.output``)."""

    def ledger(self) -> Ledger:
        """The ledger, opened on first use (the default location is created then: no set-up step), and
        caught up with the capture inbox once per command (``catch_up``)."""
        if self._ledger is None:
            from ledger.app.store import open_ledger

            self._ledger = open_ledger(self.location, create=self._may_create())
        if not self._caught_up:
            self.catch_up()
        return self._ledger

    def _may_create(self) -> Create:
        """The default location is created by any command; one named with --db, TRAIL_DB or
        TRAIL_DATABASE_URL only by a command that begins tasks, and never with its folder,
        so a mistyped location creates nothing."""
        if self.location.is_default:
            return "path"
        current = click.get_current_context(silent=True)
        command = current.find_root().invoked_subcommand if current else None
        return "file" if command in BEGINS_TASKS else "nothing"

    def catch_up(self) -> None:
        """The command's one step that brings the ledger up to date: fold the capture inbox in.

        Taken once per command (the first ``ledger()``; the MCP server calls ``next_command`` between
        tool calls). Most commands find the inbox empty; that is told with sqlite3 alone
        (``inbox_queue.waiting``), so nothing is written, no lock of the ledger's is taken, and the
        capture machinery (parsers, classifiers, their patterns) loads only when there are rows."""
        import sqlite3

        from ledger.capture.inbox_queue import waiting

        assert self._ledger is not None
        self._caught_up = True
        if not waiting(self.location):
            return
        from ledger.base.location import inbox_path
        from ledger.capture.detach import drain_lock
        from ledger.capture.inbox import drain

        try:
            # In turn with a stopping session's background drain: two folds of the same rows at once could
            # each open a task for a session that has none yet. Past the wait it folds anyway, as before.
            with drain_lock(str(inbox_path(self.location)), FOLD_WAIT_S, on_wait=_say_waiting):
                self.folded = drain(self._ledger, self.location)
        except (TrailError, sqlite3.Error) as exc:
            # A broken inbox must not lock the user out of the ledger; the rows stay for a retry.
            click.echo(f"trail: capture inbox not folded in: {exc}", err=True)
            return
        for line in self.folded.rejected:
            click.echo(f"trail: captured event refused: {line}", err=True)
        for line in self.folded.poisoned:
            click.echo(f"trail: {line}", err=True)

    def next_command(self) -> None:
        """A new command on the same open ledger (an MCP tool call): its first ``ledger()`` catches up again."""
        self._caught_up, self.folded = False, None

    def entry(self, ref: str | None) -> Entry:
        from ledger.app import refs
        from ledger.base.project import current_project

        return refs.resolve(ref, self.ledger().entries(), self.location, current_project())

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


pass_context = click.make_pass_decorator(Context)


def fails_cleanly(func: F) -> F:
    """Turn a TrailError into one line on stderr and its exit code; nothing else is printed.

    Storage failures met mid-command (a database server gone, a file locked past the
    timeout) are one line too, with the storage exit code: a write either committed whole
    or not at all, so there is nothing half-done to report.
    """
    import sqlite3

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TrailError as exc:
            click.echo(f"trail: {exc}", err=True)
            sys.exit(exc.exit_code)
        except Exception as exc:
            # eventsourcing is imported only once something failed: `trail mcp` answers its client before
            # it loads the ledger's libraries, and a command decorated here must not load them for it.
            from eventsourcing.persistence import PersistenceError

            if not isinstance(exc, PersistenceError | sqlite3.Error):
                raise
            cause = exc.__cause__ or exc.__context__
            if getattr(cause, "sqlstate", None) == "42501":  # the server's access policies (``stores.pgaccess``)
                click.echo(f"trail: refused by the ledger's server: {reason(exc)} (this role has no grant for it;"
                           " `trail access` lists grants)", err=True)
                sys.exit(StoreUnavailable.exit_code)
            click.echo(f"trail: ledger storage failed: {reason(exc)}", err=True)
            sys.exit(StoreUnavailable.exit_code)

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    """Machine output: one JSON document on stdout."""
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


LARGEST = 2**63 - 1
"""The largest integer the ledger stores (its JSON encoder takes 64 bits): a larger count or position is
refused while the command line is parsed, not met later as an encoder's traceback."""


class WholeNumber(click.IntRange):
    """An integer of at least ``minimum`` that the ledger can store. The upper bound is checked here, not given
    to ``IntRange``, so help reads ``[x>=1]`` rather than naming a 19-digit number nobody chose."""

    def __init__(self, minimum: int) -> None:
        super().__init__(min=minimum)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number > LARGEST:
            self.fail(f"{number} is more than the ledger can store (at most {LARGEST})", param, ctx)
        return number


def whole_number(minimum: int) -> click.IntRange:
    """An integer option or argument of at least ``minimum`` that the ledger can store (a bad one is a usage
    error: one line, exit 2)."""
    return WholeNumber(minimum)


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines instead of text.")
task_argument = click.argument("task", required=False, metavar="[TASK]")


def _say_waiting() -> None:
    click.echo(f"trail: a stopping session's capture is being folded in; waiting for it (up to {FOLD_WAIT_S:.0f} s)",
               err=True)
