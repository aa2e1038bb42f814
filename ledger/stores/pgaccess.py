"""Who may read and write which project of a PostgreSQL ledger, enforced by the server's row-level security.

A task's project is kept in ``tasktrail_task_projects`` (id, project, number, and the position of a registry
entry: a row for its registration and one for each rename), written by the recorder in the transaction that
appends the entry (``postgres.AnchoredRecorder``). A table rather than a column: the library owns the events
table's layout, and a state's bytes may be compressed or enciphered, so a policy could not read the project
out of them. Grants are rows of ``tasktrail_grants`` (role, project, write); a role is a person or an agent,
and a role that is a member of a granted role (``GRANT team TO alice``) has its grants.

Every policy goes through ``tasktrail_task_projects``, whose own policy shows a role only the rows of
the projects it may read, so a task row is visible exactly when its id is in that table as the role
sees it. Registry rows are visible at the positions of the role's tasks' entries (and the registry's
creation); the registry's snapshots and its forget events (tombstones) only to the owner. The table
owner (the role that created the ledger) and superusers are not subject to the policies: they see and
write everything. The heads row of the registry (its last position and chain hash, no task content)
is visible to every grantee, so a writer can append the next registry entry.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

from ledger.base.schema import ARCHIVES, EDITS, FORGOTTEN_KEYS, HEADS, REGISTRY_HEX, SOURCES, VIEWS

TASK_PROJECTS = "tasktrail_task_projects"
GRANTS = "tasktrail_grants"
EVENTS, SNAPSHOTS = "tasktrail_events", "tasktrail_snapshots"

CREATE = (
    # A row per task-list entry of a task (its registration, then each rename), so the policies can show and
    # accept each entry; a task from before its entries were known has one row with no position.
    f"CREATE TABLE IF NOT EXISTS {{schema}}.{TASK_PROJECTS} (originator_id uuid NOT NULL,"
    " project text NOT NULL, number bigint NOT NULL, registry_version bigint,"
    " UNIQUE (originator_id, registry_version))",
    f"CREATE TABLE IF NOT EXISTS {{schema}}.{GRANTS} (role name NOT NULL, project text NOT NULL,"
    " can_write boolean NOT NULL, PRIMARY KEY (role, project))",
)

_REG = f"'{REGISTRY_HEX}'::uuid"  # PostgreSQL reads a uuid from its 32 hex digits

FUNCTIONS = (
    # The projects the current role may read (or write), through its own grants and its roles' grants.
    # pg_has_role on an oid that no longer exists is NULL, so a grant to a dropped role matches no one.
    "CREATE OR REPLACE FUNCTION {schema}.tasktrail_projects(writing boolean) RETURNS SETOF text"
    " LANGUAGE sql STABLE AS $$ SELECT g.project FROM {schema}." + GRANTS + " g"
    " WHERE pg_has_role(current_user, (SELECT oid FROM pg_roles WHERE rolname = g.role), 'MEMBER')"
    " AND (g.can_write OR NOT writing) $$",
    # The next free task number over the whole ledger: a writer who sees only some tasks must not hand
    # out a number another project's task holds. Only the number leaves; definer rights read the table.
    "CREATE OR REPLACE FUNCTION {schema}.tasktrail_next_number() RETURNS bigint LANGUAGE sql STABLE"
    " SECURITY DEFINER SET search_path = pg_catalog, pg_temp"
    " AS $$ SELECT coalesce(max(number), 0) + 1 FROM {schema}." + TASK_PROJECTS + " $$",
)

_TASKS = "(SELECT originator_id FROM {schema}." + TASK_PROJECTS + ")"
_WRITABLE = ("(SELECT originator_id FROM {schema}." + TASK_PROJECTS +
             " WHERE project IN (SELECT {schema}.tasktrail_projects(true)))")
_ENTRIES = "(SELECT registry_version FROM {schema}." + TASK_PROJECTS + ")"
_WRITABLE_ENTRIES = ("(SELECT registry_version FROM {schema}." + TASK_PROJECTS +
                     " WHERE project IN (SELECT {schema}.tasktrail_projects(true)))")
_ANY_WRITE = "EXISTS (SELECT {schema}.tasktrail_projects(true))"

POLICIES: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    # table: (name, command, USING, WITH CHECK); "" leaves that clause out.
    TASK_PROJECTS: (
        ("read", "SELECT", "project IN (SELECT {schema}.tasktrail_projects(false))", ""),
        ("add", "INSERT", "", "project IN (SELECT {schema}.tasktrail_projects(true))"),
    ),
    GRANTS: (
        ("own", "SELECT", "pg_has_role(current_user, (SELECT oid FROM pg_roles WHERE rolname = role), 'MEMBER')", ""),
    ),
    EVENTS: (
        ("read", "SELECT", f"originator_id IN {_TASKS} OR (originator_id = {_REG}"
         f" AND (originator_version = 1 OR originator_version IN {_ENTRIES}))", ""),
        ("add", "INSERT", "", f"originator_id IN {_WRITABLE} OR (originator_id = {_REG}"
         f" AND originator_version IN {_WRITABLE_ENTRIES})"),
        ("change", "UPDATE", f"originator_id IN {_WRITABLE}", f"originator_id IN {_WRITABLE}"),
        ("remove", "DELETE", f"originator_id IN {_WRITABLE}", ""),
    ),
    HEADS: (
        ("read", "SELECT", f"originator_id IN {_TASKS} OR originator_id = {_REG}", ""),
        ("add", "INSERT", "", f"originator_id IN {_WRITABLE} OR (originator_id = {_REG} AND {_ANY_WRITE})"),
        ("change", "UPDATE", f"originator_id IN {_WRITABLE} OR (originator_id = {_REG} AND {_ANY_WRITE})",
         f"originator_id IN {_WRITABLE} OR (originator_id = {_REG} AND {_ANY_WRITE})"),
    ),
    FORGOTTEN_KEYS: (
        ("read", "SELECT", "task_number IN (SELECT number FROM {schema}." + TASK_PROJECTS + ")", ""),
    ),
    # The edit journal: a grantee's reads check its tasks' rows; the guard's definer rights write them.
    EDITS: (("read", "SELECT", f"originator_id IN {_TASKS} OR originator_id = {_REG}", ""),),
}
for _table in (SNAPSHOTS, VIEWS, ARCHIVES, SOURCES):
    # Task rows only: the registry's snapshots hold every project's entries.
    POLICIES[_table] = (
        ("read", "SELECT", f"originator_id IN {_TASKS}", ""),
        ("write", "ALL", f"originator_id IN {_WRITABLE}", f"originator_id IN {_WRITABLE}"),
    )

READ_PRIVILEGES = {name: "SELECT" for name in POLICIES}
WRITE_PRIVILEGES = {
    # UPDATE on the events: the library's append takes LOCK TABLE ... IN EXCLUSIVE MODE, which needs it.
    EVENTS: "SELECT, INSERT, UPDATE, DELETE", SNAPSHOTS: "SELECT, INSERT, UPDATE, DELETE",
    VIEWS: "SELECT, INSERT, UPDATE, DELETE", ARCHIVES: "SELECT, INSERT, UPDATE, DELETE",
    HEADS: "SELECT, INSERT, UPDATE", TASK_PROJECTS: "SELECT, INSERT", GRANTS: "SELECT", FORGOTTEN_KEYS: "SELECT",
    EDITS: "SELECT", SOURCES: "SELECT, INSERT, DELETE",
}


def _q(template: str, schema: str) -> sql.Composed:
    return sql.SQL(template.replace("{schema}", "{s}")).format(s=sql.Identifier(schema))


def create_tables(conn: psycopg.Connection[Any], schema: str) -> None:
    for statement in CREATE:
        conn.execute(_q(statement, schema))


def apply(conn: psycopg.Connection[Any], schema: str) -> None:
    """Turn row-level security on with every policy (again: idempotent), in the caller's transaction."""
    create_tables(conn, schema)
    for statement in FUNCTIONS:
        conn.execute(_q(statement, schema))
    conn.execute(_q("REVOKE ALL ON FUNCTION {schema}.tasktrail_next_number() FROM PUBLIC", schema))
    for table, policies in POLICIES.items():
        target = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))
        conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(target))
        for name, command, using, check in policies:
            policy = sql.Identifier(f"tasktrail_{name}")
            conn.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(policy, target))
            clauses = (f" USING ({using})" if using else "") + (f" WITH CHECK ({check})" if check else "")
            conn.execute(sql.SQL("CREATE POLICY {} ON {} FOR " + command).format(policy, target)
                         + _q(clauses, schema))


