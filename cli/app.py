"""The `trail` click app: a group; each module under cli/ adds its own commands (entry: cli.main)."""

from __future__ import annotations

import click

from cli import context
from ledger.location import resolve

HELP = """Keep a long AI coding task as a resumable ledger of events.

\b
Record as you go:   trail start TITLE, require, attempt, ran, fail, correct, decide, changed, next
Pick up again:      trail resume [TASK]   (the continuation brief; --json for agents)
Look back:          trail log, replay --at N, diff, why PATH[:LINE], verify, branch, list
Capture from agents: trail install claude-code (live), trail import claude-code|codex (transcripts)
First time here:    trail demo

TASK is a number (7 or #7), a unique prefix of the task's slug, or left out for the
active task (set by `trail start` and `trail switch`). The ledger is an SQLite file in
$TRAIL_HOME (default ~/.local/share/tasktrail), created on first use; --db points elsewhere,
also at a PostgreSQL database (postgresql://...); trail migrate copies a ledger between them.
"""


class InOrder(click.Group):
    """Lists commands in the order they were added (record, read, audit...), not A to Z."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(cls=InOrder, help=HELP, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--db",
    metavar="PATH|URL",
    envvar="TRAIL_DB",
    help="Ledger file, sqlite:PATH or postgresql://USER:PW@HOST:PORT/DB. Default: $TRAIL_DATABASE_URL, "
    "else $TRAIL_HOME/ledger.db.",
)
@click.version_option(package_name="tasktrail")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    state = context.Context(location=resolve(db))
    ctx.obj = state
    ctx.call_on_close(state.close)


def _register() -> None:
    from cli import admin, analytics, audit, capture, compact, demo, read, record

    for module in (record, read, audit, capture, demo, analytics, compact, admin):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()

