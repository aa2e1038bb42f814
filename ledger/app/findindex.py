"""The find index: `trail find` answers from an SQLite FTS5 file beside the ledger, without loading the ledger,
pydantic or DuckDB, while it can show the full path would print the same bytes now.

Standard library only at import (``tests/test_startup.py``). The full path (``cli.analytics.find_command``)
fills it (``fill``) from the read model it has just caught up: each task's places as the read model holds them
(``projections.find``'s, a branch's copied ones left out, the title's lower-cased by DuckDB as the query
lowers it), the task's line, the actors that took part; and each task's brief-cache key
(``briefcache.task_key``), kept only once the task passed a read's checks (``verify.checked_state``) and its
rows were re-hashed up to its last position (``verify.rows_problem``: the full path re-hashes the rows it
shows). The fast path (``cached_find``) answers only when

- the ledger is an SQLite file with no setting the full path checks (``briefcache.fast_ledger``) and an empty
  capture inbox (the full path would fold rows in first);
- the ledger's last row is the one the index was filled at: anything appended takes the full path, which
  catches up and fills again;
- the format, the code (``briefcache._code``) and the time zone (DuckDB shows times in it) are the fill's;
- every task it shows has the key it was checked with: an edit journal row, a moved head anchor, a new view
  snapshot, a changed registry or archive takes the full path, which answers, refuses or refills.

Ranking is ``projections.find``'s. A task's score, the sum over its places of (words the place holds) x (the
place's weight), is the sum over the words of the weights of the places holding it: each word is one FTS5
query counted by (task, kind) from the rowid alone (``_rowid`` packs task, kind and position), no row read.
The places shown are taken tier by tier (score, then position, as the query's ``max_by`` orders them) with
``ORDER BY rowid DESC`` reads that stop at ``find.SHOWN``. A word matches as ``contains`` on the lower-cased
text does: an FTS5 trigram phrase (case-sensitive, over the lower-cased text) for three characters or more,
``instr`` for fewer. With a cipher key set no index is kept (it would hold the ledger's text in plain).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from ledger.app import briefcache
from ledger.app.briefcache import Miss
from ledger.base.ledger_file import sqlite_ledger
from projections import find

if TYPE_CHECKING:
    from pathlib import Path

    from ledger.app.store import Ledger

READ_MODEL = ".duckdb"
"""The read model of the SQLite ledger ``L`` is the file ``L.duckdb`` (``projections.readmodel.readmodel_path``)."""
FORMAT = "2"
"""Bumped when what the file holds changes meaning: an index of another format is filled anew."""
SUFFIX = ".find"
"""The index of the ledger ``L`` is the file ``L.find``."""
TASK_SHIFT, KIND_SHIFT = 40, 32
"""A place's rowid: its task's number in the index, its kind's code and its position, packed (``_rowid``)."""
TASKS_MAX, KINDS_MAX, POSITION_MAX = 2**23 - 1, 255, 2**32 - 1
VERIFY_ROWS = 20_000
"""Rows re-hashed at a time while a task is checked (``verify.rows_problem`` holds them all in memory)."""
DATE_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M")
"""`trail find --since`'s formats, tried in turn (as click.DateTime tries them)."""
STATUSES = ("active", "paused", "blocked", "done", "abandoned")
"""`trail find --status`'s choices."""

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tasks (
    seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL UNIQUE, number INTEGER, title TEXT, status TEXT, cwd TEXT,
    updated_at TEXT, updated_us INTEGER, last_position INTEGER, branch_at INTEGER, verified INTEGER NOT NULL DEFAULT 0,
    key TEXT);
