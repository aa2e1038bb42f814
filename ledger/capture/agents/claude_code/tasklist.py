"""Claude Code 2.1's task list as plans (pure; see docs/capture.md, "Task lists").

From 2.1 Claude Code plans with ``TaskCreate``/``TaskUpdate`` (read back with ``TaskList``/``TaskGet``)
instead of ``TodoWrite``, and the hooks ``TaskCreated``/``TaskCompleted`` fire for the same changes.
Each call names one task, so the plan is kept here, per session (Claude Code keeps one list per
session), and every change that moves a task gives one ``PlanUpdated`` with the whole list, in id
order: the fold's next step (the step in progress, else the first pending) follows it as it follows
TodoWrite.

One change is one fact, whichever signal brought it: the record is ``task:<id>:<status>:<n>`` (the
n-th time that task entered that status in the session; a rename is ``task:<id>:subject:<hash>``), so
the ``TaskCreated`` hook and the ``TaskCreate`` tool call after it, or ``TaskCompleted`` and the
``TaskUpdate`` behind it, and a later import of the transcript give the same key; a signal that
changes nothing gives nothing. A task the list does not know (its creation was never seen) is not
guessed at: only ``TaskList``/``TaskGet``, which state it, bring it in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ledger.capture.items import Item, sha256
from ledger.domain import events as ev

TOOLS = frozenset({"TaskCreate", "TaskUpdate", "TaskList", "TaskGet"})
HOOKS = frozenset({"TaskCreated", "TaskCompleted"})
KEY = "task:"
"""Source-record prefix of a task-list change."""
STATUSES = ("pending", "in_progress", "completed")
_CREATED = re.compile(r"Task #(\S+) created successfully: (.*)")
_GOT = re.compile(r"Task #(\S+): (.*)\nStatus: (\w+)")
_LISTED = re.compile(r"^#(\S+) \[(\w+)\] (.*)$", re.M)
_UPDATED = "Updated task #"
_NOT_FOUND = "Task not found"


def _order(task_id: str) -> tuple[bool, int, str]:
    return (not task_id.isdigit(), int(task_id) if task_id.isdigit() and len(task_id) < 12 else 0, task_id)


@dataclass
class TaskList:
    """One session's task list as the signals seen so far have left it."""

    tasks: dict[str, tuple[str, str]] = field(default_factory=dict)
    """id -> (subject, status)."""
    entered: dict[str, int] = field(default_factory=dict)
    """``<id>:<status>`` -> how often that task entered that status in the session (the keys' n)."""
    inherited: bool = False
    """The tasks were carried over from another session's plan: a creation under a known id means
    the session started a list of its own."""

    def seen(self, record: str) -> None:
        """Count a change this session already holds (its record), so the next keys follow on."""
        task_id, _, rest = record.removeprefix(KEY).partition(":")
        status, _, count = rest.partition(":")
        if status in (*STATUSES, "deleted") and count.isdigit():
            slot = f"{task_id}:{status}"
            self.entered[slot] = max(self.entered.get(slot, 0), int(count) + 1)

    def _enter(self, task_id: str, status: str) -> str:
        slot = f"{task_id}:{status}"
        count = self.entered.get(slot, 0)
        self.entered[slot] = count + 1
        return f"{KEY}{task_id}:{status}:{count}"

    def create(self, task_id: str, subject: str) -> str | None:
        """A task made (pending); the record of the change, or None when the list already had it."""
        if task_id in self.tasks and self.inherited:
            self.tasks.clear()  # ids start again: this session's list is a new one
        self.inherited = False
        if task_id in self.tasks:
            return None
        self.tasks[task_id] = (subject, "pending")
        return self._enter(task_id, "pending")

    def update(self, task_id: str, status: str | None = None, subject: str | None = None) -> str | None:
        """A task's new status or subject; the record of the change, or None (nothing changed, or unknown)."""
        if task_id not in self.tasks:
            return None
        old_subject, old_status = self.tasks[task_id]
        if status == "deleted":
            del self.tasks[task_id]
            return self._enter(task_id, "deleted")
        record = None
        if status in STATUSES and status != old_status:
            self.tasks[task_id] = (old_subject, status)
            record = self._enter(task_id, status)
        if subject and " ".join(subject.split()) != " ".join(old_subject.split()):
            self.tasks[task_id] = (subject, self.tasks[task_id][1])
            record = record or f"{KEY}{task_id}:subject:{sha256(subject)[:12]}"
        return record

    def replace(self, listed: list[tuple[str, str, str]]) -> bool:
        """The whole list as ``TaskList`` shows it ((id, subject, status)); whether anything changed."""
        before = dict(self.tasks)
        # Not counted as entries: a restored list knows only the changes keyed ``task:`` (see ``seen``).
        now = {task_id: (subject, status) for task_id, subject, status in listed if status in STATUSES}
        self.tasks, self.inherited = now, False
        return now != before

    def plan(self, actor: str, source: ev.SourceKey, timestamp: Any) -> Item:
        steps = tuple(
            ev.PlanStep(text=" ".join(subject.split()) or f"task #{task_id}", status=status, id=task_id)  # type: ignore[arg-type]
            for task_id, (subject, status) in sorted(self.tasks.items(), key=lambda kv: _order(kv[0]))
        )
        return ev.PlanUpdated, {"steps": steps, "actor": actor, "timestamp": timestamp, "source": source}


