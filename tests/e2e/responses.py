"""A scripted OpenAI Responses API for ``codex exec``: enough of ``POST /v1/responses`` (streamed) for Codex 0.171.

Codex is pointed at it by a custom provider (``wire_api = "responses"``, see ``tests/e2e/test_codex.py``).
The scenario ``steps`` is a list of model replies; a reply is a list of items:

- ``{"text": "..."}``: an assistant message;
- ``{"shell": "pytest -q"}``: a command, through whichever shell function Codex offers (``exec_command``
  or ``shell``, read from the request's ``tools``);
- ``{"apply_patch": "*** Begin Patch ..."}``: a patch, as the freeform (custom) tool or a function;
- ``{"update_plan": {"plan": [...]}}``: a plan;
- ``{"exec": "await tools.exec_command({cmd: …})"}``: a code-mode cell, the JavaScript ``input`` of Codex's
  custom ``exec`` tool (offered with ``features.code_mode``);
- ``{"mcp": {"server": "tasktrail", "tool": "record", "arguments": {...}}}``: an MCP tool call (after a
  ``tool_search`` for it when Codex has not loaded it yet: it defers MCP tools).

Which step a request of the main conversation gets is read from its ``input``: the reply after the
last step whose items are already there (its calls, by their call ids, which carry a tag of this
scenario, or its message text). So a retried request gets the same reply, and a resumed session
(whose history holds an earlier scenario's items, under another tag) starts at step 0 of its own.
A request without tools (a title, a summary, a compaction) gets a short harmless message. When the
steps run out, the model says ``done``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from tests.e2e.sandbox import Reply

SHELL_FUNCTIONS = ("exec_command", "shell_command", "shell", "local_shell")


def respond(path: str, body: Any, steps: list[Any], seen: dict[str, Any]) -> Reply:
    if not path.rstrip("/").endswith("/responses") or not isinstance(body, dict):
        if path.rstrip("/").endswith("/models"):
            return _json({"object": "list", "data": [], "models": []})
        return _json({"error": {"message": f"the scripted model does not serve {path}"}}, 404)
    seen["count"] = seen.get("count", 0) + 1
    number = seen["count"]
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    if not tools:
        return _stream(number, [_message("ok", f"side{number}")])
    tag = hashlib.sha256(json.dumps(steps).encode()).hexdigest()[:8]
    index = _next_step(body.get("input") or [], steps, tag)
    if index >= len(steps):
        return _stream(number, [_message("done", f"m{number}")])
    given = [i for i in body.get("input") or () if isinstance(i, dict)]
    loaded = [t for i in given if i.get("type") == "tool_search_output" for t in i.get("tools") or ()]
    step = [item for item in steps[index] if "tokens" not in item]
    tokens = next((int(item["tokens"]) for item in steps[index] if "tokens" in item), 110)
    try:
        items = [_item(item, [*tools, *loaded], f"{tag}_{index}_{n}") for n, item in enumerate(step)]
    except ValueError as exc:  # the scenario asks for a tool Codex did not offer: Codex shows this, the test fails
        return _json({"error": {"message": f"scripted step {index}: {exc}", "type": "invalid_request_error"}}, 400)
    searches = [item for item in items if item["type"] == "tool_search_call"]
    if searches:
        items = searches  # the rest of the step once the tools are loaded (its text would end the step)
    return _stream(number, items, tokens)


def main_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bodies of the main conversation's requests (those offering tools), in order (``requests`` as
    ``sandbox.requests`` reads them)."""
    return [r["body"] for r in requests
            if r["path"].endswith("/responses") and isinstance(r["body"], dict) and r["body"].get("tools")]


def texts(body: dict[str, Any]) -> list[str]:
    """Every text of the request's ``input``: messages of every role, and tool outputs."""
    found = []
    for item in body.get("input") or ():
        content = item.get("content") if isinstance(item, dict) else None
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                found.append(part["text"])
        if isinstance(item, dict) and isinstance(item.get("output"), str):
            found.append(item["output"])
    return found


def mcp_namespaces(body: dict[str, Any]) -> set[str]:
    """The MCP tool namespaces the request offers (``mcp__<server>``): those loaded among its ``tools``, and
    those Codex 0.171 defers behind ``tool_search``, which it lists in a ``<tools>`` text ("Deferred tool
    namespaces:\n- mcp__tasktrail: …"). A server Codex did not wait for is in neither."""
    loaded = {str(t.get("name")) for t in body.get("tools") or ()
              if isinstance(t, dict) and t.get("type") == "namespace"}
    deferred = {line[2:].split(":", 1)[0] for text in texts(body) if text.startswith("<tools>")
                for line in text.splitlines() if line.startswith("- ")}
    return {name for name in loaded | deferred if name.startswith("mcp__")}


def outputs(body: dict[str, Any]) -> dict[str, str]:
    """The tool outputs the request carries, by call id (a structured output as its JSON)."""
    return {i["call_id"]: i["output"] if isinstance(i["output"], str) else json.dumps(i["output"])
            for i in body.get("input") or () if isinstance(i, dict) and str(i.get("type", "")).endswith("_output")
            and "call_id" in i and "output" in i}


