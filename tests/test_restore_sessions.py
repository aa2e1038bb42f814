"""bench.restore_sessions: every table form of SOURCES.md read, and blobs restored from real git mirrors made in
tmp_path (a work-tree clone and a bare one, a checkpoint ref); the real SOURCES.md read whole."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import restore_sessions as rs

REPO = Path(__file__).resolve().parents[1]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def commit_files(repo: Path, files: dict[str, bytes]) -> str:
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    return git(repo, "rev-parse", "HEAD")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


A = b'{"type":"user","n":1}\n'
A2 = b'{"type":"user","n":2}\n'
SUB = b'{"type":"assistant","sub":true}\n'
ROLLOUT = b'{"type":"session_meta"}\n{"type":"event_msg"}'  # Codex rollouts end without a newline


@pytest.fixture
def mirrors(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """``alice/logs`` as a clone with a work tree (``repo/.git``), ``bob/tool`` bare (``repo``)."""
    top = tmp_path / "mirrors"
    logs = top / "alice+logs" / "repo"
    logs.mkdir(parents=True)
    git(logs, "init", "-q")
    c1 = commit_files(logs, {"data/real/-Users-a/one.jsonl": A})
    c2 = commit_files(logs, {"data/real/-Users-a/one.jsonl": A2, "fix/s-1234-abcd.jsonl": A,
                             "fix/s-1234-abcd/subagents/agent-x.jsonl": SUB, "deep/-proj/agent-y.jsonl": SUB})
    work = tmp_path / "bobwork"
    work.mkdir()
    git(work, "init", "-q")
    c3 = commit_files(work, {"0/full.jsonl": ROLLOUT})
    git(work, "update-ref", "refs/entire/checkpoints/ab/cdef012345", c3)
    git(tmp_path, "clone", "-q", "--bare", str(work), str(top / "bob+tool" / "repo"))
    git(top / "bob+tool" / "repo", "fetch", "-q", str(work), "refs/entire/*:refs/entire/*")
    return top, {"c1": c1, "c2": c2, "c3": c3}


def row(file: str, data: bytes, spec: str, note: str = "A session.") -> str:
    return f"| {file} | {data.count(b'{')} | {len(data)} | {spec} | {digest(data)} | {note} |"


def sources(c: dict[str, str]) -> str:
    """One table of each form SOURCES.md has, in its words."""
    ref = "refs/entire/checkpoints/ab/cdef012345:0/full.jsonl (session 1, 3 checkpoints)"
    return f"""# Sources

Copied from `data/real/` of upstream/logs (MIT), taken from the snapshot of the fork alice/logs at HEAD {c['c2']}.

| file | lines | bytes | commit | original path (under data/real/) | sha256 | what happens |
|---|---|---|---|---|---|---|
{row("claude-code/old.jsonl", A, f"{c['c1']} | -Users-a/one.jsonl", "The first version.")}
{row("claude-code/new.jsonl", A2, f"{c['c2']} | -Users-a/one.jsonl", "The second; a | in prose.")}

| file | lines | bytes | commit | original path (alice/logs) | sha256 | what happens |
|---|---|---|---|---|---|---|
{row("claude-code/named.jsonl", A, f"{c['c2']} | fix/s-1234-abcd.jsonl", "Repo in the header.")}

## A second part

Sessions of someone in bob/tool (MIT, snapshot HEAD {c['c3']}).

| file | lines | bytes | source repo @ commit : original path | sha256 | what happens |
|---|---|---|---|---|---|
{row("codex/rollout.jsonl", ROLLOUT, f"bob/tool @ {c['c3']} : {ref}")}
{row("claude-code/deep.jsonl", SUB, f"alice/logs @ {c['c2']} : deep/-proj/agent-y.jsonl")}
{row("claude-code/deep.agent-y.jsonl", SUB, "same @ same : .../-proj/agent-y.jsonl", "Shorthand.")}

## A third part

From `fix/` of alice/logs (MIT, copyright 2026 alice), taken from the snapshot at HEAD {c['c2']}.