CREATE TABLE actors (seq INTEGER NOT NULL, actor TEXT NOT NULL, PRIMARY KEY (seq, actor)) WITHOUT ROWID;
CREATE TABLE kinds (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE places USING fts5(text UNINDEXED, low, tokenize = 'trigram case_sensitive 1');
"""


def index_file(ledger: str) -> str:
    """The find index of the SQLite ledger at real path ``ledger``."""
    return ledger + SUFFIX


def index_files(ledger: str) -> list[str]:
    """The index and its journal: what is removed with the read model (``forget``)."""
    return [index_file(ledger), index_file(ledger) + "-journal"]


# -- answering ----------------------------------------------------------------------------------------------


class Asked(NamedTuple):
    """A `trail find` as its command line asked it, before anything is resolved."""

    words: list[str]
    limit: int = 10
    project: str | None = None
    here: bool = False
    statuses: tuple[str, ...] = ()
    since: str | None = None
    agent: str | None = None
    as_json: bool = False


def cached_find(asked: Asked, db: str | None) -> str | None:
    """What `trail [--db DB] find ...` prints, or None when the full path must answer."""
    try:
        only = _only(asked)
        ledger = briefcache.fast_ledger(db)
        model = _model_print(str(sqlite_ledger(db)) + READ_MODEL)
        with briefcache.reading(ledger) as con:
            briefcache.inbox(con, 1)
            found = _answer(con, ledger, model, asked.words, asked.limit, only)
    except (Miss, OSError, sqlite3.Error, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return None
    if asked.as_json:
        return json.dumps(find.as_records(found), indent=2, ensure_ascii=False) + "\n"
    text = find.as_text(found, asked.words, only != find.Only())
    # click.echo strips ANSI sequences when stdout is no terminal: such a text takes the full path.
    return None if "\x1b" in text else text


def _only(asked: Asked) -> find.Only:
    """The tasks looked in, resolved as the full path resolves them; Miss where the full path says what is wrong."""
    from ledger.base.project import current_project, project_of

    project = asked.project
    if asked.here:
        if project is not None:
            raise Miss("--here and --project")
        project = current_project()
        if project is None:
            raise Miss("no project here")
    elif project is not None and ("/" in project or project in (".", "..", "~")):
        project = project_of(project)
    since = None
    if asked.since is not None:
        for form in DATE_FORMATS:
            try:
                since = datetime.strptime(asked.since, form).replace(tzinfo=UTC)
                break
            except ValueError:
                continue
        else:
            raise Miss("a date the full path refuses")
    if any(s not in STATUSES for s in asked.statuses) or not asked.words:
        raise Miss("a choice the full path refuses")
    return find.Only(project=project, statuses=asked.statuses, since=since, agent=asked.agent)


def _opened_index(ledger: str) -> sqlite3.Connection:
    path = index_file(ledger)
    if not os.path.isfile(path):
        raise Miss("no find index")
    from ledger.base.ledger_file import read_only_uri

    con = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None, timeout=2)
    con.execute("BEGIN")
    return con


def _answer(con: sqlite3.Connection, ledger: str, model: str, words: list[str], limit: int,
            only: find.Only) -> list[find.Found]:
    index = _opened_index(ledger)
    try:
        meta = dict(index.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != FORMAT or meta.get("filled") != _filled_at(con) or meta.get("setting") != _setting():
            raise Miss("the index was filled at another point")
        if meta.get("readmodel") != model:
            raise Miss("the read model is not the one the index was filled from")  # rebuilt, say: from other rows
        found = search(index, words, limit, only)
        keys = dict(index.execute("SELECT number, key FROM tasks").fetchall())
        ids = dict(index.execute("SELECT number, task_id FROM tasks").fetchall())
        for task in found:
            key = keys.get(task.number)
            if key is None or briefcache.task_key(con, ledger, ids[task.number])[0] != key:
                raise Miss("a task shown is not as it was checked")
        return found
    finally:
        index.close()


def _filled_at(con: sqlite3.Connection) -> str:
    """The ledger's last row (notification id, aggregate, position): what the index was filled at."""
    row = con.execute("SELECT rowid, originator_id, originator_version FROM stored_events "
                      "ORDER BY rowid DESC LIMIT 1").fetchone()
    return json.dumps(list(row) if row else None)


def _model_print(path: str) -> str:
    """The read model file at ``path`` (and its WAL) as it is now: the full path answers from this file, and a
    rebuilt one may hold other texts (rows edited since the index was filled) that the full path refuses."""
    found: list[list[int] | None] = []
    for name in (path, path + ".wal"):
        try:
            seen = os.stat(name)
            found.append([seen.st_ino, seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns])
        except FileNotFoundError:
            found.append(None)
    return json.dumps([os.path.realpath(path), found])


def _setting() -> str:
    """What else the full path's answer depends on: the code, and the time zone DuckDB shows times in."""
    return json.dumps([briefcache._code(), os.environ.get("TZ")])


class _Task(NamedTuple):
    seq: int
    number: int
    title: str
    status: str
    cwd: str | None
    updated_at: str | None
    updated_us: int | None
    actors: set[str]

    def kept(self, only: find.Only) -> bool:
        """Whether ``only`` looks in this task (``find.Only.where`` in Python)."""
        if only.project is not None:
            if self.cwd is None:
                return False
            if only.project.startswith("/"):
                project = only.project.rstrip("/") or "/"
                if not (self.cwd == project or self.cwd.startswith(project.rstrip("/") + "/")):
                    return False
            else:
                name = only.project.strip("/")
                if not (self.cwd.rsplit("/", 1)[-1] == name or f"/{name}/" in self.cwd):
                    return False
        if only.statuses and self.status not in only.statuses:
            return False
        if only.since is not None and (self.updated_us is None or self.updated_us < _micros(only.since)):
            return False
        agent = f"agent:{only.agent}"
        return only.agent is None or any(a == agent or a.startswith(agent + "/") for a in self.actors)


def _micros(when: datetime) -> int:
    return int(when.timestamp()) * 1_000_000 + when.microsecond


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _long(word: str) -> bool:
    """Whether the trigram index can find ``word`` (three characters or more)."""
    return len(word) >= 3


def _where(words: list[str], every: bool) -> tuple[str, list[Any]]:
    """A condition on ``places`` for the rows holding every one (or any one) of ``words``, and its parameters."""
    long = [w for w in words if _long(w)]
    short = [w for w in words if not _long(w)]
    if every:
        parts, params = (["places MATCH ?"], [" AND ".join(map(_phrase, long))]) if long else ([], [])
        parts += ["instr(low, ?) > 0"] * len(short)
        return " AND ".join(parts) or "TRUE", params + short
    if short:  # a short word can be anywhere: every row is read
        return "(" + " OR ".join(["instr(low, ?) > 0"] * len(words)) + ")", list(words)
    return "places MATCH ?", [" OR ".join(map(_phrase, long))]


def search(index: sqlite3.Connection, words: list[str], limit: int, only: find.Only) -> list[find.Found]:
    """``find.sql``'s answer, from the index: the tasks holding every one of ``words``, best first."""
    kinds = dict(index.execute("SELECT code, name FROM kinds").fetchall())
    weight = {code: find.WEIGHTS.get(name, 1) for code, name in kinds.items()}
    sizes = dict(index.execute("SELECT seq, last_position FROM tasks").fetchall())
    scores: dict[int, int] = {}
    present: dict[int, set[int]] = {}
    for i, word in enumerate(words):
        held: set[int] = set()
        for seq, code, count in _counts(index, word, sizes, list(kinds)):
            if i == 0 or seq in scores:
                held.add(seq)
                scores[seq] = scores.get(seq, 0) + count * weight[code]
                present.setdefault(seq, set()).add(code)
        scores = {seq: score for seq, score in scores.items() if seq in held}
    if not scores:
        return []
    tasks = _tasks(index, set(scores), only.agent is not None)
    chosen = sorted((t for t in tasks.values() if t.kept(only)),
                    key=lambda t: (-scores[t.seq], -(t.updated_us or 0), -t.number))[:limit]
    return [find.Found(t.number, t.title, t.status, t.cwd,
                       datetime.fromisoformat(t.updated_at) if t.updated_at else None, scores[t.seq],
                       _shown(index, t.seq, words, {c: weight[c] for c in present[t.seq]}, kinds))
            for t in chosen]


BIG = 10_000
"""A task of this many events or more has its places counted kind by kind over its own rowid ranges; the
others are counted together, a run of them at a time (a GROUP BY sorts every row it counts: 40 ms for a
word in 131,000 places of one task, where the ranges' counts take 8)."""


def _counts(index: sqlite3.Connection, word: str, sizes: dict[int, int], codes: list[int]) -> Iterator[
        tuple[int, int, int]]:
    """(task, kind, how many of its places of that kind hold ``word``), for each that holds it."""
    where, params = _where([word], every=True)
    count = f"SELECT count(*) FROM places WHERE {where} AND rowid BETWEEN ? AND ?"
    group = (f"SELECT rowid >> {KIND_SHIFT}, count(*) FROM places WHERE {where} AND rowid BETWEEN ? AND ? "
             "GROUP BY 1")
    run: list[int] = []
    big = [seq for seq in sorted(sizes) if (sizes[seq] or 0) >= BIG]
    for seq in sorted(sizes):
        if seq not in big:
            run.append(seq)
        if run and (seq in big or seq == max(sizes)):  # the small tasks since the last big one, together
            for packed, found in index.execute(group, [*params, run[0] << TASK_SHIFT,
                                                       ((run[-1] + 1) << TASK_SHIFT) - 1]):
                yield packed >> (TASK_SHIFT - KIND_SHIFT), packed & KINDS_MAX, found
            run = []
        for code in codes if seq in big else ():
            (found,) = index.execute(count, [*params, *_span(seq, code)]).fetchone()
            if found:
                yield seq, code, found


def _tasks(index: sqlite3.Connection, seqs: set[int], actors: bool) -> dict[int, _Task]:
    found = {seq: _Task(seq, number, title, status, cwd, updated_at, updated_us, set())
             for seq, number, title, status, cwd, updated_at, updated_us in index.execute(
                 "SELECT seq, number, title, status, cwd, updated_at, updated_us FROM tasks") if seq in seqs}
    if actors:
        for seq, actor in index.execute("SELECT seq, actor FROM actors"):
            if seq in found:
                found[seq].actors.add(actor)
    return found


def _shown(index: sqlite3.Connection, seq: int, words: list[str], weights: dict[int, int],
           kinds: dict[int, str]) -> tuple[find.Match, ...]:
    """The task's ``find.SHOWN`` best places: highest (words held x weight), then latest, as ``max_by`` keeps them.

    Tiers of one score are read together and merged by position; a tier of every word is one FTS5 query
    (``_every``), one of fewer words reads the kind's rows holding any word, latest first, until it has
    enough (``_Fewer``)."""
    n = len(words)
    tiers = sorted(((held * w, held, code) for code, w in weights.items() for held in range(n, 0, -1)), reverse=True)
    fewer: dict[int, _Fewer] = {}
    shown: list[tuple[int, int]] = []  # (position, code)
    at = 0
    while at < len(tiers) and len(shown) < find.SHOWN:
        score = tiers[at][0]
        same: list[tuple[int, int]] = []
        while at < len(tiers) and tiers[at][0] == score:
            _, held, code = tiers[at]
            if held == n:
                same += [(p, code) for p in _every(index, seq, code, words)]
            else:
                if code not in fewer:
                    fewer[code] = _Fewer(index, seq, code, words)
                same += [(p, code) for p in fewer[code].holding(held)]
            at += 1
        shown += sorted(same, reverse=True)[: find.SHOWN - len(shown)]
    if not shown:
        raise Miss("a task found with no place shown")
    texts = {rowid: text for rowid, text in index.execute(
        f"SELECT rowid, text FROM places WHERE rowid IN ({', '.join('?' * len(shown))})",
        [_rowid(seq, code, p) for p, code in shown])}
    return tuple(find.Match(p, kinds[code], texts[_rowid(seq, code, p)]) for p, code in shown)


def _span(seq: int, code: int) -> tuple[int, int]:
    return _rowid(seq, code, 0), _rowid(seq, code, POSITION_MAX)


def _every(index: sqlite3.Connection, seq: int, code: int, words: list[str]) -> list[int]:
    """The latest ``find.SHOWN`` positions of the task's places of kind ``code`` holding every word."""
    where, params = _where(words, every=True)
    return [rowid & POSITION_MAX for (rowid,) in index.execute(
        f"SELECT rowid FROM places WHERE {where} AND rowid BETWEEN ? AND ? ORDER BY rowid DESC LIMIT ?",
        [*params, *_span(seq, code), find.SHOWN])]


class _Fewer:
    """The task's places of one kind holding some of the words, read latest first as far as needed, sorted by
    how many words each holds."""

    def __init__(self, index: sqlite3.Connection, seq: int, code: int, words: list[str]) -> None:
        where, params = _where(words, every=False)
        self.rows: Iterator[tuple[int, str]] = index.execute(
            f"SELECT rowid, low FROM places WHERE {where} AND rowid BETWEEN ? AND ? ORDER BY rowid DESC",
            [*params, *_span(seq, code)])
        self.words = words
        self.by_held: dict[int, list[int]] = {}

    def holding(self, held: int) -> list[int]:
        """The latest ``find.SHOWN`` positions of places holding exactly ``held`` of the words."""
        kept = self.by_held.setdefault(held, [])
        while len(kept) < find.SHOWN:
            row = next(self.rows, None)
            if row is None:
                break
            count = sum(w in row[1] for w in self.words)
            self.by_held.setdefault(count, []).append(row[0] & POSITION_MAX)
        return kept[: find.SHOWN]


def _rowid(seq: int, code: int, position: int) -> int:
    return (seq << TASK_SHIFT) | (code << KIND_SHIFT) | position


# -- filling ------------------------------------------------------------------------------------------------


def fill(ledger: Ledger, ledger_file: str, readmodel: Path, checked: Mapping[str, str] | None = None) -> None:
    """Bring the index of the SQLite ledger at ``ledger_file`` (its real path) up to the read model at
    ``readmodel``, just caught up, and key each task that passes a read's checks. ``checked``: tasks (id hex)
    this process has just loaded through a read's checks (``verify.checked_state``), each with its key as read
    before them (``briefcache.task_keys``); while the key is still that one, the load is not made again (at a
    million events it is most of a find's second). Never fails the command: an index that cannot be filled is
    a miss next time (and removed, so no stale one is read)."""
    from ledger.base import atrest

    path = index_file(ledger_file)
    if atrest.key_set():
        _remove(path)
        return
    try:
        _fill(ledger, ledger_file, readmodel, path, checked or {})
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc):  # another process fills it: that one's fill stands
            _remove(path)
    except (Miss, OSError, sqlite3.Error, ValueError, KeyError, TypeError, OverflowError):
        _remove(path)


