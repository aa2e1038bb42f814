"""Commands that read: the brief, replay to a point, the timeline, the task list."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from cli import output
from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context, task_argument, whole_number
from cli.picker import choose_entry
from ledger.base.oneline import one_line
from projections import points

if TYPE_CHECKING:
    from projections.state import TaskState

max_chars_option = click.option(
    "--max-chars", type=whole_number(200), metavar="N",
    help="Fit the brief in N characters, dropping the least useful lines first.",
)


RESUME_SCHEMA = 2
"""The version of the ``resume --json`` / ``replay --json`` shape (docs/projections.md); bumped on any
change a reader would notice. 1 had no ``schema`` field."""


def _show(state: TaskState, as_json: bool, max_chars: int | None, at: int | None = None) -> str:
    from projections import brief  # the brief's rules load for resume and replay, not for list and log

    text = brief.render(state, max_chars=max_chars)
    if as_json:
        emit_json({"schema": RESUME_SCHEMA, "task": state.number, "position": state.position, "at": at,
                   "brief": text, "state": state.model_dump(mode="json")})
    else:
        click.echo(text)
    return text


@click.command("resume")
@task_argument
@max_chars_option
@json_option
@pass_context
@fails_cleanly
def resume(ctx: Context, task: str | None, max_chars: int | None, as_json: bool) -> None:
    """Print the continuation brief of TASK: what an agent needs to carry on.

    With --json: the brief plus the full task state, for an agent to read.
    """
    from ledger.app import briefcache, reading
    from ledger.capture import agents

    ledger = ctx.ledger()  # opened and its capture inbox folded in: the brief cache watches from here on
    cacheable = not as_json and max_chars is None
    watch = briefcache.watch(ctx.location, "resume", task, budgets=agents.budgets) if cacheable else None
    entry, picked = choose_entry(ctx, task)  # several candidates: a person on a terminal picks one
    state = reading.state(ledger, entry)
    printed = _show(state, as_json, max_chars)
    if watch is not None and not picked:  # kept for the fast path (cli.main) only once every check above passed
        watch.keep(entry.task_id, state, brief=printed)  # cacheable: no option, so ``printed`` is the plain brief


@click.command("replay")
@task_argument
@click.option("--at", "at", required=True, metavar="POINT",
              help="N (after event N), -N (N events back), a time (2026-11-28T14:00) or checkpoint:LABEL.")
@max_chars_option
@json_option
@pass_context
@fails_cleanly
def replay(ctx: Context, task: str | None, at: str, max_chars: int | None, as_json: bool) -> None:
    """Show TASK as it was at a point in its history, in the same views as `resume`."""
    from ledger.app import reading

    point = points.parse(at)
    entry = ctx.entry(task)
    position = reading.position(ctx.ledger(), entry.task_id, point, entry.number)
    _show(reading.state(ctx.ledger(), entry, at=position), as_json, max_chars, at=position)


@click.command("log")
@task_argument
@click.option("--type", "types", multiple=True, metavar="TYPE", help="Only events of this type (e.g. CommandRan).")
@click.option(
    "--actor", "actors", multiple=True, metavar="ACTOR", help="Only events by this actor (agent:* matches all agents)."
)
@click.option("--since", metavar="TIME", help="Only events at or after TIME (ISO, e.g. 2026-11-28T14:00).")
@click.option("--until", metavar="TIME", help="Only events before TIME.")
@click.option("--file", "path", metavar="PATH", help="Only events about PATH (its changes, and events that name it).")
@click.option("--grep", metavar="TEXT", help="Only events whose content contains TEXT (case-insensitive).")
@click.option("--limit", type=whole_number(1), metavar="N", help="Only the last N matching events.")
@json_option
@pass_context
@fails_cleanly
def log(
    ctx: Context, task: str | None, types: tuple[str, ...], actors: tuple[str, ...], since: str | None,
    until: str | None, path: str | None, grep: str | None, limit: int | None, as_json: bool,
) -> None:
    """Print TASK's timeline: one line per event, oldest first, filtered as asked."""
    from ledger.app import reading
    from projections import timeline
    from projections.timeline import EventFilter

    keep = EventFilter(
        types=reading.event_types(types), actors=actors, path=path, grep=grep,
        since=points.parse_time(since, "--since") if since else None,
        until=points.parse_time(until, "--until") if until else None,
    )
    entry = ctx.entry(task)
    selected = reading.timeline(ctx.ledger(), entry.task_id, keep, limit, entry.number)
    if as_json:
        emit_json([timeline.as_record(e) for e in selected])
        return
    # As wide as the longest actor shown (agent:claude-code is 17), so the summaries stay in one column.
    width = max((len(e.actor) for e in selected), default=0)
    lines = [f"{output.style(f'[{e.originator_version:>4}] {e.timestamp:%Y-%m-%d %H:%M:%S}', dim=True)} "
             f"{e.actor:<{width}} {timeline.summary(e)}" for e in selected]
    if lines:
        output.page("\n".join(lines))


