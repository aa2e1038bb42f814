"""The continuation brief: task state rendered for whoever picks the task up next.

Ordered by what an agent needs first: the goal and current requirements, the
corrections, what failed and why, decisions, files changed, last results, where it
stopped, and the next step. It is task state, never a replay of chat.

With a character budget, lines are dropped least-useful first (each line carries a
priority) and the brief says what it dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from projections.state import TaskState

# Higher keeps longer; the order follows what an agent needs first. The goal, status
# and next step are never dropped.
KEEP = 100
REQUIREMENT, CORRECTION, IN_PROGRESS, FAILED, DECISION, STOPPED = 70, 65, 62, 55, 50, 45
MID, LOW, LEAST = 40, 20, 10


@dataclass(frozen=True)
class Line:
    section: str
    text: str
    priority: int


def _clip(text: str, width: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _older(add: Callable[[str, str, int], None], section: str, total: int, shown: int, event_type: str) -> None:
    """Say how many older items the state's recent window left out, and where to find them."""
    if total > shown:
        add(section, f"- ({total - shown} earlier in the log: trail log --type {event_type})", LEAST)


def lines(state: TaskState) -> list[Line]:
    """Every line the brief could hold, in reading order."""
    out: list[Line] = []

    def add(section: str, text: str, priority: int) -> None:
        out.append(Line(section, text, priority))

    status = state.status + (f" ({state.status_reason})" if state.status_reason else "")
    add("goal", f"# Task #{state.number} {state.title} [{status}]", KEEP)

    if state.requirements:
        add("requirements", "## Requirements (current wording)", REQUIREMENT)
        for r in state.requirements:
            changed = " (reworded)" if r.history else ""
            add("requirements", f"- [{r.position}] {_clip(r.text)}{changed}", REQUIREMENT)
        _older(add, "requirements", state.counts.get("RequirementStated", 0), len(state.requirements),
               "RequirementStated")

    if state.corrections:
        add("corrections", "## Corrections (the agent had these wrong)", CORRECTION)
        for c in state.corrections:
            wrong = f" (was: {_clip(c.wrong, 120)})" if c.wrong else ""
            add("corrections", f"- [{c.position}] {_clip(c.text)}{wrong}", CORRECTION)
        _older(add, "corrections", state.counts.get("CorrectionMade", 0), len(state.corrections), "CorrectionMade")

    ended = [a for a in state.attempts if a.outcome in ("failed", "abandoned")]
    if ended:
        add("failed", "## Tried and did not work", FAILED)
        # The latest failures matter most: older ones drop first.
        for i, a in enumerate(ended):
            why = f": {_clip(a.reason)}" if a.reason else ""
            latest = i >= len(ended) - 3
            add("failed", f"- [{a.position}] {str(a.outcome).upper()} {_clip(a.text, 160)}{why}",
                FAILED if latest else MID)
        _older(add, "failed", state.attempts_failed, len(ended), "AttemptEnded")

    if state.open_attempt is not None:
        current = next(a for a in state.attempts if a.position == state.open_attempt)
        add("attempt", f"## In progress\n- [{current.position}] {_clip(current.text)}", IN_PROGRESS)

    if state.decisions:
        add("decisions", "## Decisions", DECISION)
        for d in state.decisions:
            reason = f" because {_clip(d.reason, 160)}" if d.reason else ""
            rejected = f" (rejected: {', '.join(d.rejected)})" if d.rejected else ""
            add("decisions", f"- [{d.position}] {_clip(d.text)}{reason}{rejected}", DECISION)
        _older(add, "decisions", state.counts.get("DecisionRecorded", 0), len(state.decisions), "DecisionRecorded")

    if state.files:
        add("files", f"## Files changed ({len(state.files)})", LOW + 5)
        recent = list(state.files.values())[::-1]
        for i, f in enumerate(recent):
            times = f", {f.changes} changes" if f.changes > 1 else ""
            add("files", f"- {f.path} ({f.operation}{times}, last at [{f.position}])", LOW + (5 if i < 10 else 0))

    failing_tests = [t for t in state.tests.values() if t.outcome in ("failed", "error")]
    if state.commands or state.tests:
        add("results", "## Last results", LOW + 5)
        for t in failing_tests:
            message = f": {_clip(t.message, 160)}" if t.message else ""
            add("results", f"- test {t.name} {t.outcome.upper()} [{t.position}]{message}", MID)
        passing = len(state.tests) - len(failing_tests)
        if passing:
            add("results", f"- {passing} test(s) passing", LEAST)
        commands = state.commands[-5:]
        for i, cmd in enumerate(commands):
            code = "?" if cmd.exit_code is None else str(cmd.exit_code)
            last = i == len(commands) - 1
            add("results", f"- $ {_clip(cmd.line, 160)} -> exit {code} [{cmd.position}]", LOW + (10 if last else i))
            if cmd.exit_code not in (0, None) and cmd.output_tail:
                tail = "\n".join(f"    {line}" for line in cmd.output_tail.splitlines()[-3:])
                add("results", tail, LOW if last else LEAST)
        failed = state.last_failed_command
        if failed is not None and failed not in commands:
            # The latest failure is what a continuation most needs, even when later commands passed.
            line = f"- last failure: $ {_clip(failed.line, 160)} -> exit {failed.exit_code} [{failed.position}]"
            add("results", line, MID)
        if state.commands_total > len(commands):
            add("results", f"- ({state.commands_total} commands in all, {state.commands_failed} failed)", LEAST)

    add("stopped", "## Where it stopped", STOPPED)
    if state.checkpoints:
        cp = state.checkpoints[-1]
        git = f" at git {cp.git_head[:10]}{' (dirty)' if cp.git_dirty else ''}" if cp.git_head else ""
        note = f": {_clip(cp.note, 160)}" if cp.note else ""
        add("stopped", f"- checkpoint '{cp.label}'{git} [{cp.position}]{note}", STOPPED)
    when = state.updated_at.strftime("%Y-%m-%d %H:%M UTC") if state.updated_at else "never"
    add("stopped", f"- last event [{state.position}] at {when}", STOPPED)
    for n in state.notes[-3:]:
        add("stopped", f"- note [{n.position}]: {_clip(n.text, 160)}", LEAST)

    step = _clip(state.next_step, 400) if state.next_step else "(none recorded: set one with `trail next`)"
    add("next", f"## Next step\n{step}", KEEP)
    return out


