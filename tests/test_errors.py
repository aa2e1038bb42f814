"""Bad input gets one clear line, a non-zero exit, and nothing is written."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.base.location import Location, resolve
from tests.conftest import BACKENDS, POSTGRES_URL, drop_schemas, run_here, run_trail, with_schema
from tests.stores import stored_rows


def _digest(location: Location) -> str:
    # The WAL holds recent commits, so hash the logical content, not the file bytes.
    return hashlib.sha256(repr(stored_rows(location)).encode()).hexdigest()


@pytest.fixture
def two_tasks(home: Path, location: Location) -> Location:
    run_here("start", "Port the parser", home=home, check=True)  # set-up, in this process
    run_here("start", "Port the lexer", home=home, check=True)
    return location


def _home_files(home: Path) -> dict[str, bytes]:
    """The home's files but the SQLite ledger's own (its rows are ``_digest``'s; the WAL is their journal)."""
    return {str(p): p.read_bytes() for p in sorted(home.rglob("*"))
            if p.is_file() and not p.name.startswith("ledger.db")}


@pytest.fixture(scope="module", params=BACKENDS)
def shared_two_tasks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[Path, str | None]]:
    """Two tasks on each backend, made once for the refusals below: each of them checks that it left the rows
    and the home's files as they were, so every one meets the ledger the first met."""
    url: str | None = None
    if request.param == "postgres":
        if not POSTGRES_URL:
            pytest.skip("TRAIL_TEST_POSTGRES_URL is not set (.ci/run starts a server and sets it)")
        schema = f"t_{uuid.uuid4().hex[:16]}"
        url = with_schema(POSTGRES_URL, schema)
    home = tmp_path_factory.mktemp("two-tasks") / "home"
    for title in ("Port the parser", "Port the lexer"):  # set-up, in this process
        run_here("start", title, home=home, check=True, env={"TRAIL_DATABASE_URL": url})
    yield home, url
    if url is not None:
        drop_schemas([schema])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume", "42"], "no task #42"),
        (["resume", "nothing-like-it"], "no task matches 'nothing-like-it'"),
        (["resume", "port"], "'port' matches 2 tasks"),
        (["replay", "1", "--at", "99"], "--at 99 is past the end: the task has 1 events"),
        (["replay", "1", "--at", "-1"], "goes before the first event"),
        (["replay", "1", "--at", "yesterday"], "--at 'yesterday': expected a position"),
        (["replay", "1", "--at", "checkpoint:nope"], "no checkpoint with that label"),
        (["require", "   "], "text: text must not be empty"),
        (["fail", "no attempt is open"], "no open attempt to end"),
        (["require", "x", "--replaces", "7"], "no requirement at position 7"),
        (["decide", "x", "--actor", "robot"], "actor must be 'user'"),
        (["log", "--type", "Nope"], "--type Nope: unknown event type"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    shared_two_tasks: tuple[Path, str | None], monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    home, url = shared_two_tasks
    monkeypatch.delenv("TRAIL_DB", raising=False)
    if url is None:
        monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    else:
        monkeypatch.setenv("TRAIL_DATABASE_URL", url)
    location = resolve(url or str(home / "ledger.db"))
    before, files = _digest(location), _home_files(home)
    proc = run_trail(*args, home=home)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trail: ") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert _digest(location) == before and _home_files(home) == files


def test_no_active_task(home: Path) -> None:
    proc = run_trail("resume", home=home)
    assert proc.returncode == 2 and "no active task" in proc.stderr
    assert run_trail("note", "orphan", home=home).returncode == 2


def test_second_attempt_needs_the_first_ended(home: Path, two_tasks: Location) -> None:
    run_here("attempt", "first idea", home=home, check=True)  # set-up, in this process
    proc = run_trail("attempt", "second idea", home=home)
    assert proc.returncode == 3 and "attempt at position 2 is still open" in proc.stderr


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder nobody can write into, root included (CI runs as root, who ignores chmod)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", folder, folder], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot make a read-only folder as root here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", folder], check=True)


@pytest.mark.sqlite_only
def test_db_in_read_only_folder(read_only_folder: Path, home: Path) -> None:
    target = read_only_folder / "sub" / "ledger.db"
    proc = run_trail("--db", str(target), "start", "never stored", home=home)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip().startswith(f"trail: cannot create ledger in {read_only_folder / 'sub'}")
    assert proc.stderr.count("\n") == 1
    assert not (read_only_folder / "sub").exists()


@pytest.mark.sqlite_only
def test_db_that_is_not_a_ledger(tmp_path: Path, home: Path) -> None:
    bogus = tmp_path / "notes.txt"
    bogus.write_text("just some notes\n")
    proc = run_trail("--db", str(bogus), "list", home=home)
    assert proc.returncode == 4 and "is not a tasktrail ledger" in proc.stderr
    assert bogus.read_text() == "just some notes\n"


