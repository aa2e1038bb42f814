"""Classifying a user prompt as a new requirement, a change of the latest one, or a correction.

The rules, in order (first match wins):

1. The task's first prompt states a requirement.
2. A prompt right after the user interrupted the agent or rejected a tool use is a correction.
3. A prompt that opens by negating or redirecting what the agent just did is a correction:
   "no", "don't", "stop", "wait", "that's wrong", "not what I ...", "you forgot/broke/missed ...",
   "why did you ...", "revert"/"undo", "it still fails", "this doesn't work" ...
4. A prompt that opens by revising the goal is a change of the latest requirement:
   "actually", "instead", "on second thought", "scratch that", "change it/that to", "rather ...".
5. Anything else states a new requirement.

Rules look at the opening words only (after IDE or reminder wrappers are stripped), because a
redirection leads the prompt; a "no" deep in a long request is rarely a correction. The user
overrides any call with ``trail reclassify POSITION --as ...``.
"""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal["requirement", "change", "correction"]

_OPENING = 160
"""Characters of the prompt's opening that rules 3 and 4 look at."""

CORRECTION = re.compile(
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

CHANGE = re.compile(
    r"""^\W*(?:
        actually\b | instead\b | on\s+second\s+thought | scratch\s+that | rather\b |
        change\s+(?:it|that|this|the\s+\w+)\s+(?:to|so)\b | let'?s\s+(?:switch|change|go\s+with)\b |
        new\s+plan\b | forget\s+(?:that|it|about)\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)

_WRAPPERS = re.compile(r"<(ide_opened_file|ide_selection|system-reminder)>.*?</\1>", re.S)


def clean_prompt(text: str) -> str:
    """The prompt without the IDE and reminder wrappers Claude Code prefixes to it."""
    return _WRAPPERS.sub("", text).strip()


def classify(text: str, *, first: bool, after_interrupt: bool = False) -> Kind:
    """Which kind of user intent ``text`` is; see the module docstring for the rules."""
    if first:
        return "requirement"
    if after_interrupt:
        return "correction"
    opening = clean_prompt(text)[:_OPENING]
    if CORRECTION.match(opening):
        return "correction"
    if CHANGE.match(opening):
        return "change"
    return "requirement"
