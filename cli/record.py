"""Commands that record facts: each appends one event to a task (the active one by default)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from cli.context import Context, emit_json, fails_cleanly, pass_context, whole_number
from ledger.app import recording
from ledger.base.agent_env import default_actor
from ledger.domain import events as ev

task_option = click.option(
    "-t", "--task", "task_ref", metavar="TASK", help="Task number, slug prefix or title (default: the active task)."
)
actor_option = click.option(
    "--actor",
    default=default_actor,
    show_default="user, or the agent running the command",
    help="Who states this: user, system, agent:NAME or tool:NAME.",
)
because_option = click.option("--because", "because", type=whole_number(1), metavar="EVENT",
                              help="Position of the intent or decision behind it.")
json_flag = click.option("--json", "as_json", is_flag=True, help="Print the appended event as JSON.")


def _report(ctx: Context, number: int | None, position: int, what: str, as_json: bool, head: str | None = None) -> None:
    if as_json:
        emit_json({"task": number, "position": position, "event": what, **({"head": head} if head else {})})
    else:
        click.echo(f"#{number} [{position}] {what}")
        if head:
            click.echo(f"head {head}")


def _append(
    ctx: Context, task_ref: str | None, event_class: type[ev.TaskEvent], as_json: bool, with_head: bool = False,
    **fields: Any,
) -> int:
    entry = ctx.entry(task_ref)
    ledger = ctx.ledger()
    state = ledger.append(entry.task_id, event_class, **fields)
    head = None
    if with_head and (anchor := ledger.store.head(entry.task_id)) is not None:
        head = f"{anchor.chain}@{anchor.version}"  # what `trail verify TASK --head` takes
    _report(ctx, entry.number, state.position, event_class.__name__, as_json, head)
    return state.position


def _record(ctx: Context, task_ref: str | None, as_json: bool, kind: str, actor: str, **given: Any) -> int:
    """Append a ``kind`` record (``ledger.app.recording``: the mapping the MCP server's record tool shares)."""
    event_class, fields = recording.event(kind, **given)
    return _append(ctx, task_ref, event_class, as_json, **fields, actor=actor)


def _simple(name: str, kind: str, help_text: str, metavar: str = "TEXT") -> click.Command:
    """A command whose one argument is the record's ``text``."""

    @click.command(name, help=help_text)
    @click.argument("text", metavar=metavar)
    @task_option
    @actor_option
    @json_flag
    @pass_context
    @fails_cleanly
    def command(ctx: Context, text: str, task_ref: str | None, actor: str, as_json: bool) -> None:
        _record(ctx, task_ref, as_json, kind, actor, text=text)

    return command


@click.command("start")
@click.argument("title")
@click.option("--no-switch", is_flag=True, help="Do not make the new task the active one.")
@actor_option
@json_flag
@pass_context
@fails_cleanly
def start(ctx: Context, title: str, no_switch: bool, actor: str, as_json: bool) -> None:
    """Open a new task named TITLE and make it the active task."""
    from ledger.app import refs

    state = ctx.ledger().open_task(title, cwd=os.getcwd(), actor=actor)
    if not no_switch and state.id is not None:
        refs.set_active(ctx.location, state.id, state.project)
    if as_json:
        emit_json({"task": state.number, "slug": state.slug, "id": str(state.id), "active": not no_switch})
    else:
        click.echo(f"Started #{state.number} {state.slug}" + ("" if no_switch else " (now active)"))


@click.command("title")
@click.argument("words", nargs=-1, required=True, metavar="[TASK] NEW TITLE...")
@task_option
@actor_option
@click.option("--json", "as_json", is_flag=True, help="Print the task, its new and previous title as JSON.")
@pass_context
@fails_cleanly
def title(ctx: Context, words: tuple[str, ...], task_ref: str | None, actor: str, as_json: bool) -> None:
    """Rename TASK (default: the active task) to NEW TITLE; its number and slug stay.

    A first word that is a task number (7 or #7) names the task; with -t TASK every word is the title.
    The old title stays in the log: `trail replay` before the rename shows it."""
    from ledger.app.refs import task_number
    from ledger.base.errors import BadInput

    if task_ref is None and len(words) > 1 and task_number(words[0]) is not None:
        task_ref, words = words[0], words[1:]
    new = " ".join(words).strip()
    if not new:
        raise BadInput("title: the new title is empty (give it as words after TASK)")
    entry = ctx.entry(task_ref)
    ledger = ctx.ledger()
    previous = ledger.state(entry.task_id)
    # The same title again records nothing: a rename is a change, not a repeat.
    state = previous if previous.title == new else ledger.retitle(entry.task_id, new, actor=actor)
    changed = state is not previous
    if as_json:
        emit_json({"task": entry.number, "position": state.position, "title": state.title,
                   "previous": previous.title, "changed": changed})
    elif changed:
        click.echo(f"#{entry.number} [{state.position}] retitled: {state.title} (was: {previous.title})")
    else:
        click.echo(f"#{entry.number} is already titled {state.title!r}; nothing recorded")


@click.command("require")
@click.argument("text")
@click.option("--replaces", type=whole_number(1), metavar="POSITION",
              help="Reword the requirement recorded at POSITION.")
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def require(ctx: Context, text: str, replaces: int | None, task_ref: str | None, actor: str, as_json: bool) -> None:
    """State a requirement, or reword an earlier one with --replaces POSITION."""
    _record(ctx, task_ref, as_json, "requirement", actor, text=text, replaces=replaces)


@click.command("correct")
@click.argument("text")
@click.option("--wrong", metavar="TEXT", help="What the agent had wrong.")
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def correct(ctx: Context, text: str, wrong: str | None, task_ref: str | None, actor: str, as_json: bool) -> None:
    """Correct a misunderstanding of the agent's."""
    _record(ctx, task_ref, as_json, "correction", actor, text=text, wrong=wrong)


@click.command("decide")
@click.argument("text")
@click.option("--because", "reason", metavar="REASON", help="Why this was decided.")
@click.option("--rejected", multiple=True, metavar="ALTERNATIVE", help="An alternative that was turned down.")
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def decide(
    ctx: Context, text: str, reason: str | None, rejected: tuple[str, ...], task_ref: str | None, actor: str,
    as_json: bool,
) -> None:
    """Record a decision with its reason and the alternatives turned down."""
    _record(ctx, task_ref, as_json, "decision", actor, text=text, reason=reason, rejected=rejected)


Append = Callable[[Context, "str | None", bool, str, "str | None"], None]


def _with_reason(name: str, help_text: str, reason_required: bool, append: Append) -> click.Command:
    """A command whose one argument is a REASON, handed to ``append(ctx, task_ref, as_json, actor, reason)``."""

    @click.command(name, help=help_text)
    @click.argument("reason", required=reason_required, metavar="REASON" if reason_required else "[REASON]")
    @task_option
    @actor_option
    @json_flag
    @pass_context
    @fails_cleanly
    def command(ctx: Context, reason: str | None, task_ref: str | None, actor: str, as_json: bool) -> None:
        append(ctx, task_ref, as_json, actor, reason)

    return command


def _ending(name: str, outcome: str, help_text: str) -> click.Command:
    def append(ctx: Context, task_ref: str | None, as_json: bool, actor: str, reason: str | None) -> None:
        _record(ctx, task_ref, as_json, "attempt_end", actor, outcome=outcome, reason=reason)

    return _with_reason(name, help_text, outcome == "failed", append)


def _status(name: str, status: str, help_text: str, reason_required: bool = False) -> click.Command:
    def append(ctx: Context, task_ref: str | None, as_json: bool, actor: str, reason: str | None) -> None:
        entry = ctx.entry(task_ref)
        now = ctx.ledger().state(entry.task_id)
        # A second `done` says so and adds nothing; `block` with a new reason still records it.
        if now.status == status and (reason is None or reason == now.status_reason):
            if as_json:
                emit_json({"task": entry.number, "position": None, "event": None, "status": status})
            else:
                click.echo(f"#{entry.number} is already {status}; nothing recorded")
            return
        _append(ctx, task_ref, ev.StatusChanged, as_json, status=status, reason=recording.check_reason(reason),
                actor=actor)

    return _with_reason(name, help_text, reason_required, append)


@click.command("ran", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
@click.option("--exit-code", "pass_exit", is_flag=True,
              help="Exit with COMMAND's own exit code (for scripts), not tasktrail's.")
@because_option
@task_option
@actor_option
@pass_context
@fails_cleanly
def ran(
    ctx: Context, argv: tuple[str, ...], pass_exit: bool, because: int | None, task_ref: str | None, actor: str
) -> None:
    """Run COMMAND and record its exit code, duration and output tails.

    trail exits 0 once the run is recorded, whatever COMMAND's exit code (it is printed and stored), so
    pytest's 4 or make's 2 is not read as tasktrail's own storage or usage error; --exit-code passes it on.

    \b
    Example:  trail ran -- pytest tests/test_login.py
              trail ran --exit-code -- make test && git push
    """
    from ledger.app.run import run
    from ledger.domain.bounds import bound

    entry = ctx.entry(task_ref)  # fail on a bad task before running anything
    done = run(list(argv))
    fields: dict[str, Any] = {
        "argv": argv,
        "cwd": os.getcwd(),
        "exit_code": done.exit_code,
        "duration_ms": done.duration_ms,
        "stdout": bound(done.stdout, full_size=done.stdout_size, full_sha256=done.stdout_sha256),
        "stderr": bound(done.stderr, full_size=done.stderr_size, full_sha256=done.stderr_sha256),
        "actor": actor,
        "because_event": because,
    }
    state = ctx.ledger().append(entry.task_id, ev.CommandRan, **fields)
    click.echo(f"trail: #{entry.number} [{state.position}] recorded exit {done.exit_code}", err=True)
    if pass_exit:
        raise SystemExit(done.exit_code)


@click.command("changed")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@because_option
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def changed(
    ctx: Context, paths: tuple[str, ...], because: int | None, task_ref: str | None, actor: str, as_json: bool
) -> None:
    """Record that files changed: their new sha256 and a unified diff against the last recorded version."""
    from ledger.app.workspace import BlobCache, describe_change
    from ledger.domain.bounds import DIFF, bound
    from ledger.domain.redact import redact_text

    entry = ctx.entry(task_ref)
    ledger = ctx.ledger()
    state = ledger.state(entry.task_id)
    cache = BlobCache(ctx.location.home / "blobs")
    items: list[tuple[type[ev.TaskEvent], dict[str, Any]]] = []
    undiffed: list[str | None] = []
    unchanged: list[str] = []
    for given in paths:
        path = os.path.normpath(given)
        last = state.files.get(path)
        change = describe_change(path, last.after_sha256 if last else None, cache)
        if change.after_sha256 is not None and change.after_sha256 == change.before_sha256:
            # The same bytes as its baseline: an event would claim a change that did not happen.
            since = f"as recorded at [{last.position}]" if last else "as in git HEAD"
            unchanged.append(redact_text(path))
            if not as_json:
                click.echo(f"{redact_text(path)} is unchanged ({since}, sha256 {change.after_sha256[:12]}); "
                           "nothing recorded")
            continue
        undiffed.append(change.undiffed)
        items.append(
            (
                ev.FileChanged,
                {
                    "path": path,
                    "operation": change.operation,
                    "before_sha256": change.before_sha256,
                    "after_sha256": change.after_sha256,
                    "diff": bound(change.diff, limit=DIFF) if change.diff is not None else None,
                    "actor": actor,
                    "because_event": because,
                },
            )
        )
    if not items:
        if as_json:
            emit_json({"task": entry.number, "positions": [], "paths": [], "unchanged": unchanged})
        return
    after = ledger.append_many(entry.task_id, items)  # all files or none
    first = after.position - len(items) + 1
    # Shown as stored: a path can hold a token (a file named after one), which the events hold redacted.
    recorded = [redact_text(str(fields["path"])) for _, fields in items]
    if as_json:
        emit_json({"task": entry.number, "positions": list(range(first, after.position + 1)), "paths": recorded,
                   **({"unchanged": unchanged} if unchanged else {}),
                   **({"undiffed": {p: why for p, why in zip(recorded, undiffed, strict=True) if why}}
                      if any(undiffed) else {})})
    else:
        for offset, ((_, fields), why) in enumerate(zip(items, undiffed, strict=True)):
            note = f" (no diff: {why})" if why else ""
            click.echo(f"#{entry.number} [{first + offset}] {fields['operation']} {recorded[offset]}{note}")


@click.command("tested")
@click.argument("name")
@click.argument("outcome", type=click.Choice(["passed", "failed", "error", "skipped"]))
@click.option("--message", metavar="TEXT", help="The failure message or a summary.")
@click.option("--duration-ms", type=whole_number(0), metavar="MS")
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def tested(
    ctx: Context, name: str, outcome: str, message: str | None, duration_ms: int | None, task_ref: str | None,
    actor: str, as_json: bool,
) -> None:
    """Record a test result: NAME passed, failed, error or skipped."""
    _append(
        ctx, task_ref, ev.TestResult, as_json, name=name, outcome=outcome, message=message, duration_ms=duration_ms,
        actor=actor,
    )


@click.command("checkpoint")
@click.argument("label", required=False)
@click.option("--note", metavar="TEXT", help="What holds at this point.")
@click.option("--ledger", "whole", is_flag=True,
              help="Instead: print the whole ledger's head (every task and the task list), recording nothing.")
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def checkpoint(
    ctx: Context, label: str | None, note: str | None, whole: bool, task_ref: str | None, actor: str, as_json: bool,
) -> None:
    """Mark a checkpoint LABEL, with git HEAD and dirty state when in a git repo.

    Prints the task's chain head after it (``head HASH@N``): kept elsewhere (a commit trailer, a git
    note), `trail verify TASK --head HASH@N` later shows the log was not cut or rewritten before it.
    With --ledger (no LABEL), the ledger is verified and its head printed (``head ledger1:...``):
    `trail verify --head TOKEN` later names a task deleted, cut, renumbered or rewritten since."""
    if whole:
        if label is not None or note is not None or task_ref is not None:
            raise click.UsageError("--ledger takes no LABEL, --note or --task: it covers every task")
        _ledger_head(ctx, as_json)
        return
    if label is None:
        raise click.UsageError("Missing argument 'LABEL'.")
    event_class, fields = recording.event("checkpoint", label=label, note=note)
    _append(ctx, task_ref, event_class, as_json, with_head=True, **fields, actor=actor)


def _ledger_head(ctx: Context, as_json: bool) -> None:
    from ledger.app import ledgerhead
    from ledger.app.verify import LedgerBroken, verify_all, verify_registry

    ledger = ctx.ledger()
    entries = ledger.entries()
    # A head of a ledger already broken would vouch for the break: the whole walk first.
    reports = [*verify_all(ledger, [e.task_id for e in entries], entries), verify_registry(ledger)]
    if broken := [r for r in reports if not r.ok]:
        raise LedgerBroken(f"{len(broken)} of {len(reports)} broken; no ledger head printed (run `trail verify`)")
    token = ledgerhead.current(ledger)
    if as_json:
        emit_json({"head": token, "tasks": len(entries), "registry_position": reports[-1].events})
    else:
        click.echo(f"ledger ok: {len(entries)} task(s), task list at {reports[-1].events}")
        click.echo(f"head {token}")


@click.command("link")
@click.argument("other", metavar="OTHER")
@click.option(
    "--as", "relation", type=click.Choice(["parent", "child", "blocks", "blocked_by", "related"]), default="related",
    show_default=True, help="How OTHER relates to this task.",
)
@task_option
@actor_option
@json_flag
@pass_context
@fails_cleanly
def link(ctx: Context, other: str, relation: str, task_ref: str | None, actor: str, as_json: bool) -> None:
    """Link this task to task OTHER."""
    target = ctx.entry(other)
    _append(ctx, task_ref, ev.TaskLinked, as_json, relation=relation, other=target.task_id,
            other_number=target.number, actor=actor)


@click.command("switch")
@click.argument("task")
@pass_context
@fails_cleanly
def switch(ctx: Context, task: str) -> None:
    """Make TASK the active task of this project (the one commands here use when none is named)."""
    from ledger.app import refs
    from ledger.base.project import current_project

    entry = ctx.entry(task)
    refs.set_active(ctx.location, entry.task_id, current_project())
    click.echo(f"Active task: #{entry.number} {entry.slug}")


COMMANDS: list[click.Command] = [
    start,
    title,
    require,
    correct,
    decide,
    _simple("attempt", "attempt_start", "Start an attempt: an approach being tried now."),
    _ending("fail", "failed", "End the open attempt as failed, saying why."),
    _ending("succeed", "succeeded", "End the open attempt as succeeded."),
    _ending("abandon", "abandoned", "End the open attempt as abandoned."),
    ran,
    changed,
    tested,
    checkpoint,
    _simple("next", "next_step", "Set the next step the task means to take."),
    _simple("note", "note", "Add a free-form note."),
    _status("pause", "paused", "Pause the task."),
    _status("block", "blocked", "Mark the task blocked by REASON.", reason_required=True),
    _status("done", "done", "Mark the task done."),
    _status("reopen", "active", "Make a paused, blocked or done task active again."),
    link,
    switch,
]
