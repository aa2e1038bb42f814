"""The task report: one self-contained HTML page of a task's state and history (`trail show --html`).

``render(state, events)`` is pure: the state (``projections.state``) and the task's events up to
that state's position in, an HTML string out. The page needs nothing at view time: its CSS and
script are inline, a Content-Security-Policy forbids every fetch, and the activity chart is inline
SVG. Every string from the ledger is escaped (titles, commands, outputs and diffs are hostile
input): into HTML by ``html.escape``; into the timeline's embedded JSON with ``<``, ``>`` and ``&``
as ``\\u`` escapes, which the script reads with ``JSON.parse`` and writes with ``textContent`` only.

The timeline is the one part that grows with the task: its rows are a JSON array the script
renders a page at a time (``PAGE_ROWS``), so a 10,000-event task keeps a few hundred rows in the
DOM. The other sections show the state's own windows (recent commands, checkpoints, files...),
with each file's recorded changes, diffs and `why` chain under a total diff budget.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from ledger.domain import events as ev
from projections import facts, timeline, why
from projections.state import TaskState

PAGE_ROWS = 200
"""Timeline rows the page shows at once."""
CHART_BUCKETS = 48
CHANGES_PER_FILE = 5
"""A file's most recent changes shown with their diffs; `trail why PATH` lists the rest."""
DIFF_LINES = 400
"""Lines of one diff shown."""
DIFF_BUDGET = 800_000
"""Characters of diffs (as shown) in one report; past it, diffs are left out (their changes are still listed)."""
OUTPUT_CHARS = 4000


def e(value: object) -> str:
    """``value`` as HTML text (or a quoted attribute value)."""
    return html.escape("" if value is None else str(value), quote=True)


