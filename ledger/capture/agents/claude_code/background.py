"""Commands Claude Code ran in the background: their outcome arrives later, in a ``TaskOutput`` call.

A Bash call with ``run_in_background`` comes back at once ("Command running in background with ID: …"), so
its own record says nothing of how the command ended. When the agent later reads the task (``TaskOutput``)
and the task has ended, its status and exit code are the command's outcome: recorded then as the command's
run, so a background check that failed (``gh pr checks --watch``) is not read as passing."""

from __future__ import annotations

from typing import Any

from ledger.capture.items import Item, bounded
from ledger.domain import events as ev


class Background:
    """The session's background commands by task id, and their outcomes once read."""

    def __init__(self) -> None:
        self.commands: dict[str, str] = {}

    def started(self, data: dict[str, Any], result: Any) -> None:
        """Remember a shell call's command when it went to the background."""
        task = result.get("backgroundTaskId") if isinstance(result, dict) else None
        if isinstance(task, str) and task:
            self.commands[task] = str(data.get("command", ""))

    def ended(self, name: str, result: Any, cwd: str | None, actor: str, source: ev.SourceKey, ts: Any
              ) -> list[Item]:
        """The command's run when ``result`` (a ``TaskOutput``'s) says one of ours ended with an exit code."""
        task = result.get("task") if name == "TaskOutput" and isinstance(result, dict) else None
        if not isinstance(task, dict):
            return []
        key = str(task.get("task_id", ""))
        code = task.get("exitCode", task.get("exit_code"))
        if key not in self.commands or not isinstance(code, int) or isinstance(code, bool):
            return []  # still running, or not a command of this session: nothing ended yet
        line = self.commands.pop(key)
        output = task.get("output")
        return [(ev.CommandRan, {
            "shell": line, "cwd": cwd, "exit_code": code, "duration_ms": None,
            "stdout": bounded(output if isinstance(output, str) else None), "stderr": None,
            "actor": actor, "source": source.model_copy(update={"record": f"{source.record}#background"}),
            "timestamp": ts,
        })]
