"""Claude Code transcripts and hook payloads -> ledger items (pure; see docs/capture.md).

Source keys: ``SourceKey("claude-code", sessionId, record)`` where ``record`` is the tool call id
(``toolu_…``, plus ``#plan``/``#next``/``#result`` for the second event of one call) for tool
events, so a tool call captured live by the hook and later imported from its transcript is one
fact; the line's ``uuid`` for prompts and notes; ``<file-stem>:<line>`` for lines without a uuid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledger.capture.agents.claude_code import bashdiff, subagents
from ledger.capture.agents.claude_code.background import Background
from ledger.capture.agents.claude_code.bashdiff import patch_text
from ledger.capture.agents.claude_code.branches import Branches
from ledger.capture.agents.claude_code.refusals import ABORTED, INTERRUPTED, NOT_RUN, STOPPED
from ledger.capture.agents.claude_code.tasklist import TOOLS as TASK_TOOLS
from ledger.capture.agents.claude_code.tasklist import TaskList, hook_change, items_for, tool_change
from ledger.capture.classify import bare_command, classify, clears, request_text, slash_request
from ledger.capture.items import (
    Item,
    bounded,
    own_tool,
    plan_items,
    prompt_item,
    prompt_record,
    reply_bound,
    sha256,
    title_from,
    title_rank,
)
from ledger.capture.jsonl import Skipped, records
from ledger.capture.session import END, Session
from ledger.capture.testruns import command_facts
from ledger.domain import bounds
from ledger.domain import events as ev
from ledger.domain.bounds import bound

AGENT = "claude-code"
ACTOR = f"agent:{AGENT}"
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
"""Tools that run a command line: on Windows Claude Code runs PowerShell with Bash's input and result shapes
({command}, {stdout, stderr, interrupted}, "Exit code N" on failure)."""
REJECTED = "The user doesn't want to proceed"
_EXIT = re.compile(r"^(?:Error: )?Exit code (-?\d+)[^\S\n]*(?:\n|$)")
DURATION_MAX = 7 * 24 * 3600 * 1000
EXIT_MAX = 2**31 - 1
"""Largest exit code taken as stated; a larger one (no real process exits so) is not believed."""
_BASH_TAG = re.compile(r"<bash-(input|stdout|stderr)>(.*?)</bash-\1>", re.S)
_REASON = re.compile(
    r"(?:The user provided the following reason for the rejection:|the user said:)\s*(.*)\Z", re.S | re.I
)
PLAN_MAX = 1500
"""Characters of an approved plan kept as the decision's text (its heading and first lines)."""
"""Bytes of the agent's closing message kept."""
APPROVED = "approved by the user in plan mode"
_RECAP_HINT = re.compile(r"\s*\(disable recaps in /config\)\s*\Z")
"""Claude Code's own settings hint at the end of an away summary: its interface, not the session's content."""


REPLY = "reply:"
"""Source-record prefix of the agent's closing message of a turn (its text's hash)."""


def text_of(content: Any) -> str:
    """The text in a message or tool-result ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def actor_for(record: dict[str, Any]) -> str:
    """The main agent, or ``agent:claude-code/<agentId>`` for sub-agent (sidechain) traffic."""
    agent_id = record.get("agentId") or record.get("agent_id")
    if agent_id:
        return ACTOR + "/" + re.sub(r"\s+", "-", str(agent_id))
    return f"{ACTOR}/sidechain" if record.get("isSidechain") else ACTOR


def _input_diff(name: str, data: dict[str, Any]) -> str:
    """A rough diff from the tool input alone, for transcripts without ``toolUseResult``."""
    if name == "Write":
        return "\n".join("+" + ln for ln in str(data.get("content", "")).splitlines())
    edits = data.get("edits") if name == "MultiEdit" else [data]
    out: list[str] = []
    for e in edits or ():
        if isinstance(e, dict):
            out.extend("-" + ln for ln in str(e.get("old_string", "")).splitlines())
            out.extend("+" + ln for ln in str(e.get("new_string", "")).splitlines())
    return "\n".join(out)


def _after_content(name: str, data: dict[str, Any], result: dict[str, Any], before: str | None) -> str | None:
    """The file's content after the edit, where the transcript lets us derive it."""
    if result.get("userModified"):
        return None  # the user changed the proposal; what was written is not in the record
    if name == "Write":
        content = result.get("content", data.get("content"))
        return content if isinstance(content, str) else None
    if before is None:
        return None
    edits = data.get("edits") if name == "MultiEdit" else [data]
    text = before
    for e in edits or ():
        old, new = e.get("old_string"), e.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or old not in text:
            return None
        text = text.replace(old, new) if e.get("replace_all") else text.replace(old, new, 1)
    return text