STATUS_STYLE: dict[str, dict[str, Any]] = {
    "active": {"fg": "green"}, "blocked": {"fg": "yellow"}, "BROKEN": {"fg": "red", "bold": True},
    "done": {"dim": True}, "abandoned": {"dim": True},
}
"""How `trail list` shows a status on a terminal with colour on (``cli.output``)."""


@click.command("list")
@click.option(
    "--status", "statuses", multiple=True, type=click.Choice(["active", "paused", "blocked", "done", "abandoned"]),
    help="Only tasks with this status.",
)
@click.option("--here", is_flag=True, help="Only the tasks of this folder's project (its git top level).")
@json_option
@pass_context
@fails_cleanly
def list_tasks(ctx: Context, statuses: tuple[str, ...], here: bool, as_json: bool) -> None:
    """List all tasks with their status and next step (* marks the active task).

    Each task's project (the folder it began in, at its git top level) is shown by its last part; --json
    gives it whole. A task that fails a read's checks is listed as BROKEN, the others as usual; exits 5 then."""
    from ledger.app import reading
    from ledger.app.verify import LedgerBroken
    from ledger.base.project import current_project

    project = current_project()
    if here and project is None:
        raise click.UsageError("--here: this folder is gone, so it has no project")
    rows = reading.task_rows(ctx.ledger(), ctx.location, project, statuses, project if here else None)
    if as_json:
        emit_json(rows)
    elif not rows and here:
        click.echo(f"No tasks of {project} yet. `trail list` shows every project's.")
    elif not rows:
        click.echo("No tasks yet. Start one with: trail start \"what you are about to do\"")
    lines = []
    for r in rows if not as_json else ():
        mark = "*" if r["active"] else " "
        status = output.style(f"{r['status']:<9}", **STATUS_STYLE.get(r["status"], {}))
        if r["broken"]:
            lines.append(f"{mark} #{r['number']:<4} {status} {'-':<16} {r['slug']:<40}  (run `trail verify`)")
            continue
        step = f"  next: {one_line(r['next_step'])}" if r["next_step"] else ""
        where = one_line(os.path.basename(r["project"].rstrip("/")) or r["project"], 16) if r["project"] else "-"
        # The title, not the slug: the slug stays what the first title made it, so after `trail title` it
        # would read as if the rename had not taken.
        name = one_line(r["title"], 40) if r["title"] else r["slug"]
        lines.append(f"{mark} #{r['number']:<4} {status} {where:<16} {name:<40} {r['events']:>6} ev{step}")
    if lines:
        output.page("\n".join(lines))
    broken = [r for r in rows if r["broken"]]
    if broken:  # as `trail verify`: every task listed, the broken marked, exit 5 at the end
        raise LedgerBroken(f"{len(broken)} of {len(rows)} task(s) broken; first: {broken[0]['broken']}")


COMMANDS: list[click.Command] = [resume, replay, log, list_tasks]