def protect(conn: psycopg.Connection[Any], schema: str, table: str) -> None:
    """One table's policies (a table added to a ledger after ``apply`` ran on it), and its privileges for every
    role granted a project (a writer's where writers write it), in the caller's transaction."""
    target = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))
    conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(target))
    for name, command, using, check in POLICIES[table]:
        clauses = (f" USING ({using})" if using else "") + (f" WITH CHECK ({check})" if check else "")
        conn.execute(sql.SQL("CREATE POLICY {} ON {} FOR " + command).format(sql.Identifier(f"tasktrail_{name}"),
                                                                            target) + _q(clauses, schema))
    if _one(conn, "SELECT to_regclass(%s)", (f'"{schema}".{GRANTS}',)) not in (None, (None,)):
        with conn.cursor(row_factory=tuple_row) as cur:
            roles = cur.execute(_q("SELECT g.role, bool_or(g.can_write) FROM {schema}." + GRANTS + " g JOIN pg_roles r"
                                   " ON r.rolname = g.role GROUP BY g.role", schema)).fetchall()
        for role, writing in roles:
            privileges = (WRITE_PRIVILEGES if writing else READ_PRIVILEGES)[table]
            conn.execute(sql.SQL("GRANT " + privileges + " ON {} TO {}").format(target, sql.Identifier(role)))