@pytest.mark.sqlite_only("damages the SQLite file's pages")
def test_damaged_ledger_file_is_one_line_not_a_traceback(home: Path, two_tasks: Location) -> None:
    import sqlite3 as sq

    path = two_tasks.sqlite_path
    con = sq.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 97):  # keep the header page, scramble the rest
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))
    for args in (["list"], ["resume", "1"], ["note", "x", "-t", "1"]):
        proc = run_trail(*args, home=home)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("trail: ")


# -- a location that is not a ledger, or may not become one: one line, exit 4, nothing created ---------------


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every folder (None) and file (its bytes) under ``root``: equal before and after means nothing was made."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def _refused(proc: subprocess.CompletedProcess[str], *names: str) -> None:
    assert proc.returncode == 4, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("trail: "), proc.stderr
    assert all(name in lines[0] for name in names), (names, lines[0])
    assert proc.stdout == ""


# Commands that only read, and one that writes to an existing task: none of them may begin a ledger.
NOT_BEGINNING = [["list"], ["resume"], ["log"], ["why", "a.py:3"], ["verify"], ["stats"], ["query", "SELECT 1"],
                 ["note", "x"]]


@pytest.mark.parametrize("args", [*NOT_BEGINNING, ["start", "typo"]])
def test_db_in_a_folder_that_does_not_exist_creates_nothing(tmp_path: Path, args: list[str]) -> None:
    target = tmp_path / "no" / "such" / "dir" / "x.db"
    proc = run_trail("--db", str(target), *args, home=tmp_path / "home")
    _refused(proc, str(target.parent))
    assert _tree(tmp_path) == {}


@pytest.mark.parametrize("args", NOT_BEGINNING)
def test_only_a_command_that_begins_tasks_creates_a_named_ledger(tmp_path: Path, args: list[str]) -> None:
    target = tmp_path / "x.db"
    _refused(run_trail("--db", str(target), *args, home=tmp_path / "home"), f"no ledger at {target}")
    assert _tree(tmp_path) == {}
    target.touch()  # an empty file is no ledger yet either, and stays empty
    _refused(run_trail("--db", str(target), *args, home=tmp_path / "home"), f"no ledger at {target}", "empty")
    assert _tree(tmp_path) == {"x.db": b""}
    # Once a task is begun there (set-up, in this process) the same command reads it: in this process too, as
    # the refusals above are what is under test here.
    run_here("--db", str(target), "start", "first", home=tmp_path / "home", check=True)
    assert run_here("--db", str(target), *args[:1], home=tmp_path / "home").returncode in (0, 2)  # 2: why/note args


def _other_file(path: Path, kind: str) -> None:
    if kind == "text":
        path.write_text("just some notes\n")
        return
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode={kind}")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["text", "delete", "wal"])
@pytest.mark.parametrize("args", [["list"], ["log"], ["verify"], ["stats"], ["start", "x"], ["demo", "--keep"]])
def test_a_file_that_is_not_a_ledger_is_left_exactly_as_it_was(tmp_path: Path, kind: str, args: list[str]) -> None:
    """Another application's SQLite file (rollback or WAL journal) or a text file: no table, no -wal, no byte."""
    other = tmp_path / "app.db"
    _other_file(other, kind)
    before = _tree(tmp_path)
    _refused(run_trail("--db", str(other), *args, home=tmp_path / "home"), f"{other} is not a tasktrail ledger")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("args", [["list"], ["start", "x"]])
def test_a_url_of_an_unknown_scheme_is_refused_without_its_password(tmp_path: Path, args: list[str]) -> None:
    proc = run_trail("--db", "mysql://bob:s3cret@db.internal:3306/trail", *args, home=tmp_path / "home")
    _refused(proc, "unsupported ledger URL 'mysql://bob:***@db.internal:3306/trail'")
    assert "s3cret" not in proc.stderr
    assert _tree(tmp_path) == {}  # the command ran in tmp_path: no "mysql:" folder either


def test_the_default_location_is_still_created_by_any_first_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRAIL_DATABASE_URL", raising=False)
    home = tmp_path / "a" / "b" / "home"
    assert run_trail("list", home=home, cwd=tmp_path, check=True).stdout.startswith("No tasks yet")
    assert (home / "ledger.db").is_file()


def test_a_ledger_file_the_hook_began_is_a_ledger(tmp_path: Path) -> None:
    """The hook may create the file (its inbox table only) before any command: reads accept it."""
    target = tmp_path / "x.db"
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DATABASE_URL"}
    env.update(TRAIL_DB=str(target), TRAIL_HOME=str(tmp_path / "home"), PYTHONPATH=str(Path(__file__).parents[1]))
    payload = '{"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"}'
    hooked = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
                            input=payload, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert hooked.returncode == 0 and hooked.stderr == "", hooked.stderr
    assert target.is_file()
    assert run_trail("--db", str(target), "list", home=tmp_path / "home").returncode == 0
