"""Audit and time travel: why a file is as it is, state diffs, branching, chain verification."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

import click

from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context
from projections import points

if TYPE_CHECKING:
    from ledger.app.verify import Report
    from ledger.domain.registry import Entry


def _position(ctx: Context, task_id: UUID, spec: str, number: int | None = None) -> int:
    from ledger.app import reading

    return reading.position(ctx.ledger(), task_id, points.parse(spec), number)


@click.command("why")
@click.argument("target", metavar="PATH[:LINE]")
@click.option("-t", "--task", "task_ref", metavar="TASK", help="Only this task (default: all tasks).")
@json_option
@pass_context
@fails_cleanly
def why(ctx: Context, target: str, task_ref: str | None, as_json: bool) -> None:
    """Why is PATH (or the line PATH:LINE) like this? Every recorded change, newest first,
    with the attempt, decision and requirement or correction behind it.

    A line is followed back through later diffs, so PATH:LINE numbers the line as the
    file is now (as of its last recorded change).
    """
    from ledger.app import reading

    path, line = reading.why_target(target)
    ledger = ctx.ledger()
    entries = [ctx.entry(task_ref)] if task_ref else ledger.entries()
    found = reading.why(ledger, path, line, entries)
    if as_json:
        emit_json({"path": path, "line": line, "changes": [c.model_dump(mode="json") for c in found]})
        return
    if not found:
        scope = f"task #{entries[0].number}" if task_ref else "any task"
        click.echo(f"No recorded change of {target} in {scope}.")
        return
    for c in found:
        at_line = f" (line {c.line} then)" if c.line is not None and line is not None else ""
        cut = ", diff collected" if c.diff_collected else ", diff cut" if c.diff_truncated else ""
        click.echo(f"#{c.task} [{c.position}] {c.at:%Y-%m-%d %H:%M} {c.actor}: {c.operation} {c.path}{at_line}{cut}")
        for ref in (c.attempt, c.decision, c.intent):
            if ref is not None:
                detail = f" ({ref.detail})" if ref.detail else ""
                click.echo(f"    {ref.kind} [{ref.position}] {ref.at:%Y-%m-%d %H:%M} {ref.actor}: {ref.text}{detail}")
        if c.explicit:
            click.echo("    (cause named explicitly with --because)")
        if c.attempt is c.decision is c.intent is None:
            click.echo("    (no attempt, decision or user intent recorded before it)")


@click.command("diff")
@click.argument("task", metavar="TASK")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@json_option
@pass_context
@fails_cleanly
def diff(ctx: Context, task: str, a: str, b: str, as_json: bool) -> None:
    """What changed in TASK's state between points A and B (each as for `replay --at`)."""
    from ledger.app import reading
    from projections import statediff

    entry = ctx.entry(task)
    ledger = ctx.ledger()
    pa, pb = _position(ctx, entry.task_id, a, entry.number), _position(ctx, entry.task_id, b, entry.number)
    patch = statediff.diff(reading.state(ledger, entry, at=pa), reading.state(ledger, entry, at=pb))
    if as_json:
        emit_json({"task": entry.number, "from": pa, "to": pb, "diff": patch})
        return
    click.echo(f"#{entry.number} [{pa}] -> [{pb}]")
    lines = statediff.describe(patch)
    click.echo("\n".join(lines) if lines else "(no change in the task's state)")


@click.command("branch")
@click.argument("task", metavar="TASK")
@click.argument("title")
@click.option("--at", "at", required=True, metavar="POINT", help="Where to branch (as for `replay --at`).")
@click.option("--no-switch", is_flag=True, help="Do not make the new task the active one.")
@json_option
@pass_context
@fails_cleanly
def branch(ctx: Context, task: str, title: str, at: str, no_switch: bool, as_json: bool) -> None:
    """Start a new task TITLE from TASK's state at a point, to try another way from there.

    The new task holds copies of the first events (same positions), then a link back.
    The original task is left as it is.
    """
    from ledger.app import refs
    from ledger.base.project import current_project

    entry = ctx.entry(task)
    position = _position(ctx, entry.task_id, at, entry.number)
    state = ctx.ledger().branch(entry.task_id, position, title)
    if not no_switch and state.id is not None:
        refs.set_active(ctx.location, state.id, current_project())
    if as_json:
        emit_json({"task": state.number, "slug": state.slug, "from": entry.number, "at": position})
    else:
        click.echo(f"Branched #{state.number} {state.slug} from #{entry.number} at [{position}]")


@click.command("verify")
@click.argument("task", required=False, metavar="[TASK]")
@click.option("--head", "expect", metavar="HASH[@N]|ledger1:...",
              help="A head kept elsewhere (as `trail checkpoint` prints it): the chain must hold it, at N when given;"
                   " a ledger head (`trail checkpoint --ledger`, no TASK): every task and the task list must hold it.")