def concerns(payload: dict[str, Any]) -> bool:
    """Whether a hook payload is task-list traffic (what needs the session's list)."""
    event = payload.get("hook_event_name")
    return event in HOOKS or event == "PostToolBatch" or payload.get("tool_name") in TOOLS


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def tool_change(tasks: TaskList, name: str, data: dict[str, Any], result: Any, content: str) -> str | bool | None:
    """Apply one finished task-list tool call: the record of the change it made, True when a
    ``TaskList`` rewrote the list (its key is the call's), else None.

    ``result`` is the structured result (``toolUseResult``, the hook's ``tool_response``) where there
    is one; ``content`` the text the model saw, which sub-agent transcripts have alone."""
    result = result if isinstance(result, dict) else {}
    if name == "TaskCreate":
        made = result.get("task") if isinstance(result.get("task"), dict) else None
        match = _CREATED.match(content) if made is None else None
        if made is not None:
            task_id, said = str(made.get("id", "")), _text(made.get("subject"))
        else:
            task_id, said = (match.group(1), match.group(2)) if match else ("", "")
        subject = _text(data.get("subject")) or said
        return tasks.create(task_id, subject) if task_id else None
    if name == "TaskUpdate":
        ok = result.get("success") is True if result else content.startswith(_UPDATED)
        task_id = str(data.get("taskId") or "")
        if not ok and task_id and _NOT_FOUND in (_text(result.get("error")) or content):
            # Claude Code's list no longer has it (a teammate finished it in the team's list): gone from the plan.
            return tasks.update(task_id, "deleted")
        if not ok or not task_id:
            return None
        return tasks.update(task_id, _text(data.get("status")) or None, _text(data.get("subject")) or None)
    if name == "TaskGet":
        got = result.get("task") if isinstance(result.get("task"), dict) else None
        if got is not None:
            task_id, subject, status = str(got.get("id", "")), _text(got.get("subject")), _text(got.get("status"))
        elif match := _GOT.match(content):
            task_id, subject, status = match.group(1), match.group(2), match.group(3)
        else:
            return None
        if task_id and task_id not in tasks.tasks and status in STATUSES:
            tasks.tasks[task_id] = (subject, status)  # stated whole: brought in as it is
            return tasks._enter(task_id, status)
        return tasks.update(task_id, status, subject) if task_id else None
    if name == "TaskList":
        listed = result.get("tasks")
        if isinstance(listed, list):
            rows = [(str(t.get("id", "")), _text(t.get("subject")), _text(t.get("status")))
                    for t in listed if isinstance(t, dict) and t.get("id") is not None]
        elif result or not content.startswith("#"):
            return None
        else:
            rows = [(m.group(1), m.group(3), m.group(2)) for m in _LISTED.finditer(content)]
        return True if tasks.replace(rows) else None
    return None


def hook_change(tasks: TaskList, payload: dict[str, Any]) -> str | None:
    """Apply a ``TaskCreated``/``TaskCompleted`` hook: the record of the change, or None."""
    task_id = str(payload.get("task_id") or "")
    subject = _text(payload.get("task_subject"))
    if not task_id:
        return None
    if payload.get("hook_event_name") == "TaskCreated":
        return tasks.create(task_id, subject)
    if task_id not in tasks.tasks and subject:
        tasks.create(task_id, subject)  # its creation was missed; the hook names it whole
    return tasks.update(task_id, "completed")


def items_for(tasks: TaskList, change: str | bool | None, actor: str, source: ev.SourceKey, ts: Any) -> list[Item]:
    """The plan after ``change`` (a record, or True for a list rewritten under ``source``'s own key)."""
    if change is None or change is False:
        return []
    record = change if isinstance(change, str) else source.record + "#plan"
    return [tasks.plan(actor, source.model_copy(update={"record": record}), ts)]
