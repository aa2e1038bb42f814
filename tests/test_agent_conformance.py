"""The Agent interface's conformance tests (tests/agent_conformance.py) on every agent tasktrail ships."""

from __future__ import annotations

from pathlib import Path

from ledger.capture import agents
from tests.agent_conformance import AgentConformance

FIXTURES = Path(__file__).parent / "fixtures"


class TestClaudeCode(AgentConformance):
    name = "claude-code"
    transcript = FIXTURES / "claude-2.1-tasks.jsonl"
    hooks = FIXTURES / "claude-2.1-tasks-hooks.json"


class TestCodex(AgentConformance):
    name = "codex"
    transcript = next((FIXTURES / "codex-0171").glob("rollout-*.jsonl"))
    hooks = FIXTURES / "codex-0171" / "hooks.jsonl"


def test_every_shipped_agent_runs_the_conformance_tests() -> None:
    covered = {cls.name for cls in AgentConformance.__subclasses__()}
    assert set(agents.BUILTIN) <= covered, set(agents.BUILTIN) - covered
