"""Codex CLI rollouts -> ledger items (pure; see docs/capture.md).

Source keys: ``SourceKey("codex", session id, record)`` with ``record`` the ``call_id`` of a tool
call (``#<path>`` appended per file of a patch, ``#plan``/``#next``/``#call``/``#result`` for the
events of one call), else ``<file-stem>:<line>``. Commands come from ``exec_command_end`` where it
exists (it has the exit code); older rollouts only have the output's metadata or its
"Process exited with code N" line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ledger import events as ev
from ledger.capture.classify import classify
from ledger.capture.claude_code import Session
from ledger.capture.items import bounded, plan_items, prompt_item, title_from
from ledger.capture.jsonl import Skipped, records

AGENT = "codex"
ACTOR = f"agent:{AGENT}"
SHELL_TOOLS = frozenset({"exec_command", "shell", "local_shell", "container.exec"})
_EXITED = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


def _shell_line(command: Any) -> tuple[str | None, tuple[str, ...] | None]:
    """``(shell, argv)``: a ``[sh, -lc, LINE]`` command is a shell line, other lists are argv."""
    if isinstance(command, str):
        return command, None
    if isinstance(command, list) and command:
        argv = tuple(str(c) for c in command)
        if len(argv) == 3 and argv[1] in ("-lc", "-c") and argv[0].rsplit("/", 1)[-1] in ("bash", "zsh", "sh"):
            return argv[2], None
        return None, argv
    return None, None


def _args(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        data = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _output_text(output: Any) -> tuple[str, int | None]:
    """A call output's text and exit code (JSON ``{"output", "metadata": {"exit_code"}}`` or plain)."""
    if isinstance(output, str):
        try:
            data = json.loads(output)
        except ValueError:
            data = None
        if isinstance(data, dict) and "output" in data:
            meta = data.get("metadata") or {}
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return str(data["output"]), code if isinstance(code, int) else None
        match = _EXITED.search(output)
        return output, int(match.group(1)) if match else None
    if output is None:
        return "", None
    return json.dumps(output, default=str), None


