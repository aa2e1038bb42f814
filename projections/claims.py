"""The agent's last claim against the log: "all tests pass" when the last test run failed (pure).

The brief quotes the agent's last words; when the log says otherwise it must say so, so a fresh agent
reads the words as a claim, not as fact. Deterministic: the claim is read from the words' shape, the
contradiction from the failures the fold keeps.
"""

from __future__ import annotations

import re

from ledger.base.lazyregex import lazy
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


def contradiction(state: TaskState) -> tuple[str, Failure] | None:
    """The agent's claim in its last words and the failure in the log that contradicts it: a claim that
    the tests pass against a test run (or command) still failing; a claim that the work is done or fixed
    against a failure the agent met after the user last spoke, still failing when it spoke."""
    reply = state.last_reply
    if reply is None:
        return None
    failing = [f for f in state.failures if f.key.startswith(("test:", "cmd:")) and f.resolved_at is None]
    if not failing:
        return None
    text = reply.text
    claim = _TESTS_PASS.search(text)
    if claim is not None:
        tests = [f for f in failing if f.key.startswith("test:") or "test" in f.what]
        if tests:
            return claim.group(0), tests[-1]
    claim = _WORKS.search(text)
    since = state.last_intent or 0
    recent = [f for f in failing if f.position > since]
    if claim is not None and recent:
        return claim.group(0), recent[-1]
    return None
