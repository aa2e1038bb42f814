"""Importing transcript files into tasks: find files, map them, pick each one's task, append once.

Sessions group into tasks by continuation, never across projects: a file joins an existing task
when ``--task`` names one, when its session id is already linked to a task (a resumed session, a
sub-agent file, a file imported before), or when it points at a record another task holds (a
``summary`` leaf or a parent uuid: a ``/clear`` or compaction continuation). Otherwise it opens a
task of its own, titled after the session, at the session's first record's time, with its first
events in the same transaction. Unless ``--task`` names one, the task is set to how its (main)
session ended (``_status``), in the transaction of the file's last records, and becomes its project's
active task unless that one is newer. Appends skip source keys the task holds, so re-imports add
nothing and a grown file adds only its new records.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from ledger.app import refs
from ledger.base.crashpoints import crash_point
from ledger.base.errors import BadInput, NotFound, TrailError
from ledger.base.location import Location
from ledger.base.project import project_of, within
from ledger.capture import agents
from ledger.capture.agent import Agent
from ledger.capture.items import Item
from ledger.capture.jsonl import Lines
from ledger.capture.session import Session
from ledger.capture.spool import Spool
from ledger.capture.writer import (
    Appended,
    ForgottenSession,
    Known,
    Record,
    Then,
    append_unseen,
    open_with,
    task_for_records,
    task_for_session,
)
from ledger.domain import events as ev
from ledger.domain import redact
from projections.state import TaskState, replay

if TYPE_CHECKING:
    from ledger.app.store import Draft, Ledger

BATCH = 500
"""Items per transaction: bounds the work a conflict retries and lets the progress bar move."""
CATCH_UP = 10
"""Batches between reads of the task's view during an import: the view keeps a snapshot every K events
as it folds, so the reads that follow the import (its status, title, pointer) fold the last few batches
rather than the session, whose rows the store would read all at once (50k events: 45 MB)."""


@dataclass
class Report:
    files: int = 0
    tasks: dict[int, str] = field(default_factory=dict)
    """Task number -> title, for every task this import touched."""
    new_tasks: int = 0
    events: Counter[str] = field(default_factory=Counter)
    skipped: list[tuple[str, int | None, str]] = field(default_factory=list)
    """(file, line, why) for every line that could not be read or was refused."""
    filtered: int = 0
    """Sessions left out by ``--project`` or ``--since``."""

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "tasks": [{"number": n, "title": t} for n, t in sorted(self.tasks.items())],
            "new_tasks": self.new_tasks,
            "filtered": self.filtered,
            "events": dict(sorted(self.events.items())),
            "events_total": sum(self.events.values()),
            "skipped": [{"file": f, "line": n, "reason": r} for f, n, r in self.skipped],
        }


def discover(paths: list[Path], suffix: str = ".jsonl") -> list[Path]:
    """The transcript files (``suffix``) named or found under the folders named; a missing path is an error."""
    found: list[Path] = []
    for path in paths:
        path = path.expanduser()
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob(f"*{suffix}") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise NotFound(f"no such file or folder: {path}")
    return list(dict.fromkeys(found))


def read_session(agent: Agent, path: Path) -> Session:
    """Map one file, read as a stream: memory holds a line at a time, and the session's items (each
    bounded) past a few thousand sit in a temporary file (``ledger.capture.spool``), never the file.
    Lines too long or nested too deep are among its ``skipped``. The items are as mapped: each batch
    is normalised as it is written (``batch``)."""
    lines = Lines(path)
    try:
        session = agent.map_transcript(lines, _stem(path, agent), str(path))
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    session.skipped = sorted([*session.skipped, *lines.skipped])
    _link(agent, session, path)
    return session


def batch(agent: Agent, items: Sequence[Item], start: int) -> list[Item]:
    """Items ``start`` to ``start + BATCH`` of a session, normalised (``Agent.normalised``: item by item)."""
    return agent.normalised(list(items[start : start + BATCH]))


def _link(agent: Agent, session: Session, path: Path) -> None:
    """Open the session's items with its ``ConversationLinked`` (how a later file or hook of the session
    finds its task) when the agent's mapper has not placed one itself."""
    items = session.items
    kinds = items.kinds() if isinstance(items, Spool) else [cls for cls, _ in items]
    if not session.session_id or not items or ev.ConversationLinked in kinds:
        return
    link = (ev.ConversationLinked, {
        "agent": agent.name, "session_id": session.session_id, "transcript": str(path), "actor": "system",
        "timestamp": _when(session.first_timestamp) or items[0][1].get("timestamp"),
        "source": ev.SourceKey(agent=agent.name, session=session.session_id, record="link"),
    })
    items.insert(0, link)


