"""Shared fixtures: every test gets its own real ledger and TRAIL_HOME, on each backend.

Tests that take ``home``, ``location`` or ``ledger`` run twice: on an SQLite file and on
a PostgreSQL schema of its own. The PostgreSQL cases need ``TRAIL_TEST_POSTGRES_URL``
(``.ci/run`` starts a throw-away server and sets it) and are skipped without it. Tests
that read SQLite bytes directly carry ``@pytest.mark.sqlite_only``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson
import pytest

from ledger.app.store import Ledger, open_ledger
from ledger.base.home import home_dir
from ledger.base.location import Location, resolve

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BACKENDS = ["sqlite", "postgres"]

# The hook's 5 s deadline guards an agent against hostile input; on two cores under the suite's own load a
# PostgreSQL SessionStart can pass it, and the brief a test waits for is spooled instead. The hook processes
# tests start inherit a roomier one; the deadline's own tests (test_hostile_input) strip it and use the default.
os.environ.setdefault("TRAIL_HOOK_DEADLINE_S", "120")
# The suite starts thousands of `trail` and hook processes: with PYTHONDONTWRITEBYTECODE inherited (some
# shells and tool runners set it), no bytecode of the checkout is ever cached, and each of them compiles
# every module it imports from source again (~80 ms of CPU a process). An installed tasktrail has its cache.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


def _worker_database(url: str) -> str:
    """Each xdist worker gets a database of its own on the test server, made on first use. PostgreSQL keeps the
    rows a VACUUM may remove as long as any transaction in the same database holds an older snapshot, so a
    long transaction of the other worker's test (in another schema) left a compacted task's space in place."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not url or not worker:
        return url
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'postgres'}_{worker}"
    with psycopg.connect(url.split("?", 1)[0], autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            # A test's child process imports this module too, and may make it first.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
                conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    return urlunsplit(parts._replace(path=f"/{name}"))


POSTGRES_URL = _worker_database(os.environ.get("TRAIL_TEST_POSTGRES_URL", ""))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only(reason): reads or writes SQLite bytes directly, or needs what only SQLite has yet"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (pyproject's addopts): two, a whole file each (``--dist loadfile``); none when the
    command names one file, which one worker would run alone after both had started."""
    files = {arg.split("::", 1)[0] for arg in config.args}
    if len(files) == 1 and (config.invocation_params.dir / files.pop()).is_file():
        return 0
    return 2


REAL_HOME = Path(home_dir())
"""The tasktrail home this run's user has (read before any test sets its own): no test may write there."""


def _real_home_names(basetemp: Path) -> list[str]:
    """The active-task pointers in the real home that name a ledger under this run's temporary folders: a test
    that opened a ledger by path while the default home was the user's (the leak the guard below stops)."""
    try:
        pointers = orjson.loads((REAL_HOME / "active.json").read_bytes())
    except (OSError, ValueError):
        return []
    root = str(basetemp.resolve())
    return sorted(k for k in pointers if isinstance(pointers, dict) and root in k)


@pytest.fixture(autouse=True)
def _own_default_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Where a test sets no TRAIL_HOME, the default one (``$XDG_DATA_HOME/tasktrail``) is a folder of its own,
    not the user's ~/.local/share/tasktrail: tests that opened a ledger by path alone left active.json entries,
    compaction archives and a ledger.db there, shared with every other worker, run and user (and its
    redaction patterns would reach their appends). A folder beside tmp_path, so no test finds it in its own."""
    monkeypatch.delenv("TRAIL_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
    # No detached drain after a Stop or SessionEnd hook (``ledger.capture.detach``) unless a test asks for one:
    # a process outliving its test would fold rows the test reads as queued, and write into removed folders.
    monkeypatch.setenv("TRAIL_BACKGROUND_DRAIN", "off")
    yield
    # The guard: a test that reached the user's own home fails, naming what it left there. Only pointers to this
    # run's folders count, so the lead's or another run's use of the real home at the same time is not charged here.
    if leaked := _real_home_names(tmp_path_factory.getbasetemp()):
        pytest.fail(f"this test wrote the real home's {REAL_HOME / 'active.json'}: {leaked[0]}", pytrace=False)


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        if marker := request.node.get_closest_marker("sqlite_only"):
            pytest.skip(marker.args[0] if marker.args else "reads SQLite bytes directly")
        if not POSTGRES_URL:
            pytest.skip("TRAIL_TEST_POSTGRES_URL is not set (.ci/run starts a server and sets it)")
    return str(request.param)


@pytest.fixture
def new_store(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], str]]:
    """Makes empty ledgers on this test's backend: a new file, or a new PostgreSQL schema (dropped after)."""
    schemas: list[str] = []

    def make() -> str:
        if backend == "sqlite":
            return f"sqlite:{tmp_path_factory.mktemp('store') / 'ledger.db'}"
        schema = f"t_{uuid.uuid4().hex[:16]}"
        schemas.append(schema)
        return with_schema(POSTGRES_URL, schema)

    yield make
    if schemas:
        drop_schemas(schemas)


def drop_schemas(schemas: list[str]) -> None:
    from psycopg import sql

    from ledger.stores import postgres

    location = resolve(POSTGRES_URL)
    with postgres.connect(location.postgres(), location.display) as conn:
        for schema in schemas:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, new_store: Callable[[], str]) -> Path:
    """A private TRAIL_HOME for this test; on PostgreSQL, TRAIL_DATABASE_URL names a fresh schema.

    On SQLite no ledger setting is inherited, so the default ``$TRAIL_HOME/ledger.db`` is used.
    """
    path = tmp_path / "home"
    monkeypatch.setenv("TRAIL_HOME", str(path))
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    monkeypatch.delenv("TRAIL_DB", raising=False)
    if backend == "postgres":
        monkeypatch.setenv("TRAIL_DATABASE_URL", new_store())
    return path


