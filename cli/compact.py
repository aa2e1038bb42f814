"""`trail compact`: move a task's oldest events to a verifiable Parquet archive."""

from __future__ import annotations

import click

from cli.context import Context, fails_cleanly, pass_context, whole_number
from cli.params import AGE, Age
from ledger.app import archive
from ledger.stores import archived


@click.command("compact")
@click.argument("task_ref", metavar="[TASK]", required=False)
@click.option("--before", type=whole_number(2), metavar="N", help="Archive the events before position N.")
@click.option("--older-than", "age", type=AGE, metavar="AGE", help="Archive the events older than AGE (30d, 12h, 90m).")
@click.option("--dry-run", is_flag=True, help="Print what would move and the space saved; change nothing.")
@click.option("--verify", "check", is_flag=True, help="Check the archives and the hash chain across them.")
@click.option(
    "--gc-artifacts", "gc", is_flag=True,
    help="Instead: drop bulky payloads (outputs, diffs, tool results) of old events, keeping size and hash.",
)
@click.option("--threshold", type=whole_number(0), default=1024, show_default=True, metavar="BYTES",
              help="With --gc-artifacts: collect payloads whose kept text is over BYTES.")
@pass_context
@fails_cleanly
def compact_command(
    ctx: Context, task_ref: str | None, before: int | None, age: Age | None, dry_run: bool, check: bool, gc: bool,
    threshold: int,
) -> None:
    """Move a task's oldest events to a Parquet archive beside the ledger.

    Reads before the boundary keep working: they come from the archive. A snapshot at
    the boundary and an EventsArchived event stay in the live log.

    With --gc-artifacts --older-than AGE (TASK optional: all tasks), the lossy step: bulky
    payloads of events older than AGE are replaced by their size and sha256; the events,
    their order, links and hash chain stay.
    """
    if gc:
        _gc(ctx, task_ref, age, threshold, dry_run)
        return
    entry = ctx.entry(task_ref)
    ledger = ctx.ledger()
    if check:
        problems = archive.verify(ledger, entry.task_id)
        if problems:
            raise archived.ArchiveError(f"task #{entry.number}: {problems[0]}")
        found = archived.archives(ledger, entry.task_id)
        click.echo(f"task #{entry.number}: {len(found)} archive(s) intact; hash chain verified across archive and log")
        return
    if (before is None) == (age is None):
        raise click.UsageError("give exactly one of --before N and --older-than AGE")
    if age is not None:
        before = archive.boundary_older_than(ledger, entry.task_id, age.cutoff())
    assert before is not None
    live = archived.live_from(ledger, entry.task_id)
    if before <= live:
        # Already done (a finished or re-run compaction): nothing to move is not an error.
        why = f"no live events older than {age}" if age else f"positions before {before} are already archived"
        click.echo(f"nothing to archive in task #{entry.number}: {why}")
        return
    todo = archive.plan(ledger, entry.task_id, before)
    what = (
        f"positions {todo.first}-{todo.last} of task #{entry.number} ({todo.events} events, {todo.snapshots} snapshots)"
    )
    if dry_run:
        click.echo(f"would archive {what}; live store gives up about {todo.live_bytes / 1024:,.0f} KB of event data")
        return
    done = archive.compact(ledger, entry.task_id, before, progress=lambda line: click.echo(line, err=True))
    click.echo(f"archived {what} to {done.path} (sha256 {done.sha256})")


def _gc(ctx: Context, task_ref: str | None, age: Age | None, threshold: int, dry_run: bool) -> None:
    from ledger.app import artifacts

    if age is None:
        raise click.UsageError("--gc-artifacts needs --older-than AGE")
    task_id = ctx.entry(task_ref).task_id if task_ref else None
    cutoff = age.cutoff()
    done = artifacts.collect(ctx.ledger(), ctx.location, cutoff, task_id, threshold, dry_run,
                             progress=lambda line: click.echo(line, err=True))
    verb = "would collect" if dry_run else "collected"
    click.echo(f"{verb} {done.payloads} payloads of {done.events} events older than {age}, "
               f"{done.bytes_freed / 1024:,.0f} KB of text; sizes and hashes stay")


COMMANDS: list[click.Command] = [compact_command]
