"""The DuckDB read model: the ledger's events as analytical tables, caught up incrementally.

This module is the I/O edge for DuckDB (every other projection is pure). It follows the
ledger's notification log from the last position it recorded; the rows for a batch of
notifications and the new position commit in one DuckDB transaction, so a crash loses
at most the batch in flight and a refresh after N new events reads only those N. The
position is kept through the library's tracking interface (``Position``, a
``TrackingRecorder`` over a DuckDB table; docs/readmodel.md says why the library's runners
are not used). What each event contributes to the rows comes from ``projections.facts``,
the definitions the task state's fold uses too.

DuckDB lets one process hold a database file read-write at a time, and then no other
process may open it at all, so every public function opens the file, does its work and
closes it again; a contended open is retried for ``LOCK_WAIT`` seconds.

Where it lives: beside an SQLite ledger as ``<ledger file>.duckdb``; for any other
backend under ``$TRAIL_HOME/readmodel/<hash of the URL>.duckdb`` (hashed so that a URL
holding a password never appears in a file name). With a cipher key set (``ledger.base.atrest``) the
model would hold the ledger's text in plain, so it is never kept: each process builds its own in a private
temporary folder and removes it as it exits (``_unkept``), and a kept one left from before is removed.
"""

from __future__ import annotations

import atexit
import hashlib
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

import duckdb
import orjson
from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder

from ledger.base import atrest, private
from ledger.base.errors import TrailError
from ledger.base.location import Location
from ledger.domain import events as ev
from ledger.domain.mapper import stored_state
from ledger.domain.registry import RegistryCreated, RegistrySnapshot, TaskForgotten, TaskRegistered
from ledger.stores import archived, duckdb_offline
from projections import facts, find

if TYPE_CHECKING:
    from eventsourcing.persistence import ApplicationRecorder


class Log(archived.Source, Protocol):
    """What the read model reads: a ledger's notification log by name, and its archives (the Ledger is
    one; taken as this so the read model sits below the application that opens ledgers)."""

    @property
    def name(self) -> str: ...

    @property
    def recorder(self) -> ApplicationRecorder: ...

SCHEMA_VERSION = "6"
"""Bump when a table changes: a read model with another version is rebuilt from the log."""

BATCH = 5_000
"""Notifications per DuckDB transaction during catch-up."""

LOCK_WAIT = 15.0
"""Seconds to wait for another process that has the read model open."""

_SKIPPED_TOPICS = frozenset(
    {RegistryCreated.TOPIC, TaskRegistered.TOPIC, RegistrySnapshot.TOPIC}
)  # the registry's facts are repeated in each TaskOpened, which is what fills ``tasks``

_COMMON = frozenset({"originator_id", "originator_version", "timestamp", "actor", "causation", "chain", "source"})

SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE position (application VARCHAR PRIMARY KEY, notification_id BIGINT NOT NULL);
CREATE TABLE archives_read (name VARCHAR PRIMARY KEY);
CREATE TABLE events (
    notification_id BIGINT NOT NULL, task_id VARCHAR NOT NULL, task_number INTEGER,
    position INTEGER NOT NULL, type VARCHAR NOT NULL, timestamp TIMESTAMPTZ NOT NULL,
    actor VARCHAR, causation INTEGER, chain VARCHAR, payload JSON);
CREATE TABLE tasks (
    task_id VARCHAR PRIMARY KEY, number INTEGER, title VARCHAR, slug VARCHAR, cwd VARCHAR,
    status VARCHAR, status_reason VARCHAR, opened_at TIMESTAMPTZ, updated_at TIMESTAMPTZ,
    events INTEGER, last_position INTEGER, open_attempt INTEGER, attempts INTEGER,
    attempts_failed INTEGER, commands INTEGER, commands_failed INTEGER, file_changes INTEGER,
    next_step VARCHAR);
CREATE TABLE files (
    task_id VARCHAR, task_number INTEGER, position INTEGER, timestamp TIMESTAMPTZ, path VARCHAR,
    operation VARCHAR, renamed_from VARCHAR, before_sha256 VARCHAR, after_sha256 VARCHAR,
    diff_size BIGINT, attempt INTEGER);
CREATE TABLE attempts (
    task_id VARCHAR, task_number INTEGER, position INTEGER, started_at TIMESTAMPTZ, text VARCHAR,
    actor VARCHAR, outcome VARCHAR, failed BOOLEAN, reason VARCHAR, ended_position INTEGER, ended_at TIMESTAMPTZ);
