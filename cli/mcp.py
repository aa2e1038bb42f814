"""`trail mcp`: the ledger as an MCP server over stdio, on the official Python SDK (``tasktrail[mcp]``).

Thin, as every command is: each tool parses its arguments and calls the library the CLI calls
(``ledger.app.refs``, ``ledger.app.recording``, ``ledger.app.reading``, ``projections.*``); no rule lives here.
The task is the active task of the client's project (the server's working directory, or the
``project`` argument) unless ``task`` names one; the actor is ``agent:<the client's name>`` from
the MCP ``initialize`` handshake. Anything a user could get wrong is a tool error (one line,
``isError``), never a crash of the server.

No ``from __future__ import annotations`` here: the SDK reads the tools' signatures for their
JSON schemas, and the tools are defined inside ``build`` (the SDK is imported only when serving).

The server answers ``initialize`` and ``tools/list`` before it loads the ledger: ``build`` imports the
SDK and what the schemas name (``ledger.app.recording``'s kinds, the brief's budget) and nothing else; the
ledger, its events and the projections load on the first tool call. A client that lists tools as soon as
the server answers (Claude Code does not wait for a slow one) finds them all.
"""

import inspect
import re
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import click

from cli.context import Context, fails_cleanly, pass_context
from ledger.base.agent_env import MCP_CLIENTS
from ledger.base.errors import BadInput, BadSetting, TrailError
from ledger.base.oneline import one_line, reason
from ledger.domain import ruleset

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ledger.app.store import Ledger
    from ledger.domain.registry import Entry

T = TypeVar("T")

QUERY_ROWS = 100
"""Rows the query tool returns unless asked for another number."""
QUERY_ROWS_MAX = 1000
QUERY_SECONDS = 10.0
"""The query tool stops a query after this long: it holds the read model, and every refresh, while it runs."""
INJECTION_DEFAULT, INJECTION_CAP = 9_500, 10_000
"""``projections.brief``'s budget, repeated so that the schemas do not load the projections (a test pins them)."""

AGENT_WORDS = (
    # The ledger's errors name the CLI command that fixes them; an agent on MCP has tools, not that command.
    ("start one with `trail attempt`", "start one with record kind attempt_start"),
    ("end it first (trail fail / succeed / abandon)", "end it first with record kind attempt_end"),
    ("(see `trail list`)", "(list_tasks shows them)"),
    ("start one with `trail start TITLE`, pick one with `trail switch X`, or name it with --task",
     "name one with the task argument (list_tasks shows them; a person opens a new one with trail start)"),
    ("pick one with `trail switch X`", "name one with the task argument (list_tasks shows them)"),
)


def for_agent(message: str) -> str:
    """A ledger error as an MCP tool error: the tool and argument to use in place of the CLI command named."""
    for cli_words, tool_words in AGENT_WORDS:
        message = message.replace(cli_words, tool_words)
    return message


MISSING_SDK = "trail mcp needs the MCP SDK, which is not installed: pip install 'tasktrail[mcp]'"

INSTRUCTIONS = (
    "tasktrail keeps a long coding task as a ledger of facts, so any session can resume it. Start with "
    "resume_task (the continuation brief of the task bound to your project). As you work, record what a "
    "successor would need with record: requirements and corrections the user gives, decisions with their "
    "reason and the alternatives turned down, each approach as attempt_start then attempt_end, and the "
    "next_step before you stop. Look back with log, why (a file or a line) and replay; find another task "
    "by words the user remembers of it with find_tasks."
)


def actor_for(client_name: str | None) -> str:
    """The agent's own actor for a client we know (``agent:codex`` for ``codex-mcp-client``, as its hooks
    record it), else ``agent:<client name>``, the name made to fit the actor pattern ``agent:[^\\s]+`` and
    redacted (a token in it becomes a marker, which has no space either)."""
    from ledger.domain.redact import redact_text

    name = re.sub(r"\s+", "-", (client_name or "").strip()).removeprefix("agent:")
    # Redacted here, not only on append: the actor is also echoed in the tool's answer.
    return MCP_CLIENTS.get(name) or f"agent:{redact_text(name) or 'mcp-client'}"