def _remove(path: str) -> None:
    for name in (path, path + "-journal"):
        with suppress(FileNotFoundError):
            os.unlink(name)


def _fill(ledger: Ledger, ledger_file: str, readmodel: Path, path: str, checked: Mapping[str, str]) -> None:
    from ledger.base import private

    private.folder(readmodel.parent)
    index = sqlite3.connect(path, isolation_level=None, timeout=15)
    try:
        os.chmod(path, 0o600)
        index.execute("BEGIN IMMEDIATE")  # one filler at a time; readers see the last fill until it commits
        position = _mirror(index, readmodel, _meta(index))
        with briefcache.reading(ledger_file) as con:
            filled = _filled_at(con)
        # Filled at the ledger's last row only if the read model had read up to it: a write since the catch-up
        # leaves the index behind, and the next full path fills it.
        last = json.loads(filled)
        index.execute("INSERT OR REPLACE INTO meta VALUES ('filled', ?), ('setting', ?), ('readmodel', ?)",
                      [filled if last and last[0] == position else "behind", _setting(), _model_print(str(readmodel))])
        _check(index, ledger, ledger_file, filled, checked)
        index.execute("COMMIT")
    finally:
        index.close()


def _meta(index: sqlite3.Connection) -> dict[str, str]:
    """The index's meta rows; the schema made afresh when it is of another format (or new)."""
    found = index.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    meta = dict(index.execute("SELECT key, value FROM meta").fetchall()) if found else {}
    if meta.get("format") == FORMAT:
        return meta
    for name in ("places", "meta", "tasks", "actors", "kinds"):  # the virtual table takes its own tables along
        index.execute(f"DROP TABLE IF EXISTS {name}")
    for statement in SCHEMA.split(";"):
        if statement.strip():
            index.execute(statement)
    index.execute("INSERT INTO meta VALUES ('format', ?)", [FORMAT])
    return {"format": FORMAT}