def import_order(agent: Agent, files: list[Path]) -> list[Path]:
    """Earlier sessions first, and a session's main file before its sub-agent files, so that tasks are
    titled and joined by the sessions that started them. Each file is read only as far as its first
    time and session header (``sort_key``), so the files are mapped one at a time afterwards."""

    def key(path: Path) -> tuple[str, bool, str]:
        try:
            first, subagent = agent.sort_key(Lines(path), _stem(path, agent))
        except OSError as exc:
            raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from exc
        return first or "~", subagent, str(path)

    return sorted(files, key=key)


def _stem(path: Path, agent: Agent) -> str:
    return path.name.removesuffix(agent.transcript_suffix)


def import_files(
    ledger: Ledger,
    location: Location,
    agent: Agent | str,
    files: list[Path],
    task: UUID | None = None,
    progress: Callable[[int], None] | None = None,
    *,
    project: str | None = None,
    since: datetime | None = None,
) -> Report:
    """Import ``files``; ``progress`` is told how many bytes each finished file had.

    ``project`` keeps the sessions run in that project (or a folder inside it); ``since`` the
    sessions with a record at or after that time."""
    agent = agents.load(agent) if isinstance(agent, str) else agent
    redact.compile_all()  # a transcript's outputs run most patterns: compiled at once, not one by one in the logs
    with _heap_frozen():
        return _import_files(ledger, location, agent, files, task, progress, project=project, since=since)


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """What the process holds before the import (its modules, pydantic's schemas: 35k+ objects) set aside
    from the cyclic collector for the import's length (``gc.freeze``), then given back: each full
    collection the import's allocations start walked all of it again, 20-30 ms CPU each, one falling on
    whichever log was being imported then (a 0.18 MB log took 66 ms, 31 of them in one collection).
    The import's own objects are collected as before. A caller that froze its heap itself keeps it so."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _import_files(
    ledger: Ledger,
    location: Location,
    agent: Agent,
    files: list[Path],
    task: UUID | None,
    progress: Callable[[int], None] | None,
    *,
    project: str | None,
    since: datetime | None,
) -> Report:
    report = Report(files=len(files))
    known: Known = {}  # the keys of each task this import opened, kept up by its writes (others: asked per batch)
    batches = 0
    for path in import_order(agent, files):
        session = read_session(agent, path)
        if not _wanted(session, project, since):
            report.filtered += 1
            if progress:
                progress(path.stat().st_size)
            continue
        report.skipped.extend((str(path), s.line, s.reason) for s in session.skipped)
        if not session.items:
            if progress:
                progress(path.stat().st_size)
            continue
        items = session.items
        first = 0  # the first item not written yet: the items are read a batch at a time, never copied whole
        last: datetime | None = None  # the latest time among the items written: how the session ended
        # Unless ``--task`` names one, the task is set to how its (main) session ended, in the file's last
        # write (also when a killed import left the task opened: the re-run settles it the same way).
        ending = _Ending(ledger, agent, session, path, settle=task is None and not session.is_subagent)
        target = task or _existing_task(ledger, location, agent, session)
        if target is None:
            # The task opens at the session's first record, with its first batch, in one transaction.
            title = session.title or f"{agent.name} session {session.session_id[:8] or path.stem}"
            written = batch(agent, items, 0)
            last = _latest(last, written)
            then = ending.then(last or _when(session.first_timestamp)) if len(items) <= BATCH else None
            try:
                target, done = open_with(ledger, title, written, cwd=session.cwd, actor=agent.actor,
                                         timestamp=_when(session.first_timestamp), known=known, then=then)
            except ForgottenSession as gone:
                # The whole session belonged to a forgotten task: it stays forgotten, the import goes on.
                report.skipped.append((str(path), None, f"{len(items)} records of forgotten task #{gone.number}"))
                if progress:
                    progress(path.stat().st_size)
                continue
            _count(report, path, done)
            crash_point("import-opened")
            first = BATCH
            report.new_tasks += 1
        for start in range(first, len(items), BATCH):
            written = batch(agent, items, start)
            last = _latest(last, written)
            then = ending.then(last or _when(session.first_timestamp)) if start + BATCH >= len(items) else None
            _count(report, path, append_unseen(ledger, location, target, written, known, then))
            batches += 1
            crash_point(f"import-batch-{batches}")
            if batches % CATCH_UP == 0:
                ledger.state(target)
        # The file's last write folded the task's view as it stored it: no read of it follows.
        state = ending.view
        assert state is not None and state.id == target
        ledger.views.hold(target, state)  # the next file's task, or the reads after the import, start from it
        _point(location, ledger, target, state)
        report.tasks[state.number or 0] = state.title
        if progress:
            progress(path.stat().st_size)
    return report


def _count(report: Report, path: Path, done: Appended) -> None:
    report.events.update(cls.__name__ for cls, _ in done.items)
    for (_, fields), why in done.rejected:
        source = fields.get("source")
        report.skipped.append((str(path), _line_of(source.record if source else ""), why))


def _when(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _latest(last: datetime | None, items: list[Item]) -> datetime | None:
    """The latest time among ``last`` and the items' (``_last_time`` of a session, a batch at a time)."""
    stamps = [w for _, fields in items if (w := _stamp(fields.get("timestamp"))) is not None]
    return max([*stamps, last]) if last is not None else max(stamps, default=None)


