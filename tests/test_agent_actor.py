"""One actor per agent on every path: its hooks, its MCP client, and the `trail` commands it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.mcp import actor_for
from ledger.base.agent_env import agent_actor
from tests.conftest import run_here

UNSET: dict[str, str | None] = {"CODEX_THREAD_ID": None, "CODEX_SESSION_ID": None, "CODEX_TOOL_CALL_ID": None,
                                "CLAUDECODE": None}
CODEX_COMMAND = {"CODEX_THREAD_ID": "01a2310b-7c78-7891-b778-f7cc6a71439e", "CODEX_SESSION_ID":
                 "01a2310b-7c78-7891-b778-f7cc6a71439e", "CODEX_TOOL_CALL_ID": "call_ENV", "CODEX_CI": "1"}
"""What Codex 0.171 set for a command it ran (``env`` run by ``codex exec`` in the e2e sandbox)."""


@pytest.mark.parametrize(("env", "actor"), [
    ({}, "user"),
    (CODEX_COMMAND, "agent:codex"),
    ({"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli"}, "agent:claude-code"),
])
def test_a_record_command_speaks_for_the_agent_that_runs_it(home: Path, tmp_path: Path, env: dict[str, str],
                                                            actor: str) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    variables = {**UNSET, **env}
    run_here("start", "Fix add()", home=home, cwd=repo, check=True, env=variables)
    run_here("decide", "Keep add() pure", "--because", "callers rely on it", home=home, cwd=repo, check=True,
             env=variables)
    run_here("note", "said by hand", "--actor", "user", home=home, cwd=repo, check=True, env=variables)
    rows = json.loads(run_here("log", "--json", home=home, cwd=repo, check=True).stdout)
    assert [(r["type"], r["actor"]) for r in rows if r["type"] in ("DecisionRecorded", "NoteAdded")] == [
        ("DecisionRecorded", actor), ("NoteAdded", "user")]


def test_an_agents_mcp_client_is_that_agents_actor() -> None:
    assert actor_for("codex-mcp-client") == "agent:codex"  # what Codex 0.171 sent (live payloads' MCP reply)
    assert actor_for("claude-code") == "agent:claude-code"
    assert actor_for("Test Client") == "agent:Test-Client" and actor_for(None) == "agent:mcp-client"


def test_no_agent_environment_is_no_agent() -> None:
    assert agent_actor({}) is None and agent_actor({"CODEX_CI": "1"}) is None
    assert agent_actor({"CLAUDECODE": ""}) is None
