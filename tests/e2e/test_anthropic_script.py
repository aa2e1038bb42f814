"""The scripted Messages API on its own (no agent): the streamed and the JSON reply say the same thing, and the
request kinds the Claude Code flow relies on are told apart. Runs everywhere; the agent flow needs Claude Code."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e import anthropic

SYSTEM = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197"},
          {"type": "text", "text": anthropic.MAIN_PROMPT + ".\n\nIMPORTANT: …"}]
TOOLS = [{"name": "Bash", "input_schema": {}}, {"name": "TaskCreate", "input_schema": {}}]
STEPS = [[{"text": "Running it."}, {"tool_use": "Bash", "input": {"command": "pytest -q", "description": "t"}}],
         [{"text": "Done."}]]


def _body(last: str, stream: bool) -> dict[str, Any]:
    return {"model": "claude-opus-4-8", "system": SYSTEM, "tools": TOOLS, "stream": stream, "max_tokens": 64000,
            "messages": [{"role": "user", "content": [{"type": "text", "text": last}]}]}


def _from_sse(chunks: Any) -> dict[str, Any]:
    """Rebuild the message from its Server-Sent Events the way a client does."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for line in b"".join(chunks).decode().splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[len("data: "):])
        if event["type"] == "message_start":
            message = event["message"]
        elif event["type"] == "content_block_start":
            message["content"].append(event["content_block"])
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], message["content"][event["index"]]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            else:
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif event["type"] == "content_block_stop" and event["index"] in partial:
            message["content"][event["index"]]["input"] = json.loads(partial.pop(event["index"]))
        elif event["type"] == "message_delta":
            message["stop_reason"] = event["delta"]["stop_reason"]
            message["usage"]["output_tokens"] = event["usage"]["output_tokens"]
    return message


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    blocks = [{k: v for k, v in block.items() if k != "id"} for block in message["content"]]
    return {**{k: v for k, v in message.items() if k != "id"}, "content": blocks}


def test_streamed_and_json_replies_carry_the_same_step() -> None:
    streamed = anthropic.respond("/v1/messages?beta=true", _body("Fix it.", True), STEPS, {})
    plain = anthropic.respond("/v1/messages?beta=true", _body("Fix it.", False), STEPS, {})
    assert streamed.headers["Content-Type"] == "text/event-stream"
    one, two = _from_sse(streamed.body), json.loads(plain.body)  # type: ignore[arg-type]
    for message in (one, two):
        assert message["stop_reason"] == "tool_use"
        assert [block["type"] for block in message["content"]] == ["text", "tool_use"]
        assert message["content"][1]["input"] == {"command": "pytest -q", "description": "t"}
    assert _without_ids(one) == _without_ids(two)
    # ids differ between replies (Claude Code merges assistant messages that share one)
    assert one["id"] != two["id"] and one["content"][1]["id"] != two["content"][1]["id"]


def test_side_and_compaction_requests_do_not_use_up_steps() -> None:
    seen: dict[str, Any] = {}
    compact = _body("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. …", False)
    title = {"model": "claude-haiku", "max_tokens": 512, "messages": [{"role": "user", "content": "Title?"}]}
    assert [anthropic.kind(body) for body in (_body("Fix it.", False), compact, title)] == ["main", "compact", "side"]
    summary = json.loads(anthropic.respond("/v1/messages", compact, STEPS, seen).body)  # type: ignore[arg-type]
    assert summary["content"] == [{"type": "text", "text": anthropic.SUMMARY}]
    anthropic.respond("/v1/messages", title, STEPS, seen)
    first = json.loads(anthropic.respond("/v1/messages", _body("Fix it.", False), STEPS, seen).body)  # type: ignore[arg-type]
    assert first["content"][0] == {"type": "text", "text": "Running it."}


def test_a_bad_step_is_a_400_naming_it_and_other_routes_answer() -> None:
    reply = anthropic.respond("/v1/messages", _body("Fix it.", True), [[{"tool": "Bash"}]], {})
    assert reply.status == 400 and b"scenario step 1" in reply.body  # type: ignore[operator]
    counted = anthropic.respond("/v1/messages/count_tokens?beta=true", _body("Fix it.", False), STEPS, {})
    assert json.loads(counted.body)["input_tokens"] > 0  # type: ignore[arg-type]
    assert anthropic.respond("/", None, STEPS, {}).status == 200
    assert anthropic.respond("/v1/files", {}, STEPS, {}).status == 404