def _mirror(index: sqlite3.Connection, readmodel: Path, meta: dict[str, str]) -> int:
    """Copy into the index what the read model holds of each task that changed since the last fill: every
    task when the read model was rebuilt or read archives since (its position is then no guide). The read
    model's position."""
    from uuid import UUID

    from projections import readmodel as model

    with model.connect(readmodel, read_only=True) as duck:
        read_to = int(_one(duck, "SELECT max(notification_id) FROM position") or 0)
        archives = _one(duck, "SELECT count(*) FROM archives_read")
        since = int(meta.get("position", "0"))
        whole = read_to < since or str(archives) != meta.get("archives", "0")
        changed = {row[0] for row in duck.execute(
            "SELECT DISTINCT task_id FROM events WHERE notification_id > ? OR ?",
            [0 if whole else since, whole]).fetchall()}
        held = dict(index.execute("SELECT task_id, seq FROM tasks").fetchall())
        tasks = {row[0]: row for row in duck.execute(
            "SELECT t.task_id, t.number, t.title, lower(t.title), t.status, t.cwd, t.updated_at, t.last_position, b.at "
            "FROM tasks t LEFT JOIN branch_points b USING (task_id)").fetchall()}
        for gone in set(held) - {UUID(t).hex for t in tasks}:
            _drop(index, held.pop(gone))
        kinds = dict(index.execute("SELECT name, code FROM kinds").fetchall())
        for task_id in sorted(changed & set(tasks)):
            hexed = UUID(task_id).hex
            _, number, title, low, status, cwd, updated, last, branch_at = tasks[task_id]
            old = index.execute("SELECT seq, last_position, branch_at, verified FROM tasks WHERE task_id = ?",
                                [hexed]).fetchone()
            seq = old[0] if old else _new_seq(index)
            if seq > TASKS_MAX:
                raise Miss("too many tasks to pack")
            if whole or old is None or old[1] is None or old[2] != branch_at:
                _drop(index, seq)  # new, or its copied rows moved: the task afresh
                rows, after = _places(duck, task_id, None), 0
            else:
                rows, after = _changed_places(index, duck, task_id, seq, old[1], since, kinds), since
            index.execute("DELETE FROM tasks WHERE seq = ?", [seq])
            # Its rows re-hashed so far stay so (an edit of one is journaled, and its key then never holds);
            # its key is made again after the checks (``_check``).
            index.execute(
                "INSERT INTO tasks (seq, task_id, number, title, status, cwd, updated_at, updated_us, last_position, "
                "branch_at, verified) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [seq, hexed, number, title, status, cwd, updated.isoformat() if updated else None,
                 _micros(updated) if updated else None, last, branch_at, old[3] if old else 0])
            if title is not None:
                rows.append((1, "title", title, low))
            for position, kind, _, _ in rows:
                if kind not in kinds:
                    kinds[kind] = len(kinds) + 1
                    index.execute("INSERT INTO kinds VALUES (?, ?)", [kinds[kind], kind])
                if kinds[kind] > KINDS_MAX or not 0 <= position <= POSITION_MAX:
                    raise Miss("a place that cannot be packed")
            index.executemany("INSERT INTO places (rowid, text, low) VALUES (?, ?, ?)",
                              [(_rowid(seq, kinds[kind], position), text, low) for position, kind, text, low in rows])
            index.executemany("INSERT OR IGNORE INTO actors VALUES (?, ?)", [(seq, actor) for (actor,) in duck.execute(
                "SELECT DISTINCT actor FROM events WHERE task_id = ? AND notification_id > ? AND actor IS NOT NULL",
                [task_id, after]).fetchall()])
        index.execute("INSERT OR REPLACE INTO meta VALUES ('position', ?), ('archives', ?)",
                      [str(read_to), str(archives)])
    return read_to


