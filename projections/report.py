"""The task report: one self-contained HTML page of a task's state and history (`trail show --html`,
and each task's page under `trail serve`).

``render(state, events)`` is pure: the state (``projections.state``) and the task's events up to
that state's position in, an HTML string out. The page is a Jinja2 template
(``templates/report.html.j2``) rendered with autoescape on, so every string from the ledger (titles,
commands, outputs, diffs: hostile input) is escaped where it is written; the timeline's embedded JSON has
``<``, ``>`` and ``&`` as ``\\u`` escapes, which the script reads with ``JSON.parse`` and writes with
``textContent`` only. The agent's replies are Markdown rendered with raw HTML off (``projections.markup``).
The page needs nothing at view time: its CSS and script are inline, a Content-Security-Policy forbids every
fetch (a served page may fetch its own server's position, nothing else), and the activity chart is inline SVG.

Long texts are folded: a pasted blob (a log, a HAR file given as a correction) shows its first line with the
whole behind a ``<details>``, and a change's why chain quotes a requirement in one clipped line, not whole
under every diff. The timeline is the one part that grows with the task: its rows are a JSON array the
script renders a page at a time (``PAGE_ROWS``), so a 10,000-event task keeps a few hundred rows in the DOM.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from markupsafe import Markup

from ledger.domain import events as ev
from projections import facts, timeline, why
from projections.state import TaskState
from projections.templating import OUTPUT_CHARS, environment, static

PAGE_ROWS = 200
"""Timeline rows the page shows at once."""
CHART_BUCKETS = 48
CHANGES_PER_FILE = 5
"""A file's most recent changes shown with their diffs; `trail why PATH` lists the rest."""
DIFF_LINES = 400
"""Lines of one diff shown."""
DIFF_BUDGET = 800_000
"""Characters of diffs (as shown) in one report; past it, diffs are left out (their changes are still listed)."""
REPLIES = 20
"""The agent's earlier replies shown (newest first); the timeline lists every one."""


def _when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if at else ""


def _script_json(data: Any) -> Markup:
    """JSON safe inside a <script> element: no ``</script>``, no ``<!--``, whatever the strings hold. Markup,
    as it is put in: HTML's escapes would not be undone inside a script element."""
    text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


# -- the timeline's rows ------------------------------------------------------------------------------


def _flag(event: ev.TaskEvent, failed_attempts: set[int]) -> str:
    """The class a timeline row carries: what should stand out."""
    match event:
        case ev.CorrectionMade():
            return "corr"
        case ev.AttemptStarted():
            return "att-failed" if event.originator_version in failed_attempts else "att"
        case ev.AttemptEnded():
            return "fail" if facts.attempt_failed(event.outcome) else "ok"
        case ev.CommandRan():
            return "fail" if facts.command_ran(event).failed else ""
        case ev.TestResult():
            return "fail" if facts.tested(event).failing else "ok" if event.outcome == "passed" else ""
        case ev.ToolResult():
            return "" if event.ok else "fail"
        case ev.RequirementStated() | ev.RequirementChanged():
            return "req"
        case ev.DecisionRecorded():
            return "dec"
        case ev.CheckpointMarked():
            return "chk"
        case ev.FileChanged():
            return "file"
    return ""


