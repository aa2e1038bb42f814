"""What a SessionStart hook injects fits the agent's own measure, in any script, and names what works there.

Codex cuts hook output past 2,500 of its tokens, ``ceil(UTF-8 bytes / 4)`` (codex-rs/hooks/src/output_spill.rs
and utils/output-truncation), keeping head and tail and spilling the whole to a file: a 9,512-byte ASCII
brief fit, an 18,755-byte CJK brief (about 9,500 characters) had its middle cut. Claude Code keeps 10,000
characters (JavaScript string length). Each is measured here as that agent measures it.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from projections.brief import utf8_bytes, utf16_units
from tests.conftest import run_here
from tests.test_hook import _env

# The PostgreSQL half is skipped: test_routing and test_hook_codex answer SessionStart on PostgreSQL.
pytestmark = pytest.mark.sqlite_only("one backend is enough: what fits an agent's budget, not the store")

ASCII_NOTE = "Keep the retry loop in auth/refresh.py bounded at three tries and log each backoff step"
CJK_NOTE = "登录在慢速网络上超时：刷新令牌的重试循环必须限制为三次，并记录每次退避的等待时间与原因说明"  # noqa: RUF001 (CJK punctuation is the point)


def session_start(home: Path, cwd: Path, agent: str, session: str, **env: str) -> str:
    payload = {"session_id": session, "transcript_path": None, "cwd": str(cwd), "hook_event_name": "SessionStart",
               "model": "m", "source": "startup"}
    proc = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "hook", agent],
                          input=json.dumps(payload), capture_output=True, text=True, env=_env(home, **env),
                          timeout=120, cwd=cwd)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return str(json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"])


def big_task(home: Path, repo: Path, note: str) -> None:
    run_here("start", note[:40], home=home, cwd=repo, check=True)
    for i in range(60):
        run_here("require", f"{i}: {note}", home=home, cwd=repo, check=True)
        run_here("decide", f"{i}: {note}", "--because", note, home=home, cwd=repo, check=True)
    run_here("next", f"NEXT-STEP-MARKER {note}", home=home, cwd=repo, check=True)


@pytest.mark.parametrize("note", [ASCII_NOTE, CJK_NOTE], ids=["ascii", "cjk"])
def test_each_agent_gets_a_brief_it_keeps_whole(home: Path, tmp_path: Path, note: str) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    big_task(home, repo, note)
    empty_codex_home = tmp_path / "codex_home"
    empty_codex_home.mkdir()
    full = run_here("resume", home=home, cwd=repo, check=True).stdout
    assert utf8_bytes(full) > 12_000  # over Codex's budget (the CJK one not over Claude Code's: the case)
    codex = session_start(home, repo, "codex", "cx-1", CODEX_HOME=str(empty_codex_home))
    claude = session_start(home, repo, "claude-code", "cc-1", HOME=str(tmp_path))
    assert math.ceil(utf8_bytes(codex) / 4) <= 2_500  # Codex's approx_token_count within its hook limit
    assert utf16_units(claude) <= 10_000
    for text in (codex, claude):
        assert "NEXT-STEP-MARKER" in text and "task #1" in text
    assert "lines left out" in codex
    if note == CJK_NOTE:
        # 3 bytes a character: Codex's brief holds about a third of the characters Claude Code's does.
        assert len(codex) < 0.5 * len(claude) and "bytes" in codex.rsplit("lines left out", 1)[1]
    # Answered again, now from the brief cache: the same answer per agent.
    again = session_start(home, repo, "codex", "cx-2", CODEX_HOME=str(empty_codex_home))
    assert [ln for ln in again.splitlines() if "last event" not in ln] == [
        ln for ln in codex.splitlines() if "last event" not in ln]


def test_the_instructions_name_the_mcp_tool_where_the_agent_has_it(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    run_here("start", "Fix add()", home=home, cwd=repo, check=True)
    run_here("require", "add() must add", home=home, cwd=repo, check=True)
    bare, with_mcp = tmp_path / "bare", tmp_path / "with-mcp"
    bare.mkdir()
    with_mcp.mkdir()
    (bare / "config.toml").write_text('[features]\nhooks = true\n')
    # What `trail install codex` writes (cli/install.py), with a comment the way users keep them.
    (with_mcp / "config.toml").write_text('[features]\nhooks = true\n\n[mcp_servers.tasktrail]  # trail install codex\n'
                                          'command = "/opt/venv/bin/trail"\nargs = ["mcp"]\n')
    for attempt in range(2):  # the second answer of each comes from the brief cache
        cli = session_start(home, repo, "codex", f"cli-{attempt}", CODEX_HOME=str(bare))
        mcp = session_start(home, repo, "codex", f"mcp-{attempt}", CODEX_HOME=str(with_mcp))
        assert "`trail decide TEXT --because REASON`" in cli and "MCP" not in cli
        assert "MCP tool `record`" in mcp and "kind `decision`" in mcp and "`trail " not in mcp
        assert "record` (kind next_step)" in mcp  # the brief's own hint too: no next step recorded yet
    (with_mcp / "config.toml").write_text('[mcp_servers.tasktrail]\ncommand = "trail"\nargs = ["mcp"]\n'
                                          'enabled = false\n')
    assert "MCP" not in session_start(home, repo, "codex", "off", CODEX_HOME=str(with_mcp))
    # Claude Code: the project's .mcp.json (`trail install claude-code --mcp`).
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"tasktrail": {"type": "stdio", "command": "trail",
                                                                             "args": ["mcp"]}}}))
    assert "MCP tool `record`" in session_start(home, repo, "claude-code", "cc", HOME=str(tmp_path))