| file | lines | bytes | commit : original path (under fix/) | sha256 | what happens |
|---|---|---|---|---|---|
{row("claude-code/s-1234.jsonl", A, f"{c['c2']} : s-1234-abcd.jsonl")}
{row("claude-code/s-1234.subagents.agent-x.jsonl", SUB, "same : s-1234-…/subagents/agent-x.jsonl")}
"""


def test_every_table_form_parsed(mirrors: tuple[Path, dict[str, str]]) -> None:
    _, c = mirrors
    rows = {r.file: r for r in rs.parse(sources(c))}
    assert [(r.repo, r.commit, r.path, r.ref) for r in rows.values()] == [
        ("alice/logs", c["c1"], "data/real/-Users-a/one.jsonl", None),
        ("alice/logs", c["c2"], "data/real/-Users-a/one.jsonl", None),
        ("alice/logs", c["c2"], "fix/s-1234-abcd.jsonl", None),
        ("bob/tool", c["c3"], "0/full.jsonl", "refs/entire/checkpoints/ab/cdef012345"),
        ("alice/logs", c["c2"], "deep/-proj/agent-y.jsonl", None),
        ("alice/logs", c["c2"], "deep/-proj/agent-y.jsonl", None),
        ("alice/logs", c["c2"], "fix/s-1234-abcd.jsonl", None),
        ("alice/logs", c["c2"], "fix/s-1234-abcd/subagents/agent-x.jsonl", None),
    ]
    assert rows["codex/rollout.jsonl"].bytes == len(ROLLOUT)
    assert rs.repos(rows.values()) == ["alice/logs", "bob/tool"]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench.restore_sessions", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, check=False)


def test_restores_checks_and_keeps(mirrors: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    top, c = mirrors
    table = tmp_path / "SOURCES.md"
    table.write_text(sources(c), encoding="utf-8")
    into = tmp_path / "held"
    done = run("--sources", table, "--mirrors", top, "--into", into)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == f"8 of 8 restored into {into} (8 written, 0 already there), 0 not"
    assert (into / "claude-code/old.jsonl").read_bytes() == A
    assert (into / "claude-code/new.jsonl").read_bytes() == A2
    assert (into / "codex/rollout.jsonl").read_bytes() == ROLLOUT
    assert (into / "claude-code/s-1234.subagents.agent-x.jsonl").read_bytes() == SUB
    assert not list(into.rglob("*.part"))

    # A re-run rewrites nothing that already matches, and puts right a file that does not.
    kept = into / "claude-code/new.jsonl"
    before = kept.stat().st_mtime_ns, kept.stat().st_ino
    (into / "claude-code/old.jsonl").write_bytes(b"edited\n")
    again = run("--sources", table, "--mirrors", top, "--into", into)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "claude-code/new.jsonl: kept" in again.stdout.splitlines()
    assert "claude-code/old.jsonl: ok" in again.stdout.splitlines()
    assert (kept.stat().st_mtime_ns, kept.stat().st_ino) == before
    assert (into / "claude-code/old.jsonl").read_bytes() == A


def test_what_cannot_be_restored_is_named(mirrors: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    top, c = mirrors
    wrong, absent = "0" * 64, "f" * 40
    text = sources(c).replace(f"| {digest(A2)} |", f"| {wrong} |").replace(
        f"alice/logs @ {c['c2']} : deep/", f"alice/logs @ {absent} : deep/").replace(
        "bob/tool @", "carol/gone @")
    table = tmp_path / "SOURCES.md"
    table.write_text(text, encoding="utf-8")
    into = tmp_path / "held"
    done = run("--sources", table, "--mirrors", top, "--into", into)
    assert done.returncode == 1
    out = done.stdout.splitlines()
    assert out[1].startswith("claude-code/new.jsonl: sha256 mismatch: ")
    assert "codex/rollout.jsonl: missing mirror: carol/gone" in out
    # "same @ same" follows the row above, so both rows ask for the absent commit.
    assert f"claude-code/deep.jsonl: missing object: {absent[:12]}:deep/-proj/agent-y.jsonl" in out
    assert f"claude-code/deep.agent-y.jsonl: missing object: {absent[:12]}:deep/-proj/agent-y.jsonl" in out
    assert out[-1].endswith(", 4 not")
    assert not (into / "claude-code/new.jsonl").exists()

    listed = run("--sources", table, "--mirrors", top, "--list-repos")
    assert listed.returncode == 0
    assert listed.stdout.splitlines() == ["github:alice/logs\tmirrored", "github:carol/gone\tto fetch"]


def test_unreadable_table_is_one_line_and_exit_2(mirrors: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, c = mirrors
    table = tmp_path / "SOURCES.md"
    table.write_text(sources(c).replace(f"| {c['c2']} : s-1234-abcd.jsonl |", "| same : s-1234-abcd.jsonl |"),
                     encoding="utf-8")
    done = run("--sources", table, "--into", tmp_path / "held")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and "'same' commit with no row above it" in done.stderr
    assert not (tmp_path / "held").exists()


def test_the_real_sources_md_parses_whole() -> None:
    rows = rs.parse(rs.SOURCES.read_text(encoding="utf-8"))
    table_rows = [line for line in rs.SOURCES.read_text(encoding="utf-8").splitlines()
                  if line.startswith(("| claude-code/", "| codex/"))]
    assert len(rows) == len(table_rows) >= 69
    assert all(len(r.sha256) == 64 and len(r.commit) == 40 and r.bytes > 0 for r in rows)
    assert not [r.path for r in rows if "…" in r.path or "..." in r.path or "same" in r.path.split("/")]
    # Every held-out session the bench scores has a row to restore it from.
    annotated = json.loads((REPO / "bench/fidelity/annotations.json").read_text(encoding="utf-8"))["sessions"]
    held = {s["file"] for s in annotated if s.get("held_out")}
    assert held and held <= {r.file for r in rows}
    assert "handgemacht-ai/claude-code-log" in rs.repos(rows) and "marot/spotter" in rs.repos(rows)


def test_a_checkpoint_ref_stands_in_for_an_absent_commit(mirrors: tuple[Path, dict[str, str]],
                                                         tmp_path: Path) -> None:
    top, c = mirrors
    table = tmp_path / "SOURCES.md"
    table.write_text(sources(c).replace(f"bob/tool @ {c['c3']}", f"bob/tool @ {'e' * 40}"), encoding="utf-8")
    into = tmp_path / "held"
    done = run("--sources", table, "--mirrors", top, "--into", into)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (into / "codex/rollout.jsonl").read_bytes() == ROLLOUT
