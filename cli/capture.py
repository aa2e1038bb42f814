"""Capture commands: import transcripts, install the agents' hooks (cli/install.py), the hook itself, doctor,
reclassify."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from cli.agent_group import AgentGroup
from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context, task_argument, whole_number
from cli.install import install_group, uninstall_group  # `trail install` / `trail uninstall`
from ledger.domain import ruleset

# -- trail import -----------------------------------------------------------------------------------


def _import_command(agent: str) -> click.Command:
    """``trail import AGENT``: the same options for every agent, one definition."""
    from ledger.capture.agents import load

    who = load(agent)
    summary = f"Import {who.title} transcripts (files or folders; default {who.transcripts})."

    @click.command(agent, help=summary + "\n" + _IMPORT_GROUPING)
    @_paths
    @_task
    @_project
    @_since
    @json_option
    @pass_context
    @fails_cleanly
    def command(
        ctx: Context, paths: tuple[Path, ...], task: str | None, project: Path | None, since: datetime | None,
        as_json: bool,
    ) -> None:
        _run_import(ctx, agent, paths, task, as_json, project, since)

    return command


@click.group("import", cls=AgentGroup, make=_import_command)
def import_group() -> None:
    """Import agent sessions after the fact (re-importing adds nothing new)."""


def _run_import(
    ctx: Context, agent: str, paths: tuple[Path, ...], task: str | None, as_json: bool,
    project: Path | None, since: datetime | None,
) -> None:
    from ledger.base.project import project_of
    from ledger.capture.agents import load
    from ledger.capture.importer import discover, import_files

    ruleset.enable()  # a bulk write: the vendor ruleset's load is small beside it
    who = load(agent)
    files = discover(list(paths) or [who.transcripts], who.transcript_suffix)
    ledger = ctx.ledger()
    target = ctx.entry(task).task_id if task else None
    total = sum(f.stat().st_size for f in files)
    where = project_of(str(project)) if project is not None else None
    when = since.replace(tzinfo=since.tzinfo or UTC) if since is not None else None
    with click.progressbar(length=total, label=f"importing {len(files)} {agent} files", file=sys.stderr) as bar:
        report = import_files(ledger, ctx.location, who, files, target, progress=bar.update,
                              project=where, since=when)
    if as_json:
        emit_json(report.as_dict())
        return
    data = report.as_dict()
    click.echo(
        f"Imported {data['events_total']} events from {report.files} files into {len(report.tasks)} tasks "
        f"({report.new_tasks} new)."
    )
    for number, title in sorted(report.tasks.items()):
        click.echo(f"  #{number} {title}")
    for name, count in sorted(report.events.items()):
        click.echo(f"  {name:<20} {count}")
    if report.skipped:
        click.echo(f"Skipped {len(report.skipped)} lines:")
        for file, line, why in report.skipped:
            click.echo(f"  {file}{f':{line}' if line is not None else ''}: {why}")


_paths = click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
_task = click.option("-t", "--task", metavar="TASK", help="Attach every session to this task instead of one task each.")
_project = click.option(
    "--project", type=click.Path(path_type=Path), metavar="PATH",
    help="Only sessions run in this project (its git top level) or a folder inside it.",
)
_since = click.option(
    "--since", type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]), metavar="DATE",
    help="Only sessions with a record at or after DATE (YYYY-MM-DD[ HH:MM], UTC).",
)


_IMPORT_GROUPING = """
    Sessions that continue one another (a /clear, a compaction, a resume) join one task; each other
    session opens its own, at its first record's time, in its own project. Each task ends paused,
    or done when the agent finished a plan made after the user's last request, with nothing failing."""


# -- trail hook (the click route; `trail` itself dispatches it before click loads) ---------------------


def _hook_command(agent: str) -> click.Command:
    @click.command(agent)
    def command() -> None:
        """Take one hook payload from stdin into the capture inbox; never fails the agent."""
        from ledger.capture.hook import run

        sys.exit(run([agent]))

    return command


@click.group("hook", cls=AgentGroup, make=_hook_command)
def hook_group() -> None:
    """Entry points the agents' hooks call (payload on stdin)."""


