"""A PostgreSQL --db that is another application's is refused, as another application's SQLite file is.

Before, `trail list` on a schema holding only another application's tables silently added the
ledger's six tables to it. Needs TRAIL_TEST_POSTGRES_URL (.ci/run starts a server and sets it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_URL, drop_schemas, run_trail, with_schema

pytestmark = pytest.mark.skipif(not POSTGRES_URL, reason="TRAIL_TEST_POSTGRES_URL is not set (.ci/run sets it)")


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    drop_schemas([name])


def _sql(statement: str) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        cursor = conn.execute(statement)
        return cursor.fetchall() if cursor.description else []


def _relations(schema: str) -> list[tuple[object, ...]]:
    return _sql(f"SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                f"WHERE n.nspname = '{schema}' ORDER BY 1")


@pytest.mark.parametrize("args", [["list"], ["start", "x"], ["stats"], ["query", "SELECT 1"]])
def test_a_schema_of_another_application_is_left_as_it_was(tmp_path: Path, schema: str, args: list[str]) -> None:
    _sql(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.customers (id int PRIMARY KEY, name text);"
         f" INSERT INTO {schema}.customers VALUES (1, 'ada')")
    before = _relations(schema)
    url = with_schema(POSTGRES_URL, schema)
    proc = run_trail("--db", url, *args, home=tmp_path / "home")
    assert proc.returncode == 4 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "is not a tasktrail ledger: schema " in proc.stderr
    assert f"{schema!r} holds 1 other table(s) and none of the ledger's" in proc.stderr
    assert "devpass" not in proc.stderr  # the URL is shown without its password
    assert _relations(schema) == before and _sql(f"SELECT * FROM {schema}.customers") == [(1, "ada")]


def test_an_empty_schema_made_for_the_ledger_becomes_one(tmp_path: Path, schema: str) -> None:
    _sql(f"CREATE SCHEMA {schema}")
    url = with_schema(POSTGRES_URL, schema)
    run_trail("--db", url, "start", "Fix login", home=tmp_path / "home", check=True)
    assert "Fix login" in run_trail("--db", url, "list", home=tmp_path / "home", check=True).stdout
    assert ("tasktrail_events",) in _relations(schema)