def duration(value: Any) -> int | None:
    """A hook's ``duration_ms`` as stored: a whole number of milliseconds within a week, else unknown."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= DURATION_MAX
    return int(value) if ok else None


def failed_output(text: str) -> tuple[int, str]:
    """A failed Bash call's exit code and output. 2.x reports both in one text, "Exit code N" then
    stdout and stderr as the command printed them (the hook's ``error``, the transcript's result),
    so the rest is the command's output. 1.0.x failures carry no code: the command failed, its code
    is unknown, so 1; so is a code too large to be real (and to store)."""
    match = _EXIT.match(text)
    if match is None:
        return 1, text
    digits = match.group(1)
    code = int(digits) if len(digits.lstrip("-")) <= 10 else EXIT_MAX + 1
    return (code if -EXIT_MAX - 1 <= code <= EXIT_MAX else 1), text[match.end():]


_DENIED = ("requires approval", "was blocked", "requested permissions", "<tool_use_error>")



def bare_feedback(name: str, body: str, record: dict[str, Any]) -> bool:
    """A Bash call the user rejected by typing feedback, as 2.0.x records it: the error is the
    user's words alone. Claude Code 2.x states every real failure's exit code ("Exit code N"), and
    its own refusals say so, so what is left is what the user said (1.0.x had no exit codes)."""
    major = str(record.get("version") or "").split(".")[0]
    return (name in SHELL_TOOLS and major.isdigit() and int(major) >= 2 and bool(body.strip())
            and not _EXIT.match(body) and not body.startswith(("The user doesn't want", INTERRUPTED))
            and not any(d in body for d in _DENIED))


def slash_command(text: str) -> str | None:
    """``/name args`` for a slash command the user ran with work to do, else None (``classify.slash_request``)."""
    return slash_request(text) or None


def rejection_reason(content: str) -> str | None:
    """The reason the user gave when rejecting a tool use, or None (no reason, or not a rejection)."""
    text = content.removeprefix("Error: ")
    if not text.startswith(REJECTED):
        return None
    match = _REASON.search(text)
    reason = match.group(1).strip() if match else ""
    return reason or None


def _short_call(name: str, data: dict[str, Any]) -> str:
    """A short name for a tool call: what the user rejected."""
    if name == "ExitPlanMode":
        return "plan: " + title_from(str(data.get("plan", "")))
    if name in SHELL_TOOLS:
        return f"{name}: " + " ".join(str(data.get("command", "")).split())[:160]
    target = data.get("file_path") or data.get("notebook_path") or data.get("path") or data.get("pattern")
    if target:
        return f"{name} {target}"
    return f"{name} {json.dumps(data, default=str)[:160]}"


def plan_text(plan: str) -> str:
    """An approved plan as a decision's text: whole when short, else its heading and first lines."""
    plan = plan.strip()
    if len(plan) <= PLAN_MAX:
        return plan
    head = plan[:PLAN_MAX]
    cut = head.rfind("\n")
    return (head[:cut] if cut > PLAN_MAX // 2 else head).rstrip() + "\n…"


def _approved_plan(data: dict[str, Any], result: Any, content: str) -> str:
    """The plan the user approved: as the tool result states it (the user may have edited it)."""
    if "## Approved Plan:" in content:
        return content.split("## Approved Plan:", 1)[1]
    if isinstance(result, dict) and isinstance(result.get("plan"), str) and result["plan"].strip():
        return str(result["plan"])
    return str(data.get("plan", ""))


def _with(source: ev.SourceKey, suffix: str) -> ev.SourceKey:
    return source.model_copy(update={"record": source.record + suffix})


@dataclass(frozen=True)
class ToolCall:
    """One finished tool call, as the transcript or the live hook gives it: what the importer and the
    hook both map (``items``), so a call captured live and later imported is one fact."""

    name: str
    input: Any
    result: Any
    content: str
    """The result's text (the transcript's ``tool_result`` block, the hook's ``error``)."""
    is_error: bool
    actor: str
    source: ev.SourceKey
    ts: Any
    cwd: str | None = None
    duration_ms: int | None = None

    @property
    def data(self) -> dict[str, Any]:
        return self.input if isinstance(self.input, dict) else {}

    def items(self, tasks: TaskList | None = None) -> list[Item]:
        """The call's items.

        A Bash call adds its test run (``testruns``) and, when it exited 0, the deletes and renames
        it made (``shell_effects``). A tool use the user rejected with a reason adds that reason as a
        correction; an approved ``ExitPlanMode`` adds the plan as a decision. A task-list call
        (``TaskCreate`` …) changes the session's ``tasks`` and adds the plan it leaves, if it changed;
        without ``tasks`` (a sub-agent's file, which cannot know the list) it adds nothing."""
        name, data, is_error = self.name, self.data, self.is_error
        if own_tool(name):
            return []
        if name in TASK_TOOLS and not is_error:
            if tasks is None:
                return []
            change = tool_change(tasks, name, data, self.result, self.content)
            return items_for(tasks, change, self.actor, self.source, self.ts)
        plain = self.content.removeprefix("Error: ")
        rejected = is_error and (plain.startswith((STOPPED, INTERRUPTED, ABORTED))
                                or any(d in plain[:300] for d in NOT_RUN))
        if name in SHELL_TOOLS and not rejected:
            return self._bash()
        if name in EDIT_TOOLS and not is_error:
            item = self._file()
            return [item] if item else []
        if name == "TodoWrite" and not is_error:
            todos = data.get("todos") or []
            steps = [(str(t.get("content", "")), str(t.get("status", ""))) for t in todos if isinstance(t, dict)]
            return plan_items(steps, self.actor, self.source, self.ts)
        return self._called(rejected)

    def _bash(self) -> list[Item]:
        command = self._command()
        result, content = self.result, self.content
        line, code = str(self.data.get("command", "")), command[1]["exit_code"]
        if isinstance(result, dict) and not self.is_error:
            output = "\n".join(str(result.get(k) or "") for k in ("stdout", "stderr"))
        else:
            output = result if isinstance(result, str) and not content else content
        facts = command_facts(line, code, output, self.cwd, self.actor, self.source, self.ts)
        if not self.is_error:  # 2.1.332 lists the files a successful command changed (``bashdiff``)
            facts = bashdiff.merged(facts, result, self.actor, self.source, self.ts)
        return [command, *facts]

    def _command(self) -> Item:
        """A Bash call and its outcome. Claude Code only states an exit code on failure."""
        result = self.result
        stdout = stderr = None
        exit_code: int | None = 0
        if self.is_error:
            text = result if isinstance(result, str) else self.content
            exit_code, stdout = failed_output(text or "")
        elif isinstance(result, dict):
            stdout, stderr = result.get("stdout"), result.get("stderr")
            if result.get("returnCodeInterpretation"):
                exit_code = None  # non-zero but judged benign by Claude Code (grep found nothing)
        else:
            stdout = self.content
        return ev.CommandRan, {
            "shell": str(self.data.get("command", "")),
            "cwd": self.cwd,
            "exit_code": exit_code,
            "duration_ms": self.duration_ms,
            "stdout": bounded(stdout if isinstance(stdout, str) else None),
            "stderr": bounded(stderr if isinstance(stderr, str) else None),
            "actor": self.actor,
            "source": self.source,
            "timestamp": self.ts,
        }

    def _file(self) -> Item | None:
        name, data = self.name, self.data
        result = self.result if isinstance(self.result, dict) else {}
        path = result.get("filePath") or data.get("file_path") or data.get("notebook_path")
        if not path:
            return None
        before = result.get("originalFile", result.get("originalFileContents"))
        before = before if isinstance(before, str) else None
        created = name == "Write" and (result.get("type") == "create" or (not result and before is None))
        diff = patch_text(result.get("structuredPatch")) or ("" if name == "NotebookEdit" else _input_diff(name, data))
        after = None if name == "NotebookEdit" else _after_content(name, data, result, before)
        return ev.FileChanged, {
            "path": str(path),
            "operation": "created" if created else "modified",
            "before_sha256": sha256(before) if before is not None and not created else None,
            "after_sha256": sha256(after) if after is not None else None,
            "diff": bounded(diff, bounds.DIFF),
            "actor": self.actor,
            "source": self.source,
            "timestamp": self.ts,
        }

    def _called(self, rejected: bool) -> list[Item]:
        """Any other call: what was called and what came back, with the correction of a rejection
        that gave a reason or the decision of an approved plan."""
        name, data, result, content, source, ts = self.name, self.data, self.result, self.content, self.source, self.ts
        tool_actor = f"tool:{name}" if re.fullmatch(r"\S+", name) else "tool:unknown"
        output = content or (result if isinstance(result, str) else json.dumps(result, default=str) if result else "")
        extra: list[Item] = []
        reason = rejection_reason(content) if rejected else None
        if reason:
            extra.append(
                (
                    ev.CorrectionMade,
                    {"text": reason, "wrong": _short_call(name, data), "actor": "user", "timestamp": ts,
                     "source": _with(source, "#correction")},
                )
            )  # fmt: skip
        elif name == "ExitPlanMode" and not self.is_error:
            plan = _approved_plan(data, result, content)
            if plan.strip():
                extra.append(
                    (
                        ev.DecisionRecorded,
                        {"text": plan_text(plan), "reason": APPROVED, "actor": "user", "timestamp": ts,
                         "source": _with(source, "#decision")},
                    )
                )  # fmt: skip
        return [
            (
                ev.ToolCalled,
                {
                    "tool": name,
                    "call_id": source.record,
                    "input": bounded(_input_json(data)) or bounded("{}"),
                    "actor": self.actor,
                    "source": _with(source, "#call"),
                    "timestamp": ts,
                },
            ),
            (
                ev.ToolResult,
                {
                    "tool": name,
                    "call_id": source.record,
                    "ok": not self.is_error,
                    "output": bounded(output) or bounded(" "),
                    "actor": tool_actor,
                    "source": _with(source, "#result"),
                    "timestamp": ts,
                },
            ),
            *extra,
        ]


VALUE_KEPT = 1000
"""Bytes kept of each long string of a call's input that would not fit whole (its end, redacted first)."""


def _input_json(data: dict[str, Any]) -> str:
    """A call's input as JSON, whole when it fits ``bounds.OUTPUT``; else with each long string cut to its end,
    so its first keys (a Write's ``file_path``) are not pushed out of the kept tail by the content after them."""
    whole = json.dumps(data, default=str)
    if len(whole.encode("utf-8", "replace")) <= bounds.OUTPUT:
        return whole
    cut = {k: "…" + bound(v, VALUE_KEPT).tail if isinstance(v, str) and len(v) > VALUE_KEPT else v
           for k, v in data.items()}
    return json.dumps(cut, default=str)


SYNTHETIC_REPLIES = frozenset({"", "No response requested.", "(no content)"})
"""Texts Claude Code writes as the assistant's turn itself, no model behind them (after `/compact`, an
empty reply); its transcript marks them with the model ``<synthetic>``, the Stop hook does not."""


def synthetic_reply(record: dict[str, Any]) -> bool:
    """An assistant line Claude Code wrote itself: not the agent's words."""
    message = record.get("message")
    message = message if isinstance(message, dict) else {}
    blocks = message.get("content")
    blocks = blocks if isinstance(blocks, list) else []
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return message.get("model") == "<synthetic>" or (bool(texts) and all(
        isinstance(t, str) and t.strip() in SYNTHETIC_REPLIES for t in texts))


def reply_item(text: str, actor: str, session: str, timestamp: Any) -> Item:
    """The agent's closing message of a turn. Keyed by its text's hash, so the Stop hook's
    ``last_assistant_message`` and the transcript's last text of that turn are one fact."""
    return ev.AgentReplied, {
        "text": reply_bound(text.strip()),
        "actor": actor,
        "timestamp": timestamp,
        "source": ev.SourceKey(agent=AGENT, session=session, record=f"{REPLY}{sha256(text.strip())[:16]}"),
    }


COMPACT = "compact:"
"""Source-record prefix of a compaction known by its summary: the PostCompact hook's and the transcript's agree."""
_CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\n"
)
_AFTER_SUMMARY = (
    "\n\nIf you need specific details from before compaction",
    "\n\nRecent messages are preserved verbatim.",
    "\n\nYour REPL VM state has been cleared",
    "\nContinue the conversation from where it left off",
)