def _last_time(session: Session) -> datetime | None:
    stamps = [w for _, fields in session.items if (w := _stamp(fields.get("timestamp"))) is not None]
    return max(stamps) if stamps else _when(session.first_timestamp)


def _stamp(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return _when(value) if isinstance(value, str) else None


def _wanted(session: Session, project: str | None, since: datetime | None) -> bool:
    if project is not None:
        own = project_of(session.cwd)
        if own is None or not within(own, project):
            return False
    if since is not None:
        last = _last_time(session)
        if last is None or last < since:
            return False
    return True


class _Ending:
    """What a file's last write adds (``then``): the task's view as that write leaves it (``view``), folded
    from the task's view before the write and the events the write recorded, not read back; and, when the
    import settles the task, the status its session ended in (``_status``), recorded in the same
    transaction as the file's last records (one commit for them, and no second write)."""

    def __init__(self, ledger: Ledger, agent: Agent, session: Session, path: Path, *, settle: bool) -> None:
        self.ledger, self.agent, self.session, self.path, self.settle = ledger, agent, session, path, settle
        self.view: TaskState | None = None

    def then(self, last: datetime | None) -> Then:
        """The write's last step; ``last``: the latest time among the session's items."""

        def then(draft: Draft, record: Record) -> None:
            view = _draft_view(self.ledger, draft)
            item = _status(self.agent, self.session, self.path, view, last) if self.settle else None
            if item is not None:
                before = len(draft.recorded)
                if record([item]).items:
                    view = replay(draft.recorded[before:], view)
            self.view = view  # each attempt's own: a lost race re-runs the write, and this with it

        return then


def _draft_view(ledger: Ledger, draft: Draft) -> TaskState:
    """The task's view once the draft's recorded events are stored: the view at the position before them
    (none for a task the draft opens) and those events folded onto it, as a read would fold them."""
    recorded = draft.recorded
    before = draft.version - len(recorded)
    base = ledger.state(draft.id, at=before) if before > 0 else TaskState()
    return replay(recorded, base) if recorded else base


def _status(agent: Agent, session: Session, path: Path, state: TaskState, last: datetime | None) -> Item | None:
    """How a task (whose view is ``state``) is set once its session is imported: done when the agent finished
    a plan made after the user's last request, with nothing failing, and had the last word; else paused
    (the session is over, the work is not). None when the task is so already, or moved on after it."""
    if last is not None and state.updated_at is not None and state.updated_at > last:
        # The task moved on after this session's last record (live capture of it, a later session, the
        # user): its status is theirs; an import of the past does not pause work that went on.
        return None
    failing = any(f.failing for f in state.failures)
    # The plan must postdate the user's last request: an old finished plan says nothing of newer asks.
    finished = (state.plan is not None and bool(state.plan.steps) and state.next_step is None
                and state.plan.position > (state.last_intent or 0) and not failing and state.last_reply is not None)
    status, reason = ("done", "imported: the agent finished its plan") if finished else (
        "paused", "imported: the session ended with work open")
    if state.status == status:
        return None
    return (ev.StatusChanged, {
        "status": status, "reason": reason, "actor": "system", "timestamp": last,
        "source": ev.SourceKey(agent=agent.name, session=session.session_id or path.stem, record=f"status:{status}"),
    })


def _point(location: Location, ledger: Ledger, task: UUID, state: TaskState) -> None:
    """Make ``task`` (whose view is ``state``) its project's active task unless the project's current one
    is newer."""
    if state.project is None:
        return
    current = refs.active_task_id(location, state.project)
    if current is not None and current != task:
        try:
            other = ledger.state(current)
        except TrailError:
            other = None
        if other is not None and other.updated_at and state.updated_at and other.updated_at > state.updated_at:
            return
    refs.set_active(location, task, state.project)


def _existing_task(ledger: Ledger, location: Location, agent: Agent, session: Session) -> UUID | None:
    if session.session_id:
        found = task_for_session(ledger, location, agent.name, session.session_id)
        if found is not None:
            return found
    return task_for_records(ledger, location, agent.name, session.references)


def _line_of(record: str) -> int | None:
    """The line number in a ``<stem>:<line>`` record key (None when the key is a uuid or call id: no line)."""
    tail = record.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None
