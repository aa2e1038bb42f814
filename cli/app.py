"""The `trail` click app: a group that loads a command's module only when that command runs (entry: cli.main).

A new command is one line in ``COMMANDS``: its name, where it lives (``"module:attr"``) and the one-line
help `trail --help` lists, so listing the commands imports none of them (``tests/test_startup.py`` keeps
that help equal to the command's own).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

HELP = """Keep a long AI coding task as a resumable ledger of events.

\b
Record as you go:   trail start TITLE, require, attempt, ran, fail, correct, decide, changed, next
Pick up again:      trail resume [TASK]   (the continuation brief; --json for agents)
Look back:          trail log, replay --at N, diff, why PATH[:LINE], verify, branch, list, find, show [--html]
Tell tasks apart:   trail title [TASK] NEW TITLE (rename; number and slug stay)
Capture from agents: trail install claude-code (live), trail import claude-code|codex (transcripts)
First time here:    trail demo

TASK is a number (7 or #7), a unique prefix of the task's slug, or left out for the
active task (set by `trail start` and `trail switch`). The ledger is an SQLite file in
$TRAIL_HOME (default ~/.local/share/tasktrail), created on first use; --db points elsewhere,
also at a PostgreSQL database (postgresql://...); trail migrate copies a ledger between them.
"""

COMMANDS: dict[str, tuple[str, str]] = {
    # name: ("module:attr", its help's first paragraph), in the order `trail --help` lists them.
    # ``attr`` may name the module's COMMANDS list: the command is then the one of that name in it.
    "start": ("cli.record:start", "Open a new task named TITLE and make it the active task."),
    "title": ("cli.record:title", "Rename TASK (default: the active task) to NEW TITLE; its number and slug stay."),
    "require": ("cli.record:require", "State a requirement, or reword an earlier one with --replaces POSITION."),
    "correct": ("cli.record:correct", "Correct a misunderstanding of the agent's."),
    "decide": ("cli.record:decide", "Record a decision with its reason and the alternatives turned down."),
    "attempt": ("cli.record:COMMANDS", "Start an attempt: an approach being tried now."),
    "fail": ("cli.record:COMMANDS", "End the open attempt as failed, saying why."),
    "succeed": ("cli.record:COMMANDS", "End the open attempt as succeeded."),
    "abandon": ("cli.record:COMMANDS", "End the open attempt as abandoned."),
    "ran": ("cli.record:ran", "Run COMMAND and record its exit code, duration and output tails."),
    "changed": ("cli.record:changed", "Record that files changed: their new sha256 and a unified diff against the "
                "last recorded version."),
    "tested": ("cli.record:tested", "Record a test result: NAME passed, failed, error or skipped."),
    "checkpoint": ("cli.record:checkpoint", "Mark a checkpoint LABEL, with git HEAD and dirty state when in a git "
                   "repo."),
    "next": ("cli.record:COMMANDS", "Set the next step the task means to take."),
    "note": ("cli.record:COMMANDS", "Add a free-form note."),
    "pause": ("cli.record:COMMANDS", "Pause the task."),
    "block": ("cli.record:COMMANDS", "Mark the task blocked by REASON."),
    "done": ("cli.record:COMMANDS", "Mark the task done."),
    "reopen": ("cli.record:COMMANDS", "Make a paused, blocked or done task active again."),
    "link": ("cli.record:link", "Link this task to task OTHER."),
    "switch": ("cli.record:switch", "Make TASK the active task of this project (the one commands here use when none "
               "is named)."),
    "resume": ("cli.read:resume", "Print the continuation brief of TASK: what an agent needs to carry on."),
    "replay": ("cli.read:replay", "Show TASK as it was at a point in its history, in the same views as `resume`."),
    "log": ("cli.read:log", "Print TASK's timeline: one line per event, oldest first, filtered as asked."),
    "list": ("cli.read:list_tasks", "List all tasks with their status and next step (* marks the active task)."),
    "find": ("cli.analytics:find_command", "Find the tasks that hold every WORD you remember, best first."),
    "show": ("cli.report:show", "Show TASK's report: where it stands (the brief's sections, whole) and every "
             "event, as text through the pager; with --html FILE one self-contained page: a timeline grouped by "
             "session and attempt, requirements with their earlier wordings, files with diffs and why, commands, "
             "tests, checkpoints and activity over time."),
    "serve": ("cli.serve:serve", "Serve a read-only web view of the ledger on this machine: every task by project "
              "with its status, next step and a search box, and each task's report, which updates itself as events "
              "arrive. Ctrl-C stops it."),
    "why": ("cli.audit:why", "Why is PATH (or the line PATH:LINE) like this? Every recorded change, newest first, "
            "with the attempt, decision and requirement or correction behind it."),
    "diff": ("cli.audit:diff", "What changed in TASK's state between points A and B (each as for `replay --at`)."),
    "branch": ("cli.audit:branch", "Start a new task TITLE from TASK's state at a point, to try another way from "
               "there."),
    "verify": ("cli.audit:verify", "Walk the hash chain of TASK (default: every task) and report the first break: a "
               "tampered, missing or cut event, a snapshot or task-list entry that is not what the events say, a "
               "forged collected output, or an archive that is missing or altered. Each task's head is printed."),
    "import": ("cli.capture:import_group", "Import agent sessions after the fact (re-importing adds nothing new)."),
    "install": ("cli.capture:install_group", "Install live capture into an agent."),
    "uninstall": ("cli.capture:uninstall_group", "Remove live capture from an agent."),
    "hook": ("cli.capture:hook_group", "Entry points the agents' hooks call (payload on stdin)."),
    "doctor": ("cli.capture:doctor", "Check capture health: dead letters and inbox rows still waiting for a task."),
    "reclassify": ("cli.capture:reclassify", "Override how a captured prompt at POSITION was classified."),
    "grant": ("cli.access:grant", "Let ROLE (a PostgreSQL role: a person or an agent) read or write project P's "
              "tasks."),
    "revoke": ("cli.access:revoke", "Take ROLE's grant on project P away (every grant of ROLE's without "
               "--project). Run by the owner."),
    "access": ("cli.access:access", "List the grants: role, project, read or write (a grantee sees its own)."),
    "mcp": ("cli.mcp:mcp_command", "Serve the ledger to an MCP client over stdio (needs tasktrail[mcp])."),
    "completion": ("cli.completion:completion", "Print the shell completion script for SHELL (bash, zsh or fish)."),
    "demo": ("cli.demo:demo", "Record a realistic sample task, then print its resume brief."),
    "query": ("cli.analytics:query_command", "Run SQL over the read model (tables: events, tasks, files, attempts, "
              "commands, tests, decisions, intents)."),
    "stats": ("cli.analytics:stats_command", "Named queries across tasks. QUERY is one of: files, failed-attempts, "
              "failing-commands, stalled, timelines, timeline (one task, by day). Without QUERY: all of them "
              "(timeline only with --task)."),
    "export": ("cli.analytics:export_command", "Write one task's events (the read model's events table) to a Parquet "
               "file, or the line ranges its recorded changes added as Agent Trace records."),
    "compact": ("cli.compact:compact_command", "Move a task's oldest events to a Parquet archive beside the ledger."),
    "migrate": ("cli.admin:migrate", "Copy every stored event (and the task registry) to another ledger, hash chains "
                "intact."),
    "forget": ("cli.admin:forget", "Remove TASK's content irreversibly, from every store; only a tombstone stays."),
    "key": ("cli.admin:key", "Encryption at rest: make the key a ledger's payloads are enciphered with."),
}


def load(name: str, target: str) -> click.Command:
    """The command ``name`` from ``"module:attr"`` (importing the module now)."""
    module, _, attr = target.partition(":")
    found: Any = getattr(importlib.import_module(module), attr)
    if not isinstance(found, click.Command):
        found = next((c for c in found if c.name == name), None)
    if not isinstance(found, click.Command) or found.name != name:
        raise LookupError(f"{target} holds no command named {name!r}")
    return found


class OneLineUsage(click.ClickException):
    """A usage error in one line on stderr, as every other error is (click prints a usage block and a hint)."""

    exit_code = 2

    def __init__(self, error: click.UsageError) -> None:
        where = error.ctx.command_path if error.ctx else "trail"
        super().__init__(" ".join(f"{where}: {error.format_message()}".split()))

    def show(self, file: Any = None) -> None:
        click.echo(self.message, err=True)


class LazyGroup(click.Group):
    """Lists commands in ``COMMANDS`` order (record, read, audit...), not A to Z, and imports a command's
    module only when that command is looked up to run; the list in `--help` comes from the one-line helps."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise OneLineUsage(exc) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # the command's own options and arguments
            raise OneLineUsage(exc) from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.lazy, *(name for name in self.commands if name not in self.lazy)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(load(cmd_name, self.lazy[cmd_name][0]))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # As click's own listing, with a stand-in carrying only the help for each command not loaded.
        listed = [(name, self.commands.get(name) or click.Command(name, help=self.lazy[name][1]))
                  for name in self.list_commands(ctx)]
        listed = [(name, command) for name, command in listed if not command.hidden]
        if listed:
            limit = formatter.width - 6 - max(len(name) for name, _ in listed)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in listed])


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    help=HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--db",
    metavar="PATH|URL",
    envvar="TRAIL_DB",
    help="Ledger file, sqlite:PATH or postgresql://USER:PW@HOST:PORT/DB. Default: $TRAIL_DATABASE_URL, "
    "else $TRAIL_HOME/ledger.db.",
)
@click.option("--no-color", is_flag=True, help="No colour, even on a terminal (as NO_COLOR=1 does).")
@click.option("--no-pager", is_flag=True, help="Print long output whole instead of through $PAGER.")
@click.version_option(package_name="tasktrail")
@click.pass_context
def cli(ctx: click.Context, db: str | None, no_color: bool, no_pager: bool) -> None:
    from cli import context
    from ledger.base.location import resolve

    state = context.Context(location=resolve(db), no_color=no_color, no_pager=no_pager)
    ctx.obj = state
    ctx.call_on_close(state.close)
