"""`trail install` / `trail uninstall`: live capture (and the MCP server) wired into Claude Code and Codex.

Which command the agents run depends on who reads the file. A file shared with the team (the
repository's ``.claude/settings.json``, ``.mcp.json``, ``.codex/``) gets only a name found on PATH
(``trail``, or ``tasktrail`` where another program owns ``trail``), never this machine's path; when
neither name is ours the command refuses and names the per-user scope. A per-user file
(``.claude/settings.local.json``, ``~/.claude/settings.json``, ``~/.codex/``) gets the absolute path
of this installation's script, so the hooks run whatever PATH the agent has. Project files go to
the repository root (``ledger.base.project.project_of``) from whichever subfolder the command runs in.

Every edit keeps what the user has: JSON files are merged (ours are recognised by their command,
``… hook claude-code`` / ``… hook codex`` / ``… mcp``), Codex's ``config.toml`` is edited in place
(``cli.tomledit``, on tomlkit). Installing twice changes nothing; uninstalling removes only ours, and a file or
folder that holds nothing else afterwards goes too. Files are replaced atomically.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import click

from cli import codextrust, jsonedit, tomledit
from cli.agent_group import AgentGroup
from cli.context import fails_cleanly
from ledger.base.errors import BadInput, BadSetting, Refused, TrailError
from ledger.capture.agent_mcp import PROGRAMS
from ledger.capture.jsonl import loads

NAMES = PROGRAMS
"""The console scripts of this package (``ledger.capture.agent_mcp.PROGRAMS``)."""
SERVER = "tasktrail"
"""The name the MCP server is registered under."""


# -- which command the agents run --------------------------------------------------------------------


def _is_ours(path: str) -> bool:
    """Whether the script at ``path`` is this package's (a console script that calls ``cli.main``)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b"cli.main" in head


def on_path() -> str | None:
    """The name under which PATH finds this program (``trail``, else ``tasktrail``), or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found and _is_ours(found):
            return name
    return None


def this_script() -> str:
    """The absolute path of this installation's script (next to the interpreter, else on PATH)."""
    for name in NAMES:
        beside = Path(sys.executable).parent / name
        if beside.is_file() and _is_ours(str(beside)):
            return str(beside)
    for name in NAMES:
        found = shutil.which(name)
        if found and _is_ours(found):
            return str(Path(found).resolve())
    raise BadSetting("cannot find the trail script of this installation; reinstall tasktrail (pip install -e .)")


def shared_command(where: str, personal: str) -> str:
    """The PATH name for a file shared with the team, or a one-line refusal naming ``personal``."""
    name = on_path()
    if name is None:
        raise BadSetting(
            f"trail is not on PATH, and {where} is shared with the team, so it must not hold this machine's "
            f"path; use {personal}, or put trail on PATH"
        )
    return name


# -- files ---------------------------------------------------------------------------------------------


def project_root() -> Path:
    """The repository root of the working directory (its git top level, else the folder itself)."""
    from ledger.base.project import project_of

    return Path(project_of(os.getcwd()) or os.getcwd())


@dataclass
class Change:
    path: Path
    before: str | None
    after: str | None
    """None: the file is removed (it held only ours)."""


def _read(path: Path) -> str | None:
    try:
        if not path.exists():
            return None
        with open(path, newline="") as handle:  # CRLF kept: a user's file comes back byte for byte
            return handle.read()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc}") from exc


