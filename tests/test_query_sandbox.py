"""The sandboxed query mode (`trail query --sandbox`, the MCP query tool) and DuckDB kept off the network.

Every attack runs against a real read model file built from a real SQLite ledger, and is checked by
what it did, not only by its message: no file made, no file's content read, the model's bytes unchanged.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from ledger.app.store import open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from ledger.stores import duckdb_offline
from projections import queries, readmodel
from projections.readmodel import ReadModelError

ROOT = Path(__file__).resolve().parents[1]
CANARY = "canary-7f3a9c"
"""Written into files a query must not read: it must never come back in an answer or an error."""


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A read model caught up with a ledger of two tasks (files, commands, attempts, tests, decisions)."""
    monkeypatch.setenv("TRAIL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TRAIL_DB", raising=False)
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    ledger_path = tmp_path / "ledger.db"
    with open_ledger(resolve(str(ledger_path))) as ledger:
        one = ledger.open_task("Fix the parser").id
        two = ledger.open_task("Ship it").id
        assert one is not None and two is not None
        ledger.append(one, ev.RequirementStated, text="Parse nested lists")
        for i in range(3):
            start = ledger.append(one, ev.AttemptStarted, text=f"approach {i}").position
            ledger.append(one, ev.CommandRan, shell="make", exit_code=2 if i < 2 else 0)
            ledger.append(one, ev.FileChanged, path="a.py", operation="modified")
            ledger.append(one, ev.TestResult, name="test_nested", outcome="failed" if i < 2 else "passed")
            ledger.append(one, ev.AttemptEnded, attempt=start, outcome="failed" if i < 2 else "succeeded",
                          reason=f"because {i}")
        ledger.append(one, ev.DecisionRecorded, text="Recursive descent", reason="lists nest", rejected=("regex",))
        ledger.append(two, ev.FileChanged, path="b.py", operation="created")
        ledger.append(two, ev.StatusChanged, status="done")
        path = readmodel.readmodel_path(resolve(str(ledger_path)))
        readmodel.refresh(ledger, path)
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files beside the model a sandboxed query must not touch: a secret, another DuckDB database."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.csv").write_text(f"token\n{CANARY}\n")
    with duckdb.connect(str(folder / "other.duckdb")) as con:
        con.execute(f"CREATE TABLE secret AS SELECT '{CANARY}' AS token")
    return folder


