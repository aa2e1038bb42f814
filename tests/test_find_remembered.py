"""`trail find` over real sessions: every fixture session imported into one ledger (both backends), and
queries written as a person would remember a task the next day (a keyword of a correction, a file name, a
failing command, a phrase of the agent's last words, the subject) each put the session they were written
from first. Skipped without ``../shared`` (a user's clone)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import find_paths
from tests.conftest import SHARED, run_here

FIXTURES = SHARED / "fixtures"

REMEMBERED = [
    # (the session remembered, the words remembered of it, what kind of memory)
    ("claude-code/ccl-session-nav-37f83ec9.jsonl", "session_nav.html", "a file name"),
    ("claude-code/ccl-session-nav-37f83ec9.jsonl", "session navigation lost", "a correction"),
    ("claude-code/ccl-project-title-aa5c5ada.jsonl", "cache version compatible", "the subject"),
    ("claude-code/ccl-github-action-fe869ecb.jsonl", "github action", "the subject"),
    ("claude-code/ccl-browser-tests-12a546d1.jsonl", "browser tests sidechain", "a fix"),
    ("claude-code/ccl-after-clear-cbc0f75b.jsonl", "working directory tests", "the subject"),
    ("claude-code/deep-manifest-a7da6a22.jsonl", "tar corrupted", "the subject"),
    ("claude-code/coderabbit-helper-cb2e607c.jsonl", "uv tool reinstall", "a correction"),
    ("claude-code/website-redirect-9e953218.jsonl", "vercel submodule", "a failing deploy"),
    ("claude-code/jssoundrecorder-7acd37a8.jsonl", "audioworklet", "the next step"),
    ("claude-code/jssoundrecorder-7acd37a8.jsonl", "localhost:5173", "the last words"),
    ("claude-code/worktrees-teammates-ef958aa1.jsonl", "teammates worktree", "the subject"),
    ("claude-code/ideas-rewind-03eb5929.jsonl", "dev-docs", "a folder name"),
    ("claude-code/claude-p-research-2b4ed4c0.jsonl", "websearch", "the subject"),
    ("claude-code/ccv-todo-app-fe5e1c67.jsonl", "npm run build", "a failing command"),
    ("claude-code/codemie-sync-design-compacted-624a4a58.jsonl", "incremental sync", "the subject"),
    ("claude-code/codemie-codex-metrics-3fe1b6bc.jsonl", "codex metrics", "the subject"),
    ("claude-code/drm-python-to-rust-port.jsonl", "rust coverage justfile", "the subject"),
    ("claude-code/drm-coverage-test-fix.jsonl", "multiply_numbers", "a function name"),
    ("codex/codemie-compact-env-019e1625.jsonl", "OPENCODE_CONFIG_CONTENT", "a variable"),
    ("codex/codemie-demo-prep-019e1695.jsonl", "action items demo", "the subject"),
    ("codex/simonw-homelab-head-019b64e5.jsonl", "analyse md files", "the only request"),
]


def _import_all(home: Path) -> dict[str, int]:
    """Import every session named above; the task number each became, by file."""
    numbers: dict[str, int] = {}
    for name in dict.fromkeys(name for name, _, _ in REMEMBERED):
        agent = name.split("/")[0]
        done = run_here("import", agent, str(FIXTURES / name), "--json", home=home, check=True)
        (task,) = json.loads(done.stdout)["tasks"]
        numbers[name] = task["number"]
    return numbers


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="needs ../shared/fixtures (real sessions)")
def test_what_a_person_remembers_finds_that_task_first(home: Path, backend: str) -> None:
    numbers = _import_all(home)
    assert len(set(numbers.values())) == len(numbers)  # one task a session
    # On SQLite each query runs on both of find's paths (the read model's, then the find index's), which
    # must print the same bytes; PostgreSQL has the full path only.
    find = (lambda *args: find_paths.both(*args, home=home)) if backend == "sqlite" else (
        lambda *args: run_here(*args, home=home, check=True).stdout)
    missed = []
    for name, words, memory in REMEMBERED:
        found = json.loads(find("find", *words.split(), "--json"))
        if not found or found[0]["number"] != numbers[name]:
            missed.append(f"{words!r} ({memory}) -> {[t['number'] for t in found[:3]]}, not #{numbers[name]}")
    assert not missed, "\n".join(missed)
    # Narrowed: the same words, the task left out by a filter, or kept by it.
    codex = numbers["codex/codemie-compact-env-019e1625.jsonl"]
    build = json.loads(find("find", "npm", "run", "build", "--agent", "codex", "--json"))
    assert [t["number"] for t in build] == [codex]  # the Claude Code todo app's builds are not Codex's
    done = json.loads(find("find", "tests", "--status", "done", "--json"))
    assert done and all(t["status"] == "done" for t in done)
    assert numbers["claude-code/ccl-after-clear-cbc0f75b.jsonl"] not in [t["number"] for t in done]  # paused
    if backend != "sqlite":
        return
    # The text too, and what the index reads differently: short words (no trigram), many tasks, every filter.
    for words, _, _ in REMEMBERED[:6]:
        find("find", *words.split())
    for args in (["a"], ["py", "test"], ["the", "-n", "20"], ["fix", "--limit=3", "--status", "done", "--status",
                 "paused"], ["tests", "--since", "2000-01-01 10:00"], ["tests", "--project", "webapp"],
                 ["tests", "--agent", "claude-code", "--json"], ['"quoted"'], ["zzzz-nothing"],
                 ["build", "--status", "abandoned"]):
        find("find", *args)