def _json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        data = loads(text or "{}")
    except ValueError as exc:
        raise BadInput(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise BadInput(f"{path} does not hold a JSON object")
    return data


_INDENT = re.compile(r"\n([ \t]+)\S")
_ESCAPED = re.compile(r"\\u(?!00[0-7])[0-9a-fA-F]{4}")


def json_text(data: dict[str, Any], like: str | None) -> str:
    """``data`` as JSON written the way ``like`` (the file as it was) is: its indentation (two spaces for a new
    file), its line endings and final line break, non-ASCII as it was (``bär`` stays ``bär``; a file that
    escaped it, ``b\\u00e4r``, keeps escaping). A file in that form comes back byte for byte from uninstall."""
    like = like or ""
    found = _INDENT.search(like.replace("\r\n", "\n"))
    one_line = bool(like.strip()) and "\n" not in like.strip()
    indent: str | int | None = None if one_line else found.group(1) if found else 2
    tight = one_line and re.search(r'"\s*:\S', like) is not None  # {"a":1} rather than {"a": 1}
    escaped = bool(_ESCAPED.search(like)) and not any(ord(c) > 127 for c in like)
    text = json.dumps(data, indent=indent, ensure_ascii=escaped, separators=(",", ":") if tight else None)
    text += "\n" if not like or like.endswith("\n") else ""
    return text.replace("\n", "\r\n") if "\r\n" in like else text


def json_change(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Change:
    before = _read(path)
    data = _json(path, before)
    after = edit(data)
    if after == data:
        return Change(path, before, before)
    if not after:
        return Change(path, before, None)
    return Change(path, before, _in_place(before, data, after) or json_text(after, before))


def _in_place(before: str | None, data: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The user's file with only what changed written (``cli.jsonedit``), in its indentation and escaping."""
    if not before or not before.strip():
        return None
    like = before.replace("\r\n", "\n")
    found = _INDENT.search(like)
    unit = "" if "\n" not in like.strip() else found.group(1) if found else "  "
    escaped = bool(_ESCAPED.search(like)) and not any(ord(c) > 127 for c in like)
    text = jsonedit.edited(like, data, after, unit, escaped)
    return text.replace("\n", "\r\n") if text is not None and "\r\n" in before else text


def apply(changes: list[Change], dry_run: bool) -> None:
    for change in changes:
        if change.before == change.after:
            click.echo(f"{change.path}: already up to date")
            continue
        if dry_run:
            old = (change.before or "").splitlines()
            new = (change.after or "").splitlines()
            click.echo("\n".join(difflib.unified_diff(old, new, str(change.path), str(change.path), lineterm="")))
            continue
        if change.after is None:
            change.path.unlink()
            with contextlib.suppress(OSError):
                change.path.parent.rmdir()  # only when nothing else is in it
            click.echo(f"{change.path}: removed (it held only tasktrail's settings)")
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = change.path.with_name(change.path.name + ".trail-tmp")
        kept = stat.S_IMODE(change.path.stat().st_mode) if change.path.exists() else None
        with open(tmp, "w", newline="") as handle:
            handle.write(change.after)
        if kept is not None:
            os.chmod(tmp, kept)  # the user's file keeps its mode (ours would be 0600: the process's umask)
        tmp.replace(change.path)  # atomic: the agent never reads a half-written file
        click.echo(f"{change.path}: updated")


# -- hooks in a settings / hooks.json object (the same shape for both agents) --------------------------


def _hook_is_ours(hook: Any, suffix: str) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    return isinstance(command, str) and command.endswith(suffix) and "trail" in command


def without_hooks(settings: dict[str, Any], suffix: str) -> dict[str, Any]:
    """``settings`` with the hooks whose command ends in ``suffix`` taken out, all else kept."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        new_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not _hook_is_ours(h, suffix)]
                if inner:
                    new_groups.append({**group, "hooks": inner})
            else:
                new_groups.append(group)
        if new_groups:
            kept[event] = new_groups
    result = {**settings, "hooks": kept}
    if not kept:
        del result["hooks"]
    return result


def with_hooks(
    settings: dict[str, Any], command: str, suffix: str, events: tuple[str, ...], matcher: dict[str, str],
    timeouts: dict[str, int] | None = None,
) -> dict[str, Any]:
    """``settings`` with exactly one copy of our hook on each of ``events`` (the user's own are kept)."""
    result = without_hooks(settings, suffix)
    hooks = dict(result.get("hooks") or {})
    for event in events:
        timeout = (timeouts or {}).get(event, 30 if event == "SessionStart" else 10)
        entry = {"type": "command", "command": command, "timeout": timeout}
        group: dict[str, Any] = {"hooks": [entry]}
        if event in matcher:
            group = {"matcher": matcher[event], **group}
        hooks[event] = [*(hooks.get(event) or []), group]
    return {**result, "hooks": hooks}


def _server_is_ours(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    return os.path.basename(entry["command"]) in NAMES and entry.get("args") == ["mcp"]


# -- Claude Code -----------------------------------------------------------------------------------------

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "SessionEnd",
)
"""Claude Code's hook events that carry facts; 2.1 plans with TaskCreate/TaskUpdate, and
TaskCreated/TaskCompleted fire for them (PostCompact: the summary; SubagentStop: its report)."""
CLAUDE_MATCHERS = {"PostToolUse": "*", "PostToolUseFailure": "*"}
CLAUDE_SUFFIX = " hook claude-code"
CLAUDE_SCOPES = ("project", "local", "user")


def claude_settings(scope: str) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    name = "settings.local.json" if scope == "local" else "settings.json"
    return project_root() / ".claude" / name


def claude_command(scope: str) -> str:
    if scope == "project":
        name = shared_command(".claude/settings.json", "--local (.claude/settings.local.json, not committed)")
        return f"{name}{CLAUDE_SUFFIX}"
    return f"{shlex.quote(this_script())}{CLAUDE_SUFFIX}"


EXCLUDE_NOTE = "# tasktrail: per-user Claude Code settings (trail install claude-code --local)"
EXCLUDE_LINE = "/.claude/settings.local.json"
JOINED = "(and the line break before it)"


def exclude_change(install: bool) -> Change | None:
    """The repository's own ``.git/info/exclude`` (never a tracked .gitignore) keeping settings.local.json out
    of git: it holds this machine's path to trail. None outside a git repository or when git ignores it anyway."""
    root = project_root()
    found = subprocess.run(["git", "-C", str(root), "rev-parse", "--git-path", "info/exclude"],
                           capture_output=True, text=True, check=False)
    if found.returncode != 0:
        return None
    path = Path(found.stdout.strip())
    path = path if path.is_absolute() else root / path
    before = _read(path)
    text = before or ""
    if not install:
        for note in (f"\n{EXCLUDE_NOTE} {JOINED}\n", f"{EXCLUDE_NOTE}\n"):  # the joined one takes its break away
            block = f"{note}{EXCLUDE_LINE}\n"
            if block in text:
                at = text.index(block)
                return Change(path, before, text[:at] + text[at + len(block):] or None)  # None: held only ours
        return None
    if f"{EXCLUDE_LINE}\n" in text.splitlines(keepends=True):
        return None
    ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", ".claude/settings.local.json"],
                             capture_output=True, check=False)
    if ignored.returncode == 0:
        return None  # the user's own ignore rules already cover it
    # A file without a final line break gets one, and the note says so, so uninstall takes it away again.
    note = f"\n{EXCLUDE_NOTE} {JOINED}" if text and not text.endswith("\n") else EXCLUDE_NOTE
    return Change(path, before, f"{text}{note}\n{EXCLUDE_LINE}\n")


def mcp_json_change(install: bool) -> Change:
    """``.mcp.json`` at the repository root with (or without) the tasktrail server."""
    path = project_root() / ".mcp.json"
    if install:
        name = shared_command(".mcp.json", "`claude mcp add --scope local tasktrail -- trail mcp`")
        # alwaysLoad: Claude Code 2.1 in print mode connects other servers in the background, so the first
        # request often went out without tasktrail's tools; it waits (up to MCP_CONNECT_TIMEOUT_MS) for these
        entry = {"type": "stdio", "command": name, "args": ["mcp"], "alwaysLoad": True}

    def edit(data: dict[str, Any]) -> dict[str, Any]:
        servers = dict(data.get("mcpServers") or {})
        if install:
            mine = servers.get(SERVER)
            if mine is not None and mine != entry and not _server_is_ours(mine):
                raise Refused(f"{path}: the {SERVER} server there is your own (it does not run `trail mcp`), so it "
                              "is left as it is; remove or rename it to let trail install its own")
            servers[SERVER] = entry
        elif _server_is_ours(servers.get(SERVER)):
            del servers[SERVER]
        else:
            return data
        result = {**data, "mcpServers": servers}
        if not servers:
            del result["mcpServers"]
        return result

    return json_change(path, edit)


def _claude_elsewhere(scope: str) -> list[Path]:
    """Other scopes' settings files that hold our hooks too (Claude Code would run both)."""
    found = []
    for other in CLAUDE_SCOPES:
        path = claude_settings(other)
        if other != scope and path.exists():
            try:
                data = _json(path, _read(path))
            except TrailError:
                continue
            if without_hooks(data, CLAUDE_SUFFIX) != data:
                found.append(path)
    return found


def _scope_option(help_project: str) -> Callable[[Any], Any]:
    def decorate(func: Any) -> Any:
        func = click.option("--user", "scope", flag_value="user", help="The user's own settings (every project).")(func)
        func = click.option("--local", "scope", flag_value="local",
                            help="The repository's per-user, uncommitted settings.local.json.")(func)
        func = click.option("--project", "scope", flag_value="project", help=help_project)(func)
        return func

    return decorate


_dry = click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")


def _plan_command(agent: str, remove: bool) -> click.Command:
    """`trail install NAME` / `trail uninstall NAME` for an agent whose package gives its install plan
    (``Agent.install_plan``); the shipped agents' commands below take options of their own."""
    verb = "Remove tasktrail's hooks from" if remove else "Add tasktrail's hooks to"

    @click.command(agent, help=f"{verb} {agent}'s settings (the project's by default).")
    @click.option("--user", "scope", flag_value="user", help="The user's own settings (every project).")
    @click.option("--project", "scope", flag_value="project", help="The repository's shared settings (default).")
    @_dry
    @fails_cleanly
    def command(scope: str | None, dry_run: bool) -> None:
        from ledger.capture.agents import load

        who = load(agent)
        where: Literal["project", "user"] = "user" if scope == "user" else "project"
        command = ""  # removing: the plan finds ours by its suffix, wherever trail was then
        if not remove:
            name = shared_command(f"{who.title}'s project settings", "--user") if where == "project" else None
            command = f"{name or shlex.quote(this_script())} hook {agent}"
        plan = who.install_plan(command, where, project_root(), remove=remove)
        if not plan:
            raise BadInput(f"{who.title} has no hooks tasktrail can install")
        changes = []
        for edit in plan:
            before = _read(edit.path)
            changes.append(Change(edit.path, before, edit.edit(before)))
        apply([c for c in changes if not remove or c.before is not None], dry_run)

    return command


@click.group("install", cls=AgentGroup, make=lambda name: _plan_command(name, remove=False))
def install_group() -> None:
    """Install live capture into an agent."""


@install_group.command("claude-code")
@_scope_option("The repository's shared .claude/settings.json (default; needs trail on PATH).")
@click.option("--mcp", is_flag=True, help="Also register the MCP server (trail mcp) in the repository's .mcp.json.")
@_dry
@fails_cleanly
def install_claude_code(scope: str | None, mcp: bool, dry_run: bool) -> None:
    """Add tasktrail's hooks to Claude Code's settings, keeping every hook already there.

    Project files are written at the repository root, whichever subfolder this runs in. The shared
    settings.json gets the command by its name on PATH; --local and --user get this installation's path.
    """
    scope = scope or "project"
    path = claude_settings(scope)
    command = claude_command(scope)
    changes = [json_change(path, lambda s: with_hooks(s, command, CLAUDE_SUFFIX, CLAUDE_EVENTS, CLAUDE_MATCHERS))]
    if scope == "local" and (excluded := exclude_change(install=True)) is not None:
        changes.append(excluded)
    if mcp:
        changes.append(mcp_json_change(install=True))
    apply(changes, dry_run)
    for other in _claude_elsewhere(scope):
        click.echo(f"trail: note: {other} has tasktrail's hooks too, so Claude Code runs both; "
                   "`trail uninstall claude-code` with that file's scope removes them", err=True)


@click.group("uninstall", cls=AgentGroup, make=lambda name: _plan_command(name, remove=True))
def uninstall_group() -> None:
    """Remove live capture from an agent."""


@uninstall_group.command("claude-code")
@_scope_option("The repository's shared .claude/settings.json.")
@click.option("--mcp", is_flag=True, help="Also remove the tasktrail server from the repository's .mcp.json.")
@_dry
@fails_cleanly
def uninstall_claude_code(scope: str | None, mcp: bool, dry_run: bool) -> None:
    """Remove tasktrail's hooks (only ours) from Claude Code's settings.

    Without a scope: from every settings file that has them (shared, local, user) and .mcp.json.
    """
    scopes = (scope,) if scope else CLAUDE_SCOPES
    changes = [json_change(claude_settings(s), lambda d: without_hooks(d, CLAUDE_SUFFIX)) for s in scopes]
    local = changes[scopes.index("local")] if "local" in scopes else None
    if local is not None and local.after is None and (excluded := exclude_change(install=False)) is not None:
        changes.append(excluded)  # the file is gone, so is the rule that kept it out of git
    if mcp or scope is None:
        changes.append(mcp_json_change(install=False))
    apply([c for c in changes if c.before is not None], dry_run)


# -- Codex ------------------------------------------------------------------------------------------------

CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "PostCompact", "Stop", "SessionEnd")
CODEX_SUFFIX = " hook codex"
FEATURES = ("features",)
FEATURE, OLD_FEATURE = "hooks", "codex_hooks"
"""Codex 0.171 reads ``[features] hooks``; ``codex_hooks`` is its deprecated name (older trail wrote it)."""
MCP_TABLE = ("mcp_servers", SERVER)
MCP_ENV = ("TRAIL_HOME", "TRAIL_DATABASE_URL", "TRAIL_DB", "XDG_DATA_HOME")
"""What locates the ledger (``ledger.base.location``): Codex starts an MCP server with a cleared environment
except the variables its ``env_vars`` names, so without these the server would write to another ledger."""
MCP_WAIT = {"required": True, "startup_timeout_sec": 30}
"""Codex 0.171 waits only ``mcp_optional_startup_grace_ms`` (1 s) for a server that is not ``required`` and
then leaves it out of the turn's tools; ``trail mcp`` takes 1-5 s to answer ``initialize``, so the first
request went without tasktrail's tools. A required server is waited for, up to ``startup_timeout_sec`` (30 s,
Codex's default, written so a change of default cannot shorten it). The price: a required server that cannot
start (its command gone, no MCP SDK) stops every Codex session with "required MCP servers failed to
initialize". A capture tool must never be what keeps the agent from starting, so it is the user's choice
(``--mcp-required``), written only where the server can start (``_mcp_can_start``), and ``trail doctor``
checks it."""
STATE = ("hooks", "state")
CODEX_TIMEOUTS = {"SessionEnd": 3}
"""Codex clamps a SessionEnd hook to 3 s (and says so at every start when it is given more)."""


def codex_folder(scope: str) -> Path:
    if scope == "project":
        return project_root() / ".codex"
    return codex_home()


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def _toml(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"cannot read {path}: {exc}") from exc


def _hook_states(config: dict[str, Any]) -> dict[str, Any]:
    hooks = config.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    return states if isinstance(states, dict) else {}


def _ours_in_state(key: tuple[str, ...], source: str) -> bool:
    return len(key) == 3 and key[:2] == STATE and key[2].startswith(source + ":")


def config_change(path: Path, server: dict[str, Any] | None, trust: dict[str, str] | None = None,
                  source: str | None = None) -> Change:
    """``config.toml`` with the hooks feature on, our MCP server (``server``) and the trust records of our
    hooks in ``source`` (``trust``: key -> hash), or all of it undone (``server`` None). Only the trust
    records we wrote (marked) for ``source`` are ever removed; a ``[mcp_servers.tasktrail]`` the user wrote
    (no mark) is never replaced (refused, exit 3) nor removed."""
    before = _read(path)
    parsed = _toml(path, before)
    text = before or ""
    trust = trust or {}
    unusual = False
    try:
        if source is not None:
            for key in tomledit.marked_tables(text):
                if _ours_in_state(key, source) and key[2] not in trust:
                    text = tomledit.remove_table(text, key)
        states = _hook_states(parsed)
        if server is not None:
            if server:  # an empty server: only the trust records (the user's file, for --project)
                text = tomledit.unset_key(text, FEATURES, OLD_FEATURE)  # the line an older trail wrote
                text = tomledit.set_key(text, FEATURES, FEATURE, True, replaces=(OLD_FEATURE,))
                text = tomledit.set_table(text, MCP_TABLE, server)
            for name, digest in trust.items():
                if isinstance(states.get(name), dict) and states[name].get("trusted_hash") == digest:
                    continue  # trusted already (by the user's /hooks): theirs, left as it is
                # a stale trust of our hook's key (Codex's /hooks wrote it): ours to renew
                text = tomledit.set_table(text, (*STATE, name), {"trusted_hash": digest}, take_over=True)
        else:  # the reverse of the order install adds them in, so each table we appended goes from the end
            if tomledit.is_marked(text, MCP_TABLE):
                text = tomledit.remove_table(text, MCP_TABLE)
            text = tomledit.unset_key(text, FEATURES, FEATURE)
            text = tomledit.unset_key(text, FEATURES, OLD_FEATURE)
    except tomledit.Theirs as exc:
        raise Refused(f"{path}: {exc} (its header has no `{tomledit.MARK}` mark), so it is left as it is; "
                      "remove or rename it to let trail install its own") from exc
    except tomledit.Unusual:
        unusual = True  # a layout this editor cannot reach (an inline table): refused below, the file untouched
    try:
        after, parses = (tomllib.loads(text) if text != before else parsed), not unusual
    except tomllib.TOMLDecodeError:
        after, parses = {}, False  # our edit would not parse: refused below, the file untouched
    if parses and server is not None:
        got = _hook_states(after)
        ok = ((not server or (after.get("features", {}).get(FEATURE) is True
                              and after.get("mcp_servers", {}).get(SERVER) == server))
              and all(isinstance(got.get(k), dict) and got[k].get("trusted_hash") == v for k, v in trust.items()))
    else:
        ok = parses and not tomledit.is_marked(text, MCP_TABLE)
    if not ok:
        raise Refused(
            f"cannot edit {path} safely (its layout is unusual); add by hand: [features] hooks = true and "
            f'[mcp_servers.{SERVER}] command = "trail", args = ["mcp"]'
            + (", required = true" if server and server.get("required") else "")
            + ", then trust the hooks in Codex's /hooks"
        )
    if text == (before or ""):
        return Change(path, before, before)
    return Change(path, before, text if text.strip() else None)


def _codex_hooks_change(folder: Path, command: str) -> tuple[Change, list[codextrust.Hook]]:
    change = json_change(folder / "hooks.json",
                         lambda s: with_hooks(s, command, CODEX_SUFFIX, CODEX_EVENTS, {}, CODEX_TIMEOUTS))
    after = _json(change.path, change.after)
    return change, codextrust.command_hooks(codextrust.hooks_file(folder), after, CODEX_SUFFIX)


@install_group.command("codex")
@click.option("--user", "scope", flag_value="user", default=True,
              help="The user's ~/.codex ($CODEX_HOME): every project (default).")
@click.option("--project", "scope", flag_value="project",
              help="The repository's .codex/, shared with the team (needs trail on PATH; Codex loads it "
                   "once the project is trusted).")
@click.option("--no-trust", is_flag=True,
              help="Do not record the hooks as trusted in config.toml; Codex skips them until you approve "
                   "them in its /hooks.")
@click.option("--mcp-required", is_flag=True,
              help="Make Codex wait for tasktrail's MCP server at session start, so the first request has its "
                   "tools (--user only). The price: if the server cannot start, Codex starts no session.")
@_dry
@fails_cleanly
def install_codex(scope: str, no_trust: bool, mcp_required: bool, dry_run: bool) -> None:
    """Add tasktrail's hooks to Codex's hooks.json, turn hooks on, trust them and register the MCP server.

    Hooks: SessionStart (answered with the task's brief), UserPromptSubmit, PostToolUse, PreCompact,
    PostCompact, Stop and SessionEnd, each running `trail hook codex`. Codex runs only hooks the user
    has trusted, so the trust its /hooks would record goes into the user's config.toml
    ([hooks.state."<key>"] trusted_hash), unless --no-trust. Codex gives a server that is not required
    about a second at session start, so the first request may go without tasktrail's tools; with
    --mcp-required it waits (and starts no session if the server cannot start: `trail doctor` checks it).
    Everything already in the files is kept.
    """
    if mcp_required and scope == "project":  # the team's file: a teammate without trail could not start Codex
        raise BadInput("--mcp-required is for --user only: in .codex/ it would stop the Codex sessions of "
                       "every teammate without trail")
    if mcp_required and not _mcp_can_start():
        raise BadInput("--mcp-required: the MCP server needs the SDK: pip install 'tasktrail[mcp]'")
    folder = codex_folder(scope)
    if scope == "project":
        name = shared_command(".codex/", "--user (~/.codex)")
        command, server = f"{name}{CODEX_SUFFIX}", name
    else:
        server = this_script()
        command = f"{shlex.quote(server)}{CODEX_SUFFIX}"
    hooks_change, hooks = _codex_hooks_change(folder, command)
    entry: dict[str, Any] = {"command": server, "args": ["mcp"], "env_vars": list(MCP_ENV)}
    if mcp_required:
        entry.update(MCP_WAIT)
    trust = {} if no_trust else {hook.key: hook.hash for hook in hooks}
    source = codextrust.hooks_file(folder)
    user_config = codex_home() / "config.toml"
    if scope == "project":
        # trust is the user's: Codex reads [hooks.state] only from the user's config.toml
        changes = [hooks_change, config_change(folder / "config.toml", entry),
                   config_change(user_config, {}, trust, source)]
    else:
        changes = [hooks_change, config_change(folder / "config.toml", entry, trust, source)]
    if trust and not dry_run:
        click.echo(f"trail: trusting tasktrail's {len(trust)} Codex hooks in {user_config} ([hooks.state], as "
                   "Codex's /hooks records it) because you asked for them; --no-trust leaves that to /hooks",
                   err=True)
    apply(changes, dry_run)
    _note_mcp_extra()


@uninstall_group.command("codex")
@click.option("--user", "scope", flag_value="user", default=True, help="The user's ~/.codex ($CODEX_HOME) (default).")
@click.option("--project", "scope", flag_value="project", help="The repository's .codex/.")
@_dry
@fails_cleanly
def uninstall_codex(scope: str, dry_run: bool) -> None:
    """Remove exactly what `trail install codex` added: our hooks, their trust, our hooks feature line,
    our MCP server."""
    folder = codex_folder(scope)
    source = codextrust.hooks_file(folder)
    changes = [json_change(folder / "hooks.json", lambda s: without_hooks(s, CODEX_SUFFIX))]
    if scope == "project":
        changes += [config_change(folder / "config.toml", None),
                    _user_trust_removed(codex_home() / "config.toml", source)]
    else:
        changes.append(config_change(folder / "config.toml", None, {}, source))
    apply([c for c in changes if c.before is not None], dry_run)


def _user_trust_removed(path: Path, source: str) -> Change:
    """The user's ``config.toml`` without the trust records we wrote for ``source`` (nothing else)."""
    before = _read(path)
    text = before or ""
    for key in tomledit.marked_tables(text):
        if _ours_in_state(key, source):
            text = tomledit.remove_table(text, key)
    return Change(path, before, before if text == (before or "") else (text if text.strip() else None))


def codex_hook_problems() -> tuple[int, list[str]]:
    """How many of tasktrail's hooks are installed for Codex (the user's and this repository's .codex/),
    and why Codex would skip any of them."""
    config_path = codex_home() / "config.toml"
    try:
        config = _toml(config_path, _read(config_path))
    except TrailError as exc:
        return 0, [str(exc)]
    count, found = 0, []
    for folder in dict.fromkeys((codex_home(), project_root() / ".codex")):
        path = folder / "hooks.json"
        try:
            settings = _json(path, _read(path))
        except TrailError as exc:
            found.append(str(exc))
            continue
        hooks = codextrust.command_hooks(codextrust.hooks_file(folder), settings, CODEX_SUFFIX)
        count += len(hooks)
        if hooks:
            found += [f"{path}: {problem}" for problem in codextrust.problems(hooks, config)]
        if hooks and folder != codex_home():
            project = (config.get("projects") or {}).get(str(folder.parent), {})
            if not (isinstance(project, dict) and project.get("trust_level") == "trusted"):
                found.append(f"{path}: the project {folder.parent} is not trusted in {config_path} "
                             "([projects.\"…\"] trust_level = \"trusted\"): Codex does not load its .codex/")
    return count, list(dict.fromkeys(found))


def _mcp_can_start() -> bool:
    import importlib.util

    return importlib.util.find_spec("mcp") is not None


def _note_mcp_extra() -> None:
    if not _mcp_can_start():
        click.echo("trail: note: the MCP server needs the SDK: pip install 'tasktrail[mcp]'", err=True)


def _is_this_installation(script: str) -> bool:
    try:
        return os.path.realpath(script) == os.path.realpath(this_script())
    except BadSetting:
        return False


def codex_mcp_problems() -> list[str]:
    """Why a *required* ``[mcp_servers.tasktrail]`` (``trail install codex``) could not start: Codex would then
    refuse to start any session ("required MCP servers failed to initialize")."""
    found = []
    for path in dict.fromkeys((codex_home() / "config.toml", project_root() / ".codex" / "config.toml")):
        try:
            entry = _toml(path, _read(path)).get("mcp_servers", {}).get(SERVER)
        except (TrailError, AttributeError):
            continue  # an unreadable config.toml is codex_hook_problems' to report
        if not (_server_is_ours(entry) and entry.get("required") is True):
            continue
        command = str(entry["command"])
        resolved = command if os.path.isabs(command) else shutil.which(command)
        if resolved is None or not os.access(resolved, os.X_OK):
            why = f"its command {command} is not there"
        elif _is_this_installation(resolved) and not _mcp_can_start():
            why = "the MCP SDK is not installed (pip install 'tasktrail[mcp]')"
        else:
            continue
        found.append(f"{path}: [mcp_servers.{SERVER}] is required but {why}: Codex will not start a session "
                     "(`trail install codex` without --mcp-required, or `trail uninstall codex`)")
    return found