def _places(duck: Any, task_id: str, where: str | None, params: list[Any] | None = None) -> list[Any]:
    """The read model's places of one task (those ``where`` says), a branch's copied ones left out."""
    from projections.queries import COPIED

    return list(duck.execute(
        f"SELECT position, kind, text, low FROM places f WHERE task_id = ? AND low IS NOT NULL "
        f"AND NOT EXISTS ({COPIED}){f' AND ({where})' if where else ''}", [task_id, *(params or [])]).fetchall())


def _changed_places(index: sqlite3.Connection, duck: Any, task_id: str, seq: int, last: int, since: int,
                    kinds: dict[str, int]) -> list[Any]:
    """The read model's places of a task the index holds up to position ``last`` (at notification ``since``) that
    may differ from the index's, which are taken out of the index: those after ``last``, those at a position a
    later event changed (an attempt ended, a requirement reworded or reclassified: ``readmodel._Batch``), its last
    words (one place, moved to the newest reply) and its title. Only these, so a write costs the new rows."""
    touched = sorted({int(p) for (p,) in duck.execute(
        "SELECT DISTINCT TRY_CAST(x AS BIGINT) FROM (SELECT unnest([payload->>'attempt', payload->>'supersedes', "
        "payload->>'target']) AS x FROM events WHERE task_id = ? AND notification_id > ?) WHERE x IS NOT NULL",
        [task_id, since]).fetchall() if p is not None and 0 <= p <= POSITION_MAX})
    for name, code in kinds.items():
        index.execute("DELETE FROM places WHERE rowid BETWEEN ? AND ?",
                      [_rowid(seq, code, last + 1), _rowid(seq, code, POSITION_MAX)])
        if name in (find.LAST_WORDS, "title"):
            index.execute("DELETE FROM places WHERE rowid BETWEEN ? AND ?", _span(seq, code))
        index.executemany("DELETE FROM places WHERE rowid = ?", [(_rowid(seq, code, p),) for p in touched])
    return _places(duck, task_id, "position > ? OR kind = ? OR list_contains(?, position)",
                   [last, find.LAST_WORDS, touched or [-1]])


