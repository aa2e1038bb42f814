"""Commands that look after the ledger itself rather than a task: moving it to another store."""

from __future__ import annotations

import click

from cli.context import emit_json, fails_cleanly, json_option
from ledger.location import resolve


@click.command("migrate")
@click.option("--from", "source", required=True, metavar="URL", help="The ledger to copy: PATH, sqlite:PATH or postgresql://...")
@click.option("--to", "target", required=True, metavar="URL", help="Where to copy it (created on first use).")
@json_option
@fails_cleanly
def migrate(source: str, target: str, as_json: bool) -> None:
    """Copy every stored event (and the task registry) to another ledger, hash chains intact.

    The copy is verified on the target afterwards (every event byte for byte, every task's
    chain recomputed). Running it again copies only what is missing, and a target holding
    other events under the same ids is refused. Progress goes to stderr.

    \b
    trail migrate --from sqlite:~/.local/share/tasktrail/ledger.db --to postgresql://me:pw@db:5432/trail
    """
    from ledger import migrate as copying

    report = copying.run(resolve(source), resolve(target), progress=lambda line: click.echo(line, err=True))
    if as_json:
        emit_json(report.as_dict())
        return
    click.echo(
        f"{report.copied} events copied, {report.already_there} already there, "
        f"{report.snapshots_copied} snapshots; {report.tasks_verified} task chains verified on {report.target}."
    )


COMMANDS = [migrate]
