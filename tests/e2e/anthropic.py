"""A scripted model behind the Anthropic Messages API, as much of it as Claude Code 2.1 uses in ``claude -p``.

``respond`` is what ``tests.e2e.sandbox`` calls for every request. The scenario's ``steps`` script only the
*main conversation*: its Nth request is answered with step N, a list of blocks ``{"text": "..."}`` or
``{"tool_use": NAME, "input": {...}}``. Everything else Claude Code asks is answered with something
harmless: a compaction summary (``SUMMARY``) for ``/compact``, a short text for any other side request
(titles, sub-agents, quota probes), a token count for ``count_tokens``, an empty 200 for its reachability
probe. What Claude Code 2.1.197 was seen to send (``claude -p … --output-format stream-json``):

* ``HEAD /`` once at start (reachability), then ``POST /v1/messages?beta=true`` with ``stream: true``;
* the main conversation: ``tools`` with ``Bash`` (and ``TaskCreate``…, or ``TodoWrite`` when
  ``CLAUDE_CODE_ENABLE_TASKS=0``, plus ``mcp__<server>__…``), a ``system`` list whose blocks include
  "You are an interactive agent that helps users with software engineering tasks";
* hook context (SessionStart's ``additionalContext``) as a ``{"role": "system"}`` message inside
  ``messages``, after the user's prompt;
* compaction (``/compact``): the same tools and system prompt, the last user text starting
  "CRITICAL: Respond with TEXT ONLY" and asking for "a detailed summary of the conversation so far".

Claude Code 2.1.332, the version the suite pins, sends no ``HEAD /`` and (in these flows) no side request but
a sub-agent's; its main system prompt opens "You are an agent working with the user toward their goals"; its
plan tools, when offered at all, are *deferred*: named in a system-role message (``deferred``) and loaded with
``ToolSearch``. The hook context and the compaction request are as in 2.1.197.

Assistant messages with one ``id`` are merged by Claude Code, so every reply gets its own id; tool-use ids
are unique per run (tasktrail keys tool events by them, so a repeat across sessions would hide an event).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from tests.e2e.sandbox import Reply

MAIN_PROMPT = "You are an agent working with the user toward their goals"
"""How 2.1.332's main system prompt opens (after the SDK's one-line preamble)."""
MAIN_PROMPTS = (MAIN_PROMPT, "You are an interactive agent that helps users with software engineering tasks")
"""The main prompt's opening in 2.1.332 and in 2.1.197, so the scripted model serves either program."""
COMPACT_MARKERS = ("CRITICAL: Respond with TEXT ONLY", "create a detailed summary of the conversation so far")
SUMMARY = (
    "<analysis>Scripted compaction.</analysis>\n<summary>\n1. Primary Request and Intent: fix add() in calc.py "
    "and add a test for negative numbers (scripted summary e2e-7f3a).\n</summary>"
)
SIDE_TEXT = "ok"
HOOK_CONTEXT = "SessionStart hook additional context:"
"""How Claude Code 2.1.197 opens the system-role message that carries a SessionStart hook's context."""


def kind(body: Any) -> str:
    """``main`` (a turn of the scripted conversation), ``compact`` (a compaction summary) or ``side``."""
    if not isinstance(body, dict):
        return "side"
    tools = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
    if "Bash" not in tools or not any(prompt in _system_text(body) for prompt in MAIN_PROMPTS):
        return "side"  # titles, quota probes and sub-agents offer no tools or another system prompt
    last = _last_user_text(body)
    if any(marker in last for marker in COMPACT_MARKERS):
        return "compact"
    return "main"


