"""Analytics over the DuckDB read model: `trail query`, `trail stats`, `trail export`.

Each command first catches the read model up with the ledger (only the new events),
then reads it. Parsing and printing only; ``projections.readmodel`` does the work.
"""

from __future__ import annotations

import csv
import os
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click

from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context, whole_number
from ledger.base.errors import NotFound
from projections import queries

if TYPE_CHECKING:
    from ledger.domain.registry import Entry
    from projections.readmodel import Result

CELL_WIDTH = 60


def _refreshed(ctx: Context, rebuild: bool = False, checked: bool | list[Entry] = True) -> Path:
    """The read model, caught up; ``checked``: first refuse (exit 5) when a task it could show (every one when
    True; these when given) does not pass a read's checks (``reading.check_tasks``). `find` checks its own."""
    from ledger.app import reading
    from projections import readmodel  # DuckDB loads only for the commands that use it

    if checked is not False:
        reading.check_tasks(ctx.ledger(), None if checked is True else checked)
    path = readmodel.readmodel_path(ctx.location)
    readmodel.refresh(ctx.ledger(), path, rebuild=rebuild)
    return path


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, date | timedelta):
        return str(value)
    if isinstance(value, str):
        from projections.find import cell

        return cell(value, CELL_WIDTH)
    text = str(value)
    return text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"


