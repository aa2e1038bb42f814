"""Task references: a number, a unique slug prefix, or nothing (the active task).

The active task is a per-user pointer kept in ``TRAIL_HOME/active.json``, per ledger location
and per project (``ledger.base.project``), as git keeps HEAD per repository: a session or a command
in one repository never lands in another repository's task. The file also keeps the ledger's
last active task anywhere (keyed by the location alone); it stands in only for a file written
before pointers were per project.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from uuid import UUID

from ledger.base import private
from ledger.base.errors import Ambiguous, NotFound, StoreUnavailable
from ledger.base.location import Location
from ledger.domain.registry import Entry


def _active_file(location: Location) -> Path:
    return location.home / "active.json"


def _read_pointers(location: Location) -> dict[str, str]:
    try:
        data = json.loads(_active_file(location).read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StoreUnavailable(f"cannot read active-task pointer {_active_file(location)}: {exc}") from exc
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


_PROJECT = "\x1fproject:"


def _project_key(location: Location, project: str) -> str:
    return f"{location.key}{_PROJECT}{project}"


def project_pointer(location: Location, project: str) -> UUID | None:
    """The task set active in ``project`` or the nearest folder above it, with no fallback."""
    pointers = _read_pointers(location)
    prefix = location.key + _PROJECT  # once: the key resolves the ledger's path on the disk
    here = project
    while True:
        value = pointers.get(prefix + here)
        parent = os.path.dirname(here)
        if value is not None or parent == here:
            return UUID(value) if value else None
        here = parent


def active_task_id(location: Location, project: str | None = None) -> UUID | None:
    """The active task of ``project`` (or of the nearest folder above it that has one); with no
    project, the last active task anywhere.

    A project with none has no active task, unless the file predates per-project pointers (none
    at all for this ledger), when the ledger-wide one stands in."""
    if project is not None:
        # The nearest project at or above: a folder without git inside a project is part of it.
        found = project_pointer(location, project)
        pointers = _read_pointers(location)
        prefix = location.key + _PROJECT  # once, not per pointer: the key resolves a path on the disk
        if found is not None or any(k.startswith(prefix) for k in pointers):
            return found
    else:
        pointers = _read_pointers(location)
    value = pointers.get(location.key)
    return UUID(value) if value else None


def set_active(location: Location, task_id: UUID | None, project: str | None = None) -> None:
    """Make ``task_id`` the active task of ``project`` and the ledger's last active one (``None``
    clears them); written atomically. ``clear`` removes every pointer to one task."""
    pointers = _read_pointers(location)
    if task_id is None:
        pointers.pop(location.key, None)
        if project is not None:
            pointers.pop(_project_key(location, project), None)
    else:
        pointers[location.key] = str(task_id)
        if project is not None:
            pointers[_project_key(location, project)] = str(task_id)
    _write_pointers(location, pointers)


def clear(location: Location, task_id: UUID) -> None:
    """Remove every pointer (any project) to ``task_id``."""
    pointers = _read_pointers(location)
    kept = {k: v for k, v in pointers.items() if v != str(task_id)}
    if kept != pointers:
        _write_pointers(location, kept)


def _write_pointers(location: Location, pointers: dict[str, str]) -> None:
    path = _active_file(location)
    try:
        private.folder(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".active.")
        with os.fdopen(fd, "w") as handle:
            json.dump(pointers, handle, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        raise StoreUnavailable(f"cannot write active-task pointer {path}: {exc.strerror or exc}") from exc


def task_number(ref: str) -> int | None:
    """The number a TASK reference names (``7`` or ``#7``, ASCII digits), or None when it names a slug."""
    digits = ref.strip().lstrip("#")
    return int(digits) if digits.isascii() and digits.isdigit() else None


def candidates(ref: str, entries: list[Entry]) -> list[Entry]:
    """The tasks a reference may mean: the one whose slug it is, else every one whose slug it begins; failing
    those, by title as `trail list` shows it (case and spacing aside): the one it is, else every one it begins."""
    ref = ref.strip()
    by_slug = [e for e in entries if e.slug == ref] or [e for e in entries if e.slug.startswith(ref.lower())]
    if by_slug:
        return by_slug
    said = _words(ref)
    if not said:
        return []
    return [e for e in entries if _words(e.title) == said] or [e for e in entries if _words(e.title).startswith(said)]


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


def resolve(ref: str | None, entries: list[Entry], location: Location, project: str | None = None) -> Entry:
    """Find the task ``ref`` names among ``entries`` (none: the active task of ``project``)."""
    if ref is None or ref == "":
        active = active_task_id(location, project)
        if active is None:
            where = f" in {project}" if project else ""
            raise NotFound(
                f"no active task{where}: start one with `trail start TITLE`, pick one with `trail switch X`, "
                "or name it with --task"
            )
        for entry in entries:
            if entry.task_id == active:
                return entry
        raise NotFound(f"the active task {active} is not in this ledger; pick one with `trail switch X`")
    ref = ref.strip()
    if (number := task_number(ref)) is not None:
        for entry in entries:
            if entry.number == number:
                return entry
        raise NotFound(f"no task #{number} (see `trail list`)")
    matches = candidates(ref, entries)
    if not matches:
        raise NotFound(f"no task matches {ref!r} (see `trail list`)")
    if len(matches) > 1:
        names = ", ".join(f"#{e.number} {e.slug}" for e in matches[:5])
        raise Ambiguous(f"{ref!r} matches {len(matches)} tasks ({names}); give more of the title or the number")
    return matches[0]