_REMINDER = re.compile(r"\A<system-reminder>[\s\S]*?</system-reminder>\n*")
"""What 2.1.332 puts between the wrapper's opening and the summary (``<tools-used-before-summary>…``): Claude
Code's note to the model, not the summary (the PostCompact hook's summary has none)."""


def shown_summary(summary: str) -> str:
    """A compaction summary as Claude Code puts it before the model (2.1): its ``<analysis>`` dropped,
    ``<summary>`` made "Summary:", runs of blank lines made one. The PostCompact hook gets the summary as
    the model wrote it; the transcript keeps it shown so (inside ``continued_summary``'s wrapper)."""
    text = re.sub(r"<analysis>[\s\S]*?</analysis>", "", summary, count=1)
    text = re.sub(r"<summary>([\s\S]*?)</summary>", lambda m: "Summary:\n" + m.group(1).strip(), text, count=1)
    return re.sub(r"\n\n+", "\n\n", text).strip()


def continued_summary(message: str) -> str | None:
    """The summary inside the transcript's "This session is being continued …" message, or None."""
    if not message.startswith(_CONTINUED):
        return None
    body = _REMINDER.sub("", message[len(_CONTINUED):], count=1)
    cut = min((i for i in (body.find(t) for t in _AFTER_SUMMARY) if i >= 0), default=len(body))
    return body[:cut].strip() or None


