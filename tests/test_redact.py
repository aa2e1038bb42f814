"""Redaction: no planted secret reaches the ledger file, whatever the path; markers keep a short hash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.app.store import Ledger
from ledger.base.errors import TrailError
from ledger.domain import events as ev
from ledger.domain.redact import BUILTIN, _load_user_patterns, marker, redact_text
from tests.conftest import REPO, run_trail

# Fake secrets of the right shapes (none is a live credential).
CORPUS = {
    "openai-key": "sk-proj-Zq8xY2mN4pL6vB1cD3fG5hJ7kQ9wE0rT",
    "anthropic-key": "sk-ant-api03-Qw3rTy6uIo9pAs2dFg5hJk8lZx1cVb4n",
    "github-token": "ghp_R2d2C3po0123456789AbCdEfGhIjKlMnOpQr",
    "github-pat": "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdef",
    "aws-access-key": "AKIAQ5EXAMPLE7TZ4JWX",
    "slack-token": "xoxb-2048-9955-Tk0mYsEcReTvAlUe",
    "google-api-key": "AIzaSyD4-qwertyuiopASDFGHJKLzxcvbnm12345",
    "stripe-key": "sk_live_51HqLmN0pQrStUvWxYz0123",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJlLXZhbHVlLWhlcmU",
    "private-key-body": "MIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2ZTcrnS4Ivrsq",
    "bearer": "b3arerT0kenValue0987654321",
    "env-password": "Tr0ub4dor&3horse",
    "json-secret": "q1w2e3r4t5y6u7i8",
    "url-password": "s3cretPa55w0rd",
}

TEXT = f"""export OPENAI_API_KEY={CORPUS["openai-key"]}
ANTHROPIC={CORPUS["anthropic-key"]} and {CORPUS["github-token"]} / {CORPUS["github-pat"]}
aws {CORPUS["aws-access-key"]} slack {CORPUS["slack-token"]} google {CORPUS["google-api-key"]}
stripe {CORPUS["stripe-key"]} jwt {CORPUS["jwt"]}
-----BEGIN OPENSSH PRIVATE KEY-----
{CORPUS["private-key-body"]}
-----END OPENSSH PRIVATE KEY-----
curl -H "Authorization: Bearer {CORPUS["bearer"]}" https://api.example.com
DB_PASSWORD={CORPUS["env-password"]}
{{"client_secret": "{CORPUS["json-secret"]}"}}
git clone https://deploy:{CORPUS["url-password"]}@git.example.com/repo.git
"""


def test_every_builtin_kind_is_redacted_and_markers_are_stable() -> None:
    out = redact_text(TEXT, BUILTIN)
    for name, secret in CORPUS.items():
        assert secret not in out, name
    assert marker("github-token", CORPUS["github-token"]) in out
    assert redact_text(out, BUILTIN) == out  # markers are not redacted again
    # Equal secrets give equal markers; different ones differ.
    twice = redact_text(f"{CORPUS['github-token']} {CORPUS['github-token']} {CORPUS['openai-key']}", BUILTIN)
    parts = twice.split()
    assert parts[0] == parts[1] != parts[2]


def test_ordinary_text_is_left_alone() -> None:
    text = "max_tokens=4096; token_count: 17; a basic understanding; token = get_token(); password: ${PASSWORD}"
    assert redact_text(text, BUILTIN) == text


def test_user_patterns_from_toml_and_bad_config(tmp_path: Path) -> None:
    (tmp_path / "redact.toml").write_text('[[pattern]]\nname = "internal"\nregex = "itk_[a-z0-9]{8,}"\n')
    patterns = _load_user_patterns(str(tmp_path))
    assert redact_text("use itk_abcdef123 now", patterns).startswith("use [REDACTED:internal:")
    (tmp_path / "redact.toml").write_text('[[pattern]]\nname = "broken"\nregex = "(unclosed"\n')
    with pytest.raises(TrailError, match=r"redact.toml, pattern 1"):
        _load_user_patterns(str(tmp_path))


def test_cli_append_path_redacts(home: Path, ledger: Ledger) -> None:
    run_trail("start", f"Rotate {CORPUS['github-token']}", home=home, check=True)
    state = ledger.state(ledger.task_id(1))
    assert CORPUS["github-token"] not in state.title and "[REDACTED:github-token:" in state.title


@pytest.mark.sqlite_only("reads the SQLite file's bytes")
def test_no_planted_secret_reaches_the_database_file(home: Path, tmp_path: Path) -> None:
    session = "33333333-cccc-4ddd-8eee-000000000003"
    base = {"sessionId": session, "cwd": "/w", "version": "2.0.0", "isSidechain": False}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "p1",
            "parentUuid": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": {"role": "user", "content": f"Use these credentials:\n{TEXT}"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "p1",
            "timestamp": "2026-01-01T00:00:02Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_S1", "name": "Bash", "input": {"command": f"echo '{TEXT}'"}},
                    {
                        "type": "tool_use",
                        "id": "toolu_S2",
                        "name": "Write",
                        "input": {"file_path": "/w/.env", "content": TEXT},
                    },
                ],
            },
        },
        {
            **base,
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "timestamp": "2026-01-01T00:00:03Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_S1", "content": TEXT}],
            },
            "toolUseResult": {"stdout": TEXT, "stderr": TEXT},
        },
        {
            **base,
            "type": "user",
            "uuid": "r2",
            "parentUuid": "r1",
            "timestamp": "2026-01-01T00:00:04Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_S2", "content": "ok"}],
            },
            "toolUseResult": {"type": "create", "filePath": "/w/.env", "content": TEXT, "structuredPatch": []},
        },
    ]
    transcript = tmp_path / f"{session}.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_trail("import", "claude-code", str(transcript), home=home, check=True)
    # And the live path: a hook payload full of secrets, folded in by a read.
    payload = {
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_S3",
        "tool_input": {"command": TEXT},
        "tool_response": {"stdout": TEXT, "stderr": ""},
    }
    env = {"TRAIL_HOME": str(home), "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
        input=json.dumps(payload),
        text=True,
        env=env,
        check=True,
        timeout=30,
    )
    run_trail("list", home=home, check=True)
    data = b"".join(p.read_bytes() for p in home.glob("ledger.db*"))
    assert b"[REDACTED:" in data  # the events are there, in redacted form
    events = b"tasktrail/CommandRan" in data and b"tasktrail/FileChanged" in data
    assert events
    for name, secret in CORPUS.items():
        assert secret.encode() not in data, name


def test_state_of_redacted_import_keeps_the_structure(home: Path, ledger: Ledger) -> None:
    state = ledger.append(
        ledger.open_task("t").id or ledger.task_id(1), ev.NoteAdded, text=f"key {CORPUS['aws-access-key']}"
    )
    assert state.notes[-1].text.startswith("key [REDACTED:aws-access-key:")


def test_capped_hook_strings_keep_full_size_and_hash() -> None:
    import hashlib

    from ledger.base.caps import CUTS_KEY, Cut, cap_payload, restore
    from ledger.domain.bounds import bound

    text = "head-" + "z" * 3000 + "-tail"
    capped = cap_payload({"tool_response": {"stdout": text, "stderr": "short"}}, limit=100)
    kept = capped["tool_response"]["stdout"]
    assert kept == text[-100:] and capped["tool_response"]["stderr"] == "short"
    assert capped[CUTS_KEY] == [
        {"path": ["tool_response", "stdout"], "size": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    ]
    back = restore(json.loads(json.dumps(capped)))  # as the inbox stores and reads it
    assert CUTS_KEY not in back
    cut = back["tool_response"]["stdout"]
    assert isinstance(cut, Cut) and isinstance(str(cut), Cut) and cut.size == len(text)
    b = bound(cut, limit=50)
    assert b.truncated and b.size == len(text) and b.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert b.tail.endswith("-tail")
    assert cap_payload({"a": "short"}, limit=100) == {"a": "short"}


def test_the_old_in_band_cut_marker_is_plain_text() -> None:
    """An output that starts like a cut marker is an output: nothing inside a string says it was cut."""
    from ledger.domain.bounds import bound

    forged = "\x00trail-cut 99999999 " + "ab" * 32 + "\x00" + "short"
    b = bound(forged)
    assert not b.truncated and b.size == len(forged.encode()) and b.tail == forged
    from ledger.base.caps import CUTS_KEY, cap_payload

    claimed = {"x": "y", CUTS_KEY: [{"path": ["x"], "size": 10**9, "sha256": "ab" * 32}]}
    assert cap_payload(claimed) == {"x": "y"}  # a cut list the agent sent is dropped by the hook


def test_a_token_in_a_branch_title_is_stored_nowhere(tmp_path: Path) -> None:
    """`trail branch` names a new task: its title goes through redaction like `trail start`'s."""
    token = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA7"  # 36 after the prefix
    assert len(token) == 40
    home, data = tmp_path / "home", tmp_path / "data"
    data.mkdir()
    db = str(data / "ledger.db")

    def trail(*args: str) -> str:
        return run_trail("--db", db, *args, home=home, cwd=tmp_path, check=True).stdout

    trail("start", "Fix the flaky login test")
    trail("require", "Login must pass on CI")
    trail("attempt", "Retry the request")
    trail("branch", "1", f"fix with {token}", "--at", "2")
    files = [p for root in (home, data) for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "ledger.db" for p in files)
    assert [p for p in files if token.encode() in p.read_bytes()] == []
    listed = {t["number"]: t for t in json.loads(trail("list", "--json"))}
    title = listed[2]["title"]
    assert token not in title and title.startswith("fix with [REDACTED:github-token:"), title
    assert token not in json.dumps(listed)


