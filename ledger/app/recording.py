"""What each kind of record appends: the one mapping from a fact someone records to its event.

Shared by the `trail` record commands (``cli/record.py``) and the MCP server's ``record`` tool
(``cli/mcp.py``). This module checks what a record needs on its own (the kind exists, each field
belongs to the kind, a failed attempt says why); the Task aggregate checks the rules that involve
the task's state (an attempt must be open to end, a requirement must exist to be reworded), and
the event catalogue checks the values (``ledger.domain.events``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ledger.base.errors import BadInput

if TYPE_CHECKING:
    from ledger.domain import events as ev

Kind = Literal[
    "requirement", "correction", "decision", "attempt_start", "attempt_end", "next_step", "note", "checkpoint"
]
KINDS: tuple[str, ...] = get_args(Kind)

Outcome = Literal["failed", "succeeded", "abandoned"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)

FIELDS: dict[str, tuple[str, ...]] = {
    "requirement": ("text", "replaces"),
    "correction": ("text", "wrong"),
    "decision": ("text", "reason", "rejected"),
    "attempt_start": ("text",),
    "attempt_end": ("outcome", "reason"),
    "next_step": ("text",),
    "note": ("text",),
    "checkpoint": ("label", "note"),
}
"""The fields each kind takes; the first is required (``reason`` too when an attempt failed)."""


def check_reason(reason: str | None, required: bool = False, why: str = "") -> str | None:
    """A reason, when given, says something; ``required`` says one must be given (``why``: when)."""
    if reason is None:
        if required:
            raise BadInput(f"reason: required{why}")
        return None
    if not reason.strip():
        raise BadInput("reason: must not be empty")
    return reason


def event(kind: str, cwd: str | Path | None = None, **given: Any) -> tuple[type[ev.TaskEvent], dict[str, Any]]:
    """The event class and fields (no actor) that a ``kind`` record with ``given`` fields appends.

    Fields left out may be passed as None (or an empty ``rejected``). ``cwd`` is where a checkpoint
    reads git HEAD and the dirty state (default: the process's working directory).
    """
    from ledger.domain import (
        events as ev,  # here, not at import: `trail mcp` names the kinds before it loads the ledger
    )

    if kind not in FIELDS:
        raise BadInput(f"kind {kind!r}: expected one of {', '.join(KINDS)}")
    given = {k: v for k, v in given.items() if v is not None and not (k == "rejected" and not v)}
    takes = FIELDS[kind]
    stray = [k for k in given if k not in takes]
    if stray:
        raise BadInput(f"{stray[0]}: not a field of a {kind} record (it takes {', '.join(takes)})")
    if takes[0] not in given:
        raise BadInput(f"{takes[0]}: required for a {kind} record")
    match kind:
        case "requirement":
            if "replaces" in given:
                return ev.RequirementChanged, {"text": given["text"], "supersedes": given["replaces"]}
            return ev.RequirementStated, {"text": given["text"]}
        case "correction":
            return ev.CorrectionMade, {"text": given["text"], "wrong": given.get("wrong")}
        case "decision":
            return ev.DecisionRecorded, {
                "text": given["text"], "reason": given.get("reason"), "rejected": tuple(given.get("rejected", ())),
            }
        case "attempt_start":
            return ev.AttemptStarted, {"text": given["text"]}
        case "attempt_end":
            outcome = given["outcome"]
            if outcome not in OUTCOMES:
                raise BadInput(f"outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
            reason = check_reason(given.get("reason"), required=outcome == "failed", why=" when an attempt failed")
            # attempt None: the aggregate ends the open attempt, or says there is none.
            return ev.AttemptEnded, {"attempt": None, "outcome": outcome, "reason": reason}
        case "next_step":
            return ev.NextStepSet, {"text": given["text"]}
        case "note":
            return ev.NoteAdded, {"text": given["text"]}
        case _:  # checkpoint
            from ledger.app.workspace import git_state

            head, dirty = git_state(Path(cwd) if cwd is not None else Path.cwd())
            return ev.CheckpointMarked, {
                "label": given["label"], "note": given.get("note"), "git_head": head, "git_dirty": dirty,
            }
