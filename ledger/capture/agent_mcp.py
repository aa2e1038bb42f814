"""Whether an agent has tasktrail's MCP server (``trail mcp``), read from the agent's own config files.

The SessionStart injection names the MCP tools where the agent has them: under Codex's default
``workspace-write`` sandbox a ``trail`` command cannot open a ledger outside the workspace (measured:
``trail decide`` exits 4), while an MCP server Codex starts runs outside the sandbox. Nothing in a hook
payload says which servers the agent has, so the files that register them are read, as the agent reads
them:

* Codex: ``[mcp_servers.<name>]`` in ``$CODEX_HOME/config.toml`` (default ``~/.codex``) and in the
  ``.codex/config.toml`` of the session's folder and each folder above it up to its git top level
  (``trail install codex`` writes ``[mcp_servers.tasktrail]``), unless ``enabled = false``;
* Claude Code: ``mcpServers`` in the project's ``.mcp.json`` (``trail install claude-code --mcp``) and in
  ``~/.claude.json`` (top level, or the project's entry under ``projects``; ``claude mcp add``).

A server is ours when it is named ``tasktrail`` or runs ``trail mcp`` / ``tasktrail mcp``. Standard library
only and a few small reads: the SessionStart hook asks, on its fast path too. A file that cannot be read
or parsed counts as not registering it (the CLI instructions are the safe default).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

PROGRAMS = ("trail", "tasktrail")
"""The console scripts of this package (pyproject ``[project.scripts]``): the same program."""


def _ours(name: str, server: Any) -> bool:
    if not isinstance(server, dict) or server.get("enabled") is False:
        return False
    command, args = server.get("command"), server.get("args")
    runs_us = (isinstance(command, str) and os.path.basename(command) in PROGRAMS
               and isinstance(args, list) and args[:1] == ["mcp"])
    return name == "tasktrail" or runs_us


def _any_ours(servers: Any) -> bool:
    return isinstance(servers, dict) and any(_ours(str(n), s) for n, s in servers.items())


def _folders(cwd: str | None) -> Iterator[Path]:
    """The session's folder and those above it, up to its git top level (or the root, without one)."""
    if not cwd:
        return
    here = Path(cwd)
    for folder in (here, *here.parents):
        yield folder
        if (folder / ".git").exists():
            return


def _toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
        if "mcp_servers" not in text or "trail" not in text:
            return {}  # cannot register ours: spare the SessionStart fast path tomllib's import (~15 ms)
        import tomllib

        return tomllib.loads(text)
    except (OSError, ValueError, UnicodeDecodeError):
        return {}


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def codex_has_it(cwd: str | None, environ: Mapping[str, str]) -> bool:
    home = environ.get("CODEX_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".codex")
    files = [Path(home) / "config.toml", *(f / ".codex" / "config.toml" for f in _folders(cwd))]
    return any(_any_ours(_toml(f).get("mcp_servers")) for f in files if f.is_file())


def claude_code_has_it(cwd: str | None, environ: Mapping[str, str]) -> bool:
    folders = list(_folders(cwd))
    for folder in folders:
        data = _json(folder / ".mcp.json")
        if isinstance(data, dict) and _any_ours(data.get("mcpServers")):
            return True
    user = _json(Path(environ.get("HOME") or os.path.expanduser("~")) / ".claude.json")
    if not isinstance(user, dict):
        return False
    projects = user.get("projects")
    entries = [projects.get(str(f)) for f in folders] if isinstance(projects, dict) else []
    return _any_ours(user.get("mcpServers")) or any(
        isinstance(e, dict) and _any_ours(e.get("mcpServers")) for e in entries)


def has_tasktrail_mcp(agent: str, cwd: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``agent`` (``codex``, ``claude-code``) running in ``cwd`` has tasktrail's MCP server."""
    env = os.environ if environ is None else environ
    if agent == "codex":
        return codex_has_it(cwd, env)
    if agent == "claude-code":
        return claude_code_has_it(cwd, env)
    return False