FORMS = {
    # form with {} where the secret goes: the secret must not survive, whatever is around it
    "x-api-key": ("curl -H 'X-Api-Key: {}' https://x", "Zq8xY2mN4pL6vB1cD3fG5hJ7kQ9wE0rT"),
    "slack-webhook": ("https://hooks.slack.com/services/{}", "T0AB12CD3/B0EF45GH6/q1w2e3r4t5y6u7i8o9p0a1s2"),
    "mysql-p": ("mysqldump -uroot -p{} shop > x.sql", "Myp4ssw0rdQz"),
    "npm-token": ("//registry.example.org/:_authToken={}", "npm_Zq8xY2mN4pL6vB1cD3fG5hJ7kQ9wE0rT1234"),
    "private-key-id": (
        '{{"type": "service_account", "private_key_id": "{}"}}', "4f1a2b3c4d5e6f708192a3b4c5d6e7f801234567"
    ),
    "flag": ("pg_tool --password {} --host db", "Fl4gPassw0rdX"),
    "flag-equals": ("tool --client-secret={}", "Fl4gS3cretY9"),
    "curl-u": ("curl -u admin:{} https://api", "Cu7lPassw0rd"),
    "query": ("postgresql://app@db/shop?password={}&schema=x", "Qu3ryPassw0rd"),
    "entropy": ('signing_salt = "{}"', "q9Zx7Lm3Nv8Bw2Rt6Yk1Pd5Hs4Jf0Gc"),
    "base64": (
        "echo {} | base64 -d", "QU5USFJPUElDX0FQSV9LRVk9c2stYW50LWFwaTAzLVF3M3JUeTZ1SW85cEFzMmRGZzVoSms4bFp4MWNWYjRu"
    ),
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_header_flag_url_entropy_and_base64_forms(name: str) -> None:
    form, secret = FORMS[name]
    out = redact_text(form.format(secret), BUILTIN)
    assert secret not in out and "[REDACTED:" in out, out


def test_hashes_ids_and_paths_are_left_alone() -> None:
    kept = [
        "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d08f00a08d3ab",
        '"tool_use_id": "toolu_01HqR7yXz2AbCdEfGhIjKlMn"',
        "path=/usr/lib/python3.11/site-packages/ledger/capture/claude_code.py",
        '"integrity": "sha512-Zq8xY2mN4pL6vB1cD3fG5hJ7kQ9wE0rTZq8xY2mN4pL6vB1cD3fG5hJ7kQ9wE0rT=="',
        "docker run -u 1000:1000 img; mysql -u root -p shop",
        "def test_every_builtin_kind_is_redacted(): AbstractSingletonProxyFactoryBean",
    ]
    for text in kept:
        assert redact_text(text, BUILTIN) == text


def test_a_key_body_without_its_begin_line_and_a_key_split_across_items() -> None:
    from ledger.domain.redact import redact_strings

    body = ["k8XmP2vQ9rT4wY7zA1bC3dE5fG6hJ8kLnR2sT4uV6wX8yZ0aB1cD3eF5gH7iJ9kL", "zz=="]
    tail = "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n$ "
    assert body[0] not in redact_text(tail, BUILTIN)
    lines = ["-x", "+-----BEGIN RSA PRIVATE KEY-----", *("+" + b for b in body), "+-----END RSA PRIVATE KEY-----"]
    out = redact_strings(lines, BUILTIN)
    assert len(out) == len(lines) and out[0] == "-x" and not any(body[0] in line for line in out)
    argv = ["echo", "aws_secret_access_key", "=", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]
    assert redact_strings(argv, BUILTIN)[:3] == argv[:3]
    assert redact_strings(argv, BUILTIN)[3].startswith("[REDACTED:assignment:")


def test_json_text_that_does_not_parse_is_redacted_through_its_escapes() -> None:
    from ledger.domain.redact import redact_json_text

    inner = 'x\nsk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA\n{"private_key_id": "d713b9ef870a28e9deb72220d713b9ef870a28e9"}'
    raw = '{"p": ' + json.dumps(inner) + "[[["  # torn
    out = redact_json_text(raw, BUILTIN)
    assert "sk-ant-api03-AAAA" not in out and "d713b9ef870a" not in out
    assert out.startswith('{"p": "x\\n[REDACTED:anthropic-key:') and out.endswith('\\"}"[[[')
