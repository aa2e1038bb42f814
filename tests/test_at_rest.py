"""Issue 23 item 5: encryption at rest. With TRAIL_CIPHER_KEY (or a 0600 TRAIL_CIPHER_KEY_FILE) set, no byte of a
planted text is in the SQLite file or the PostgreSQL rows (events, snapshots, view snapshots, archives) nor in
any file under TRAIL_HOME, while every read, verify, compaction, forget and migrate works; a wrong, missing or
unexpected key is one line, its exit code, and nothing written."""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger.app import artifacts
from ledger.app.store import open_ledger
from ledger.base import atrest
from ledger.base.errors import BadSetting
from ledger.base.location import Location, resolve
from tests.conftest import run_here, run_trail

PLANT = "ZQXPLANTEDPLAINTEXTWORD"


def _key(size: int = 32) -> str:
    return base64.b64encode(os.urandom(size)).decode()


def _pg_bytes(location: Location) -> bytes:
    """Every stored byte of the ledger's own tables on PostgreSQL, as raw SQL reads them."""
    import psycopg

    target = location.postgres()
    found = b""
    with psycopg.connect(host=target.host, port=target.port, dbname=target.dbname, user=target.user,
                         password=target.password) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (target.schema,))]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{target.schema}"."{table}"'):
                found += b"|".join(bytes(v) if isinstance(v, bytes | memoryview) else str(v).encode() for v in row)
    return found


