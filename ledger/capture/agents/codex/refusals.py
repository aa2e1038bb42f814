"""How Codex words a call the user declined or interrupted: it writes these as the call's output."""

import re

REJECTED = re.compile(
    r"^\s*(?:(?:exec command|patch|command) rejected by (?:the )?user|aborted(?: by user)?\s*$)", re.I
)
