"""Who may read and write which project of a shared PostgreSQL ledger (`trail grant`/`revoke`/`access`), enforced
by the server's row-level security: real roles on the test server (unique names, dropped after), a reader of
project A and a writer of A, each with a TRAIL_HOME of its own, against the owner's ledger holding A and B."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import pytest

from tests.conftest import POSTGRES_URL, run_here, run_trail, with_schema

B_CANARY = "bravo-canary-5d1e"
B_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "tasktrail:task/2"))
"""Task #2's id (ids derive from numbers: ``task.task_id_for``)."""


@dataclass
class Shared:
    owner: str
    reader: str
    writer: str
    nobody: str
    roles: dict[str, str]
    schema: str
    a: Path
    b: Path
    homes: dict[str, Path]

    def trail(self, who: str, *args: str, cwd: Path | None = None, fresh: bool = False,
              env: dict[str, str] | None = None) -> Any:
        url = getattr(self, who)
        variables = {"TRAIL_DATABASE_URL": url, **(env or {})}
        if fresh:  # a real process, as a teammate's shell runs it
            with pytest.MonkeyPatch.context() as patch:
                for k, v in variables.items():
                    patch.setenv(k, v)
                return run_trail(*args, home=self.homes[who], cwd=cwd or self.a)
        return run_here(*args, home=self.homes[who], cwd=cwd or self.a, env=variables)


def _as(url: str, role: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}:{password}@{host}"))


def _admin() -> Any:
    import psycopg

    return psycopg.connect(POSTGRES_URL.split("?", 1)[0], autocommit=True)


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[Shared]:
    if not POSTGRES_URL:
        pytest.skip("TRAIL_TEST_POSTGRES_URL is not set (.ci/run starts a server and sets it)")
    tag = uuid.uuid4().hex[:10]
    schema = f"t_{tag}"
    roles = {"reader": f"tt_reader_{tag}", "writer": f"tt_writer_{tag}", "nobody": f"tt_nobody_{tag}"}
    with _admin() as conn:
        for role in roles.values():
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{tag}'")
    owner = with_schema(POSTGRES_URL, schema)
    a, b = tmp_path / "alpha", tmp_path / "bravo"
    for folder in (a, b):
        (folder / ".git").mkdir(parents=True)
    homes = {who: tmp_path / f"home-{who}" for who in ("owner", "reader", "writer", "nobody")}
    urls = {who: _as(owner, role, f"pw-{tag}") for who, role in roles.items()}
    try:
        yield Shared(owner, urls["reader"], urls["writer"], urls["nobody"], roles, schema, a, b, homes)
    finally:
        with _admin() as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            for role in roles.values():
                conn.execute(f"DROP OWNED BY {role}")
                conn.execute(f"DROP ROLE {role}")


def _ok(proc: Any) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(proc.stdout)


def _one_line(proc: Any, code: int) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    line = str(proc.stderr).strip()
    assert "\n" not in line and line.startswith("trail: ") and "Traceback" not in line, line
    return line


def _set_up(s: Shared) -> None:
    """#1 in project A, #2 in project B (a decision, a command's output, the canary everywhere); the reader may
    read A, the writer may write A."""
    _ok(s.trail("owner", "start", "Fix login in alpha", cwd=s.a))
    _ok(s.trail("owner", "note", "alpha note", cwd=s.a))
    _ok(s.trail("owner", "start", f"Billing {B_CANARY}", cwd=s.b))
    _ok(s.trail("owner", "decide", f"use {B_CANARY} vendor", "--because", f"{B_CANARY} is cheaper", cwd=s.b))
    _ok(s.trail("owner", "note", f"payments schema {B_CANARY}", cwd=s.b))
    _ok(s.trail("owner", "grant", s.roles["reader"], "--project", str(s.a), "--read"))
    _ok(s.trail("owner", "grant", s.roles["writer"], "--project", str(s.a), "--write"))


def _all_rows(url: str, schema: str) -> str:
    """Every row of every table in the ledger's schema as ``url``'s role reads it with plain SQL (a table
    it may not read at all counts as empty), as text: states decoded where they are JSON."""
    import psycopg
    from psycopg import sql

    seen: list[str] = []
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'", (schema,)).fetchall()]
        assert len(tables) >= 8, tables
        for table in tables:
            try:
                rows = conn.execute(sql.SQL("SELECT * FROM {}.{}").format(
                    sql.Identifier(schema), sql.Identifier(table))).fetchall()
            except psycopg.errors.InsufficientPrivilege:
                continue
            for row in rows:
                seen.append(table + " " + " ".join(
                    bytes(v).decode("utf-8", "replace") if isinstance(v, bytes | memoryview) else str(v) for v in row))
    return "\n".join(seen)


