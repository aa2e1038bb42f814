"""Claude Code behind the ``Agent`` interface: its transcripts (``mapper``), its task list (``tasklist``),
its refusal wording (``refusals``). Its parsers load when a payload or transcript is first mapped: the
registry loads this package on paths (a resume's SessionStart budget) that must not pay for them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from ledger.capture.agent import Agent, HookMapper, Refusal
from ledger.capture.agent_mcp import claude_code_has_it
from ledger.capture.agents.claude_code.refusals import ABORTED, INTERRUPTED, NOT_RUN, STOPPED
from ledger.capture.classify import clean_prompt
from ledger.capture.items import Item
from ledger.capture.session import Session

if TYPE_CHECKING:
    from ledger.app.store import Ledger
    from ledger.base.location import Location
    from projections.brief import Budget

_STOPPED = (STOPPED, "Error: " + STOPPED, INTERRUPTED, ABORTED)


class ClaudeCode(Agent):
    name: ClassVar[str] = "claude-code"
    title: ClassVar[str] = "Claude Code"
    transcripts: ClassVar[Path] = Path("~/.claude/projects")
    edit_tools: ClassVar[frozenset[str]] = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
    env_markers: ClassVar[tuple[str, ...]] = ("CLAUDECODE",)

    def map_transcript(self, lines: Iterable[tuple[int, str]], stem: str, path: str | None = None) -> Session:
        from ledger.capture.agents.claude_code import mapper  # parsers: loaded by the first mapping only

        return mapper.map_transcript(lines, stem, path)

    def sort_key(self, lines: Iterable[tuple[int, str]], stem: str) -> tuple[str, bool]:
        from ledger.capture.agents.claude_code import mapper  # parsers: loaded by the first mapping only

        return mapper.sort_key(lines, stem)

    def hook_items(self, payload: dict[str, Any], row: int, timestamp: datetime) -> list[Item]:
        from ledger.capture.agents.claude_code import mapper  # parsers: loaded by the first mapping only

        return mapper.hook_items(payload, row, timestamp)

    def hook_mapper(self, ledger: Ledger, location: Location, task: UUID | None, session: str) -> HookMapper:
        from ledger.capture.agents.claude_code.session import task_list_mapper  # parsers, as above

        return task_list_mapper(ledger, location, task, session)

    def prompt(self, text: str) -> str:
        return clean_prompt(text)

    def refusal(self, output: str) -> Refusal | None:
        if output.lstrip().startswith(_STOPPED):
            return "stopped"
        if any(phrase in output[:300] for phrase in NOT_RUN):
            return "not_run"
        return None

    @property
    def budget(self) -> Budget:
        from projections.brief import INJECTION_CAP, INJECTION_DEFAULT, Budget, utf16_units  # SessionStart only

        return Budget(utf16_units, INJECTION_CAP, INJECTION_DEFAULT, "chars")

    def has_mcp(self, cwd: str | None, environ: Mapping[str, str]) -> bool:
        return claude_code_has_it(cwd, environ)


AGENT = ClaudeCode()