def compaction_key(shown: str) -> str:
    return f"{COMPACT}{sha256(shown)[:16]}"


def compaction_item(meta: dict[str, Any], summary: str | None, source: ev.SourceKey, timestamp: Any) -> Item:
    tokens = meta.get("preTokens")
    return ev.ContextCompacted, {
        "trigger": str(meta["trigger"]) if meta.get("trigger") else None,
        "tokens_before": tokens if isinstance(tokens, int) and tokens >= 0 else None,
        "summary": bound(summary, bounds.SUMMARY) if summary and summary.strip() else None,
        "actor": "system",
        "timestamp": timestamp,
        "source": source,
    }


@dataclass
class _Pending:
    name: str
    input: Any
    actor: str


def _is_prompt(record: dict[str, Any], content: Any) -> bool:
    if record.get("isMeta") or record.get("isCompactSummary") or record.get("isSidechain"):
        return False
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    return bool(text_of(content).strip())


def _subagent(record: dict[str, Any], stem: str) -> bool:
    """Whether the file's first record with a session id says a sub-agent wrote it."""
    return bool(record.get("agentId")) or stem.split(".")[-1].startswith("agent-")


def sort_key(lines: Iterable[tuple[int, str]], stem: str) -> tuple[str, bool]:
    """(first record's time, whether a sub-agent wrote the file), as ``map_transcript`` finds them, read
    only as far as both are known: what orders the files before any is mapped."""
    first, subagent, seen = "", False, False
    for _, record in records(lines, []):
        if record.get("timestamp") and not first:
            first = str(record["timestamp"])
        if record.get("sessionId") and not seen:
            seen, subagent = True, _subagent(record, stem)
        if first and seen:
            break
    return first, subagent


