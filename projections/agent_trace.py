"""Agent Trace records (the open attribution spec, v0.1) from a task's recorded file changes.

One record per ``FileChanged`` whose diff adds lines: the file's path, and the line ranges the
change added on the new side of each hunk (1-based, as the file read right after the change),
under the conversation the change came from and the kind of contributor who made it. Pure: the
caller passes the events and the tool's version; ids are derived from the task and position,
so the same ledger always exports the same records.

What tasktrail knows and the spec asks for:

- ``contributor.type``: ``ai`` for a change an agent made (its actor is ``agent:NAME``, or it was
  captured from an agent's session), ``human`` for one the user recorded, else ``unknown``.
  ``model_id`` is left out: the ledger does not record which model an agent ran.
- ``url``: the conversation's transcript as a ``file:`` URI when its ``ConversationLinked``
  named one, else a ``urn:tasktrail:session:AGENT:ID`` naming the session; none for a change
  made outside any agent session.
- ``vcs``: the git HEAD of the latest checkpoint at or before the change, when one was recorded
  (as a hook records HEAD when an edit happens; the edit itself may not be committed yet).
- ``content_hash``: ``sha256:`` of the range's lines as added (each with its line ending).
- ``metadata["dev.tasktrail"]``: the task, the change's position, its operation and the file's
  sha256 after it, which pins the version the line numbers refer to.

A change whose diff was cut (``truncated``), collected by ``trail compact --gc-artifacts`` or
absent (binary) gives no record: its added lines cannot be told. Neither does a deletion.
"""

from __future__ import annotations

import hashlib
import posixpath
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any
from urllib.parse import quote

from ledger.domain import events as ev
from projections import hunks

VERSION = "0.1"
"""The spec's version as its JSON Schema's pattern (``^[0-9]+\\.[0-9]+$``) accepts it."""
TOOL_NAME = "tasktrail"
MAX_MODEL_ID = 250
_NAMESPACE = uuid.UUID("6f1c3e0a-6a2b-5d8e-9c41-7a2d0b5e9f13")


@dataclass
class Export:
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Changes that gave no record, by reason (``no added lines``, ``diff cut``, ``no diff``...)."""

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def added_ranges(diff: str) -> list[tuple[int, int, str]]:
    """The runs of added lines on the new side of ``diff``: (start_line, end_line, sha256 of their text)."""
    found: list[tuple[int, int, str]] = []
    run: list[Any] = []

    def close() -> None:
        if run:
            digest = hashlib.sha256("".join(x.value for x in run).encode()).hexdigest()
            found.append((run[0].target_line_no, run[-1].target_line_no, f"sha256:{digest}"))
            run.clear()

    for hunk in hunks.parse(diff):
        for line in hunk:
            if not (line.is_added and line.target_line_no):
                close()
            elif run and line.target_line_no != run[-1].target_line_no + 1:
                close()
                run.append(line)
            else:
                run.append(line)
        close()
    return found


def _timestamp(event: ev.TaskEvent) -> str:
    # The spec's schema wants RFC 3339 in UTC with a Z.
    return event.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _relative(path: str, project: str | None) -> str:
    """The path from the repository root, when the recorded one is absolute inside the project."""
    if project and posixpath.isabs(path):
        root = posixpath.normpath(project)
        if path == root or path.startswith(root + "/"):
            return posixpath.relpath(path, root)
    return path


def _session_url(conversation: ev.ConversationLinked | None, agent: str, session: str) -> str:
    if conversation is not None and conversation.transcript and posixpath.isabs(conversation.transcript):
        return "file://" + quote(conversation.transcript)
    return f"urn:tasktrail:session:{quote(agent, safe='')}:{quote(session, safe='')}"


def build(events: Iterable[ev.TaskEvent], tool_version: str) -> Export:
    """The Agent Trace records of one task's events (oldest first), one per change that added lines."""
    out = Export()
    task_id: uuid.UUID | None = None
    number, project = 0, None
    head: ev.CheckpointMarked | None = None
    sessions: dict[tuple[str, str], ev.ConversationLinked] = {}
    current: ev.ConversationLinked | None = None  # the session in progress: the latest linked
    for event in events:
        if isinstance(event, ev.TaskOpened):
            task_id, number, project = event.originator_id, event.number, event.project or event.cwd
        elif isinstance(event, ev.ConversationLinked):
            sessions[(event.agent, event.session_id)] = event
            current = event
        elif isinstance(event, ev.CheckpointMarked) and event.git_head:
            head = event
        elif isinstance(event, ev.FileChanged):
            if event.operation == "deleted":
                out.skip("deleted")
                continue
            if event.diff is None:
                out.skip("no diff")
                continue
            if event.diff.truncated or event.diff.collected:
                out.skip("diff cut" if event.diff.truncated else "diff collected")
                continue
            ranges = added_ranges(event.diff.tail)
            if not ranges:
                out.skip("no added lines")
                continue
            out.records.append(_record(event, task_id, number, project, ranges, head, sessions, current,
                                       tool_version))
    return out


def _record(
    event: ev.FileChanged, task_id: uuid.UUID | None, number: int, project: str | None,
    ranges: list[tuple[int, int, str]], head: ev.CheckpointMarked | None,
    sessions: dict[tuple[str, str], ev.ConversationLinked], current: ev.ConversationLinked | None,
    tool_version: str,
) -> dict[str, Any]:
    agent_made = event.actor.startswith("agent:") or event.source is not None
    conversation: dict[str, Any] = {}
    if event.source is not None:
        linked = sessions.get((event.source.agent, event.source.session))
        conversation["url"] = _session_url(linked, event.source.agent, event.source.session)
    elif agent_made and current is not None:
        conversation["url"] = _session_url(current, current.agent, current.session_id)
    kind = "ai" if agent_made else "human" if event.actor == "user" else "unknown"
    conversation["contributor"] = {"type": kind}
    conversation["ranges"] = [{"start_line": s, "end_line": e, "content_hash": h} for s, e, h in ranges]
    record: dict[str, Any] = {
        "version": VERSION,
        "id": str(uuid.uuid5(_NAMESPACE, f"{task_id}:{event.originator_version}")),
        "timestamp": _timestamp(event),
    }
    if head is not None and head.git_head:
        record["vcs"] = {"type": "git", "revision": head.git_head}
    record["tool"] = {"name": TOOL_NAME, "version": tool_version}
    record["files"] = [{"path": _relative(event.path, project), "conversations": [conversation]}]
    meta: dict[str, Any] = {
        "task": number,
        "position": event.originator_version,
        "actor": event.actor,
        "operation": event.operation,
        "after_sha256": event.after_sha256,
    }
    if head is not None:
        meta["checkpoint"] = {"position": head.originator_version, "label": head.label, "git_dirty": head.git_dirty}
    if event.renamed_from:
        meta["renamed_from"] = event.renamed_from
    record["metadata"] = {"dev.tasktrail": meta}
    return record
