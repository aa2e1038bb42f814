"""Capture never stalls and never bricks the ledger, whatever it is given (issue 25): redaction and the
JSON depth check in linear time, hook payloads read within a bound and a deadline, rows that cannot
be folded moved aside, every file read bounded, foreign SQLite files left alone, and secrets redacted
before anything is cut. Where memory or CPU is the point, the hook or command runs as a process under
resource limits (RLIMIT_AS, RLIMIT_CPU), so exceeding them fails the test; nothing here is timed."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import resource
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.capture.hook import MAX_PAYLOAD
from ledger.capture.jsonl import MAX_DEPTH, loads, too_deep
from ledger.domain.redact import BUILTIN, _key_bodies, _spans, redact_json, redact_text
from tests.conftest import REPO, run_here
from tests.test_hostile import _PEAK as PEAK_PROBE

SESSION = "44444444-aaaa-4bbb-8ccc-0000000000ee"
GITHUB = "ghp_" + "Zq8Xw3Vb7Nm2Kp5Lr9Ts4Yc6Hd1Gf0Ja3Eu"
"""A token of the github shape (made up), for the checks that no secret reaches a file in clear."""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_STALL_AT", "TRAIL_HOOK_DEADLINE_S")}
    return {**env, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), **extra}


def _limited(cpu_s: int, memory_mb: int) -> Callable[[], None]:
    """A preexec_fn: the child gets at most ``cpu_s`` CPU seconds (then SIGXCPU) and ``memory_mb`` of address space."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    return apply


def _hook(home: Path, agent: str, body: bytes | Iterator[bytes], limits: Callable[[], None] | None = None,
          **env: str) -> subprocess.CompletedProcess[bytes]:
    """The real hook process; ``body`` may be pieces, written as they come (a payload never held whole here)."""
    proc = subprocess.Popen([sys.executable, "-c", "from cli.main import main; main()", "hook", agent],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(home, **env), cwd=home.parent, preexec_fn=limits)
    assert proc.stdin is not None
    try:
        for piece in [body] if isinstance(body, bytes) else body:
            proc.stdin.write(piece)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()  # the hook writes a line at most: no pipe fills up
    proc.wait(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _payload(agent: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "cwd": "", "hook_event_name": "PostToolUse", **fields}


def _inbox(home: Path) -> list[str]:
    db = home / "ledger.db"
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'capture_inbox'").fetchone():
            return []
        return [text for (text,) in conn.execute("SELECT payload FROM capture_inbox ORDER BY id")]
    finally:
        conn.close()


def _stored_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.glob("ledger.db*"))


# -- 1. redaction, linear ------------------------------------------------------------------------

HOSTILE_RUNS = {
    "dashes": "-" * (256 << 10),
    "base64url": "".join(random.Random(7).choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                                                  k=256 << 10)),
    "jwt starts": "eyJ-" * (16 << 10),
    "curl users": "(-u" * (20 << 10),
    "mysql words": "mysql " * (10 << 10),
    "key lines": "QUFBQUFBQUFBQUFBQUFB\n" * (3 << 10) + "-----END PRIVATE KEY-----",
}
"""Runs that made one pattern read to the text's end from every position (32 KiB of '-' took 15 s)."""


@pytest.mark.sqlite_only("reads the inbox rows from the SQLite file")
def test_hostile_runs_pass_the_hook_within_cpu_and_memory_bounds(home: Path) -> None:
    run_here("start", "hostile runs", home=home, check=True)
    output = "\n".join(HOSTILE_RUNS.values())  # ~1 MB, under the 1 MiB a string keeps: all of it redacted
    body = json.dumps(_payload("claude-code", tool_name="Bash", tool_use_id="toolu_runs",
                               tool_input={"command": "cat runs"}, tool_response={"stdout": output, "stderr": ""}))
    # Quadratic, the dashes alone took about 16 CPU minutes at this size; linear, well under a second.
    proc = _hook(home, "claude-code", body.encode(), _limited(cpu_s=30, memory_mb=1024), TRAIL_HOOK_DEADLINE_S="600")
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr[-500:]
    assert len(_inbox(home)) == 1 and not (home / "spool").exists()
    torn = '{"session_id": "' + SESSION + '", "tool_input": "' + '{\\"k\\": [1]} ' * (10 << 10)  # 128 KiB, torn
    proc = _hook(home, "claude-code", torn.encode(), _limited(cpu_s=30, memory_mb=1024), TRAIL_HOOK_DEADLINE_S="600")
    assert proc.returncode == 0 and len(proc.stderr.decode().strip().splitlines()) == 1, proc.stderr[-500:]
    (letter,) = (home / "deadletter").glob("*.json")
    assert stat.S_IMODE(letter.stat().st_mode) == 0o600


