"""The shape of a transcript as a tree (``parentUuid``), and how it ended (pure; called by ``mapper``).

Two things the record-by-record mapping cannot know until the file's end:

- A rewind: the user went back to an earlier message and went on from there; the branch left behind
  stays in the file (its records are the children of a message the kept branch also continues from).
  Its prompts are no longer what the user asks for: they become notes, history, not requirements.
- An open last action: the agent's last tool call got no result (the session ended mid-action). It is
  where the work stopped, so it is kept as a ``ToolCalled`` with no result.
"""

from __future__ import annotations

import json
from collections.abc import MutableSequence
from typing import Any

from ledger.capture.items import Item, bounded, own_tool
from ledger.capture.session import Session
from ledger.domain import events as ev

AGENT = "claude-code"
ACTOR = f"agent:{AGENT}"
_INTENTS = (ev.RequirementStated, ev.RequirementChanged, ev.CorrectionMade)
REWOUND = "user, on a branch the user rewound from: "
_ECHOES = ("<bash-", "<local-command-", "<command-name>", "<command-message>", "Caveat: The messages below")
"""How an abandoned branch's prompt reads as a note."""


class Branches:
    """Sees every record (``see``) and, at the end (``finish``), rewrites the session's items: the prompts
    of abandoned branches as notes, and the last tool call, when it is still open, as a ``ToolCalled``."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.owner: dict[int, str] = {}
        """Index of each item a prompt's record made -> that record's uuid (indices, not the items: a long
        session's items sit in a file, ``ledger.capture.spool``, and are read back only when rewound)."""
        self.current: str | None = None
        self.mark = 0
        self.leaf: str | None = None
        self.call: tuple[str, str, Any, Any, str, int] | None = None
        """The main agent's latest tool call: (call id, tool, input, time, record uuid, record count)."""
        self.answered = False
        """Whether that call got its result."""
        self.spoke: list[tuple[str, int]] = []
        """The user's own lines (not tool results): (uuid, record count)."""
        self.typed: set[str] = set()
        """The user's prompts among them: not a local command's echo (`!ls`, `/clear`), not an interrupt."""
        self.count = 0
        self.kept_child: dict[str, str] = {}

    def see(self, record: dict[str, Any], items: MutableSequence[Item]) -> None:
        self._own(items)
        self.count += 1
        uuid = record.get("uuid")
        self.current = None  # only a prompt's items are owned: only a prompt can be rewound from
        if not uuid:
            return
        uuid = str(uuid)
        parent = record.get("parentUuid") or record.get("logicalParentUuid")  # a compaction links logically
        if parent:
            self.parent[uuid] = str(parent)
        message = record.get("message")
        kind, content = record.get("type"), message.get("content") if isinstance(message, dict) else None
        if record.get("isSidechain") or kind not in ("user", "assistant"):
            return
        blocks = content if isinstance(content, list) else []
        text = content if isinstance(content, str) else " ".join(
            str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        if kind == "user" and text.lstrip().startswith(_ECHOES):
            # Claude Code hangs a local command's lines from wherever it likes (the first record): they
            # are no turn of the conversation, so they neither end it nor fork it.
            self.spoke.append((uuid, self.count))
            return
        self.leaf = uuid
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if kind == "assistant" and block.get("type") == "tool_use" and block.get("id"):
                self.call = (str(block["id"]), str(block.get("name", "?")), block.get("input"),
                             record.get("timestamp"), uuid, self.count)
                self.answered = False
            elif block.get("type") == "tool_result" and self.call is not None:
                self.answered = self.answered or str(block.get("tool_use_id", "")) == self.call[0]
        if kind == "user" and not record.get("isMeta") and not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
        ):
            self.spoke.append((uuid, self.count))
            if text.strip() and not text.lstrip().startswith("[Request interrupted"):
                self.typed.add(uuid)
                self.current = uuid

    def _own(self, items: MutableSequence[Item]) -> None:
        # Nothing is inserted before ``finish``, so an item keeps its index until then.
        if self.current is not None:
            for i in range(self.mark, len(items)):
                self.owner[i] = self.current
        self.mark = len(items)

    def finish(self, session: Session, stem: str) -> None:
        """Rewrite ``session.items`` now that the whole file is seen."""
        self._own(session.items)
        if session.is_subagent or self.leaf is None:
            return
        kept, self.kept_child = self._path(self.leaf)
        memo: dict[str, bool] = {}
        for i, owner in self.owner.items():
            if owner in kept or not self._rewound(owner, kept, memo):
                continue
            cls, fields = session.items[i]
            if cls in _INTENTS and fields.get("actor") == "user":
                note = {k: v for k, v in fields.items() if k not in ("wrong", "supersedes")}
                session.items[i] = (ev.NoteAdded, {**note, "text": REWOUND + str(fields.get("text", ""))})
        open_call = self._open_call(kept, session.session_id or stem)
        if open_call is not None:
            session.items.append(open_call)

    def _path(self, leaf: str) -> tuple[set[str], dict[str, str]]:
        """The records from ``leaf`` back to the first (the conversation as the user left it), and each one's
        child on that path."""
        path: set[str] = set()
        child: dict[str, str] = {}
        node: str | None = leaf
        while node is not None and node not in path:
            path.add(node)
            up = self.parent.get(node)
            if up is not None:
                child[up] = node
            node = up
        return path, child

    def _rewound(self, uuid: str, kept: set[str], memo: dict[str, bool]) -> bool:
        """Whether ``uuid``, off the kept path, hangs from it where the kept path goes on with a prompt of the
        user's (the user went back there and asked again: a rewind). A chain that breaks first (a parent not
        in this file, a record with none) proves nothing: not rewound."""
        walked: list[str] = []
        node: str | None = uuid
        while node is not None and node not in kept and node not in memo and node not in walked:
            walked.append(node)
            node = self.parent.get(node)
        if node is not None and node in kept:
            found = self.kept_child.get(node) in self.typed
        else:
            found = node is not None and memo.get(node, False)
        memo.update(dict.fromkeys(walked, found))
        return found

    def _open_call(self, kept: set[str], session: str) -> Item | None:
        """The main agent's last tool call, when it got no result and the user did not speak after it."""
        if self.call is None:
            return None
        call_id, tool, data, ts, uuid, at = self.call
        if self.answered or uuid not in kept or own_tool(tool):
            return None
        if any(u in kept and n > at for u, n in self.spoke):
            return None  # the user spoke after it (an interrupt, a new request): not where it stopped
        return (ev.ToolCalled, {
            "tool": tool, "call_id": call_id, "input": bounded(json.dumps(data, default=str)) or bounded("{}"),
            "actor": ACTOR, "timestamp": ts,
            "source": ev.SourceKey(agent=AGENT, session=session, record=call_id + "#call"),
        })