CREATE TABLE commands (
    task_id VARCHAR, task_number INTEGER, position INTEGER, timestamp TIMESTAMPTZ, line VARCHAR,
    cwd VARCHAR, exit_code INTEGER, failed BOOLEAN, read_only BOOLEAN, duration_ms BIGINT, output_tail VARCHAR,
    attempt INTEGER);
CREATE TABLE tests (
    task_id VARCHAR, task_number INTEGER, position INTEGER, timestamp TIMESTAMPTZ, name VARCHAR,
    outcome VARCHAR, failing BOOLEAN, duration_ms BIGINT, message VARCHAR, attempt INTEGER);
CREATE TABLE decisions (
    task_id VARCHAR, task_number INTEGER, position INTEGER, timestamp TIMESTAMPTZ, text VARCHAR,
    reason VARCHAR, rejected VARCHAR[], actor VARCHAR);
CREATE TABLE intents (
    task_id VARCHAR, task_number INTEGER, position INTEGER, timestamp TIMESTAMPTZ, kind VARCHAR, text VARCHAR,
    wrong VARCHAR, actor VARCHAR, wordings INTEGER, changed_at INTEGER);
CREATE TABLE places (
    task_id VARCHAR, position INTEGER, kind VARCHAR, text VARCHAR, low VARCHAR);
CREATE VIEW branch_points AS
    -- A branch starts with copies of its origin's events, up to its branched_from link: counted once, there.
    SELECT task_id, min(position) AS at FROM events
    WHERE type = 'TaskLinked' AND payload->>'relation' = 'branched_from' GROUP BY task_id;
CREATE VIEW current_tests AS
    SELECT * FROM tests QUALIFY row_number() OVER (PARTITION BY task_id, name ORDER BY position DESC) = 1;