_run_chars = st.sampled_from(["-", "_", "a", "A", "0", "=", "+", "/", ".", ":", " ", "\n", "\\", '"', "'", "(", "é",
                              "eyJ", "sk-", "ghp_", "-u", "-p", "mysql ", "://", "?", "&", "key=", "token:",
                              "-----END PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----", "AAAAAAAAAAAAAAAA"])


@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.tuples(_run_chars, st.integers(1, 40)), max_size=8))
def test_the_key_body_finder_gives_its_regex_spans_on_runs_of_any_class(pieces: list[tuple[str, int]]) -> None:
    text = "".join(piece * count for piece, count in pieces)
    (pattern,) = [p for p in BUILTIN if p.find is _key_bodies]  # not the wrapped-block finder beside it
    assert [f.span() for f in _key_bodies(text)] == [m.span() for m in pattern.regex.finditer(text)]


def _steps(work: Callable[[], object]) -> int:
    """The Python lines ``work`` runs (each turn of a loop or comprehension one more) and its calls
    into C (each regex search among them): work counted, not timed."""
    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return trace

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += event == "c_call"

    sys.settrace(trace)
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    return count


_many_secrets = st.sampled_from([f"{GITHUB}\n", f"[REDACTED:jwt:0123abcd] {GITHUB} ", "a=ghp_\n", "-----END\n"])


