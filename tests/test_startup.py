"""Start-up: what `trail --help`, `trail resume` and the SessionStart hook import, and the lazy command list.

Their cost is measured by `python -m bench.startup` (ratios to a bare interpreter); these tests only keep
the heavy modules out of the paths that do not use them, so the figures cannot silently regress.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cli import plugin_search
from cli.app import COMMANDS, cli, load
from tests.conftest import REPO, run_here

MODULES = ("cli.record", "cli.read", "cli.audit", "cli.capture", "cli.demo", "cli.analytics", "cli.compact",
           "cli.admin", "cli.access", "cli.mcp", "cli.report", "cli.serve", "cli.completion")
ALWAYS_HEAVY = ("duckdb", "psycopg", "psycopg_pool", "pyarrow", "hypothesis", "pytest", "langgraph", "unidiff")
"""Never needed to resume a task, answer a session start or list the commands."""


def _imported(args: list[str], home: Path, stdin: str = "") -> tuple[set[str], str]:
    """The modules a real `trail ARGS` process imported (and their top-level packages), and what it printed."""
    probe = (
        "import sys, json\n"
        "sys.argv = ['trail', *json.loads(sys.argv[1])]\n"
        "from cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stdout.flush()\n"
        "print('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    env.update(TRAIL_HOME=str(home), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", probe, json.dumps(args)], input=stdin, capture_output=True,
                          text=True, env=env, cwd=home.parent, timeout=60)
    out, _, modules = proc.stdout.rpartition("\nMODULES ")
    assert proc.returncode == 0 and modules, proc.stderr
    # A `trail` command puts a stand-in for pydantic's plugin loader in place (cli.plugin_search): no import.
    names = set(json.loads(modules)) - {plugin_search.LOADER}
    return names | {name.split(".")[0] for name in names}, out


def test_every_command_is_registered_with_its_own_one_line_help() -> None:
    defined = [command for name in MODULES for command in importlib.import_module(name).COMMANDS]
    assert sorted(c.name or "" for c in defined) == sorted(COMMANDS), "add the command to cli.app.COMMANDS"
    for name, (target, short) in COMMANDS.items():
        command = load(name, target)
        for limit in (20, 45, 60, 94, 300):  # `trail --help` lists a stand-in with the registered help
            assert click.Command(name, help=short).get_short_help_str(limit) == command.get_short_help_str(limit), (
                f"`trail {name}`'s help changed: copy its first paragraph into cli.app.COMMANDS"
            )


def test_help_lists_every_command_in_order_and_loads_them_only_when_run() -> None:
    from click.testing import CliRunner

    listing = CliRunner().invoke(cli, ["--help"]).output.split("Commands:\n", 1)[1]
    assert [line.split()[0] for line in listing.splitlines() if line.startswith("  ") and line[2] != " "] == list(
        COMMANDS
    )
    assert "Open a new task named TITLE and make it the active task." in listing
    run = CliRunner().invoke(cli, ["resume", "--help"])
    assert run.exit_code == 0 and "--max-chars" in run.output


def test_help_imports_no_ledger_models(tmp_path: Path) -> None:
    home = tmp_path / "home"
    modules, out = _imported(["--help"], home)
    assert "Commands:" in out and "forget" in out
    assert not modules & {"pydantic", "pydantic_core", "eventsourcing", "orjson", "sqlite3", "ledger",
                          "projections", *ALWAYS_HEAVY}, sorted(modules)


def test_resume_imports_only_what_it_uses(home: Path, backend: str) -> None:
    run_here("demo", "--keep", home=home, check=True)
    modules, out = _imported(["resume"], home)
    assert "# Task #1" in out
    assert "ledger.capture.agents.claude_code.mapper" not in modules  # the inbox is empty: its parsers stay unloaded
    heavy = set(ALWAYS_HEAVY) - ({"psycopg", "psycopg_pool"} if backend == "postgres" else set())
    assert not modules & heavy, sorted(modules & heavy)


@pytest.mark.parametrize("source", ["startup", "resume"])
def test_session_start_imports_only_what_it_uses(home: Path, backend: str, source: str) -> None:
    run_here("demo", "--keep", home=home, check=True)  # the project's task, which a new session takes up
    payload = {"session_id": "66666666-0000-4000-8000-000000000006", "hook_event_name": "SessionStart",
               "source": source}
    modules, out = _imported(["hook", "claude-code"], home, stdin=json.dumps(payload))
    assert "Fix login timeout" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    heavy = set(ALWAYS_HEAVY) - ({"psycopg", "psycopg_pool"} if backend == "postgres" else set())
    assert not modules & {"click", *heavy}, sorted(modules & {"click", *heavy})


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
def test_resume_and_session_start_from_the_brief_cache_import_no_ledger_libraries(home: Path) -> None:
    """The fast paths (ledger/app/briefcache.py) answer with the standard library alone; the full path ran first."""
    run_here("demo", "--keep", home=home, check=True)
    start = {"session_id": "66666666-0000-4000-8000-000000000007", "hook_event_name": "SessionStart",
             "source": "startup", "cwd": str(home.parent)}
    _imported(["hook", "claude-code"], home, stdin=json.dumps(start))  # reopens the paused task: the full path
    _, full = _imported(["resume"], home)
    modules, out = _imported(["resume"], home)
    assert out == full and not modules & {"click", "pydantic", "eventsourcing", "orjson", *ALWAYS_HEAVY}, sorted(
        modules & {"click", "pydantic", "eventsourcing", "orjson", *ALWAYS_HEAVY})
    modules, out = _imported(["hook", "claude-code"], home, stdin=json.dumps(start))  # linked already: fast
    assert "Fix login timeout" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert not modules & {"click", "pydantic", "eventsourcing", "orjson", *ALWAYS_HEAVY}, sorted(modules)


def test_the_startup_benchmark_runs() -> None:
    """`python -m bench.startup` cannot rot silently: one round gives every row (its figures are not judged here)."""
    from bench import startup

    table = startup.table(runs=1)  # it raises when a SessionStart row was not answered the way it claims
    assert [row[0] for row in table.rows] == [
        startup.BARE, startup.HELP, startup.RESUME, startup.RESUME_DB, startup.RESUME_ENV, startup.RESUME_URL,
        *startup.SESSION_STARTS, startup.WAITING, startup.LIBRARIES]
    assert all(row[6] in ("yes", "**no**") for row in table.rows[1:11]) and table.rows[11][6] == ""
    assert len(table.goals) == 10


def test_the_mcp_start_benchmark_runs() -> None:
    """`python -m bench.mcpinit` cannot rot silently: one round of each server gives both rows and the goal."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install -e '.[mcp]')")
    from bench import mcpinit

    table = mcpinit.table(runs=1)
    assert [row[0] for row in table.rows] == [mcpinit.MINIMAL, mcpinit.TRAIL]
    assert table.rows[1][5] in ("yes", "**no**") and len(table.goals) == 1


@pytest.mark.sqlite_only("the find index answers for SQLite ledgers only")
def test_find_from_the_find_index_imports_no_ledger_libraries(home: Path) -> None:
    """`trail find` answers from the find index (ledger/app/findindex.py) with the standard library alone once
    the full path filled it; the same bytes, text and JSON; a write since takes the full path again."""
    run_here("demo", "--keep", home=home, check=True)
    lean = {"click", "pydantic", "eventsourcing", "orjson", *ALWAYS_HEAVY}
    for note, args in (("a login note", ["find", "login"]),
                       ("more retries", ["find", "retries", "--json", "--status", "paused", "-n", "3"])):
        run_here("note", note, home=home, check=True)  # a write: the next find takes the full path
        full, full_out = _imported(args, home)
        assert "duckdb" in full and note in full_out  # the full path caught up, and filled the index
        modules, out = _imported(args, home)
        assert out == full_out and not modules & lean, sorted(modules & lean)
