"""``trail grant`` / ``revoke`` / ``access``: who may read and write which project of a shared ledger.

Enforced by the PostgreSQL server (``ledger.stores.pgaccess``: row-level security on every table), so
a role without a grant sees no row of a project through tasktrail or raw SQL alike. Only the ledger's
owner (the role that created its tables, or a superuser) manages grants. An SQLite ledger has no roles:
its file is private to its owner (0600), and a grant there is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast
from uuid import UUID

from ledger.base.errors import BadInput, PermissionDenied, Refused
from ledger.base.project import project_of
from ledger.domain.mapper import PydanticMapper
from ledger.domain.registry import REGISTRY_ID, TaskRegistered

if TYPE_CHECKING:
    from ledger.app.store import Ledger
    from ledger.stores.postgres import PostgresStore

ROLE_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-.@")


@dataclass(frozen=True)
class Grant:
    role: str
    project: str
    write: bool

    def as_dict(self) -> dict[str, object]:
        return {"role": self.role, "project": self.project, "access": "write" if self.write else "read"}


def project_named(given: str) -> str:
    """A project as the tasks record it: a folder here is taken to its project (the nearest folder holding
    ``.git``), as ``trail start`` there would; anything else is taken as written (another machine's path)."""
    if os.path.isdir(given):
        return project_of(os.path.abspath(given)) or given
    return given


def grant(ledger: Ledger, role: str, project: str, write: bool) -> Grant:
    _store(ledger, "grant").set_access(_role(role), project, write, _projects(ledger))
    return Grant(role, project, write)


def revoke(ledger: Ledger, role: str, project: str | None) -> None:
    _store(ledger, "revoke").set_access(_role(role), project, None, _projects(ledger))


def grants(ledger: Ledger, project: str | None) -> list[Grant]:
    if ledger.store.backend != "postgres":
        raise Refused(_sqlite_line("access"))
    store = cast("PostgresStore", ledger.store)
    return [Grant(r, p, w) for r, p, w in store.grants(project)]


def _store(ledger: Ledger, command: str) -> PostgresStore:
    if ledger.store.backend != "postgres":
        raise Refused(_sqlite_line(command))
    store = cast("PostgresStore", ledger.store)
    if not store.owns():
        raise PermissionDenied(f"only the ledger's owner may {command}: this role does not own its tables")
    return store


def _sqlite_line(command: str) -> str:
    return (f"`trail {command}` needs a PostgreSQL ledger: an SQLite ledger has no roles, its file is readable "
            "by its owner alone (0600)")


def _role(role: str) -> str:
    if not role or set(role.lower()) - ROLE_CHARS:
        raise BadInput(f"role {role!r}: use letters, digits, _ - . @")
    return role


def _projects(ledger: Ledger) -> list[tuple[UUID, str, int, int | None]]:
    """Every task's (id, project, number, registry position) that the policies' table may lack: tasks
    from before it, or copied in by ``trail migrate``."""
    store = cast("PostgresStore", ledger.store)
    known = store.task_projects()
    mapper = cast(PydanticMapper, ledger.mapper)
    positions: dict[UUID, int] = {}
    for row in ledger.recorder.select_events(REGISTRY_ID):
        if row.topic == TaskRegistered.TOPIC:
            entry = mapper.decode_state(row.state).get("entry") or {}
            positions[UUID(str(entry.get("task_id")))] = row.originator_version
    missing = []
    for entry in ledger.entries():
        if entry.task_id not in known:
            project = ledger.state(entry.task_id).project or ""
            missing.append((entry.task_id, project, entry.number, positions.get(entry.task_id)))
    for tombstone in ledger.tombstones():
        if tombstone.task_id not in known:  # its number is never handed out again, whoever writes next
            missing.append((tombstone.task_id, "", tombstone.number, None))
    return missing


def task_list_seen(ledger: Ledger) -> tuple[int, int]:
    """(registry events this role sees, events the registry holds by its anchor): what a grantee's
    verify reports instead of walking a chain it sees only parts of."""
    anchor = ledger.store.head(REGISTRY_ID)
    seen = len(ledger.recorder.select_events(REGISTRY_ID))
    return seen, seen if anchor is None else anchor.version
