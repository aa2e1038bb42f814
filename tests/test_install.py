"""`trail install` / `trail uninstall` for Claude Code and Codex, and the `tasktrail` alias, in real processes.

Each test gets a temporary HOME and a temporary git repository, and chooses what PATH holds: this
installation's script (a link to it), another program named `trail`, or neither.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from cli import codextrust
from cli.install import CLAUDE_EVENTS
from tests.conftest import REPO

SCRIPT = Path(sys.executable).parent / "trail"
if not SCRIPT.is_file():
    pytest.skip("the trail console script is not installed next to this interpreter", allow_module_level=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    return root


def _bin(tmp_path: Path, trail: str | None = "ours", tasktrail: bool = False) -> Path:
    """A PATH folder: `trail` as this installation (a link), as another program, or absent."""
    folder = tmp_path / f"bin-{trail}-{tasktrail}"
    folder.mkdir(exist_ok=True)
    if trail == "ours":
        (folder / "trail").symlink_to(SCRIPT)
    elif trail == "other":
        (folder / "trail").write_text("#!/bin/sh\necho 'another trail'\n")
        (folder / "trail").chmod(0o755)
    if tasktrail:
        (folder / "tasktrail").symlink_to(SCRIPT)
    return folder


def trail(*args: str, cwd: Path, home: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "CODEX_HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO), TRAIL_HOME=str(home / "trail"),
               PATH=os.pathsep.join([*([str(path)] if path else []), "/usr/bin", "/bin"]))
    return subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def commands(settings: dict[str, object]) -> list[str]:
    hooks = settings["hooks"]
    assert isinstance(hooks, dict)
    return [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]


MINE = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}


def test_the_shared_settings_get_the_name_on_path_at_the_root_or_a_refusal(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PostToolUse": [MINE]}}, indent=2) + "\n")
    before = files(repo)

    refused = trail("install", "claude-code", cwd=repo / "pkg" / "sub", home=home)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--local" in refused.stderr
    assert files(repo) == before

    path = _bin(tmp_path)
    dry = trail("install", "claude-code", "--project", "--dry-run", cwd=repo / "pkg" / "sub", home=home, path=path)
    assert dry.returncode == 0 and "+" in dry.stdout and "trail hook claude-code" in dry.stdout
    assert files(repo) == before
    assert trail("install", "claude-code", cwd=repo / "pkg" / "sub", home=home, path=path).returncode == 0
    once = settings.read_text()
    assert set(files(repo)) == set(before)  # nothing in the subfolder: the root's settings.json
    data = json.loads(once)
    assert data["model"] == "opus" and data["hooks"]["PostToolUse"][0] == MINE
    ours = [c for c in commands(data) if c != "./audit.sh"]
    # No machine path in a shared file.
    assert len(ours) == len(CLAUDE_EVENTS) and set(ours) == {"trail hook claude-code"}
    assert trail("install", "claude-code", cwd=repo, home=home, path=path).returncode == 0
    assert settings.read_text() == once  # idempotent
    assert trail("uninstall", "claude-code", "--project", cwd=repo / "pkg", home=home, path=path).returncode == 0
    assert json.loads(settings.read_text()) == json.loads(before[".claude/settings.json"])

    settings.write_text("[1, 2")
    broken = trail("install", "claude-code", cwd=repo, home=home, path=path)
    assert broken.returncode == 2 and str(settings) in broken.stderr and settings.read_text() == "[1, 2"


def test_a_trail_on_path_that_is_another_program_is_passed_over_for_tasktrail(repo: Path, tmp_path: Path) -> None:
    path = _bin(tmp_path, trail="other", tasktrail=True)
    assert trail("install", "claude-code", cwd=repo, home=tmp_path / "home", path=path).returncode == 0
    ours = commands(json.loads((repo / ".claude" / "settings.json").read_text()))
    assert set(ours) == {"tasktrail hook claude-code"}
    refused = trail("install", "claude-code", cwd=repo, home=tmp_path / "home", path=_bin(tmp_path, trail="other"))
    assert refused.returncode == 2 and "--local" in refused.stderr


def test_local_from_a_subfolder_writes_only_the_root_settings_local_json(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    before = files(repo)
    proc = trail("install", "claude-code", "--local", cwd=repo / "pkg" / "sub", home=home)  # trail not on PATH
    assert proc.returncode == 0, proc.stderr
    after = files(repo)
    assert set(after) - set(before) == {".claude/settings.local.json"}
    ours = commands(json.loads(after[".claude/settings.local.json"]))
    assert len(ours) == len(CLAUDE_EVENTS) and {c.rsplit(" hook ", 1)[0] for c in ours} == {str(SCRIPT)}  # ours
    assert trail("install", "claude-code", "--local", cwd=repo, home=home).returncode == 0
    assert files(repo) == after
    assert not (home / ".claude").exists()
    assert trail("uninstall", "claude-code", "--local", cwd=repo / "pkg", home=home).returncode == 0
    assert files(repo) == before and not (repo / ".claude").exists()


def test_user_scope_writes_the_home_settings_and_keeps_the_rest(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = {"theme": "dark", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
    settings.write_text(json.dumps(original))
    assert trail("install", "claude-code", "--user", cwd=repo, home=home).returncode == 0
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark" and data["hooks"]["Stop"][0] == original["hooks"]["Stop"][0]
    assert len([c for c in commands(data) if c.endswith(" hook claude-code")]) == len(CLAUDE_EVENTS)
    assert not (repo / ".claude").exists()
    assert trail("uninstall", "claude-code", cwd=repo, home=home).returncode == 0  # every scope that has them
    assert json.loads(settings.read_text()) == original


def test_mcp_registers_the_server_in_the_root_mcp_json(repo: Path, tmp_path: Path) -> None:
    home, path = tmp_path / "home", _bin(tmp_path)
    mcp_json = repo / ".mcp.json"
    other = {"command": "npx", "args": ["-y", "some-server"]}
    mcp_json.write_text(json.dumps({"mcpServers": {"other": other}}))
    refused = trail("install", "claude-code", "--local", "--mcp", cwd=repo / "pkg", home=home)
    assert refused.returncode == 2 and ".mcp.json" in refused.stderr
    assert trail("install", "claude-code", "--local", "--mcp", cwd=repo / "pkg", home=home, path=path).returncode == 0
    servers = json.loads(mcp_json.read_text())["mcpServers"]
    assert servers == {"other": other, "tasktrail": {"type": "stdio", "command": "trail", "args": ["mcp"],
                                                      "alwaysLoad": True}}
    assert not (repo / "pkg" / ".mcp.json").exists()
    assert trail("uninstall", "claude-code", cwd=repo, home=home, path=path).returncode == 0
    assert json.loads(mcp_json.read_text()) == {"mcpServers": {"other": other}}
    assert not (repo / ".claude").exists()


CONFIG = """\
# my Codex settings
model = "gpt-5.5-codex"  # the default model