def _next_step(given: list[Any], steps: list[Any], tag: str) -> int:
    calls = {str(i.get("call_id")) for i in given if isinstance(i, dict) and i.get("call_id")}
    said = {_text(i) for i in given if isinstance(i, dict) and i.get("type") == "message"
            and i.get("role") == "assistant"}
    done = -1
    for index, step in enumerate(steps):
        ids = {f"call_{tag}_{index}_{n}" for n in range(len(step))}
        texts = {item["text"] for item in step if isinstance(item, dict) and "text" in item}
        if ids & calls or texts & said:
            done = index
    return done + 1


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content or () if isinstance(part, dict))


def _names(tools: list[Any]) -> dict[str, dict[str, Any]]:
    """Each offered tool by the name the model calls it (a namespace's tools as ``namespace``+``name``)."""
    found: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or ():
                if isinstance(inner, dict) and inner.get("name"):
                    found[f"{tool.get('name')}{inner['name']}"] = {**inner, "namespace": tool.get("name")}
        elif tool.get("name"):
            found[str(tool["name"])] = tool
    return found


def _item(item: dict[str, Any], tools: list[Any], key: str) -> dict[str, Any]:
    call_id = f"call_{key}"
    offered = _names(tools)
    if "text" in item:
        return _message(item["text"], key)
    if "shell" in item:
        name = next((n for n in SHELL_FUNCTIONS if n in offered), None)
        if name is None:
            raise ValueError(f"no shell function among the offered tools {sorted(offered)}")
        command = item["shell"]
        args: dict[str, Any] = {"cmd": command} if name in ("exec_command",) else {"command": command}
        if name == "shell":
            args = {"command": ["bash", "-lc", command]}
        return _function(name, args, call_id)
    if "apply_patch" in item:
        tool = offered.get("apply_patch")
        if tool is None:
            raise ValueError(f"apply_patch is not among the offered tools {sorted(offered)}")
        if tool.get("type") == "custom":
            return {"type": "custom_tool_call", "id": f"ctc_{key}", "status": "completed", "call_id": call_id,
                    "name": "apply_patch", "input": item["apply_patch"]}
        return _function("apply_patch", {"input": item["apply_patch"]}, call_id)
    if "exec" in item:
        tool = offered.get("exec")
        if tool is None or tool.get("type") != "custom":
            raise ValueError(f"no custom exec tool (code mode) among the offered tools {sorted(offered)}")
        return {"type": "custom_tool_call", "id": f"ctc_{key}", "status": "completed", "call_id": call_id,
                "name": "exec", "input": item["exec"]}
    if "update_plan" in item:
        if "update_plan" not in offered:  # 0.171 offers it only with [tools.update_plan] enabled = true
            raise ValueError(f"update_plan is not among the offered tools {sorted(offered)}")
        return _function("update_plan", item["update_plan"], call_id)
    if "mcp" in item:
        mcp = item["mcp"]
        server, tool_name = mcp["server"], mcp["tool"]
        for name, tool in offered.items():
            namespace = str(tool.get("namespace") or "")
            if namespace and server in namespace and tool.get("name") == tool_name:
                return _function(str(tool["name"]), mcp.get("arguments") or {}, call_id, namespace)
            if not namespace and name in (f"mcp__{server}__{tool_name}", f"{server}__{tool_name}"):
                return _function(name, mcp.get("arguments") or {}, call_id)
        # Codex 0.171 defers every MCP tool behind its client-side tool_search: search first, and this
        # step is asked for again with the found tools in the input
        return {"type": "tool_search_call", "id": f"ts_{key}", "status": "completed", "call_id": f"{call_id}_search",
                "execution": "client", "arguments": {"query": f"{server} {tool_name}", "limit": 5}}
    raise ValueError(f"unknown scripted item {item}")


def _message(text: str, key: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{key}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _function(name: str, arguments: dict[str, Any], call_id: str, namespace: str | None = None) -> dict[str, Any]:
    call = {"type": "function_call", "id": f"fc_{call_id}", "status": "completed", "call_id": call_id,
            "name": name, "arguments": json.dumps(arguments)}
    if namespace:
        call["namespace"] = namespace
    return call


def _json(data: Any, status: int = 200) -> Reply:
    return Reply(status=status, headers={"Content-Type": "application/json"}, body=json.dumps(data).encode())


def _stream(number: int, items: list[dict[str, Any]], tokens: int = 110) -> Reply:
    return Reply(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
                 body=_events(number, items, tokens))


def _events(number: int, items: list[dict[str, Any]], tokens: int) -> Iterator[bytes]:
    response: dict[str, Any] = {"id": f"resp_{number}", "object": "response", "status": "in_progress",
                                "model": "scripted", "output": []}
    sequence = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal sequence
        sequence += 1
        data = {"type": kind, "sequence_number": sequence, **fields}
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode()

    yield event("response.created", response=response)
    for index, item in enumerate(items):
        opened = {**item, "status": "in_progress"}
        if item["type"] == "message":
            opened["content"] = []
        yield event("response.output_item.added", output_index=index, item=opened)
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0,
                        part={"type": "output_text", "text": "", "annotations": []})
            yield event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                        delta=text)
            yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                        text=text)
        yield event("response.output_item.done", output_index=index, item=item)
    usage = {"input_tokens": tokens - 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens}
    yield event("response.completed", response={**response, "status": "completed", "output": items, "usage": usage})
