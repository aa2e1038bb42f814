"""How agents word a tool call the user refused or interrupted, or that was never allowed to run.

One home for the wording, read by the mappers (such a call is no command and no failure) and by the
state fold (it is not listed as failing). Claude Code's words; Codex's own are in its mapper.
"""

STOPPED = "The user doesn't want to"
"""Every wording of a rejection starts so ("…to proceed with this tool use", "…to take this action right now")."""
INTERRUPTED = "[Request interrupted by user"
ABORTED = "Permission prompt was aborted"
"""The user left the permission prompt of a call (an interrupt while it asked): stopped, as a rejection is."""
NOT_RUN = ("requires approval", "haven't granted it yet", "was blocked. For security")
"""Claude Code's permission refusals: the call never ran, so it has no outcome to record as a failure."""