def _rows(events: Sequence[ev.TaskEvent]) -> dict[str, Any]:
    """The timeline as data: rows, the sessions and attempts they are grouped by."""
    ended = {e.attempt: e for e in events if isinstance(e, ev.AttemptEnded)}
    failed = {pos for pos, end in ended.items() if facts.attempt_failed(end.outcome)}
    sessions: list[dict[str, Any]] = []
    by_key: dict[tuple[str, str], int] = {}
    attempts: dict[int, dict[str, Any]] = {}
    rows: list[list[Any]] = []
    session, attempt = -1, 0
    for event in events:
        if isinstance(event, ev.ConversationLinked):
            key = (event.agent, event.session_id)
            if key not in by_key:
                by_key[key] = len(sessions)
                sessions.append({"agent": event.agent, "id": event.session_id, "at": event.originator_version})
            session = by_key[key]
        elif isinstance(event, ev.AttemptStarted):
            attempt = event.originator_version
            end = ended.get(attempt)
            attempts[attempt] = {"text": event.text, "outcome": end.outcome if end else None,
                                 "reason": end.reason if end else None, "failed": attempt in failed}
        group = by_key.get((event.source.agent, event.source.session), session) if event.source else session
        rows.append([event.originator_version, _when(event.timestamp), event.actor, type(event).__name__,
                     timeline.summary(event), _flag(event, failed), group, attempt])
        if isinstance(event, ev.AttemptEnded) and event.attempt == attempt:
            attempt = 0
    return {"rows": rows, "sessions": sessions, "attempts": attempts, "page": PAGE_ROWS,
            "types": sorted({type(event).__name__ for event in events})}




# -- the activity chart --------------------------------------------------------------------------------


def _chart(events: Sequence[ev.TaskEvent], failed_attempts: set[int]) -> dict[str, Any] | None:
    """The chart's bars: events per interval, failures among them."""
    if not events:
        return None
    start, end = events[0].timestamp, max(event.timestamp for event in events)
    span = max((end - start).total_seconds(), 1.0)
    counts = [0] * CHART_BUCKETS
    fails = [0] * CHART_BUCKETS
    for event in events:
        i = min(int((event.timestamp - start).total_seconds() / span * CHART_BUCKETS), CHART_BUCKETS - 1)
        i = max(i, 0)
        counts[i] += 1
        if _flag(event, failed_attempts) in ("fail", "att-failed"):
            fails[i] += 1
    top = max(counts) or 1
    width, height, bar = 720, 90, 720 / CHART_BUCKETS
    bars = []
    for i, (n, f) in enumerate(zip(counts, fails, strict=True)):
        if not n:
            continue
        h, fh = n / top * height, f / top * height
        begin = start.timestamp() + span * i / CHART_BUCKETS
        bars.append({"x": f"{i * bar + 1:.1f}", "y": f"{height - h:.1f}", "w": f"{bar - 2:.1f}", "h": f"{h:.1f}",
                     "fy": f"{height - fh:.1f}", "fh": f"{fh:.1f}" if f else "",
                     "label": f"{n} events ({f} failures) from {_when(datetime.fromtimestamp(begin, UTC))}"})
    return {"width": width, "height": height, "bars": bars, "start": _when(start), "end": _when(end)}


# -- files and their diffs -----------------------------------------------------------------------------


def _diff(text: str) -> tuple[list[tuple[str, str]], int]:
    """A diff's lines with their class (hunk, meta, added, deleted, context), and how many were left out."""
    lines = text.splitlines()
    shown = [("h" if line.startswith("@@") else "m" if line.startswith(("+++", "---"))
              else "a" if line.startswith("+") else "d" if line.startswith("-") else "c", line)
             for line in lines[:DIFF_LINES]]
    return shown, max(len(lines) - DIFF_LINES, 0)


def _file_changes(events: Sequence[ev.TaskEvent]) -> dict[str, list[why.Change]]:
    """Each path's recorded changes with their `why` chain, oldest first: ``why.changes`` over only the events
    that a path's changes point at (one pass over the task, not one per file)."""
    by_position = {event.originator_version: event for event in events}
    ended = {event.attempt: event for event in events if isinstance(event, ev.AttemptEnded)}
    opened = [event for event in events if isinstance(event, ev.TaskOpened)]
    per_path: dict[str, list[ev.FileChanged]] = {}
    for event in events:
        if isinstance(event, ev.FileChanged):
            per_path.setdefault(event.path, []).append(event)
    found = {}
    for path, changed in per_path.items():
        cited = {p for c in changed if c.because for p in (c.because.attempt, c.because.decision, c.because.intent)
                 if p}
        related = [*opened, *changed, *(by_position[p] for p in cited if p in by_position),
                   *(ended[p] for p in cited if p in ended)]
        related.sort(key=lambda event: event.originator_version)
        found[path] = [c for c in why.changes(related, path) if c.path == path]
    return found


