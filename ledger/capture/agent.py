"""What tasktrail needs of a coding agent, in one interface: one package per agent implements it
(``ledger.capture.agents`` lists them), and the importer, the inbox, the hook, the CLI and the brief read
nothing agent-specific elsewhere.

An agent gives its name (the hook's and import's ``NAME``, the source keys' agent), how to find and map
its transcripts, how to map one hook payload, its vocabulary (edit tools, how it words a refused call,
the measure and size of what a SessionStart hook may inject, the environment variables that say it runs
a command) and, optionally, its install plan.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from uuid import UUID

from ledger.capture.items import Item
from ledger.capture.session import Session
from ledger.domain import events as ev

if TYPE_CHECKING:
    from ledger.app.store import Ledger
    from ledger.base.location import Location
    from projections.brief import Budget

Refusal = Literal["stopped", "not_run"]
"""A failed tool result that is no failure: the user said no or interrupted it (``stopped``), or it
needed a permission it did not have and never ran (``not_run``)."""
HookMapper = Callable[[dict[str, Any], int, datetime], list[Item]]
"""One hook payload (its inbox row id, its time) -> items."""
InstallScope = Literal["project", "user"]


@dataclass(frozen=True)
class FileEdit:
    """One file of an install plan: ``edit`` takes its text (None: no such file) and gives what it should
    hold (None: remove it, it held only tasktrail's settings)."""

    path: Path
    edit: Callable[[str | None], str | None]


class Agent(ABC):
    name: ClassVar[str]
    """The agent's command-line name: `trail import NAME`, `trail hook NAME`, source keys' ``agent``."""
    title: ClassVar[str]
    """How people name it ("Claude Code")."""
    transcripts: ClassVar[Path]
    """Where its transcripts live by default (`trail import NAME` with no path)."""
    transcript_suffix: ClassVar[str] = ".jsonl"
    edit_tools: ClassVar[frozenset[str]] = frozenset()
    """Tools whose success is a file change, not a tool result."""
    env_markers: ClassVar[tuple[str, ...]] = ()
    """Environment variables the agent sets for the commands it runs (``ledger.base.agent_env``)."""

    @property
    def actor(self) -> str:
        return f"agent:{self.name}"

    # -- transcripts ------------------------------------------------------------------------------

    @abstractmethod
    def map_transcript(self, lines: Iterable[tuple[int, str]], stem: str, path: str | None = None) -> Session:
        """One transcript file, as numbered lines -> its session and items."""

    @abstractmethod
    def sort_key(self, lines: Iterable[tuple[int, str]], stem: str) -> tuple[str, bool]:
        """(first timestamp, is a sub-agent file), read from the file's head only."""

    # -- hooks ------------------------------------------------------------------------------------

    @abstractmethod
    def hook_items(self, payload: dict[str, Any], row: int, timestamp: datetime) -> list[Item]:
        """One hook payload (not a UserPromptSubmit: the inbox maps prompts alike for all) -> items."""

    def hook_mapper(self, ledger: Ledger, location: Location, task: UUID | None, session: str) -> HookMapper:
        """The mapping of one session's payloads; an agent whose payloads need what the session did before
        (Claude Code's task list) restores it here."""
        return self.hook_items

    def prompt(self, text: str) -> str:
        """A prompt as the user meant it, the agent's own wrapping taken off."""
        return text

    def enrich(self, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What the agent's own records add to a session's payloads before they are mapped."""
        return payloads

    # -- vocabulary -------------------------------------------------------------------------------

    def refusal(self, output: str) -> Refusal | None:
        """Whether a failed tool result's output says the call was refused (see ``Refusal``)."""
        return None

    @property
    def budget(self) -> Budget:
        """How the agent measures the context a SessionStart hook injects, and how much it keeps."""
        from projections.brief import DEFAULT_BUDGET  # the brief and its folds load only where a budget is asked

        return DEFAULT_BUDGET

    # -- install ------------------------------------------------------------------------------------

    def install_plan(self, command: str, scope: InstallScope, project: Path, remove: bool = False) -> list[FileEdit]:
        """What `trail install NAME` writes (``remove``: `trail uninstall NAME`) so that the agent runs
        ``command`` (`trail hook NAME`, as ``scope`` needs it spelt; "" when removing) on its hook events;
        ``project`` is the repository's top level. [] when the agent has no hooks to install."""
        return []

    def has_mcp(self, cwd: str | None, environ: Mapping[str, str]) -> bool:
        """Whether the agent running in ``cwd`` has tasktrail's MCP server (the brief names its tools)."""
        return False

    # -- normalising at capture ---------------------------------------------------------------------

    def normalised(self, items: list[Item]) -> list[Item]:
        """``items`` with the agent's wording turned into fields: a failed tool result that says it was
        refused carries ``refused``, so no reader needs the agent's words."""
        out = []
        for cls, fields in items:
            if cls is ev.ToolResult and not fields.get("ok") and fields.get("refused") is None:
                output = fields.get("output")
                text = output.tail if isinstance(output, ev.Bounded) else str(output or "")
                refused = self.refusal(text)
                if refused is not None:
                    fields = {**fields, "refused": refused}
            out.append((cls, fields))
        return out
