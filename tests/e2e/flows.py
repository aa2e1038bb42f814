"""What the end-to-end flows share: the scratch repository, each agent's environment and command line, and
readers of the ledger's JSON. The request readers live beside each scripted API (``anthropic``, ``responses``).

An agent always runs through ``tests.e2e.sandbox`` (loopback only); this module never starts one otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.e2e import sandbox
from tests.e2e.conftest import unavailable

PYTHON = sys.executable
VENV = Path(PYTHON).parent
"""The venv running the tests: it holds the `trail` a user would have installed."""
TRAIL = VENV / "trail"
CALC = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
BRIEF_HEADER = "You are continuing tasktrail task #"
"""How ``projections.brief.injection`` opens the context a SessionStart hook injects."""

CODEX_CONFIG = """\
model = "gpt-5.5"
model_provider = "scripted"
model_auto_compact_token_limit = 50000

[model_providers.scripted]
name = "scripted"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

[tools.update_plan]
enabled = true
"""
"""A slug Codex knows (else it offers no apply_patch); a compaction limit a scripted reply can pass; update_plan,
which 0.171 offers only when enabled; the provider's base_url comes per run (-c), with the port."""


def make_repo(repo: Path, env: Mapping[str, str] | None = None) -> None:
    """A git repository holding calc.py, whose add() subtracts, and its failing test, committed."""
    repo.mkdir(exist_ok=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST_CALC)
    git = ["git", "-c", "user.email=e2e@example.invalid", "-c", "user.name=e2e"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run([*git, *args], cwd=repo, env=None if env is None else dict(env), check=True,
                       capture_output=True)


def claude_environment(home: Path, trail_home: Path) -> dict[str, str]:
    """What `claude -p` runs with: a fresh HOME, the scripted API on ``{port}``, nothing sent anywhere else."""
    if not TRAIL.exists():
        unavailable(f"no trail script beside {PYTHON}: run the tests with the venv's python")
    if shutil.which("git") is None:
        unavailable("git is not on PATH")
    return {
        "PATH": os.pathsep.join([str(VENV), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home), "TRAIL_HOME": str(trail_home), "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "sk-ant-e2e-not-a-real-key",
        "IS_SANDBOX": "1",  # lets root use --permission-mode bypassPermissions
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def codex_environment(root: Path) -> dict[str, str]:
    """What `codex exec` runs with: HOME, CODEX_HOME (holding ``CODEX_CONFIG``), TMPDIR and TRAIL_HOME as folders
    of ``root``. TMPDIR sits beside CODEX_HOME: Codex refuses to put its helper binaries (apply_patch among
    them) under the temporary folder."""
    for name in ("home", "codex_home", "tmp", "trail"):
        (root / name).mkdir(exist_ok=True)
    (root / "codex_home" / "config.toml").write_text(CODEX_CONFIG)
    return {"HOME": str(root / "home"), "CODEX_HOME": str(root / "codex_home"), "TMPDIR": str(root / "tmp"),
            "TRAIL_HOME": str(root / "trail"), "PATH": os.pathsep.join([str(VENV), "/usr/bin", "/bin"]),
            "SCRIPTED_API_KEY": "sk-scripted-not-a-key", "LANG": "C.UTF-8"}


def run_claude(program: Path, args: list[str], steps: list[Any], *, log: Path, env: Mapping[str, str],
               cwd: Path) -> subprocess.CompletedProcess[str]:
    """``claude ARGS`` in print mode (stream-json, permissions bypassed) against the scripted Messages API."""
    return sandbox.run([str(program), *args, "--output-format", "stream-json", "--verbose",
                        "--permission-mode", "bypassPermissions"],
                       api="anthropic", steps=steps, log=log, env=env, cwd=cwd)


def run_codex(program: Path, args: list[str], steps: list[Any], *, log: Path, env: Mapping[str, str],
              cwd: Path) -> subprocess.CompletedProcess[str]:
    """``codex exec ARGS`` (the prompt last) with ``--json``, approvals and Codex's own sandbox off (the
    namespace is the sandbox), against the scripted Responses API."""
    provider = 'model_providers.scripted.base_url="http://127.0.0.1:{port}/v1"'
    command = [str(program), "exec", *args[:-1], "--json", "--dangerously-bypass-approvals-and-sandbox",
               "-c", provider, args[-1]]
    return sandbox.run(command, api="responses", steps=steps, log=log, env=env, cwd=cwd, timeout=120)


def events(log: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The events of one type in a `trail log --json`."""
    return [event for event in log if event["type"] == kind]


def next_step_section(brief: str) -> str:
    """The line under the brief's '## Next step' heading (which may say where the step came from)."""
    lines = brief.splitlines()
    heading = next((i for i, line in enumerate(lines) if line.startswith("## Next step")), None)
    return lines[heading + 1] if heading is not None and heading + 1 < len(lines) else ""