def _table(result: Result) -> str:
    cells = [[_cell(v) for v in row] for row in result.rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(result.columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(result.columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.append(f"({len(cells)} row{'s' if len(cells) != 1 else ''})")
    return "\n".join(lines)


def json_records(result: Result) -> list[dict[str, Any]]:
    """The rows as column -> value, in values any JSON encoder takes (as the MCP query tool answers them)."""
    from projections.capped_query import json_ready

    return [{column: json_ready(v) for column, v in zip(result.columns, row, strict=True)} for row in result.rows]


def _capped(path: Path, sql: str) -> Result:
    """The query as the MCP query tool runs it (a capped child process), at its largest row limit."""
    from cli.mcp import QUERY_ROWS_MAX, QUERY_SECONDS
    from projections import capped_query
    from projections.readmodel import Result

    found = capped_query.run(path, sql, limit=QUERY_ROWS_MAX, seconds=QUERY_SECONDS)
    if found.truncated or found.cut:
        click.echo(f"trail: answer cut as the MCP query tool cuts it ({found.cut} values cut, "
                   f"rows left out: {'yes' if found.truncated else 'no'})", err=True)
    rows = [tuple(record[c] for c in found.columns) for record in found.rows]
    return Result(columns=tuple(found.columns), rows=rows, truncated=found.truncated)


@click.command("query")
@click.argument("sql")
@json_option
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV with a header row.")
@click.option("--rebuild", is_flag=True, help="Rebuild the read model from the whole ledger first.")
@click.option("--sandbox", is_flag=True,
              help="Run as `trail mcp`'s query tool does: the read model's tables and nothing else.")
@pass_context
@fails_cleanly
def query_command(ctx: Context, sql: str, as_json: bool, as_csv: bool, rebuild: bool, sandbox: bool) -> None:
    """Run SQL over the read model (tables: events, tasks, files, attempts, commands, tests, decisions, intents).

    The query runs read-only, after the read model has caught up with the ledger: it cannot
    change the read model. No query reaches the network: DuckDB installs and loads no extension
    by itself (Parquet, JSON and time zones are built in).

    \b
    Default mode (your own shell): DuckDB's full power over your files, e.g.
    read_csv('notes.csv') to join with, or COPY (SELECT ...) TO 'out.parquet'.
    --sandbox: what every other front door (trail mcp) gets. Only the read model's
    tables; reading or writing any other file (read_csv, read_text, COPY, ATTACH,
    EXPORT), INSTALL and LOAD fail, and no SET can undo that (the configuration is locked).
    It runs in a child process with the MCP tool's caps: memory, 10 s, 1,000 rows,
    rows cut to 32 KiB and the answer to 256 KiB.
    """
    if as_json and as_csv:
        raise click.UsageError("choose one of --json and --csv")
    from projections import readmodel

    path = _refreshed(ctx, rebuild)
    result = _capped(path, sql) if sandbox else readmodel.query(path, sql)
    if as_json:
        emit_json(json_records(result))
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows([["" if v is None else v for v in row] for row in result.rows])
    else:
        click.echo(_table(result))


@click.command("stats")
@click.argument("names", nargs=-1, metavar="[QUERY]...")
@click.option("-t", "--task", "task_ref", metavar="TASK", help="Task for per-task queries (default: the active task).")
@json_option
@pass_context
@fails_cleanly
def stats_command(ctx: Context, names: tuple[str, ...], task_ref: str | None, as_json: bool) -> None:
    """Named queries across tasks. QUERY is one of: files, failed-attempts, failing-commands,
    stalled, timelines, timeline (one task, by day). Without QUERY: all of them
    (timeline only with --task)."""
    unknown = [n for n in names if n not in queries.BY_NAME]
    if unknown:
        raise NotFound(f"no named query {unknown[0]!r}; choose from {', '.join(queries.BY_NAME)}")
    chosen = (
        [queries.BY_NAME[n] for n in names]
        if names
        else [q for q in queries.QUERIES if not q.per_task or task_ref is not None]
    )
    path = _refreshed(ctx)
    number = ctx.entry(task_ref).number if any(q.per_task for q in chosen) else None
    from projections import readmodel

    results = {q.name: readmodel.query(path, q.sql, {"task": number} if q.per_task else None) for q in chosen}
    if as_json:
        emit_json({name: json_records(result) for name, result in results.items()})
        return
    for i, q in enumerate(chosen):
        title = f"{q.title} (task #{number})" if q.per_task else q.title
        click.echo(("\n" if i else "") + f"## {title}\n")
        click.echo(_table(results[q.name]))


@click.command("find")
@click.argument("terms", nargs=-1, required=True, metavar="WORD...")
@click.option("-n", "--limit", type=whole_number(1), default=10, show_default=True, help="Tasks shown at most.")
@click.option("--project", metavar="PATH|NAME",
              help="Only tasks of this project: its folder, or the folder's last part (as `trail list` shows it).")
@click.option("--here", is_flag=True, help="Only tasks of this folder's project (its git top level).")
@click.option(
    "--status", "statuses", multiple=True, type=click.Choice(["active", "paused", "blocked", "done", "abandoned"]),
    help="Only tasks with this status (give it again for more).",
)
@click.option("--since", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]), metavar="DATE",
              help="Only tasks changed on or after DATE (YYYY-MM-DD, or with HH:MM; UTC).")
@click.option("--agent", metavar="NAME", help="Only tasks an agent took part in (claude-code, codex, ...).")
@json_option
@pass_context
@fails_cleanly
def find_command(ctx: Context, terms: tuple[str, ...], limit: int, project: str | None, here: bool,
                 statuses: tuple[str, ...], since: datetime | None, agent: str | None, as_json: bool) -> None:
    """Find the tasks that hold every WORD you remember, best first.

    A word may be anywhere in a task: its title, a requirement or correction, a decision, an attempt and
    why it failed, a note or checkpoint, its next step, a file it changed, a command it ran, a test, the
    agent's last words. Case does not matter, and a word
    matches inside a longer one ("redirect" finds "redirects", "calc" finds "src/calc.py"). Under each task
    found, the places that matched, each with its [position] for `trail log TASK` or `trail replay`.

    \b
    trail find redirect vercel       tasks where both words are
    trail find "login bug" --json    the same words, for a script
    trail find timeout --here --status paused --since 2026-11-01
    trail resume 3                   then take up the one you meant
    """
    from ledger.app import briefcache, reading
    from projections import find, readmodel

    words = find.words_of(terms)
    if not words:
        raise click.UsageError("give at least one word to find")
    if here and project is not None:
        raise click.UsageError("--here and --project both name a project: give one")
    from ledger.base.project import current_project, project_of

    if here:
        project = current_project()
        if project is None:
            raise click.UsageError("--here: this folder is gone, so it has no project")
    elif project is not None and ("/" in project or project in (".", "..", "~")):
        project = project_of(project)  # a path: its git top level, as a task's project is
    only = find.Only(project=project, statuses=statuses, agent=agent,
                     since=since.replace(tzinfo=UTC) if since is not None else None)
    path = _refreshed(ctx, checked=False)
    found = readmodel.find_tasks(path, words, limit, only)
    real = os.path.realpath(ctx.location.sqlite_path) if ctx.location.is_sqlite else None
    entries = {e.number: e for e in ctx.ledger().entries()}
    ids = {number: entry.task_id.hex for number, entry in entries.items()}
    before = {} if real is None else briefcache.task_keys(real, (ids[t.number] for t in found if t.number in ids))
    # The read model is a copy: a task that does not pass a read's checks is not shown, and refused after.
    found, refused = reading.checked_found(ctx.ledger(), found, entries)
    if as_json:
        emit_json(find.as_records(found))
    elif found or not refused:
        click.echo(find.as_text(found, words, only != find.Only()), nl=False)
    if real is not None:  # the next find answers from the index while nothing changes (cli.main)
        from ledger.app import findindex

        passed = {ids[t.number] for t in found}
        findindex.fill(ctx.ledger(), real, path, {task: key for task, key in before.items() if task in passed})
    if refused:
        raise refused[0]


@click.command("export")
@click.argument("task_ref", metavar="TASK", required=False)
@click.option(
    "--parquet",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write task-N-SLUG.parquet into.",
)
@click.option(
    "--agent-trace",
    "trace_file",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    help="File to write Agent Trace records into (JSON Lines, one per recorded change; - for stdout).",
)
@pass_context
@fails_cleanly
def export_command(ctx: Context, task_ref: str | None, directory: Path | None, trace_file: Path | None) -> None:
    """Write one task's events (the read model's events table) to a Parquet file, or the line ranges its
    recorded changes added as Agent Trace records."""
    if (directory is None) == (trace_file is None):
        raise click.UsageError("choose one of --parquet DIR and --agent-trace FILE")
    entry = ctx.entry(task_ref)
    if trace_file is not None:
        _export_agent_trace(ctx, entry.task_id, entry.number, trace_file)
        return
    assert directory is not None
    from projections import readmodel

    target, count = readmodel.export_parquet(_refreshed(ctx, checked=[entry]), entry.task_id, directory)
    click.echo(f"wrote {count} events of task #{entry.number} to {target}")


def _export_agent_trace(ctx: Context, task_id: UUID, number: int, target: Path) -> None:
    from importlib.metadata import PackageNotFoundError, version

    import orjson

    from cli.report import write_file
    from projections import agent_trace

    try:
        tool_version = version("tasktrail")
    except PackageNotFoundError:
        tool_version = "0"
    built = agent_trace.build(ctx.ledger().task_events(task_id), tool_version)
    lines = b"".join(orjson.dumps(record) + b"\n" for record in built.records)
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(built.skipped.items()))
    summary = f"{len(built.records)} Agent Trace records of task #{number}" + (f" (skipped: {skipped})" if skipped
                                                                               else "")
    if str(target) == "-":
        sys.stdout.buffer.write(lines)
        sys.stdout.flush()
        click.echo(summary, err=True)
        return
    write_file(target, lines)
    click.echo(f"wrote {summary} to {target}")


COMMANDS: list[click.Command] = [query_command, stats_command, find_command, export_command]
