"""Finding a task by words you remember, over the DuckDB read model (``trail find``).

Every text a task holds is a place a remembered word may be: its title, the user's requirements and
corrections, decisions and attempts with their reasons, notes, the files it changed, the commands it ran and
the tests. A task is found when each word is somewhere in it (case-insensitive, as a substring, so "redirect"
finds "redirects" and a path's part). Tasks are ranked by where the words were (a title or a requirement
counts more than a command line), then by how recently they changed. Pure SQL text and its parameters;
``projections.readmodel.query`` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from projections.queries import COPIED

WEIGHTS = {"title": 5, "requirement": 3, "correction": 3, "decision": 2, "attempt": 2, "note": 2, "next": 2,
           "failed command": 2,
           "file": 1, "command": 1, "test": 1, "checkpoint": 1, "last words": 1}
"""How much a match counts by where it is: what the user said or named outweighs what a tool printed, and a
command that failed is remembered better than one that passed."""
SHOWN = 3
"""Matching lines shown under each task found."""

_PLACES = f"""
    SELECT task_id, 1 AS position, 'title' AS kind, title AS text FROM tasks
    UNION ALL SELECT task_id, position, kind, text FROM intents f WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'decision', concat_ws(' — ', text, reason) FROM decisions f
        WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'attempt', concat_ws(' — ', text, reason) FROM attempts f
        WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'note', payload->>'text' FROM events f
        WHERE type = 'NoteAdded' AND NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'file', path FROM files f WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, CASE WHEN failed THEN 'failed command' ELSE 'command' END, line
        FROM commands f WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'test', name FROM tests f WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'next', payload->>'text' FROM events f
        WHERE type = 'NextStepSet' AND NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'checkpoint', concat_ws(' — ', payload->>'label', payload->>'note')
        FROM events f WHERE type = 'CheckpointMarked' AND NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'last words', text FROM (
        SELECT task_id, position, payload->'text'->>'tail' AS text,
               row_number() OVER (PARTITION BY task_id ORDER BY position DESC) AS nth
        FROM events f WHERE type = 'AgentReplied' AND NOT EXISTS ({COPIED})) WHERE nth = 1
"""
# The last reply only: where the agent stopped, in its words. Every reply would let a long task's chatter
# outweigh what the user said.


@dataclass(frozen=True)
class Match:
    position: int
    kind: str
    text: str


@dataclass(frozen=True)
class Found:
    number: int
    title: str
    status: str
    cwd: str | None
    updated_at: Any
    score: int
    matches: tuple[Match, ...]


def words_of(terms: tuple[str, ...]) -> list[str]:
    """The distinct words of ``terms`` (each argument may hold several), lower-cased, in their order."""
    seen: list[str] = []
    for term in terms:
        for word in term.lower().split():
            if word not in seen:
                seen.append(word)
    return seen


@dataclass(frozen=True)
class Only:
    """Which tasks may be found at all: ``project`` an absolute folder (tasks begun in it or below) or a
    folder's name (the last part of the project, as ``trail list`` shows it),
    ``statuses`` any of them, ``since`` changed at or after it, ``agent`` an agent that took part (its name,
    as in ``agent:NAME`` actors)."""

    project: str | None = None
    statuses: tuple[str, ...] = ()
    since: datetime | None = None
    agent: str | None = None

    def where(self, params: dict[str, Any]) -> str:
        """The SQL condition on ``tasks t`` (with its parameters put in ``params``); TRUE when nothing is asked."""
        parts = ["TRUE"]
        if self.project is not None and self.project.startswith("/"):
            params["project"] = self.project.rstrip("/") or "/"
            parts.append("(t.cwd = $project OR starts_with(t.cwd, rtrim($project, '/') || '/'))")
        elif self.project is not None:  # a name: the project folder's last part, or a folder on the way down
            params["project"] = self.project.strip("/")
            parts.append("(regexp_extract(t.cwd, '[^/]+$') = $project OR contains(t.cwd, '/' || $project || '/'))")
        if self.statuses:
            params["statuses"] = list(self.statuses)
            parts.append("list_contains($statuses, t.status)")
        if self.since is not None:
            params["since"] = self.since
            parts.append("t.updated_at >= $since")
        if self.agent is not None:
            params["agent"] = f"agent:{self.agent}"
            parts.append("EXISTS (SELECT 1 FROM events e WHERE e.task_id = t.task_id"
                         " AND (e.actor = $agent OR starts_with(e.actor, $agent || '/')))")  # its sub-agents too
        return " AND ".join(parts)


def sql(words: list[str], limit: int, only: Only | None = None) -> tuple[str, dict[str, Any]]:
    """The query finding the tasks that hold every one of ``words``, best first, at most ``limit`` of them,
    each row a task with its best ``SHOWN`` matching places; ``only`` narrows the tasks looked in."""
    params: dict[str, Any] = {f"w{i}": word for i, word in enumerate(words)}
    hits = " + ".join(f"contains(lower(text), $w{i})::INTEGER" for i in range(len(words)))
    every = " AND ".join(f"bool_or(contains(lower(text), $w{i}))" for i in range(len(words)))
    weight = "CASE kind " + " ".join(f"WHEN '{k}' THEN {w}" for k, w in WEIGHTS.items()) + " ELSE 1 END"
    params["limit"] = limit
    params["shown"] = SHOWN
    query = f"""
    WITH places AS ({_PLACES}),
    counted AS (SELECT *, ({hits}) AS words FROM places WHERE text IS NOT NULL),
    hit AS (SELECT task_id, position, kind, text, words * {weight} AS score FROM counted WHERE words > 0),
    found AS (SELECT task_id, sum(score)::BIGINT AS score FROM hit GROUP BY task_id HAVING {every})
    SELECT t.number, t.title, t.status, t.cwd, t.updated_at, found.score,
           (SELECT list({{'position': h.position, 'kind': h.kind, 'text': h.text}}
                        ORDER BY h.score DESC, h.position DESC)[1:$shown]
            FROM hit h WHERE h.task_id = found.task_id) AS matches
    FROM found JOIN tasks t USING (task_id)
    WHERE {(only or Only()).where(params)}
    ORDER BY found.score DESC, t.updated_at DESC, t.number DESC
    LIMIT $limit
    """
    return query, params


def from_rows(rows: list[tuple[Any, ...]]) -> list[Found]:
    """The query's rows as ``Found`` values."""
    return [
        Found(number, title, status, cwd, updated_at, score,
              tuple(Match(m["position"], m["kind"], m["text"]) for m in matches or ()))
        for number, title, status, cwd, updated_at, score, matches in rows
    ]


def as_records(found: list[Found], text_width: int | None = None) -> list[dict[str, Any]]:
    """``found`` as JSON-ready records; ``text_width`` cuts each matching place's text (a front door that
    answers into an agent's context keeps it short)."""
    def cut(text: str) -> str:
        return text if text_width is None or len(text) <= text_width else text[: text_width - 1] + "…"

    return [{"number": f.number, "title": f.title, "status": f.status, "cwd": f.cwd,
             "updated_at": f.updated_at.isoformat() if f.updated_at else None, "score": f.score,
             "matches": [{"position": m.position, "kind": m.kind, "text": cut(m.text)} for m in f.matches]}
            for f in found]

