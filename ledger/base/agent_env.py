"""Which coding agent runs this process, read from what each agent puts in the environment of the
commands it runs, so a `trail …` command an agent runs is recorded as that agent, not as the user.

Codex 0.171 sets ``CODEX_THREAD_ID``, ``CODEX_SESSION_ID`` and ``CODEX_TOOL_CALL_ID`` for every command
it runs (measured: ``env`` run by ``codex exec`` in the e2e sandbox); Claude Code sets ``CLAUDECODE=1``.
The MCP server learns its client from the handshake instead (``MCP_CLIENTS``): Codex starts MCP servers
with a cleared environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_MARKERS = (
    ("agent:codex", ("CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_TOOL_CALL_ID")),
    ("agent:claude-code", ("CLAUDECODE",)),
)
MCP_CLIENTS = {"codex-mcp-client": "agent:codex", "claude-code": "agent:claude-code"}
"""The ``clientInfo.name`` each agent gives in the MCP handshake, and its actor on every other path."""


def agent_actor(environ: Mapping[str, str] | None = None) -> str | None:
    """``agent:codex`` or ``agent:claude-code`` when that agent runs this process, else None."""
    env = os.environ if environ is None else environ
    for actor, names in _MARKERS:
        if any(env.get(name) for name in names):
            return actor
    return None


def default_actor() -> str:
    """Who a record command speaks for when ``--actor`` is not given: the agent running it, else the user."""
    return agent_actor() or "user"
