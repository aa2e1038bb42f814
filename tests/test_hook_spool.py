"""The hook's private spool (ledger/base/hook_spool.py): a tool event is kept unparsed and unredacted in a file of
its own, and the next read (or a SessionStart's queueing) redacts it into the inbox in the order the agent sent it.
Real hook processes, real SQLite and PostgreSQL ledgers, real files; interleavings made explicit, crashes at the
code's crash points, nothing timed."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

from ledger.base import hook_spool
from ledger.base.ledger_file import ledger_file
from ledger.base.location import resolve
from ledger.capture import inbox_queue
from tests.conftest import REPO, in_thread, run_here

SESSION = "66666666-aaaa-4bbb-8ccc-000000000066"
GITHUB = "ghp_" + "Qw7Er5Ty3Ui1Op9As8Df6Gh4Jk2Lz0Xc5Vb"
"""A token of the github shape (made up): it must reach no file in clear once a read has run."""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_CRASH_AT")}
    return {**env, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), "TRAIL_BACKGROUND_DRAIN": "off", **extra}


def _hook(home: Path, payload: dict[str, Any] | str, agent: str = "claude-code",
          **env: str) -> subprocess.CompletedProcess[str]:
    """The real hook as the agents run it: a process, the payload on stdin."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "hook", agent], input=text,
                          capture_output=True, text=True, env=_env(home, **env), cwd=home.parent, timeout=120)


def _tool(call: str, command: str, session: str = SESSION, cwd: str | None = None) -> dict[str, Any]:
    payload = {"session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": call,
               "tool_input": {"command": command}, "tool_response": {"stdout": "ok", "stderr": ""}}
    return {**payload, "cwd": cwd} if cwd else payload


def _start(home: Path, source: str = "startup", session: str = SESSION) -> subprocess.CompletedProcess[str]:
    return _hook(home, {"session_id": session, "hook_event_name": "SessionStart", "source": source,
                        "cwd": str(home.parent)})


def _spooled(home: Path) -> list[Path]:
    folder = home / "spool"
    return sorted(folder.iterdir(), key=lambda p: hook_spool.order(p.name)) if folder.exists() else []


def _commands(home: Path) -> list[str]:
    state = json.loads(run_here("resume", "1", "--json", home=home, check=True).stdout)["state"]
    return [c["line"] for c in state["commands"]]


def _inbox_rows(home: Path) -> int:
    with sqlite3.connect(ledger_file()) as con:
        return int(con.execute("SELECT count(*) FROM capture_inbox").fetchone()[0])


def _every_byte(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


def _begun(home: Path) -> None:
    """A task, and a session whose first hook (the full path) made the inbox one the hook may spool for."""
    run_here("start", "spool", home=home, check=True)
    assert _start(home).returncode == 0
    assert hook_spool.trusted(os.path.abspath(ledger_file()))


def test_a_tool_event_is_spooled_unparsed_privately_and_the_next_read_redacts_and_folds_it(home: Path) -> None:
    _begun(home)
    rows = _inbox_rows(home)
    probe = ("import sys; sys.argv = ['trail', 'hook', 'claude-code']\nfrom cli.main import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('json', 'sqlite3', 'ledger.domain.redact', 'typing') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], input=json.dumps(_tool("toolu_s1", f"git push {GITHUB}")),
                          capture_output=True, text=True, env=_env(home), cwd=home.parent, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]" and proc.stderr == "", proc.stderr
    (kept,) = _spooled(home)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert GITHUB.encode() in kept.read_bytes() and _inbox_rows(home) == rows  # as sent: nothing else was written
    assert inbox_queue.waiting(resolve())
    (pushed,) = [c for c in _commands(home) if "git push" in c]
    assert pushed.startswith("git push [REDACTED:github-token:"), pushed
    assert _spooled(home) == [] and GITHUB.encode() not in _every_byte(home)


def test_events_fold_in_the_order_sent_across_spooled_files_inbox_rows_and_a_resuming_session_start(
    home: Path,
) -> None:
    """Spooled tool events, then a SessionStart (queued as an inbox row, after taking the files in), then more
    spooled events, a row queued by another path meanwhile, and a read: every event in the order it was sent, and
    the resuming SessionStart's answer already shows the events spooled before it."""
    _begun(home)
    for i in range(3):
        assert _hook(home, _tool(f"toolu_a{i}", f"step a{i}")).returncode == 0
    assert len(_spooled(home)) == 3
    resumed = _start(home, "resume")
    assert resumed.returncode == 0 and _spooled(home) == []  # taken in before its own row, in one transaction
    context = json.loads(resumed.stdout)["hookSpecificOutput"]["additionalContext"]
    assert all(f"step a{i}" in context for i in range(3)), context
    assert _hook(home, _tool("toolu_b0", "step b0")).returncode == 0
    # A row queued by a writer of its own (``doctor --retry``, a test) goes behind the file spooled before it.
    inbox_queue.enqueue(ledger_file(), "claude-code", _tool("toolu_b1", "step b1", cwd=str(home.parent)))
    assert _hook(home, _tool("toolu_b2", "step b2")).returncode == 0
    assert [c for c in _commands(home) if c.startswith("step")] == [
        "step a0", "step a1", "step a2", "step b0", "step b1", "step b2"]


@pytest.mark.parametrize("crash", ["spool-taken", "spool-committed"])
def test_a_read_killed_while_taking_the_spool_in_loses_and_repeats_nothing(home: Path, crash: str) -> None:
    _begun(home)
    for i in range(3):
        assert _hook(home, _tool(f"toolu_c{i}", f"step c{i}")).returncode == 0
    killed = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "list"], capture_output=True,
                            text=True, env=_env(home, TRAIL_CRASH_AT=crash), cwd=home.parent, timeout=120)
    assert killed.returncode == -9
    # Before the commit the files stay, the rows are gone with the transaction; after it the rows are in and the
    # files stay too, named in capture_spooled, so the next read unlinks them instead of taking them again.
    assert len(_spooled(home)) == 3
    assert [c for c in _commands(home) if c.startswith("step")] == ["step c0", "step c1", "step c2"]
    assert _spooled(home) == []


