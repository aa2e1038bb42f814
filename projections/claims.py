"""The agent's last claim against the log: "all tests pass" when the last test run failed, "I've created
CLAUDE.md" when no Write or Edit of it ran (pure).

The brief quotes the agent's last words; when the log says otherwise it must say so, so a fresh agent
reads the words as a claim, not as fact. Deterministic: the claim is read from the words' shape, the
contradiction from the failures and the files the fold keeps.
"""

from __future__ import annotations

import re

from ledger.base.lazyregex import lazy
from ledger.base.oneline import one_line
from projections.state import Failure, TaskState

_TESTS_PASS = lazy(
    r"""\b(?:all\s+(?:the\s+)?(?:\d+\s+)?(?:tests?|specs?|checks?)\s+(?:now\s+)?(?:pass|passed|passing|are\s+passing|
        succeed|succeeded|green)|(?:tests?|test\s+suite|suite|specs?|ci|checks?)\s+(?:now\s+|all\s+)?
        (?:pass(?:es|ed|ing)?|(?:is|are)\s+(?:now\s+)?(?:passing|green)|succeed(?:s|ed)?))\b""",
    re.IGNORECASE | re.VERBOSE,
)
_WORKS = lazy(
    r"""\b(?:(?:is|are|has\s+been|have\s+been)\s+(?:now\s+)?(?:fixed|working|resolved)|works\s+now|now\s+works|
        (?:build|compiles?|deploy(?:ment)?)\s+(?:now\s+)?(?:succeeds|succeeded|passes|passed|works|is\s+green)|
        (?:successfully|everything\s+works|all\s+(?:set|done|good)|is\s+complete|are\s+complete))\b""",
    re.IGNORECASE | re.VERBOSE,
)


_CREATED = lazy(
    r"""\bI(?:'ve|\s+have)\s+(?:now\s+|just\s+|also\s+|successfully\s+)?(?:created|written|added|made)\s+
        (?:(?:a|an|the|new|basic|initial|your|this|minimal|comprehensive)\s+)*[`'"*]*([\w./-]*\w\.\w{1,8})\b""",
    re.IGNORECASE | re.VERBOSE,
)
"""A claim to have made a file, named by its file name ("I've created a basic CLAUDE.md file")."""


def contradiction(state: TaskState) -> tuple[str, str] | None:
    """The agent's claim in its last words and what the log says against it: a claim that the tests pass
    against a test run (or command) still failing; a claim that the work is done or fixed against a failure
    the agent met after the user last spoke, still failing when it spoke; a claim to have created a file
    that no Write or Edit of the task touched."""
    reply = state.last_reply
    if reply is None:
        return None
    made = _not_made(state, reply.text)
    if made is not None:
        return made
    failing = [f for f in state.failures if f.key.startswith(("test:", "cmd:")) and f.failing]
    if not failing:
        return None
    text = reply.text
    claim = _TESTS_PASS.search(text)
    if claim is not None:
        tests = [f for f in failing if f.key.startswith("test:") or "test" in f.what]
        if tests:
            return claim.group(0), _failed(tests[-1])
    claim = _WORKS.search(text)
    since = state.last_intent or 0
    recent = [f for f in failing if f.position > since]
    if claim is not None and recent:
        return claim.group(0), _failed(recent[-1])
    return None


def _failed(failure: Failure) -> str:
    what = f"$ {one_line(failure.what, 120)}" if failure.key.startswith("cmd:") else one_line(failure.what, 120)
    return f"{what} failed at [{failure.position}] and has not passed since"


def _not_made(state: TaskState, text: str) -> tuple[str, str] | None:
    claim = _CREATED.search(text)
    if claim is None:
        return None
    name = claim.group(1).rsplit("/", 1)[-1]
    if any(path.rsplit("/", 1)[-1] == name for path in state.files):
        return None
    # The call that would have made it, when it failed or waits for permission, says why it is not there.
    blocked = [f for f in state.failures if f.failing and f.key.startswith(("tool:", "blocked:"))
               and name in f.what]
    why = (f" (its {one_line(blocked[-1].what.split(' ', 1)[0], 40)} at [{blocked[-1].position}] did not go through)"
           if blocked else "")
    return claim.group(0), f"no Write or Edit of {name} ran in this task{why}"