@pytest.fixture
def location(home: Path) -> Location:
    """Where this test's ledger lives, as the CLI resolves it."""
    return resolve()


@pytest.fixture
def ledger(location: Location) -> Iterator[Ledger]:
    app = open_ledger(location)
    yield app
    app.close()


def run_trail(*args: str, home: Path, cwd: Path | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real `trail` command in a fresh process, on the ledger the ``home`` fixture set up."""
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    env["TRAIL_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", *args],
        cwd=cwd or home.parent, env=env, capture_output=True, text=True, timeout=60,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"trail {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def run_here(*args: str, home: Path, cwd: Path | None = None, check: bool = False, stdin: str | None = None,
             env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """As ``run_trail``, in this process: for set-up and reads where a fresh process is not what the test
    is about (it saves ~0.4 s of start-up a command). It goes through the console script's own
    ``cli.main.main`` (the lean hook, the brief cache, else the click app) with the same arguments,
    variables, working directory and standard streams; each command opens the ledger afresh.

    Not in a test that holds the same SQLite ledger open here (the ``ledger`` fixture) while other
    processes write to it: there, tests/test_hook.py's concurrent hooks found it "malformed". A variable set
    to None in ``env`` is unset for the command."""
    from click.testing import CliRunner

    from cli.main import main

    variables: dict[str, str | None] = {"TRAIL_DB": None, "TRAIL_HOME": str(home), **(env or {})}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd or home.parent)
        patch.setattr(sys, "argv", ["-c", *args])
        with CliRunner().isolation(input=stdin, env=variables) as (out, err, _):
            try:
                main()
                code = 0
            except SystemExit as exited:  # as the interpreter turns it into an exit status
                if exited.code is None or isinstance(exited.code, int):
                    code = exited.code or 0
                else:
                    print(exited.code, file=sys.stderr)
                    code = 1
            except Exception:  # an uncaught error: a traceback and status 1, as a process would end
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    proc = subprocess.CompletedProcess(["trail", *args], code, stdout, stderr)
    if check and code != 0:
        raise AssertionError(f"trail {' '.join(args)} failed ({code}): {stderr}")
    return proc


GUARD_S = 60
"""How long a step that should happen at once may take before the test fails rather than hang (``in_thread``)."""


def in_thread(work: Callable[[], Any]) -> Any:
    """``work()``'s result, failing the test past ``GUARD_S`` (a daemon thread: a hung step never hangs pytest),
    e.g. opening a gate's FIFO, which returns once the process under test waits there."""
    done: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=lambda: done.put(work()), daemon=True).start()
    try:
        return done.get(timeout=GUARD_S)
    except queue.Empty:
        pytest.fail(f"still waiting after {GUARD_S} s")