class TranscriptMapper:
    """One transcript file's mapping (pure: no I/O): what it has learnt so far, and a method per record kind."""

    def __init__(self, stem: str, transcript: str | None = None) -> None:
        self.stem = stem
        self.transcript = transcript
        self.session = Session()
        self.branches = Branches()  # rewinds and an open last call, known at the file's end
        self.pending: dict[str, _Pending] = {}
        self.uuids: set[str] = set()
        self.parents: set[str] = set()
        self.summaries: dict[str, str] = {}
        self.interrupted = False
        self.wrong: str | None = None
        self.prompts = 0
        self.user_command: tuple[str, str, Any] | None = None
        self.last: tuple[str, int, Any] | None = None
        self.prompt_seen: dict[str, int] = {}
        self.reply: tuple[str, Any] | None = None
        """The main agent's latest text in this turn: where it stopped, if the turn ends here."""
        self.compaction: int | None = None
        """Index in ``session.items`` of the last compaction still waiting for its summary."""
        self.titled_by: int | None = None
        """The ``title_rank`` of the prompt the title came from; None while no prompt named the task."""
        self.background = Background()
        """Commands run in the background, whose outcome a later ``TaskOutput`` brings."""
        self.launches = subagents.Launches()
        """Sub-agents run in the background, whose report a later ``<task-notification>`` brings."""
        self.tasks = TaskList()
        """The session's task list (``TaskCreate`` …); a sub-agent's file gets none (see ``ToolCall.items``)."""
        self.last_prompt: str | None = None
        """The user's previous request: the same text again is a request re-sent (a rewind's branch may repeat an
        older one: that is not re-sent)."""
        self.expanding: str | None = None
        """A bare slash command just typed (``/init``): the prompt it expands to, next, is its request."""
        self.queued: list[tuple[int, str, Any]] = []
        """Prompts typed while the agent worked (index in items, text, time); one that
        never comes back as a user line is still something the user said, and lands where it was typed."""

    @property
    def session_key(self) -> str:
        return self.session.session_id or self.stem

    def map(self, lines: Iterable[tuple[int, str]]) -> Session:
        session = self.session
        for number, record in records(lines, session.skipped):
            try:
                self.branches.see(record, session.items)
                self.record(number, record)
            except (AttributeError, TypeError, KeyError, ValueError, IndexError) as exc:
                # A record of a shape this mapper does not know is skipped with its reason, never fatal.
                session.skipped.append(Skipped(number, f"unexpected record shape ({type(exc).__name__}: {exc})"))
        self.close_turn()
        self.branches.finish(session, self.stem)
        for index, text, ts in reversed(self.queued):
            queued_key = prompt_record(text, self.prompt_seen)
            prompt_src = ev.SourceKey(agent=AGENT, session=self.session_key, record=queued_key)
            session.items.insert(index, prompt_item(classify(text, first=False), text, prompt_src, ts))
        if self.last is not None and not session.is_subagent:
            session.items.append(self.end_item(*self.last))
        own = [self.summaries[u] for u in self.summaries if u in self.uuids]
        if own:
            session.title = title_from(own[-1])  # Claude Code's own title for this session wins
        session.references = ({u for u in self.summaries if u not in self.uuids} | self.parents) - self.uuids
        if self.transcript and session.session_id:
            session.items.insert(0, self.link_item(self.transcript))
        return session

    def end_item(self, uuid: str, number: int, ts: Any) -> Item:
        """Where the transcript stopped; keyed by the last message's uuid (prefixed, so it cannot
        collide with that message's own event), which later sessions' summary records point at
        (``leafUuid``), so a continuation finds this task."""
        return (
            ev.CheckpointMarked,
            {
                "label": "transcript end",
                "note": f"{self.stem} line {number}",
                "actor": "system",
                "timestamp": ts,
                "source": ev.SourceKey(agent=AGENT, session=self.session_key, record=f"{END}{uuid}"),
            },
        )

    def link_item(self, transcript: str) -> Item:
        session_id = self.session.session_id
        return (
            ev.ConversationLinked,
            {
                "agent": AGENT,
                "session_id": session_id,
                "transcript": transcript,
                "actor": "system",
                "timestamp": self.session.first_timestamp or None,
                "source": ev.SourceKey(agent=AGENT, session=session_id, record="link"),
            },
        )

    def close_turn(self) -> None:
        if self.reply is not None and not self.session.is_subagent:
            self.session.items.append(reply_item(self.reply[0], ACTOR, self.session_key, self.reply[1]))
        self.reply = None

    def record(self, number: int, record: dict[str, Any]) -> None:
        """One line: what every record tells (session, times, uuids), then what its kind does."""
        session = self.session
        kind = record.get("type")
        uuid = record.get("uuid")
        ts = record.get("timestamp")
        if ts and not session.first_timestamp:
            session.first_timestamp = str(ts)
        if record.get("sessionId") and not session.session_id:
            session.session_id = str(record["sessionId"])
            session.is_subagent = _subagent(record, self.stem)
        if record.get("cwd") and session.cwd is None:
            session.cwd = str(record["cwd"])
        if uuid:
            self.uuids.add(str(uuid))
            if not record.get("isSidechain") and kind in ("user", "assistant"):
                self.last = (str(uuid), number, ts)
        if record.get("parentUuid"):
            self.parents.add(str(record["parentUuid"]))
        key = str(uuid) if uuid else f"{self.stem}:{number}"
        src = ev.SourceKey(agent=AGENT, session=self.session_key, record=key)
        if kind == "summary":
            self.summary(record)
        elif kind == "queue-operation":
            self.queue_operation(record, src, ts)
        elif kind == "attachment":
            self.attachment(record, src, ts)
        elif kind in ("custom-title", "ai-title"):
            self.custom_title(record)
        elif kind == "system":
            self.system(record, src, ts)
        elif kind == "assistant":
            self.assistant(record, ts)
        elif kind == "user":
            self.user(record, key, src, ts)

    def summary(self, record: dict[str, Any]) -> None:
        if isinstance(record.get("summary"), str) and record.get("leafUuid"):
            self.summaries[str(record["leafUuid"])] = record["summary"]

    def queue_operation(self, record: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        content = record.get("content")
        if record.get("operation") == "enqueue" and isinstance(content, str):
            # a sub-agent's notice is queued as it stops: its stop lands here, where the live hook's does
            self.session.items.extend(self.launches.items(content, ACTOR, src, ts))
            text = request_text(content) or ""
            if text and text != "tool_result":
                self.queued.append((len(self.session.items), text, ts))

    def attachment(self, record: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        """A prompt queued while the agent worked and given it mid-turn (``queued_command``): a sub-agent's
        notice among them is its stop (the user's own queued words come from the queue's enqueue)."""
        attached = record.get("attachment")
        if isinstance(attached, dict) and attached.get("type") == "queued_command":
            prompt = attached.get("prompt")
            if isinstance(prompt, str):
                self.session.items.extend(self.launches.items(prompt, ACTOR, src, ts))

    def custom_title(self, record: dict[str, Any]) -> None:
        title = record.get("customTitle") or record.get("aiTitle") or record.get("title")
        if isinstance(title, str) and title.strip():
            self.session.title = title.strip()

    def system(self, record: dict[str, Any], src: ev.SourceKey, ts: Any) -> None:
        sub = record.get("subtype")
        if sub == "compact_boundary":
            # One fact per compaction: the summary record that follows fills it in.
            meta = record.get("compactMetadata")
            self.compaction = len(self.session.items)
            self.session.items.append(compaction_item(meta if isinstance(meta, dict) else {}, None, src, ts))
        elif sub == "away_summary" and (summary := _RECAP_HINT.sub("", text_of(record.get("content")))).strip():
            self.session.items.append(
                (ev.NoteAdded, {"text": summary, "actor": ACTOR, "source": src, "timestamp": ts})
            )

    def assistant(self, record: dict[str, Any], ts: Any) -> None:
        actor = actor_for(record)
        main = actor == ACTOR and not record.get("isApiErrorMessage") and not synthetic_reply(record)
        for block in (record.get("message") or {}).get("content") or ():
            if main and isinstance(block, dict) and block.get("type") == "text":
                said = block.get("text")
                if isinstance(said, str) and said.strip():
                    self.reply = (said, ts)
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id"):
                self.pending[str(block["id"])] = _Pending(str(block.get("name", "?")), block.get("input"), actor)
                if block.get("name") in EDIT_TOOLS | SHELL_TOOLS:
                    self.wrong = None

    def user(self, record: dict[str, Any], key: str, src: ev.SourceKey, ts: Any) -> None:
        content = (record.get("message") or {}).get("content")
        if record.get("isCompactSummary"):
            self.compact_summary(text_of(content), src, ts)
            return
        if isinstance(content, list):
            self.tool_results(record, content, src, ts)
        if _is_prompt(record, content):
            text = text_of(content)
            # a sub-agent's notice given as a turn of its own (the main turn had ended when it stopped)
            self.session.items.extend(self.launches.items(text, ACTOR, src, ts))
            self.prompt(text, key, src, ts)
        elif self.expanding is not None and record.get("isMeta") and not record.get("isSidechain"):
            self.expansion(text_of(content), src, ts)

    def expansion(self, text: str, src: ev.SourceKey, ts: Any) -> None:
        """The prompt a bare slash command expands to (``/init``: "Please analyze this codebase and create a
        CLAUDE.md file, ..."): what the user asked for, in the command's words (its first sentence)."""
        name, self.expanding = self.expanding, None
        words = " ".join(text.split())
        if not words or request_text(words) is None:
            return
        end = re.search(r"[.!?](?:\s|$)", words)
        self.request(f"/{name}: {words[: end.end() if end else 300].strip()[:300]}", src, ts, rank=1)

    def compact_summary(self, text: str, src: ev.SourceKey, ts: Any) -> None:
        items = self.session.items
        if text.strip():
            inner = continued_summary(text)
            known = src.model_copy(update={"record": compaction_key(inner)}) if inner else None
            if self.compaction is not None:
                cls, fields = items[self.compaction]
                summary = compaction_item({}, text, src, ts)[1]["summary"]
                items[self.compaction] = (cls, {**fields, "summary": summary, "source": known or fields["source"]})
            else:
                items.append(compaction_item({}, text, known or src, ts))
        self.compaction = None
        self.reply = None  # the turn before the compaction is summarised, not where it stopped

    def tool_results(self, record: dict[str, Any], content: list[Any], src: ev.SourceKey, ts: Any) -> None:
        for block in content:
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                continue
            call_id = str(block.get("tool_use_id", ""))
            call = self.pending.pop(call_id, None)
            if call is None:
                continue  # result of a call made in another file (copied history)
            body = text_of(block.get("content"))
            is_error = bool(block.get("is_error"))
            if is_error and bare_feedback(call.name, body, record):
                body = f"{REJECTED} with this tool use. To tell you how to proceed, the user said:\n{body}"
            if is_error and body.startswith((REJECTED, INTERRUPTED, ABORTED)):
                # A rejection with a reason is itself the correction (see ToolCall.items); the
                # agent goes on, so the next prompt is not one because of it.
                self.interrupted = rejection_reason(body) is None
                self.wrong = f"{call.name} {json.dumps(call.input, default=str)[:200]}"
            tool_src = ev.SourceKey(agent=AGENT, session=src.session, record=call_id)
            cwd = str(record["cwd"]) if record.get("cwd") else self.session.cwd
            done = ToolCall(call.name, call.input, record.get("toolUseResult"), body, is_error, call.actor, tool_src,
                            ts, cwd)
            self.session.items.extend(done.items(None if self.session.is_subagent else self.tasks))
            if call.name in SHELL_TOOLS:
                self.background.started(done.data, done.result)
            self.launches.launched(call.name, done.data, done.result, call_id)
            self.session.items.extend(self.background.ended(call.name, done.result, cwd, call.actor, tool_src, ts))

    def prompt(self, text: str, key: str, src: ev.SourceKey, ts: Any) -> None:
        """A line the user wrote: an interrupt, a `!` command or its output, or a request."""
        if text.lstrip().startswith(INTERRUPTED):
            self.interrupted = True
            return
        tags = dict((m.group(1), m.group(2)) for m in _BASH_TAG.finditer(text))
        if "input" in tags:  # the user ran a command with `!`; its output follows on the next line
            self.user_command = (tags["input"], key, ts)
            return
        if "stdout" in tags or "stderr" in tags:
            if self.user_command is not None:
                self.session.items.append(_user_command_item(self.user_command, tags, src))
                self.user_command = None
            return
        if clears(text):
            self.close_turn()
            if self.prompts:  # a /clear before any request of this session closes nothing in it
                self.session.items.append(_cleared_item(src, ts))
            return
        request = request_text(text)  # `/orchestrator create TODO app`: the arguments are the request
        self.expanding = bare_command(text) if request is None else None
        if request is None:
            self.close_turn()  # the user took the turn (`/compact`), though nothing was asked for
            return
        self.request(request or text.strip(), src, ts)

    def request(self, cleaned: str, src: ev.SourceKey, ts: Any, rank: int = 2) -> None:
        """A request of the user's; ``rank``: the highest ``title_rank`` it may name the task with (a command's
        fixed prompt names it only until the user's own request comes)."""
        self.queued[:] = [q for q in self.queued if q[1] != cleaned]  # it came back as a user line
        self.close_turn()
        self.prompts += 1
        resent = cleaned == self.last_prompt  # the same request again (after an interrupt): the agent missed it
        self.last_prompt = cleaned
        kind = classify(cleaned, first=self.prompts == 1, after_interrupt=self.interrupted, resent=resent)
        prompt_src = src.model_copy(update={"record": prompt_record(cleaned, self.prompt_seen)})
        session = self.session
        session.items.append(prompt_item(kind, cleaned, prompt_src, ts, self.wrong if kind == "correction" else None))
        titled_by = self.titled_by
        ranked = min(rank, title_rank(cleaned))
        if (session.title is None or titled_by is not None) and kind == "requirement" and (
                titled_by is None or ranked > titled_by):
            # A throw-away opening ("show tools", "hi") names the task only until a real request comes.
            session.title, self.titled_by = title_from(cleaned), ranked
        self.interrupted, self.wrong = False, None


def _cleared_item(src: ev.SourceKey, ts: Any) -> Item:
    """Where the user cleared the conversation (``/clear``): the fold closes what was asked before it there."""
    return (ev.CheckpointMarked, {"label": ev.CONTEXT_CLEARED, "note": "/clear", "actor": "user", "timestamp": ts,
                                  "source": src.model_copy(update={"record": f"clear:{src.record}"})})


def _user_command_item(command: tuple[str, str, Any], tags: dict[str, str], src: ev.SourceKey) -> Item:
    """A command the user ran with `!` (its line, the line's key and time) and the output that followed it."""
    line, cmd_key, cmd_ts = command
    return (
        ev.CommandRan,
        {
            "shell": line,
            "exit_code": None,
            "stdout": bounded(tags.get("stdout")),
            "stderr": bounded(tags.get("stderr")),
            "actor": "user",
            "timestamp": cmd_ts,
            "source": src.model_copy(update={"record": cmd_key}),
        },
    )


def map_transcript(lines: Iterable[tuple[int, str]], stem: str, transcript: str | None = None) -> Session:
    """Map the numbered lines of one transcript file to items (pure: no I/O)."""
    return TranscriptMapper(stem, transcript).map(lines)



# -- live hook payloads ----------------------------------------------------------------------------


def hook_items(payload: dict[str, Any], row: int, timestamp: Any, tasks: TaskList | None = None) -> list[Item]:
    """Items for one Claude Code hook payload taken from the inbox (row = its inbox id); ``tasks`` is
    the session's task list as the ledger holds it (``capture.inbox`` restores it), kept up here."""
    session = str(payload.get("session_id") or "unknown")
    event = payload.get("hook_event_name")
    actor = actor_for(payload)
    src = ev.SourceKey(agent=AGENT, session=session, record=f"hook:{row}")
    tasks = TaskList() if tasks is None else tasks
    if event == "UserPromptSubmit":
        return []  # prompts need the task's history to classify: see capture.inbox
    if event in ("TaskCreated", "TaskCompleted"):
        return items_for(tasks, hook_change(tasks, payload), actor, src, timestamp)
    if event == "PostToolBatch":
        # Not installed (it repeats the batch's PostToolUse calls); where it is wired, its task-list calls
        # fill in what a missed PostToolUse left out: each change lands once whichever brings it.
        batch: list[Item] = []
        for call in payload.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("tool_name") in TASK_TOOLS and call.get("tool_use_id"):
                said = call.get("tool_response")
                key = src.model_copy(update={"record": str(call["tool_use_id"])})
                done = ToolCall(str(call["tool_name"]), call.get("tool_input"), said,
                                said if isinstance(said, str) else "", False, actor, key, timestamp)
                batch += done.items(tasks)
        return batch
    if event in ("PostToolUse", "PostToolUseFailure"):
        name = str(payload.get("tool_name") or "?")
        call_id = str(payload.get("tool_use_id") or f"hook:{row}")
        response = payload.get("tool_response")
        error = payload.get("error")
        is_error = event == "PostToolUseFailure" or (isinstance(response, dict) and bool(response.get("is_error")))
        content = str(error) if error else (response if isinstance(response, str) else "")
        tool_src = src.model_copy(update={"record": call_id})
        cwd = str(payload["cwd"]) if payload.get("cwd") else None
        done = ToolCall(name, payload.get("tool_input"), response, content, is_error, actor, tool_src, timestamp, cwd,
                        duration(payload.get("duration_ms")))
        return done.items(tasks)
    if event == "PostCompact":
        summary = payload.get("compact_summary") or payload.get("summary")
        meta = {"trigger": payload.get("trigger")}
        if not isinstance(summary, str) or not shown_summary(summary):
            return [compaction_item(meta, None, src, timestamp)]
        shown = shown_summary(summary)  # as the transcript keeps it: one fact whichever path brings it
        return [compaction_item(meta, shown, src.model_copy(update={"record": compaction_key(shown)}), timestamp)]
    if event == "SubagentStop" and not payload.get("agent_type"):
        return []  # Claude Code's own helper (the compaction's summariser, whose words PostCompact brings)
    if event == "SubagentStop":
        # What a sub-agent reported back is the fact its stop carries, keyed by the agent and its report as the
        # transcript's notification of it is (``subagents``); a payload without the agent's id keeps its row.
        said = payload.get("last_assistant_message")
        report = said if isinstance(said, str) else None
        agent_id = payload.get("agent_id")
        known = src.model_copy(update={"record": subagents.key(str(agent_id), report)}) if agent_id else src
        return [subagents.stopped(str(payload.get("agent_type") or ""), report, actor, known, timestamp)]
    if event in ("PreCompact", "Stop", "SessionEnd"):
        detail = payload.get("trigger") or payload.get("reason") or payload.get("agent_type") or ""
        said = payload.get("last_assistant_message")
        label = {"PreCompact": "before compaction", "Stop": "agent stopped", "SessionEnd": "session ended"}[str(event)]
        items: list[Item] = [
            (
                ev.CheckpointMarked,
                {
                    "label": f"{label} ({detail})" if detail else label,
                    "note": None,
                    "actor": actor,
                    "source": src,
                    "timestamp": timestamp,
                },
            )
        ]
        if event == "Stop" and actor == ACTOR and isinstance(said, str) and said.strip() not in SYNTHETIC_REPLIES:
            items.append(reply_item(said, actor, session, timestamp))
        return items
    return []
