"""Classifying a user prompt as a new requirement, a change of the latest one, or a correction.

Before any rule, ``request_text`` drops what is not a request at all: text the agent put in the
user's turn (command echoes, their output, caveats, notifications: ``SYNTHETIC``) and slash commands
that carry no work (``/compact``, a command without arguments). And a bare nudge to go on ("Carry on
with the task.", "continue where you left off") or a question about where the work stands ("What is
left?") is a reply, never a requirement, wherever it comes.

The rules, in order (first match wins):

0. Text that is not the user's at all: output pasted without a word of the user's own (a log, a
   trace: ``projections.intent.pasted_output``) is kept as a note, wherever it comes.
1. The task's first prompt states a requirement.
2. A prompt that withdraws the latest requirement ("never mind, we'll look at it later", "forget
   that", "forget that, do X": ``projections.intent.withdrawal``) is a change of it (the fold
   withdraws it, or rewords it with what follows).
2a. A prompt right after the user interrupted the agent or rejected a tool use, or a request sent
   again (the same text came before in the task), is a correction.
2b. A short question that only asks for an answer ("what about edge cases?", "show me the JSON
   structure": ``projections.intent.question``) is kept as a note; pushback ("but why do you think
   X?", "do we even need X?") is not such a question.
3. A prompt that opens by negating or redirecting what the agent just did is a correction:
   "no", "don't", "stop", "wait", "that's wrong", "not what I ...", "you forgot/broke/missed ...",
   "why did you ...", "revert"/"undo", "it still fails", "this doesn't work" ... Also one whose
   opening sentence contradicts the agent without a leading cue word (after "oh", "ok", "hmm"
   and the like): "I said/asked for/told you ...", "you should(n't) ...", "instead of X, do Y",
   "why is it still ...", "the tests still fail", "it's still showing ...", "use X not Y",
   "we don't need ...", "remove the ... you added", "the redirect doesn't work", "are you sure",
   "it's a bad idea", "... is not acceptable", "we lost ...".
4. A prompt that opens by revising the goal is a change of the latest requirement:
   "actually", "instead", "on second thought", "scratch that", "change it/that to", "rather ...".
5. Anything else states a new requirement.

Rules look at the opening words and the opening sentence only (after IDE or reminder wrappers are
stripped), because a redirection leads the prompt; a "no" deep in a long request is rarely a
correction. The user
overrides any call with ``trail reclassify POSITION --as ...``.
"""

from __future__ import annotations

import re
from typing import Literal

from ledger.base.lazyregex import lazy
from projections.intent import acknowledgement, pasted_output, question, withdrawal

Kind = Literal["requirement", "change", "correction", "reply", "question", "output"]

_OPENING = 160
"""Characters of the prompt's opening that rules 3 and 4 look at."""