[features]
web_search = true   # keep this
codex_hooks = false

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[profiles.fast]
model = "gpt-5-mini"
"""
HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}]}}


CODEX_EVENTS = {"SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "PostCompact", "Stop", "SessionEnd"}
ENV_VARS = ["TRAIL_HOME", "TRAIL_DATABASE_URL", "TRAIL_DB", "XDG_DATA_HOME"]


def _states(config: dict[str, Any]) -> dict[str, Any]:
    return dict(config.get("hooks", {}).get("state", {}))


def _expected_trust(hooks_json: Path) -> dict[str, dict[str, str]]:
    """Each of our hooks in ``hooks_json`` by Codex's key, with the hash Codex computes for it."""
    settings = json.loads(hooks_json.read_text())
    found = codextrust.command_hooks(str(hooks_json.resolve()), settings, " hook codex")
    return {hook.key: {"trusted_hash": hook.hash} for hook in found}


def test_codex_user_install_is_idempotent_keeps_the_users_settings_and_uninstalls_exactly(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "anywhere"
    project.mkdir()
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text(CONFIG)
    (codex / "hooks.json").write_text(json.dumps(HOOKS, indent=2) + "\n")

    dry = trail("install", "codex", "--dry-run", cwd=project, home=home)
    assert dry.returncode == 0 and "+hooks = true" in dry.stdout and "hook codex" in dry.stdout
    assert (codex / "config.toml").read_text() == CONFIG and "trusting" not in dry.stderr

    done = trail("install", "codex", cwd=project, home=home)
    assert done.returncode == 0 and "trusting tasktrail's 7 Codex hooks" in done.stderr and "--no-trust" in done.stderr
    config_text = (codex / "config.toml").read_text()
    config = tomllib.loads(config_text)
    assert config["features"] == {"web_search": True, "hooks": True}  # the deprecated codex_hooks line taken over
    assert config["mcp_servers"]["tasktrail"] == {"command": str(SCRIPT), "args": ["mcp"], "env_vars": ENV_VARS}
    assert config["mcp_servers"]["docs"] == {"command": "npx", "args": ["-y", "docs-mcp"]}
    assert config["model"] == "gpt-5.5-codex" and config["profiles"]["fast"]["model"] == "gpt-5-mini"
    kept = [ln for ln in CONFIG.splitlines() if ln.strip() and ln != "codex_hooks = false"]
    assert [ln for ln in config_text.splitlines() if ln in kept] == kept  # every other line, comments too, in order
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert set(hooks) == CODEX_EVENTS
    assert hooks["Stop"][0] == HOOKS["hooks"]["Stop"][0]
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # what Codex clamps a SessionEnd hook to
    ours = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"] if h["command"] != "say done"]
    assert ours == [f"{SCRIPT} hook codex"] * 7
    trust = _expected_trust(codex / "hooks.json")
    assert _states(config) == trust and len(trust) == 7
    assert f"{(codex / 'hooks.json').resolve()}:stop:1:0" in trust  # ours is the second Stop group, after the user's

    twice = {name: (codex / name).read_text() for name in ("config.toml", "hooks.json")}
    assert trail("install", "codex", "--user", cwd=project, home=home).returncode == 0
    assert {name: (codex / name).read_text() for name in twice} == twice

    assert trail("uninstall", "codex", cwd=project, home=home).returncode == 0
    assert (codex / "config.toml").read_text() == CONFIG
    assert json.loads((codex / "hooks.json").read_text()) == HOOKS


def test_codex_waits_for_the_mcp_server_when_asked_and_doctor_says_when_it_cannot_start(tmp_path: Path) -> None:
    """By default the server is optional (a capture tool never keeps Codex from starting); --mcp-required makes
    Codex wait for it (its tools on the first request); one that then cannot start would stop every Codex
    session, which doctor reports; installing again without the flag takes the wait out, uninstall is exact."""
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_text(CONFIG)
    plain = {"command": str(SCRIPT), "args": ["mcp"], "env_vars": ENV_VARS}
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    assert tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["tasktrail"] == plain
    assert trail("install", "codex", "--mcp-required", cwd=tmp_path, home=home).returncode == 0
    server = tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["tasktrail"]
    assert (server["required"], server["startup_timeout_sec"]) == (True, 30)
    assert json.loads(trail("doctor", "--json", cwd=tmp_path, home=home).stdout)["codex_mcp_problems"] == []

    moved = (codex / "config.toml").read_text().replace(f'command = "{SCRIPT}"', 'command = "/gone/trail"')
    (codex / "config.toml").write_text(moved)  # the installation the config names was removed
    report = json.loads(trail("doctor", "--json", cwd=tmp_path, home=home).stdout)
    assert report["codex_mcp_problems"] == [
        f"{codex / 'config.toml'}: [mcp_servers.tasktrail] is required but its command /gone/trail is not there: "
        "Codex will not start a session (`trail install codex` without --mcp-required, or `trail uninstall codex`)"]
    assert "codex mcp: " in trail("doctor", cwd=tmp_path, home=home).stdout

    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    assert tomllib.loads((codex / "config.toml").read_text())["mcp_servers"]["tasktrail"] == plain
    assert json.loads(trail("doctor", "--json", cwd=tmp_path, home=home).stdout)["codex_mcp_problems"] == []
    project = trail("install", "codex", "--project", "--mcp-required", cwd=tmp_path, home=home)
    assert project.returncode == 2 and "--mcp-required is for --user only" in project.stderr
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert (codex / "config.toml").read_text() == CONFIG


def test_codex_on_a_fresh_home_creates_both_files_and_uninstall_removes_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["features"] == {"hooks": True} and config["mcp_servers"]["tasktrail"]["args"] == ["mcp"]
    assert _states(config) == _expected_trust(home / ".codex" / "hooks.json")
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert not (home / ".codex").exists()


def test_codex_project_scope_writes_the_repository_codex_folder_and_the_trust_into_the_users_config(
    repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    refused = trail("install", "codex", "--project", cwd=repo / "pkg", home=home)
    assert refused.returncode == 2 and "--user" in refused.stderr and not (repo / ".codex").exists()
    path = _bin(tmp_path)
    assert trail("install", "codex", "--project", cwd=repo / "pkg" / "sub", home=home, path=path).returncode == 0
    assert not (repo / "pkg" / "sub" / ".codex").exists()
    hooks = json.loads((repo / ".codex" / "hooks.json").read_text())["hooks"]
    assert {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]} == {"trail hook codex"}
    config = tomllib.loads((repo / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["tasktrail"] == {"command": "trail", "args": ["mcp"], "env_vars": ENV_VARS}
    assert "hooks" not in config  # Codex reads trust only from the user's own config.toml
    user = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert user == {"hooks": {"state": _expected_trust(repo / ".codex" / "hooks.json")}}
    skipped = json.loads(trail("doctor", "--json", cwd=repo, home=home, path=path).stdout)["codex_hooks_skipped"]
    assert [line.split(": ", 1)[1].split(" (")[0] for line in skipped] == [f"the project {repo} is not trusted in "
                                                                           f"{home / '.codex' / 'config.toml'}"]
    assert trail("uninstall", "codex", "--project", cwd=repo, home=home, path=path).returncode == 0
    assert not (repo / ".codex").exists() and not (home / ".codex").exists()


OLD_INSTALL = """\
[features]  # trail install codex
codex_hooks = true  # trail install codex

[mcp_servers.tasktrail]  # trail install codex
command = "/old/trail"
args = ["mcp"]
"""


def test_an_older_installs_codex_hooks_line_becomes_hooks_and_uninstall_removes_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(OLD_INSTALL)
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    config = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert config["features"] == {"hooks": True} and config["mcp_servers"]["tasktrail"]["command"] == str(SCRIPT)
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert not (home / ".codex").exists()


def test_a_users_own_lines_come_back_byte_for_byte(tmp_path: Path) -> None:
    """CRLF endings, a comment and odd spacing on the replaced line, the user's own trust of our hook."""
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0  # to learn our hook's key and hash
    key, state = next(iter(_expected_trust(codex / "hooks.json").items()))
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    codex.mkdir()
    original = (f'[hooks.state."{key}"]\r\ntrusted_hash = "{state["trusted_hash"]}"\r\n\r\n'
                "[features]\r\nhooks=false   # off for now\r\n")
    (codex / "config.toml").write_bytes(original.encode())
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    config = tomllib.loads((codex / "config.toml").read_text())
    assert config["features"] == {"hooks": True} and _states(config) == _expected_trust(codex / "hooks.json")
    assert (codex / "config.toml").read_bytes().startswith(original.split("[features]")[0].encode())  # theirs, kept
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert (codex / "config.toml").read_bytes() == original.encode()


def test_no_trust_leaves_the_hooks_untrusted_and_doctor_says_codex_will_skip_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = trail("install", "codex", "--no-trust", cwd=tmp_path, home=home)
    assert done.returncode == 0 and "trusting" not in done.stderr
    config_path = home / ".codex" / "config.toml"
    assert "hooks" not in tomllib.loads(config_path.read_text())
    report = json.loads(trail("doctor", "--json", cwd=tmp_path, home=home).stdout)
    assert report["codex_hooks"] == 7 and len(report["codex_hooks_skipped"]) == 7
    assert all("is not trusted: codex exec skips it" in line for line in report["codex_hooks_skipped"])

    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    report = json.loads(trail("doctor", "--json", cwd=tmp_path, home=home).stdout)
    assert report["codex_hooks"] == 7 and report["codex_hooks_skipped"] == []
    assert "Codex runs them all" in trail("doctor", cwd=tmp_path, home=home).stdout

    hooks_json = home / ".codex" / "hooks.json"  # the user changes one of our hooks: its trust no longer holds
    settings = json.loads(hooks_json.read_text())
    settings["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 20
    hooks_json.write_text(json.dumps(settings))
    config_path.write_text(config_path.read_text().replace("hooks = true", "codex_hooks = false"))
    skipped = json.loads(trail("doctor", "--json", cwd=tmp_path, home=home).stdout)["codex_hooks_skipped"]
    assert [line.split(": ", 1)[1] for line in skipped] == [
        "the hooks feature is off ([features] hooks = false): Codex runs no hook",
        "[features] codex_hooks is the deprecated name of [features] hooks",
        f"Stop ({hooks_json.resolve()}:stop:0:0) changed since it was trusted: codex exec skips it",
    ]


def test_codex_hook_keys_and_hashes_are_the_ones_codex_computes() -> None:
    """Values `codex app-server` 0.171.0 reported (hooks/list currentHash) for these hooks; the end-to-end
    suite checks the live program too (tests/e2e/test_codex.py)."""
    assert codextrust.hook_hash("PostToolUse", "*", {"type": "command", "command": "/x/trail hook codex",
                                                     "timeout": 10}) == (
        "sha256:6bc4d7daf9dcf18d6f5ae5840100c64fbb518310b69bacaa5067945e7fe3988e")
    assert codextrust.hook_hash("SessionStart", None, {"type": "command", "command": "/x/trail hook codex",
                                                       "timeout": 30}) == (
        "sha256:1edbd89c3956d10a076a7349d4ad13f8ea08680f34b8a114d2dc3f6de18567c5")
    clamped = {"type": "command", "command": "/work/wt-e2e-codex/.venv/bin/trail hook codex"}
    assert codextrust.hook_hash("SessionEnd", None, {**clamped, "timeout": 10}) == codextrust.hook_hash(
        "SessionEnd", None, {**clamped, "timeout": 3}) == (
        "sha256:dbfb1719247b798a72e2ebf9410f3d15538b41767563ed8e0874a790e72dcabb")
    assert codextrust.hook_key("/h/hooks.json", "UserPromptSubmit", 1, 0) == "/h/hooks.json:user_prompt_submit:1:0"


def test_an_unusual_config_is_refused_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    odd = 'features = { web_search = true }\n'
    (home / ".codex" / "config.toml").write_text(odd)
    proc = trail("install", "codex", cwd=tmp_path, home=home)
    assert proc.returncode == 3 and "by hand" in proc.stderr
    assert (home / ".codex" / "config.toml").read_text() == odd and not (home / ".codex" / "hooks.json").exists()


def test_tasktrail_is_the_same_program_as_trail(tmp_path: Path) -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["tasktrail"] == scripts["trail"] == "cli.main:main"
    alias = SCRIPT.with_name("tasktrail")
    if not alias.is_file():
        pytest.skip("this environment was installed before the tasktrail script existed (pip install -e .)")
    env = {**os.environ, "TRAIL_HOME": str(tmp_path)}
    plain = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, env=env, timeout=60)
    other = subprocess.run([str(alias), "--help"], capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == other.returncode == 0
    assert other.stdout.replace("Usage: tasktrail", "Usage: trail") == plain.stdout


def test_local_keeps_its_file_out_of_git_and_uninstall_restores_the_exclude_file(tmp_path: Path) -> None:
    """settings.local.json holds this machine's path to trail: `--local` adds it to the repository's own
    .git/info/exclude (no tracked file changes), and uninstall gives that file back byte for byte."""
    root, home = tmp_path / "real", tmp_path / "home"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    exclude = root / ".git" / "info" / "exclude"
    exclude.write_text(exclude.read_text() + "my-own-pattern")  # no final newline: kept as it is
    before = exclude.read_bytes()
    assert trail("install", "claude-code", "--local", cwd=root, home=home).returncode == 0
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                            capture_output=True, text=True, check=True)
    assert status.stdout == "" and (root / ".claude" / "settings.local.json").is_file()
    assert exclude.read_bytes().startswith(before + b"\n")
    assert trail("install", "claude-code", "--local", cwd=root, home=home).returncode == 0
    assert exclude.read_text().count("/.claude/settings.local.json") == 1
    assert trail("uninstall", "claude-code", "--local", cwd=root, home=home).returncode == 0
    assert exclude.read_bytes() == before and not (root / ".claude").exists()


ODD_CONFIG = """\
# Codex, as I like it — bär, naïve, 日本
model = "gpt-5.5-codex"     # spaced   out

[features]
	web_search = true	# a tab-indented line
    codex_hooks=false   # off for now

[mcp_servers.docs]   # the docs server
  command = "npx"
  args = [ "-y",   "docs-mcp" ]
"""


def test_a_config_with_comments_odd_indentation_and_non_ascii_comes_back_byte_for_byte(tmp_path: Path) -> None:
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").write_bytes(ODD_CONFIG.encode())
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    text = (codex / "config.toml").read_text()
    config = tomllib.loads(text)
    assert config["features"] == {"web_search": True, "hooks": True}
    assert config["mcp_servers"]["docs"]["command"] == "npx"
    untouched = [ln for ln in ODD_CONFIG.splitlines() if ln.strip() and "codex_hooks" not in ln]
    assert [ln for ln in text.splitlines() if ln in untouched] == untouched  # every other line as it was, in order
    assert "\t# a tab-indented line" in text and "日本" in text
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert (codex / "config.toml").read_bytes() == ODD_CONFIG.encode()


def test_a_users_file_keeps_its_mode_through_install_and_uninstall(tmp_path: Path) -> None:
    """tasktrail's own files are private (its umask), but a file of the user's it edits keeps the user's mode."""
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    config = codex / "config.toml"
    config.write_bytes(ODD_CONFIG.encode())
    config.chmod(0o644)
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    assert config.stat().st_mode & 0o777 == 0o644
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert config.stat().st_mode & 0o777 == 0o644 and config.read_bytes() == ODD_CONFIG.encode()


def test_a_users_own_tasktrail_server_is_neither_overwritten_nor_removed(tmp_path: Path) -> None:
    """Theirs has no `# trail install codex` mark: install refuses (exit 3, one line, nothing written at all) when
    it says something else, leaves it when it says what ours would; uninstall never removes it."""
    home = tmp_path / "home"
    codex = home / ".codex"
    codex.mkdir(parents=True)
    own = '[mcp_servers.tasktrail]\ncommand = "trail"\nargs = ["mcp"]\nenv_vars = ["MY_VAR"]\n'
    (codex / "config.toml").write_text(own)
    refused = trail("install", "codex", cwd=tmp_path, home=home)
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1
    assert "[mcp_servers.tasktrail] is your own" in refused.stderr and str(codex / "config.toml") in refused.stderr
    assert (codex / "config.toml").read_text() == own and not (codex / "hooks.json").exists()
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert (codex / "config.toml").read_text() == own  # a server that runs `trail mcp`, but not one we wrote

    same = f'[mcp_servers.tasktrail]\ncommand = "{SCRIPT}"\nargs = ["mcp"]\nenv_vars = {json.dumps(ENV_VARS)}\n'
    (codex / "config.toml").write_text(same)
    assert trail("install", "codex", cwd=tmp_path, home=home).returncode == 0
    assert tomllib.loads((codex / "config.toml").read_text())["features"] == {"hooks": True}
    assert trail("uninstall", "codex", cwd=tmp_path, home=home).returncode == 0
    assert (codex / "config.toml").read_text() == same


def test_json_keeps_its_indentation_line_endings_and_non_ascii_and_comes_back_byte_for_byte(repo: Path,
                                                                                          tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    original = {"theme": "bär", "permissions": {"allow": ["Bash(ls)"]}, "motto": "naïve 日本"}
    cases = {
        "four spaces": json.dumps(original, indent=4, ensure_ascii=False) + "\n",
        "tabs, CRLF, no final break": json.dumps(original, indent="\t", ensure_ascii=False).replace("\n", "\r\n"),
        "one line": json.dumps(original, ensure_ascii=False),
        "escaped": json.dumps(original, indent=2) + "\n",
    }
    for name, text in cases.items():
        settings.write_bytes(text.encode())
        assert trail("install", "claude-code", "--user", cwd=repo, home=home).returncode == 0, name
        written = settings.read_bytes().decode()
        assert json.loads(written)["theme"] == "bär" and ("bär" in written) == ("bär" in text), name
        assert written.startswith(text[:6]), name  # the same indentation from the first line on
        assert trail("uninstall", "claude-code", "--user", cwd=repo, home=home).returncode == 0, name
        assert settings.read_bytes() == text.encode(), name


ODD_SETTINGS = """\
{
    "theme": "bär",
    "permissions": {
        "allow": ["Bash(ls)", "Read(*)"],
      "deny": [],
        "ask":["WebFetch"]
    },
  "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
        "PostToolUse": [
          { "matcher": "Bash", "hooks": [ { "type": "command", "command": "./lint.sh" } ] }
        ]
    },
    "motto":"naïve 日本 \\u00e9",
    "empty": {}
}
"""


def test_json_with_one_line_arrays_odd_indentation_and_their_own_hooks_comes_back_byte_for_byte(
    repo: Path, tmp_path: Path,
) -> None:
    """Only what install adds is written (each hook in the file's own style), and uninstall takes out exactly
    that: a one-line array, mixed indentation and spacing, the user's own hooks on the same events and
    non-ASCII are never rewritten. The same for Codex's hooks.json."""
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    hooks = home / ".codex" / "hooks.json"
    hooks.parent.mkdir(parents=True)
    for path, agent in ((settings, ["claude-code", "--user"]), (hooks, ["codex"])):
        path.write_bytes(ODD_SETTINGS.encode())
        assert trail("install", *agent, cwd=repo, home=home).returncode == 0, agent
        written = path.read_text()
        assert '"allow": ["Bash(ls)", "Read(*)"],\n      "deny": [],\n        "ask":["WebFetch"]' in written
        assert '"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}, {"hooks": [' in written
        assert json.loads(written)["motto"] == "naïve 日本 é" and '"naïve 日本 \\u00e9"' in written  # as written
        theirs = [h["command"] for g in json.loads(written)["hooks"]["PostToolUse"] for h in g["hooks"]]
        assert theirs[0] == "./lint.sh" and len(theirs) == 2, theirs
        assert trail("uninstall", *agent, cwd=repo, home=home).returncode == 0, agent
        assert path.read_bytes() == ODD_SETTINGS.encode(), agent


def test_a_users_own_tasktrail_server_in_mcp_json_is_not_overwritten(repo: Path, tmp_path: Path) -> None:
    home, path = tmp_path / "home", _bin(tmp_path)
    mcp_json = repo / ".mcp.json"
    own = json.dumps({"mcpServers": {"tasktrail": {"command": "node", "args": ["my-tasktrail.js"]}}}, indent=2)
    mcp_json.write_text(own)
    refused = trail("install", "claude-code", "--mcp", cwd=repo, home=home, path=path)
    assert refused.returncode == 3 and refused.stderr.count("\n") == 1 and "is your own" in refused.stderr
    assert mcp_json.read_text() == own and not (repo / ".claude").exists()
    assert trail("uninstall", "claude-code", "--mcp", cwd=repo, home=home, path=path).returncode == 0
    assert mcp_json.read_text() == own
