"""The continuation brief: task state rendered for whoever picks the task up next.

Ordered by what an agent needs first: the goal, the next step, the current requirements and
corrections, the plan, what is failing now, what was tried, decisions, where it stopped (the
agent's own last words and its compaction summary), files, last results. It is task state,
never a replay of chat.

One budget for every path that shows a brief (``trail resume``, the SessionStart injection, any
other front door): lines carry a priority and drop least useful first; a heading stays while any
of its lines does; the brief ends by saying what it left out and how to get it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from ledger.base.lazyregex import lazy
from ledger.base.oneline import one_line, quoted_line
from projections.claims import contradiction
from projections.commands import commit_subject
from projections.state import OpenCall, RecentCall, Requirement, TaskState, written_path
from projections.summary import sections
from projections.worktree import same_file

KEEP = 100
"""Never dropped: the goal line and the next step."""
REQUIREMENT, CORRECTION, PLAN_OPEN, FAILING, STOPPED, FAILED, DECISION = 80, 78, 72, 70, 66, 60, 55
MID, LOW, LEAST = 40, 20, 10
FILES_OLDER, FILES_OLDEST = 30, 25
"""Files changed past the latest ten: kept before the history sections (LOW) and the notes (LEAST)."""
UNSURE = 5
"""Lines the brief gives up first: what a reading of command output suggests, not what the log records."""

INJECTION_DEFAULT = 9_500
INJECTION_CAP = 10_000
"""Claude Code keeps the first 10,000 characters of injected context and cuts the rest."""


def utf16_units(text: str) -> int:
    """Claude Code's measure of a text: a JavaScript string's length (a character outside the BMP is 2)."""
    return len(text.encode("utf-16-le")) // 2


def utf8_bytes(text: str) -> int:
    """Codex's measure: it counts ``ceil(bytes / 4)`` tokens of UTF-8 (``approx_token_count``) and cuts hook
    output past 2,500 of them (``HOOK_OUTPUT_TOKEN_LIMIT``, codex-rs/hooks/src/output_spill.rs), keeping
    its head and tail and spilling the whole to a file: 10,000 bytes, whatever the script (a CJK
    character is 3 bytes, so a third of the characters an ASCII brief may have)."""
    return len(text.encode("utf-8"))


@dataclass(frozen=True)
class Budget:
    """How an agent measures the context a SessionStart hook injects, and how much it keeps whole."""

    measure: Callable[[str], int]
    cap: int
    """Past this the agent cuts: the injection never exceeds it."""
    default: int
    """What an injection asks for (a margin under ``cap``)."""
    unit: str


DEFAULT_BUDGET = Budget(utf16_units, INJECTION_CAP, INJECTION_DEFAULT, "chars")
"""An agent that names no budget of its own gets Claude Code's (each agent's is its ``Agent.budget``)."""


@dataclass(frozen=True)
class Hints:
    """How the brief tells its reader to do what it suggests: the CLI, or the tasktrail MCP tools where the
    agent has them (a sandboxed agent may not reach the ledger's file with the CLI: Codex's default
    workspace-write sandbox refuses it, while the MCP server it starts runs outside the sandbox)."""

    next_step: str
    older: str
    """With ``{type}``: where the earlier items of a kind are."""
    everything: str
    """With ``{task}``: what shows the whole brief."""


CLI = Hints("set one with `trail next`", "trail log --type {type}", "`trail resume{task}` shows all")
MCP = Hints("set one with the tasktrail MCP tool `record` (kind next_step)", "tasktrail MCP tool `log`, types {type}",
            "the tasktrail MCP tool `resume_task` shows all")


@dataclass(frozen=True)
class Line:
    section: str
    text: str
    priority: int
    heading: bool = False
    longer: str | None = None
    """The line cut less (a requirement cut to save room), shown instead when the budget leaves room for it."""


LONGER = 1500
"""How much of a requirement the brief shows when its budget has room (its point may come late: "..., so we
deploy everything on merge on main")."""


def _clip(text: str, width: int = 240) -> str:
    return one_line(text, width)


def _block(text: str, width: int, indent: str = "  ") -> str:
    """A multi-line text kept as lines (a reply, a summary section) in ``width`` characters: its
    opening and its end when it is longer (a closing message frames the work first, lists what is
    next last), each cut at a line end (else a sentence end) and the cut said, so no line stops mid-word."""
    text = text.strip()
    if len(text) > width:
        head = _cut_before(text[: width * 2 // 5])
        tail = _cut_after(text[-(width * 3 // 5) :])
        text = f"{head}\n[… {len(text) - len(head) - len(tail):,} characters of it not shown …]\n{tail}"
    return "\n".join(indent + quoted_line(line.rstrip()) for line in text.splitlines() if line.strip())


_SENTENCE_END = lazy(r"[.!?:;](?=\s)")


def _cut_before(head: str) -> str:
    """``head`` up to its last line end, else its last sentence end, else its last space (never mid-word)."""
    for end in (head.rfind("\n"), max((m.end() for m in _SENTENCE_END.finditer(head)), default=-1), head.rfind(" ")):
        if end > len(head) // 3:
            return head[:end].rstrip()
    return head.rstrip()


def _cut_after(tail: str) -> str:
    """``tail`` from its first line start, else its first sentence start, else its first space."""
    sentence = _SENTENCE_END.search(tail)
    for start in (tail.find("\n"), sentence.end() if sentence else -1, tail.find(" ")):
        if 0 <= start < len(tail) * 2 // 3:
            return tail[start:].lstrip()
    return tail.lstrip()


_CLUTTER_PARTS = ("/.git/", "/node_modules/", "/__pycache__/", "/.claude/plans/", "/.pytest_cache/", "/.venv/")
_CLUTTER_NAMES = frozenset({".venv", "venv", "node_modules", "dist", "build", "__pycache__", ".pytest_cache",
                            ".mypy_cache", ".ruff_cache", ".next", "target", ".DS_Store"})


def is_clutter(path: str) -> bool:
    """Build output, caches, VCS internals and the agent's own plan files: not the work itself."""
    return any(part in path for part in _CLUTTER_PARTS) or path.rstrip("/").rsplit("/", 1)[-1] in _CLUTTER_NAMES


def lines(state: TaskState, hints: Hints = CLI) -> list[Line]:
    """Every line the brief could hold, in reading order."""
    out: list[Line] = []

    def _older(add: Callable[[str, str, int], None], section: str, total: int, shown: int, event_type: str) -> None:
        """Say how many older items the state's recent window left out, and where to find them."""
        if total > shown:
            add(section, f"- ({total - shown} earlier in the log: {hints.older.format(type=event_type)})", LEAST)

    def add(section: str, text: str, priority: int) -> None:
        out.append(Line(section, text, priority))

    def heading(section: str, text: str) -> None:
        out.append(Line(section, text, KEEP, heading=True))

    status = state.status + (f" ({state.status_reason})" if state.status_reason else "")
    add("goal", f"# Task #{state.number} {_clip(state.title, 200)} [{_clip(status, 120)}]", KEEP)

    if state.next_step:
        where = ""
        if state.next_step_from == "plan" and state.next_step_position is not None:
            spoke = state.last_reply is not None and state.last_reply.position > state.next_step_position
            where = (f" (the open step of the agent's plan at [{state.next_step_position}]"
                     + ("; the agent spoke since: check its last words under Where it stopped)" if spoke else ")"))
        if state.next_step_from != "plan" and state.next_step_position is not None:
            where = f" (set at [{state.next_step_position}])"
        step = f"## Next step{where}\n{_clip(state.next_step, 600)}"
    elif state.plan is not None and state.plan.steps and (asked := _asked_after(state, state.plan.position)):
        # The plan was finished, then the user asked for more (deploy, push, open the PR): that is what is next.
        step = (f"## Next step (asked at [{asked.position}], after every step of the plan at "
                f"[{state.plan.position}] was done)\n{_clip(asked.text, 600)}")
    elif state.plan is not None and state.plan.steps:
        step = (f"## Next step (the plan at [{state.plan.position}] is finished)\n(none: every step of the plan is "
                "done; confirm with the user what comes next)")
    else:
        step = f"## Next step\n(none recorded: {hints.next_step})"
    add("next", step, KEEP)

    wanted = [r for r in state.requirements if r.narrowed_at is None]
    if wanted:
        heading("requirements", "## Requirements (current wording, latest last)")
        count = len(wanted)
        for i, r in enumerate(wanted):
            recent = i >= count - 3 or i == 0  # the first states the goal
            changed = f" (reworded at [{r.changed_at}])" if r.history and r.changed_at else " (reworded)" if r.history \
                else ""
            width = 1500 if i == count - 1 else 2000 if i == 0 else 400 if recent else 200
            priority = REQUIREMENT if recent else REQUIREMENT - 15 - (count - i) // 10
            if r.accepted_at is not None:
                # The user's words only take up the agent's proposal: the proposal is what is asked.
                taken = (f"- [{r.position}] the agent's proposal at [{r.accepted_at}], taken up by the user "
                         f"(\"{_clip(r.text, 60)}\"): {_clip(r.proposal or '', min(width, 400))}")
                out.append(Line("requirements", taken, priority))
                continue
            out.append(Line("requirements", f"- [{r.position}] {_clip(r.text, width)}{changed}", priority,
                            longer=f"- [{r.position}] {_clip(r.text, LONGER)}{changed}" if width < LONGER else None))
        # Withdrawn ones are listed below, not earlier in the log.
        _older(add, "requirements", state.counts.get("RequirementStated", 0),
               len(state.requirements) + len(state.withdrawn), "RequirementStated")
    narrowed = [r for r in state.requirements if r.narrowed_at is not None]
    if narrowed:
        # Still asked, but not as worded: listed apart so the part replaced is not read as current.
        heading("narrowed", "## Narrowed by the user (the rest stands; the part their later words name is replaced)")
        for r in narrowed:
            add("narrowed", f"- [{r.position}] {_clip(r.text, 1500)}\n  (narrowed at [{r.narrowed_at}]: "
                            f"{_clip(r.narrowed_by or '', 200)})", REQUIREMENT)

    if state.corrections:
        heading("corrections", "## Corrections (the agent had these wrong; do not repeat them)")
        count = len(state.corrections)
        for i, c in enumerate(state.corrections):
            recent = i >= count - 5
            wrong = f" (was: {_clip(c.wrong, 120)})" if c.wrong else ""
            add("corrections", f"- [{c.position}] {_clip(c.text, 500 if recent else 200)}{wrong}",
                CORRECTION if recent else CORRECTION - 20)
        _older(add, "corrections", state.counts.get("CorrectionMade", 0), len(state.corrections), "CorrectionMade")

    if state.withdrawn:
        # History, not current: said so a fresh agent does not take them up again.
        heading("withdrawn", "## Withdrawn by the user, or tried and failed (not current; do not pick these up)")
        for r in state.withdrawn[-5:]:
            why = f": {_clip(r.withdrawn_because, 160)}" if r.withdrawn_because else ""
            add("withdrawn", f"- [{r.position}] {_clip(r.text, 200)} (withdrawn at [{r.withdrawn_at}]{why})", LOW)

    plan = state.plan
    if plan is not None and plan.steps:
        done = sum(1 for s in plan.steps if s.status == "completed")
        heading("plan", f"## Plan ({done} of {len(plan.steps)} done, as of [{plan.position}])")
        marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
        for i, s in enumerate(plan.steps):
            # Where the step took its status, so a reader can check it (a plan from an older view: its own).
            since = plan.since[i] if i < len(plan.since) else plan.position
            add("plan", f"- {marks[s.status]} {_clip(s.text, 200)} [{since}]",
                PLAN_OPEN if s.status != "completed" else LOW)

    # Commands and tests only: a tool call that erred (an Edit's stale match, a fetch's 404) is the
    # agent's own stumble, already behind it, and would crowd out what is really broken.
    runs = [f for f in state.failures if f.key.startswith(("cmd:", "test:"))]
    blocked = [f for f in state.failures if f.key.startswith("blocked:") and f.failing]
    if blocked:
        heading("blocked", "## Blocked: never ran, needs the user's permission")
        for f in blocked[-5:]:
            why = next((ln.strip() for ln in f.output_tail.splitlines() if ln.strip()), "")
            add("blocked", f"- [{f.position}] {_clip(f.what, 200)}: {_clip(why, 160)}", FAILING - 4)
    failing = [f for f in runs if f.failing]
    fixed = [f for f in runs if f.resolved_at is not None]
    called_off = [f for f in runs if f.resolved_at is None and f.called_off is not None]
    if failing:
        heading("failing", "## Failing now (latest last)")
        for i, f in enumerate(failing):
            latest = i >= len(failing) - 3
            code = f" -> exit {f.exit_code}" if f.exit_code is not None else ""
            what = f"$ {_clip(f.what, 200)}" if f.key.startswith("cmd:") else _clip(f.what, 200)
            add("failing", f"- [{f.position}] {what}{code}", FAILING if latest else MID)
            if f.output_tail.strip():
                tail = "\n".join(f"    {_clip(line, 200)}" for line in f.output_tail.splitlines()[-3:])
                add("failing", tail, FAILING - 8 if latest else LEAST)
    if fixed:
        heading("fixed", "## Failed earlier, passing since")
        for f in fixed[-5:]:
            what = f"$ {_clip(f.what, 160)}" if f.key.startswith("cmd:") else _clip(f.what, 160)
            add("fixed", f"- {what}: failed at [{f.position}], passes since [{f.resolved_at}]", LOW)
    if called_off:
        heading("called_off", "## Called off by the user (failed, not fixed; not failing now)")
        for f in called_off[-5:]:
            what = f"$ {_clip(f.what, 160)}" if f.key.startswith("cmd:") else _clip(f.what, 160)
            add("called_off", f"- {what}: failed at [{f.position}], called off at [{f.called_off}]", LOW)

    ended = [a for a in state.attempts if a.outcome in ("failed", "abandoned")]
    if ended:
        heading("tried", "## Tried and did not work")
        for i, a in enumerate(ended):
            why = f": {_clip(a.reason)}" if a.reason else ""
            latest = i >= len(ended) - 3
            add("tried", f"- [{a.position}] {str(a.outcome).upper()} {_clip(a.text, 160)}{why}",
                FAILED if latest else MID)
        _older(add, "tried", state.attempts_failed, len(ended), "AttemptEnded")

    if state.open_attempt is not None:
        current = next((a for a in state.attempts if a.position == state.open_attempt), None)
        if current is not None:
            heading("attempt", "## In progress")
            add("attempt", f"- [{current.position}] {_clip(current.text)}", FAILING)

    if state.decisions:
        heading("decisions", "## Decisions")
        count = len(state.decisions)
        for i, d in enumerate(state.decisions):
            recent = i >= count - 5
            reason = f" because {_clip(d.reason, 160)}" if d.reason else ""
            rejected = f" (rejected: {_clip(', '.join(d.rejected), 400)})" if d.rejected else ""
            add("decisions", f"- [{d.position}] {_clip(d.text, 600 if recent else 200)}{reason}{rejected}",
                DECISION if recent else MID)
        _older(add, "decisions", state.counts.get("DecisionRecorded", 0), len(state.decisions), "DecisionRecorded")

    _where_it_stopped(state, add, heading)

    files = [f for f in state.files.values() if not is_clutter(f.path)]
    if files:
        heading("files", f"## Files changed ({len(files)}, latest first)")
        for i, touch in enumerate(files[::-1]):
            times = f", {touch.changes} changes" if touch.changes > 1 else ""
            op = "DELETED" if touch.operation == "deleted" else touch.operation
            # Above the history sections (withdrawn, fixed, results, notes): what the work changed is what a
            # long session's brief must keep after where it stopped.
            add("files", f"- {one_line(touch.path)} ({op}{times}, last at [{touch.position}])",
                MID if i < 10 else FILES_OLDER if i < 30 else FILES_OLDEST)

    seen = [tf for tf in state.tree_files if not is_clutter(tf.path)
            and not any(same_file(edited, tf.path) for edited in state.files)]
    if seen and (sub := state.delegated) is not None:
        # Not said to be the sub-agent's: a command the agent ran may have changed them too.
        before = ("none changed in the git status before it" if sub.checked_before is not None
                  else "no git status before it: some may have been changed before the session")
        heading("tree", f"## Changed in the working tree after the sub-agent at [{sub.position}] (seen in a git "
                        f"status or diff; no edit in the log shows them: the sub-agent's or a command's; {before})")
        for i, tf in enumerate(seen[::-1]):
            op = "DELETED" if tf.status == "deleted" else tf.status
            # Cut before anything else: a reading of the tree, not the log's own record of a change.
            add("tree", f"- {one_line(tf.path)} ({op}, seen at [{tf.position}])", UNSURE if i < 10 else UNSURE - 1)

    if state.commands or state.tests:
        heading("results", "## Last results")
        lines: list[tuple[int, str, int]] = []  # (position, line, priority), shown in the order they happened
        for t in sorted(state.tests.values(), key=lambda t: t.position)[-8:]:
            counts = ", ".join(f"{n} {k}" for k, n in (("passed", t.passed), ("failed", t.failed),
                                                        ("errors", t.errors), ("skipped", t.skipped)) if n)
            detail = f" ({counts})" if counts else f": {_clip(t.message, 160)}" if t.message else ""
            lines.append((t.position, f"- test {one_line(t.name)} {t.outcome.upper()} [{t.position}]{detail}",
                          MID if t.outcome in ("failed", "error") else LOW))
        tested = {t.position for t in state.tests.values()}
        # A test run is listed once, as its test result (read from the command just before it).
        commands = [c for c in state.commands if c.position + 1 not in tested][-5:]
        passed_since: dict[int, int] = {}
        for f in state.failures:
            if f.resolved_at is not None:
                # A failed test run's failure sits on its test result, just after the command that ran it.
                passed_since[f.position - 1 if f.key.startswith("test:") else f.position] = f.resolved_at
        for i, cmd in enumerate(commands):
            # An unknown exit (Codex's hooks report none) is said as such, never as a code to read as failed.
            code = " (exit code not reported)" if cmd.exit_code is None else f" -> exit {cmd.exit_code}"
            passes = f", passes since [{passed_since[cmd.position]}]" if cmd.position in passed_since else ""
            shown_line = _clip(cmd.line, 160)
            subject = commit_subject(cmd.line)
            if subject is not None and subject not in shown_line:
                shown_line += f' (commit "{_clip(subject, 120)}")'  # the subject, cut off in a long line
            lines.append((cmd.position, f"- $ {shown_line}{code} [{cmd.position}]{passes}", LOW + i))
        # In the order they happened, the failures fixed since last: a reader takes the first lines as current.
        for _, line, priority in sorted(lines, key=lambda row: (row[0] in passed_since, row[0])):
            add("results", line, priority)
        if state.commands_total > len(commands):
            looked = f", {state.read_only_commands} only read files" if state.read_only_commands else ""
            add("results", f"- ({state.commands_total} commands in all, {state.commands_failed} failed{looked}; "
                           f"{hints.older.format(type='CommandRan')})", LEAST)

    if state.notes:
        heading("notes", "## Notes")
        for i, n in enumerate(state.notes[-3:]):
            # The user's latest words when they were a reply ("continue implementation"): kept with the history.
            latest_user = i == len(state.notes[-3:]) - 1 and n.actor == "user" and n.position > (state.last_intent or 0)
            add("notes", f"- [{n.position}] {_clip(n.text, 300)}", LOW if latest_user else LEAST)
    return out


def _where_it_stopped(
    state: TaskState, add: Callable[[str, str, int], None], heading: Callable[[str, str], None]
) -> None:
    heading("stopped", "## Where it stopped")
    reply, compaction = state.last_reply, state.compaction
    if reply is not None and reply.text.strip():
        said = contradiction(state)
        if said is None:
            before = state.last_intent is not None and reply.position < state.last_intent
            # Words that came before the user's latest ones answer an earlier request, not the latest.
            label = (f"- the agent's last words [{reply.position}]"
                     f"{f' (before the user spoke at [{state.last_intent}])' if before else ''}:")
        else:
            # Its words are quoted as its claim, with what the log says against them, never as the state.
            claim, against = said
            label = (f"- the agent said [{reply.position}] (a claim the log contradicts: \"{_clip(claim, 80)}\", but "
                     f"{against}):")
        add("stopped", f"{label}\n{_block(reply.text, 3000)}", STOPPED)
    call = state.open_call
    if call is not None and (reply is None or call.position > reply.position):
        add("stopped", f"- [{call.position}] it stopped mid-action: its last call, {_call(call)}, got no result "
                       "(the session ended before it returned: check whether it ran)", STOPPED)
    else:
        _last_calls(state, add)
    if compaction is not None:
        parts = sections(compaction.summary)
        newer_plan = state.plan is not None and state.plan.position > compaction.position
        newer_reply = reply is not None and reply.position > compaction.position
        newer_intent = state.last_intent is not None and state.last_intent > compaction.position
        for label, text in parts.items():
            if label != "Current work" and (newer_plan or newer_intent):
                continue  # a newer plan, or the user since, says what is pending now
            if label != "Pending work" and newer_reply:
                continue  # the agent spoke since: its words say where it is
            add("stopped", f"- {label} (compaction summary [{compaction.position}]):\n{_block(text, 1200)}",
                STOPPED - 4)
        if not parts and not newer_reply:
            add("stopped", f"- compaction summary [{compaction.position}], its end:\n"
                           f"{_block(compaction.summary[-1200:], 1200)}", STOPPED - 6)
    if state.checkpoints:
        cp = state.checkpoints[-1]
        git = f" at git {one_line(cp.git_head[:10])}{' (dirty)' if cp.git_dirty else ''}" if cp.git_head else ""
        note = f": {_clip(cp.note, 160)}" if cp.note else ""
        add("stopped", f"- checkpoint '{_clip(cp.label, 80)}'{git} [{cp.position}]{note}", MID)
    # What the session left on the remote: the commit and the PR a continuation builds on or reviews.
    done = []
    made = state.last_commit
    if made is not None and state.last_commit_at is not None and (
            state.pushed is None or state.pushed.position < state.last_commit_at):
        # The work's latest commit, when no push of the session's came after it (the user may push it).
        done.append(f"last commit {one_line(made)} [{state.last_commit_at}]"
                    + (", after the last push" if state.pushed is not None else ", not pushed in the log")
                    + _earlier_unpushed(state))
    if state.pushed is not None:
        p = state.pushed
        done.append(f"pushed {p.commit or 'a new branch'} to {one_line(p.ref)} [{p.position}]")
    if state.pull_request is not None:
        done.append(f"last pull request opened: PR #{state.pull_request.number} [{state.pull_request.position}]")
    if done:
        add("stopped", f"- {'; '.join(done)}", STOPPED)
    when = state.updated_at.strftime("%Y-%m-%d %H:%M UTC") if state.updated_at else "never"
    add("stopped", f"- last event [{state.position}] at {when}", STOPPED)


_PLAN = lazy(r'\{"plan":\s*"(.*)', re.S)


def _earlier_unpushed(state: TaskState) -> str:
    """The commit before the last one, when no push of the session's took it either, and how many more there are:
    a stop often made several pieces of work (the refactor, then a fix), each one a continuation may push or build
    on. One by its hash (the state keeps the latest ``UNPUSHED_KEPT`` with their subjects): a long session's brief
    has little room left at its end."""
    earlier = [c for c in state.unpushed if c.position != state.last_commit_at]
    if not earlier:
        return ""
    before, more = earlier[-1], state.unpushed_count - 2
    return (f"; before it, also not pushed: {one_line(before.commit)} [{before.position}]"
            + (f" (and {more} earlier)" if more > 0 else ""))


def _last_calls(state: TaskState, add: Callable[[str, str, int], None]) -> None:
    """The agent's last calls since the user spoke, when they, not its words, are where it stopped: the user
    rejected them (they never ran), or the agent's words came before the user's latest ones."""
    calls = state.recent_calls
    if not calls:
        return
    refused = [c for c in calls if c.outcome == "refused"]
    if refused:
        named = "; ".join(f"{_call(c)} [{c.position}]" for c in refused)
        add("stopped", f"- the user rejected its last call{'s' if len(refused) > 1 else ''}, so "
                       f"{'they' if len(refused) > 1 else 'it'} never ran (interrupted there): {named}", STOPPED)
        return
    reply = state.last_reply
    if reply is not None and state.last_intent is not None and reply.position > state.last_intent:
        return  # the agent spoke after the user: its words say where it stopped
    if (state.next_step_position or 0) > calls[-1].position:
        return  # a next step set since the calls says where it stopped, and that it was not cut off there
    named = "; ".join(f"{_call(c)}{f' ({c.outcome})' if c.outcome and c.outcome != 'ok' else ''} [{c.position}]"
                      for c in calls)
    add("stopped", f"- after the user's words [{state.last_intent}] it said nothing more; its last calls: {named} "
                   "(the session ended there, or the user stopped it)", STOPPED)


def _call(call: OpenCall | RecentCall) -> str:
    """A tool call as a reader knows it: a command as ``$ line``, an edit by its file."""
    if call.tool == "command":  # a command the fold kept as its line
        return f"`$ {_clip(call.input, 200)}`"
    if call.tool == "ExitPlanMode" and (plan := _PLAN.match(call.input)):
        # The plan it asked the user to accept, by its words: what a refusal turned down.
        words = plan.group(1).replace("\\n", " ").replace('\\"', '"')
        return f"ExitPlanMode, its plan: {_clip(words, 300)}"
    try:
        data = json.loads(call.input)
    except ValueError:
        data = None
    if isinstance(data, dict):
        command = data.get("command", data.get("cmd"))  # Claude Code's Bash, Codex's exec_command and shell
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            command = " ".join(command)
        if isinstance(command, str):
            return f"`$ {_clip(command, 200)}`"
        for key in ("file_path", "path", "url", "pattern", "description"):
            if isinstance(data.get(key), str):
                return f"{_clip(call.tool, 40)} {_clip(data[key], 200)}"
    named = written_path(call.input) if data is None else ""  # a long input kept by its ends names its file
    return f"{_clip(call.tool, 40)} {_clip(named or call.input, 200 if named else 160)}"


def _asked_after(state: TaskState, position: int) -> Requirement | None:
    """The latest requirement stated (or reworded) after ``position``, if any."""
    later = [r for r in state.requirements if r.said_at > position]
    return max(later, key=lambda r: r.said_at) if later else None


def render(state: TaskState, max_chars: int | None = None, *, measure: Callable[[str], int] = len,
           unit: str = "chars", hints: Hints = CLI) -> str:
    """The brief as text, within ``max_chars`` when given (lowest-priority lines drop first), as ``measure``
    counts (characters by default; an agent's own measure for what it injects: ``Agent.budget``)."""
    candidates = lines(state, hints)
    kept = [True] * len(candidates)
    dropped: dict[str, int] = {}
    members: dict[str, int] = {}
    for line in candidates:
        if not line.heading:
            members[line.section] = members.get(line.section, 0) + 1

    def footer() -> str:
        if not dropped:
            return ""
        task = f" {state.number}" if state.number is not None else ""
        return (f"\n[{sum(dropped.values())} lines left out to fit {max_chars} {unit} ({', '.join(dropped)}); "
                f"{hints.everything.format(task=task)}]")

    def shown_heading(line: Line) -> bool:
        return not line.heading or members.get(line.section, 0) > 0

    if max_chars is not None:
        size = sum(measure(line.text) + 1 for line, k in zip(candidates, kept, strict=True)
                   if k and shown_heading(line))
        # Drop the lowest priority first; among equals, the earliest (oldest) line first.
        order = sorted((i for i, line in enumerate(candidates) if line.priority < KEEP),
                       key=lambda i: (candidates[i].priority, i))
        for i in order:
            if size + measure(footer()) <= max_chars:
                break
            line = candidates[i]
            kept[i] = False
            size -= measure(line.text) + 1
            dropped[line.section] = dropped.get(line.section, 0) + 1
            members[line.section] -= 1
            if members[line.section] == 0:  # its heading goes with its last line
                size -= sum(measure(h.text) + 1 for h in candidates if h.heading and h.section == line.section)
        if not dropped:
            candidates = _lengthened(candidates, max_chars - size, measure)
    text = "\n".join(line.text for line, k in zip(candidates, kept, strict=True) if k and shown_heading(line))
    text += footer()
    if max_chars is not None and measure(text) > max_chars:
        text = _cut(text, max_chars, measure)
    return text


def _lengthened(candidates: list[Line], room: int, measure: Callable[[str], int]) -> list[Line]:
    """``candidates`` with the lines that have a longer wording shown in it while ``room`` allows, the highest
    priority first (among equals, the latest): a brief well under its budget need not cut a requirement short."""
    out = list(candidates)
    order = sorted((i for i, line in enumerate(out) if line.longer is not None),
                   key=lambda i: (-out[i].priority, -i))
    for i in order:
        longer = out[i].longer
        assert longer is not None
        grow = measure(longer) - measure(out[i].text)
        if grow <= room:
            out[i] = Line(out[i].section, longer, out[i].priority, out[i].heading)
            room -= grow
    return out


def _cut(text: str, limit: int, measure: Callable[[str], int]) -> str:
    """The longest head of ``text`` that, with an ellipsis, measures at most ``limit`` (what the lines that
    are never dropped still overrun)."""
    low, high = 0, len(text)
    while low < high:  # measures only grow with length: bisect the cut
        mid = (low + high + 1) // 2
        if measure(text[:mid] + "…") <= limit:
            low = mid
        else:
            high = mid - 1
    return text[:low] + "…" if limit >= measure("…") else ""


def injection(
    state: TaskState, max_chars: int | None = None, *, budget: Budget = DEFAULT_BUDGET, mcp: bool = False
) -> str:
    """The context a SessionStart hook injects: who the task is, how to record, then the brief.

    Measured as the agent measures it (``budget``: Claude Code characters, Codex UTF-8 bytes) and never over
    that agent's cap, whatever ``max_chars`` asks; ``mcp``: the agent has the tasktrail MCP server, so the
    instructions name its tools, which work where the CLI may not (the agent's sandbox)."""
    limit = min(budget.default if max_chars is None else max_chars, budget.cap)
    number = state.number
    if mcp:
        header = (
            f"You are continuing tasktrail task #{number}. Its ledger holds what earlier sessions did; the brief "
            "below is its current state. Record as you go with the tasktrail MCP tool `record` (the task is "
            "picked for you): kind `decision` (text, reason, rejected), kind `attempt_start` (text) then "
            "`attempt_end` (outcome failed, succeeded or abandoned; reason), kind `next_step` (text) for the step "
            "you mean to take next, kind `note` (text). More: the tools `resume_task`, `log`, `why`.\n\n"
        )
    else:
        header = (
            f"You are continuing tasktrail task #{number}. Its ledger holds what earlier sessions did; the brief "
            "below is its current state. Record as you go (the task is picked for you): "
            "`trail decide TEXT --because REASON`, `trail attempt TEXT` then `trail fail REASON` or "
            "`trail succeed`, `trail next TEXT` for the step you mean to take next, `trail note TEXT`. "
            f"More: `trail resume {number}`, `trail log {number}`, `trail why PATH`.\n\n"
        )
    body = render(state, max_chars=max(200, limit - budget.measure(header)), measure=budget.measure,
                  unit=budget.unit, hints=MCP if mcp else CLI)
    return header + body
