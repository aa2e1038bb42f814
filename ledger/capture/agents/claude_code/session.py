"""Claude Code's hook mapping for one session: its task list as the task holds it, restored at the first
row that needs it (a drain of rows without task-list traffic reads nothing more)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ledger.capture.agent import HookMapper
from ledger.capture.agents.claude_code import mapper, tasklist
from ledger.capture.agents.claude_code.tasklist import TaskList
from ledger.capture.items import Item
from ledger.capture.writer import session_records

if TYPE_CHECKING:
    from ledger.app.store import Ledger
    from ledger.base.location import Location


class TaskListMapper:
    def __init__(self, ledger: Ledger, location: Location, task: UUID | None, session: str) -> None:
        self.ledger, self.location, self.task, self.session = ledger, location, task, session
        self.tasks: TaskList | None = None

    def __call__(self, payload: dict[str, Any], row: int, ts: datetime) -> list[Item]:
        if self.tasks is None and tasklist.concerns(payload):
            self.tasks = self._task_list()
        return mapper.hook_items(payload, row, ts, self.tasks)

    def _task_list(self) -> TaskList:
        """The session's task list as the task holds it: the changes counted from their keys, the tasks from
        the task's plan when that is a task list (this session's, or carried over from another's: see
        ``tasklist.TaskList.inherited``)."""
        tasks = TaskList()
        ledger, task, session = self.ledger, self.task, self.session
        if task is None:
            return tasks
        state = ledger.state(task)
        for record in session_records(ledger, self.location, task, state.position, mapper.AGENT, session, tasklist.KEY):
            tasks.seen(record)
        plan = state.plan
        if plan is not None and plan.steps and all(step.id for step in plan.steps):
            event = next(iter(ledger.task_events(task, after=plan.position - 1, upto=plan.position)), None)
            tasks.tasks = {str(step.id): (step.text, step.status) for step in plan.steps}
            tasks.inherited = event is None or event.source is None or event.source.session != session
        return tasks


def task_list_mapper(ledger: Ledger, location: Location, task: UUID | None, session: str) -> HookMapper:
    return TaskListMapper(ledger, location, task, session)
