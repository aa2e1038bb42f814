"""`trail show TASK [--html FILE] [--at POINT]`: the task report, as text or one self-contained HTML page.

Parsing and writing only; ``projections.textreport`` and ``projections.report`` render.
"""

from __future__ import annotations

from pathlib import Path

import click

from cli import output
from cli.context import Context, fails_cleanly, pass_context, task_argument
from ledger.base.errors import BadInput


def write_file(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` whole (a temporary file renamed over it); a failure is one line, exit 1."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_bytes(data)
        partial.replace(target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise BadInput(f"cannot write {target}: {exc.strerror or exc}") from exc


@click.command("show")
@task_argument
@click.option("--html", "target", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write the report to FILE as one HTML page (no network needed to view it) instead of printing "
              "it as text.")
@click.option("--at", "at", metavar="POINT",
              help="Show the task as it was after a point: N, -N, a time or checkpoint:LABEL (as `replay --at`).")
@pass_context
@fails_cleanly
def show(ctx: Context, task: str | None, target: Path | None, at: str | None) -> None:
    """Show TASK's report: where it stands (the brief's sections, whole) and every event, as text through the
    pager; with --html FILE one self-contained page: a timeline grouped by session and attempt, requirements
    with their earlier wordings, files with diffs and why, commands, tests, checkpoints and activity over time."""
    from ledger.app import reading, verify
    from projections import points, report, textreport

    entry = ctx.entry(task)
    ledger = ctx.ledger()
    last = reading.state(ledger, entry)
    events = verify.load_events(ledger, entry.task_id, entry.number)  # the report shows them all: checked
    position = points.locate(points.parse(at), last.position, events) if at else last.position
    state = last if position == last.position else reading.state(ledger, entry, at=position)
    if target is None:
        output.page(textreport.render(state, events[:position], total=last.position))
        return
    page = report.render(state, events[:position], total=last.position)
    data = page.encode()
    write_file(target, data)
    where = f" as of event {position} of {last.position}" if position != last.position else ""
    click.echo(f"wrote the report of task #{entry.number}{where} ({len(data) // 1024} KB) to {target}")


COMMANDS: list[click.Command] = [show]
