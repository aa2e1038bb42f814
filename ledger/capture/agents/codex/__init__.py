"""Codex CLI behind the ``Agent`` interface: its rollouts (``mapper``), the exit codes its rollouts add to
hook payloads (``outcomes``), its refusal wording (``refusals``). Its parsers load when a payload or a
rollout is first mapped, as Claude Code's do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ledger.capture.agent import Agent, Refusal
from ledger.capture.agent_mcp import codex_has_it
from ledger.capture.agents.codex.refusals import REJECTED
from ledger.capture.items import Item
from ledger.capture.session import Session

if TYPE_CHECKING:
    from projections.brief import Budget


class Codex(Agent):
    name: ClassVar[str] = "codex"
    title: ClassVar[str] = "Codex CLI"
    transcripts: ClassVar[Path] = Path("~/.codex/sessions")
    edit_tools: ClassVar[frozenset[str]] = frozenset({"apply_patch"})
    env_markers: ClassVar[tuple[str, ...]] = ("CODEX_THREAD_ID", "CODEX_SESSION_ID", "CODEX_TOOL_CALL_ID")

    def map_transcript(self, lines: Iterable[tuple[int, str]], stem: str, path: str | None = None) -> Session:
        from ledger.capture.agents.codex import mapper  # parsers: loaded by the first mapping only

        return mapper.map_rollout(lines, stem, path)

    def sort_key(self, lines: Iterable[tuple[int, str]], stem: str) -> tuple[str, bool]:
        from ledger.capture.agents.codex import mapper  # parsers: loaded by the first mapping only

        return mapper.sort_key(lines, stem)

    def hook_items(self, payload: dict[str, Any], row: int, timestamp: datetime) -> list[Item]:
        from ledger.capture.agents.codex import mapper  # parsers: loaded by the first mapping only

        return mapper.hook_items(payload, row, timestamp)

    def prompt(self, text: str) -> str:
        from ledger.capture.agents.codex import mapper  # parsers: loaded by the first mapping only

        return mapper.user_prompt(text)

    def enrich(self, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from ledger.capture.agents.codex.outcomes import with_outcomes  # reads rollouts: loaded when used

        return with_outcomes(payloads)

    def refusal(self, output: str) -> Refusal | None:
        return "stopped" if REJECTED.match(output) else None

    @property
    def budget(self) -> Budget:
        from projections.brief import Budget, utf8_bytes  # SessionStart only

        return Budget(utf8_bytes, 10_000, 9_500, "bytes")

    def has_mcp(self, cwd: str | None, environ: Mapping[str, str]) -> bool:
        return codex_has_it(cwd, environ)


AGENT = Codex()
