"""Fixtures of the end-to-end suite: the real agent programs, or a skip (a fail in CI) saying why not."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from tests.e2e import agents, sandbox

REQUIRED = os.environ.get("TRAIL_E2E_REQUIRED") == "1"
"""Set by ``.ci/run``: there a missing agent or namespace is a failure, not a skip."""


def unavailable(reason: str) -> NoReturn:
    """Skip the test saying why, or fail it where the agents are required (CI)."""
    if REQUIRED:
        pytest.fail(f"TRAIL_E2E_REQUIRED=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def isolation() -> None:
    if problem := sandbox.isolation_problem():
        unavailable(problem)


def agent_program(name: str) -> Path:
    """The installed program of agent ``name`` (installing it into the cache on first use)."""
    try:
        return agents.install(agents.AGENTS[name])
    except (RuntimeError, OSError) as error:
        unavailable(f"{name} {agents.AGENTS[name].version} is not available: {error}")


@pytest.fixture(scope="session")
def claude(isolation: None) -> Path:
    return agent_program("claude-code")


@pytest.fixture(scope="session")
def codex(isolation: None) -> Path:
    return agent_program("codex")
