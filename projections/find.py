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
from typing import Any

from projections.queries import COPIED

WEIGHTS = {"title": 5, "requirement": 3, "correction": 3, "decision": 2, "attempt": 2, "note": 2,
           "file": 1, "command": 1, "test": 1}
"""How much a match counts by where it is: what the user said or named outweighs what a tool printed."""
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
    UNION ALL SELECT task_id, position, 'command', line FROM commands f WHERE NOT EXISTS ({COPIED})
    UNION ALL SELECT task_id, position, 'test', name FROM tests f WHERE NOT EXISTS ({COPIED})
"""


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


def sql(words: list[str], limit: int) -> tuple[str, dict[str, Any]]:
    """The query finding the tasks that hold every one of ``words``, best first, at most ``limit`` of them,
    each row a task with its best ``SHOWN`` matching places."""
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

