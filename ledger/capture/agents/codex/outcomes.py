"""The exit codes Codex wrote to its rollout for shell calls its PostToolUse hook reported without one, and
the numbered diffs it wrote for its ``apply_patch`` calls.

Codex 0.171's shell PostToolUse gives the command's output alone (``tool_response`` is the bare
string), while the rollout it writes at the same time holds the outcome twice: an ``item_completed``
``CommandExecution`` item (``exit_code``, ``duration``) and the ``function_call_output`` the model saw
(``Process exited with code N``, ``Wall time: S seconds``). When the inbox folds such a row, it looks
the call up here, in the rollout the payload names (``transcript_path``). An ``apply_patch`` PostToolUse
gives the patch as the model wrote it, whose hunks say no line; the rollout's ``FileChange`` item (older
versions: ``patch_apply_end``) has Codex's own unified diff of each file, with line numbers, the diff an
import of the rollout records: looked up the same way (``CHANGES_KEY``).

Bounded: only the last ``TAIL`` bytes of the file are read (the calls waiting in the inbox are the
session's latest, so their records are near its end), and a line is parsed only when it names one of
the calls looked for. A missing or unreadable file, or a call not found, gives nothing: the command
keeps an unknown exit code and is judged by what it printed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterator
from typing import Any, NamedTuple

OUTCOME_KEY = "_trail_rollout_outcome"
"""Where ``with_outcomes`` puts a call's outcome in its payload (``{"exit_code", "duration_ms"}``) for
``codex.hook_items``; set or removed by the fold alone, never taken from what the agent sent."""
CHANGES_KEY = "_trail_rollout_changes"
"""Where ``with_outcomes`` puts an ``apply_patch`` call's changes as the rollout records them (``{absolute
path: {"type", "unified_diff" or "content", "move_path"}}``), under the same rule."""
TAIL = 8 * 1024 * 1024
"""Bytes read from the end of a rollout."""
_EXITED = re.compile(r"^(?:Process exited with code|Exit code:?)\s*(-?\d+)\s*$", re.M)
_WALL = re.compile(r"^Wall time:\s*([\d.]+)\s*seconds?\s*$", re.M)


class Outcome(NamedTuple):
    exit_code: int
    duration_ms: int | None


def _duration(value: Any) -> int | None:
    if isinstance(value, dict):
        secs, nanos = value.get("secs", 0), value.get("nanos", 0)
        if isinstance(secs, int | float) and isinstance(nanos, int | float):
            return int(secs * 1000 + nanos // 1_000_000)
    return None


def _from_record(record: dict[str, Any]) -> tuple[str, Outcome] | None:
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return None
    item = payload.get("item")
    if payload.get("type") == "item_completed" and isinstance(item, dict) and item.get("type") == "CommandExecution":
        code = item.get("exit_code")
        if isinstance(code, int) and isinstance(item.get("id"), str):
            return item["id"], Outcome(code, _duration(item.get("duration")))
    if payload.get("type") == "exec_command_end":
        code = payload.get("exit_code")
        if isinstance(code, int) and isinstance(payload.get("call_id"), str):
            return payload["call_id"], Outcome(code, _duration(payload.get("duration")))
    if payload.get("type") == "function_call_output" and isinstance(payload.get("output"), str):
        head = payload["output"].partition("Output:\n")[0]
        exited, wall = _EXITED.search(head), _WALL.search(head)
        if exited and isinstance(payload.get("call_id"), str):
            ms = int(float(wall.group(1)) * 1000) if wall else None
            return payload["call_id"], Outcome(int(exited.group(1)), ms)
    return None


def _changes_from(record: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(call id, changes)`` of a successful patch's record: 0.171's ``FileChange`` item or ``patch_apply_end``."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return None
    item = payload.get("item")
    if payload.get("type") == "item_completed" and isinstance(item, dict) and item.get("type") == "FileChange":
        call, changes, ok = item.get("id"), item.get("changes"), item.get("status") == "completed"
    elif payload.get("type") == "patch_apply_end":
        call, changes, ok = payload.get("call_id"), payload.get("changes"), payload.get("success", True) is True
    else:
        return None
    if ok and isinstance(call, str) and isinstance(changes, dict) and changes:
        return call, changes
    return None


def _tail(rollout: str, tail: int) -> bytes | None:
    try:
        with open(rollout, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - tail))
            return handle.read(tail)
    except OSError:
        return None


def lookup_changes(rollout: str, calls: Collection[str], tail: int = TAIL) -> dict[str, dict[str, Any]]:
    """The changes each of ``calls`` (``apply_patch`` calls) made, as the last ``tail`` bytes of ``rollout``
    record them ({} when none)."""
    wanted = {c for c in calls if c}
    found: dict[str, dict[str, Any]] = {}
    for record in _records_naming(rollout, wanted, tail):
        hit = _changes_from(record)
        if hit is not None and hit[0] in wanted:
            found[hit[0]] = hit[1]
    return found


def lookup(rollout: str, calls: Collection[str], tail: int = TAIL) -> dict[str, Outcome]:
    """The outcome of each of ``calls`` the last ``tail`` bytes of ``rollout`` record ({} when none)."""
    wanted = {c for c in calls if c}
    exact: dict[str, Outcome] = {}
    from_text: dict[str, Outcome] = {}
    for record in _records_naming(rollout, wanted, tail):
        hit = _from_record(record)
        if hit is not None and hit[0] in wanted:
            (exact if record.get("type") == "event_msg" else from_text)[hit[0]] = hit[1]
    return {**from_text, **exact}  # the item's exact duration wins over the model's rounded text


def _records_naming(rollout: str, wanted: set[str], tail: int) -> Iterator[dict[str, Any]]:
    """The JSON objects among the last ``tail`` bytes of ``rollout`` whose line names one of ``wanted``."""
    data = _tail(rollout, tail) if wanted else None
    for raw in (data or b"").splitlines():
        if not any(call.encode() in raw for call in wanted):
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # the first line of a tail read mid-line, or a torn last line
        if isinstance(record, dict):
            yield record


def _needs_outcome(payload: dict[str, Any]) -> bool:
    """A shell PostToolUse whose response states no exit code (0.171's bare output string)."""
    if payload.get("hook_event_name") != "PostToolUse" or not isinstance(payload.get("tool_use_id"), str):
        return False
    if payload.get("tool_name") not in ("Bash", "exec_command", "shell", "shell_command", "local_shell"):
        return False
    response = payload.get("tool_response")
    return isinstance(response, str) and not _EXITED.search(response.partition("Output:\n")[0])


def _is_patch(payload: dict[str, Any]) -> bool:
    """An ``apply_patch`` PostToolUse (its rollout has the numbered diffs)."""
    return (payload.get("hook_event_name") == "PostToolUse" and payload.get("tool_name") == "apply_patch"
            and isinstance(payload.get("tool_use_id"), str))


def with_outcomes(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``payloads`` (one session's, in order), each shell call without an exit code given the one its
    rollout records under ``OUTCOME_KEY``, each ``apply_patch`` call the changes it records under
    ``CHANGES_KEY``; at most two bounded reads per rollout."""
    wanted: dict[str, set[str]] = {}
    patches: dict[str, set[str]] = {}
    for p in payloads:
        if isinstance(p.get("transcript_path"), str):
            if _needs_outcome(p):
                wanted.setdefault(p["transcript_path"], set()).add(p["tool_use_id"])
            elif _is_patch(p):
                patches.setdefault(p["transcript_path"], set()).add(p["tool_use_id"])
    found = {path: lookup(path, calls) for path, calls in wanted.items()}
    changed = {path: lookup_changes(path, calls) for path, calls in patches.items()}
    out = []
    for p in payloads:
        p = {k: v for k, v in p.items() if k not in (OUTCOME_KEY, CHANGES_KEY)}
        hit = found.get(str(p.get("transcript_path")), {}).get(str(p.get("tool_use_id")))
        if hit is not None and _needs_outcome(p):
            p[OUTCOME_KEY] = {"exit_code": hit.exit_code, "duration_ms": hit.duration_ms}
        changes = changed.get(str(p.get("transcript_path")), {}).get(str(p.get("tool_use_id")))
        if changes is not None and _is_patch(p):
            p[CHANGES_KEY] = changes
        out.append(p)
    return out
