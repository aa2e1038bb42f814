"""`trail demo`: record a sample task and show its continuation brief."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context


@click.command("demo")
@click.option(
    "--keep", is_flag=True,
    help="Record the sample task into your own ledger (and make it active) instead of a throw-away one.",
)
@json_option
@pass_context
@fails_cleanly
def demo(ctx: Context, keep: bool, as_json: bool) -> None:
    """Record a realistic sample task, then print its resume brief.

    By default the sample goes into a throw-away ledger that is deleted afterwards.
    """
    from ledger.app import sample
    from ledger.app.store import open_ledger
    from ledger.base.location import Location
    from projections import brief

    with tempfile.TemporaryDirectory(prefix="trail-demo-") as scratch:
        if keep:
            ledger = ctx.ledger()
        else:
            home = Path(scratch)
            ledger = open_ledger(Location(url=f"sqlite:{home / 'ledger.db'}", home=home))
        try:
            state = sample.record(ledger)
        finally:
            if not keep:
                ledger.close()
    if keep and state.id is not None:
        from ledger.app import refs
        from ledger.base.project import current_project

        refs.set_active(ctx.location, state.id, current_project())  # so `trail log` and `trail resume` show it next
    text = brief.render(state)
    if as_json:
        emit_json({"task": state.number, "kept": keep, "brief": text, "state": state.model_dump(mode="json")})
        return
    where = f"into {ctx.location.display}" if keep else "into a throw-away ledger"
    click.echo(f"Recorded the sample task #{state.number} ({state.position} events) {where}.\n", err=True)
    click.echo(text)
    click.echo("\nThis is what `trail resume` gives the next session. Try: trail demo --keep && trail log", err=True)


COMMANDS: list[click.Command] = [demo]
