"""The real agent programs the end-to-end suite drives: which versions, and where they are installed.

This is the one place that names the versions. They are installed from npm into a cache folder outside
the checkout (``TRAIL_E2E_CACHE``, else ``$XDG_CACHE_HOME/tasktrail/agents``, else ``~/.cache/…``), one
folder per package and version, so a second run installs nothing. ``.ci/run`` calls
``python -m tests.e2e.agents install`` before the tests; on a machine without npm the tests skip.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Agent:
    name: str
    package: str
    version: str
    command: str


AGENTS = {
    "claude-code": Agent("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude"),
    "codex": Agent("codex", "@openai/codex", "0.171.0", "codex"),
}


def cache_root() -> Path:
    if explicit := os.environ.get("TRAIL_E2E_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tasktrail" / "agents"


def folder(agent: Agent) -> Path:
    return cache_root() / f"{agent.package.replace('/', '+')}@{agent.version}"


def program(agent: Agent) -> Path:
    return folder(agent) / "node_modules" / ".bin" / agent.command


def install(agent: Agent) -> Path:
    """Install ``agent`` into its cache folder unless it is there; its program's path, or RuntimeError why not."""
    where = folder(agent)
    where.mkdir(parents=True, exist_ok=True)
    done = where / ".installed"
    with open(where / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes never install into one folder at once
        if done.exists() and program(agent).exists():
            return program(agent)
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not on PATH")
        result = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(where),
             f"{agent.package}@{agent.version}"],
            capture_output=True, text=True, timeout=600,
        )
        if result.returncode != 0 or not program(agent).exists():
            tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"npm install {agent.package}@{agent.version} failed: {tail[0]}")
        done.write_text(agent.version + "\n")
        return program(agent)


def installed(name: str) -> Path | None:
    """The agent's program if it is already in the cache (no install attempted)."""
    agent = AGENTS[name]
    path = program(agent)
    return path if (folder(agent) / ".installed").exists() and path.exists() else None


def main(argv: list[str]) -> int:
    if argv[:1] != ["install"]:
        print("usage: python -m tests.e2e.agents install [NAME ...]", file=sys.stderr)
        return 2
    names = argv[1:] or list(AGENTS)
    for name in names:
        try:
            print(f"{name}: {install(AGENTS[name])}")
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as error:
            print(f"{name}: not installed: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