@json_option
@pass_context
@fails_cleanly
def verify(ctx: Context, task: str | None, expect: str | None, as_json: bool) -> None:
    """Walk the hash chain of TASK (default: every task) and report the first break: a tampered,
    missing or cut event, a snapshot or task-list entry that is not what the events say, a forged
    collected output, or an archive that is missing or altered. Each task's head is printed.

    Exits 5 when any task is broken.
    """
    from ledger.app import access, ledgerhead
    from ledger.app.verify import LedgerBroken, parse_head, verify_registry, verify_task
    from ledger.base.errors import Refused

    whole = expect is not None and ledgerhead.is_ledger_token(expect)
    if whole:
        if task:
            raise click.UsageError("a ledger head (ledger1:...) covers every task: give no TASK")
        assert expect is not None
        ledgerhead.decode(expect)
    elif expect is not None:
        if not task:
            raise click.UsageError("--head needs TASK: a head belongs to one task's chain "
                                   "(or give a ledger head, from `trail checkpoint --ledger`)")
        parse_head(expect)
    ledger = ctx.ledger()
    partial = not ledger.sees_all  # a grantee: the server shows it its projects' tasks only (``stores.pgaccess``)
    if whole and partial:
        raise Refused("a ledger head covers every task, and this role sees only its projects' tasks: "
                      "the ledger's owner checks it")
    findings = ledgerhead.check(ledger, expect) if whole and expect is not None else []
    expect = None if whole else expect
    entries = [ctx.entry(task)] if task else ledger.entries()
    reports: list[tuple[Entry | None, Report]] = [(e, verify_task(ledger, e.task_id, e, expect)) for e in entries]
    if not task and not partial:  # the task list itself, last: its chain, anchor and snapshots (None: its row)
        reports.append((None, verify_registry(ledger)))
    # A grantee cannot walk the task list's chain (the other projects' entries are hidden from it): say so.
    hidden = access.task_list_seen(ledger) if not task and partial else None
    broken = [(e, r) for e, r in reports if not r.ok]
    against = [f for f in findings if f.is_break]
    if as_json:
        held = [{"ledger_head": True, "ok": not against, "findings": [
            {"task": f.number, "kind": f.kind, "detail": f.detail, "break": f.is_break} for f in findings]}]
        emit_json([{
            "task": None if e is None else e.number, "registry": e is None,
            "events": r.events, "ok": r.ok, "head": r.head, "head_token": r.head_token,
            "stale_snapshots": r.stale_snapshots,
            "anchor": None if r.anchor is None else {"position": r.anchor.version, "chain": r.anchor.chain},
            "break": None if r.first_break is None else {
                "position": r.first_break.position, "kind": r.first_break.kind, "detail": r.first_break.detail},
        } for e, r in reports] + (held if whole else []) + ([] if hidden is None else [{
            "task": None, "registry": True, "ok": None, "checked": False,
            "events_seen": hidden[0], "events": hidden[1]}]))
    else:
        for e, r in reports:
            if e is None:
                b = r.first_break
                click.echo(f"task list ok: {r.events} events, head {r.head_token}" if b is None else
                           f"task list BROKEN at position {b.position}: {b.kind} ({b.detail})")
            elif r.first_break is None:
                anchored = "" if r.anchor is not None else " (no anchor recorded: a ledger from before anchors)"
                stale = (f"; {r.stale_snapshots} snapshot(s) from an older fold, rebuilt on read"
                         if r.stale_snapshots else "")
                click.echo(f"#{e.number} ok: {r.events} events, head {r.head_token}{anchored}{stale}")
            else:
                b = r.first_break
                click.echo(f"#{e.number} BROKEN at position {b.position}: {b.kind} ({b.detail})")
        if hidden is not None:
            click.echo(f"task list not checked: this role sees {hidden[0]} of its {hidden[1]} events (its grants "
                       "hide other projects' entries); the ledger's owner's `trail verify` checks it")
        for f in findings:
            click.echo(f"ledger head {'BROKEN' if f.is_break else 'note'}: {f.kind} ({f.detail})")
        if whole and not against:
            click.echo("ledger head ok: every task and the task list hold what the head recorded")
    if against:
        raise LedgerBroken(f"the ledger is not what the head recorded: {against[0].kind} ({against[0].detail})"
                           + (f"; and {len(against) - 1} more" if len(against) > 1 else ""))
    if broken:
        entry, first = broken[0]
        assert first.first_break is not None
        name = "the task list" if entry is None else f"#{entry.number}"
        raise LedgerBroken(
            f"{len(broken)} of {len(reports)} broken; first: {name} "
            f"at position {first.first_break.position} ({first.first_break.kind}: {first.first_break.detail})"
        )


COMMANDS: list[click.Command] = [why, diff, branch, verify]
