"""Finding a task by words you remember, over the DuckDB read model (``trail find``).

Every text a task holds is a place a remembered word may be: its title, the user's requirements and
corrections, decisions and attempts with their reasons, notes, the files it changed, the commands it ran and
the tests. A task is found when each word is somewhere in it (case-insensitive, as a substring, so "redirect"
finds "redirects" and a path's part). Tasks are ranked by where the words were (a title or a requirement
counts more than a command line), then by how recently they changed. Pure SQL text and its parameters;
``projections.readmodel.query`` runs it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from ledger.base.oneline import one_line

WEIGHTS = {"title": 5, "requirement": 3, "correction": 3, "decision": 2, "attempt": 2, "note": 2, "next": 2,
           "failed command": 2,
           "file": 1, "command": 1, "test": 1, "checkpoint": 1, "last words": 1}
"""How much a match counts by where it is: what the user said or named outweighs what a tool printed, and a
command that failed is remembered better than one that passed."""
SHOWN = 3
"""Matching lines shown under each task found."""

LAST_WORDS = "last words"
"""The kind of a task's newest reply: where the agent stopped, in its words (every reply would let a long
task's chatter outweigh what the user said), so a task keeps one place of this kind."""


def _joined(*parts: Any) -> str:
    """The parts that are there, joined as SQL's ``concat_ws(' — ', ...)`` joins them."""
    return " — ".join(str(p) for p in parts if p is not None)


def event_place(name: str, payload: dict[str, Any]) -> tuple[str, str] | None:
    """The place (kind, text) an event of type ``name`` holds by itself, from its stored ``payload``; None
    for the events whose places are their read-model rows (``row_place``) or that hold none."""
    text: Any
    match name:
        case "NoteAdded":
            kind, text = "note", payload.get("text")
        case "NextStepSet":
            kind, text = "next", payload.get("text")
        case "CheckpointMarked":
            kind, text = "checkpoint", _joined(payload.get("label"), payload.get("note"))
        case "AgentReplied":
            kind, text = LAST_WORDS, (payload.get("text") or {}).get("tail")
        case _:
            return None
    return (kind, text) if isinstance(text, str) else None


def row_place(table: str, row: dict[str, Any]) -> tuple[str, str] | None:
    """The place (kind, text) a read-model row holds (its columns by name); None when it holds no text."""
    text: Any
    match table:
        case "intents":
            kind, text = row["kind"], row["text"]
        case "decisions" | "attempts":
            kind, text = table[:-1], _joined(row["text"], row["reason"])
        case "files":
            kind, text = "file", row["path"]
        case "commands":
            kind, text = "failed command" if row["failed"] else "command", row["line"]
        case "tests":
            kind, text = "test", row["name"]
        case _:
            return None
    return (kind, text) if isinstance(text, str) else None


def _places() -> str:
    """Every place: the title, and the read model's ``places`` table but for a branch's copied rows."""
    from projections.queries import COPIED  # here: its module's dataclass costs the find index's path ~15 ms

    return f"""
    SELECT task_id, 1 AS position, 'title' AS kind, title AS text, lower(title) AS low FROM tasks
    UNION ALL SELECT task_id, position, kind, text, low FROM places f WHERE NOT EXISTS ({COPIED})
    """
# The read model's ``places`` table holds every other place, lower-cased once as it is caught up: reading the
# texts out of the events' JSON and lower-casing them on each query took seconds at a million events.


class Match(NamedTuple):
    position: int
    kind: str
    text: str


class Found(NamedTuple):
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


class Only(NamedTuple):
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
    flags = ", ".join(f"contains(low, $w{i}) AS h{i}" for i in range(len(words)))
    hits = " + ".join(f"h{i}::INTEGER" for i in range(len(words)))
    every = " AND ".join(f"bool_or(h{i})" for i in range(len(words)))
    some = " OR ".join(f"h{i}" for i in range(len(words)))
    weight = "CASE kind " + " ".join(f"WHEN '{k}' THEN {w}" for k, w in WEIGHTS.items()) + " ELSE 1 END"
    params["limit"] = limit
    params["shown"] = SHOWN
    # One pass over the places: each word is looked for once per place, and each task's score and its best
    # SHOWN places come out of one grouping (max_by keeps a small heap per task: sorting every hit of a big
    # task to keep three cost seconds at a million events).
    query = f"""
    WITH places AS ({_places()}),
    flagged AS (SELECT task_id, position, kind, text, {flags} FROM places WHERE low IS NOT NULL),
    hit AS (SELECT *, ({hits}) * {weight} AS score FROM flagged WHERE {some}),
    found AS (
        SELECT task_id, sum(score)::BIGINT AS score,
               max_by({{'position': position, 'kind': kind, 'text': text}},
                      score::BIGINT * 4294967296 + position, $shown) AS matches
        FROM hit GROUP BY task_id HAVING {every})
    SELECT t.number, t.title, t.status, t.cwd, t.updated_at, found.score, found.matches
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



CELL = 60
"""Characters of a title shown on its task's line."""
SNIPPET = 100
"""Characters of a matching place shown: around the first word found in it."""


def cell(text: str, width: int = CELL) -> str:
    """``text`` on one line of at most ``width`` characters (as `trail query` shows a cell)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def snippet(text: str, words: list[str]) -> str:
    """The part of a matching place shown: ``SNIPPET`` characters around the first of ``words`` in it."""
    flat = one_line(text)
    if len(flat) <= SNIPPET:
        return flat
    at = min((i for i in (flat.lower().find(w) for w in words) if i >= 0), default=0)
    start = max(0, at - SNIPPET // 3)
    cut = flat[start:start + SNIPPET]
    return ("…" if start else "") + cut + ("…" if start + SNIPPET < len(flat) else "")


def as_text(found: list[Found], words: list[str], narrowed: bool) -> str:
    """What `trail find` prints for ``found`` (each line ended): a line a task, the places under it; or what
    to try when nothing was found (``narrowed``: a filter was given). Both of its paths print this."""
    if not found:
        among = " among the tasks asked for" if narrowed else ""
        return (f"No task holds all of: {', '.join(words)}{among}. Fewer words find more; "
                "`trail list` shows every task.\n")
    lines = []
    for f in found:
        when = f"{f.updated_at:%Y-%m-%d %H:%M}" if f.updated_at else ""
        where = f"  ({f.cwd})" if f.cwd else ""
        lines.append(f"#{f.number:<4} {f.status:<9} {cell(f.title)}{where}  {when}".rstrip())
        lines += [f"      [{m.position}] {m.kind}: {snippet(m.text, words)}" for m in f.matches]
    return "".join(line + "\n" for line in lines)