def test_a_hook_killed_mid_write_leaves_only_a_temporary_file_which_the_fold_dead_letters(home: Path) -> None:
    _begun(home)
    torn = _hook(home, _tool("toolu_t", f"echo {GITHUB}"), TRAIL_CRASH_AT="hook-spool-torn")
    assert torn.returncode == -9
    (temp,) = (home / "spool").iterdir()
    assert temp.name.startswith(".") and temp.name.endswith(".tmp")  # never under a name the fold takes
    assert _hook(home, _tool("toolu_after", "after the torn one")).returncode == 0
    assert [c for c in _commands(home) if c.startswith("after")] == ["after the torn one"]
    assert list((home / "spool").iterdir()) == []
    (letter,) = (home / "deadletter").iterdir()
    assert "torn" in json.loads(letter.read_text())["reason"] and GITHUB not in letter.read_text()


@pytest.mark.sqlite_only("makes files of another owner (root only) and reads the dead letters")
def test_hostile_spool_files_are_dead_lettered_redacted_and_the_rest_lands(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _begun(home)
    monkeypatch.setattr(hook_spool, "LIMIT", 64 << 10)  # the read below runs here: a huge file need not be 64 MiB
    folder = home / "spool"
    inbox = os.path.abspath(ledger_file())

    def plant(name: str, body: bytes) -> Path:
        path = folder / f"{name}-1.json"
        path.write_bytes(hook_spool.MAGIC + b"\0".join(x.encode() for x in ("claude-code", inbox, "/", "raw")) +
                         b"\0" + body)
        return path

    folder.mkdir(exist_ok=True)
    plant("1000", b'{"session_id": "' + SESSION.encode() + b'", "prompt": "' + GITHUB.encode())  # not JSON
    (folder / "1001-1.json").write_bytes(b"no header at all, " + GITHUB.encode())
    plant("1002", b"{}" + b" " * (hook_spool.LIMIT + 1))  # over what a hook ever keeps
    (folder / "1003-1.json").symlink_to(tmp_path / "elsewhere")
    os.mkfifo(folder / "1004-1.json")  # opened without waiting for a writer
    other = plant("1005", json.dumps(_tool("toolu_o", f"forged {GITHUB}")).encode())
    if os.geteuid() == 0:
        os.chown(other, 65534, 65534)
    assert _hook(home, _tool("toolu_good", "the good one")).returncode == 0
    listing = run_here("list", home=home)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr
    commands = _commands(home)
    assert "the good one" in commands and not any("forged" in c for c in commands)
    assert list(folder.iterdir()) == []
    letters = [json.loads(p.read_text()) for p in (home / "deadletter").iterdir()]
    reasons = " | ".join(letter["reason"] for letter in letters)
    assert len(letters) == (6 if os.geteuid() == 0 else 5), reasons
    assert os.geteuid() != 0 or "owned by another user" in reasons
    for said in ("1000-1.json: Unterminated string", "no header", "over the", "not opened", "not a regular file"):
        assert said in reasons, (said, reasons)
    assert GITHUB.encode() not in _every_byte(home)


@pytest.mark.sqlite_only("replaces the spool folder with a file")
def test_an_unwritable_spool_never_stalls_the_hook_and_loses_nothing(home: Path) -> None:
    _begun(home)
    (home / "spool").rmdir() if (home / "spool").exists() else None
    (home / "spool").write_text("in the way")  # makedirs fails: the hook queues the payload itself
    proc = _hook(home, _tool("toolu_u", "unspooled"))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    (home / "spool").unlink()
    assert "unspooled" in _commands(home)


def test_a_hook_spools_for_its_own_ledger_and_a_read_of_another_leaves_it(home: Path, tmp_path: Path) -> None:
    _begun(home)
    other = tmp_path / "other.db"
    run_here("--db", str(other), "start", "other", home=home, check=True)
    assert _hook(home, {"session_id": "s-other", "hook_event_name": "SessionStart", "cwd": str(home.parent)},
                 TRAIL_DB=str(other)).returncode == 0
    assert _hook(home, _tool("toolu_x", "for the other", session="s-other"), TRAIL_DB=str(other)).returncode == 0
    assert _hook(home, _tool("toolu_m", "for mine")).returncode == 0
    assert "for mine" in _commands(home) and len(_spooled(home)) == 1  # the other ledger's file waits for it
    logged = run_here("--db", str(other), "log", "1", home=home, check=True).stdout
    assert "for the other" in logged and _spooled(home) == []


@pytest.mark.sqlite_only("the brief cache answers for SQLite ledgers only")
def test_the_brief_cache_never_answers_past_a_spooled_payload(home: Path) -> None:
    from tests.test_briefcache import trail

    _begun(home)
    run_here("resume", home=home, check=True)
    before, fast = trail(home, "resume")
    assert fast
    assert _hook(home, _tool("toolu_bc", "make spooled")).returncode == 0
    after, fast = trail(home, "resume")
    assert not fast and "make spooled" in after and "make spooled" not in before


def test_a_file_renamed_into_place_after_the_drain_listed_it_is_not_taken_for_torn(home: Path, tmp_path: Path) -> None:
    # The drain lists a hook's temporary file; the hook then renames it and exits, so its pid is gone when the
    # drain looks at the temporary name: that is a whole payload moved, not a hook that died writing.
    _begun(home)
    gates = {step: tmp_path / step for step in ("hook-spool-written", "spool-listed")}
    for fifo in gates.values():
        os.mkfifo(fifo)

    def started(step: str, argv: list[str], stdin: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-c", "from cli.main import main; main()", *argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_env(home, TRAIL_GATE_AT=f"{step}:{gates[step]}"), cwd=home.parent)
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        return proc

    def reached(step: str) -> IO[bytes]:
        """The gate's writer, once the process waits there (a daemon thread: one that never comes fails)."""
        writer: IO[bytes] = in_thread(lambda: open(gates[step], "wb"))  # noqa: SIM115
        return writer

    writer = started("hook-spool-written", ["hook", "claude-code"], json.dumps(_tool("toolu_m", "make moved")))
    reader = started("spool-listed", ["list"], "")
    try:
        held_hook = reached("hook-spool-written")  # its file is whole under the temporary name
        held_read = reached("spool-listed")  # the drain has listed it
        held_hook.close()
        assert writer.wait(timeout=60) == 0 and writer.stderr is not None and writer.stderr.read() == ""
        held_read.close()
        assert reader.wait(timeout=60) == 0
    finally:
        for proc in (writer, reader):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert not (home / "deadletter").exists() or list((home / "deadletter").iterdir()) == []
    assert [c for c in _commands(home) if c.startswith("make")] == ["make moved"]  # the next read takes it
    assert _spooled(home) == []


def test_on_a_file_system_without_hard_links_a_fresh_inbox_is_renamed_into_place(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*_: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # what a file system with no hard links answers

    monkeypatch.setattr(os, "link", refused)
    inbox = tmp_path / "fresh" / "inbox.db"
    row = inbox_queue.insert(str(inbox), "claude-code", json.dumps(_tool("toolu_nolink", "make")))
    with sqlite3.connect(inbox) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert [r[0] for r in con.execute("SELECT id FROM capture_inbox")] == [row]
    con.close()
    assert sorted(p.name for p in inbox.parent.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["inbox.db"]