def test_a_reader_of_a_gets_nothing_of_b_through_the_cli_the_read_model_or_sql(shared: Shared) -> None:
    s = shared
    _set_up(s)
    b_id = B_ID
    owner_rows = _all_rows(s.owner, s.schema)
    assert B_CANARY in owner_rows and str(s.b) in owner_rows  # the check below can see what it looks for

    listed = _ok(s.trail("reader", "list", fresh=True))
    assert "alpha" in listed and B_CANARY not in listed and "#2" not in listed
    assert "no task #2" in _one_line(s.trail("reader", "resume", "2"), 2)
    assert "Fix login in alpha" in _ok(s.trail("reader", "resume", "1"))
    assert "no task #2" in _one_line(s.trail("reader", "log", "2", "--json"), 2)
    assert [e["type"] for e in orjson.loads(_ok(s.trail("reader", "log", "1", "--json")))][:2] == [
        "TaskOpened", "NoteAdded"]
    assert "#2" in _ok(s.trail("owner", "find", B_CANARY))
    for word in (B_CANARY, "Billing"):
        assert _ok(s.trail("reader", "find", word)).startswith("No task holds all of"), word
    for query in ("SELECT * FROM tasks", "SELECT * FROM events", "SELECT * FROM decisions"):
        answered = _ok(s.trail("reader", "query", query, "--json"))
        assert B_CANARY not in answered and b_id not in answered, query
    assert "Fix login in alpha" in _ok(s.trail("reader", "query", "SELECT title FROM tasks"))

    seen = _all_rows(s.reader, s.schema)
    assert "alpha note" in seen  # its own project's rows are there
    assert B_CANARY not in seen and b_id not in seen and str(s.b) not in seen
    # Nothing at all for a role without a grant, through trail or SQL.
    assert "no grant" in _one_line(s.trail("nobody", "list"), 4)
    assert _all_rows(s.nobody, s.schema) == ""
    # The owner still sees and verifies everything.
    assert B_CANARY in _ok(s.trail("owner", "list"))
    assert "task list ok" in _ok(s.trail("owner", "verify"))


def test_writers_are_held_to_their_projects_and_refused_in_one_line(shared: Shared) -> None:
    s = shared
    _set_up(s)
    before = _all_rows(s.owner, s.schema)

    refused = _one_line(s.trail("writer", "start", "Sneak into bravo", cwd=s.b, fresh=True), 4)
    assert "may not write to project" in refused and str(s.b) in refused
    refused = _one_line(s.trail("reader", "note", "--task", "1", "reader scribbles"), 4)
    assert "no write grant" in refused
    assert "no task #2" in _one_line(s.trail("writer", "note", "--task", "2", "into bravo"), 2)
    assert _all_rows(s.owner, s.schema) == before  # nothing half-written: no row, no entry, no project

    # Within its project the writer works as the owner would, and its new task takes the ledger's next number.
    _ok(s.trail("writer", "note", "--task", "1", "writer was here"))
    assert "Started #3" in _ok(s.trail("writer", "start", "Second alpha task", cwd=s.a))
    listed = _ok(s.trail("owner", "list"))
    assert "#3" in listed and B_CANARY in listed
    verified = _ok(s.trail("owner", "verify"))
    assert verified.count(" ok: ") == 4 and "task list ok" in verified
    assert "writer was here" in _ok(s.trail("reader", "resume", "1"))


def test_a_partial_readers_verify_says_what_it_did_not_check(shared: Shared) -> None:
    s = shared
    _set_up(s)
    out = _ok(s.trail("reader", "verify"))
    assert "#1 ok" in out and "#2" not in out and "BROKEN" not in out
    assert "task list not checked: this role sees 2 of its 3 events" in out
    report = orjson.loads(_ok(s.trail("reader", "verify", "--json")))
    assert [r["task"] for r in report if not r["registry"]] == [1]
    assert [r for r in report if r["registry"]] == [
        {"task": None, "registry": True, "ok": None, "checked": False, "events_seen": 2, "events": 3}]
    token = _ok(s.trail("owner", "checkpoint", "--ledger")).split()[-1]
    assert token.startswith("ledger1:")
    assert "only its projects' tasks" in _one_line(s.trail("reader", "verify", "--head", token), 3)
    assert "ledger head ok" in _ok(s.trail("owner", "verify", "--head", token))