def applied(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether the policies are on (``apply`` ran: some project was granted), so a table added since needs its own."""
    row = _one(conn, "SELECT c.relrowsecurity FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                     " WHERE n.nspname = %s AND c.relname = %s", (schema, EVENTS))
    return bool(row and row[0])


def grant_privileges(conn: psycopg.Connection[Any], schema: str, role: str, writing: bool) -> None:
    """The table privileges a grantee needs (rows are the policies' to filter)."""
    ident = sql.Identifier(role)
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), ident))
    for table, privileges in (WRITE_PRIVILEGES if writing else READ_PRIVILEGES).items():
        conn.execute(sql.SQL("GRANT " + privileges + " ON {}.{} TO {}").format(
            sql.Identifier(schema), sql.Identifier(table), ident))
    conn.execute(_q("GRANT EXECUTE ON FUNCTION {schema}.tasktrail_next_number() TO ", schema) + ident)
    if writing:
        # The events' notification ids come from their identity sequence.
        conn.execute(sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}").format(sql.Identifier(schema), ident))


def revoke_privileges(conn: psycopg.Connection[Any], schema: str, role: str) -> None:
    ident = sql.Identifier(role)
    for table in WRITE_PRIVILEGES:
        conn.execute(sql.SQL("REVOKE ALL ON {}.{} FROM {}").format(sql.Identifier(schema), sql.Identifier(table),
                                                                   ident))
    conn.execute(sql.SQL("REVOKE USAGE ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(sql.Identifier(schema), ident))
    conn.execute(_q("REVOKE EXECUTE ON FUNCTION {schema}.tasktrail_next_number() FROM ", schema) + ident)


def sees_all(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether the policies leave this connection's role every row: a superuser, the events table's owner
    (or a member of it), or a ledger without row-level security."""
    row = _one(conn,
        "SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(current_user, c.relowner, 'USAGE') OR NOT c.relrowsecurity"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, pg_roles r"
        " WHERE n.nspname = %s AND c.relname = %s AND r.rolname = current_user", (schema, EVENTS))
    return row is None or bool(row[0])


def owns(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether this role may change the ledger's tables (create, alter, enable policies): the owner's,
    a superuser, or a schema where the ledger is not made yet."""
    row = _one(conn,
        "SELECT r.rolsuper OR pg_has_role(current_user, c.relowner, 'USAGE')"
        " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, pg_roles r"
        " WHERE n.nspname = %s AND c.relname = %s AND r.rolname = current_user", (schema, EVENTS))
    return row is None or bool(row[0])


def _one(conn: psycopg.Connection[Any], query: str, params: tuple[object, ...]) -> tuple[Any, ...] | None:
    with conn.cursor(row_factory=tuple_row) as cur:
        return cur.execute(query, params).fetchone()