CREATE VIEW current_files AS
    WITH gone AS (
        SELECT task_id, renamed_from AS path, max(position) AS position FROM files
        WHERE renamed_from IS NOT NULL AND renamed_from <> path GROUP BY ALL),
    live AS (
        SELECT f.* FROM files f LEFT JOIN gone g ON g.task_id = f.task_id AND g.path = f.path
        WHERE g.position IS NULL OR f.position > g.position),
    -- The net status, as the state folds it: a file created, then edited, is still created.
    netted AS (
        SELECT *, last_value(CASE WHEN operation <> 'modified' THEN operation END IGNORE NULLS) OVER (
            PARTITION BY task_id, path ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
        FROM live)
    SELECT task_id, task_number, path,
           CASE WHEN operation = 'modified' AND before = 'created' THEN 'created' ELSE operation END AS operation,
           position, timestamp, before_sha256, after_sha256, diff_size,
           count(*) OVER (PARTITION BY task_id, path) AS changes, attempt
    FROM netted QUALIFY row_number() OVER (PARTITION BY task_id, path ORDER BY position DESC) = 1;
"""

TABLES = ("events", "tasks", "files", "attempts", "commands", "tests", "decisions", "intents", "places")
_ROW_TABLES = ("events", "files", "commands", "tests", "decisions")
"""Tables a row is only ever added to."""
_KEYED_TABLES = ("attempts", "intents")
"""Tables whose rows a later event changes (an attempt's end, a rewording): kept by (task, position)."""


def _ordered_columns(table: str) -> tuple[str, ...]:
    """Column names of ``table`` in declaration order, parsed from ``SCHEMA``."""
    body = re.search(rf"CREATE TABLE {table} \((.*?)\);", SCHEMA, re.S)
    assert body is not None
    return tuple(m.group(1) for m in re.finditer(r"(?:^|,)\s*(\w+) [A-Z]", body.group(1)))


COLUMNS: dict[str, tuple[str, ...]] = {
    name: _ordered_columns(name) for name in re.findall(r"CREATE TABLE (\w+)", SCHEMA)
}


class ReadModelError(TrailError):
    """The read model cannot be opened, refreshed or queried."""

    exit_code = 5


def readmodel_path(location: Location) -> Path:
    """Where the read model for the ledger at ``location`` lives (see the module docstring)."""
    if location.is_sqlite:
        ledger = location.sqlite_path
        kept = ledger.with_name(ledger.name + ".duckdb")
    else:
        digest = hashlib.sha256(location.key.encode()).hexdigest()[:16]  # the URL without its password
        kept = location.home / "readmodel" / f"{digest}.duckdb"
    if not atrest.key_set():
        return kept
    for stale in (kept, Path(f"{kept}.wal")):
        stale.unlink(missing_ok=True)  # plaintext of an encrypted ledger (a read model from before its key)
    return _unkept(kept)


_UNKEPT: dict[str, Path] = {}


def _unkept(kept: Path) -> Path:
    """This process's own stand-in for the read model ``kept``, in a private temporary folder removed at exit."""
    if str(kept) not in _UNKEPT:
        folder = Path(tempfile.mkdtemp(prefix="tasktrail-readmodel-"))  # 0700
        atexit.register(shutil.rmtree, folder, True)
        _UNKEPT[str(kept)] = folder / kept.name
    return _UNKEPT[str(kept)]


SANDBOX: dict[str, str | bool] = {
    # Only the model's own files (DuckDB allows them itself): no read_csv/read_text of other files,
    # no COPY TO, ATTACH, EXPORT, INSTALL or LOAD.
    "enable_external_access": False,
    # DuckDB would also allow the whole "<model>.duckdb.tmp/" folder, where COPY TO could then write;
    # with no temporary folder a query that outgrows memory fails instead of spilling.
    "temp_directory": "",
    # Below the query child's address space (``capped_query.MEMORY_BYTES``), so DuckDB fails first, cleanly.
    "memory_limit": "1GB",
}
"""Connect-time settings of a sandboxed connection (on top of ``duckdb_offline.OFFLINE``); locked after."""


@contextmanager
def connect(
    path: Path, *, read_only: bool = False, sandbox: bool = False, wait: float = LOCK_WAIT
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open ``path``, retrying while another process holds it, and always close it again.

    ``sandbox``: read-only, ``SANDBOX`` settings, and the configuration locked, so that no statement
    can SET any of them back (docs/readmodel.md, "Query modes").
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            con = duckdb_offline.connect(
                str(path), read_only=read_only or sandbox, config=SANDBOX if sandbox else None
            )
            break
        except duckdb.IOException as exc:
            # Another process has the file open; it closes as soon as its catch-up ends.
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise ReadModelError(f"cannot open read model {path}: {_first_line(exc)}") from exc
            time.sleep(0.05)
        except duckdb.Error as exc:
            raise ReadModelError(f"cannot open read model {path}: {_first_line(exc)}") from exc
    try:
        if sandbox:
            con.execute("SET lock_configuration = true")
        yield con
    finally:
        con.close()


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# -- catching up ----------------------------------------------------------------------


class Position(TrackingRecorder):
    """The read model's place in the ledger's log, through the library's tracking interface.

    The ``position`` table is the tracking table, one row per application (the ledger's
    name). ``insert_tracking`` runs inside a batch's transaction, so rows and position
    commit together; like the library's recorders it refuses to record a position that
    is not past the one recorded (``IntegrityError``). ``has_tracking_id`` and ``wait``
    come from ``TrackingRecorder``.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def insert_tracking(self, tracking: Tracking) -> None:
        recorded = self.max_tracking_id(tracking.application_name)
        if recorded is not None and recorded >= tracking.notification_id:
            raise IntegrityError(
                f"read model is at {recorded} of {tracking.application_name}, not before {tracking.notification_id}"
            )
        self.con.execute(
            "INSERT OR REPLACE INTO position VALUES (?, ?)", [tracking.application_name, tracking.notification_id]
        )

    def max_tracking_id(self, application_name: str) -> int | None:
        row = self.con.execute(
            "SELECT notification_id FROM position WHERE application = ?", [application_name]
        ).fetchone()
        return int(row[0]) if row else None


@dataclass(frozen=True)
class Refreshed:
    events: int
    """Task events added by this refresh."""
    notifications: int
    """Notifications read (task events plus the registry's, which are skipped)."""
    position: int
    """Notification id the read model is now at."""
    rebuilt: bool
    seconds: float


@dataclass
class _TaskRow:
    task_id: str
    number: int | None = None
    title: str | None = None
    slug: str | None = None
    cwd: str | None = None
    status: str = "active"
    status_reason: str | None = None
    opened_at: Any = None
    updated_at: Any = None
    events: int = 0
    last_position: int = 0
    open_attempt: int | None = None
    attempts: int = 0
    attempts_failed: int = 0
    commands: int = 0
    commands_failed: int = 0
    file_changes: int = 0
    next_step: str | None = None

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in COLUMNS["tasks"])


Key = tuple[str, int]
"""(task id, position) of a row in a keyed table."""


@dataclass
class _Batch:
    """The rows one batch of notifications adds or changes, built in memory before one transaction."""

    con: duckdb.DuckDBPyConnection
    tasks: dict[str, _TaskRow]
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: {t: [] for t in _ROW_TABLES})
    keyed: dict[str, dict[Key, dict[str, Any]]] = field(default_factory=lambda: {t: {} for t in _KEYED_TABLES})
    """Rows of the keyed tables this batch adds or changes, as column -> value."""
    stored: dict[str, set[Key]] = field(default_factory=lambda: {t: set() for t in _KEYED_TABLES})
    """Keys read from an earlier batch's rows: replaced at commit."""
    count: int = 0
    forgotten: set[str] = field(default_factory=set)
    """Tasks whose tombstone (``TaskForgotten``) this batch read: every row of theirs goes at commit."""
    places: list[tuple[Any, ...]] = field(default_factory=list)
    """``find``'s places (``projections.find.place``) of the row tables and the events: only ever added."""
    last_words: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Each task's newest reply in this batch: the one place of its kind a task keeps."""

    def _row(self, table: str, task_id: str, position: int | None) -> dict[str, Any] | None:
        """The row at ``position`` of ``task_id`` in a keyed table, from this batch or an earlier one."""
        if position is None:
            return None
        key = (task_id, position)
        rows = self.keyed[table]
        if key not in rows:
            found = self.con.execute(
                f"SELECT * FROM {table} WHERE task_id = ? AND position = ?", [task_id, position]
            ).fetchone()
            if found is None:
                return None
            rows[key] = dict(zip(COLUMNS[table], found, strict=True))
            self.stored[table].add(key)
        return rows[key]

    def _append(self, table: str, row: tuple[Any, ...]) -> None:
        """Add ``row`` to a row table, and its place for ``find``."""
        self.rows[table].append(row)
        if (found := find.row_place(table, dict(zip(COLUMNS[table], row, strict=True)))) is not None:
            self.places.append((row[0], row[2], found[0], found[1], found[1].lower()))

    def add(self, notification_id: int, event: ev.TaskEvent) -> None:
        task_id = str(event.originator_id)
        task = self.tasks.setdefault(task_id, _TaskRow(task_id=task_id))
        pos, at = event.originator_version, event.timestamp
        payload = {k: v for k, v in stored_state(event).items() if k not in _COMMON}
        name = type(event).__name__
        attempt = facts.acting_attempt(event, task.open_attempt)  # before this event changes it
        if isinstance(event, ev.TaskOpened):
            task.number, task.title, task.slug, task.cwd, task.opened_at = (
                event.number,
                event.title,
                event.slug,
                event.cwd,
                at,
            )
        number = task.number
        common = (task_id, number, pos, at)
        self.rows["events"].append(
            (
                notification_id,
                task_id,
                number,
                pos,
                name,
                at,
                event.actor,
                event.causation,
                event.chain,
                orjson.dumps(payload).decode(),
            )
        )
        task.events += 1
        task.last_position = pos
        task.updated_at = at
        self.count += 1
        if (found := find.event_place(name, payload)) is not None:
            kind, text = found
            row = (task_id, pos, kind, text, text.lower())
            if kind == find.LAST_WORDS:
                self.last_words[task_id] = row
            else:
                self.places.append(row)
        match event:
            case ev.FileChanged():
                change = facts.file_changed(event)
                task.file_changes += 1
                self._append("files", (
                    *common, change.path, change.operation, change.renamed_from, change.before_sha256,
                    change.after_sha256, change.diff_size, attempt,
                ))
            case ev.AttemptStarted():
                task.attempts += 1
                task.open_attempt = pos
                self.keyed["attempts"][(task_id, pos)] = dict(zip(
                    COLUMNS["attempts"],
                    (task_id, number, pos, at, event.text, event.actor, None, False, None, None, None),
                    strict=True,
                ))
            case ev.AttemptEnded():
                end = facts.attempt_ended(event)
                task.attempts_failed += end.failed
                if task.open_attempt == end.attempt:
                    task.open_attempt = None
                started = self._row("attempts", task_id, end.attempt)
                if started is not None:
                    started.update(outcome=end.outcome, failed=end.failed, reason=end.reason, ended_position=pos,
                                   ended_at=at)
            case ev.CommandRan():
                run = facts.command_ran(event)
                task.commands += 1
                task.commands_failed += run.failed
                self._append("commands", (
                    *common, run.line, run.cwd, run.exit_code, run.failed, run.read_only, run.duration_ms,
                    run.output_tail, attempt,
                ))
            case ev.TestResult():
                test = facts.tested(event)
                self._append("tests",
                    (*common, test.name, test.outcome, test.failing, test.duration_ms, test.message, attempt)
                )
            case ev.DecisionRecorded():
                self._append("decisions", (*common, event.text, event.reason, list(event.rejected), event.actor))
            case ev.TaskRetitled():
                task.title = event.title
            case ev.StatusChanged():
                task.status, task.status_reason = event.status, event.reason
            case ev.NextStepSet() | ev.PlanUpdated():
                task.next_step = facts.next_step(event).text
            case ev.RequirementStated() | ev.CorrectionMade():
                stated = facts.intent(event)
                self.keyed["intents"][(task_id, pos)] = dict(zip(
                    COLUMNS["intents"], (*common, stated.kind, stated.text, stated.wrong, event.actor, 0, None),
                    strict=True,
                ))
            case ev.RequirementChanged():
                self._reword(task_id, facts.reworded(event), pos)
            case ev.IntentReclassified():
                self._reclassify(task_id, facts.reclassified(event))
            case _:
                pass

    def _reword(self, task_id: str, change: facts.Reworded, at: int) -> None:
        requirement = self._row("intents", task_id, change.requirement)
        if requirement is not None and requirement["kind"] == "requirement":
            requirement.update(text=change.text, wordings=requirement["wordings"] + 1, changed_at=at)

    def _reclassify(self, task_id: str, change: facts.Reclassified) -> None:
        moved = self._row("intents", task_id, change.target)
        if moved is None or moved["kind"] not in ("requirement", "correction"):
            return  # a rewording stays one
        if change.kind != "change":
            moved.update(kind=change.kind, wrong=None, wordings=0, changed_at=None)
            return
        moved["kind"] = "rewording"
        self._reword(task_id, facts.Reworded(requirement=change.supersedes or 0, text=moved["text"]), change.target)


def _insert(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` column-wise: one statement whatever the row count (executemany is per row)."""
    if not rows:
        return
    columns = COLUMNS[table]
    selects = ", ".join(f"unnest(${i + 1})" for i in range(len(columns)))
    con.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {selects}",
        [list(column) for column in zip(*rows, strict=True)],
    )


def _commit_places(con: duckdb.DuckDBPyConnection, batch: _Batch) -> None:
    """``find``'s places for what the batch added or changed: the row tables' and events' places are added;
    a keyed row's place (an intent reworded, an attempt that ended with its reason) is replaced; a task's
    last words are its newest reply only."""
    _insert(con, "places", batch.places)
    keyed = [(table, key, row) for table in _KEYED_TABLES for key, row in batch.keyed[table].items()]
    if keyed:
        con.execute(
            "DELETE FROM places USING (SELECT unnest($1) AS task_id, unnest($2) AS position) AS k"
            " WHERE places.task_id = k.task_id AND places.position = k.position AND places.kind <> $3",
            [[key[0] for _, key, _ in keyed], [key[1] for _, key, _ in keyed], find.LAST_WORDS],
        )
        rows = [(key[0], key[1], kind, text, text.lower()) for table, key, row in keyed
                if (found := find.row_place(table, row)) is not None for kind, text in [found]]
        _insert(con, "places", rows)
    if batch.last_words:
        newer = list(batch.last_words.values())
        con.execute(
            "DELETE FROM places USING (SELECT unnest($1) AS task_id, unnest($2) AS position) AS k"
            " WHERE places.task_id = k.task_id AND places.kind = $3 AND places.position < k.position",
            [[r[0] for r in newer], [r[1] for r in newer], find.LAST_WORDS],
        )
        kept = {row[0] for row in con.execute(
            "SELECT DISTINCT task_id FROM places WHERE kind = $1 AND task_id IN (SELECT unnest($2))",
            [find.LAST_WORDS, [r[0] for r in newer]]).fetchall()}
        _insert(con, "places", [r for r in newer if r[0] not in kept])  # an archive read late is older


def _load_tasks(con: duckdb.DuckDBPyConnection, task_ids: set[str]) -> dict[str, _TaskRow]:
    if not task_ids:
        return {}
    cols = COLUMNS["tasks"]
    found = con.execute(
        f"SELECT {', '.join(cols)} FROM tasks WHERE task_id IN (SELECT unnest($1))", [sorted(task_ids)]
    ).fetchall()
    return {row[0]: _TaskRow(**dict(zip(cols, row, strict=True))) for row in found}


def _commit_batch(
    con: duckdb.DuckDBPyConnection, batch: _Batch, tracking: Tracking | None, archive_name: str | None = None
) -> None:
    con.execute("BEGIN")
    try:
        for table in _ROW_TABLES:
            _insert(con, table, batch.rows[table])
        for table in _KEYED_TABLES:
            if batch.stored[table]:
                ids, positions = zip(*batch.stored[table], strict=True)
                con.execute(
                    f"DELETE FROM {table} USING (SELECT unnest($1) AS task_id, unnest($2) AS position) AS k"
                    f" WHERE {table}.task_id = k.task_id AND {table}.position = k.position",
                    [list(ids), list(positions)],
                )
            columns = COLUMNS[table]
            _insert(con, table, [tuple(row[c] for c in columns) for row in batch.keyed[table].values()])
        if batch.tasks:
            con.execute("DELETE FROM tasks WHERE task_id IN (SELECT unnest($1))", [sorted(batch.tasks)])
            _insert(con, "tasks", [t.values() for t in batch.tasks.values()])
        _commit_places(con, batch)
        if batch.forgotten:
            # Another machine's forget deleted the task's events from a shared ledger; its tombstone is
            # the one notification every read model still gets, so the rows this model holds go with it.
            for table in (*_ROW_TABLES, *_KEYED_TABLES, "tasks", "places"):
                con.execute(f"DELETE FROM {table} WHERE task_id IN (SELECT unnest($1))", [sorted(batch.forgotten)])
        if tracking is not None:
            Position(con).insert_tracking(tracking)
        if archive_name is not None:
            con.execute("INSERT INTO archives_read VALUES (?)", [archive_name])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _prepare(con: duckdb.DuckDBPyConnection, app: str, newest: int, rebuild: bool) -> tuple[int, bool]:
    """Create or reset the schema when needed; the position to read after and whether it was reset."""
    found = con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall()
    if any(name == "meta" for name, _ in found) and not rebuild:
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        position = Position(con).max_tracking_id(app) or 0
        # A position past the log's end means the ledger was replaced: start again.
        if version is not None and version[0] == SCHEMA_VERSION and position <= newest:
            return position, False
    con.execute("BEGIN")
    for name, kind in sorted(found, key=lambda t: (t[1] != "VIEW", t[0])):  # views first: they read the tables
        con.execute(f'DROP {"VIEW" if kind == "VIEW" else "TABLE"} "{name}"')
    con.execute(SCHEMA)
    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])
    con.execute("COMMIT")
    return 0, True


def refresh(ledger: Log, path: Path, *, rebuild: bool = False, batch_size: int = BATCH) -> Refreshed:
    """Bring the read model at ``path`` up to the ledger's last notification (reads only the new ones)."""
    started = time.perf_counter()
    newest = ledger.recorder.max_notification_id() or 0
    private.folder(path.parent)
    added = read = 0
    with connect(path) as con:
        position, rebuilt = _prepare(con, ledger.name, newest, rebuild)
        added += _read_archives(con, ledger, position)
        while True:
            notifications = ledger.recorder.select_notifications(
                start=position, limit=batch_size, inclusive_of_start=False
            )
            if not notifications:
                break
            task_ids = {str(n.originator_id) for n in notifications if n.topic not in _SKIPPED_TOPICS}
            batch = _Batch(con, tasks=_load_tasks(con, task_ids))
            for notification in notifications:
                if notification.topic in _SKIPPED_TOPICS:
                    continue
                event = ledger.mapper.to_domain_event(notification)
                if isinstance(event, ev.TaskEvent):
                    batch.add(notification.id, event)
                elif isinstance(event, TaskForgotten):
                    batch.forgotten.add(str(event.tombstone.task_id))
            # Ids may skip (PostgreSQL sequences): the next read starts after the last id seen.
            position = notifications[-1].id
            _commit_batch(con, batch, Tracking(ledger.name, position))
            added += batch.count
            read += len(notifications)
    return Refreshed(
        events=added, notifications=read, position=position, rebuilt=rebuilt, seconds=time.perf_counter() - started
    )


def _read_archives(con: duckdb.DuckDBPyConnection, ledger: Log, position: int) -> int:
    """Take in archived events the model has not seen (compacted before it caught up, or a rebuild).

    Archives hold a task's earliest events, so reading them before the live log keeps
    each task's events in order. Each archive is recorded as read in its own transaction;
    the position stays where it is.
    """
    seen = {row[0] for row in con.execute("SELECT name FROM archives_read").fetchall()}
    added = 0
    for found in archived.archives(ledger, None):
        if found.path.name in seen:
            continue
        rows = archived.archived_rows(found, position)
        batch = _Batch(con, tasks=_load_tasks(con, {str(found.task_id)} if rows else set()))
        for notification_id, stored in rows:
            event = ledger.mapper.to_domain_event(stored)
            if isinstance(event, ev.TaskEvent):
                batch.add(notification_id, event)
        _commit_batch(con, batch, None, archive_name=found.path.name)
        added += batch.count
    return added


# -- reading ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    """More rows than the ``limit`` asked for: only the first ``limit`` are in ``rows``."""


def query(
    path: Path,
    sql: str,
    params: Sequence[Any] | dict[str, Any] | None = None,
    *,
    sandbox: bool = False,
    limit: int | None = None,
    seconds: float | None = None,
) -> Result:
    """Run ``sql`` on a read-only connection: a query cannot change the read model.

    ``sandbox``: the connection ``connect`` makes for front doors other than the local CLI.
    ``limit``: at most this many rows are fetched. ``seconds``: the query is interrupted after that long.
    """
    if not path.exists():
        raise ReadModelError(f"no read model at {path}; refresh it first")
    with connect(path, read_only=True, sandbox=sandbox) as con:
        # A runaway query would hold the file, and so every refresh, for as long as it runs.
        timer = threading.Timer(seconds, con.interrupt) if seconds is not None else None
        try:
            if timer is not None:
                timer.start()
            cursor = con.execute(sql, params) if params is not None else con.execute(sql)
            description = cursor.description or []
            if not description:
                rows = []
            elif limit is None:
                rows = cursor.fetchall()
            else:
                rows = cursor.fetchmany(limit + 1)
        except duckdb.InterruptException as exc:
            raise ReadModelError(f"query stopped: it ran past its limit of {seconds:g} s") from exc
        except duckdb.Error as exc:
            raise ReadModelError(f"query failed: {_first_line(exc)}") from exc
        finally:
            if timer is not None:
                timer.cancel()
    truncated = limit is not None and len(rows) > limit
    return Result(columns=tuple(d[0] for d in description), rows=rows[:limit] if truncated else rows,
                  truncated=truncated)


def find_tasks(path: Path, words: list[str], limit: int, only: find.Only | None = None) -> list[find.Found]:
    """The tasks holding every one of ``words`` (``find.words_of``), best first: ``find``'s query on this file."""
    text, params = find.sql(words, limit, only or find.Only())
    return find.from_rows(query(path, text, params).rows)


def export_parquet(path: Path, task_id: UUID, out: Path) -> tuple[Path, int]:
    """Write one task's rows from ``events`` to a Parquet file under the directory ``out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReadModelError(f"cannot create export directory {out}: {exc.strerror or exc}") from exc
    with connect(path, read_only=True) as con:
        row = con.execute("SELECT number, slug FROM tasks WHERE task_id = ?", [str(task_id)]).fetchone()
        if row is None:
            raise ReadModelError(f"task {task_id} is not in the read model {path}")
        target = out / f"task-{row[0]}-{row[1]}.parquet"
        count = con.execute("SELECT count(*) FROM events WHERE task_id = ?", [str(task_id)]).fetchone()
        # COPY takes no parameters: the id is a UUID's text and the path is quoted.
        literal = str(target).replace("'", "''")
        try:
            con.execute(
                f"COPY (SELECT * FROM events WHERE task_id = '{UUID(str(task_id))}' ORDER BY position)"
                f" TO '{literal}' (FORMAT parquet, COMPRESSION zstd)"
            )
        except duckdb.Error as exc:
            raise ReadModelError(f"cannot write {target}: {_first_line(exc)}") from exc
    return target, int(count[0]) if count else 0
