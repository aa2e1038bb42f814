"""Which of the hooks in a Codex ``hooks.json`` Codex 0.171 will run, and the trust records that make it run them.

Codex runs a user's hook only when the user's ``config.toml`` says it is trusted: its TUI's ``/hooks``
writes ``[hooks.state."<key>"] trusted_hash = "sha256:…"``, and ``codex exec`` silently skips a hook
without one (or whose hash no longer matches). The key is positional, ``<hooks.json path>:<event in
snake_case>:<group index>:<handler index>``; the hash is the sha256 of the compact, key-sorted JSON of
the hook's normalised identity, ``{"event_name", "matcher"?, "hooks": [{"type": "command", "command",
"timeout", "async"}]}`` (Codex's ``command_hook_hash`` in ``codex-rs/hooks/src/engine/discovery.rs``;
the None fields are left out, as Codex's TOML serialiser leaves them). Both were checked against the
``currentHash`` and ``key`` that ``codex app-server``'s ``hooks/list`` reports (tests/e2e/test_codex.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 600
"""Seconds Codex gives a command hook whose ``timeout`` is unset (and the hash records)."""
SHORT_EVENTS = {"SessionEnd": (1, 3), "Interrupt": (1, 3)}
"""Events whose timeout Codex defaults and clamps (default, most) before hashing: the session is ending."""
MATCHED_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "PostToolUse", "SessionStart", "PreCompact",
                            "PostCompact"})
"""Events whose ``matcher`` Codex honours; on the others it drops it, from the hash too."""


def event_label(event: str) -> str:
    """``PostToolUse`` -> ``post_tool_use``: the event as Codex names it in keys and hashes."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def hooks_file(folder: Path) -> str:
    """The path Codex keys a folder's ``hooks.json`` by: absolute; links followed where Codex follows them
    (it canonicalises ``CODEX_HOME`` and the working directory, not ``~/.codex``: both checked with 0.171)."""
    home = os.environ.get("CODEX_HOME")
    default_home = not home and os.path.abspath(folder) == os.path.abspath(Path.home() / ".codex")
    if default_home or not folder.exists():
        return os.path.abspath(folder / "hooks.json")
    return str(folder.resolve() / "hooks.json")


def hook_key(source: str, event: str, group: int, handler: int) -> str:
    return f"{source}:{event_label(event)}:{group}:{handler}"


def hook_hash(event: str, matcher: Any, handler: dict[str, Any]) -> str:
    given = handler.get("timeout", handler.get("timeoutSec"))
    default, most = SHORT_EVENTS.get(event, (DEFAULT_TIMEOUT, None))
    timeout = max(given, 1) if isinstance(given, int) and not isinstance(given, bool) else default
    hook: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": min(timeout, most) if most else timeout,
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        hook["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_label(event), "hooks": [hook]}
    if isinstance(matcher, str) and event in MATCHED_EVENTS:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Hook:
    event: str
    key: str
    hash: str
    command: str


def command_hooks(source: str, settings: dict[str, Any], suffix: str) -> list[Hook]:
    """The command hooks in a parsed ``hooks.json`` whose command ends in ``suffix``, keyed as Codex keys them."""
    found = []
    hooks = settings.get("hooks")
    for event, groups in (hooks.items() if isinstance(hooks, dict) else ()):
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                command = handler.get("command") if isinstance(handler, dict) else None
                if isinstance(command, str) and command.endswith(suffix) and handler.get("type") == "command":
                    found.append(Hook(event, hook_key(source, event, g, h),
                                      hook_hash(event, group.get("matcher"), handler), command))
    return found


def hooks_enabled(config: dict[str, Any]) -> tuple[bool, str | None]:
    """Whether the hooks feature is on in a parsed ``config.toml`` (it is by default in 0.171), and a
    note when it is set by the deprecated name ``codex_hooks``."""
    features = config.get("features")
    features = features if isinstance(features, dict) else {}
    note = "[features] codex_hooks is the deprecated name of [features] hooks" if "codex_hooks" in features else None
    value = features.get("hooks", features.get("codex_hooks", True))
    return value is not False, note


def problems(hooks: list[Hook], config: dict[str, Any]) -> list[str]:
    """Why Codex would not run each of ``hooks``, given the user's parsed ``config.toml`` (empty: it runs them all)."""
    found = []
    on, note = hooks_enabled(config)
    if not on:
        found.append("the hooks feature is off ([features] hooks = false): Codex runs no hook")
    if note:
        found.append(note)
    states = (config.get("hooks") or {}).get("state") if isinstance(config.get("hooks"), dict) else None
    states = states if isinstance(states, dict) else {}
    for hook in hooks:
        state = states.get(hook.key)
        state = state if isinstance(state, dict) else {}
        if state.get("enabled") is False:
            found.append(f"{hook.event} ({hook.key}) is disabled in [hooks.state]")
        elif "trusted_hash" not in state:
            found.append(f"{hook.event} ({hook.key}) is not trusted: codex exec skips it")
        elif state["trusted_hash"] != hook.hash:
            found.append(f"{hook.event} ({hook.key}) changed since it was trusted: codex exec skips it")
    return found
