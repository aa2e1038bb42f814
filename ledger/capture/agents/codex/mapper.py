"""Codex CLI rollouts -> ledger items (pure; see docs/capture.md).

Source keys: ``SourceKey("codex", origin, record)``. ``origin`` is the session whose
``session_meta`` line the record follows: the file's own session, or, inside history a fork
copied from an earlier rollout (a ``session_meta`` with another id, then that session's records),
the earlier session. Records are derived from content, not line numbers, so a copy lands on the
keys its original already holds: the ``call_id`` of a tool call (``#<path>`` per file of a patch,
``#plan``/``#call``/``#result``/``#test``/``#fs<i>`` for the other events of one call), and
``prompt:``/``reply:``/``compacted:`` plus the text's hash and occurrence for prompts, the agent's
closing messages and compaction summaries; ``<file-stem>:<line>`` only where nothing else exists.

Commands come from ``exec_command_end`` where it exists (it has the exit code); otherwise from
the call's output ("Process exited with code N", ``Exit code: N`` or the JSON metadata), following
``write_stdin`` polls of a command that was still running. Code mode's ``exec`` cells (JavaScript
calling the same tools) give the same events for the calls ``cells`` reads from the script
(``RolloutMapper.code_cell``), following ``wait`` polls of a cell that was still running; a command
or a patch the rollout records on its own (0.171's ``exec-<uuid>`` items) is taken from that record,
under the id the live hook keys it by, and not again from the script.

Continuation: ``codex resume`` appends to the same rollout (same session id, so the importer finds
the task by its link). A fork starts a new file whose ``session_meta`` names ``forked_from_id`` and
copies the earlier history; ``Session.references`` holds the call ids of the file, which the task
of the earlier session holds, so the importer puts both into one task.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ledger.base.hook_spool import HUNKS_KEY
from ledger.capture import patchlines
from ledger.capture.agents.codex import cells
from ledger.capture.agents.codex.outcomes import CHANGES_KEY, OUTCOME_KEY
from ledger.capture.agents.codex.refusals import REJECTED as _REJECTED
from ledger.capture.classify import classify
from ledger.capture.items import (
    Item,
    bounded,
    own_tool,
    plan_items,
    prompt_item,
    prompt_record,
    reply_bound,
    title_from,
    title_rank,
)
from ledger.capture.jsonl import Skipped, loads, records
from ledger.capture.session import Session
from ledger.capture.testruns import command_facts
from ledger.domain import bounds
from ledger.domain import events as ev
from ledger.domain.bounds import bound

AGENT = "codex"
ACTOR = f"agent:{AGENT}"
SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "local_shell", "container.exec"})
_EXITED = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")
_RUNNING = re.compile(r"Process running with session ID (\d+)")
_SUMMARY_HEAD = re.compile(r"Here is the summary produced by the other language model[^\n]*:\s*\n")
"""Where Codex's preamble to a compaction summary ends (0.171's ``compacted.message``)."""
_TOOL_REFUSED = re.compile(r"^\s*(?:unsupported call|failed to parse function arguments|unknown tool)\b", re.I)
"""A call Codex never carried out (no such tool in the turn, arguments it could not read)."""
_PATCH_HEAD = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")
_MOVE = re.compile(r"^\*\*\* Move to: (.+)$")
_REQUEST = re.compile(r"^##\s+My request for Codex:\s*$", re.M)
"""Codex Desktop wraps a prompt after a list of mentioned files; the request follows this heading."""
_BOILERPLATE = ("<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions instructions>")


def _line(shell: str | None, argv: tuple[str, ...] | None) -> str:
    """A command as one line: the shell line, else its argv joined."""
    return shell if shell is not None else shlex.join(argv or ())


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
        data = loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _output_text(output: Any) -> tuple[str, int | None]:
    """A call output's text and exit code (JSON ``{"output", "metadata": {"exit_code"}}`` or plain)."""
    if isinstance(output, str):
        try:
            data = loads(output)
        except ValueError:
            data = None
        if isinstance(data, dict) and "output" in data:
            meta = data.get("metadata") or {}
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return str(data["output"]), code if isinstance(code, int) else None
        match = _EXITED.search(output[:2000])
        return output, int(match.group(1)) if match else None
    if output is None:
        return "", None
    # Newer versions: a content item or a list of them.
    parts = output if isinstance(output, list) else [output]
    texts = [str(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if texts:
        return _output_text("\n".join(texts))
    return json.dumps(output, default=str), None


def _harness(payload: dict[str, Any]) -> bool:
    """A user-role message Codex wrote itself: 0.17x marks each content item's provenance (``user`` for what
    was typed, ``harness`` for the environment context and the like), so its own text is never a prompt."""
    meta = payload.get("internal_chat_message_metadata_passthrough")
    items = meta.get("content_item_metadata") if isinstance(meta, dict) else None
    kinds = [(i.get("provenance") or {}).get("type") for i in items or () if isinstance(i, dict)]
    return bool(kinds) and "user" not in kinds


def _ours(tool: str) -> bool:
    """A call of tasktrail's own MCP server (``mcp__tasktrail__record`` in hooks, ``tasktrail.record`` as a
    rollout may namespace it)."""
    return tool.startswith(("mcp__tasktrail__", "tasktrail."))


def _plan_steps(args: dict[str, Any]) -> list[tuple[str, str]]:
    """``(step, status)`` of an ``update_plan`` call's arguments (rollout and hook alike)."""
    return [(str(s.get("step", "")), str(s.get("status", ""))) for s in args.get("plan") or () if isinstance(s, dict)]


def _message_text(payload: dict[str, Any]) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(c.get("text", "")) for c in content or () if isinstance(c, dict) and isinstance(c.get("text"), str)
    )


def _clean_prompt(text: str) -> str:
    """The user's own words: Codex Desktop's list of mentioned files dropped."""
    match = _REQUEST.search(text)
    return (text[match.end() :] if match else text).strip()


def _absolute(path: str, cwd: str | None) -> str:
    path = path.strip()
    if cwd and not posixpath.isabs(path) and not re.match(r"^[A-Za-z]:[\\/]", path):
        return posixpath.normpath(posixpath.join(cwd, path))
    return path


def patch_files(patch: str) -> list[tuple[str, str, str | None, str]]:
    """``(operation, path, renamed_from, section)`` for each file of an ``apply_patch`` text."""
    out: list[tuple[str, str, str | None, str]] = []
    current: list[Any] | None = None
    for line in patch.splitlines():
        head = _PATCH_HEAD.match(line)
        if head:
            op = {"Add": "created", "Delete": "deleted"}.get(head.group(1), "modified")
            current = [op, head.group(2).strip(), None, [line]]
            out.append(current)  # type: ignore[arg-type]
            continue
        if current is None:
            continue
        move = _MOVE.match(line)
        if move and current[0] == "modified":
            current[2], current[1], current[0] = current[1], move.group(1).strip(), "renamed"
        if line.startswith("*** End Patch"):
            current = None
            continue
        current[3].append(line)
    return [(op, path, old, "\n".join(lines)) for op, path, old, lines in out]  # type: ignore[misc]


def change_diff(change: dict[str, Any]) -> str:
    """A rollout's change of one file as a diff: Codex's ``unified_diff``, or for an added or deleted file
    (which carries its ``content`` instead) the whole content as one hunk, so its lines are numbered too."""
    diff = change.get("unified_diff")
    if isinstance(diff, str) and diff:
        return diff
    content = change.get("content")
    if isinstance(content, str) and str(change.get("type")) in ("add", "delete"):
        return patchlines.content_diff(content, added=change.get("type") == "add")
    return str(content or "")


def _section_diff(operation: str, section: str, starts: Any) -> str:
    """A patch section's diff with line numbers where they are known: an added file's lines are all new;
    an update's hunks are numbered by the starts the hook located (``patchlines``). Otherwise, (a deleted
    file, whose lines are gone from the disk, or hunks not located), the section as written, whose hunks
    say no line: `why` keeps such a change for every line, as it did before numbers were found."""
    if operation == "created":
        return patchlines.added_diff(section)
    if isinstance(starts, list) and all(isinstance(s, list) and len(s) == 2 and all(type(n) is int for n in s)
                                        for s in starts):
        numbered = patchlines.numbered(section, [(s[0], s[1]) for s in starts])
        if numbered is not None:
            return numbered
    return section


def patch_items(
    patch: str, where: str | None, key: ev.SourceKey, ts: Any, *, absolute_keys: bool = False,
    located: dict[str, Any] | None = None, recorded: dict[str, Any] | None = None,
) -> list[Item]:
    """One ``FileChanged`` per file of an ``apply_patch`` text, keyed ``<call id>#<path as written>``,
    or with ``absolute_keys`` ``<call id>#<absolute path before any move>``, the key a rollout's
    ``patch_apply_end`` gives the same file (the hook sees the patch, the rollout its outcome).

    Its diff: the change the rollout records for the file (``recorded``, by absolute path: Codex's own
    numbered diff, the one an import of the rollout takes), else the section numbered by the hunk starts
    the hook located (``located``, by the path as written), else the section (``_section_diff``)."""
    items: list[Item] = []
    for operation, path, renamed_from, section in patch_files(patch):
        target = _absolute(path, where)
        original = _absolute(renamed_from or path, where)
        keyed = original if absolute_keys else path
        change = (recorded or {}).get(original)
        diff = (change_diff(change) if isinstance(change, dict) else None) or _section_diff(
            operation, section, (located or {}).get(renamed_from or path))
        items.append(
            (
                ev.FileChanged,
                {
                    "path": target,
                    "operation": operation,
                    "renamed_from": _absolute(renamed_from, where) if renamed_from else None,
                    "diff": bounded(diff, bounds.DIFF),
                    "actor": ACTOR,
                    "timestamp": ts,
                    "source": key.model_copy(update={"record": f"{key.record}#{keyed}"}),
                },
            )
        )
    return items


@dataclass(frozen=True)
class Run:
    """One finished shell command, as the rollout (``exec_command_end``, a call's output) or the live hook gives it."""

    shell: str | None
    argv: tuple[str, ...] | None
    cwd: str | None
    code: int | None
    ms: int | None
    stdout: str
    stderr: str
    key: ev.SourceKey
    ts: Any

    @property
    def line(self) -> str:
        return self.shell if self.shell is not None else shlex.join(self.argv or ())


def command_run_items(run: Run, *, where: str | None, patched: bool) -> list[Item]:
    """A finished shell command (shared by the rollout importer and the live hook): its
    ``CommandRan``, the patch it applied (an ``apply_patch`` heredoc, unless ``patched`` says a
    ``patch_apply_end`` records it), its test run, and, when it exited 0, its deletes and renames."""
    items: list[Item] = [
        (
            ev.CommandRan,
            {
                "shell": run.shell,
                "argv": run.argv,
                "cwd": run.cwd,
                "exit_code": run.code,
                "duration_ms": run.ms,
                "stdout": bounded(run.stdout),
                "stderr": bounded(run.stderr),
                "actor": ACTOR,
                "timestamp": run.ts,
                "source": run.key,
            },
        )
    ]
    line = run.line
    if "*** Begin Patch" in line and run.code == 0 and not patched:
        items.extend(patch_items(line, where, run.key, run.ts))
    output = "\n".join(t for t in (run.stdout, run.stderr) if t)
    return items + command_facts(line, run.code, output, where, ACTOR, run.key, run.ts)



@dataclass
class _Cell:
    """A code-mode cell still running (``Script running with cell ID N``): its call, until a ``wait`` ends it."""

    call_id: str
    code: str
    key: ev.SourceKey
    called: Any
    parts: list[str]


_CELL_SHARED = "[one code cell ran {n} commands: this is their printed output together; no exit code is told apart]\n"
"""Heads the last command's output when a cell ran several: the output is the cell's, not that command's."""


def _cell_patch(args: Any) -> str | None:
    """The patch text of a cell's ``tools.apply_patch`` argument (a string, or ``{input|patch: …}``)."""
    if isinstance(args, dict):
        args = args.get("input") or args.get("patch") or args.get("command")
    return args if isinstance(args, str) and "*** Begin Patch" in args else None


@dataclass
class _Reply:
    text: str
    timestamp: Any
    origin: str


Flat = tuple[int, str, dict[str, Any], Any]
"""(line number, record kind, payload, time) of one rollout record, whatever the format's generation."""


def _flat(parsed: Iterable[tuple[int, dict[str, Any]]]) -> Iterator[Flat]:
    """Envelope records (0.2x+) or legacy ones (a bare header line, then bare response items), alike."""
    for number, record in parsed:
        if "payload" in record and "type" in record:
            payload = record["payload"] if isinstance(record["payload"], dict) else {}
            if record["type"] == "event_msg" and payload.get("type") == "item_completed":
                payload = _legacy_event(payload)
            yield number, str(record["type"]), payload, record.get("timestamp")
        elif "type" not in record and "id" in record and "instructions" in record:
            yield number, "session_meta", record, record.get("timestamp")
        elif record.get("record_type") != "state":
            yield number, "response_item", record, record.get("timestamp")


def _legacy_event(payload: dict[str, Any]) -> dict[str, Any]:
    """An ``item_completed`` event (0.17x) as the event older rollouts wrote for the same fact: a
    ``CommandExecution`` item as ``exec_command_end``, a ``FileChange`` as ``patch_apply_end``, so
    both generations map (and key) alike; other items as they are (their response items hold them)."""
    item = payload.get("item")
    if not isinstance(item, dict):
        return payload
    if item.get("type") == "CommandExecution":
        cwd = item.get("cwd")
        if isinstance(cwd, str) and cwd.startswith("file://"):
            cwd = unquote(cwd.removeprefix("file://"))
        return {"type": "exec_command_end", "call_id": item.get("id"), "command": item.get("command"),
                "cwd": cwd, "exit_code": item.get("exit_code"), "duration": item.get("duration"),
                "aggregated_output": item.get("aggregated_output"), "status": item.get("status")}
    if item.get("type") == "FileChange":
        return {"type": "patch_apply_end", "call_id": item.get("id"), "changes": item.get("changes"),
                "success": item.get("status") == "completed", "stdout": item.get("stdout"),
                "stderr": item.get("stderr")}
    return payload


def _subagent(meta: dict[str, Any]) -> bool:
    """Whether a ``session_meta`` payload says a sub-agent thread wrote the rollout."""
    source = meta.get("source")
    return bool(meta.get("parent_thread_id")) or (isinstance(source, dict) and "subagent" in source)


def sort_key(lines: Iterable[tuple[int, str]], stem: str) -> tuple[str, bool]:
    """(first record's time, whether a sub-agent wrote the rollout), as ``map_rollout`` finds them, read
    only as far as both are known: what orders the files before any is mapped."""
    first, subagent, seen = "", False, False
    for _, kind, payload, ts in _flat(records(lines, [])):
        if ts and not first:
            first = str(ts)
        if kind == "session_meta" and (payload.get("id") or payload.get("session_id")) and not seen:
            seen, subagent = True, _subagent(payload)
        if first and seen:
            break
    return first, subagent


class RolloutMapper:
    """One rollout file's mapping (pure: no I/O): what it has learnt so far, and a method per record kind."""

    def __init__(self, stem: str, transcript: str | None = None) -> None:
        self.stem = stem
        self.transcript = transcript
        self.session = Session()
        self.ended: set[Any] = set()
        """Calls an ``exec_command_end`` records (their output record adds nothing)."""
        self.patched: set[Any] = set()
        """Calls a ``patch_apply_end`` records."""
        self.has_user_events = self.has_assistant_items = False
        self.calls: dict[str, tuple[str, dict[str, Any], Any]] = {}
        self.running: dict[str, tuple[str, dict[str, Any], Any, ev.SourceKey, list[str]]] = {}
        """Exec sessions still running (``write_stdin`` polls them): process id -> the exec call."""
        self.seen: dict[str, dict[str, int]] = {}
        """Per origin session: how often each prompt/reply/summary text came before (see ``keyed``)."""
        self.call_ids: set[str] = set()
        self.origin = ""
        self.cwd: str | None = None
        self.prompts = 0
        self.rank = 0
        """How well the title names the task (``title_rank``): a later prompt of a higher rank replaces it."""
        self.interrupted = False
        self.wrong: str | None = None
        self.last_action: str | None = None
        self.reply: _Reply | None = None
        self.tokens: int | None = None
        self.last_prompt: str | None = None
        """The user's previous request: the same text again is a request re-sent."""
        self.latest_call: str | None = None
        """The agent's latest call, until anything answers it or comes after it (``open_call``)."""
        self.cells: dict[str, _Cell] = {}
        """Code-mode cells still running, by the cell id Codex gave them (a ``wait`` names it)."""
        self.open_cells: set[str] = set()
        """``exec`` calls not finished yet: a ``patch_apply_end`` meanwhile is one of theirs."""
        self.cell_patched: set[str] = set()
        """``exec`` calls during which a ``patch_apply_end`` came: it records their patches."""
        self.cell_ran: dict[str, list[str]] = {}
        """``exec`` call -> the command lines an ``exec_command_end`` of one of its calls recorded."""
        self.turn: str | None = None
        """The turn the records belong to (``turn_context``): a cell's plan is keyed by it."""
        self.cell_turns: dict[str, str | None] = {}
        """``exec`` call -> the turn it was made in."""

    def map(self, lines: Iterable[tuple[int, str]]) -> Session:
        session = self.session
        if iter(lines) is lines:
            lines = list(lines)  # read twice below: a one-shot iterator is kept (files come as re-readable Lines)
        self.survey(lines)
        for number, kind, payload, ts in _flat(records(lines, session.skipped)):
            try:
                self.record(number, kind, payload, ts)
            except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
                # A record of a shape this mapper does not know is skipped with its reason, never fatal.
                session.skipped.append(Skipped(number, f"unexpected record shape ({type(exc).__name__}: {exc})"))
        self.flush_reply()  # where the rollout stops: the agent's last words so far
        open_call = self.open_call()
        if open_call is not None:
            session.items.append(open_call)
        for cell in self.cells.values():  # still running where the rollout stops: what is known of it
            self.code_cell(cell.call_id, cell.code, cells.Output("running", None, None, cell.parts),
                           cell.key, None, cell.called, timed=False)
        for call_id, (name, args, ts) in self.calls.items():
            if name == "update_plan":  # the rollout stops before its answer: no refusal seen, the plan stands
                key = ev.SourceKey(agent=AGENT, session=self.origin or session.session_id or self.stem, record=call_id)
                session.items.extend(plan_items(_plan_steps(args), ACTOR, key, ts))
        if session.title is None and session.session_id:
            session.title = f"codex session {session.session_id[:8]}"
        # Call ids are unique to the call: a fork's copied history holds the earlier session's ids, so the
        # task that holds them is the one this rollout continues (the importer looks them up).
        session.references = {c for c in self.call_ids if c and not c.startswith(f"{self.stem}:")}
        return session

    def survey(self, lines: Iterable[tuple[int, str]]) -> None:
        """A first pass for the facts the mapping needs up front, holding only these sets, not the records."""
        for _, t, p, _ in _flat(records(lines, [])):
            if t == "event_msg" and p.get("type") == "exec_command_end":
                self.ended.add(p.get("call_id"))
            elif t == "event_msg" and p.get("type") == "patch_apply_end":
                self.patched.add(p.get("call_id"))
            self.has_user_events = self.has_user_events or (t == "event_msg" and p.get("type") == "user_message")
            self.has_assistant_items = self.has_assistant_items or (
                t == "response_item" and p.get("type") == "message" and p.get("role") == "assistant")

    def open_call(self) -> Item | None:
        """The agent's last call when the rollout ends before its output and nothing came after it (no reply, no
        prompt): where the work stopped, mid-action, kept as a ``ToolCalled`` with no result (as for Claude Code,
        ``claude_code.branches``). A plan update or a poll of a running process is no action of its own."""
        call_id = self.latest_call
        if call_id is None or call_id not in self.calls or call_id in self.ended or call_id in self.patched:
            return None
        name, args, ts = self.calls[call_id]
        if name in ("update_plan", "write_stdin") or own_tool(name) or (name == "wait" and "cell_id" in args):
            return None
        where = self.origin or self.session.session_id or self.stem
        return (ev.ToolCalled, {
            "tool": name, "call_id": call_id, "input": bounded(json.dumps(args, default=str)) or bounded("{}"),
            "actor": ACTOR, "timestamp": ts,
            "source": ev.SourceKey(agent=AGENT, session=where, record=call_id + "#call"),
        })

    def keyed(self, prefix: str, text: str, where: str) -> ev.SourceKey:
        record = prompt_record(text, self.seen.setdefault(f"{where} {prefix}", {}))
        return ev.SourceKey(agent=AGENT, session=where, record=prefix + record.removeprefix("prompt:"))

    def flush_reply(self) -> None:
        reply = self.reply
        if reply is not None and reply.text.strip():
            self.session.items.append(
                (
                    ev.AgentReplied,
                    {
                        "text": reply_bound(reply.text.strip()),
                        "actor": ACTOR,
                        "timestamp": reply.timestamp,
                        "source": self.keyed("reply:", reply.text.strip(), reply.origin),
                    },
                )
            )
        self.reply = None

    def command(self, run: Run, call_id: str) -> None:
        self.last_action = f"ran {run.line[:200]}"
        self.session.items.extend(command_run_items(run, where=run.cwd or self.cwd, patched=call_id in self.patched))

    def record(self, number: int, kind: str, payload: dict[str, Any], ts: Any) -> None:
        """One record: its time, then what its kind does."""
        if ts and not self.session.first_timestamp:
            self.session.first_timestamp = str(ts)
        ptype = payload.get("type")
        if kind == "session_meta":
            self.session_meta(payload, ts)
            return
        if kind == "turn_context":
            self.turn_context(payload)
            return
        where = self.origin or self.session.session_id or self.stem
        src = ev.SourceKey(agent=AGENT, session=where, record=f"{self.stem}:{number}")
        prompt_text = self.prompt_text(kind, payload)
        if prompt_text is not None:
            self.prompt(prompt_text, where, ts)
        elif kind == "compacted":
            self.compacted(payload, f"{self.stem}:{number}", where, ts)
        elif kind == "event_msg":
            self.event(ptype, payload, src, where, ts)
        elif kind == "response_item":
            self.response_item(ptype, payload, src, where, ts)

    def session_meta(self, payload: dict[str, Any], ts: Any) -> None:
        session = self.session
        sid = str(payload.get("id") or payload.get("session_id") or "")
        if not sid:
            return
        if sid != self.origin:
            self.flush_reply()  # a reply belongs to the session it was written in
        self.origin = sid
        if not session.session_id:
            session.session_id = sid
            session.is_subagent = _subagent(payload)
            if isinstance(payload.get("cwd"), str) and session.cwd is None:
                session.cwd = self.cwd = payload["cwd"]
            if self.transcript:
                session.items.append(
                    (
                        ev.ConversationLinked,
                        {
                            "agent": AGENT,
                            "session_id": session.session_id,
                            "transcript": self.transcript,
                            "actor": "system",
                            "timestamp": ts,
                            "source": ev.SourceKey(agent=AGENT, session=session.session_id, record="link"),
                        },
                    )
                )

    def turn_context(self, payload: dict[str, Any]) -> None:
        self.turn = payload["turn_id"] if isinstance(payload.get("turn_id"), str) and payload["turn_id"] else None
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
            if self.session.cwd is None:
                self.session.cwd = self.cwd

    def prompt_text(self, kind: str, payload: dict[str, Any]) -> str | None:
        """What the user typed, if the record is a prompt: the ``user_message`` event, or where a rollout has
        none, the user's message item (not the context Codex writes as the user)."""
        ptype = payload.get("type")
        if kind == "event_msg" and ptype == "user_message":
            return str(payload.get("message") or "")
        user_item = kind == "response_item" and ptype == "message" and payload.get("role") == "user"
        if user_item and not self.has_user_events:
            text = _message_text(payload)
            if not text.lstrip().startswith(_BOILERPLATE) and not _harness(payload):
                return text
        return None

    def prompt(self, prompt_text: str, where: str, ts: Any) -> None:
        cleaned = _clean_prompt(prompt_text)
        if not cleaned:
            return
        self.flush_reply()
        self.latest_call = None  # the user spoke after it: not where the work stopped
        self.prompts += 1
        resent = cleaned == self.last_prompt  # the same request again: the agent missed it
        self.last_prompt = cleaned
        kind = classify(cleaned, first=self.prompts == 1, after_interrupt=self.interrupted, resent=resent)
        key = self.keyed("prompt:", cleaned, where)
        self.session.items.append(prompt_item(kind, cleaned, key, ts, self.wrong if kind == "correction" else None))
        if self.session.title is None or title_rank(cleaned) > self.rank:
            # A throw-away opening ("show tools", "hi") names the task only until a real request comes.
            self.session.title, self.rank = title_from(cleaned), title_rank(cleaned)
        self.interrupted, self.wrong, self.last_action = False, None, None

    def compacted(self, payload: dict[str, Any], fallback: str, where: str, ts: Any) -> None:
        summary = str(payload.get("message") or "").strip()
        reply = self.reply
        if reply is not None and reply.text.strip() and summary.endswith(reply.text.strip()):
            self.reply = None  # the compaction request's answer (0.171 writes it as an assistant message): the summary
        # Codex's framing for the next model ("Another language model started …"): the summary follows it.
        said = _SUMMARY_HEAD.split(summary, maxsplit=1)[-1].strip()
        self.session.items.append(
            (
                ev.ContextCompacted,
                {
                    "summary": bound(said, bounds.SUMMARY) if said else None,
                    "tokens_before": self.tokens,
                    "actor": "system",
                    "timestamp": ts,
                    "source": self.keyed("compacted:", summary or fallback, where),
                },
            )
        )

    def event(self, ptype: Any, payload: dict[str, Any], src: ev.SourceKey, where: str, ts: Any) -> None:
        if ptype == "token_count":
            info = payload.get("info")
            usage = info.get("last_token_usage") if isinstance(info, dict) else None
            total = usage.get("total_tokens") if isinstance(usage, dict) else None
            if isinstance(total, int) and total > 0:
                self.tokens = total
        elif ptype == "agent_message":
            text = str(payload.get("message") or "")
            if not self.has_assistant_items and text.strip():
                self.reply = _Reply(text, ts, where)
        elif ptype == "task_complete":
            last = payload.get("last_agent_message")
            reply = self.reply
            if isinstance(last, str) and last.strip() and (reply is None or reply.text.strip() != last.strip()):
                self.reply = _Reply(last, ts, where)
            self.flush_reply()
        elif ptype == "turn_aborted":
            self.flush_reply()
            if payload.get("reason") != "review_ended":
                self.interrupted = True
                self.wrong = self.wrong or self.last_action
        elif ptype == "exec_command_end":
            self.exec_command_end(payload, src, ts)
        elif ptype == "patch_apply_end":
            self.patch_apply_end(payload, src, ts)

    def exec_command_end(self, payload: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        call_id = str(payload.get("call_id") or src.record)
        self.call_ids.add(call_id)
        shell, argv = _shell_line(payload.get("command"))
        if cells.inner_call(call_id) and call_id not in self.calls:
            for cell in self.open_cells:  # a cell's own command: this record, not the script, gives it
                self.cell_ran.setdefault(cell, []).append(_line(shell, argv))
        if payload.get("exit_code") is None and str(payload.get("status")) in ("declined", "rejected"):
            self.interrupted, self.wrong = True, f"exec {(shell or shlex.join(argv or ()))[:200]}"
            return
        dur = payload.get("duration") or {}
        ms = int(dur.get("secs", 0) * 1000 + dur.get("nanos", 0) // 1_000_000) if isinstance(dur, dict) else None
        stdout = str(payload.get("stdout") or payload.get("aggregated_output") or "")
        code = payload.get("exit_code")
        run_cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        self.command(
            Run(shell, argv, run_cwd, code if isinstance(code, int) else None, ms, stdout,
                str(payload.get("stderr") or ""), src.model_copy(update={"record": call_id}), ts),
            call_id,
        )

    def patch_apply_end(self, payload: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        call_id = str(payload.get("call_id") or src.record)
        self.call_ids.add(call_id)
        if call_id not in self.calls:
            # A code cell's apply_patch gets an id of its own (``exec-<uuid>``): this record is that patch.
            self.cell_patched.update(self.open_cells)
        changes = payload.get("changes") if payload.get("success", True) else None
        for path, change in (changes or {}).items():
            change = change if isinstance(change, dict) else {}
            op = {"add": "created", "delete": "deleted"}.get(str(change.get("type")), "modified")
            moved = change.get("move_path")
            self.session.items.append(
                (
                    ev.FileChanged,
                    {
                        "path": str(moved or path),
                        "operation": "renamed" if moved else op,
                        "renamed_from": str(path) if moved else None,
                        "diff": bounded(change_diff(change), bounds.DIFF),
                        "actor": ACTOR,
                        "timestamp": ts,
                        "source": src.model_copy(update={"record": f"{call_id}#{path}"}),
                    },
                )
            )
        if changes:
            self.last_action = "patched " + ", ".join(str(p) for p in list(changes)[:5])
        if not payload.get("success", True):
            self.session.items.append(
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

    def response_item(self, ptype: Any, payload: dict[str, Any], src: ev.SourceKey, where: str, ts: Any) -> None:
        if ptype == "message" and payload.get("role") == "assistant":
            text = _message_text(payload)
            if text.strip():
                self.reply = _Reply(text, ts, where)
                self.latest_call = None  # the agent spoke after it
        elif ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            self.call(ptype, payload, src, ts)
        elif ptype in ("function_call_output", "custom_tool_call_output"):
            self.call_output(payload, src, ts)

    def call(self, ptype: str, payload: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        call_id = str(payload.get("call_id") or payload.get("id") or src.record)
        self.call_ids.add(call_id)
        name = str(payload.get("name") or ("shell" if ptype == "local_shell_call" else "?"))
        if payload.get("namespace"):
            name = f"{payload['namespace']}.{name}"
        args = _args(payload) if ptype == "function_call" else {"input": payload.get("input")}
        if ptype == "local_shell_call":
            args = payload.get("action") or {}
        self.calls[call_id] = (name, args, ts)
        self.latest_call = call_id
        code = args.get("input") if name == "exec" and ptype == "custom_tool_call" else None
        if isinstance(code, str):
            self.open_cells.add(call_id)
            self.cell_turns[call_id] = self.turn
            said = self.cell_action(code)
            if said is not None:
                self.last_action = said
                return
        if name in SHELL_TOOLS:
            shell, argv = _shell_line(args.get("cmd") or args.get("command"))
            self.last_action = f"ran {(shell or shlex.join(argv or ()))[:200]}"
        elif name not in ("write_stdin", "update_plan") and not (name == "wait" and "cell_id" in args):
            self.last_action = f"{name} {json.dumps(args, default=str)[:200]}"

    @staticmethod
    def cell_action(code: str) -> str | None:
        """What a code cell does, as ``last_action`` says it: its first command or patch read."""
        for call in cells.tool_calls(code):
            if call.name in SHELL_TOOLS and isinstance(call.args, dict):
                shell, argv = _shell_line(call.args.get("cmd") or call.args.get("command"))
                if shell or argv:
                    return f"ran {(shell or shlex.join(argv or ()))[:200]}"
            patch = _cell_patch(call.args) if call.name == "apply_patch" else None
            if patch is not None:
                return "patched " + ", ".join(path for _, path, _, _ in patch_files(patch)[:5])
        return None

    def call_output(self, payload: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        call_id = str(payload.get("call_id") or "")
        name, args, calls_ts = self.calls.pop(call_id, ("?", {}, ts))
        text, code = _output_text(payload.get("output"))
        key = src.model_copy(update={"record": call_id or src.record})
        if name == "exec" and isinstance(args.get("input"), str):
            self.open_cells.discard(call_id)
            out = cells.read_output(payload.get("output"))
            if out.status == "running" and out.cell_id:
                self.open_cells.add(call_id)
                self.cells[out.cell_id] = _Cell(call_id, args["input"], key, calls_ts, list(out.parts))
                return
            if out.status is not None:
                self.code_cell(call_id, args["input"], out, key, ts, calls_ts, timed=True)
                return
        cell = self.cells.get(str(args.get("cell_id"))) if name == "wait" else None
        if cell is not None:
            out = cells.read_output(payload.get("output"))
            cell.parts.extend(out.parts)
            if out.status not in ("running", None):
                del self.cells[str(args["cell_id"])]
                self.open_cells.discard(cell.call_id)
                done = cells.Output(out.status, None, None, cell.parts)
                self.code_cell(cell.call_id, cell.code, done, cell.key, ts, cell.called, timed=False)
            return  # a poll of a cell: no action of its own
        if _REJECTED.match(text) and name != "write_stdin":
            # The user declined the call (or interrupted it); what they say next corrects it.
            self.interrupted = True
            self.wrong = self.last_action if name == "?" else f"{name} {json.dumps(args, default=str)[:200]}"
        elif name == "update_plan":
            # Recorded once Codex took it: a turn without the tool (``codex exec``) answers
            # "unsupported call", and its hook never fires, so the plan was never made.
            if not _TOOL_REFUSED.match(text):
                self.session.items.extend(plan_items(_plan_steps(args), ACTOR, key, calls_ts))
        elif name == "write_stdin":
            self.poll(args, text, code, ts)
        elif name in SHELL_TOOLS:
            self.shell_output(name, call_id, args, text, code, key, ts)
        elif name == "apply_patch":
            if call_id not in self.patched and code in (0, None):
                patch = str(args.get("input") or args.get("patch") or "")
                self.session.items.extend(patch_items(patch, self.cwd, key, ts))
        elif not _ours(name):
            self.session.items.extend(_tool_pair(name, call_id, args, code in (0, None), text, key, ts))

    def poll(self, args: dict[str, Any], text: str, code: int | None, ts: Any) -> None:
        """A ``write_stdin`` poll of a running exec_command; without exec_command_end, its final poll has the result."""
        proc = str(args.get("session_id", ""))
        pending = self.running.get(proc)
        if pending is None:
            return
        pending[4].append(text)
        if code is not None:
            del self.running[proc]
            first_id, first_args, _, first_key, outputs = pending
            shell, argv = _shell_line(first_args.get("cmd") or first_args.get("command"))
            self.command(
                Run(shell, argv, first_args.get("workdir"), code, None, "\n".join(outputs), "", first_key, ts), first_id
            )

    def shell_output(
        self, name: str, call_id: str, args: dict[str, Any], text: str, code: int | None, key: ev.SourceKey, ts: Any
    ) -> None:
        if call_id in self.ended:
            return  # recorded from exec_command_end
        if code is None:
            still = _RUNNING.search(text[:2000])
            if still and name == "exec_command":
                self.running[still.group(1)] = (call_id, args, ts, key, [text])
            if name == "exec_command":
                return
        shell, argv = _shell_line(args.get("cmd") or args.get("command"))
        body, _, _, ms = _exec_response(text)  # the output without Codex's header
        self.command(Run(shell, argv, args.get("workdir"), code, ms, body, "", key, ts), call_id)


    def code_cell(
        self, call_id: str, code: str, out: cells.Output, key: ev.SourceKey, ts: Any, called: Any, *, timed: bool
    ) -> None:
        """A finished code-mode cell (or one still running where the rollout stops: ``out.status``
        "running"): each tool call read from its script as the direct call would give it, sharing the
        cell's one output; what is not read, the cell as one ``ToolCalled``/``ToolResult``, as before.

        Keys: a cell with one call read gives that call the cell's ``call_id``, as a direct call has;
        with several, ``<call_id>:<i>`` (``i`` its place among the script's ``tools.`` calls). A cell
        finished (``timed``) at its first output gives its one command the cell's wall time."""
        calls = cells.tool_calls(code)
        shells = [(i, c) for i, c in enumerate(calls) if c.name in SHELL_TOOLS and isinstance(c.args, dict)
                  and (c.args.get("cmd") or c.args.get("command"))]
        patches = [(i, c) for i, c in enumerate(calls) if c.name == "apply_patch" and _cell_patch(c.args)]
        plans = [(i, c) for i, c in enumerate(calls) if c.name == "update_plan" and isinstance(c.args, dict)]
        read = {i for i, _ in shells + patches + plans}
        ours = {i for i, c in enumerate(calls) if _ours(c.name)}  # tasktrail's server appends what they say
        ran = Counter(self.cell_ran.pop(call_id, ()))
        unrecorded = []
        for i, call in shells:
            line = _line(*_shell_line(call.args.get("cmd") or call.args.get("command")))
            if ran[line] > 0:
                ran[line] -= 1  # its exec_command_end gave it (exit code, duration), keyed as the hook keys it
            else:
                unrecorded.append((i, call))
        done, running = out.status == "completed", out.status == "running"
        text = "\n".join(out.parts)
        results = [r for r in map(cells.exec_result, out.parts) if r is not None]
        said = [text, *out.parts, *(str(r["output"]) for r in results)]
        if any(_REJECTED.match(t) for t in said):
            # The user declined a call of the cell (or interrupted it); what they say next corrects it.
            self.interrupted = True
            self.wrong = self.cell_action(code) or f"exec {code[:200]}"
            return

        def keyed(i: int) -> ev.SourceKey:
            return key if len(read) == 1 else key.model_copy(update={"record": f"{key.record}:{i}"})

        when = ts if ts is not None else called
        for place, (i, call) in enumerate(unrecorded):
            shell, argv = _shell_line(call.args.get("cmd") or call.args.get("command"))
            exit_code: int | None = None
            ms: int | None = None
            if len(unrecorded) == 1 and len(results) == 1:
                result = results[0]
                stdout = str(result["output"])
                exit_code = result["exit_code"] if type(result.get("exit_code")) is int else None
                wall = result.get("wall_time_seconds")
                ms = int(wall * 1000) if isinstance(wall, int | float) and wall >= 0 else None
            elif len(unrecorded) == 1:
                stdout = text  # ``text(r.output)``: the output, and nothing says how it exited
                ms = out.wall_ms if timed and len(read) == 1 else None
            else:
                last = place == len(unrecorded) - 1
                stdout = _CELL_SHARED.format(n=len(unrecorded)) + text if last else ""
            workdir = call.args.get("workdir")
            run_cwd = workdir if isinstance(workdir, str) else None
            self.command(Run(shell, argv, run_cwd, exit_code, ms, stdout, "", keyed(i), when), keyed(i).record)
        for i, call in patches:
            if call_id in self.cell_patched:
                continue  # the patch_apply_end seen while the cell ran records its files, with Codex's diffs
            patch = _cell_patch(call.args) or ""
            if done and not any(_PATCH_FAILED.match(t) for t in said):
                self.session.items.extend(patch_items(patch, self.cwd, keyed(i), when))
                self.last_action = "patched " + ", ".join(path for _, path, _, _ in patch_files(patch)[:5])
            elif done:
                self.session.items.append((ev.ToolResult, {
                    "tool": "apply_patch", "call_id": keyed(i).record, "ok": False,
                    "output": bounded(text) or bounded("failed"), "actor": "tool:apply_patch", "timestamp": when,
                    "source": keyed(i).model_copy(update={"record": keyed(i).record + "#result"}),
                }))
        turn = self.cell_turns.get(call_id)
        for i, call in plans:
            if (done or running) and not any(_TOOL_REFUSED.match(t) for t in said):
                steps = _plan_steps(call.args)
                plan_key = keyed(i) if turn is None else key.model_copy(
                    update={"record": cells.plan_record(turn, steps)})  # as the live hook keys it
                self.session.items.extend(plan_items(steps, ACTOR, plan_key, called))
        if not (read | ours) or len(read | ours) < len(calls) or not (done or running):
            # Calls not read, or a cell that failed: the cell itself, as before, so nothing is lost.
            head = "" if done or running else f"Script {out.status}\n"
            pair = _tool_pair("exec", call_id, {"input": code}, done, head + text, key, when)
            self.session.items.extend(pair[:1] if running else pair)


def _tool_pair(
    name: str, call_id: str, args: dict[str, Any], ok: bool, text: str, key: ev.SourceKey, ts: Any
) -> list[Item]:
    """Any other call: what was called and what came back (the rollout and the hook alike)."""
    return [
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
                "ok": ok,
                "output": bounded(text) or bounded(" "),
                "actor": "tool:" + re.sub(r"\s", "_", name),
                "timestamp": ts,
                "source": key.model_copy(update={"record": key.record + "#result"}),
            },
        ),
    ]


def map_rollout(lines: Iterable[tuple[int, str]], stem: str, transcript: str | None = None) -> Session:
    """Map the numbered lines of one rollout file to items (pure: no I/O)."""
    return RolloutMapper(stem, transcript).map(lines)



# -- live capture: Codex's own hooks (``trail hook codex``) -------------------------------------------

_OUTPUT_HEAD = re.compile(
    r"^(?:Chunk ID|Wall time|Process exited with code|Exit code|Original token count|Total output lines)\b"
)
_WALL = re.compile(r"^Wall time:\s*([\d.]+)\s*seconds?\s*$", re.M)
_PATCH_FAILED = re.compile(r"^\s*(?:apply_patch verification failed|failed to apply|error\b|invalid patch)", re.I)


def user_prompt(text: str) -> str:
    """A prompt as the rollout importer keys and classifies it (Codex Desktop's file list dropped)."""
    return _clean_prompt(text)


def _exec_response(response: Any) -> tuple[str, str, int | None, int | None]:
    """``(stdout, stderr, exit code, duration ms)`` of a shell call's ``tool_response``.

    Codex gives the text the model saw: a header (``Chunk ID``, ``Wall time: S seconds``, ``Process
    exited with code N`` or the older ``Exit code: N``, ``Original token count``) and the output after
    ``Output:``. A structured object (``exit_code``, ``stdout``, ``stderr``, ``duration``) is read too."""
    if isinstance(response, dict) and not {"text", "content"} & response.keys():
        code = response.get("exit_code", response.get("exitCode"))
        dur = response.get("duration")
        ms = response.get("duration_ms")
        if isinstance(dur, dict):
            ms = int(dur.get("secs", 0) * 1000 + dur.get("nanos", 0) // 1_000_000)
        out = response.get("stdout") or response.get("aggregated_output") or response.get("output") or ""
        return (str(out), str(response.get("stderr") or ""), code if isinstance(code, int) else None,
                ms if isinstance(ms, int) else None)
    text, code = _output_text(response)
    head, sep, body = text.partition("Output:\n")
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if sep and lines and all(_OUTPUT_HEAD.match(ln) for ln in lines):
        wall = _WALL.search(head)
        return body, "", code, int(float(wall.group(1)) * 1000) if wall else None
    return text, "", code, None


def hook_items(payload: dict[str, Any], row: int, timestamp: Any) -> list[Item]:
    """Items for one Codex hook payload taken from the inbox (row = its inbox id).

    The same events, with the same source keys, as ``map_rollout`` gives the rollout's records:
    the call id (``tool_use_id``) for a tool call, ``reply:<hash>:0`` for the turn's last message,
    so a session captured live and later imported lands once. UserPromptSubmit gives nothing here
    (prompts need the task's history to classify: ``capture.inbox``); SessionStart neither (the
    inbox links the conversation)."""
    session = str(payload.get("session_id") or "unknown")
    event = payload.get("hook_event_name")
    src = ev.SourceKey(agent=AGENT, session=session, record=f"hook:{row}")
    cwd = payload["cwd"] if isinstance(payload.get("cwd"), str) and payload["cwd"] else None
    if event == "PostToolUse":
        name = str(payload.get("tool_name") or "?")
        key = src.model_copy(update={"record": str(payload.get("tool_use_id") or src.record)})
        given = payload.get("tool_input")
        data: dict[str, Any] = given if isinstance(given, dict) else {}
        response = payload.get("tool_response")
        if name == "Bash" or name in SHELL_TOOLS:
            shell, argv = _shell_line(data.get("command") or data.get("cmd"))
            stdout, stderr, code, ms = _exec_response(response)
            if code is None and (_RUNNING.search(stdout[:2000]) or _REJECTED.match(stdout)):
                return []  # still running (a later poll ends it), or the user declined it
            # 0.171 gives the output alone: the exit code is the rollout's (``codex_outcomes``), where found.
            known = payload.get(OUTCOME_KEY)
            if code is None and isinstance(known, dict) and isinstance(known.get("exit_code"), int):
                code = known["exit_code"]
                ms = known.get("duration_ms") if isinstance(known.get("duration_ms"), int) else ms
            if ms is None and isinstance(payload.get("duration_ms"), int) and payload["duration_ms"] >= 0:
                ms = payload["duration_ms"]
            run_cwd = data["workdir"] if isinstance(data.get("workdir"), str) else cwd
            return command_run_items(Run(shell, argv, run_cwd, code, ms, stdout, stderr, key, timestamp),
                                     where=run_cwd, patched=False)
        text, code = _output_text(response)
        if _REJECTED.match(text):
            return []
        if name == "apply_patch":
            patch = str(data.get("command") or data.get("input") or data.get("patch") or "")
            if code in (0, None) and not _PATCH_FAILED.match(text):
                located, recorded = payload.get(HUNKS_KEY), payload.get(CHANGES_KEY)
                return patch_items(patch, cwd, key, timestamp, absolute_keys=True,
                                   located=located if isinstance(located, dict) else None,
                                   recorded=recorded if isinstance(recorded, dict) else None)
            return [(ev.ToolResult, {
                "tool": "apply_patch", "call_id": key.record, "ok": False,
                "output": bounded(text) or bounded("failed"), "actor": "tool:apply_patch",
                "timestamp": timestamp, "source": key.model_copy(update={"record": key.record + "#result"}),
            })]
        if name == "update_plan":
            if _TOOL_REFUSED.match(text):
                return []
            steps, turn = _plan_steps(data), payload.get("turn_id")
            if cells.inner_call(key.record) and isinstance(turn, str) and turn:
                key = key.model_copy(update={"record": cells.plan_record(turn, steps)})  # as the import keys it
            return plan_items(steps, ACTOR, key, timestamp)
        if _ours(name):
            return []  # tasktrail's own MCP tools append their events themselves: a mirror would repeat them
        failed = isinstance(response, dict) and bool(response.get("isError") or response.get("is_error"))
        return _tool_pair(name, key.record, data, code in (0, None) and not failed, text, key, timestamp)
    if event in ("Stop", "PreCompact", "PostCompact", "SessionEnd"):
        # Codex's compaction hooks carry only their trigger (no summary: the rollout's ``compacted``
        # record has it), SessionEnd only its reason: each is a point in the task, a checkpoint.
        label = {"Stop": "agent stopped", "PreCompact": "before compaction",
                 "PostCompact": "after compaction", "SessionEnd": "session ended"}[str(event)]
        trigger = payload.get("trigger") or payload.get("reason")
        items: list[Item] = [(ev.CheckpointMarked, {
            "label": f"{label} ({trigger})" if trigger else label,
            "actor": ACTOR, "source": src, "timestamp": timestamp,
        })]
        said = payload.get("last_assistant_message")
        if event == "Stop" and isinstance(said, str) and said.strip():
            record = "reply:" + prompt_record(said.strip(), {}).removeprefix("prompt:")
            items.append((ev.AgentReplied, {
                "text": reply_bound(said.strip()), "actor": ACTOR, "timestamp": timestamp,
                "source": ev.SourceKey(agent=AGENT, session=session, record=record),
            }))
        return items
    return []