@settings(max_examples=40, deadline=None)
@given(piece=_run_chars | _many_secrets | st.text(min_size=1, max_size=6))
def test_redaction_work_does_not_grow_faster_than_the_text(piece: str) -> None:
    """8 times the text may cost at most 8 times the steps (and a constant): a loop over every span
    for each line (``redact_strings``), or over every marker for each span, would not hold."""
    from ledger.domain import redact

    def work(size: int) -> int:
        redact._BASE64_VERDICTS.clear()
        text = (piece * (size // len(piece) + 1))[:size]
        return _steps(lambda: (redact_text(text, BUILTIN), redact.redact_strings(text.split("\n"), BUILTIN)))

    small, large = work(2 << 10), work(16 << 10)
    assert large <= 8 * small + 400, (piece, small, large)


# -- 2. torn JSON, linear, at every length --------------------------------------------------------


def _depth_reference(text: str) -> int:
    """How deep the arrays and objects outside strings nest, read one character at a time (an
    unclosed string runs to the end)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{} ', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=120, deadline=None)
@given(value=_json, limit=st.integers(0, 6))
def test_torn_json_at_every_length_is_refused_or_parsed_and_its_depth_is_exact(value: Any, limit: int) -> None:
    text = json.dumps(value)
    for cut in range(len(text) + 1):
        torn = text[:cut]
        assert too_deep(torn, limit) == (_depth_reference(torn) > limit), torn
        try:
            parsed = loads(torn, limit=MAX_DEPTH)
        except ValueError:
            assert cut < len(text) or _depth_reference(text) > MAX_DEPTH
        else:
            assert cut == len(text) or parsed == json.loads(torn)


# -- 3. bounded payloads and a deadline -----------------------------------------------------------


@pytest.mark.sqlite_only("reads the inbox rows from the SQLite file")
def test_a_payload_over_the_bound_is_read_past_in_bounded_memory_and_noted(home: Path) -> None:
    run_here("start", "huge payload", home=home, check=True)
    head = json.dumps(_payload("claude-code", tool_name="Bash", tool_use_id="toolu_huge",
                               tool_input={"command": "yes"}))[:-1] + ', "tool_response": {"stdout": "'
    piece, pieces, tail = b"y" * (1 << 20), 72, b'", "stderr": ""}}'
    digest = hashlib.sha256(head.encode())
    for _ in range(pieces):
        digest.update(piece)
    digest.update(tail)
    size = len(head) + pieces * len(piece) + len(tail)
    assert size > MAX_PAYLOAD

    def body() -> Iterator[bytes]:
        yield head.encode()
        yield from (piece for _ in range(pieces))
        yield tail

    # Read whole, this payload took about 4.3 times its size (300 MB); bounded, the 64 MiB head and its text.
    proc = _hook(home, "claude-code", body(), _limited(cpu_s=60, memory_mb=400))
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr[-500:]
    (row,) = _inbox(home)
    assert json.loads(row)["_trail_dropped"] == {"size": size, "sha256": digest.hexdigest(), "limit": MAX_PAYLOAD}
    events = json.loads(run_here("log", "1", "--json", home=home, check=True).stdout)
    note = events[-1]["text"]
    assert events[-1]["type"] == "NoteAdded" and f"of {size} bytes" in note and "toolu_huge" in note, events[-1]


@pytest.mark.sqlite_only("reads the ledger file's bytes")
def test_at_its_deadline_the_hook_spools_the_raw_payload_privately_and_the_next_read_redacts_it(home: Path) -> None:
    run_here("start", "deadline", home=home, check=True)
    body = json.dumps(_payload("claude-code", tool_name="Bash", tool_use_id="toolu_late",
                               tool_input={"command": f"git push https://{GITHUB}@example.com/repo"},
                               tool_response={"stdout": "pushed", "stderr": ""}))
    # The step after parsing waits for a signal: only the deadline's timer ends it (no sleep, no race).
    proc = _hook(home, "claude-code", body.encode(), TRAIL_STALL_AT="hook-parsed", TRAIL_HOOK_DEADLINE_S="0.5")
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1 and "gave up after 0.5 s" in lines[0], lines
    (spooled,) = (home / "spool").iterdir()
    assert stat.S_IMODE(spooled.stat().st_mode) == 0o600 and stat.S_IMODE(spooled.parent.stat().st_mode) == 0o700
    assert _inbox(home) == []  # nothing reached the ledger file in clear
    state = json.loads(run_here("resume", "1", "--json", home=home, check=True).stdout)["state"]
    assert state["commands_total"] == 1 and not any((home / "spool").iterdir())
    assert GITHUB.encode() not in _stored_bytes(home)


# -- 4. a row that cannot be folded never bricks the ledger ---------------------------------------

HUGE = "99999999999999999999"
POISON = {
    "claude-code": [
        _payload("claude-code", hook_event_name="PostToolUseFailure", tool_name="Bash", tool_use_id="toolu_p1",
                 tool_input={"command": f"echo {GITHUB}"}, error=f"Exit code {HUGE}\nboom"),
        _payload("claude-code", tool_name={"not": "a name"}, tool_use_id=7, tool_input=5, tool_response=["x"]),
        {"hook_event_name": "PostToolUse"},
        _payload("claude-code", tool_name="Bash", tool_use_id="toolu_p4", tool_input={"command": float("nan")},
                 tool_response={"stdout": float("inf"), "stderr": None, "interrupted": "no"}),
        _payload("claude-code", hook_event_name="PostCompact", trigger=10**30, compact_summary=10**30),
    ],
    "codex": [
        _payload("codex", tool_name="Bash", tool_use_id="call_p1", tool_input={"command": f"echo {GITHUB}"},
                 tool_response=f"Wall time: {HUGE} seconds\nProcess exited with code {HUGE}\nOutput:\nboom"),
        _payload("codex", tool_name="apply_patch", tool_use_id="call_p2", tool_input={"command": 12},
                 tool_response={"bad": float("nan")}),
        {"hook_event_name": "PostToolUse", "tool_name": "Bash"},
        _payload("codex", tool_name="Bash", tool_use_id=10**30, tool_input=[1, 2], tool_response=None),
        _payload("codex", hook_event_name="Stop", last_assistant_message={"x": 1}, stop_hook_active="yes"),
    ],
}
GOOD = {
    "claude-code": _payload("claude-code", tool_name="Bash", tool_use_id="toolu_ok", tool_input={"command": "make"},
                            tool_response={"stdout": "built", "stderr": "", "interrupted": False}),
    "codex": _payload("codex", tool_name="Bash", tool_use_id="call_ok", tool_input={"command": "make"},
                      tool_response="Wall time: 0.2 seconds\nProcess exited with code 0\nOutput:\nbuilt"),
}


@pytest.mark.sqlite_only("reads the dead letters and the ledger file's bytes")
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_poison_rows_go_to_dead_letters_and_everything_after_them_lands(home: Path, agent: str) -> None:
    run_here("start", "poison", home=home, check=True)
    for payload in [*POISON[agent], GOOD[agent]]:
        payload = {**payload, "cwd": str(home.parent)} if "cwd" in payload else payload
        hooked = run_here("hook", agent, home=home, stdin=json.dumps(payload))  # json writes NaN as NaN, as agents may
        assert hooked.returncode == 0 and len(hooked.stderr.strip().splitlines()) <= 1, hooked.stderr
    listing = run_here("list", home=home)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr
    notices = listing.stderr.strip().splitlines()
    assert notices and all(line.startswith("trail: ") for line in notices), notices
    assert all("99999999999999999999" not in line for line in notices), notices  # the value is never echoed
    state = json.loads(run_here("resume", "1", "--json", home=home, check=True).stdout)["state"]
    assert "make" in [c["line"] for c in state["commands"]]  # the row after the poison landed
    for later in ("list", "log", "verify"):
        done = run_here(later, home=home)
        assert done.returncode == 0 and done.stderr == "", (later, done.stderr)
    assert _inbox(home) == []
    for letter in (home / "deadletter").glob("*.json") if (home / "deadletter").exists() else []:
        assert stat.S_IMODE(letter.stat().st_mode) == 0o600 and GITHUB not in letter.read_text()
    assert GITHUB.encode() not in _stored_bytes(home)
    start = run_here("hook", agent, home=home, stdin=json.dumps(
        {"session_id": SESSION, "cwd": str(home.parent), "hook_event_name": "SessionStart", "source": "resume"}))
    assert start.returncode == 0 and "additionalContext" in start.stdout, start.stderr


def test_an_exit_code_no_process_can_have_is_refused_by_the_event_model() -> None:
    from pydantic import ValidationError

    from ledger.domain import events as ev

    for code in (int(HUGE), -(2**31) - 1, 2**32):
        with pytest.raises(ValidationError, match="exit_code"):
            ev.CommandRan.model_validate({"originator_id": "00000000-0000-0000-0000-000000000001",
                                          "originator_version": 1, "timestamp": "2026-01-01T00:00:00Z",
                                          "exit_code": code})
    for code in (-9, 0, 255, 0xC0000005):
        ev.CommandRan.model_validate({"originator_id": "00000000-0000-0000-0000-000000000001",
                                      "originator_version": 1, "timestamp": "2026-01-01T00:00:00Z", "exit_code": code})


# -- 5. every read of a file is bounded -----------------------------------------------------------

_PEAK = PEAK_PROBE  # a trail process that reports its peak RSS last


def _trail_process(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PEAK, *args], env=_env(home), cwd=home.parent,
                          capture_output=True, text=True, timeout=120)


def test_changed_refuses_devices_and_fifos_and_hashes_a_huge_file_in_bounded_memory(home: Path, tmp_path: Path) -> None:
    run_here("start", "files", home=home, check=True)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in (("/dev/zero", "a character device"), (str(fifo), "a FIFO")):
        proc = _trail_process(home, "changed", path)  # /dev/zero was read until killed; a FIFO's open waits
        lines = proc.stderr.strip().splitlines()[:-1]  # the last line is the probe's PEAK
        assert proc.returncode == 2 and lines == [f"trail: {path} is {kind}, not a regular file; trail changed "
                                                  "records files"], proc.stderr
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as handle:
        handle.truncate(128 << 20)  # sparse: no 128 MiB written
    proc = _trail_process(home, "changed", str(huge), "--json")
    assert proc.returncode == 0, proc.stderr
    peak_kib = int(proc.stderr.rsplit("PEAK ", 1)[1].split()[0])
    assert peak_kib < 120 << 10, f"hashing a 128 MiB file peaked at {peak_kib >> 10} MiB"  # read whole: > 250 MiB
    assert json.loads(proc.stdout)["undiffed"] == {str(huge): f"{128 << 20} bytes, over the {1 << 20} diffed"}
    digest = hashlib.sha256()
    for _ in range(128):
        digest.update(bytes(1 << 20))
    event = json.loads(run_here("log", "1", "--json", home=home, check=True).stdout)[-1]
    assert event["after_sha256"] == digest.hexdigest() and event["diff"] is None


# -- 6. the hook leaves another application's database alone --------------------------------------


def test_the_hook_refuses_a_foreign_sqlite_file_as_the_cli_does(tmp_path: Path) -> None:
    home = tmp_path / "home"
    other = tmp_path / "notes.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    body = json.dumps(_payload("claude-code", tool_name="Bash", tool_use_id="t", tool_input={"command": "ls"}))
    proc = _hook(home, "claude-code", body.encode(), TRAIL_DB=str(other))
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1, lines
    assert f"{other} is not a tasktrail ledger (an SQLite database without its tables)" in lines[0]
    assert other.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]
    listing = run_here("list", home=home, env={"TRAIL_DB": str(other)})
    assert listing.returncode != 0 and "is not a tasktrail ledger (an SQLite database without its tables)" in \
        listing.stderr


# -- 7. redacted before anything is cut or stored --------------------------------------------------


@pytest.mark.sqlite_only("reads the inbox and the ledger file's bytes")
def test_secrets_are_redacted_before_cutting_inside_json_strings_glued_and_in_the_inbox(home: Path,
                                                                                        tmp_path: Path) -> None:
    password = "Kq7" + "Zp9Vw2xR"
    run_here("start", "secrets", home=home, check=True)
    # The output's last 4 KiB begin between DB_PASSWORD= and its value: cut first, the value stood alone.
    script = f"print('DB_PASSWORD={password}'); print('x' * {4096 - len(password) - 1})"
    run_here("ran", "--", sys.executable, "-c", script, home=home, check=True)
    run_here("note", f"token in a name: key_{GITHUB}", home=home, check=True)
    # An MCP tool's input, parsed: the key is no longer beside its value in any text.
    mcp = _payload("claude-code", tool_name="mcp__db__login", tool_use_id="toolu_mcp", cwd=str(home.parent),
                   tool_input={"user": "me", "password": password}, tool_response="ok")
    run_here("hook", "claude-code", home=home, stdin=json.dumps(mcp), check=True)
    assert len(_inbox(home)) == 1 and password not in _inbox(home)[0]
    # An imported tool input holding a JSON string: escaped inside the stored JSON text until decoded.
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": SESSION, "timestamp": "2026-01-01T00:00:00Z",
         "cwd": str(home.parent), "message": {"role": "user", "content": "post the record"}},
        {"type": "assistant", "uuid": "a1", "sessionId": SESSION, "timestamp": "2026-01-01T00:00:01Z",
         "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_j", "name": "mcp__api__post",
                                                       "input": {"body": json.dumps({"api_key": password})}}]}},
        {"type": "user", "uuid": "r1", "sessionId": SESSION, "timestamp": "2026-01-01T00:00:02Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_j", "content": "ok"}]}},
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_here("import", "claude-code", str(transcript), "--task", "1", home=home, check=True)
    state = json.loads(run_here("resume", "1", "--json", home=home, check=True).stdout)["state"]
    assert state["counts"].get("ToolCalled", 0) >= 2
    stored = _stored_bytes(home)
    for secret in (password, GITHUB, password[-8:]):
        assert secret.encode() not in stored, secret


def test_redaction_helpers_cover_the_shapes_above() -> None:
    assert "ghp_" not in redact_text(f"key_{GITHUB}", BUILTIN)
    escaped = json.dumps({"body": json.dumps({"api_key": "Zx81kQpL0vYt3mN"})})
    assert "Zx81kQpL0vYt3mN" not in redact_text(escaped, BUILTIN) and json.loads(redact_text(escaped, BUILTIN))
    kept = redact_json({"password": "hunter22", "api_key": "$KEY", "max_tokens": "4096"}, BUILTIN)
    assert re.fullmatch(r"\[REDACTED:assignment:[0-9a-f]{8}\]", kept.pop("password"))
    assert kept == {"api_key": "$KEY", "max_tokens": "4096"}
    assert _spans("mask-" + "a" * 30, BUILTIN) == []  # a word ending in sk- is no key