CORRECTION = lazy(
    r"""^\W*(?:
        no\b(?!\s+(?:need|problem|worries)) | nope\b | nah\b | stop\b | wait\b | hold\s+on\b | hmm+,?\s+no\b |
        (?:please\s+)?(?:don'?t|do\s+not|never)\b |
        (?:that|this|it)(?:'s|\s+is|\s+was)\s+(?:not|wrong|incorrect|broken) |
        (?:that|this|it)\s+(?:doesn'?t|does\s+not|didn'?t|did\s+not|isn'?t|won'?t)\s+(?:work|help|fix|do) |
        (?:it|that|this|the\s+\w+)\s+(?:still\s+)?(?:fails|failed|breaks|broke|crashes|errors) |
        still\s+(?:fails|failing|broken|not|doesn'?t|the\s+same) |
        not\s+what\s+I | wrong\b | incorrect\b |
        you\s+(?:forgot|missed|broke|didn'?t|did\s+not|shouldn'?t|should\s+not|removed|deleted|lost) |
        why\s+(?:did|are|would)\s+you | revert\b | undo\b | roll\s*back\b | put\s+(?:it|that)\s+back\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)

_LEAD = (
    r"^\W*(?:(?:oh|ok|okay|hmm+|well|ugh+|argh+|sorry|so|but|and|hey|uh+|um+|sigh|fgs|man|dude|wow|hm+)\b[\s,.!:;-]*)*"
)
"""Interjections a redirection may open with ("oh, ...", "ok so ..."); they carry no meaning of their own."""

_LEAD_RE = lazy(_LEAD, re.IGNORECASE)

_SUBJECT = r"(?:(?:the|this|that|it|your|my|our)\s+)?[\w.@/-]+(?:\s+[\w.@/-]+){0,2}?"

REDIRECT = lazy(
    _LEAD
    + r"""(?:
        I\s+(?:said|meant|told\s+you|asked\s+(?:you\s+)?(?:for|to)|wanted|never\s+(?:said|asked)|
            (?:did\s*n'?t|did\s+not)\s+(?:ask|want|say|mean|find|like|tell)|
            (?:do\s*n'?t|do\s+not)\s+(?:like|want|think\s+(?:that|this|it|so)))\b |
        I\s+(?:actually|really)\s+(?:do\s*n'?t|do\s+not)\s+like\b |
        (?:that|this|it|i[tr])(?:'?s|\s+is|\s+was)\s+
            (?:not\s+what|(?:a\s+)?bad\s+idea|not\s+(?:a\s+)?good\s+idea|not\s+(?:a|an|the)\b) |
        you\s+(?:should|shouldn'?t|should\s+not|need\s+to\s+(?:fix|revert|undo|remove)|were\s+supposed|
            keep\s+(?:doing|adding|using|breaking|making|ignoring)|ignored|still|again|changed|added|used|made|lost)\b |
        instead\s+of\b |
        why\s+(?:is|are|does|do|was|were)\s+"""
    + _SUBJECT
    + r"""\s+still\b |
        why\s+(?:is\s*n'?t|are\s*n'?t|does\s*n'?t|did\s*n'?t|wo\s*n'?t|has\s*n'?t|have\s*n'?t|not|the\s+hell)\b |
        """
    + _SUBJECT
    + r"""(?:'s|'re|\s+is|\s+are)?\s+still\s+
            (?:fail|fails|failing|failed|broken|not|doesn'?t|does\s+not|isn'?t|won'?t|showing|shows|there|the\s+same|
               wrong|empty|missing|happening|hangs|crash|crashes|crashing|returns|red|errors?|erroring|blank)\b |
        """
    + _SUBJECT
    + r"""\s+(?:does\s*n'?t|does\s+not|did\s*n'?t|did\s+not|is\s*n'?t|is\s+not|are\s*n'?t|wo\s*n'?t|ca\s*n'?t)\s+
            (?:work|working|load|loading|build|building|compile|compiling|run|running|render|rendering|pass|passing)\b |
        use\s+[\w.@/-]+(?:\s+[\w.@/-]+)?,?\s+not\s+ |
        (?:we|you|I)\s+(?:do\s*n'?t|do\s+not)\s+(?:need|want)\b |
        (?:please\s+)?(?:remove|delete|drop|get\s+rid\s+of|take\s+out)\b[^.?!\n]{0,100}?\byou(?:'ve)?\s+(?:just\s+)?
            (?:added|created|wrote|put|introduced|made)\b |
        are\s+you\s+sure\b | (?:we|you)\s+lost\b |
        [^.?!\n]{0,120}?\b(?:is|are)\s+(?:not\s+acceptable|unacceptable)\b |
        [^.?!\n]{0,120}?\bnot\s+what\s+I\s+(?:asked|wanted|meant|said)\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
"""Rule 3 without a leading cue word: the opening sentence contradicts or redirects the agent."""

CONTRAST = lazy(
    _LEAD + r"(?:it|that|this|i[tr])(?:'?s|\s+is)\s+not\s+[^.?!\n]{1,80}[.,;]\s*(?:it|that|this)(?:'?s|\s+is)\s",
    re.IGNORECASE,
)
"""Rule 3: "it's not X, it's Y" tells the agent it had the facts wrong."""

CHANGE = lazy(
    r"""^\W*(?:
        actually\b | instead\b | on\s+second\s+thought | scratch\s+that | rather\b |
        change\s+(?:it|that|this|the\s+\w+)\s+(?:to|so)\b | let'?s\s+(?:switch|change|go\s+with)\b |
        new\s+plan\b | forget\s+(?:that|it|about)\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)

_WRAPPERS = lazy(
    r"<(ide_opened_file|ide_selection|system-reminder)>.*?</\1>"
    # Claude Code follows a notification with its own line to the agent, no word of the user's.
    r"|<task-notification>.*?</task-notification>"
    r"(?:\s*(?:Read the output file to retrieve the result|Full transcript available at):[^\n]*)?"
    # An agent team's teammates speak to the lead in its user turn (Claude Code's agent teams).
    r"|<teammate-message\b[^>]*>.*?</teammate-message>",
    re.S,
)


def clean_prompt(text: str) -> str:
    """The prompt without the IDE and reminder wrappers Claude Code prefixes to it, and without the
    background tasks' notifications it puts in the user's turn (``<task-notification>…``): what is left
    is what the user typed, if anything."""
    return _WRAPPERS.sub("", text).strip()


def _first_sentence(text: str) -> str:
    """The text up to its first sentence end (``.``/``?``/``!`` before a blank, or a line break)."""
    match = re.search(r"[.?!](?:\s|$)|\n", text)
    return text[: match.start() + 1] if match else text


_ACK = lazy(
    r"^\W*(?:[a-z0-9]|y|yes|yep|yeah|no|ok(?:ay)?|sure|proceed|go(?:\s+ahead)?|continue|do\s+it|thanks?|thank\s+you|"
    r"thx|great|perfect|nice|cool|good|lgtm|looks\s+good|excellent(?:\s+work)?|awesome|well\s+done)"
    r"(?:[\s,!.]+(?:thanks?|thank\s+you|please|!|,)*)*\W*$",
    re.IGNORECASE,
)


_CONTINUE = lazy(
    r"""^\W*(?:(?:ok(?:ay)?|so|now|alright|right|good|great|thanks?|yes)\b[\s,.!]*)*(?:please\s+)?
    (?:carry\s+on|keep\s+(?:going|working|on)|go\s+on|go\s+ahead|continue|proceed|resume|pick\s+(?:it\s+)?up|next|
        retry|try\s+again)
    (?:\s+(?:with|on|from|where|to))?
    (?:\s+(?:the|this|that|your|my|our))?
    (?:\s+(?:task|work|plan|job|it|implementation|next\s+(?:step|task)|same\s+task|previous\s+task))?
    (?:\s+(?:from\s+)?(?:where\s+)?(?:you|we|it)\s+(?:left\s+off|stopped|were))?
    (?:\s+(?:please|then))?[\s,.!]*(?:(?:please|thanks?|thank\s+you)[\s.!]*)?$""",
    re.IGNORECASE | re.VERBOSE,
)
"""A nudge to go on ("Carry on with the task.", "continue where you left off", "retry"): it names no work."""

_GREETING = lazy(r"^\W*(?:hi|hello|hey|howdy|good\s+(?:morning|afternoon|evening))(?:\s+there)?[\s,!.]*$",
                 re.IGNORECASE)
"""A greeting alone ("Hi"): says hello, asks for nothing."""

_STATUS = lazy(
    r"""^\W*(?:(?:ok(?:ay)?|so|and|now)\b[\s,]*)*
    (?:what(?:'s|\s+is|\s+else\s+is|\s+are)?\s+(?:left|next|remaining|still\s+(?:left|open|to\s+do)|the\s+status|
        the\s+next\s+step|left\s+to\s+do)(?:\s+(?:now|then))? |
       where\s+(?:are|were)\s+we(?:\s+at)? | how\s+far\s+(?:are|did)\s+(?:we|you)(?:\s+get)? |
       status | progress | any\s+progress | are\s+(?:we|you)\s+done | is\s+it\s+done |
       # "did you push?", "have you run the tests?": whether a step was taken, asked of the agent
       (?:did|have|has)\s+(?:you|we|it|that|this)\s+(?:already\s+)?
       (?:push|commit|merge|deploy|run|ran|test|build|built|release|publish|finish|open)(?:ed|ted|d)?
       (?:\s+(?:it|them|the|that|this|those|all|your|my|\w+s)){0,3}\s*\?)
    [\s?!.]*$""",
    re.IGNORECASE | re.VERBOSE,
)
"""A question about where the work stands ("What is left?"): asks for an answer, states nothing to do."""

SYNTHETIC = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
    "<task-notification>",
    "<teammate-message",
    "<user_instructions>",
    "<environment_context>",
    "<turn_aborted>",
    "[Request interrupted by user",
    "Stop hook feedback:",
    "SubagentStop hook feedback:",
    "Operation stopped by hook:",
    "UserPromptSubmit operation blocked by hook:",
    "<user-prompt-submit-hook>",
)
"""Openings of text an agent puts in the user's turn itself (command echoes and their output, caveats,
notifications, injected context, interrupt markers, a hook's feedback): Claude Code's and Codex's.
Never a request."""

SESSION_COMMANDS = frozenset({
    "add-dir", "agents", "bug", "clear", "compact", "config", "context", "cost", "doctor", "effort", "exit",
    "export", "fast", "help", "hooks", "ide", "init-verifiers", "login", "logout", "mcp", "memory", "model", "new",
    "output-style", "permissions", "plugin", "privacy-settings", "quit", "release-notes", "rename", "resume",
    "rewind", "status", "statusline", "tasks", "terminal-setup", "theme", "todos", "upgrade", "usage", "vim", "diff",
    "mention", "approvals", "fork", "undo",
})
"""Slash commands of the agents (Claude Code's and Codex's) that steer the session and do no work of
the task, whatever their arguments: ``/compact keep the API notes`` is not a requirement."""

_SLASH = lazy(r"^/([A-Za-z][\w:.-]*)(?:\s+(.*))?\Z", re.S)
_WRAPPED = lazy(
    r"<command-name>\s*/?([\w:.-]+)\s*</command-name>.*?(?:<command-args>(.*?)</command-args>|\Z)", re.S
)


def slash_request(text: str) -> str | None:
    """What a prompt that is a slash command asks for: ``/name args`` for a command given work (a custom
    command, a skill: ``/orchestrator create TODO app``), "" for one that carries none (no arguments,
    or a session command such as ``/compact``). None when the prompt is not a slash command.

    Reads both forms: as typed (the hooks' ``prompt``) and as Claude Code's transcript wraps it
    (``<command-name>/x</command-name>…<command-args>…</command-args>``), so both give the same text."""
    stripped = text.strip()
    match = _WRAPPED.search(stripped) if stripped.startswith("<command-") else _SLASH.match(stripped)
    if match is None:
        return None
    name, args = match.group(1), " ".join((match.group(2) or "").split())
    if not args or name.lower() in SESSION_COMMANDS:
        return ""
    return f"/{name} {args}"


PROMPT_COMMANDS = frozenset({"init", "review", "security-review", "pr-comments"})
"""Claude Code's own slash commands that do work by a fixed prompt ("/init": "Please analyze this codebase and
create a CLAUDE.md file, ..."). A custom command's template is its author's boilerplate, not the request."""


def bare_command(text: str) -> str | None:
    """The name of one of ``PROMPT_COMMANDS`` typed without arguments: its work is in the prompt it expands to,
    which Claude Code writes as the next user record (``isMeta``). None for anything else."""
    stripped = clean_prompt(text)
    match = _WRAPPED.search(stripped) if stripped.startswith("<command-") else _SLASH.match(stripped)
    if match is None or " ".join((match.group(2) or "").split()) or match.group(1).lower() not in PROMPT_COMMANDS:
        return None
    return match.group(1)


_TASK_NOTICE = lazy(r'^\{\s*"task_id"\s*:\s*"')
"""A background task's notice as Claude Code queues it in the user's turn (``{"task_id": …, "task_type":
"local_bash"}``)."""
_CLEAR = lazy(r"^\s*(?:/?clear|<command-name>\s*/clear\s*</command-name>.*)\s*\Z", re.S | re.I)


def clears(text: str) -> bool:
    """Whether the prompt clears the conversation: ``/clear`` (as typed, or as the transcript wraps it), or the
    word "clear" alone, typed without its slash (nothing for the agent to do but what /clear does)."""
    return _CLEAR.match(text) is not None


def request_text(text: str) -> str | None:
    """The prompt as a request to classify (its wrappers stripped), or None when it is none: synthetic
    text the agent put in the user's turn, or a slash command that carries no work (``slash_request``)."""
    cleaned = clean_prompt(text)
    if _TASK_NOTICE.match(cleaned) and '"task_type"' in cleaned:
        return None  # a background task's notice, queued in the user's turn as JSON: no word of the user's
    command = slash_request(cleaned)
    if command is not None:
        return command or None
    return None if not cleaned or cleaned.startswith(SYNTHETIC) else cleaned


def classify(text: str, *, first: bool, after_interrupt: bool = False, resent: bool = False) -> Kind:
    """Which kind of user intent ``text`` is; see the module docstring for the rules. ``resent``: the same
    request came before in the task (sent again after an interrupt, or because the agent missed it)."""
    if len(text) <= 200 and any(rule.match(clean_prompt(text)) for rule in (_CONTINUE, _STATUS, _GREETING)):
        return "reply"  # "Carry on with the task.", "What is left?", "Hi": even as a first prompt, nothing new
    if pasted_output(clean_prompt(text)):
        return "output"  # a log or a trace with no word of the user's: what they saw, not what they ask
    if first:
        return "requirement"
    if _ACK.match(clean_prompt(text)[:80]) or acknowledgement(clean_prompt(text)):
        # "proceed", "thanks!", "Thanks, that works", a menu letter: an answer to the agent, not a new requirement.
        return "reply"
    if withdrawal(clean_prompt(text)) is not None:
        return "change"  # the fold withdraws the latest requirement, or rewords it with what follows
    if after_interrupt or resent:
        return "correction"
    if question(clean_prompt(text)):
        return "question"  # "what about edge cases?", "show me the JSON": asks for an answer, not for work
    opening = clean_prompt(text)[:_OPENING]
    if CORRECTION.match(opening) or CORRECTION.match(_LEAD_RE.sub("", opening, count=1)):
        return "correction"
    if REDIRECT.match(_first_sentence(opening)) or CONTRAST.match(opening):
        return "correction"
    if CHANGE.match(opening):
        return "change"
    return "requirement"