def _files(state: TaskState, events: Sequence[ev.TaskEvent]) -> list[dict[str, Any]]:
    """Each file, most recently changed first, with its last changes; their diffs under ``DIFF_BUDGET``."""
    budget = DIFF_BUDGET
    blocks = []
    every = _file_changes(events)
    for touch in sorted(state.files.values(), key=lambda f: f.position, reverse=True):
        changes = every.get(touch.path, [])
        shown = list(reversed(changes))[:CHANGES_PER_FILE]
        items = []
        for c in shown:
            lines: list[tuple[str, str]] | None = None
            more = 0
            if c.diff and budget > 0:
                lines, more = _diff(c.diff)
                budget -= sum(len(line) + 24 for _, line in lines)  # about as shown, markup included
            items.append({"change": c, "diff": lines, "more": more})
        blocks.append({"touch": touch, "changes": items, "earlier": len(changes) - len(shown)})
    return blocks


# -- the page ------------------------------------------------------------------------------------------

NAV = (("activity", "Activity"), ("requirements", "Requirements"), ("corrections", "Corrections"),
       ("attempts", "Attempts"), ("plan", "Plan"), ("last-words", "Where it stopped"), ("files", "Files"),
       ("commands", "Commands"), ("tests", "Tests"), ("checkpoints", "Checkpoints"), ("timeline", "Timeline"))
MARKS = {"completed": "✓", "in_progress": "▶", "pending": "○"}


def _test_counts(t: Any) -> str:
    return ", ".join(f"{n} {label}" for n, label in ((t.passed, "passed"), (t.failed, "failed"),
                                                    (t.errors, "errors"), (t.skipped, "skipped")) if n is not None)


def render(state: TaskState, events: Sequence[ev.TaskEvent], total: int | None = None, live: str | None = None) -> str:
    """The report of ``state``, whose events (up to its position) are ``events``; ``total`` is the task's
    last position when the report shows an earlier point. ``live`` is the path a served page polls for the
    task's position (``trail serve``): the page then loads its new data when the task grows."""
    events = [event for event in events if event.originator_version <= state.position]
    data = _rows(events)
    failed = {int(p) for p, a in data["attempts"].items() if a["failed"]}
    replies = [event for event in events if isinstance(event, ev.AgentReplied)]
    earlier = [{"position": r.originator_version, "at": r.timestamp, "text": r.text.tail[-OUTPUT_CHARS:]}
               for r in reversed(replies) if not state.last_reply or r.originator_version != state.last_reply.position]
    chart = _chart(events, failed)
    files = _files(state, events)
    tests = sorted(state.tests.values(), key=lambda t: t.position, reverse=True)
    present = {"activity": chart is not None, "requirements": bool(state.requirements),
               "corrections": bool(state.corrections), "attempts": bool(state.attempts), "plan": state.plan is not None,
               "last-words": bool(state.last_reply or state.compaction or earlier), "files": bool(files),
               "commands": bool(state.commands or state.failures), "tests": bool(tests),
               "checkpoints": bool(state.checkpoints), "timeline": True}
    return environment().get_template("report.html.j2").render(
        state=state, total=total or state.position, live=live, chart=chart, files=files, tests=tests,
        replies=earlier[:REPLIES], replies_total=len(earlier), types=data["types"], data=_script_json(data),
        nav=[(ident, label) for ident, label in NAV if present[ident]], marks=MARKS,
        failing_tests=sum(1 for t in state.tests.values() if t.outcome in ("failed", "error")),
        attempt_failed=facts.attempt_failed, command_failed=facts.command_failed, test_counts=_test_counts,
        css=static("report.css"), script=static("report.js"), live_script=static("live.js"),
    ) + "\n"