def _when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") if at else ""


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element: no ``</script>``, no ``<!--``, whatever the strings hold."""
    text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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


def _chart(events: Sequence[ev.TaskEvent], failed_attempts: set[int]) -> str:
    if not events:
        return ""
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
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height + 18}" width="100%" role="img" '
             f'aria-label="events over time">']
    for i, (n, f) in enumerate(zip(counts, fails, strict=True)):
        if not n:
            continue
        h = n / top * height
        fh = f / top * height
        x = i * bar
        begin = start.timestamp() + span * i / CHART_BUCKETS
        label = f"{n} events ({f} failures) from {_when(datetime.fromtimestamp(begin, UTC))}"
        parts.append(f'<g><title>{e(label)}</title>'
                     f'<rect x="{x + 1:.1f}" y="{height - h:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
                     f'class="bar"/>')
        if f:
            parts.append(f'<rect x="{x + 1:.1f}" y="{height - fh:.1f}" width="{bar - 2:.1f}" height="{fh:.1f}" '
                         f'class="bar-fail"/>')
        parts.append("</g>")
    parts.append(f'<text x="0" y="{height + 14}" class="axis">{e(_when(start))}</text>')
    parts.append(f'<text x="{width}" y="{height + 14}" class="axis" text-anchor="end">{e(_when(end))}</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- sections ------------------------------------------------------------------------------------------


def _section(ident: str, title: str, body: str, note: str = "") -> str:
    if not body:
        return ""
    extra = f' <span class="muted">{note}</span>' if note else ""
    return f'<section id="{ident}"><h2>{e(title)}{extra}</h2>{body}</section>'


def _pos(position: int | None) -> str:
    return f'<span class="pos">[{position}]</span>' if position else ""


def _header(state: TaskState, total: int) -> str:
    at = state.position != total
    where = (f'<div class="at-banner">As it was after event {state.position} of {total}</div>' if at else "")
    reason = f' <span class="muted">{e(state.status_reason)}</span>' if state.status_reason else ""
    origin = " (from the agent&#x27;s plan)" if state.next_step_from == "plan" else ""
    step = (f'<div class="next"><b>Next step</b>{origin}: <span id="next-step">{e(state.next_step)}</span></div>'
            if state.next_step
            else '<div class="next muted">No next step recorded.</div>')
    failing_tests = sum(1 for t in state.tests.values() if t.outcome in ("failed", "error"))
    facts_line = (f"{state.position} events · {len(state.requirements)} requirements · "
                  f"{len(state.corrections)} corrections · {state.attempts_failed} failed attempts · "
                  f"{state.commands_total} commands ({state.commands_failed} failed) · {len(state.files)} files · "
                  f"{failing_tests} tests failing · {state.checkpoints_total} checkpoints")
    return (f'<header>{where}<h1><span class="num">#{e(state.number)}</span> <span id="task-title">{e(state.title)}'
            f'</span> <span class="status status-{e(state.status)}">{e(state.status)}</span>{reason}</h1>'
            f'{step}<div class="muted">{e(facts_line)}</div>'
            f'<div class="muted">opened {e(_when(state.opened_at))} · updated {e(_when(state.updated_at))}'
            f'{" · " + e(state.project) if state.project else ""}</div></header>')


def _requirements(state: TaskState) -> str:
    items = []
    for r in state.requirements:
        earlier = "".join(f'<li><del class="superseded">{e(old)}</del></li>' for old in r.history)
        changed = f' <span class="muted">reworded at [{r.changed_at}]</span>' if r.changed_at else ""
        items.append(f'<li class="req">{_pos(r.position)} <span class="current">{e(r.text)}</span>{changed}'
                     f'{f"<ul class=history>{earlier}</ul>" if earlier else ""}</li>')
    return f'<ul class="plain">{"".join(items)}</ul>' if items else ""


def _corrections(state: TaskState) -> str:
    items = [f'<li class="corr">{_pos(c.position)} {e(c.text)}'
             f'{f" <span class=muted>the agent had:</span> <del>{e(c.wrong)}</del>" if c.wrong else ""}</li>'
             for c in state.corrections]
    return f'<ul class="plain">{"".join(items)}</ul>' if items else ""


def _decisions(state: TaskState) -> str:
    items = []
    for d in state.decisions:
        reason = f' <span class="muted">because</span> {e(d.reason)}' if d.reason else ""
        rejected = "".join(f' <del class="rejected">{e(r)}</del>' for r in d.rejected)
        items.append(f'<li>{_pos(d.position)} {e(d.text)}{reason}'
                     f'{f" <span class=muted>turned down:</span>{rejected}" if rejected else ""}</li>')
    return f'<ul class="plain">{"".join(items)}</ul>' if items else ""


def _attempts(state: TaskState) -> str:
    items = []
    for a in state.attempts:
        failed = facts.attempt_failed(a.outcome)
        outcome = a.outcome or ("in progress" if state.open_attempt == a.position else "open")
        reason = f": {e(a.reason)}" if a.reason else ""
        items.append(f'<li class="{"attempt-failed" if failed else "attempt"}" data-position="{a.position}">'
                     f'{_pos(a.position)} {e(a.text)} <span class="badge outcome-{e(outcome.replace(" ", "-"))}">'
                     f'{e(outcome)}</span>{reason}</li>')
    note = f"{state.attempts_failed} failed or abandoned" if state.attempts_failed else ""
    return _section("attempts", "Attempts", f'<ul class="plain">{"".join(items)}</ul>' if items else "", e(note))


def _plan(state: TaskState) -> str:
    if state.plan is None:
        return ""
    marks = {"completed": "✓", "in_progress": "▶", "pending": "○"}
    steps = "".join(f'<li class="step-{e(s.status)}"><span class="mark">{marks.get(s.status, "?")}</span> {e(s.text)}'
                    f"</li>" for s in state.plan.steps)
    return _section("plan", "Plan", f'<ol class="plain">{steps}</ol>', f"as of [{state.plan.position}]")


def _last_words(state: TaskState) -> str:
    parts = []
    if state.last_reply:
        parts.append(f'<h3>The agent&#x27;s last words {_pos(state.last_reply.position)}</h3>'
                     f'<pre class="wrap" id="last-words">{e(state.last_reply.text[-OUTPUT_CHARS:])}</pre>')
    if state.compaction:
        parts.append(f'<h3>Its own summary at the last compaction {_pos(state.compaction.position)}</h3>'
                     f'<pre class="wrap">{e(state.compaction.summary[-OUTPUT_CHARS:])}</pre>')
    return _section("last-words", "Where it stopped", "".join(parts))


def _output(text: str) -> str:
    return f'<details><summary>output</summary><pre>{e(text[-OUTPUT_CHARS:])}</pre></details>' if text else ""


def _commands(state: TaskState) -> str:
    rows = []
    for c in reversed(state.commands):
        code = "not reported" if c.exit_code is None else str(c.exit_code)
        cls = "fail" if facts.command_failed(c.exit_code) else ""
        took = f"{c.duration_ms} ms" if c.duration_ms is not None else ""
        rows.append(f'<tr class="{cls}"><td>{_pos(c.position)}</td><td><code>{e(c.line)}</code>{_output(c.output_tail)}'
                    f'</td><td class="exit">exit {e(code)}</td><td>{e(took)}</td><td>{e(_when(c.at))}</td></tr>')
    table = f'<table><tbody>{"".join(rows)}</tbody></table>' if rows else ""
    failures = []
    for f in reversed(state.failures):
        since = (f'<span class="badge outcome-succeeded">passes since [{f.resolved_at}]</span>' if f.resolved_at
                 else '<span class="badge outcome-failed">failing</span>')
        code = f" exit {f.exit_code}" if f.exit_code is not None else ""
        failures.append(f'<li class="{"" if f.resolved_at else "fail"}">{_pos(f.position)} <code>{e(f.what)}</code>'
                        f'{e(code)} {since}{_output(f.output_tail)}</li>')
    failing = f'<h3>Failures</h3><ul class="plain">{"".join(failures)}</ul>' if failures else ""
    note = (f"{state.commands_total} run, {state.commands_failed} failed, {state.read_only_commands} reads not listed;"
            f" the last {len(state.commands)} shown")
    return _section("commands", "Commands", table + failing if (table or failing) else "", e(note))


def _tests(state: TaskState) -> str:
    rows = []
    for t in sorted(state.tests.values(), key=lambda t: t.position, reverse=True):
        counts = ", ".join(f"{n} {label}" for n, label in ((t.passed, "passed"), (t.failed, "failed"),
                                                            (t.errors, "errors"), (t.skipped, "skipped"))
                           if n is not None)
        cls = "fail" if t.outcome in ("failed", "error") else ""
        rows.append(f'<tr class="{cls}"><td>{_pos(t.position)}</td><td><code>{e(t.name)}</code>'
                    f'{_output(t.message or "")}</td><td><span class="badge outcome-{e(t.outcome)}">{e(t.outcome)}'
                    f'</span></td><td>{e(counts)}</td><td>{e(_when(t.at))}</td></tr>')
    return _section("tests", "Tests", f'<table><tbody>{"".join(rows)}</tbody></table>' if rows else "",
                    e(f"{len(state.tests)} tests or targets, latest result each"))


def _checkpoints(state: TaskState) -> str:
    rows = []
    for c in reversed(state.checkpoints):
        dirty = "" if c.git_dirty is None else " (dirty)" if c.git_dirty else " (clean)"
        head = f"<code>{e(c.git_head[:12])}</code>{e(dirty)}" if c.git_head else ""
        rows.append(f'<tr><td>{_pos(c.position)}</td><td><b>{e(c.label)}</b></td><td>{head}</td>'
                    f'<td>{e(c.note)}</td><td>{e(_when(c.at))}</td></tr>')
    return _section("checkpoints", "Checkpoints", f'<table><tbody>{"".join(rows)}</tbody></table>' if rows else "",
                    e(f"{state.checkpoints_total} in all"))


def _notes(state: TaskState) -> str:
    items = [f"<li>{_pos(n.position)} {e(n.text)}</li>" for n in reversed(state.notes)]
    return _section("notes", "Notes", f'<ul class="plain">{"".join(items)}</ul>' if items else "")


def _diff(text: str) -> str:
    lines = text.splitlines()
    shown = lines[:DIFF_LINES]
    out = []
    for line in shown:
        cls = ("h" if line.startswith("@@") else "m" if line.startswith(("+++", "---"))
               else "a" if line.startswith("+") else "d" if line.startswith("-") else "c")
        out.append(f'<span class="{cls}">{e(line)}</span>')
    more = f'<span class="m">… {len(lines) - DIFF_LINES} more lines</span>' if len(lines) > DIFF_LINES else ""
    return f'<pre class="diff">{"".join(out)}{more}</pre>'


def _ref(label: str, ref: why.Ref | None) -> str:
    if ref is None:
        return ""
    detail = f' <span class="muted">({e(ref.detail)})</span>' if ref.detail else ""
    cls = "why-failed" if ref.kind == "attempt" and (ref.detail or "").startswith(("failed", "abandoned")) else ""
    return f'<li class="{cls}"><b>{e(label)}</b> {_pos(ref.position)} {e(ref.kind)}: {e(ref.text)}{detail}</li>'


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


def _files(state: TaskState, events: Sequence[ev.TaskEvent]) -> str:
    budget = DIFF_BUDGET
    blocks = []
    every = _file_changes(events)
    for i, touch in enumerate(sorted(state.files.values(), key=lambda f: f.position, reverse=True)):
        changes = every.get(touch.path, [])
        shown = list(reversed(changes))[:CHANGES_PER_FILE]
        items = []
        for c in shown:
            chain = "".join([_ref("attempt", c.attempt), _ref("decision", c.decision), _ref("because", c.intent)])
            if c.diff and budget > 0:
                diff = _diff(c.diff)
                budget -= len(diff)
                diff += ('<div class="muted">diff cut when recorded: its end is shown</div>'
                         if c.diff_truncated else "")
            elif c.diff_collected:
                diff = '<div class="muted">diff collected by trail compact --gc-artifacts</div>'
            elif c.diff:
                diff = f'<div class="muted">diff left out of this report (size); trail why {e(c.path)} shows it</div>'
            else:
                diff = '<div class="muted">no diff (binary or deleted)</div>'
            items.append(f'<li class="change">{_pos(c.position)} <b>{e(c.operation)}</b> {e(c.actor)} '
                         f'<span class="muted">{e(_when(c.at))}</span><ul class="why">{chain}</ul>{diff}</li>')
        earlier = len(changes) - len(shown)
        more = f'<div class="muted">{earlier} earlier changes: trail why {e(touch.path)}</div>' if earlier else ""
        blocks.append(f'<details class="file"{" open" if i == 0 else ""} data-path="{e(touch.path)}"><summary>'
                      f'<code>{e(touch.path)}</code> <span class="badge op-{e(touch.operation)}">{e(touch.operation)}'
                      f'</span> <span class="muted">{touch.changes} changes, last at [{touch.position}]</span>'
                      f'</summary><ul class="plain changes">{"".join(items)}</ul>{more}</details>')
    return _section("files", "Files", "".join(blocks), e(f"{len(state.files)} files, most recently changed first"))


def _timeline(data: dict[str, Any]) -> str:
    options = "".join(f'<option value="{e(t)}">{e(t)}</option>' for t in data["types"])
    return (
        '<section id="timeline"><h2>Timeline <span class="muted">grouped by session and attempt</span></h2>'
        '<div class="controls"><label>type <select id="tl-type"><option value="">all</option>'
        f'{options}</select></label> <label><input type="checkbox" id="tl-stand-out"> only failures, corrections '
        'and attempts</label> <label>find <input type="search" id="tl-find" placeholder="text"></label></div>'
        '<div class="pager" id="tl-pager" data-page="0" data-pages="0" data-total="0">'
        '<button type="button" id="tl-first">« first</button> '
        '<button type="button" id="tl-prev">&lsaquo; prev</button> '
        '<span id="tl-where"></span> <button type="button" id="tl-next">next &rsaquo;</button> '
        '<button type="button" id="tl-last">last »</button></div>'
        '<table class="timeline"><tbody id="tl-rows"></tbody></table>'
        '<noscript>The timeline needs JavaScript; trail log prints it.</noscript></section>'
    )


NAV = (("activity", "Activity"), ("requirements", "Requirements"), ("corrections", "Corrections"),
       ("attempts", "Attempts"), ("plan", "Plan"), ("last-words", "Where it stopped"), ("files", "Files"),
       ("commands", "Commands"), ("tests", "Tests"), ("checkpoints", "Checkpoints"), ("timeline", "Timeline"))


def render(state: TaskState, events: Sequence[ev.TaskEvent], total: int | None = None) -> str:
    """The report of ``state``, whose events (up to its position) are ``events``; ``total`` is the task's
    last position when the report shows an earlier point."""
    events = [event for event in events if event.originator_version <= state.position]
    data = _rows(events)
    failed = {int(p) for p, a in data["attempts"].items() if a["failed"]}
    sections = [
        _section("activity", "Activity over time", _chart(events, failed), "events per interval; failures in red"),
        _section("requirements", "Requirements", _requirements(state), "earlier wordings struck through"),
        _section("corrections", "Corrections", _corrections(state)),
        _section("decisions", "Decisions", _decisions(state)),
        _attempts(state),
        _plan(state),
        _last_words(state),
        _files(state, events),
        _commands(state),
        _tests(state),
        _checkpoints(state),
        _notes(state),
        _timeline(data),
    ]
    shown = [ident for ident, _ in NAV if any(part.startswith(f'<section id="{ident}">') for part in sections)]
    nav = "<nav>" + " ".join(f'<a href="#{ident}">{label}</a>' for ident, label in NAV if ident in shown) + "</nav>"
    body = _header(state, total or state.position) + nav + "".join(sections)
    title = f"#{state.number} {state.title}"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · tasktrail</title><style>{CSS}</style></head><body>{body}"
        f'<script type="application/json" id="tl-data">{_script_json(data)}</script>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )


CSS = """
:root{--fg:#1d232b;--muted:#6a7480;--line:#e3e7ec;--bg:#fff;--soft:#f5f7f9;--red:#c62828;--redbg:#fdecea;
--green:#2e7d32;--amber:#b26a00;--blue:#1f5fa8;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
body{margin:0 auto;max-width:1180px;padding:16px 24px 48px;color:var(--fg);background:var(--bg)}
h1{font-size:22px;margin:4px 0 8px}h2{font-size:17px;margin:0 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:14px;margin:12px 0 4px}
section{margin:22px 0}.muted{color:var(--muted);font-weight:normal;font-size:12.5px}
.num{color:var(--muted)}.pos{color:var(--muted);font:12px ui-monospace,monospace}
.status,.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;
background:var(--soft);border:1px solid var(--line);vertical-align:middle}
.status-active{color:var(--blue)}.status-done{color:var(--green)}.status-blocked{color:var(--red)}
.status-paused{color:var(--amber)}
.outcome-failed,.outcome-abandoned,.outcome-error{color:var(--red);background:var(--redbg);border-color:#f3c0bb}
.outcome-succeeded,.outcome-passed{color:var(--green)}.outcome-in-progress{color:var(--blue)}
.next{font-size:15px;background:#eef5ff;border-left:4px solid var(--blue);padding:6px 10px;margin:6px 0}
.at-banner{background:#fff4e0;border:1px solid #f0d199;padding:4px 10px;margin-bottom:6px;font-weight:600}
nav{position:sticky;top:0;background:var(--bg);padding:6px 0;border-bottom:1px solid var(--line);z-index:2}
nav a{margin-right:12px;color:var(--blue);text-decoration:none;font-size:13px}
ul.plain,ol.plain{list-style:none;padding-left:0;margin:0}ul.plain>li,ol.plain>li{padding:3px 0}
ul.history{list-style:none;padding-left:28px;margin:0}del{color:var(--muted)}
li.corr{border-left:4px solid var(--amber);padding-left:8px}
li.attempt-failed{border-left:4px solid var(--red);background:var(--redbg);padding-left:8px}
li.attempt{border-left:4px solid var(--line);padding-left:8px}
.step-completed{color:var(--muted)}.step-in_progress{font-weight:600}.mark{display:inline-block;width:1.2em}
pre{background:var(--soft);border:1px solid var(--line);padding:6px 8px;overflow:auto;max-height:420px;
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;margin:4px 0}pre.wrap{white-space:pre-wrap}
pre.diff span{display:block;min-height:1.4em}pre.diff .a{background:#e6ffec;color:#116329}
pre.diff .d{background:#ffebe9;color:#82071e}pre.diff .h{color:#6f42c1}pre.diff .m{color:var(--muted)}
table{border-collapse:collapse;width:100%}td{border-bottom:1px solid var(--line);padding:3px 6px;
vertical-align:top}tr.fail td{background:var(--redbg)}tr.fail .exit{color:var(--red);font-weight:600}
details.file{border:1px solid var(--line);border-radius:4px;margin:6px 0;padding:4px 8px}
details.file>summary{cursor:pointer}ul.why{margin:2px 0 2px 16px;padding:0;font-size:13px}
li.why-failed{color:var(--red)}li.change{border-top:1px dashed var(--line);padding-top:6px}
li.fail{color:var(--red)}
svg.chart{max-width:760px;display:block}svg .bar{fill:#8fb3de}svg .bar-fail{fill:var(--red)}
svg .axis{font-size:11px;fill:var(--muted)}
.controls,.pager{margin:6px 0}.pager button{font-size:12px}
table.timeline td{font-size:12.5px;padding:2px 6px}table.timeline td.t{white-space:nowrap;color:var(--muted)}
table.timeline td.k{white-space:nowrap;font-size:11.5px;color:var(--muted)}
tr.group-session td{background:#eef1f5;font-weight:600;padding-top:8px}
tr.group-attempt td{background:#f4f6fb;font-weight:600;padding-left:18px}
tr.group-attempt.failed td{background:var(--redbg);color:var(--red)}
tr.in-attempt td.s{padding-left:18px}tr.in-failed-attempt td:first-child{border-left:4px solid var(--red)}
tr.fail td{background:var(--redbg)}tr.fail td.s{color:var(--red);font-weight:600}
tr.corr td{background:#fff6e5}tr.corr td.s{font-weight:600;color:var(--amber)}
tr.att-failed td.s{color:var(--red);font-weight:600}tr.target td{outline:2px solid var(--blue)}
"""

SCRIPT = r"""
(function(){
"use strict";
var data = JSON.parse(document.getElementById("tl-data").textContent);
var rows = data.rows, size = data.page, body = document.getElementById("tl-rows");
var pager = document.getElementById("tl-pager"), where = document.getElementById("tl-where");
var type = document.getElementById("tl-type"), standOut = document.getElementById("tl-stand-out");
var find = document.getElementById("tl-find");
var shown = rows, page = 0, target = 0;
function cell(tr, text, cls){var td = document.createElement("td"); td.textContent = text;
  if (cls) td.className = cls; tr.appendChild(td); return td;}
function header(text, cls){var tr = document.createElement("tr"); tr.className = cls;
  var td = cell(tr, text); td.colSpan = 5; return tr;}
function sessionText(g){if (g < 0) return "Recorded outside any agent session";
  var s = data.sessions[g]; return "Session " + s.agent + " " + s.id + " (linked at [" + s.at + "])";}
function attemptText(a){var at = data.attempts[a]; if (!at) return "Attempt [" + a + "]";
  var end = at.outcome ? " \u2014 " + at.outcome + (at.reason ? ": " + at.reason : "") : " \u2014 open";
  return "Attempt [" + a + "] " + at.text + end;}
function pages(){return Math.max(1, Math.ceil(shown.length / size));}
function show(n){
  page = Math.min(Math.max(0, n), pages() - 1);
  var frag = document.createDocumentFragment(), first = page * size, last = Math.min(shown.length, first + size);
  var g = null, a = null;
  for (var i = first; i < last; i++){
    var r = shown[i];
    if (r[6] !== g){g = r[6]; a = null; frag.appendChild(header(sessionText(g), "group group-session"));}
    if (r[7] !== a){a = r[7];
      if (a){var at = data.attempts[a];
        frag.appendChild(header(attemptText(a), "group group-attempt" + (at && at.failed ? " failed" : "")));}}
    var tr = document.createElement("tr");
    var cls = "row" + (r[5] ? " " + r[5] : "") + (r[7] ? " in-attempt" : "");
    if (r[7] && data.attempts[r[7]] && data.attempts[r[7]].failed) cls += " in-failed-attempt";
    if (r[0] === target) cls += " target";
    tr.className = cls; tr.id = "event-" + r[0]; tr.setAttribute("data-position", r[0]);
    cell(tr, "[" + r[0] + "]", "p"); cell(tr, r[1], "t"); cell(tr, r[2], "a"); cell(tr, r[3], "k");
    cell(tr, r[4], "s"); frag.appendChild(tr);
  }
  body.textContent = ""; body.appendChild(frag);
  pager.setAttribute("data-page", String(page + 1)); pager.setAttribute("data-pages", String(pages()));
  pager.setAttribute("data-total", String(shown.length));
  where.textContent = shown.length ? "page " + (page + 1) + " of " + pages() + " \u00b7 rows " + (first + 1) +
    "\u2013" + last + " of " + shown.length : "no events match";
}
var standing = {fail: 1, corr: 1, att: 1, "att-failed": 1};
function filter(){
  var k = type.value, only = standOut.checked, q = find.value.toLowerCase();
  shown = (!k && !only && !q) ? rows : rows.filter(function(r){
    return (!k || r[3] === k) && (!only || standing[r[5]] || (r[7] && data.attempts[r[7]] &&
      data.attempts[r[7]].failed && r[3] === "AttemptEnded")) &&
      (!q || (r[4] + " " + r[2] + " " + r[3]).toLowerCase().indexOf(q) >= 0);});
  show(0);
}
function goto(position){
  var i = -1; for (var j = 0; j < shown.length; j++){ if (shown[j][0] === position){ i = j; break; } }
  if (i < 0){ shown = rows; type.value = ""; standOut.checked = false; find.value = "";
    for (j = 0; j < rows.length; j++){ if (rows[j][0] === position){ i = j; break; } } }
  if (i < 0) return false;
  target = position; show(Math.floor(i / size));
  var el = document.getElementById("event-" + position); if (el && el.scrollIntoView) el.scrollIntoView();
  return true;
}
function fromHash(){
  var m = /^#page=(\d+)$/.exec(location.hash), p = /^#event-(\d+)$/.exec(location.hash);
  if (m) { show(parseInt(m[1], 10) - 1); return true; }
  if (p) return goto(parseInt(p[1], 10));
  return false;
}
document.getElementById("tl-first").onclick = function(){show(0);};
document.getElementById("tl-prev").onclick = function(){show(page - 1);};
document.getElementById("tl-next").onclick = function(){show(page + 1);};
document.getElementById("tl-last").onclick = function(){show(pages() - 1);};
type.onchange = filter; standOut.onchange = filter; find.oninput = filter;
window.addEventListener("hashchange", fromHash);
window.trailReport = {page: function(n){show(n - 1); return page + 1;}, pages: pages, goto: goto,
  rows: function(){return body.querySelectorAll("tr.row").length;}};
if (!fromHash()) show(0);
})();
"""