def render(state: TaskState, max_chars: int | None = None) -> str:
    """The brief as text, within ``max_chars`` when given (lowest-priority lines drop first)."""
    candidates = lines(state)
    kept = list(candidates)
    dropped: dict[str, int] = {}

    def size(selection: list[Line], note: str) -> int:
        return sum(len(line.text) + 1 for line in selection) + len(note)

    def note_for(counts: dict[str, int]) -> str:
        if not counts:
            return ""
        parts = ", ".join(f"{n} {section}" for section, n in counts.items())
        return f"\n[brief cut to fit {max_chars} chars: dropped {parts} line(s)]"

    if max_chars is not None:
        # Drop the lowest priority first; among equals, the earliest (oldest) line first.
        order = sorted(
            (i for i, line in enumerate(candidates) if line.priority < KEEP),
            key=lambda i: (candidates[i].priority, i),
        )
        removed: set[int] = set()
        for i in order:
            if size(kept, note_for(dropped)) <= max_chars:
                break
            removed.add(i)
            if not candidates[i].text.startswith("## "):
                dropped[candidates[i].section] = dropped.get(candidates[i].section, 0) + 1
            kept = [line for j, line in enumerate(candidates) if j not in removed]
        # A section heading with none of its lines left says nothing.
        sections_with_items = {line.section for line in kept if not line.text.startswith("## ")}
        kept = [line for line in kept if not line.text.startswith("## ") or line.section in sections_with_items
                or "\n" in line.text]
    text = "\n".join(line.text for line in kept) + note_for(dropped)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(0, max_chars - 1)] + "…"
    return text