def map_rollout(lines: Iterable[tuple[int, str]], stem: str, transcript: str | None = None) -> Session:
    """Map the numbered lines of one rollout file to items (pure: no I/O)."""
    session = Session()
    parsed = list(records(lines, session.skipped))
    # Envelope (0.2x+) or legacy: bare header line then bare response items.
    flat = []
    for number, record in parsed:
        if "payload" in record and "type" in record:
            payload = record["payload"] if isinstance(record["payload"], dict) else {}
            flat.append((number, str(record["type"]), payload, record.get("timestamp")))
        elif "type" not in record and "id" in record and "instructions" in record:
            flat.append((number, "session_meta", record, record.get("timestamp")))
        elif record.get("record_type") == "state":
            continue
        else:
            flat.append((number, "response_item", record, record.get("timestamp")))
    ended = {p.get("call_id") for _, t, p, _ in flat if t == "event_msg" and p.get("type") == "exec_command_end"}
    patched = {p.get("call_id") for _, t, p, _ in flat if t == "event_msg" and p.get("type") == "patch_apply_end"}
    has_user_events = any(t == "event_msg" and p.get("type") == "user_message" for _, t, p, _ in flat)

    calls: dict[str, tuple[str, dict[str, Any], Any]] = {}
    prompts = 0
    def handle(number: int, kind: str, payload: dict[str, Any], ts: Any) -> None:
        nonlocal prompts
        if ts and not session.first_timestamp:
            session.first_timestamp = str(ts)
        ptype = payload.get("type")
        if kind == "session_meta":
            if not session.session_id and payload.get("id"):
                session.session_id = str(payload["id"])
                session.cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
                if transcript:
                    session.items.append(
                        (
                            ev.ConversationLinked,
                            {
                                "agent": AGENT,
                                "session_id": session.session_id,
                                "transcript": transcript,
                                "actor": "system",
                                "timestamp": ts,
                                "source": ev.SourceKey(agent=AGENT, session=session.session_id, record="link"),
                            },
                        )
                    )
            return
        sid = session.session_id or stem
        src = ev.SourceKey(agent=AGENT, session=sid, record=f"{stem}:{number}")
        prompt_text: str | None = None
        if kind == "event_msg" and ptype == "user_message":
            prompt_text = str(payload.get("message") or "")
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "user" and not has_user_events:
            text = "\n".join(str(c.get("text", "")) for c in payload.get("content") or () if isinstance(c, dict))
            if not text.lstrip().startswith(("<environment_context>", "<user_instructions>", "# AGENTS.md")):
                prompt_text = text
        if prompt_text is not None and prompt_text.strip():
            prompts += 1
            kind_ = classify(prompt_text, first=prompts == 1)
            session.items.append(prompt_item(kind_, prompt_text.strip(), src, ts))
            if session.title is None:
                session.title = title_from(prompt_text)
            return
        if kind == "compacted":
            summary = str(payload.get("message") or "").strip()
            session.items.append(
                (
                    ev.CheckpointMarked,
                    {"label": "compaction", "note": summary or None, "actor": "system", "source": src, "timestamp": ts},
                )
            )
            return
        if kind == "event_msg" and ptype == "exec_command_end":
            call_id = str(payload.get("call_id") or src.record)
            shell, argv = _shell_line(payload.get("command"))
            dur = payload.get("duration") or {}
            ms = int(dur.get("secs", 0) * 1000 + dur.get("nanos", 0) // 1_000_000) if isinstance(dur, dict) else None
            stdout = payload.get("stdout") or payload.get("aggregated_output") or ""
            session.items.append(
                (
                    ev.CommandRan,
                    {
                        "shell": shell,
                        "argv": argv,
                        "cwd": payload.get("cwd"),
                        "exit_code": payload.get("exit_code"),
                        "duration_ms": ms,
                        "stdout": bounded(stdout),
                        "stderr": bounded(payload.get("stderr") or ""),
                        "actor": ACTOR,
                        "timestamp": ts,
                        "source": src.model_copy(update={"record": call_id}),
                    },
                )
            )
            return
        if kind == "event_msg" and ptype == "patch_apply_end":
            call_id = str(payload.get("call_id") or src.record)
            changes = payload.get("changes") if payload.get("success", True) else None
            for path, change in (changes or {}).items():
                change = change if isinstance(change, dict) else {}
                op = {"add": "created", "delete": "deleted"}.get(str(change.get("type")), "modified")
                moved = change.get("move_path")
                session.items.append(
                    (
                        ev.FileChanged,
                        {
                            "path": str(moved or path),
                            "operation": "renamed" if moved else op,
                            "renamed_from": str(path) if moved else None,
                            "diff": bounded(change.get("unified_diff") or change.get("content") or ""),
                            "actor": ACTOR,
                            "timestamp": ts,
                            "source": src.model_copy(update={"record": f"{call_id}#{path}"}),
                        },
                    )
                )
            if not payload.get("success", True):
                session.items.append(
                    (
                        ev.ToolResult,
                        {
                            "tool": "apply_patch",
                            "call_id": call_id,
                            "ok": False,
                            "output": bounded(str(payload.get("stderr") or payload.get("stdout") or "failed")),
                            "actor": "tool:apply_patch",
                            "timestamp": ts,
                            "source": src.model_copy(update={"record": f"{call_id}#result"}),
                        },
                    )
                )
            return
        if kind != "response_item":
            return
        if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = str(payload.get("call_id") or payload.get("id") or src.record)
            name = str(payload.get("name") or ("shell" if ptype == "local_shell_call" else "?"))
            if payload.get("namespace"):
                name = f"{payload['namespace']}.{name}"
            args = _args(payload) if ptype == "function_call" else {"input": payload.get("input")}
            if ptype == "local_shell_call":
                args = payload.get("action") or {}
            if name == "update_plan":
                steps = [
                    (str(s.get("step", "")), str(s.get("status", "")))
                    for s in args.get("plan") or ()
                    if isinstance(s, dict)
                ]
                session.items.extend(plan_items(steps, ACTOR, src.model_copy(update={"record": call_id}), ts))
                return
            calls[call_id] = (name, args, ts)
            return
        if ptype in ("function_call_output", "custom_tool_call_output"):
            call_id = str(payload.get("call_id") or "")
            name, args, _ = calls.pop(call_id, ("?", {}, ts))
            text, code = _output_text(payload.get("output"))
            key = src.model_copy(update={"record": call_id or src.record})
            if name == "write_stdin" or name == "update_plan":
                return  # polling of a running exec_command; its exec_command_end has the result
            if name in SHELL_TOOLS:
                if call_id in ended or (name == "exec_command" and code is None):
                    return  # recorded from exec_command_end, or still running
                shell, argv = _shell_line(args.get("cmd") or args.get("command"))
                session.items.append(
                    (
                        ev.CommandRan,
                        {
                            "shell": shell,
                            "argv": argv,
                            "cwd": args.get("workdir"),
                            "exit_code": code,
                            "stdout": bounded(text),
                            "actor": ACTOR,
                            "timestamp": ts,
                            "source": key,
                        },
                    )
                )
                return
            if name == "apply_patch" and call_id not in patched and code in (0, None):
                patch = str(args.get("input") or "")
                for op, path in _PATCH_FILE.findall(patch):
                    operation = {"Add": "created", "Delete": "deleted"}.get(op, "modified")
                    session.items.append(
                        (
                            ev.FileChanged,
                            {
                                "path": path.strip(),
                                "operation": operation,
                                "diff": bounded(patch),
                                "actor": ACTOR,
                                "timestamp": ts,
                                "source": key.model_copy(update={"record": f"{call_id}#{path.strip()}"}),
                            },
                        )
                    )
                return
            if name == "apply_patch":
                return
            session.items.extend(
                [
                    (
                        ev.ToolCalled,
                        {
                            "tool": name,
                            "call_id": call_id,
                            "input": bounded(json.dumps(args, default=str)),
                            "actor": ACTOR,
                            "timestamp": ts,
                            "source": key.model_copy(update={"record": key.record + "#call"}),
                        },
                    ),
                    (
                        ev.ToolResult,
                        {
                            "tool": name,
                            "call_id": call_id,
                            "ok": code in (0, None),
                            "output": bounded(text) or bounded(" "),
                            "actor": "tool:" + re.sub(r"\s", "_", name),
                            "timestamp": ts,
                            "source": key.model_copy(update={"record": key.record + "#result"}),
                        },
                    ),
                ]
            )

    for number, kind, payload, ts in flat:
        try:
            handle(number, kind, payload, ts)
        except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
            # A record of a shape this mapper does not know is skipped with its reason, never fatal.
            session.skipped.append(Skipped(number, f"unexpected record shape ({type(exc).__name__}: {exc})"))
    if session.title is None and session.session_id:
        session.title = f"codex session {session.session_id[:8]}"
    return session