# -- trail doctor ----------------------------------------------------------------------------------


@click.command("doctor")
@click.option("--retry", is_flag=True, help="Replay the dead-letter spool into the inbox and fold it in.")
@json_option
@pass_context
@fails_cleanly
def doctor(ctx: Context, retry: bool, as_json: bool) -> None:
    """Check capture health: dead letters and inbox rows still waiting for a task."""
    from cli.install import codex_hook_problems, codex_mcp_problems
    from ledger.base.location import inbox_path
    from ledger.capture import inbox_queue
    from ledger.capture.inbox import Drained
    from ledger.capture.jsonl import loads

    spool = Path(inbox_queue.deadletter_dir())
    files = sorted(spool.glob("*.json")) if spool.is_dir() else []
    replayed, failed = 0, []
    if retry:
        for file in files:
            try:
                letter = loads(file.read_text())
                agent = str(letter.get("agent") or "claude-code")  # letters from before Codex hooks name none
                inbox_queue.enqueue(str(inbox_path(ctx.location)), agent, inbox_queue.parse(letter["raw"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                failed.append(f"{file}: {exc}")
                continue
            file.unlink()
            replayed += 1
    ctx.ledger()  # the command's one fold of the inbox (``Context.catch_up``), after the replay above
    drained = ctx.folded or Drained()
    left = sorted(spool.glob("*.json")) if spool.is_dir() else []
    codex_hooks, skipped = codex_hook_problems()
    mcp_problems = codex_mcp_problems()
    key_problem = None
    if ctx.location.is_sqlite:
        from ledger.app.briefcache import key_problem as brief_key_problem

        key_problem = brief_key_problem(os.path.realpath(ctx.location.sqlite_path))
    report = {
        "dead_letters": len(left),
        "replayed": replayed,
        "events": drained.events,
        "waiting_rows": drained.waiting,
        "failed": failed,
        "codex_hooks": codex_hooks,
        "codex_hooks_skipped": skipped,
        "codex_mcp_problems": mcp_problems,
        "brief_cache_key": key_problem,
    }
    if as_json:
        emit_json(report)
    else:
        click.echo(f"dead letters: {len(left)} in {spool}" + (f" (replayed {replayed})" if retry else ""))
        click.echo(f"inbox: {drained.events} events folded in, {drained.waiting} rows waiting for a task")
        if codex_hooks or skipped:
            click.echo(f"codex hooks: {codex_hooks} installed, " + (f"{len(skipped)} problems:" if skipped
                                                                     else "Codex runs them all"))
        for line in skipped:
            click.echo(f"  {line}")
        if skipped:
            click.echo("  `trail install codex` turns hooks on and trusts tasktrail's hooks again")
        for line in mcp_problems:
            click.echo(f"codex mcp: {line}")
        if key_problem:
            click.echo(f"brief cache: off, its key is refused: {key_problem} (remove it: the next resume makes "
                       "a new one)")
        for line in failed:
            click.echo(f"  cannot replay {line}", err=True)
    if failed:
        sys.exit(1)


# -- trail reclassify ------------------------------------------------------------------------------

@click.command("reclassify")
@click.argument("position", type=whole_number(1))
@click.option(
    "--as", "kind", type=click.Choice(["requirement", "correction", "change"]), required=True,
    help="What the prompt really was (change: a new wording of the requirement before it).",
)
@task_argument
@json_option
@pass_context
@fails_cleanly
def reclassify(ctx: Context, position: int, kind: str, task: str | None, as_json: bool) -> None:
    """Override how a captured prompt at POSITION was classified.

    The log is never edited: an IntentReclassified event is appended and the task's
    state moves the prompt to its new kind.
    """
    from ledger.domain import events as ev

    entry = ctx.entry(task)
    state = ctx.ledger().append(entry.task_id, ev.IntentReclassified, target=position, kind=kind, actor="user")
    if as_json:
        emit_json({"task": entry.number, "position": state.position, "kind": kind, "reclassifies": position})
    else:
        click.echo(f"#{entry.number} [{state.position}] position {position} is now a {kind}")


COMMANDS: list[click.Command] = [import_group, install_group, uninstall_group, hook_group, doctor, reclassify]