def _one(duck: Any, sql: str) -> Any:
    row = duck.execute(sql).fetchone()
    return row[0] if row else None


def _new_seq(index: sqlite3.Connection) -> int:
    return int(index.execute("SELECT coalesce(max(seq), 0) + 1 FROM tasks").fetchone()[0])


def _drop(index: sqlite3.Connection, seq: int) -> None:
    """Everything the index holds of one task."""
    index.execute("DELETE FROM places WHERE rowid BETWEEN ? AND ?", [seq << TASK_SHIFT, ((seq + 1) << TASK_SHIFT) - 1])
    index.execute("DELETE FROM actors WHERE seq = ?", [seq])
    index.execute("DELETE FROM tasks WHERE seq = ?", [seq])


def _check(index: sqlite3.Connection, ledger: Ledger, ledger_file: str, filled: str,
           checked: Mapping[str, str]) -> None:
    """Key each task whose key is not its own any more: once it passes a read's checks with every row after the
    last re-hashed one re-hashed, its key is the one read before the checks, if it is the one read after them
    too and nothing was appended meanwhile (else the next fill tries again). A task in ``checked`` under the
    key read now passed the load's checks after that key was read: they are not made again."""
    from uuid import UUID

    from ledger.app import verify

    entries = {e.task_id.hex: e for e in ledger.entries()}
    for seq, task, verified, stored in index.execute("SELECT seq, task_id, verified, key FROM tasks").fetchall():
        with briefcache.reading(ledger_file) as con:
            try:
                key, _, last = briefcache.task_key(con, ledger_file, task)
            except Miss:
                key, last = None, 0
        if key is not None and key == stored and verified >= last:
            continue
        entry = entries.get(task)
        passed = key is not None and entry is not None
        try:
            if passed and entry is not None and checked.get(task) != key:
                verify.checked_state(ledger, UUID(task), entry=entry)
                for after in range(verified, last, VERIFY_ROWS):
                    if verify.rows_problem(ledger, UUID(task), after, min(after + VERIFY_ROWS, last)) is not None:
                        passed = False
                        break
        except verify.LedgerBroken:
            passed = False
        with briefcache.reading(ledger_file) as con:
            try:
                again = briefcache.task_key(con, ledger_file, task)[0]
            except Miss:
                again = None
            same = _filled_at(con) == filled
        if passed and again == key and same:
            index.execute("UPDATE tasks SET key = ?, verified = ? WHERE seq = ?", [key, last, seq])
        else:
            index.execute("UPDATE tasks SET key = NULL WHERE seq = ?", [seq])
