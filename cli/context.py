"""What every command needs: the ledger location, an opened ledger, task resolution, output.

Kept thin: commands parse and print; the ledger and projections do the work.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from ledger.base.errors import StoreUnavailable, TrailError
from ledger.base.location import Location, inbox_path

if TYPE_CHECKING:
    from ledger.app.store import Create, Ledger
    from ledger.domain.registry import Entry

F = TypeVar("F", bound=Callable[..., Any])

BEGINS_TASKS = frozenset({"start", "import", "demo"})
"""Commands that may create a ledger file where --db names one (every other command needs one there)."""


@dataclass
class Context:
    location: Location
    _ledger: Ledger | None = field(default=None, repr=False)

    def ledger(self) -> Ledger:
        """Open the ledger on first use (the default location is created then: no set-up step)."""
        if self._ledger is None:
            from ledger.app.store import open_ledger

            self._ledger = open_ledger(self.location, create=self._may_create())
            self.before_read(self._ledger)
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

    def before_read(self, ledger: Ledger) -> None:
        """Bring the ledger up to date before any command reads it (capture inboxes fold in here).

        Most reads find the inbox empty; that is told with sqlite3 alone, so the capture machinery
        (parsers, classifiers, their patterns) loads only when there are rows to fold in."""
        import sqlite3

        if not inbox_waiting(self.location):
            return
        from ledger.capture.inbox import drain

        try:
            drained = drain(ledger, self.location)
        except (TrailError, sqlite3.Error) as exc:
            # A broken inbox must not lock the user out of the ledger; the rows stay for a retry.
            click.echo(f"trail: capture inbox not folded in: {exc}", err=True)
            return
        for line in drained.rejected:
            click.echo(f"trail: captured event refused: {line}", err=True)
        for line in drained.poisoned:
            click.echo(f"trail: {line}", err=True)

    def entry(self, ref: str | None) -> Entry:
        from ledger.app import refs
        from ledger.base.project import current_project

        return refs.resolve(ref, self.ledger().entries(), self.location, current_project())

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None


def inbox_waiting(location: Location) -> bool:
    """Whether the capture inbox may hold rows: False only when it surely holds none."""
    import sqlite3

    if not location.is_sqlite:
        from ledger.base.ledger_file import legacy_inbox_for_url

        if Path(legacy_inbox_for_url(str(location.home), location.url)).exists():
            return True  # queued by a release before the masked name: the drain takes it in and removes it
    from ledger.capture.inbox_queue import spool_dir

    with contextlib.suppress(OSError):
        if os.listdir(spool_dir()):
            return True  # payloads the hook ran out of time on, to be redacted and folded in
    path = inbox_path(location)
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(path, timeout=30)
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'capture_inbox'").fetchone():
                return conn.execute("SELECT 1 FROM capture_inbox LIMIT 1").fetchone() is not None
            return False
        finally:
            conn.close()
    except sqlite3.Error:
        return True  # let the drain look, and report what is wrong


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
            reason = " ".join(str(exc).split()) or type(exc).__name__
            click.echo(f"trail: ledger storage failed: {reason}", err=True)
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
