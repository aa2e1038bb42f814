"""The task report as text (`trail show` without --html): the state in the brief's sections, then every event.

Pure: the state and the task's events up to its position in, text out. The brief's own lines (no budget: the
whole of it) say where the task stands; the timeline after it is `trail log`'s, one line per event."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.domain import events as ev
from projections import brief, timeline
from projections.state import TaskState


def render(state: TaskState, events: Sequence[ev.TaskEvent], total: int | None = None) -> str:
    total = state.position if total is None else total
    where = f", as of event {state.position} of {total}" if state.position != total else ""
    width = max((len(e.actor) for e in events), default=0)
    lines = [
        brief.render(state),  # its heading names the task and its status
        "",
        f"## Timeline ({len(events)} events{where})",
        *(f"[{e.originator_version:>4}] {e.timestamp:%Y-%m-%d %H:%M:%S} {e.actor:<{width}} {timeline.summary(e)}"
          for e in events),
    ]
    return "\n".join(lines)