def _tree(*roots: Path) -> dict[str, str]:
    """Every file under ``roots`` with the sha256 of its bytes."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


def _attacks(model: Path, outside: Path) -> list[tuple[str, str, str]]:
    """(what, SQL, the text its error must hold)."""
    secret, other, made = outside / "secret.csv", outside / "other.duckdb", outside / "made"
    denied, locked, read_only = "Permission Error", "the configuration has been locked", "read-only mode"
    return [
        ("read_csv /etc/passwd", "SELECT * FROM read_csv('/etc/passwd')", denied),
        ("read_csv a secret", f"SELECT * FROM read_csv('{secret}')", denied),
        ("read_text", f"SELECT content FROM read_text('{secret}')", denied),
        ("read_blob", f"SELECT content FROM read_blob('{secret}')", denied),
        ("a file as a table", f"SELECT * FROM '{secret}'", denied),
        ("glob lists a folder", f"SELECT * FROM glob('{outside}/*')", denied),
        ("COPY FROM", f"COPY tasks FROM '{secret}'", denied),
        ("COPY TO a file", f"COPY (SELECT 1) TO '{made}.csv'", denied),
        ("COPY TO parquet", f"COPY events TO '{made}.parquet' (FORMAT parquet)", denied),
        # DuckDB allows "<model>.tmp/" by itself; the sandbox has no temporary folder, so not this either.
        ("COPY TO the model's temporary folder", f"COPY (SELECT 1) TO '{model}.tmp/x.csv'", denied),
        ("COPY over the model", f"COPY (SELECT 1) TO '{model}'", "belongs to an attached database"),
        ("EXPORT DATABASE", f"EXPORT DATABASE '{made}'", denied),
        ("ATTACH another file", f"ATTACH '{other}' AS other", denied),
        ("ATTACH a new file", f"ATTACH '{made}.duckdb' AS made", denied),
        ("another database as a table", f"SELECT * FROM '{other}'", denied),
        ("INSTALL httpfs", "INSTALL httpfs", denied),
        ("LOAD httpfs", "LOAD httpfs", "Loading external extensions is disabled"),
        ("LOAD a file", f"LOAD '{made}.duckdb_extension'", "Loading external extensions is disabled"),
        ("an https path", "SELECT * FROM read_json_auto('https://example.invalid/x')", denied),
        ("CREATE PERSISTENT SECRET", "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')", denied),
        ("SET enable_external_access", "SET enable_external_access = true", locked),
        ("SET GLOBAL enable_external_access", "SET GLOBAL enable_external_access = true", locked),
        ("SET lock_configuration", "SET lock_configuration = false", locked),
        ("RESET lock_configuration", "RESET lock_configuration", locked),
        ("SET after a harmless statement", "SELECT 1; SET lock_configuration = false", locked),
        ("SET allowed_directories", f"SET allowed_directories = ['{outside}']", locked),
        ("SET temp_directory", f"SET temp_directory = '{outside}'", locked),
        ("SET autoinstall", "SET autoinstall_known_extensions = true", locked),
        ("SET memory_limit", "SET memory_limit = '20GB'", locked),
        ("PRAGMA that writes a file", f"PRAGMA profiling_output = '{made}.txt'", locked),
        ("PRAGMA enable_profiling", "PRAGMA enable_profiling", locked),
        ("SET log_query_path", f"SET log_query_path = '{made}.log'", locked),
        ("CREATE TABLE", "CREATE TABLE x (a INTEGER)", read_only),
        ("CREATE TABLE AS", "CREATE TABLE x AS SELECT * FROM events", read_only),
        ("INSERT", "INSERT INTO tasks (task_id) VALUES ('x')", read_only),
        ("UPDATE", "UPDATE tasks SET title = 'x'", read_only),
        ("DELETE", "DELETE FROM events", read_only),
        ("DROP", "DROP TABLE events", read_only),
        ("ATTACH in memory to write into", "ATTACH ':memory:' AS scratch", "read-only mode"),
    ]


def test_every_attack_fails_with_one_line_and_touches_nothing(model: Path, outside: Path) -> None:
    (model.parent / f"{model.name}.tmp").mkdir()  # as a refresh that spilled to disk leaves it
    before = _tree(model.parent, outside)
    attacks = _attacks(model, outside)
    broken = []
    for what, sql, message in attacks:
        try:
            readmodel.query(model, sql, sandbox=True)
            broken.append((what, "answered"))
        except ReadModelError as exc:
            error = str(exc)
            if "\n" in error or not error.startswith("query failed: ") or message not in error or CANARY in error:
                broken.append((what, error))
    assert broken == []
    assert _tree(model.parent, outside) == before  # nothing made, nothing changed, the model included
    assert len(attacks) == 39


def test_what_the_sandbox_sets_and_locks(model: Path) -> None:
    names = ("enable_external_access", "lock_configuration", "autoinstall_known_extensions",
             "autoload_known_extensions", "temp_directory", "allowed_directories", "allowed_paths")
    sql = "SELECT " + ", ".join(f"current_setting('{n}')" for n in names)
    found = dict(zip(names, readmodel.query(model, sql, sandbox=True).rows[0], strict=True))
    assert found["enable_external_access"] is False and found["lock_configuration"] is True
    assert found["autoinstall_known_extensions"] is False and found["autoload_known_extensions"] is False
    assert found["temp_directory"] == "" and found["allowed_directories"] == []
    # DuckDB allows the open database's own files; the sandbox adds none.
    assert {Path(p).name for p in found["allowed_paths"]} <= {
        model.name, f"{model.name}.wal", f"{model.name}.wal.recovery", f"{model.name}.wal.checkpoint"
    }
    assert found["allowed_paths"]
    unsandboxed = dict(zip(names, readmodel.query(model, sql).rows[0], strict=True))
    assert unsandboxed["enable_external_access"] is True and unsandboxed["lock_configuration"] is False
    assert unsandboxed["autoinstall_known_extensions"] is False and unsandboxed["autoload_known_extensions"] is False


def test_selects_answer_the_same_in_both_modes(model: Path) -> None:
    # `stalled` reads now(): the two modes run a moment apart, so its idle time is taken out of the comparison.
    selects = [q.sql.replace("now() - updated_at", "TIMESTAMPTZ '2026-01-01' - updated_at")
               for q in queries.QUERIES if not q.per_task] + [
        "SELECT * FROM tasks ORDER BY number",
        "SELECT * FROM events ORDER BY notification_id",
        "SELECT task_number, path, operation, changes FROM current_files ORDER BY ALL",
        "SELECT name, outcome, failing FROM current_tests ORDER BY ALL",
        "SELECT text, reason, rejected FROM decisions",
        "SELECT kind, text FROM intents",
        "SELECT payload->>'text' AS text FROM events WHERE type = 'AttemptStarted' ORDER BY position",
        "WITH f AS (SELECT * FROM attempts WHERE failed)"
        " SELECT count(*), string_agg(reason, ';' ORDER BY reason) FROM f",
        "SELECT date_trunc('day', timestamp AT TIME ZONE 'Europe/Berlin') AS day, count(*) FROM events GROUP BY 1",
    ]
    for sql in selects:
        free, boxed = readmodel.query(model, sql), readmodel.query(model, sql, sandbox=True)
        assert boxed == free, sql
        assert free.rows, sql
    per_task = [q for q in queries.QUERIES if q.per_task]
    for q in per_task:
        assert readmodel.query(model, q.sql, {"task": 1}, sandbox=True) == readmodel.query(model, q.sql, {"task": 1})


def test_a_limit_cuts_rows_and_says_so(model: Path) -> None:
    every = readmodel.query(model, "SELECT position FROM events ORDER BY notification_id", sandbox=True)
    cut = readmodel.query(model, "SELECT position FROM events ORDER BY notification_id", sandbox=True, limit=5)
    assert (len(cut.rows), cut.truncated) == (5, True) and cut.rows == every.rows[:5]
    whole = readmodel.query(model, "SELECT position FROM events", sandbox=True, limit=len(every.rows))
    assert (len(whole.rows), whole.truncated) == (len(every.rows), False)


def test_a_runaway_query_is_stopped(model: Path) -> None:
    # Hours of hashing: far past any limit, so the outcome does not depend on the machine's speed.
    with pytest.raises(ReadModelError, match=r"^query stopped: it ran past its limit of 0\.5 s$"):
        readmodel.query(model, "SELECT sum(hash(i)) FROM range(10000000000000) t(i)", sandbox=True, seconds=0.5)
    assert readmodel.query(model, "SELECT count(*) FROM tasks", sandbox=True, seconds=30).rows == [(2,)]


# -- off the network, in every mode ---------------------------------------------------


@pytest.fixture
def repository() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server standing in for DuckDB's extension repository; the paths asked of it."""
    asked: list[str] = []

    class Repository(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Repository)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    thread.join()