def test_grants_are_listed_changed_and_revoked_by_the_owner_only(shared: Shared) -> None:
    s = shared
    _set_up(s)
    listed = orjson.loads(_ok(s.trail("owner", "access", "--json")))
    assert sorted((g["role"], g["access"]) for g in listed) == [
        (s.roles["reader"], "read"), (s.roles["writer"], "write")]
    assert {g["project"] for g in listed} == {str(s.a)}
    # A grantee sees its own grant only, and may not grant.
    assert [g["role"] for g in orjson.loads(_ok(s.trail("reader", "access", "--json")))] == [s.roles["reader"]]
    assert "only the ledger's owner" in _one_line(
        s.trail("writer", "grant", s.roles["writer"], "--project", str(s.b), "--write"), 4)

    missing = s.roles["nobody"] + "_gone"
    assert "no role" in _one_line(s.trail("owner", "grant", missing, "--project", str(s.b), "--read"), 2)
    _ok(s.trail("owner", "grant", s.roles["reader"], "--project", str(s.b), "--read"))
    assert B_CANARY in _ok(s.trail("reader", "list"))
    assert B_CANARY in _ok(s.trail("reader", "query", "SELECT title FROM tasks"))
    _ok(s.trail("owner", "revoke", s.roles["reader"], "--project", str(s.b)))
    assert B_CANARY not in _ok(s.trail("reader", "list")) and B_CANARY not in _all_rows(s.reader, s.schema)
    # What the reader's own read model copied while it had the grant goes with a rebuild (docs/backends.md).
    assert B_CANARY not in _ok(s.trail("reader", "query", "--rebuild", "SELECT title FROM tasks"))
    _ok(s.trail("owner", "revoke", s.roles["reader"]))
    assert "no grant" in _one_line(s.trail("reader", "list"), 4)
    assert _all_rows(s.reader, s.schema) == ""


def test_compacted_archives_keep_the_rule(shared: Shared) -> None:
    s = shared
    _set_up(s)
    _ok(s.trail("owner", "compact", "2", "--before", "3"))
    _ok(s.trail("owner", "compact", "1", "--before", "2"))
    seen = _all_rows(s.reader, s.schema)
    assert "tasktrail_archives" in seen  # A's archive is readable to A's reader
    assert B_CANARY not in seen and B_ID not in seen
    assert "alpha" in _ok(s.trail("reader", "log", "1"))


def test_views_a_reader_cannot_keep_cost_it_nothing(shared: Shared) -> None:
    s = shared
    _set_up(s)
    for n in range(6):
        _ok(s.trail("owner", "note", "--task", "1", f"alpha {n}"))
    # The reader's fold passes positions where it would keep a view snapshot; the server refuses the write.
    every = {"TRAIL_SNAPSHOT_EVERY": "2"}
    assert "alpha 5" in _ok(s.trail("reader", "resume", "1", env=every))
    assert "tasktrail_views" not in _all_rows(s.owner, s.schema)
    assert "alpha 5" in _ok(s.trail("writer", "resume", "1", env=every))  # a writer of A keeps them
    assert "tasktrail_views" in _all_rows(s.owner, s.schema)


def test_mcp_gives_a_reader_its_projects_only(shared: Shared, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    from tests.test_mcp import _ok as tool, _session  # noqa: I001

    s = shared
    _set_up(s)
    monkeypatch.setenv("TRAIL_DATABASE_URL", s.reader)

    async def body(session: Any) -> None:
        listed = await tool(session, "list_tasks")
        assert B_CANARY not in orjson.dumps(listed).decode() and "alpha" in orjson.dumps(listed).decode()
        found = await tool(session, "query", sql="SELECT title FROM tasks ORDER BY number")
        assert [r["title"] for r in found["rows"]] == ["Fix login in alpha"]
        events = await tool(session, "query", sql="SELECT * FROM events")
        assert B_CANARY not in orjson.dumps(events).decode()

    s.homes["reader"].mkdir(exist_ok=True)
    _session(s.homes["reader"], s.a, body)


@pytest.mark.parametrize("command", [("grant", "someone", "--project", ".", "--read"), ("revoke", "someone"),
                                     ("access",)])
def test_sqlite_refuses_grants_in_one_line(tmp_path: Path, command: tuple[str, ...],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    _ok(run_here("start", "A task", home=home, cwd=tmp_path))
    line = _one_line(run_here(*command, home=home, cwd=tmp_path), 3)
    assert "needs a PostgreSQL ledger" in line and "0600" in line
    assert os.stat(home / "ledger.db").st_mode & 0o077 == 0


def test_a_writers_new_entries_pass_the_task_lists_snapshot_points(shared: Shared) -> None:
    from ledger.app.store import Ledger, open_ledger
    from ledger.base.location import resolve
    from ledger.domain.registry import Registry
    from ledger.domain.task import Task

    class Often(Ledger):
        snapshotting_intervals = {Task: 500, Registry: 2}

    s = shared
    _set_up(s)
    writer = open_ledger(resolve(s.writer), Often)
    try:
        numbers = [writer.open_task(f"alpha {n}", str(s.a)).number for n in range(3)]
    finally:
        writer.close()
    assert numbers == [3, 4, 5]  # past B's #2, and no snapshot of a task list the writer sees only part of
    verified = _ok(s.trail("owner", "verify"))
    assert verified.count(" ok: ") == 6 and "task list ok" in verified
