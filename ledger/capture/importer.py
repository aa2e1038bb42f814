"""Importing transcript files into tasks: find files, map them, pick each one's task, append once.

One transcript becomes one task, titled after the session (its own title, else its first
prompt). A file joins an existing task instead when ``--task`` names one, when its session id is
already linked to a task (a resumed session, a sub-agent file, a file imported before), or when
it points at a record another task holds (a ``summary`` leaf or a parent uuid from an earlier
session). Appends skip source keys the task holds, so re-imports add nothing and a grown file
adds only its new records.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from uuid import UUID

from ledger.capture import claude_code, codex
from ledger.capture.claude_code import Session
from ledger.capture.writer import append_unseen, task_for_records, task_for_session
from ledger.errors import TrailError
from ledger.location import Location

if TYPE_CHECKING:
    from ledger.store import Ledger

Agent = Literal["claude-code", "codex"]
BATCH = 500
"""Items per transaction: bounds the work a conflict retries and lets the progress bar move."""

MAPPERS: dict[str, Callable[..., Session]] = {"claude-code": claude_code.map_transcript, "codex": codex.map_rollout}
DEFAULT_ROOTS: dict[str, Path] = {
    "claude-code": Path("~/.claude/projects"),
    "codex": Path("~/.codex/sessions"),
}


@dataclass
class Report:
    files: int = 0
    tasks: dict[int, str] = field(default_factory=dict)
    """Task number -> title, for every task this import touched."""
    new_tasks: int = 0
    events: Counter[str] = field(default_factory=Counter)
    skipped: list[tuple[str, int, str]] = field(default_factory=list)
    """(file, line, why) for every line that could not be read or was refused."""

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "tasks": [{"number": n, "title": t} for n, t in sorted(self.tasks.items())],
            "new_tasks": self.new_tasks,
            "events": dict(sorted(self.events.items())),
            "events_total": sum(self.events.values()),
            "skipped": [{"file": f, "line": n, "reason": r} for f, n, r in self.skipped],
        }


def discover(paths: list[Path]) -> list[Path]:
    """The ``.jsonl`` files named or found under the folders named; a missing path is an error."""
    found: list[Path] = []
    for path in paths:
        path = path.expanduser()
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        elif path.is_file():
            found.append(path)
        else:
            raise TrailError(f"no such file or folder: {path}")
    return list(dict.fromkeys(found))


def read_session(agent: Agent, path: Path) -> Session:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise TrailError(f"cannot read {path}: {exc.strerror or exc}") from exc
    lines = enumerate(text.splitlines(), 1)
    return MAPPERS[agent](lines, path.name.removesuffix(".jsonl"), str(path))


def import_files(
    ledger: Ledger,
    location: Location,
    agent: Agent,
    files: list[Path],
    task: UUID | None = None,
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Import ``files``; ``progress`` is told how many bytes each finished file had."""
    report = Report(files=len(files))
    sessions = [(path, read_session(agent, path)) for path in files]
    # Earlier sessions first, and a session's main file before its sub-agent files, so that
    # tasks are titled and joined by the sessions that started them.
    sessions.sort(key=lambda ps: (ps[1].first_timestamp or "~", ps[1].is_subagent, str(ps[0])))
    numbers = {e.task_id: e.number for e in ledger.entries()}
    for path, session in sessions:
        report.skipped.extend((str(path), s.line, s.reason) for s in session.skipped)
        if not session.items:
            if progress:
                progress(path.stat().st_size)
            continue
        target = task or _existing_task(ledger, location, agent, session)
        if target is None:
            title = session.title or f"{agent} session {session.session_id[:8] or path.stem}"
            state = ledger.open_task(title, cwd=session.cwd, actor=f"agent:{agent}")
            assert state.id is not None and state.number is not None
            target, numbers[state.id] = state.id, state.number
            report.new_tasks += 1
        if target not in numbers:
            numbers.update({e.task_id: e.number for e in ledger.entries()})
        for start in range(0, len(session.items), BATCH):
            done = append_unseen(ledger, location, target, session.items[start : start + BATCH])
            report.events.update(cls.__name__ for cls, _ in done.items)
            for (_, fields), why in done.rejected:
                source = fields.get("source")
                report.skipped.append((str(path), _line_of(source.record if source else ""), why))
        report.tasks[numbers[target]] = ledger.state(target).title
        if progress:
            progress(path.stat().st_size)
    return report


def _existing_task(ledger: Ledger, location: Location, agent: Agent, session: Session) -> UUID | None:
    if session.session_id:
        found = task_for_session(ledger, location, agent, session.session_id)
        if found is not None:
            return found
    return task_for_records(ledger, location, agent, session.references)


def _line_of(record: str) -> int:
    """The line number in a ``<stem>:<line>`` record key (0 when the key is a uuid or call id)."""
    tail = record.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0