def _needs_httpfs(con: duckdb.DuckDBPyConnection, repository: str) -> str:
    """Point the connection's extension downloads at ``repository``, run a query that needs httpfs."""
    con.execute(f"SET custom_extension_repository = '{repository}'")
    con.execute(f"SET autoinstall_extension_repository = '{repository}'")
    with pytest.raises(duckdb.Error) as caught:
        con.execute("SELECT * FROM read_json_auto('https://example.invalid/x')")
    return str(caught.value)


def test_default_mode_asks_no_repository_for_a_missing_extension(
    model: Path, repository: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, asked = repository
    with readmodel.connect(model, read_only=True) as con:
        error = _needs_httpfs(con, url)
    assert "requires the extension httpfs to be loaded" in error
    assert asked == []
    # The same query on DuckDB's defaults downloads httpfs (here from the loopback stand-in): what
    # the settings prevent, and what shows this test would see a download.
    with duckdb.connect(config={"extension_directory": str(tmp_path / "extensions")}) as con:
        error = _needs_httpfs(con, url)
    assert "automatically install" in error and [p.rsplit("/", 1)[-1] for p in asked] == ["httpfs.duckdb_extension.gz"]


def test_default_mode_keeps_the_users_power_without_the_network(model: Path, outside: Path) -> None:
    read = readmodel.query(model, f"SELECT token FROM read_csv('{outside / 'secret.csv'}')")
    assert read.rows == [(CANARY,)]
    readmodel.query(model, f"COPY (SELECT title FROM tasks ORDER BY number) TO '{outside / 'titles.csv'}'")
    assert (outside / "titles.csv").read_text().splitlines() == ["title", "Fix the parser", "Ship it"]
    with pytest.raises(ReadModelError, match="requires the extension httpfs to be loaded"):
        readmodel.query(model, "SELECT * FROM read_csv('https://example.invalid/x.csv')")
    with pytest.raises(ReadModelError, match="exists in the spatial extension"):
        readmodel.query(model, "SELECT st_point(1, 2)")


def test_parquet_is_built_in_with_autoload_off(tmp_path: Path) -> None:
    target = tmp_path / "x.parquet"
    with duckdb_offline.connect() as con:
        con.execute(f"COPY (SELECT 42 AS answer) TO '{target}' (FORMAT parquet, COMPRESSION zstd)")
        assert con.execute(f"SELECT answer FROM read_parquet('{target}')").fetchall() == [(42,)]
        loaded = {r[0] for r in con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert {"parquet", "json", "icu"} <= loaded


def test_offline_settings_cannot_be_overridden_by_a_caller() -> None:
    with duckdb_offline.connect(config={"autoinstall_known_extensions": True}) as con:
        assert con.execute("SELECT current_setting('autoinstall_known_extensions')").fetchone() == (False,)


# -- the CLI --------------------------------------------------------------------------


def _trail(model: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_DATABASE_URL")}
    env.update(PYTHONPATH=str(ROOT), TRAIL_HOME=str(model.parent / "home"))
    ledger = model.with_name(model.name.removesuffix(".duckdb"))
    return subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "--db", str(ledger), *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_trail_query_sandbox_refuses_and_default_mode_reads(model: Path, outside: Path) -> None:
    sql = f"SELECT token FROM read_csv('{outside / 'secret.csv'}')"
    boxed = _trail(model, "query", "--sandbox", sql)
    assert boxed.returncode == 5 and boxed.stdout == ""
    assert boxed.stderr.startswith("trail: query failed: Permission Error: Cannot access file ")
    assert boxed.stderr.count("\n") == 1 and CANARY not in boxed.stderr
    free = _trail(model, "query", "--json", sql)
    assert free.returncode == 0, free.stderr
    assert CANARY in free.stdout
    same = _trail(model, "query", "--sandbox", "--json", "SELECT number, title, status FROM tasks ORDER BY 1")
    assert same.returncode == 0 and same.stdout == _trail(
        model, "query", "--json", "SELECT number, title, status FROM tasks ORDER BY 1").stdout


def test_trail_query_help_says_what_each_mode_can_do(model: Path) -> None:
    shown = " ".join(_trail(model, "query", "--help").stdout.split())
    assert "No query reaches the network" in shown
    assert "Default mode (your own shell): DuckDB's full power over your files" in shown
    assert "--sandbox: what every other front door (trail mcp) gets. Only the read model's tables" in shown
