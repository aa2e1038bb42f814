"""Task references: a number, a unique slug prefix, or nothing (the active task).

The active task is a per-user pointer kept in ``TRAIL_HOME/active.json``, keyed by
ledger location, like git's current branch is per clone.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from uuid import UUID

from ledger.errors import Ambiguous, NotFound, TrailError
from ledger.location import Location
from ledger.registry import Entry


def _active_file(location: Location) -> Path:
    return location.home / "active.json"


def _read_pointers(location: Location) -> dict[str, str]:
    try:
        data = json.loads(_active_file(location).read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise TrailError(f"cannot read active-task pointer {_active_file(location)}: {exc}") from exc
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def active_task_id(location: Location) -> UUID | None:
    value = _read_pointers(location).get(location.key)
    return UUID(value) if value else None


def set_active(location: Location, task_id: UUID | None) -> None:
    """Point the active task at ``task_id`` (or clear it); written atomically."""
    pointers = _read_pointers(location)
    if task_id is None:
        pointers.pop(location.key, None)
    else:
        pointers[location.key] = str(task_id)
    path = _active_file(location)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".active.")
        with os.fdopen(fd, "w") as handle:
            json.dump(pointers, handle, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        raise TrailError(f"cannot write active-task pointer {path}: {exc.strerror or exc}") from exc


def resolve(ref: str | None, entries: list[Entry], location: Location) -> Entry:
    """Find the task ``ref`` names among ``entries``."""
    if ref is None or ref == "":
        active = active_task_id(location)
        if active is None:
            raise NotFound("no active task: start one with `trail start TITLE` or pick one with `trail switch X`")
        for entry in entries:
            if entry.task_id == active:
                return entry
        raise NotFound(f"the active task {active} is not in this ledger; pick one with `trail switch X`")
    ref = ref.strip()
    if ref.lstrip("#").isdigit():
        number = int(ref.lstrip("#"))
        for entry in entries:
            if entry.number == number:
                return entry
        raise NotFound(f"no task #{number} (see `trail list`)")
    matches = [e for e in entries if e.slug == ref] or [e for e in entries if e.slug.startswith(ref.lower())]
    if not matches:
        raise NotFound(f"no task matches {ref!r} (see `trail list`)")
    if len(matches) > 1:
        names = ", ".join(f"#{e.number} {e.slug}" for e in matches[:5])
        raise Ambiguous(f"{ref!r} matches {len(matches)} tasks ({names}); give more of the slug or the number")
    return matches[0]
