"""Named queries over the DuckDB read model: the questions users ask across tasks.

Pure data (SQL text and titles); ``projections.readmodel.query`` runs them. A query
that takes the task as a parameter names it ``$task`` (the task's number). What counts as
failed (``attempts.failed``, ``tests.failing``, ``commands.failed``) is decided once, in
``projections.facts``, and stored as a column; the SQL reads the column, never the rule.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamedQuery:
    name: str
    title: str
    sql: str

    @property
    def per_task(self) -> bool:
        """True when the query needs a task (``$task``)."""
        return "$task" in self.sql


COPIED = "SELECT 1 FROM branch_points b WHERE b.task_id = f.task_id AND f.position < b.at"
"""A row a branch copied from its origin (``Ledger.branch``): the origin's row already counts it."""

QUERIES: tuple[NamedQuery, ...] = (
    NamedQuery(
        "files",
        "Files changed most often",
        f"""
        SELECT path, count(*) AS changes, count(DISTINCT task_id) AS tasks,
               string_agg(DISTINCT task_number::VARCHAR, ',' ORDER BY task_number::VARCHAR) AS in_tasks,
               max(timestamp) AS last_changed
        FROM files f WHERE NOT EXISTS ({COPIED})
        GROUP BY path ORDER BY changes DESC, path LIMIT 15
        """,
    ),
    NamedQuery(
        "failed-attempts",
        "Attempts that failed or were abandoned, and why",
        f"""
        SELECT task_number AS task, position, text AS attempt, outcome, coalesce(reason, '') AS reason,
               ended_at, ended_position - position AS events_spent
        FROM attempts f WHERE failed AND NOT EXISTS ({COPIED}) ORDER BY ended_at DESC, task, position LIMIT 25
        """,
    ),
    NamedQuery(
        "failing-commands",
        "Commands that fail most",
        f"""
        SELECT line AS command, count(*) AS runs, count(*) FILTER (WHERE failed) AS failures,
               round(100.0 * count(*) FILTER (WHERE failed) / count(*), 1) AS failure_pct,
               arg_max(exit_code, position) FILTER (WHERE failed) AS last_exit_code
        FROM commands f WHERE NOT EXISTS ({COPIED}) GROUP BY line HAVING count(*) FILTER (WHERE failed) > 0
        ORDER BY failures DESC, runs DESC, command LIMIT 15
        """,
    ),
    NamedQuery(
        "stalled",
        "Unfinished tasks, longest without a new event first",
        """
        SELECT number AS task, title, status, updated_at AS last_event,
               date_trunc('second', now() - updated_at) AS idle, open_attempt, coalesce(next_step, '') AS next_step
        FROM tasks WHERE status NOT IN ('done', 'abandoned') ORDER BY updated_at ASC, number LIMIT 15
        """,
    ),
    NamedQuery(
        "timelines",
        "Per-task timelines",
        """
        SELECT number AS task, title, status, opened_at, updated_at AS last_event,
               date_trunc('second', updated_at - opened_at) AS span, events, attempts, attempts_failed,
               commands, commands_failed, file_changes
        FROM tasks ORDER BY number
        """,
    ),
    NamedQuery(
        "timeline",
        "Day-by-day timeline of one task",
        """
        SELECT date_trunc('day', timestamp)::DATE AS day, count(*) AS events,
               min(position) AS first_position, max(position) AS last_position,
               count(*) FILTER (WHERE type = 'AttemptStarted') AS attempts,
               count(*) FILTER (WHERE type = 'CommandRan') AS commands,
               count(*) FILTER (WHERE type = 'FileChanged') AS file_changes,
               count(*) FILTER (WHERE type = 'TestResult') AS tests
        FROM events WHERE task_number = $task GROUP BY ALL ORDER BY day
        """,
    ),
)

BY_NAME: dict[str, NamedQuery] = {q.name: q for q in QUERIES}