def build(state: Context) -> "MCPServer[Any]":
    """The MCP server over the ledger ``state`` opens, for a client whose project is the server's
    working directory (or a tool's ``project`` argument)."""
    from mcp.server.mcpserver import Context as ToolContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field, ValidationError

    from ledger.app import recording
    from ledger.base.project import current_project, project_of

    lock = threading.Lock()  # the SDK runs tools in worker threads; one ledger call at a time

    class Server(MCPServer[Any]):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                cause = exc.__cause__
                if not isinstance(cause, ValidationError):
                    raise
                # Arguments that break the schema: one line naming the field, as the CLI says it.
                error = cause.errors()[0]
                where = ".".join(str(part) for part in error["loc"])
                more = f" (and {cause.error_count() - 1} more)" if cause.error_count() > 1 else ""
                raise ToolError(f"Error executing tool {name}: {where}: {one_line(error['msg'])}{more}") from None

    try:
        from importlib.metadata import version

        ours = version("tasktrail")
    except ImportError:  # PackageNotFoundError: run from a checkout that is not installed
        ours = ""
    server = Server(name="tasktrail", version=ours, instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(**options: Any) -> Callable[[Callable[..., Any]], Any]:
        """``server.tool`` with the docstring as one paragraph: an agent reads the description as prose, and
        the SDK would keep the source's indentation and line breaks."""
        def register(function: Callable[..., Any]) -> Any:
            description = one_line(inspect.cleandoc(function.__doc__ or ""))
            return server.tool(description=description, **options)(function)

        return register

    def guarded(body: Callable[[], T]) -> T:
        """Run ``body`` on the ledger; what the CLI reports as one line is one tool error line."""
        from eventsourcing.persistence import PersistenceError

        with lock:
            state.next_command()  # each tool call is a command: its first ledger() folds the inbox in, once
            try:
                return body()
            except TrailError as exc:
                raise ToolError(for_agent(one_line(str(exc)))) from None
            except (PersistenceError, sqlite3.Error) as exc:
                raise ToolError(f"ledger storage failed: {reason(exc)}") from None

    def ledger() -> "Ledger":
        return state.ledger()

    def project_for(project: str | None) -> str | None:
        return project_of(project) if project else current_project()

    def entry_for(task: str | int | None, project: str | None) -> "Entry":
        from ledger.app import refs

        ref = None if task is None else str(task)
        return refs.resolve(ref, ledger().entries(), state.location, project_for(project))

    # -- the arguments every task tool takes --
    TaskArg = Annotated[
        str | int | None,
        Field(description="The task: its number (7 or \"#7\"), a unique prefix of its slug, or its title. "
                          "Default: the active task of the project."),
    ]
    ProjectArg = Annotated[
        str | None,
        Field(description="A folder in the client's project (its git top level is the project), whose active task "
                          "is the default. Default: the folder the server runs in."),
    ]
    MaxChars = Annotated[
        int,
        Field(ge=200, le=INJECTION_CAP,
              description=f"Fit the brief in this many characters, least useful lines dropped first "
                          f"(at most {INJECTION_CAP:,}, as for a session's injected context)."),
    ]
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @tool(annotations=reads)
    def list_tasks(
        status: Annotated[
            list[Literal["active", "paused", "blocked", "done", "abandoned"]] | None,
            Field(description="Only tasks with one of these statuses. Default: every task."),
        ] = None,
        project: ProjectArg = None,
    ) -> dict[str, Any]:
        """List every task in the ledger: number, slug, title, status, event count, last update and next step.
        `active` marks the active task of the project (the one the other tools use when no task is named)."""

        def body() -> dict[str, Any]:
            from ledger.app import reading

            where = project_for(project)
            return {"project": where, "tasks": reading.task_rows(ledger(), state.location, where, status or ())}

        return guarded(body)

    @tool(annotations=reads)
    def find_tasks(
        words: Annotated[list[Annotated[str, Field(min_length=1)]], Field(
            min_length=1, description="Words remembered of the task; a task is found when it holds every one "
                                      "(case-insensitive, inside longer words too: calc finds src/calc.py).")],
        limit: Annotated[int, Field(ge=1, le=50, description="At most this many tasks, best first.")] = 10,
        status: Annotated[
            list[Literal["active", "paused", "blocked", "done", "abandoned"]] | None,
            Field(description="Only tasks with one of these statuses. Default: any."),
        ] = None,
        project: Annotated[str | None, Field(
            description="Only tasks of this project: an absolute folder, or a project's name (its folder's "
                        "last part, as list_tasks shows it). Default: every project.")] = None,
        agent: Annotated[str | None, Field(
            description="Only tasks this agent took part in: claude-code, codex, ... Default: any.")] = None,
        since: Annotated[str | None, Field(
            description="Only tasks changed at or after this ISO date or time (2026-11-28, 2026-11-28T14:00; "
                        "UTC when it names no zone). Default: any time.")] = None,
    ) -> dict[str, Any]:
        """Find tasks by words remembered of them, in any project: each word may be in the title, a requirement
        or correction, a decision, an attempt and why it failed, a note or checkpoint, the next step, a file
        changed, a command run, a test or the agent's last words. Returns the tasks holding every word, best
        first (a title or requirement counts more than a command line, then the most recent), each with its
        number, title, status, folder and up to three matching places with their positions (texts cut to 300
        characters). Then resume_task with the number."""

        def body() -> dict[str, Any]:
            from ledger.app import reading
            from projections import find, points, readmodel  # DuckDB loads only when asked

            chosen = find.words_of(tuple(words))
            if not chosen:
                raise BadInput("words: give at least one word that is not blank")
            after = points.parse_time(since, "since") if since else None
            path = readmodel.readmodel_path(state.location)
            readmodel.refresh(ledger(), path)
            where = project_of(project) if project and project.startswith("/") else project
            only = find.Only(project=where, statuses=tuple(status or ()), agent=agent, since=after)
            found = readmodel.find_tasks(path, chosen, limit, only)
            # A task that does not pass a read's checks is left out and named (run `trail verify`).
            found, refused = reading.checked_found(ledger(), found)
            return {"words": chosen, "tasks": find.as_records(found, text_width=300),
                    **({"broken": [str(r) for r in refused]} if refused else {})}

        return guarded(body)

    @tool(annotations=reads, structured_output=False)
    def resume_task(task: TaskArg = None, project: ProjectArg = None,
                    max_chars: MaxChars = INJECTION_DEFAULT) -> str:
        """The continuation brief of the task: its goal and status, the next step, the current requirements,
        the corrections (what an agent had wrong), the plan, what is failing, attempts and how they ended,
        decisions, where the work stopped, files and last results. Task state, not a chat replay: read it
        before continuing the task."""

        def body() -> str:
            from ledger.app import reading
            from projections import brief

            return brief.render(reading.state(ledger(), entry_for(task, project)), max_chars=max_chars)

        return guarded(body)

    @tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                             open_world_hint=False))
    def record(
        ctx: ToolContext,
        kind: Annotated[
            recording.Kind,
            Field(description="What to record. requirement: what the task must do (text; replaces: the position of "
                              "a requirement this rewords). correction: a misunderstanding the user corrected (text; "
                              "wrong: what was wrong). decision: a choice made (text; reason; rejected: the "
                              "alternatives turned down). attempt_start: an approach being tried now (text). "
                              "attempt_end: how the open attempt ended (outcome; reason, required when it failed). "
                              "next_step: what the work means to do next (text). note: anything else (text). "
                              "checkpoint: a named point, with git HEAD and dirty state (label; note)."),
        ],
        text: Annotated[str | None, Field(description="The requirement, correction, decision, attempt, next step "
                                                      "or note, in full.")] = None,
        wrong: Annotated[str | None, Field(description="correction: what the agent had wrong.")] = None,
        reason: Annotated[str | None, Field(description="decision: why it was decided. attempt_end: why it ended "
                                                        "(required when it failed).")] = None,
        rejected: Annotated[list[str] | None, Field(description="decision: the alternatives turned down.")] = None,
        replaces: Annotated[int | None, Field(ge=1, description="requirement: the position of the requirement "
                                                                "this rewords.")] = None,
        outcome: Annotated[recording.Outcome | None, Field(description="attempt_end: how the attempt ended.")] = None,
        label: Annotated[str | None, Field(description="checkpoint: its name (replay can go back to it).")] = None,
        note: Annotated[str | None, Field(description="checkpoint: what holds at this point.")] = None,
        task: TaskArg = None,
        project: ProjectArg = None,
    ) -> dict[str, Any]:
        """Record one fact in the task's ledger as you work, for whoever resumes the task. Each kind takes its own
        fields (see kind); a field another kind takes is an error. Returns the task number, the event's position
        and its type. Rules of the task's state hold: attempt_end needs an open attempt, attempt_start needs none."""
        params = ctx.session.client_params
        actor = actor_for(params.client_info.name if params is not None else None)
        where = project_for(project)

        def body() -> dict[str, Any]:
            event_class, fields = recording.event(
                kind, cwd=where, text=text, wrong=wrong, reason=reason, rejected=rejected, replaces=replaces,
                outcome=outcome, label=label, note=note,
            )
            entry = entry_for(task, project)
            after = ledger().append(entry.task_id, event_class, **fields, actor=actor)
            return {"task": entry.number, "position": after.position, "event": event_class.__name__, "actor": actor}

        return guarded(body)

    @tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                      open_world_hint=False))
    def retitle_task(
        ctx: ToolContext,
        title: Annotated[str, Field(min_length=1, description="The task's new title: what the task is, in a few "
                                                              "words a person would remember it by.")],
        task: TaskArg = None,
        project: ProjectArg = None,
    ) -> dict[str, Any]:
        """Rename the task; its number and slug stay, and the old title stays in its history. The same title
        again records nothing. Returns the task number, the new and previous title and whether it changed."""
        params = ctx.session.client_params
        actor = actor_for(params.client_info.name if params is not None else None)

        def body() -> dict[str, Any]:
            new = title.strip()
            if not new:
                raise BadInput("title: give a title that is not blank")
            entry = entry_for(task, project)
            before = ledger().state(entry.task_id)
            after = before if before.title == new else ledger().retitle(entry.task_id, new, actor=actor)
            return {"task": entry.number, "position": after.position, "title": after.title,
                    "previous": before.title, "changed": after is not before}

        return guarded(body)

    @tool(annotations=reads)
    def why(
        target: Annotated[str, Field(description="A file path (as recorded, or its end: src/app.py), or PATH:LINE "
                                                 "for one line as the file is now.")],
        task: Annotated[str | int | None, Field(description="Only this task (number or slug prefix). "
                                                            "Default: every task.")] = None,
        project: ProjectArg = None,
    ) -> dict[str, Any]:
        """Why is this file (or line) like this? Every recorded change of it, newest first, each with the attempt,
        the decision and the requirement or correction behind it. A line is followed back through later diffs."""

        def body() -> dict[str, Any]:
            from ledger.app import reading

            path, line = reading.why_target(target)
            opened = ledger()
            entries = [entry_for(task, project)] if task is not None else opened.entries()
            found = reading.why(opened, path, line, entries)
            return {"path": path, "line": line, "changes": [c.model_dump(mode="json") for c in found]}

        return guarded(body)

    @tool(annotations=reads)
    def log(
        task: TaskArg = None,
        project: ProjectArg = None,
        types: Annotated[list[str] | None, Field(description="Only events of these types (e.g. DecisionRecorded, "
                                                             "AttemptEnded, CommandRan, FileChanged).")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="Only the last N matching events.")] = 50,
        full: Annotated[bool, Field(description="Every field of each event (diffs, output tails), not only its "
                                                "one-line summary.")] = False,
    ) -> dict[str, Any]:
        """The task's timeline, oldest first: each event's position, type, time, actor and a one-line summary."""

        def body() -> dict[str, Any]:
            from ledger.app import reading
            from projections import timeline

            keep = timeline.EventFilter(types=reading.event_types(types or (), "types"))
            entry = entry_for(task, project)
            events = reading.timeline(ledger(), entry.task_id, keep, limit, entry.number)
            rows = [timeline.as_record(e) for e in events]
            if not full:
                rows = [{k: r[k] for k in ("position", "type", "timestamp", "actor", "summary")} for r in rows]
            return {"task": entry.number, "events": rows}

        return guarded(body)

    @tool(annotations=reads)
    def replay(
        at: Annotated[str, Field(description="The point: N (after event N), -N (N events back), an ISO time "
                                             "(2026-11-28T14:00, UTC if no zone) or checkpoint:LABEL.")],
        task: TaskArg = None,
        project: ProjectArg = None,
        max_chars: MaxChars = INJECTION_DEFAULT,
        include_state: Annotated[bool, Field(description="Also the full task state as JSON.")] = False,
    ) -> dict[str, Any]:
        """The task as it was at a point in its history: the continuation brief then (and the state, if asked),
        the position it stands for and the task's last position now."""

        def body() -> dict[str, Any]:
            from ledger.app import reading
            from projections import brief, points

            point = points.parse(at)
            entry = entry_for(task, project)
            opened = ledger()
            position = reading.position(opened, entry.task_id, point, entry.number)
            then = reading.state(opened, entry, at=position)
            out: dict[str, Any] = {"task": entry.number, "at": position, "last": reading.state(opened, entry).position,
                                   "brief": brief.render(then, max_chars=max_chars)}
            if include_state:
                out["state"] = then.model_dump(mode="json")
            return out

        return guarded(body)

    @tool(annotations=reads)
    def query(
        sql: Annotated[str, Field(min_length=1, description="One DuckDB SQL query over the read model's tables: "
                                                            "events, tasks, files, attempts, commands, tests, "
                                                            "decisions, intents, and the views current_files and "
                                                            "current_tests (columns: docs/readmodel.md).")],
        limit: Annotated[int, Field(ge=1, le=QUERY_ROWS_MAX, description="Return at most this many rows; "
                                                                         "truncated says whether there were more.")]
        = QUERY_ROWS,
    ) -> dict[str, Any]:
        """SQL across every task in the ledger (DuckDB), e.g. which files changed most, which commands keep failing,
        why attempts failed: SELECT path, count(*) FROM files GROUP BY 1 ORDER BY 2 DESC. Sandboxed: only the read
        model's tables, read-only; no other file, no extension, no network, no SET of the sandbox. Capped, whatever
        the SQL: it runs in a process of its own with 1.5 GiB of memory and 10 s; each row's JSON is cut to 32 KiB
        (its largest values cut, ending in "…[cut N bytes]") and the answer to 256 KiB of rows. A query past its
        memory or time is an error and nothing else is affected. Returns the column names, the rows as objects,
        truncated (rows were left out, at the limit or the 256 KiB) and cut (how many values were cut)."""

        def body() -> dict[str, Any]:
            from ledger.app import reading
            from projections import capped_query, readmodel  # DuckDB loads only when a query is asked

            reading.check_tasks(ledger())  # no row of a task a read refuses (`reading.check_tasks`)
            path = readmodel.readmodel_path(state.location)
            readmodel.refresh(ledger(), path)
            found = capped_query.run(path, sql, limit=limit, seconds=QUERY_SECONDS)
            return {"columns": found.columns, "rows": found.rows, "truncated": found.truncated, "cut": found.cut}

        return guarded(body)

    return server


@click.command("mcp")
@pass_context
@fails_cleanly
def mcp_command(ctx: Context) -> None:
    """Serve the ledger to an MCP client over stdio (needs tasktrail[mcp]).

    \b
    Tools: list_tasks, find_tasks, resume_task, record, why, log, replay, query
    (sandboxed SQL over the read model, as trail query --sandbox).

    \b
    The client runs it in its project folder; tools default to that project's active task.
    Register it, e.g.:  claude mcp add tasktrail -- trail mcp
    """
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        raise BadSetting(MISSING_SDK) from None
    ruleset.enable()  # a long-lived server: the vendor ruleset's load is paid once
    build(ctx).run("stdio")


COMMANDS: list[click.Command] = [mcp_command]
