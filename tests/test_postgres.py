"""A wrong PostgreSQL URL fails fast with one clear line; the password is never printed."""

from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ledger.base.location import resolve
from tests.conftest import POSTGRES_URL, run_trail


def _fails(url: str, home: Path) -> tuple[int, str, float]:
    started = time.perf_counter()
    proc = run_trail("--db", url, "list", home=home)
    return proc.returncode, proc.stderr, time.perf_counter() - started


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers, as a firewall or a hung server does."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield server.getsockname()[1]
    server.close()


def test_silent_server_times_out_after_connect_timeout(silent_server: int, tmp_path: Path) -> None:
    code, err, seconds = _fails(f"postgresql://me:secret@127.0.0.1:{silent_server}/trail?connect_timeout=1", tmp_path)
    assert code == 4 and err.count("\n") == 1 and "cannot reach ledger" in err and "timeout" in err, err
    assert seconds < 8  # 1 s to connect (libpq may try twice), not the library's 30 s
    assert "secret" not in err and "me:***@" in err


def test_nothing_listening_fails_at_once(tmp_path: Path) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # bound then released: nothing listens there now
    code, err, seconds = _fails(f"postgresql://me:secret@127.0.0.1:{port}/trail", tmp_path)
    assert code == 4 and err.count("\n") == 1 and "Connection refused" in err, err
    assert seconds < 8 and "secret" not in err


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://me:pw@localhost:5432/", "no database name"),
        ("postgresql://me:pw@localhost:port/trail", "the port is not a number"),
        ("postgresql://me:pw@localhost/trail?schema=a-b", "schema 'a-b' must be letters, digits and _"),
        ("postgresql://me:pw@localhost/trail?sslmode=require", "unknown parameter 'sslmode'"),
        ("postgresql://me:pw@localhost/trail?connect_timeout=soon", "connect_timeout must be a whole number"),
        ("postgresql://localhost/trail", "no user"),
    ],
)
def test_malformed_url(url: str, message: str, tmp_path: Path) -> None:
    proc = run_trail("--db", url, "list", home=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert ":pw@" not in proc.stderr


needs_server = pytest.mark.skipif(not POSTGRES_URL, reason="TRAIL_TEST_POSTGRES_URL is not set (.ci/run sets it)")


@needs_server
def test_wrong_password(tmp_path: Path) -> None:
    parts = urlsplit(POSTGRES_URL)
    wrong = POSTGRES_URL.replace(f":{parts.password}@", ":not-the-password@", 1)
    code, err, _ = _fails(wrong, tmp_path)
    assert code == 4 and err.count("\n") == 1 and "password authentication failed" in err, err
    assert "not-the-password" not in err


@needs_server
def test_missing_database(tmp_path: Path) -> None:
    missing = POSTGRES_URL.rsplit("/", 1)[0] + "/no_such_database"
    code, err, _ = _fails(missing, tmp_path)
    assert code == 4 and 'database "no_such_database" does not exist' in err, err


@needs_server
def test_schema_is_created_on_first_use_and_shared_by_urls(tmp_path: Path) -> None:
    """The schema in the URL is the ledger: two URLs naming it see the same tasks, others do not."""
    url = POSTGRES_URL + ("&" if "?" in POSTGRES_URL else "?") + f"schema=first_use_{time.time_ns()}"
    try:
        run_trail("--db", url, "start", "In its own schema", home=tmp_path, check=True)
        assert "In its own schema" not in run_trail("--db", POSTGRES_URL, "list", home=tmp_path).stdout
        assert "In its own schema" in run_trail("--db", url, "list", home=tmp_path, check=True).stdout
    finally:
        from tests.conftest import drop_schemas

        drop_schemas([resolve(url).postgres().schema])


def test_the_local_inbox_name_holds_no_trace_of_the_password(tmp_path: Path) -> None:
    from ledger.base.ledger_file import inbox_for_url

    one = inbox_for_url(str(tmp_path), "postgresql://alice:first-secret@db.example:5432/trail")
    other = inbox_for_url(str(tmp_path), "postgresql://alice:second-secret@db.example:5432/trail")
    elsewhere = inbox_for_url(str(tmp_path), "postgresql://alice:first-secret@db.example:5432/other")
    assert one == other != elsewhere  # the password does not enter the name; the database does
    guess = hashlib.sha256(b"postgresql://alice:first-secret@db.example:5432/trail").hexdigest()[:16]
    assert guess not in one


def test_rows_queued_under_the_old_inbox_name_are_drained_and_the_file_goes(home: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from ledger.base.ledger_file import inbox_for_url, legacy_inbox_for_url

    url = os.environ.get("TRAIL_DATABASE_URL")
    if not url:
        pytest.skip("a server ledger's inbox: PostgreSQL only")
    run_trail("start", "Inbox naming", home=home, check=True)
    hook = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
        input=json.dumps({"session_id": "old-inbox", "hook_event_name": "UserPromptSubmit",
                          "prompt": "Rows from before the rename"}),
        capture_output=True, text=True, env=dict(os.environ), timeout=60, cwd=home.parent,
    )
    assert hook.returncode == 0, hook.stderr
    new, old = Path(inbox_for_url(str(home), url)), Path(legacy_inbox_for_url(str(home), url))
    os.replace(new, old)  # as an earlier release left it
    resumed = run_trail("resume", home=home, check=True)
    assert "Rows from before the rename" in resumed.stdout
    assert not old.exists()
