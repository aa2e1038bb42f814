"""A sub-agent's stop and its report, from the live SubagentStop hook or from the transcript's notification.

Claude Code 2.1.332 runs sub-agents in the background by default: the ``Agent`` call's result only says it was
launched (``toolUseResult.status == "async_launched"`` with the ``agentId``), and the report comes later in the
main transcript as a ``<task-notification>`` naming the agent (``<task-id>``), the call (``<tool-use-id>``), a
``<status>`` and the report (``<result>``, XML-escaped). It comes three ways, each written as it happens: a
``queue-operation`` enqueue when the sub-agent stops, then either a user line of its own (a new turn, when the
main turn had ended) or a ``queued_command`` attachment (absorbed mid-turn, after a tool result). A notice names
the same agent each time; the agent may report more than once (resumed with SendMessage).

The live SubagentStop hook has the agent's id, its type and its last message: the same report. So both key the
stop by the agent's id and the report's words (``key``), and a session captured live and then imported holds it
once. A foreground sub-agent (``run_in_background: false``, and 2.1.197) brings its report in the call's result,
which is the call's ``ToolResult``; no notification, so the import adds no stop for it.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from ledger.capture.items import Item, sha256
from ledger.domain import bounds
from ledger.domain import events as ev
from ledger.domain.bounds import bound

TOOLS = frozenset({"Agent", "Task"})
"""The tool that starts a sub-agent (``Task`` before 2.1.x renamed it ``Agent``)."""
DEFAULT_TYPE = "general-purpose"
"""The type 2.1.332 gives a sub-agent whose call names none (its hook's ``agent_type``, its meta file's)."""
LABEL = "sub-agent stopped"
PREFIX = "subagent:"
"""Source-record prefix of a sub-agent's stop known by its agent id and report."""

_NOTICE = re.compile(r"<task-notification>(.*?)</task-notification>", re.S)
_FIELD = re.compile(r"<(task-id|tool-use-id|status|summary|result)>(.*?)</\1>", re.S)
_AGENT_SUMMARY = re.compile(r'\AAgent "')
"""How a sub-agent's notice sums itself up ('Agent "Look at calc.py" finished'); a background command's does not."""


@dataclass(frozen=True)
class Notice:
    """One ``<task-notification>``: which task, started by which call, how it ended, what it said."""

    task_id: str
    tool_use_id: str
    status: str
    summary: str
    result: str | None


def notices(text: str) -> list[Notice]:
    """The notifications in a text (a user line, a queued prompt); its fields unescaped."""
    found = []
    for block in _NOTICE.findall(text):
        fields = {name: html.unescape(value).strip() for name, value in _FIELD.findall(block)}
        if fields.get("task-id"):
            found.append(Notice(fields["task-id"], fields.get("tool-use-id", ""), fields.get("status", ""),
                                fields.get("summary", ""), fields.get("result") or None))
    return found


def key(agent_id: str, report: str | None) -> str:
    """A stop's source record: the agent and its report's words (whitespace aside), so a second report of a
    resumed agent is a second fact and the same report from the hook and the transcript is one."""
    words = " ".join((report or "").split())
    return f"{PREFIX}{agent_id}:{sha256(words)[:16]}" if words else f"{PREFIX}{agent_id}"


def stopped(agent_type: str, report: str | None, actor: str, source: ev.SourceKey, timestamp: Any) -> Item:
    """The checkpoint of a sub-agent's stop, with its report (its end, bounded) as the note."""
    said = report.strip() if isinstance(report, str) else ""
    return ev.CheckpointMarked, {
        "label": f"{LABEL} ({agent_type})" if agent_type else LABEL,
        "note": bound(said, bounds.SUBAGENT_REPORT).tail if said else None,
        "actor": actor,
        "source": source,
        "timestamp": timestamp,
    }


class Launches:
    """The sub-agents a transcript started in the background, and the stops its notifications brought."""

    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        """Agent type by the launching call's id and by the agent's id."""
        self.seen: set[str] = set()
        """Stops already mapped (a notice is written when queued and again when delivered)."""

    def launched(self, name: str, data: dict[str, Any], result: Any, call_id: str) -> None:
        """Remember an ``Agent`` call that went to the background (its result names the agent)."""
        if name not in TOOLS or not isinstance(result, dict) or not result.get("isAsync"):
            return
        kind = str(data.get("subagent_type") or result.get("agentType") or DEFAULT_TYPE)
        self.types[call_id] = kind
        if result.get("agentId"):
            self.types[str(result["agentId"])] = kind

    def items(self, text: str, actor: str, line: ev.SourceKey, timestamp: Any) -> list[Item]:
        """The stops of the sub-agents the text's notifications report, each once, by ``actor``'s sub-agent (as
        ``mapper.actor_for`` names it) under ``line``'s session. A notice of a sub-agent this file did not see
        start (its call in an earlier file) still is one, by its summary; its type unknown."""
        found: list[Item] = []
        if "<task-notification>" not in text:
            return found  # most lines: no search
        for notice in notices(text):
            kind = self.types.get(notice.tool_use_id) or self.types.get(notice.task_id)
            if kind is None and not _AGENT_SUMMARY.match(notice.summary):
                continue  # a background command's notice: its outcome is the command's (``background``)
            record = key(notice.task_id, notice.result)
            if record in self.seen:
                continue
            self.seen.add(record)
            by = actor + "/" + "-".join(notice.task_id.split())
            found.append(stopped(kind or "", notice.result, by, line.model_copy(update={"record": record}), timestamp))
        return found