def _files_bytes(home: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def _record(home: Path, count: int, run: Callable[..., Any] = run_trail) -> None:
    """The planted task; ``run=run_here`` where it is set-up only (in this process, each command afresh)."""
    run("start", f"plant {PLANT} title", home=home, check=True)
    run("require", f"keep {PLANT} requirement", home=home, check=True)
    for i in range(count):
        run("note", f"{PLANT} note {i}", home=home, check=True)
    run("decide", f"use {PLANT}", "--because", f"{PLANT} reason", home=home, check=True)


def test_no_planted_byte_at_rest_and_every_read_works(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_CIPHER_KEY", _key())
    monkeypatch.setenv("TRAIL_SNAPSHOT_EVERY", "2")  # task and view snapshots, registry's too
    _record(home, 4, run=run_here)
    # Each read opens the ledger afresh under the key, in this process; `resume` (the brief cache's path before
    # the click app) and the reads after the compaction each in a process of their own.
    reads = [(run_trail, ("resume",)), (run_here, ("resume", "1")), (run_here, ("log", "1", "--json")),
             (run_here, ("show", "1")), (run_here, ("replay", "1", "--at", "4")), (run_here, ("find", PLANT)),
             (run_here, ("query", "SELECT payload FROM events")), (run_here, ("stats", "files")),
             (run_here, ("list",))]
    for run, args in reads:
        proc = run(*args, home=home)
        assert proc.returncode == 0, (args, proc.stderr)
        assert PLANT in proc.stdout or args[0] in ("stats", "list"), (args, proc.stdout)
    assert run_trail("compact", "1", "--before", "6", home=home).returncode == 0
    assert PLANT in run_trail("log", "1", "--json", home=home, check=True).stdout  # archived events read back
    verified = run_trail("verify", home=home)
    assert verified.returncode == 0, verified.stderr
    assert run_here("compact", "1", "--verify", home=home).returncode == 0

    location = resolve()
    files = _files_bytes(home)
    if location.is_postgres:
        assert PLANT.encode() not in _pg_bytes(location)
    else:
        assert any(name.endswith(".parquet") for name in files), "the archive is under TRAIL_HOME"
    leaks = [name for name, data in files.items() if PLANT.encode() in data]
    assert leaks == [], leaks
    assert not [name for name in files if name.endswith(".duckdb")], "no read model is kept under a key"


def test_key_file_and_wrong_missing_and_unexpected_keys(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(_key(24) + "\n")
    key_file.chmod(0o644)
    monkeypatch.setenv("TRAIL_CIPHER_KEY_FILE", str(key_file))
    refused = run_trail("start", "first", home=home)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "readable by others (mode 0644)" in refused.stderr and f"chmod 600 {key_file}" in refused.stderr
    assert not (home / "ledger.db").exists()
    key_file.chmod(0o600)
    _record(home, 2, run=run_here)
    location = resolve()
    before = _stored(location)

    # A missing or wrong key is found against the stored ledger, by each command's own reads: all four commands.
    # The other four fail while the key settings are read (``atrest.cipher_env``, before any store is opened),
    # the same for every command: a write and `resume` (whose brief-cache path skips the click app) show that.
    opened = (("note", "more"), ("resume",), ("verify",), ("query", "SELECT 1"))
    settings = (("note", "more"), ("resume",))
    cases: list[tuple[dict[str, str | None], int, str, tuple[tuple[str, ...], ...]]] = [
        ({"TRAIL_CIPHER_KEY_FILE": None}, 4, "is encrypted: set TRAIL_CIPHER_KEY or TRAIL_CIPHER_KEY_FILE", opened),
        ({"TRAIL_CIPHER_KEY_FILE": None, "TRAIL_CIPHER_KEY": _key(24)}, 4, "the cipher key does not open ledger",
         opened),
        ({"TRAIL_CIPHER_KEY": _key()}, 2, "both TRAIL_CIPHER_KEY and TRAIL_CIPHER_KEY_FILE are set", settings),
        ({"TRAIL_CIPHER_KEY_FILE": None, "TRAIL_CIPHER_KEY": "not base64!"}, 2, "TRAIL_CIPHER_KEY is not a base64 key",
         settings),
        ({"TRAIL_CIPHER_KEY_FILE": None, "TRAIL_CIPHER_KEY": _key(20)}, 2, "holds a 20-byte key", settings),
        ({"TRAIL_CIPHER_KEY_FILE": str(tmp_path / "nokey")}, 2, "cannot read", settings),
    ]
    for change, code, said, commands in cases:
        for name, value in change.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        for args in commands:
            # Each case's write in a process of its own (exit status and stderr as the shell sees them); the
            # other commands in this one, through the same main, each opening the ledger afresh.
            proc = (run_trail if args == ("note", "more") else run_here)(*args, home=home)
            assert proc.returncode == code and said in proc.stderr, (change, args, proc.returncode, proc.stderr)
            assert proc.stderr.count("\n") == 1 and proc.stdout == "", (change, args, proc.stderr)
        monkeypatch.setenv("TRAIL_CIPHER_KEY_FILE", str(key_file))
        monkeypatch.delenv("TRAIL_CIPHER_KEY", raising=False)
    assert _stored(location) == before, "a refused key wrote nothing"
    assert run_here("verify", home=home).returncode == 0


def _stored(location: Location) -> list[Any]:
    app = open_ledger(location)
    try:
        return [(n.originator_id, n.originator_version, n.state) for n in app.recorder.select_notifications(1, 1000)]
    finally:
        app.close()


def test_a_plain_ledger_with_a_key_set_is_one_line(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_here("start", "plain", home=home, check=True)
    monkeypatch.setenv("TRAIL_CIPHER_KEY", _key())
    proc = run_trail("resume", home=home)
    assert proc.returncode == 4 and proc.stderr.count("\n") == 1, proc.stderr
    assert "is not encrypted but a cipher key is set" in proc.stderr and "trail migrate" in proc.stderr
    monkeypatch.delenv("TRAIL_CIPHER_KEY")
    assert run_trail("resume", home=home).returncode == 0


def test_forget_redaction_and_gc_keep_working_encrypted(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_CIPHER_KEY", _key())
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    # Set-up in this process, but `ran` in its own: it passes its command's output through the process's streams.
    run_here("start", f"{PLANT} one", home=home, check=True)
    run_trail("ran", "--", sys.executable, "-c", f"print('{PLANT}' * 40); print('token={secret}')",
              home=home, check=True)
    run_here("start", "two", home=home, check=True)
    run_here("note", "kept", home=home, check=True)
    log = run_here("log", "1", "--json", home=home, check=True).stdout  # the reads in this process
    assert secret not in log and "REDACTED" in log and PLANT * 40 in log
    location = resolve()
    app = open_ledger(location)
    try:  # the payloads of every event so far (a cutoff after them), rewritten through the cipher
        collected = artifacts.collect(app, location, datetime.now(UTC) + timedelta(days=1), threshold=100)
    finally:
        app.close()
    assert collected.payloads >= 1
    assert PLANT * 40 not in run_here("log", "1", "--json", home=home, check=True).stdout
    forgot = run_trail("forget", "1", "--yes", home=home)
    assert forgot.returncode == 0, forgot.stderr
    assert PLANT not in run_here("list", home=home, check=True).stdout
    verified = run_trail("verify", home=home)
    assert verified.returncode == 0, verified.stderr
    assert "kept" in run_here("resume", "2", home=home, check=True).stdout
    if location.is_postgres:
        assert PLANT.encode() not in _pg_bytes(location)
    assert [n for n, data in _files_bytes(home).items() if PLANT.encode() in data] == []


def test_no_aes_package_is_one_line_saying_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atrest, "CIPHERS", (("tasktrail_no_such_package", "x:y"),))
    with pytest.raises(BadSetting, match=r"no AES package is installed: pip install 'tasktrail\[crypto\]'"):
        atrest.cipher_env({"TRAIL_CIPHER_KEY": _key()})
    assert atrest.cipher_env({}) == {}


def test_key_new_prints_and_writes_a_private_file_never_over_one(tmp_path: Path) -> None:
    printed = run_trail("key", "new", home=tmp_path / "home", check=True).stdout.strip()
    assert len(base64.b64decode(printed, validate=True)) == 32
    out = tmp_path / "k"
    assert run_trail("key", "new", "--bytes", "16", "--out", str(out), home=tmp_path / "home").returncode == 0
    assert out.stat().st_mode & 0o777 == 0o600 and len(base64.b64decode(out.read_text().strip())) == 16
    kept = out.read_bytes()
    again = run_trail("key", "new", "--out", str(out), home=tmp_path / "home")
    assert again.returncode == 2 and "never overwritten" in again.stderr and out.read_bytes() == kept


def test_migrate_plain_to_encrypted_and_back(home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             new_store: Any) -> None:
    _record(home, 4, run=run_here)  # set-up and the reads after each migration in this process; migrations not
    assert run_here("compact", "1", "--before", "4", home=home).returncode == 0
    source = os.environ.get("TRAIL_DATABASE_URL") or str(home / "ledger.db")
    key = tmp_path / "key"
    assert run_here("key", "new", "--out", str(key), home=home).returncode == 0
    encrypted = tmp_path / "enc.db"
    moved = run_trail("migrate", "--from", source, "--to", str(encrypted), "--to-key-file", str(key), home=home)
    assert moved.returncode == 0, moved.stderr
    leaks = [n for n, data in _files_bytes(tmp_path).items() if n.startswith(str(encrypted)) and PLANT.encode() in data]
    assert leaks == [] and (tmp_path / "enc.db.archive").is_dir(), leaks
    assert run_trail("--db", str(encrypted), "log", "1", home=home).returncode == 4  # no key: one line

    monkeypatch.setenv("TRAIL_CIPHER_KEY_FILE", str(key))
    assert run_here("--db", str(encrypted), "verify", home=home).returncode == 0
    assert PLANT in run_here("--db", str(encrypted), "log", "1", home=home, check=True).stdout
    # Encrypted to encrypted under the same key (to PostgreSQL on that backend): the bytes move as they are.
    again = new_store() if os.environ.get("TRAIL_DATABASE_URL") else str(tmp_path / "enc2.db")
    assert run_trail("migrate", "--from", str(encrypted), "--to", again, home=home).returncode == 0
    if again.startswith("postgresql"):
        assert PLANT.encode() not in _pg_bytes(resolve(again))
    assert PLANT in run_here("--db", again, "log", "1", home=home, check=True).stdout
    back = tmp_path / "back.db"
    assert run_trail("migrate", "--from", again, "--to", str(back), "--to-plain", home=home).returncode == 0
    monkeypatch.delenv("TRAIL_CIPHER_KEY_FILE")
    assert run_here("--db", str(back), "verify", home=home).returncode == 0
    assert PLANT in run_here("--db", str(back), "log", "1", home=home, check=True).stdout


def test_either_aes_package_reads_what_the_other_wrote(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAIL_CIPHER_KEY", _key())
    both = atrest.CIPHERS
    for writer in both:
        monkeypatch.setattr(atrest, "CIPHERS", (writer,))
        app = open_ledger(resolve())
        try:
            app.open_task(f"{PLANT} by {writer[1]}")
        finally:
            app.close()
    for reader in both:
        monkeypatch.setattr(atrest, "CIPHERS", (reader,))
        app = open_ledger(resolve())
        try:
            titles = [app.state(e.task_id).title for e in app.entries()]
            assert titles == [f"{PLANT} by {w[1]}" for w in both], reader
        finally:
            app.close()
