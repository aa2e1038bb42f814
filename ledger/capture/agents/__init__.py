"""The registered agents: the one tuple of them, and how their packages are found and loaded.

Importable by the hook at the cost of its own few lines (the standard library's ``importlib`` only):
the hook needs the names, never the packages. ``load`` imports an agent's package when a payload or a
transcript of it is mapped. An agent outside this tree registers through the ``tasktrail.agents``
entry point group (``NAME = "package.module:OBJECT"``); the group is read only for a name not listed here.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing costs the hook ~3 ms; mypy reads the block below all the same

if TYPE_CHECKING:
    from ledger.capture.agent import Agent
    from projections.brief import Budget

AGENTS: tuple[tuple[str, str], ...] = (
    ("claude-code", "ledger.capture.agents.claude_code:AGENT"),
    ("codex", "ledger.capture.agents.codex:AGENT"),
)
"""(name, ``module:object``) of every agent tasktrail ships; adding one is one line here."""
ENTRY_POINTS = "tasktrail.agents"
BUILTIN = tuple(name for name, _ in AGENTS)
_loaded: dict[str, Agent] = {}


def _plugins() -> dict[str, str]:
    """Agents other packages register (``ENTRY_POINTS``): read on demand, it costs a scan of sys.path."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS) if ep.name not in BUILTIN}


def names() -> tuple[str, ...]:
    """Every agent's name, the shipped ones first."""
    return BUILTIN + tuple(sorted(_plugins()))


def known(name: str) -> bool:
    """Whether ``name`` is a registered agent (a shipped name answers without reading entry points)."""
    return name in BUILTIN or (bool(name) and not name.startswith("-") and name in _plugins())


def load(name: str) -> Agent:
    """The agent called ``name``; KeyError when none is."""
    agent = _loaded.get(name)
    if agent is None:
        target = dict(AGENTS).get(name) or _plugins().get(name)
        if target is None:
            raise KeyError(name)
        module, _, attr = target.partition(":")
        agent = getattr(importlib.import_module(module), attr or "AGENT")
        if agent.name != name:
            raise KeyError(f"{target} is agent {agent.name!r}, registered as {name!r}")
        _loaded[name] = agent
    return agent


def budgets() -> dict[str, Budget]:
    """Each shipped agent's injection budget: the brief cache keeps a SessionStart answer per entry."""
    return {name: load(name).budget for name in BUILTIN}


def all_agents() -> list[Agent]:
    return [load(name) for name in names()]
