"""Reading an agent's own compaction summary: the parts that say where the work stopped.

Claude Code's summaries are markdown with numbered sections ("## 7. Pending Tasks:",
"## 8. Current Work:", "## 9. Optional Next Step:"); Codex's are free text. Pure.
"""

from __future__ import annotations

import re

from ledger.base.lazyregex import lazy

_HEADING = lazy(
    r"^\s*(?:#{1,4}\s*)?(?:\d+\.\s*)?(?:\*\*)?([A-Za-z][A-Za-z /&-]{2,40}?)(?:\*\*)?:?\s*(?:\*\*)?\s*$"
)
WANTED = {
    "pending tasks": "Pending work",
    "pending": "Pending work",
    "current work": "Current work",
    "current state": "Current work",
    "optional next step": "Next step it meant to take",
    "next step": "Next step it meant to take",
    "next steps": "Next step it meant to take",
}


def sections(summary: str) -> dict[str, str]:
    """The wanted sections of ``summary`` by their label in the brief (empty sections left out)."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in summary.splitlines():
        match = _HEADING.match(line) if line.lstrip().startswith(("#", "**")) or line.rstrip().endswith(":") else None
        if match and (line.lstrip().startswith("#") or re.match(r"^\s*\d+\.\s", line) or line.rstrip().endswith(":")):
            title = match.group(1).strip().lower()
            current = WANTED.get(title)
            if current is not None:
                found.setdefault(current, [])
                continue
            if line.lstrip().startswith("#"):
                continue
        if current is not None:
            found[current].append(line)
    cleaned = {label: "\n".join(body).strip() for label, body in found.items()}
    return {label: text for label, text in cleaned.items() if text and text.lower() not in ("none", "none.", "n/a")}