def main_requests(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bodies of the main conversation's requests, in order (``requests`` as ``sandbox.requests`` reads them)."""
    return [entry["body"] for entry in requests if _is_messages(entry["path"]) and kind(entry["body"]) == "main"]


def texts(body: dict[str, Any]) -> list[str]:
    """Every text the request carries in its messages (user, assistant, system-role and tool results)."""
    found: list[str] = []
    for message in body.get("messages") or []:
        found.extend(_block_texts(message.get("content")))
    return found


def tool_names(body: dict[str, Any]) -> list[str]:
    return [str(tool.get("name")) for tool in body.get("tools") or [] if isinstance(tool, dict)]


DEFERRED = "The following deferred tools are now available via ToolSearch."
"""How 2.1.332 opens its list of the tools it offers by name only (a system-role message), to load with ToolSearch."""


def deferred(body: dict[str, Any]) -> list[str]:
    """The tools a request names as deferred (loadable with ``ToolSearch``), in the latest such list."""
    listing = next((text for text in reversed(texts(body)) if DEFERRED in text), "")
    paragraph = listing.split(DEFERRED, 1)[1].split("\n\n")[0] if DEFERRED in listing else ""
    return [line.strip() for line in paragraph.splitlines()[1:] if line.strip()]  # the first ends the sentence


def injected(body: dict[str, Any]) -> str:
    """The latest SessionStart hook text the model received (a system-role message), or ''. A continued
    conversation still holds the earlier sessions' injections, so the latest is this session's."""
    return next((text for text in reversed(texts(body)) if text.startswith(HOOK_CONTEXT)), "")


def tool_results(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool results a request carries, by tool-use id."""
    found = {}
    for message in body.get("messages") or []:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found[block["tool_use_id"]] = block
    return found


def tool_result_text(block: dict[str, Any]) -> str:
    """What a tool result told the model, as one text."""
    return "\n".join(_block_texts(block.get("content")))


def tool_uses(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [block for message in body.get("messages") or [] if message.get("role") == "assistant"
            for block in message.get("content") or [] if isinstance(block, dict)
            and block.get("type") == "tool_use" and block.get("name") == name]


def respond(path: str, body: Any, steps: list[Any], seen: dict[str, Any]) -> Reply:
    route = urlsplit(path).path
    if route == "/":
        return Reply()  # Claude Code's HEAD reachability probe
    if route == "/v1/messages/count_tokens":
        return _json({"input_tokens": max(1, len(json.dumps(body)) // 4)})
    if not _is_messages(path) or not isinstance(body, dict):
        return _error(404, "not_found_error", f"the scripted model does not serve {route}")
    run = seen.setdefault("run", uuid.uuid4().hex[:10])
    count = seen["replies"] = seen.get("replies", 0) + 1
    gate: threading.Condition = seen.setdefault("gate", threading.Condition())
    which = kind(body)
    held: int | None = None
    if which == "main":
        index = seen["main"] = seen.get("main", 0) + 1
        with gate:
            gate.notify_all()  # a sub-agent's reply may wait for this request (``REPORT_AT``)
        blocks = steps[index - 1] if index <= len(steps) else [{"text": f"(the scenario has no step {index})"}]
        if problem := _bad_step(blocks):
            return _error(400, "invalid_request_error", f"scenario step {index}: {problem}")
    elif (call := _scripted_agent(body, steps)) is not None:
        blocks, held = [{"text": str(call[REPORT])}], call.get(REPORT_AT)
    else:
        blocks = [{"text": SUMMARY if which == "compact" else SIDE_TEXT}]
    content = [_block(block, f"toolu_{run}{count:03d}{i}") for i, block in enumerate(blocks)]
    message = {
        "id": f"msg_{run}{count:03d}", "type": "message", "role": "assistant", "model": body.get("model"),
        "content": content, "stop_sequence": None,
        "stop_reason": "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn",
        "usage": {"input_tokens": max(1, len(json.dumps(body)) // 4), "output_tokens": 10,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }
    if body.get("stream"):
        events = _stream(message)
        return Reply(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
                     body=events if held is None else _after(gate, seen, held, events))
    if held is None:
        return _json(message)
    return Reply(headers={"Content-Type": "application/json"},
                 body=_after(gate, seen, held, iter([json.dumps(message).encode()])))


REPORT = "report"
"""An ``Agent`` block's key (not sent to the program): what the sub-agent it starts answers (its report)."""
REPORT_AT = "report_at"
"""An ``Agent`` block's key (not sent): the sub-agent's reply is held until the main conversation's request N
came in, so a background sub-agent finishes at a known point of the main turn (no timing)."""
GATE_SECONDS = 60.0
"""How long a held reply waits at most: a scenario whose request N never comes fails on what follows, not hangs."""


def _scripted_agent(body: dict[str, Any], steps: list[Any]) -> dict[str, Any] | None:
    """The scenario's ``Agent`` block (with a ``report``) whose prompt this side request carries: its sub-agent."""
    sent = {text.strip() for text in texts(body)}
    for step in steps:
        for block in step if isinstance(step, list) else []:
            if (isinstance(block, dict) and block.get("tool_use") == "Agent" and REPORT in block
                    and str((block.get("input") or {}).get("prompt", "")).strip() in sent):
                return block
    return None


def _after(gate: threading.Condition, seen: dict[str, Any], request: int, chunks: Iterator[bytes]) -> Iterator[bytes]:
    """``chunks`` once main request ``request`` came in. The sandbox sends a body outside its lock, so the main
    conversation goes on meanwhile."""
    with gate:
        gate.wait_for(lambda: seen.get("main", 0) >= request, timeout=GATE_SECONDS)
    yield from chunks


def _is_messages(path: str) -> bool:
    return urlsplit(path).path == "/v1/messages"


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(block.get("text", "") for block in system or [] if isinstance(block, dict))


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return "\n".join(_block_texts(message.get("content")))
    return ""


def _block_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    found: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            found.append(block["text"])
        elif block.get("type") == "tool_result":
            found.extend(_block_texts(block.get("content")))
    return found


def _bad_step(blocks: Any) -> str | None:
    if not isinstance(blocks, list) or not blocks:
        return "a step is a non-empty list of blocks"
    for block in blocks:
        if not isinstance(block, dict) or not any(isinstance(block.get(key), str) for key in ("text", "tool_use")):
            return f"a block is {{'text': str}} or {{'tool_use': NAME, 'input': {{...}}}}, not {block!r}"
    return None


def _block(block: dict[str, Any], tool_id: str) -> dict[str, Any]:
    if "tool_use" in block:
        return {"type": "tool_use", "id": tool_id, "name": block["tool_use"], "input": block.get("input") or {}}
    return {"type": "text", "text": block["text"]}


def _stream(message: dict[str, Any]) -> Iterator[bytes]:
    """The message as Server-Sent Events, the way the API streams it (tool input as one JSON delta)."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    yield _event("message_start", {"type": "message_start", "message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        yield _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                   "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    yield _event("message_stop", {"type": "message_stop"})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _json(value: Any, status: int = 200) -> Reply:
    return Reply(status=status, headers={"Content-Type": "application/json"}, body=json.dumps(value).encode())


def _error(status: int, kind_: str, message: str) -> Reply:
    return _json({"type": "error", "error": {"type": kind_, "message": message}}, status)
