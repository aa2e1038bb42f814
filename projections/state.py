"""The task state: a pure fold of a task's events into what a continuation needs.

``fold(state, event) -> state`` never mutates its input and does no I/O. Collections
are tuples and dicts copied on change; the ones that could grow without bound over
a months-long task (commands, notes, checkpoints) keep a recent window plus counts.
"""

from __future__ import annotations

import functools
import json
import re
from bisect import bisect_right
from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from ledger.base.lazyregex import lazy
from ledger.base.oneline import one_line
from ledger.domain import events as ev
from projections import facts, remote, worktree
from projections.commands import (
    as_built,
    chain_heads,
    command_head,
    covers,
    installs_same,
    is_probe,
    other_verb,
    passed_checks,
    path_checks,
    readdresses,
    runs_same,
    switches_to,
    unmasked,
    whole_checks,
)
from projections.facts import command_line as command_line  # re-exported
from projections.facts import shown, tail_lines
from projections.intent import (
    ENQUIRY_MAX,
    accepts,
    acknowledgement,
    agrees,
    answers_yes_no,
    asks_publish,
    asks_redo,
    asks_removal,
    branch_move,
    calls_off,
    ci_run,
    declines,
    drops,
    enquiry,
    names,
    names_work,
    not_needed,
    prescribes,
    reported_check,
    reports_error,
    reports_problem,
    says_already_done,
    says_failed,
    says_works,
    selects,
    singular,
    withdrawal,
    yes_no_question,
)

FOLD_VERSION = 16
"""Bump it whenever the same events fold to a different ``TaskState`` (a field added, a rule
changed): a snapshot records the version that made its view (``ledger.domain.task.TaskBody``), and a view
from another is rebuilt from the events on read instead of shown. ``tests/test_fold_version.py``
fails when the fold's output changes and this did not."""

RECENT_COMMANDS = 20
RECENT_NOTES = 20
RECENT_CHECKPOINTS = 20
RECENT_INTENTS = 100
"""Requirements, and corrections, kept in the state; older ones live on in the log."""
RECENT_DECISIONS = 50
RECENT_ATTEMPTS = 50
"""Ended attempts kept; the open one is always kept."""
RECENT_FILES = 200
RECENT_TESTS = 200
RECENT_CONVERSATIONS = 20
EDITORS = ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch")
"""Agent tools whose success is a file change, not a tool result."""
_EDITOR_KEYS = frozenset(f"tool:{tool}" for tool in EDITORS)
RECENT_FAILURES = 30
"""Failures (non-zero exits, failed tests and tool calls) kept, resolved or not."""
WORDINGS_KEPT = 5
"""Earlier wordings kept per requirement."""
RECENT_WITHDRAWN = 20
CHANGED_KEPT = 5
UNPUSHED_KEPT = 3
"""Commits since the last push kept for Where it stopped."""
RECENT_CALLS = 3
"""Paths named for the agent's changes since the user last spoke (the count goes on)."""


class Item(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Requirement(Item):
    position: int
    text: str
    at: datetime
    actor: str
    history: tuple[str, ...] = ()
    """Earlier wordings, oldest first."""
    changed_at: int | None = None
    withdrawn_at: int | None = None
    """Position of the user's words that withdrew it ("never mind, we'll look at it later")."""
    withdrawn_because: str | None = None
    narrowed_at: int | None = None
    """Position of the user's words that replaced a part of it ("don't create a pr, just a commit"): the rest
    stands, that part does not."""
    narrowed_by: str | None = None
    accepted_at: int | None = None
    """Position of the agent's reply whose proposal these words only take up ("yes to all"): the proposal is
    what is asked (``proposal``), not the words."""
    proposal: str | None = None
    """What that reply proposed (its closing offer: "Want me to map a few more fields …?")."""

    @property
    def said_at(self) -> int:
        """Where the user last worded it: its position, or the change that reworded it."""
        return max(self.position, self.changed_at or 0)


class Correction(Item):
    position: int
    text: str
    wrong: str | None
    at: datetime
    actor: str


class Decision(Item):
    position: int
    text: str
    reason: str | None
    rejected: tuple[str, ...]
    at: datetime
    actor: str


class Attempt(Item):
    position: int
    text: str
    at: datetime
    outcome: ev.Outcome | None = None
    reason: str | None = None
    ended_position: int | None = None
    ended_at: datetime | None = None


class FileTouch(Item):
    path: str
    operation: ev.FileOperation
    position: int
    at: datetime
    before_sha256: str | None
    after_sha256: str | None
    changes: int
    diff_size: int | None
    attempt: int | None
    """Position of the attempt open when the file last changed."""


class CommandRecord(Item):
    position: int
    line: str
    exit_code: int | None
    duration_ms: int | None
    at: datetime
    output_tail: str
    """The last lines of stderr, or of stdout when stderr is empty."""


class TestRecord(Item):
    __test__ = False
    name: str
    outcome: ev.TestOutcome
    position: int
    at: datetime
    message: str | None
    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    skipped: int | None = None


class Checkpoint(Item):
    position: int
    label: str
    at: datetime
    git_head: str | None
    git_dirty: bool | None
    note: str | None


class Failure(Item):
    """Something that failed, and whether a later run of the same command, test target or tool passed."""

    key: str
    """What a later success must match: ``cmd:<line>``, ``test:<name>`` or ``tool:<name>``."""
    what: str
    position: int
    at: datetime
    exit_code: int | None = None
    output_tail: str = ""
    resolved_at: int | None = None
    """Position of the first later success of the same key."""
    head: str | None = None
    """A failed command's ``command_head``, taken once when it failed (a success is matched against it)."""
    called_off: int | None = None
    """Position of the user's words that called it off ("why do you need docker?", "forget the tests", "skip
    that"): not fixed, and not failing now either; a new failure of the same key is."""

    @property
    def failing(self) -> bool:
        """Whether it is failing now: neither passed since nor called off by the user."""
        return self.resolved_at is None and self.called_off is None


class OpenCall(Item):
    """The agent's latest tool call while no result of anything has come since: where it stopped, when the
    session ended there (mid-action)."""

    position: int
    at: datetime
    tool: str
    input: str


class RecentCall(Item):
    """One of the agent's latest tool calls (or commands) since the user last spoke, and how it came out."""

    position: int
    tool: str
    input: str
    outcome: Literal["ok", "failed", "refused", "not_run"] | None = None
    """None while no result came; ``refused``: the user said no to it, so it never ran."""


class Commit(Item):
    """A commit a ``git commit`` of the session made: where, its short hash and its subject line."""

    position: int
    commit: str
    subject: str = ""


class Pushed(Item):
    """The last commit the session pushed, and where to: where the work it shared stands."""

    position: int
    commit: str | None
    """None when git named no hash (a new branch) and no commit of the session's came before it."""
    ref: str


class PullRequest(Item):
    """The last pull request the session opened, by its number (from the address GitHub answered with)."""

    position: int
    number: int


class TreeFile(Item):
    """A file a ``git status`` / ``git diff`` the session ran showed as changed, after a sub-agent ran."""

    path: str
    """As git named it: relative to the repository's top."""
    status: worktree.Status
    position: int
    """The latest git output that showed it."""


class Delegation(Item):
    """The latest sub-agent the session started (Claude Code's ``Agent``/``Task`` call): its edits reach the main
    log only as their effects, in a git status the session runs after it."""

    position: int
    checked_before: int | None = None
    """Position of the last git status listing the whole tree before it: the files it showed were changed
    already."""
    dirty_before: tuple[str, ...] = ()


class Plan(Item):
    position: int
    at: datetime
    steps: tuple[ev.PlanStep, ...]
    since: tuple[int, ...] = ()
    """For each step, the position of the plan update that gave it its status (where a reader checks it)."""


class RefusedWrite(Item):
    """The user refused the agent's Write of a file the task had not touched: what it was about to create."""

    position: int
    path: str
    """"" when the call's input kept too little of itself to say (the correction's ``wrong`` may)."""


class Compaction(Item):
    position: int
    at: datetime
    trigger: str | None
    summary: str
    """The summary's tail (its pending work and current state come last)."""


class Reply(Item):
    position: int
    at: datetime
    text: str


class Note(Item):
    position: int
    text: str
    at: datetime
    actor: str


class Conversation(Item):
    position: int
    agent: str
    session_id: str
    transcript: str | None
    at: datetime


class TaskLink(Item):
    position: int
    relation: ev.Relation
    other: UUID
    other_number: int | None


class TaskState(Item):
    id: UUID | None = None
    number: int | None = None
    title: str = ""
    titled_at: int = 1
    """The position of the event that set ``title``: the opening one, or the latest ``TaskRetitled``."""
    slug: str = ""
    cwd: str | None = None
    project: str | None = None
    """The git top level (else the folder) the task was opened in; ``cwd`` for tasks from before."""
    opened_at: datetime | None = None
    updated_at: datetime | None = None
    position: int = 0
    status: ev.Status = "active"
    status_reason: str | None = None
    requirements: tuple[Requirement, ...] = ()
    """The current ones: a requirement the user withdrew moves to ``withdrawn``."""
    withdrawn: tuple[Requirement, ...] = ()
    corrections: tuple[Correction, ...] = ()
    decisions: tuple[Decision, ...] = ()
    attempts: tuple[Attempt, ...] = ()
    attempts_failed: int = 0
    """Attempts ended as failed or abandoned, over the whole task (the list keeps the latest)."""
    open_attempt: int | None = None
    files: dict[str, FileTouch] = {}
    commands: tuple[CommandRecord, ...] = ()
    commands_total: int = 0
    commands_failed: int = 0
    last_failed_command: CommandRecord | None = None
    """The latest command with a non-zero exit, kept beyond the recent window."""
    tests: dict[str, TestRecord] = {}
    tool_calls: int = 0
    tool_errors: int = 0
    checkpoints: tuple[Checkpoint, ...] = ()
    checkpoints_total: int = 0
    last_intent: int | None = None
    """Position of the latest requirement, requirement change or correction."""
    changed_since_intent: tuple[str, ...] = ()
    """The files the agent changed since the user last stated an intent (the first ``CHANGED_KEPT``)."""
    changes_since_intent: int = 0
    changed_since_position: int | None = None
    """Position of the first of those changes: where the approach the user may reject began."""
    last_decision: int | None = None
    next_step: str | None = None
    next_step_position: int | None = None
    next_step_from: str | None = None
    """Who set the next step: ``person`` (``trail next``, or an agent's NextStepSet) or ``plan``."""
    plan: Plan | None = None
    failures: tuple[Failure, ...] = ()
    """Recent failures, oldest first; a later success of the same key marks one resolved."""
    compaction: Compaction | None = None
    """The latest context compaction with the agent's own summary."""
    last_reply: Reply | None = None
    last_call: str | None = None
    """The latest tool call, as ``tool input`` (clipped): what a failed result was answering."""
    open_call: OpenCall | None = None
    """The latest tool call when nothing has happened since (no result, no reply, no prompt)."""
    refused_write: RefusedWrite | None = None
    """A new file's Write the user refused, until the user next speaks (``_turned_down``)."""
    recent_calls: tuple[RecentCall, ...] = ()
    last_commit: str | None = None
    """The short hash of the latest commit a ``git commit`` the session ran said it made."""
    last_commit_at: int | None = None
    """The position of that ``git commit``."""
    pushed: Pushed | None = None
    unpushed: tuple[Commit, ...] = ()
    """The latest ``UNPUSHED_KEPT`` commits made since the session's last push (or since it began), oldest first:
    what a continuation may still have to push, each piece of work by its subject."""
    unpushed_count: int = 0
    """How many commits were made since that push (the tuple keeps the latest)."""
    pull_request: PullRequest | None = None
    tree_checked: int | None = None
    """Position of the latest ``git status`` that listed the whole working tree."""
    tree_dirty: tuple[str, ...] = ()
    """The files that status showed as changed (the first ``RECENT_FILES``)."""
    delegated: Delegation | None = None
    tree_files: tuple[TreeFile, ...] = ()
    """Files a git status or diff showed changed after the latest sub-agent, that were not changed before it and no
    edit in the log names: the sub-agent's (the first ``RECENT_FILES``)."""
    """The agent's last ``RECENT_CALLS`` tool calls and commands since the user last spoke: where it stopped
    when its words came before them, or the user rejected them."""
    read_only_commands: int = 0
    """Commands that only looked (ls, cat, sed -n, git status...): in the log, not in ``commands``."""
    notes: tuple[Note, ...] = ()
    conversations: tuple[Conversation, ...] = ()
    links: tuple[TaskLink, ...] = ()
    counts: dict[str, int] = {}
    """Events folded, by type name."""


def _readable(called: str) -> str:
    """A call's JSON input with the characters it escaped (``\\uc5b8``: any script but ASCII) as themselves, so
    the clipped input a brief shows reads as the agent wrote it; an input cut short, or no JSON, as it is."""
    if "\\u" not in called:
        return called
    try:
        return json.dumps(json.loads(called), ensure_ascii=False)
    except ValueError:
        return called


def _recent(items: tuple[Any, ...], item: Any, keep: int) -> tuple[Any, ...]:
    return (*items[-(keep - 1) :], item) if keep > 1 else (item,)


def _latest(mapping: dict[str, Any], key: str, value: Any, keep: int, gone: str | None = None) -> dict[str, Any]:
    """``mapping`` without ``gone``, with ``key`` moved to the end (the most recent) and only the last
    ``keep`` kept."""
    # A C-level clone of the table (dict(mapping) re-inserts every key); the pops and the trim keep
    # the order of the rest.
    out = mapping.copy()
    if gone is not None:
        out.pop(gone, None)
    out.pop(key, None)
    out[key] = value
    while len(out) > keep:
        del out[next(iter(out))]  # the oldest
    return out


def _failed(failures: tuple[Failure, ...], failure: Failure) -> tuple[Failure, ...]:
    """``failures`` with ``failure`` as the newest; an earlier failure of the same key gives way to it."""
    kept = tuple(f for f in failures if f.key != failure.key or f.resolved_at is not None)
    return _recent(kept, failure, RECENT_FAILURES)


def _resolved(
    failures: tuple[Failure, ...], keys: Collection[str], position: int, line: str | None = None,
    test: str | None = None,
) -> tuple[Failure, ...]:
    """``failures`` with the open ones of any of ``keys`` marked passing since ``position``; with the
    command ``line`` that passed, also commands of the same program and target run with other flags or
    paths (`ruff check a/b.py` then `ruff check /abs/a/b.py`), each part of an ``&&`` chain (`git pull
    --rebase && git push` after a rejected `git push`), narrower runs of a test runner run whole
    (`pytest` after `pytest t.py::x`), the same command with its address or version corrected (`curl
    …/v2/users` after `curl …/v1/user`: ``readdresses``), a program run from its source (`go run ./cmd/x
    index p` after `x index p` or `./x index p`: ``as_built``) and the same packages installed through another
    manager (`pnpm add feed` after `npm install feed`: ``installs_same``); with the ``test`` run that passed,
    the failing test runs it covers (`pytest tests` after `pytest tests/test_a.py`). One pass; ``failures``
    itself when nothing changes."""
    heads = chain_heads(line) if line is not None else ()
    built = as_built(line) if line is not None else None  # `go run ./cmd/x args` runs `x args` from the source

    def answered(f: Failure) -> bool:
        if f.key in keys:
            return True
        if heads and f.key.startswith("cmd:"):
            what, failed = f.what, f.head or command_head(f.what)  # failures from older snapshots have no head
            if line is not None and (clear := unmasked(f.what, line)) is not None:
                what, failed = clear, command_head(clear)  # a value hidden there stands in clear in the rerun
            return (any(covers(head, failed) and not (line is not None and other_verb(line, what, head))
                        for head in heads) or (line is not None and readdresses(line, what))
                    or (built is not None and runs_same(built, what))
                    or (line is not None and installs_same(line, what)))
        return test is not None and f.key.startswith("test:") and covers(test, f.key[len("test:"):])

    hits = [i for i, f in enumerate(failures) if f.resolved_at is None and answered(f)]
    if not hits:
        return failures
    resolved = list(failures)
    for i in hits:
        resolved[i] = failures[i].model_copy(update={"resolved_at": position})
    return tuple(resolved)


_CONFLICTED = ("fix conflicts and then commit the result", "Automatic merge failed")
"""What git prints when a merge (``git merge``, ``git pull``) stops on conflicts: it waits for a commit."""


def _merge_concluded(failures: tuple[Failure, ...], line: str, position: int) -> tuple[Failure, ...]:
    """``failures`` with the open merges that stopped on conflicts resolved once a ``git commit`` (or ``git merge
    --continue``) passed after them: git said the merge ends with a commit, and the commit made it (``git add f &&
    git commit -m 'Merge origin/main …' && git push``). A merge given up (``git merge --abort``) is not this."""
    heads = chain_heads(line)
    if "git commit" not in heads and not ("git merge" in heads and "--continue" in line.split()):
        return failures
    return tuple(f.model_copy(update={"resolved_at": position})
                 if f.resolved_at is None and f.key.startswith("cmd:") and any(c in f.output_tail for c in _CONFLICTED)
                 else f for f in failures)


def _remote_done(
    state: TaskState, failures: tuple[Failure, ...], event: ev.CommandRan, line: str, position: int
) -> dict[str, Any]:
    """What a command that passed did with a remote: a commit made, a push, a pull request opened (each kept for
    Where it stopped), and the failures it answers by another route: a failed opening of a pull request from the
    same branch (``gh pr create`` after ``gh api …/pulls``), and a remote's refusal of the caller's credentials
    (``Permission denied (publickey)``) once a command reaching the same host got in (over HTTPS, say)."""
    out: dict[str, Any] = {}
    words = set(line.split())
    opens = remote.pr_created(line)
    reaches = remote.reaches_remote(line)
    if not (opens is not None or reaches or "commit" in words):
        return out  # most commands touch no remote: no output is read
    output = f"{shown(event.stdout)}\n{shown(event.stderr)}"
    made = remote.committed(output) if "commit" in words else None
    if made is not None:
        out.update(_committed(state, made, output, position))
    if "push" in words and (moved := remote.pushed(output)) is not None:
        commit, ref = moved
        out["pushed"] = Pushed(position=position, commit=commit or made or state.last_commit, ref=ref)
        out.update({"unpushed": (), "unpushed_count": 0})  # the push took what was committed before it
    number = remote.opened_pr(output) if opens is not None else None
    if number is not None:
        out["pull_request"] = PullRequest(position=position, number=number)
        failures = _pr_opened(failures, opens or "", position)
    if reaches:
        failures = _let_in(failures, remote.hosts(f"{line}\n{output}"), position)
    out["failures"] = failures
    out.update(_published(state, made, out.get("pushed"), position))
    return out


def _committed(state: TaskState, made: str, output: str, position: int) -> dict[str, Any]:
    """The fields a commit the session made (``made``, as git's output names it) sets: the last commit, and the
    commits since the last push."""
    done = Commit(position=position, commit=made, subject=remote.commit_subject(output) or "")
    return {"last_commit": made, "last_commit_at": position,
            "unpushed": (*state.unpushed, done)[-UNPUSHED_KEPT:], "unpushed_count": state.unpushed_count + 1}


def _published(state: TaskState, made: str | None, pushed: Pushed | None, position: int) -> dict[str, Any]:
    """A commit was made (``made``) or a push passed (``pushed``): the current requests that asked for only that
    ("Did you commit and pushed the code?", "commit this": ``projections.intent.asks_publish``), made before it, are
    done; a request to push is done by a push alone. They move to the withdrawn ones."""
    if made is None and pushed is None:
        return {}
    commit = pushed.commit if pushed is not None else made
    what = (f"pushed {commit or 'the branch'} to {pushed.ref}" if pushed is not None else f"committed {made}")
    moved = [r.model_copy(update={"withdrawn_at": position, "withdrawn_because": f"done: {what} at [{position}]"})
             for r in state.requirements
             if r.said_at < position
             and (asked := asks_publish(r.text)) and (pushed is not None or asked == {"commit"})]
    return _moved_out(state, moved)


def _tool_opened_pr(
    state: TaskState, failures: tuple[Failure, ...], tool: str, output: str, position: int
) -> dict[str, Any]:
    """A tool call (an MCP server's ``create_pull_request``) that answered with a pull request's address: kept,
    and the failed openings of one from the same branch are answered."""
    given = state.open_call.input if state.open_call is not None and state.open_call.tool == tool else ""
    head = remote.tool_pr_created(tool, given)
    number = remote.opened_pr(output) if head is not None else None
    if number is None:
        return {}  # not such a call, or GitHub answered with an error (the tool itself still "ok")
    return {"pull_request": PullRequest(position=position, number=number),
            "failures": _pr_opened(failures, head or "", position)}


def _pr_opened(failures: tuple[Failure, ...], head: str, position: int) -> tuple[Failure, ...]:
    """``failures`` with the open failed openings of a pull request from branch ``head`` resolved: the PR is
    open now, whichever route opened it. A branch neither names (the current one, unknown here) matches none."""
    if not head:
        return failures
    return tuple(f.model_copy(update={"resolved_at": position})
                 if f.resolved_at is None and f.key.startswith("cmd:") and remote.pr_created(f.what) == head else f
                 for f in failures)


def _let_in(failures: tuple[Failure, ...], reached: frozenset[str], position: int) -> tuple[Failure, ...]:
    """``failures`` with the open refusals of the caller's credentials by a host in ``reached`` resolved: a later
    command got in there, so access is no longer what fails (whatever else the failed command was doing)."""
    if not reached:
        return failures
    return tuple(f.model_copy(update={"resolved_at": position})
                 if f.resolved_at is None and f.key.startswith("cmd:") and remote.access_denied(f.output_tail)
                 and remote.hosts(f"{f.what}\n{f.output_tail}") & reached else f
                 for f in failures)


def _tree_seen(state: TaskState, line: str, output: str, position: int) -> dict[str, Any]:
    """What a ``git status`` or ``git diff`` that passed says of the working tree: a status of the whole tree is
    kept (what was changed already when a sub-agent starts), and after a sub-agent ran, the files it shows changed
    that were not changed before the sub-agent started and that no edit in the log names are the sub-agent's
    (Claude Code keeps its transcript apart, and a session's checkpoint may not hold it)."""
    asked = worktree.asks_tree(line)
    if asked is None:
        return {}
    listed = worktree.changed_files(output)
    out: dict[str, Any] = {}
    if asked[0]:
        out["tree_checked"] = position
        out["tree_dirty"] = tuple(listed)[:RECENT_FILES]
    delegated = state.delegated
    if delegated is None or not listed:
        return out
    before = set(delegated.dirty_before)
    kept = {f.path: f for f in state.tree_files}
    for path, status in listed.items():
        if path in before or any(worktree.same_file(edited, path) for edited in state.files):
            continue
        kept[path] = TreeFile(path=path, status=status, position=position)
    if len(kept) != len(state.tree_files) or any(kept[f.path] != f for f in state.tree_files):
        out["tree_files"] = tuple(kept.values())[:RECENT_FILES]
    return out


def _net(before: ev.FileOperation | None, now: ev.FileOperation) -> ev.FileOperation:
    """A file's status as the task left it: created then edited is still new."""
    if now == "modified" and before == "created":
        return "created"
    return now


_NOTHING_TO_DO = ("nothing to commit", "nothing added to commit", "no changes added to commit", "Already up to date")


def _nothing_to_do(output: str) -> bool:
    return any(phrase in output for phrase in _NOTHING_TO_DO)


def _fold_specific(state: TaskState, event: ev.TaskEvent) -> dict[str, Any]:
    """The fields that ``event`` changes, by event type."""
    pos, at = event.originator_version, event.timestamp
    match event:
        # The events an agent session is mostly made of first: each case is an isinstance check.
        case ev.ToolCalled():
            called = _readable(" ".join(shown(event.input).split()))
            recent = RecentCall(position=pos, tool=event.tool, input=called[:400])
            out = {"tool_calls": state.tool_calls + 1, "last_call": f"{event.tool} {called[:200]}",
                   "open_call": OpenCall(position=pos, at=at, tool=event.tool, input=called[:400]),
                   "recent_calls": (*state.recent_calls, recent)[-RECENT_CALLS:]}
            if event.tool in worktree.SUBAGENT_TOOLS:
                out["delegated"] = Delegation(position=pos, checked_before=state.tree_checked,
                                              dirty_before=state.tree_dirty)
            return out
        case ev.ToolResult():
            key = f"tool:{event.tool}"
            outcome = "ok" if event.ok else "refused" if event.refused == "stopped" else event.refused or "failed"
            came: dict[str, Any] = {"recent_calls": _came_out(state.recent_calls, event.tool, outcome)}
            if event.ok:
                # The same call, allowed now, is no longer blocked.
                came["failures"] = _resolved(state.failures, (key, f"blocked:{state.last_call}"), pos)
                came.update(_tool_opened_pr(state, came["failures"], event.tool, shown(event.output), pos))
                command = (worktree.shell_command(state.open_call.input)
                           if state.open_call is not None and state.open_call.tool == event.tool else None)
                if command is not None:  # a shell run through another tool (PowerShell): a git status it ran
                    came.update(_tree_seen(state, command, shown(event.output), pos))
                answers = _answers(event.tool, shown(event.output))
                if answers:  # the user's own words, given through the agent's question
                    came["notes"] = _recent(state.notes, Note(position=pos, text=answers, at=at, actor="user"),
                                            RECENT_NOTES)
                return came
            output = shown(event.output)
            if event.refused == "stopped":
                # The user said no: a correction, not a failure. A new file's Write refused is kept until the
                # user speaks: if they then ask for something else, what it was for is no longer wanted.
                # A long Write keeps only its input's tail: the path may come with the user's words instead.
                path = written_path(state.open_call.input) if event.tool == "Write" and state.open_call else ""
                refused = RefusedWrite(position=pos, path=path or "") if event.tool == "Write" else None
                return {**came, "tool_errors": state.tool_errors + 1, "refused_write": refused}
            what = state.last_call if state.last_call and state.last_call.startswith(event.tool) else event.tool
            if event.refused == "not_run":
                key = f"blocked:{what}"  # it never ran: it needs the user's permission
            failure = Failure(key=key, what=what, position=pos, at=at, output_tail=tail_lines(output, 3))
            return {**came, "tool_errors": state.tool_errors + 1, "failures": _failed(state.failures, failure)}
        case ev.CommandRan():
            run = facts.command_ran(event)
            line = run.line
            rec = CommandRecord(
                position=pos,
                line=line,
                exit_code=event.exit_code,
                duration_ms=event.duration_ms,
                at=at,
                output_tail=run.output_tail,
            )
            failed = run.failed
            ran = RecentCall(position=pos, tool="command", input=line[:400], outcome="failed" if failed else "ok")
            update: dict[str, Any] = {
                "recent_calls": (*state.recent_calls, ran)[-RECENT_CALLS:],
                "commands_total": state.commands_total + 1,
                "commands_failed": state.commands_failed + int(failed),
                "last_failed_command": rec if failed else state.last_failed_command,
            }
            key = "cmd:" + " ".join(line.split())
            if failed and (_nothing_to_do(rec.output_tail) or is_probe(line)):
                failed = False  # "nothing to commit": already done; `python -c …`: a probe, not the project
            if event.exit_code == 0:
                update.update(_tree_seen(state, line, shown(event.stdout), pos))
            if run.read_only:
                # A read that finds nothing (grep, rg, ls of a missing path) exits non-zero: not a failure.
                update["read_only_commands"] = state.read_only_commands + 1
                return update
            if failed:
                failure = Failure(key=key, what=line, head=command_head(line), position=pos, at=at,
                                  exit_code=event.exit_code,
                                  output_tail=rec.output_tail)
                update["failures"] = _failed(state.failures, failure)
            if event.exit_code != 0 and "commit" in line.split():
                # `git commit … && git push` whose push failed: git's own "[main 548dd49] …" says the commit was made.
                output = f"{shown(event.stdout)}\n{shown(event.stderr)}"
                made = remote.committed(output)
                if made is not None:
                    update.update(_committed(state, made, output, pos))
            elif event.exit_code == 0:
                update["failures"] = _whole_check(
                    _merge_concluded(_resolved(state.failures, (key,), pos, line=line), line, pos), line, pos)
                update.update(_remote_done(state, update["failures"], event, line, pos))
                # A push may have moved a request already: the check's rule works on what is current now.
                moved = state.model_copy(update=update) if "requirements" in update else state
                update.update(_check_passed(moved, line, pos))
            update["commands"] = _recent(state.commands, rec, RECENT_COMMANDS)
            return update
        case ev.FileChanged():
            prev = state.files.get(event.path)
            touch = FileTouch(
                path=event.path,
                operation=_net(prev.operation if prev else None, event.operation),
                position=pos,
                at=at,
                before_sha256=event.before_sha256,
                after_sha256=event.after_sha256,
                changes=(prev.changes if prev else 0) + 1,
                diff_size=event.diff.size if event.diff else None,
                attempt=facts.acting_attempt(event, state.open_attempt),
            )
            # order = order of last change; a renamed file's old path is gone
            files = _latest(state.files, event.path, touch, RECENT_FILES, gone=event.renamed_from or None)
            changed = state.changed_since_intent
            if event.path not in changed and len(changed) < CHANGED_KEPT:
                changed = (*changed, event.path)
            # A file edited is the editing tool working again; a file deleted takes its own failures with it.
            failures = _resolved(state.failures, _EDITOR_KEYS, pos)
            removed: dict[str, Any] = {}
            if event.operation == "deleted":
                failures = _gone_with(failures, event.path, pos)
                removed = _removed(state, event.path, pos)
            return {**removed, "files": files, "failures": failures,
                    "changed_since_intent": changed, "changes_since_intent": state.changes_since_intent + 1,
                    "changed_since_position": state.changed_since_position or pos}
        case ev.TestResult():
            t = TestRecord(name=event.name, outcome=event.outcome, position=pos, at=at, message=event.message,
                           passed=event.passed, failed=event.failed, errors=event.errors, skipped=event.skipped)
            key = f"test:{event.name}"
            # A test run read from the command just before it stands in for that command's entry.
            earlier = tuple(f for f in state.failures if not (f.position == pos - 1 and f.key.startswith("cmd:")))
            # A selection that ran no test at all ("205 deselected") is a mistyped filter, not a failure.
            ran_nothing = event.outcome == "error" and not (event.passed or event.failed or event.errors)
            if facts.tested(event).failing and not ran_nothing:
                failure = Failure(key=key, what=f"test {event.name}", position=pos, at=at,
                                  output_tail=event.message or "")
                failures = _failed(earlier, failure)
            else:
                failures = _resolved(earlier, (key,), pos, test=event.name) if event.outcome == "passed" else earlier
            return {"tests": _latest(state.tests, event.name, t, RECENT_TESTS), "failures": failures}
        case ev.TaskOpened():
            return {
                "id": event.originator_id,
                "number": event.number,
                "title": event.title,
                "slug": event.slug,
                "cwd": event.cwd,
                "project": event.project or event.cwd,
                "opened_at": at,
            }
        case ev.TaskRetitled():
            return {"title": event.title, "titled_at": pos}
        case ev.RequirementStated():
            said = _user_said(state, event)
            state = _after(state, said)
            if said.get("acknowledges"):
                # "Thanks, that works": the user confirms what was done; nothing new to do (older captures
                # filed it as a requirement). Kept as a note, as capture keeps a reply, so it is not lost.
                n = Note(position=pos, text=f"user: {event.text}", at=at, actor=event.actor)
                return {**said["update"], "notes": _recent(state.notes, n, RECENT_NOTES)}
            latest = state.requirements[-1].position if state.requirements else None
            if latest is not None and said.get("withdraws") == "withdrawn":
                return {**said["update"], **_withdrawn(state, latest, event)}
            if latest is not None and said.get("withdraws") == "replaced":
                return {**said["update"], "requirements": _reworded(state, latest, event), "last_intent": pos}
            req = Requirement(position=pos, text=event.text, at=at, actor=event.actor, **said.get("accepts", {}))
            return {**said["update"], "requirements": _recent(state.requirements, req, RECENT_INTENTS),
                    "last_intent": pos}
        case ev.RequirementChanged():
            said = _user_said(state, event)
            state = _after(state, said)
            if said.get("withdraws") == "withdrawn":
                return {**said["update"], **_withdrawn(state, event.supersedes, event)}
            return {**said["update"], "requirements": _reworded(state, event.supersedes, event), "last_intent": pos}
        case ev.CorrectionMade():
            said = _user_said(state, event)
            state = _after(state, said)
            if said.get("acknowledges"):
                n = Note(position=pos, text=f"user: {event.text}", at=at, actor=event.actor)
                return {**said["update"], "notes": _recent(state.notes, n, RECENT_NOTES)}
            if said.get("withdraws") == "withdrawn" and state.requirements:
                return {**said["update"], **_withdrawn(state, state.requirements[-1].position, event)}
            if said.get("accepts"):
                # "yes to all" sent again reads as a correction at capture: it corrects nothing, it takes up
                # what the agent proposed.
                req = Requirement(position=pos, text=event.text, at=at, actor=event.actor, **said["accepts"])
                return {**said["update"], "requirements": _recent(state.requirements, req, RECENT_INTENTS),
                        "last_intent": pos}
            c = Correction(position=pos, text=event.text, wrong=event.wrong, at=at, actor=event.actor)
            return {**said["update"], "corrections": _recent(state.corrections, c, RECENT_INTENTS),
                    "last_intent": pos}
        case ev.IntentReclassified():
            return _reclassified(state, event)
        case ev.DecisionRecorded():
            d = Decision(
                position=pos, text=event.text, reason=event.reason, rejected=event.rejected, at=at, actor=event.actor
            )
            return {"decisions": _recent(state.decisions, d, RECENT_DECISIONS), "last_decision": pos}
        case ev.AttemptStarted():
            a = Attempt(position=pos, text=event.text, at=at)
            return {"attempts": _recent(state.attempts, a, RECENT_ATTEMPTS), "open_attempt": pos}
        case ev.AttemptEnded():
            attempts = tuple(
                a.model_copy(
                    update={"outcome": event.outcome, "reason": event.reason, "ended_position": pos, "ended_at": at}
                )
                if a.position == event.attempt
                else a
                for a in state.attempts
            )
            still_open = None if state.open_attempt == event.attempt else state.open_attempt
            ended_failed = int(facts.attempt_failed(event.outcome))
            return {"attempts": attempts, "open_attempt": still_open,
                    "attempts_failed": state.attempts_failed + ended_failed}
        case ev.CheckpointMarked():
            cp = Checkpoint(
                position=pos,
                label=event.label,
                at=at,
                git_head=event.git_head,
                git_dirty=event.git_dirty,
                note=event.note,
            )
            cleared = _cleared(state, pos) if event.label == ev.CONTEXT_CLEARED else {}
            return {
                **cleared,
                "checkpoints": _recent(state.checkpoints, cp, RECENT_CHECKPOINTS),
                "checkpoints_total": state.checkpoints_total + 1,
            }
        case ev.NextStepSet():
            return {"next_step": event.text, "next_step_position": pos, "next_step_from": "person"}
        case ev.PlanUpdated():
            # The newest of a plan and a `trail next` wins; a finished plan leaves no next step.
            step = facts.next_step(event)
            return {
                "plan": Plan(position=pos, at=at, steps=event.steps, since=_since(state.plan, event.steps, pos)),
                "next_step": step.text,
                "next_step_position": pos if step.text is not None else None,
                "next_step_from": step.source,
            }
        case ev.ContextCompacted():
            summary = shown(event.summary)
            return {"compaction": Compaction(position=pos, at=at, trigger=event.trigger, summary=summary)}
        case ev.AgentReplied():
            replied = shown(event.text)
            checked = _checked(state, pos)
            answered = _said_yes_or_no(state.model_copy(update=checked) if checked else state, replied, pos)
            so_far = {**checked, **answered}
            done = _done_already(state.model_copy(update=so_far) if so_far else state, replied, pos)
            return {**so_far, **done, "last_reply": Reply(position=pos, at=at, text=replied)}
        case ev.StatusChanged():
            return {"status": event.status, "status_reason": event.reason}
        case ev.NoteAdded():
            n = Note(position=pos, text=event.text, at=at, actor=event.actor)
            reply = event.text.removeprefix(USER_REPLY) if event.actor == "user" else ""
            resolved = _works_now(state, reply, pos) if event.text.startswith(USER_REPLY) else {}
            return {**resolved, "notes": _recent(state.notes, n, RECENT_NOTES)}
        case ev.ConversationLinked():
            conv = Conversation(
                position=pos, agent=event.agent, session_id=event.session_id, transcript=event.transcript, at=at
            )
            return {"conversations": _recent(state.conversations, conv, RECENT_CONVERSATIONS)}
        case ev.TaskLinked():
            link = TaskLink(position=pos, relation=event.relation, other=event.other, other_number=event.other_number)
            return {"links": (*state.links, link)}
    return {}


def _reworded(
    state: TaskState, target: int, event: ev.RequirementStated | ev.RequirementChanged
) -> tuple[Requirement, ...]:
    """The requirements with the one at ``target`` given ``event``'s wording (the old one kept as history)."""
    return tuple(
        r.model_copy(update={"text": event.text, "history": (*r.history, r.text)[-WORDINGS_KEPT:],
                             "changed_at": event.originator_version})
        if r.position == target else r
        for r in state.requirements
    )


def _withdrawn(state: TaskState, target: int, event: ev.TaskEvent) -> dict[str, Any]:
    """The requirement at ``target`` moved out of the current ones: the user withdrew it with ``event``."""
    pos = event.originator_version
    gone = next((r for r in state.requirements if r.position == target), None)
    if gone is None:  # withdrawn before, or older than the window: nothing current changes
        return {"last_intent": pos}
    why = getattr(event, "text", None)
    return {
        "requirements": tuple(r for r in state.requirements if r.position != target),
        "withdrawn": _recent(state.withdrawn, gone.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why}),
                             RECENT_WITHDRAWN),
        "last_intent": pos,
    }


def _user_said(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
               ) -> dict[str, Any]:
    """What the user's intent ``event`` does besides its own kind: ``withdraws`` (``projections.intent.withdrawal``)
    and, in ``update``, the agent's changes since the user last spoke closed, as a failed attempt with the user's
    words as its reason when those words say it does not work ("still doesn't work")."""
    update: dict[str, Any] = {"changed_since_intent": (), "changes_since_intent": 0, "changed_since_position": None,
                              "refused_write": None, "recent_calls": ()}
    if event.actor != "user":
        return {"update": {}}
    resolved = _works_now(state, event.text, event.originator_version)
    if resolved:
        update.update(resolved)
        state = state.model_copy(update=resolved)
    if acknowledgement(event.text):
        return {"update": update, "acknowledges": True}
    moved = (_answered(state, event) or _turned_down(state, event) or _reported_again(state, event)
             or _next_ci_run(state, event) or _refined(state, event))
    if moved:
        update.update(moved)
        state = state.model_copy(update=moved)
    # "i dont need the token" may come with an answered question moved out: both apply.
    for rule in (_no_longer_needed, _called_off, _narrowed, _addressed, _moved_on, _proposal_done, _restated):
        also = rule(state, event)
        if also:
            update.update(also)
            state = state.model_copy(update=also)
    start = state.changed_since_position
    if start is not None and state.open_attempt is None and says_failed(event.text):
        # An edit, then "still doesn't work": the change was an approach, and it failed (a fresh agent must
        # not propose it again). The agent's own words of the turn, when it spoke after the change, name it.
        files = ", ".join(_short_path(p) for p in state.changed_since_intent)
        more = state.changes_since_intent - len(state.changed_since_intent)
        what = f"changed {files}" + (f" and {more} more" if more > 0 and len(state.changed_since_intent) == CHANGED_KEPT
                                      else "")
        reply = state.last_reply
        if reply is not None and reply.position > start and reply.text.strip():
            what = f"{what}: {_first_sentence(reply.text)}"
        attempt = Attempt(position=start, text=what, at=event.timestamp, outcome="failed", reason=event.text,
                          ended_position=event.originator_version, ended_at=event.timestamp)
        update["attempts"] = _recent(state.attempts, attempt, RECENT_ATTEMPTS)
        update["attempts_failed"] = state.attempts_failed + 1
        update.update(_approach_failed(state, start, event))
    out: dict[str, Any] = {"update": update, "withdraws": withdrawal(event.text)}
    reply = state.last_reply
    if accepts(event.text) and reply is not None and reply.position > (state.last_intent or 0):
        offer = _offer(reply.text)
        if offer is not None:  # a reply that offers nothing: "implement it" asks for the work talked of
            out["accepts"] = {"accepted_at": reply.position, "proposal": offer}
    return out


def _answered(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
              ) -> dict[str, Any]:
    """When the user speaks again, the current requirements that are done in their own turn are no longer
    current: they move to the withdrawn ones, as answered or done. Two kinds:

    - one that only asked for an answer or a check (``projections.intent.enquiry``: "explain what X does",
      "show tools"), answered since, once the user asks for work ("replace them with a link") or moves to
      another subject (words that ask no further question, share no word with it and do not point back: "hi",
      "explore the repo and give an overview"); another question ("no, I meant the other function", "list
      five weak points") builds on the answer, which stays;
    - a one-off command to run ("start phoenix in background", "run the benchmark"), once it ran without a
      failure and the agent spoke since, when the new words share no word with it ("the scrollback still
      does not work" is about something else; "the server still does not start" is not);
    - a question that proposes a change ("Can we not capture the Ctrl+C and kill the daemon first?"), once the
      agent's answer opened with no ("No — the dialog fires before any exit hook", "That would be risky") and the
      user's next words accept it ("Okay, … I agree with the observations") or ask for other work that shares no
      word with it ("make a PR for this"): the proposal is settled, not to be done.

    A withdrawal is its own rule."""
    reply = state.last_reply
    if withdrawal(event.text) is not None:
        return {}
    work = names_work(event.text) or asks_redo(event.text)
    pos = event.originator_version
    moved: list[Requirement] = []
    # A check ("check again") is answered by the checks the agent ran, when it said nothing in between.
    # A read-only check is a recent call, not a command kept.
    calls = sorted([c.position for c in state.commands] + [c.position for c in state.recent_calls]) if work else []
    for r in state.requirements:
        said = r.said_at
        replied = reply is not None and reply.position > said
        after = bisect_right(calls, said)  # the first call after the request (``calls`` in order)
        ran = calls[after] if after < len(calls) else None
        if not (replied or ran is not None):
            continue
        at = reply.position if reply is not None and replied else ran
        if enquiry(r.text) and (work or not (enquiry(event.text) or _builds_on(r.text, event.text))):
            why = (f"answered at [{at}] (it asked for an answer, not a change); the user "
                   f"{'asked for more' if work else 'moved on'} at [{pos}]")
        elif replied and _one_off(r.text) and _ran_clean(state, said) and not _words(r.text) & _words(event.text):
            why = (f"done: a command to run, it ran without a failure by [{at}]; "
                   f"the user moved on at [{pos}]")
        elif (branch := branch_move(r.text)) is not None and (moved_at := _switched(state, branch, said)):
            why = f"done: the agent moved to branch {branch} at [{moved_at}]; the user moved on at [{pos}]"
        elif (replied and reply is not None and _proposal(r.text) and declines(reply.text)
              and (agrees(event.text) or (work and not _words(r.text) & _words(event.text)))):
            # Agreeing settles it; so does asking for other work that takes none of the proposal up.
            how = "agreed" if agrees(event.text) else "asked for other work"
            why = f"answered no at [{reply.position}]; the user {how} at [{pos}]"
        else:
            continue
        moved.append(r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why}))
    return _moved_out(state, moved)


def _proposal(text: str) -> bool:
    """A short question of the user's (one paragraph, ending in "?"): what a no can answer."""
    text = text.strip()
    return text.endswith("?") and len(text) <= ENQUIRY_MAX and "\n\n" not in text


def _addressed(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
               ) -> dict[str, Any]:
    """The user reported an error ("I get .: cannot open file …"), the agent changed files for it and answered,
    and the user's next words neither say it still fails nor come back to it (they report on something else,
    "the counter is not decremented"): the error is behind them. The report moves to the withdrawn ones, as
    addressed by those changes; the user's words that it still fails keep it (the failed-attempt rule)."""
    start, reply = state.changed_since_position, state.last_reply
    if start is None or reply is None or reply.position < start or says_failed(event.text):
        return {}
    if withdrawal(event.text) is not None or reports_problem(event.text):
        return {}  # a withdrawal is its own rule; a pasted trace may be the same error again
    pos, now = event.originator_version, _words(event.text)
    moved = []
    for r in state.requirements:
        said = r.said_at
        if said != state.last_intent or not reports_error(r.text) or _words(r.text) & now:
            continue
        files = ", ".join(_short_path(p) for p in state.changed_since_intent)
        why = (f"addressed: the agent changed {files} after it and answered at [{reply.position}]; the user's next "
               f"words at [{pos}] do not report it again")
        moved.append(r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why}))
    return _moved_out(state, moved)


def _narrowed(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
              ) -> dict[str, Any]:
    """The user tells the agent not to make what a current request asked for ("don't create a pr, just a
    commit" after "create a PR against next to solve this issue"): that request is narrowed, the part replaced
    by these words. The latest current requirement that asks to make that thing (its verb and its name) is
    marked; the rest of it stands."""
    dropped = drops(event.text)
    if dropped is None:
        return {}
    verb, thing = dropped
    pos = event.originator_version
    for r in reversed(state.requirements):
        if r.position < pos and r.narrowed_at is None and thing in _names_in(r.text) and verb in r.text.lower():
            narrowed = r.model_copy(update={"narrowed_at": pos, "narrowed_by": one_line(event.text, 200)})
            return {"requirements": tuple(narrowed if q.position == r.position else q for q in state.requirements)}
    return {}


def _no_longer_needed(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
                      ) -> dict[str, Any]:
    """The user says they no longer need something ("ahh ok looks like i dont need the token", "I don't need
    the export anymore"): the latest current requirement naming it is withdrawn, the user's words as why."""
    thing = not_needed(event.text)
    if thing is None:
        return {}
    pos, wanted = event.originator_version, singular(thing)
    named = next((r for r in reversed(state.requirements) if r.position < pos and wanted in _names_in(r.text)), None)
    if named is None:
        return {}
    why = f"withdrawn: the user said they do not need the {thing} at [{pos}]: {one_line(event.text, 120)}"
    return _moved_out(state, [named.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why})])


@functools.lru_cache(maxsize=4096)
def _names_in(text: str) -> frozenset[str]:
    """Every word of ``text``, lower-cased and singular: what a thing the user named may be (memoised: asked of
    each open failure at each user statement)."""
    return frozenset({singular(w.rstrip(".")) for w in re.findall(r"[a-z0-9][\w.-]*", text.lower())})


def _called_off(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
                ) -> dict[str, Any]:
    """The user calls off what failed: words that say a failed command's program or a failed test is not needed
    or not to be used ("why do you need docker for the api logs?" after `docker compose up` failed, "forget the
    tests"), or a withdrawal ("skip that") of the requirement the failures came after. Those failures are
    called off: no longer failing now, and not fixed either."""
    things = calls_off(event.text)
    latest = state.requirements[-1].position if state.requirements else None
    withdrawn = latest is not None and withdrawal(event.text) is not None
    if not things and not withdrawn:
        return {}
    pos = event.originator_version

    def off(f: Failure) -> bool:
        if not f.failing or not f.key.startswith(("cmd:", "test:")):
            return False
        return bool(things & _names_in(f.what)) or (withdrawn and latest is not None and f.position > latest)

    hits = [i for i, f in enumerate(state.failures) if off(f)]
    if not hits:
        return {}
    failures = list(state.failures)
    for i in hits:
        failures[i] = failures[i].model_copy(update={"called_off": pos})
    return {"failures": tuple(failures)}


def _cleared(state: TaskState, position: int) -> dict[str, Any]:
    """The user cleared the conversation (``/clear``): the requirements and the plan given before it in that
    conversation (since its ``ConversationLinked``) are closed; what other sessions of the task asked stays."""
    start = state.conversations[-1].position if state.conversations else 0
    why = f"closed: the user cleared the conversation at [{position}]"
    update = _moved_out(state, [r.model_copy(update={"withdrawn_at": position, "withdrawn_because": why})
                                for r in state.requirements if start < r.position < position])
    if state.plan is not None and start < state.plan.position < position:
        update["plan"] = None
        if state.next_step_from == "plan":
            update.update({"next_step": None, "next_step_position": None, "next_step_from": None})
    return update


def _switched(state: TaskState, branch: str, since: int) -> int | None:
    """Position of the first command after ``since`` that moved to ``branch`` and exited 0, or None."""
    for c in state.commands:
        if c.position > since and c.exit_code == 0 and any(
                b == branch or b.rsplit("/", 1)[-1] == branch for b in switches_to(c.line)):
            return c.position
    return None


def _reported_again(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
                    ) -> dict[str, Any]:
    """The user reports a new error with a command they reported failing before, after the agent changed
    files ("when I run `x:y` I get this error: …", a fix, "now I am getting 403 …: script x:y exited"): the
    run got past the first error, so that report is replaced by this one. "Still the same error" is not new
    (the failed-attempt rule); a report naming no command it shares with the earlier one is other work."""
    if state.changes_since_intent == 0 or says_failed(event.text) or not reports_error(event.text):
        return {}
    named, pos = names(event.text), event.originator_version
    why = f"replaced: the user's next report on the same command at [{pos}], after the agent's changes"
    moved = [r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why})
             for r in state.requirements if reports_error(r.text) and names(r.text) & named]
    return _moved_out(state, moved)


def _next_ci_run(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
                 ) -> dict[str, Any]:
    """The user pastes a CI job's log (``projections.intent.ci_run``) after the agent changed files since the last
    one they pasted: CI ran again on those changes, and this log is what it says now. The earlier pasted logs are
    replaced (the run got past them, or fails the same way again in this one); two logs pasted with no change
    between them are two jobs of one run, and both stay."""
    if state.changes_since_intent == 0 or not ci_run(event.text):
        return {}
    pos = event.originator_version
    why = f"replaced: the user pasted the next CI run at [{pos}], after the agent's changes"
    moved = [r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why})
             for r in state.requirements if ci_run(r.text)]
    return _moved_out(state, moved)


_FINER_MAX = 200
_ADDS = lazy(r"\b(?:also|too|again|another|more|as\s+well|additionally|plus)\b", re.IGNORECASE)


def _refined(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
             ) -> dict[str, Any]:
    """The user's next words, right after the agent changed files for their latest request, say again how the
    same thing should be, finer ("Messate/text should be aligned in the middle of the avatar and time", a change,
    then "Should be aligned with just the avatar in the middle"): one short sentence, every naming word of it (three
    or more) in the request, no question, nothing added ("also", "too", "more"), not a report that it failed (the
    failed-attempt rule). The request is replaced by these words; it moves to the withdrawn ones."""
    if not state.requirements or state.changes_since_intent == 0:
        return {}
    latest, text = state.requirements[-1], event.text.strip()
    if latest.said_at != state.last_intent or latest.accepted_at is not None:
        return {}
    if len(text) > _FINER_MAX or "\n" in text or "?" in text or _ADDS.search(text) or says_failed(text):
        return {}
    now = _words(text)
    if len(now) < 3 or not now <= _words(latest.text):
        return {}
    pos = event.originator_version
    why = f"replaced: the user's finer wording at [{pos}], after the agent's change: {one_line(text, 120)}"
    return _moved_out(state, [latest.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why})])


_JUST_WANT = lazy(r"\b(?:(?:i|we)\s+(?:really\s+)?(?:just|only)\s+(?:want|need)|all\s+(?:i|we)\s+(?:want|need)\s+is)\s+"
                  r"(?:a|an|the|one)\b", re.IGNORECASE)
""""really i just want a oneliner", "all I need is a flag": what the user wants instead of what they asked for."""
_CUE_WORDS = frozenset({"really", "just", "only", "want", "need"})


def _restated(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
              ) -> dict[str, Any]:
    """The user says they just want one thing of what an earlier request of theirs asked for more of ("can we put
    1 or 2 lines of summarizing the philosophy's metaphor into the readme?", the agent's change, then "the philosophy
    section of the readme is too long... really i just want a oneliner"): the latest current request (not the task's
    first) that the agent changed files after and that shares two naming words with these words is replaced by
    them. It moves to the withdrawn ones."""
    if len(state.requirements) < 2 or not _JUST_WANT.search(event.text):
        return {}
    now = _words(event.text) - _CUE_WORDS
    changed = max((f.position for f in state.files.values()), default=0)
    pos = event.originator_version
    for r in reversed(state.requirements[1:]):
        if r.said_at < changed and len(_words(r.text) & now) >= 2:
            why = f"replaced: the user said at [{pos}] what they just want instead: {one_line(event.text, 120)}"
            return _moved_out(state, [r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why})])
    return {}


def _proposal_done(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
                   ) -> dict[str, Any]:
    """The user speaks again after the agent answered the proposal they took up ("yes to all", then the agent's
    work and its reply): that proposal was carried out, and the user goes on; it moves to the withdrawn ones.
    Words that say it did not work keep it (the failed-attempt rule)."""
    reply = state.last_reply
    if reply is None or says_failed(event.text):
        return {}
    pos = event.originator_version
    why = f"done: the agent answered at [{reply.position}] after it; the user went on at [{pos}]"
    moved = [r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why})
             for r in state.requirements if r.accepted_at is not None and reply.position > r.said_at]
    return _moved_out(state, moved)


_OFFER = lazy(
    r"""^\W*(?:(?:so|or|and)\s+)?(?:want\s+me\s+to|would\s+you\s+like|do\s+you\s+want|shall\s+i|should\s+i|
        if\s+you(?:['\u2019]d|\s+would)?\s+(?:like|want|prefer)|i\s+can\s+(?:also\s+)?|next(?:\s+steps?)?\s*[:?]|
        (?:possible\s+)?next\s+options?|options?\s*:)""",
    re.IGNORECASE | re.VERBOSE,
)
OFFER_KEPT = 400
"""Characters of the agent's proposal kept with the words that take it up."""


def _offer(reply: str) -> str | None:
    """What the agent's ``reply`` proposes, on one line: from its last line that opens an offer ("Want me to …?",
    "Would you like me to:", "If you want next:") to its end, else its last paragraph when that asks ("… or keep it
    pinned to 3.12?"); None when it proposes nothing."""
    rows = [line for line in reply.strip().splitlines() if line.strip()]
    start = next((i for i in range(len(rows) - 1, -1, -1) if _OFFER.match(rows[i])), None)
    if start is None:
        last = reply.strip().split("\n\n")[-1]
        return one_line(last, OFFER_KEPT) if last.rstrip().endswith("?") else None
    return one_line(" ".join(r.strip() for r in rows[start:]), OFFER_KEPT)


def _moved_out(state: TaskState, moved: list[Requirement]) -> dict[str, Any]:
    """The fields that move ``moved`` (copies of current requirements, their reason set) to the withdrawn ones."""
    if not moved:
        return {}
    gone = {r.position for r in moved}
    return {"requirements": tuple(r for r in state.requirements if r.position not in gone),
            "withdrawn": (*state.withdrawn, *moved)[-RECENT_WITHDRAWN:]}


USER_REPLY = "user: "
"""How capture files the user's reply that is no request ("it worked!"): a note with this prefix."""


def _works_now(state: TaskState, text: str, position: int) -> dict[str, Any]:
    """The user says it works now ("it worked!", "things are working smoothly"): the current requirements that
    reported it did not (``projections.intent.reports_problem``: "still no" with a pasted terminal session,
    "it still seems to hang") are resolved, and move to the withdrawn ones."""
    if not (acknowledgement(text) or says_works(text)):
        return {}
    moved = [r.model_copy(update={"withdrawn_at": position,
                                  "withdrawn_because": f"resolved: the user said it works at [{position}]"})
             for r in state.requirements if r.said_at < position and reports_problem(r.text)]
    return _moved_out(state, moved)


def _checked(state: TaskState, position: int) -> dict[str, Any]:
    """The agent answers after its plan finished: a request that only asked it to check or say something
    (``projections.intent.enquiry``: "the subagents seem stuck or done... can you check?") made before the plan
    finished is answered, though the user has not spoken since; it moves to the withdrawn ones."""
    plan = state.plan
    if plan is None or not plan.steps or any(step.status != "completed" for step in plan.steps):
        return {}
    done = max(plan.since or (plan.position,))
    why = f"answered at [{position}], after the plan finished at [{done}]"
    moved = [r.model_copy(update={"withdrawn_at": position, "withdrawn_because": why})
             for r in state.requirements if r.said_at < done and enquiry(r.text)]
    return _moved_out(state, moved)


def _said_yes_or_no(state: TaskState, reply: str, position: int) -> dict[str, Any]:
    """The user's latest words asked a yes/no question that names no work ("do we have another merge conflict
    now?", "… my local git config is messed up, right?") and the agent answers it with a yes or a no ("No, it's only
    the temp repo's config"), having changed no file since: the question is answered. It moves to the withdrawn
    ones; a question that asked for a change is a request, and one the agent changed files for is other work."""
    if state.changes_since_intent or not state.requirements or not answers_yes_no(reply):
        return {}
    latest = state.requirements[-1]
    if latest.said_at != state.last_intent or not yes_no_question(latest.text):
        return {}
    why = f"answered at [{position}]: {one_line(reply, 100)}"
    return _moved_out(state, [latest.model_copy(update={"withdrawn_at": position, "withdrawn_because": why})])


def _check_passed(state: TaskState, line: str, position: int) -> dict[str, Any]:
    """A check passed (``projections.commands.passed_checks``: a lint, a format check, tests, a build) after the
    agent changed files: the current requirements that were only a failed check of that kind pasted by the user
    (``projections.intent.reported_check``: CI's golangci-lint report, "The following files need gofmt
    formatting: …") are fixed. The failure reached the fold as the user's words, never as a command, so no rerun
    of it can match; a local check of the same kind after a change is what answers it. They move to the
    withdrawn ones; a report of several kinds needs a pass of each in one line."""
    kinds = passed_checks(line)
    if not kinds or not state.requirements:
        return {}
    moved = []
    for r in state.requirements:
        reported = reported_check(r.text)
        if not reported or not reported <= kinds:
            continue
        said = r.said_at
        changed = [f.path for f in state.files.values() if f.position > said]
        if not changed:
            continue  # nothing was changed since the report: the same code passing locally fixes nothing
        files = ", ".join(_short_path(p) for p in changed[-CHANGED_KEPT:])
        why = (f"fixed: a failed {'/'.join(sorted(reported))} check the user pasted; the agent changed {files} "
               f"after it, and `{one_line(line, 80)}` passed at [{position}]")
        moved.append(r.model_copy(update={"withdrawn_at": position, "withdrawn_because": why}))
    return _moved_out(state, moved)


_COVERED_KINDS = frozenset({"lint", "format"})
"""Checks a whole run answers for a run on some files of: a linter or formatter looks at every file it is given
the same way (tests and builds depend on what they select, which fold 10's ``covers`` reads)."""


def _whole_check(failures: tuple[Failure, ...], line: str, position: int) -> tuple[Failure, ...]:
    """``failures`` with the open lint or format runs on named files (``golangci-lint run ./cmd/x/a.go``) resolved
    once a lint or format check of the project as a whole passed (``mise run lint``): it checked those files
    too, whatever program it runs."""
    kinds = whole_checks(line) & _COVERED_KINDS
    if not kinds:
        return failures
    return tuple(f.model_copy(update={"resolved_at": position})
                 if f.resolved_at is None and f.key.startswith("cmd:") and path_checks(f.what) & kinds else f
                 for f in failures)


_REPEAT_SHARE = 0.5
"""The share of the shorter request's words another must hold to ask the same again."""


def _repeats(now: str, before: str) -> bool:
    """Whether the request ``now`` asks again what ``before`` asked: the same words, or at least half of the
    shorter one's naming words (five or more) in common (a review comment pasted again, reworded for another
    function)."""
    if " ".join(now.split()) == " ".join(before.split()):
        return True
    a, b = _words(now), _words(before)
    shared = len(a & b)
    return shared >= 5 and shared >= _REPEAT_SHARE * min(len(a), len(b))


def _done_already(state: TaskState, reply: str, position: int) -> dict[str, Any]:
    """The user's latest words ask again for what an earlier current request asked (sent again, or a review
    comment pasted a second time), and the agent answers, changing no file since, that it is done already ("The
    timeout is already in place for both functions", "Those tests were already added in the previous step"):
    the request and the ones it repeats are done. They move to the withdrawn ones; a request asked once keeps
    its place whatever the agent says of it."""
    if state.changes_since_intent or state.last_intent is None or not says_already_done(reply):
        return {}
    said = next((r.text for r in state.requirements if r.said_at == state.last_intent),
                None)
    if said is None:
        said = next((c.text for c in state.corrections if c.position == state.last_intent), None)
    if said is None:
        return {}
    earlier = [r for r in state.requirements if r.said_at < state.last_intent
               and _repeats(said, r.text)]
    if not earlier:
        return {}
    why = f"done already: asked again at [{state.last_intent}], and the agent said at [{position}]: " \
          f"{one_line(reply, 100)}"
    moved = [r.model_copy(update={"withdrawn_at": position, "withdrawn_because": why}) for r in state.requirements
             if r in earlier or r.said_at == state.last_intent]
    return _moved_out(state, moved)


def _removed(state: TaskState, path: str, position: int) -> dict[str, Any]:
    """The agent deleted the file ``path``: a current request to remove that file ("Remove the
    docs/task-honor-ignore-lists.md file as the work is done") is done. It moves to the withdrawn ones."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    why = f"done: {name} deleted at [{position}]"
    moved = [r.model_copy(update={"withdrawn_at": position, "withdrawn_because": why}) for r in state.requirements
             if r.position < position and asks_removal(r.text, name)]
    return _moved_out(state, moved)


def _moved_on(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
              ) -> dict[str, Any]:
    """The user picks other numbered items from a list ("okay now let's do 6,7,8,10") after asking for some
    ("let's start with implementing suggestions 1-4 first") and the agent changed files since: the earlier pick
    is done, and the user moved on. It moves to the withdrawn ones; a pick sharing a number with it is the same
    work again."""
    now = selects(event.text)
    if not now:
        return {}
    pos = event.originator_version
    moved = []
    for r in state.requirements:
        said = r.said_at
        before = selects(r.text)
        if not before or before & now or not any(f.position > said for f in state.files.values()):
            continue
        why = (f"done: the agent changed files after it; the user went on to items "
               f"{', '.join(map(str, sorted(now)))} at [{pos}]")
        moved.append(r.model_copy(update={"withdrawn_at": pos, "withdrawn_because": why}))
    return _moved_out(state, moved)


def _gone_with(failures: tuple[Failure, ...], path: str, position: int) -> tuple[Failure, ...]:
    """``failures`` with the open ones that name the deleted file ``path`` (`npm test src/a.test.ts` after the
    file was removed) marked resolved at ``position``: what failed in a file that is gone is not failing now."""
    def names(f: Failure) -> bool:
        return any(len(word) > 3 and ("/" in word or "." in word)
                   and (path == word or path.endswith("/" + word.lstrip("./"))) for word in f.what.split())
    return tuple(f.model_copy(update={"resolved_at": position}) if f.resolved_at is None and names(f) else f
                 for f in failures)


_STOPWORDS = frozenset({"what", "that", "this", "with", "from", "have", "does", "about", "there", "where",
    "which", "please", "could", "would", "should", "into", "your", "when", "then", "them", "they", "will", "just",
    "some", "also", "like", "make", "want", "need", "tell", "show", "more", "very", "only", "been", "were",
    "here"})
_POINTS_BACK = lazy(
    r"\b(?:it|its|this|that|these|those|them|they|more|also|again|other|same|meant|instead)\b", re.IGNORECASE)
_ONE_OFF = lazy(r"^\W*(?:please\s+)?(?:re)?(?:start|run|launch|boot|spin\s+up|stop|kill|open)\b\s*(.*)$",
                      re.IGNORECASE | re.DOTALL)


def _words(text: str) -> set[str]:
    """The words of ``text`` that name something (four letters or more, not a function word)."""
    return {w for w in re.findall(r"[a-z0-9_]{4,}", text.lower()) if w not in _STOPWORDS}


def _builds_on(before: str, now: str) -> bool:
    """Whether ``now`` comes back to ``before``: a word in common, or a word that points back ("its", "more")."""
    return bool(_words(before) & _words(now)) or _POINTS_BACK.search(now) is not None


def _one_off(text: str) -> bool:
    """A short request to run or start something and nothing more ("start phoenix in background")."""
    match = _ONE_OFF.match(text.strip())
    return match is not None and len(text) <= 120 and "\n" not in text.strip() and not names_work(match.group(1))


def _ran_clean(state: TaskState, since: int) -> bool:
    """Whether a command ran without a failure after ``since`` and nothing has failed since then."""
    ran = any(c.position > since and c.exit_code == 0 for c in state.commands)
    return ran and not any(f.position > since and f.failing for f in state.failures)


def _came_out(calls: tuple[RecentCall, ...], tool: str, outcome: str) -> tuple[RecentCall, ...]:
    """``calls`` with the latest call of ``tool`` still waiting given its ``outcome``."""
    for i in range(len(calls) - 1, -1, -1):
        if calls[i].tool == tool and calls[i].outcome is None:
            return (*calls[:i], calls[i].model_copy(update={"outcome": outcome}), *calls[i + 1:])
    return calls


_ANSWER = lazy(r'"([^"]{1,300})"="([^"]{0,300})"')


def _answers(tool: str, output: str) -> str:
    """The user's answers to the agent's AskUserQuestion, as a note ("user answered: Which tools? -> X"), or ""."""
    if tool != "AskUserQuestion":
        return ""
    pairs = _ANSWER.findall(output)
    return "user answered: " + "; ".join(f"{q} -> {a}" for q, a in pairs) if pairs else ""


def _turned_down(state: TaskState, event: ev.RequirementStated | ev.RequirementChanged | ev.CorrectionMade
                 ) -> dict[str, Any]:
    """The user refused the agent's Write of a new file (or of one the task deleted), and their next words ask for
    something else (they name no part of that file's name): what the latest requirement asked that file for is not
    wanted. It moves to the withdrawn ones; words that come back to the file ("save that test as a unit test")
    keep it."""
    refused = state.refused_write
    if refused is None or not state.requirements or withdrawal(event.text) is not None:
        return {}
    path = refused.path or written_path(getattr(event, "wrong", None) or "")
    latest = state.requirements[-1]
    kept = state.files.get(path) if path else None
    # A file the task deleted is new again to a Write: refusing it is refusing to bring it back.
    if not path or (kept is not None and kept.operation != "deleted") or latest.said_at > refused.position:
        return {}
    words = {w for w in re.split(r"[^a-z0-9]+", path.rsplit("/", 1)[-1].lower()) if len(w) >= 3}
    said = set(re.split(r"[^a-z0-9]+", event.text.lower()))
    if words & said or "file" in said:
        return {}
    name = path.rsplit("/", 1)[-1]
    moved = _withdrawn(state, latest.position, event)
    moved["withdrawn"] = (*moved["withdrawn"][:-1], moved["withdrawn"][-1].model_copy(update={
        "withdrawn_because": f"the user refused its Write of {name} at [{refused.position}] and asked for "
                             f"something else: {one_line(event.text, 120)}"}))
    moved.pop("last_intent", None)
    return moved


_WRITTEN = lazy(r'"file_path":\s*"((?:[^"\\]|\\.)+)"')


def written_path(call: str) -> str:
    """The file a Write call was to create, read from its input as the fold keeps it (clipped JSON), or from
    a correction's ``wrong`` (``Write {"file_path": ...``); "" when neither says."""
    match = _WRITTEN.search(call)
    return match.group(1) if match else ""


def _since(plan: Plan | None, steps: tuple[ev.PlanStep, ...], position: int) -> tuple[int, ...]:
    """Where each of ``steps`` took its status: the earlier plan's position for a step it already had with the
    same text and status (by id where the agent gives one), else ``position``."""
    before: dict[tuple[str | None, str], tuple[str, int]] = {}
    if plan is not None:
        for i, s in enumerate(plan.steps):
            at = plan.since[i] if i < len(plan.since) else plan.position
            before.setdefault((s.id, s.text if s.id is None else ""), (s.status, at))
    out = []
    for s in steps:
        was = before.get((s.id, s.text if s.id is None else ""))
        out.append(was[1] if was is not None and was[0] == s.status else position)
    return tuple(out)


def _approach_failed(state: TaskState, start: int, event: ev.TaskEvent) -> dict[str, Any]:
    """When the user's last request before the failed change prescribed how to do it ("try the https
    address", "use a rewrite instead") and is not the task's goal (the first), it is no longer current:
    it was tried and failed, and what comes next replaces it. It moves to the withdrawn ones, the user's
    words as why. A request of what to do ("also add a PDF export") stays, failing or not."""
    if len(state.requirements) < 2:
        return {}
    latest = state.requirements[-1]
    said = latest.said_at
    if said != state.last_intent or said > start or not prescribes(latest.text):
        return {}
    moved = _withdrawn(state, latest.position, event)
    moved["withdrawn"] = (*moved["withdrawn"][:-1], moved["withdrawn"][-1].model_copy(
        update={"withdrawn_because": f"tried, and the user said it did not work: {getattr(event, 'text', '')}"}))
    return moved


def _after(state: TaskState, said: dict[str, Any]) -> TaskState:
    """``state`` with what the user's words did besides their own kind, when that moved a requirement (the
    event's own rule then works on what is current now)."""
    return state.model_copy(update=said["update"]) if "requirements" in said["update"] else state


def _short_path(path: str) -> str:
    """The file's folder and name (``shell/init.go``), from a POSIX or a Windows path."""
    return "/".join(re.split(r"[/\\]", path.rstrip("/\\"))[-2:])


_SENTENCE = lazy(r"(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))+[.!?]*")
"""A sentence: up to a ``.``/``!``/``?`` before a blank or a line's end (``next.config.js`` is one word)."""


def _first_sentence(text: str, width: int = 200) -> str:
    """The agent's first sentence that says something: past an opening "Excellent!" or "Done!"."""
    sentences = [m.group(0).strip(" #*-") for m in _SENTENCE.finditer(text) if m.group(0).strip(" #*-")]
    said = next((x for x in sentences if len(x.split()) > 2), sentences[0] if sentences else "")
    return said[:width]


def _reclassified(state: TaskState, event: ev.IntentReclassified) -> dict[str, Any]:
    """Move the intent at ``event.target`` to the list its new kind belongs in."""
    req = next((r for r in state.requirements if r.position == event.target), None)
    cor = next((c for c in state.corrections if c.position == event.target), None)
    moved = req or cor
    if moved is None:  # a requirement change: it lives as a wording in another requirement's history
        return {}
    requirements = tuple(r for r in state.requirements if r.position != event.target)
    corrections = tuple(c for c in state.corrections if c.position != event.target)
    if event.kind == "requirement":
        requirements = tuple(sorted(
            (*requirements, Requirement(position=moved.position, text=moved.text, at=moved.at, actor=moved.actor)),
            key=lambda r: r.position,
        ))
    elif event.kind == "correction":
        corrections = tuple(sorted(
            (*corrections, Correction(position=moved.position, text=moved.text, wrong=None, at=moved.at,
                                      actor=moved.actor)),
            key=lambda c: c.position,
        ))
    else:
        requirements = tuple(
            r.model_copy(update={"text": moved.text, "history": (*r.history, r.text), "changed_at": event.target})
            if r.position == event.supersedes else r
            for r in requirements
        )
    return {"requirements": requirements, "corrections": corrections}


_CALL_STAYS_OPEN = (ev.CheckpointMarked, ev.StatusChanged, ev.ConversationLinked, ev.TaskLinked)
"""What an import or a person adds after a session's end: a call open before them stays open."""


def fold(state: TaskState, event: ev.TaskEvent) -> TaskState:
    """The state after ``event``. Pure: ``state`` is left as it was."""
    return replay((event,), state)


def replay(events: Iterable[ev.TaskEvent], state: TaskState | None = None) -> TaskState:
    """Fold ``events`` onto ``state`` (an empty task when None): ``functools.reduce(fold, events, state)``,
    without a new state per event. ``state`` is left as it was."""
    # One private copy takes each event's changes in place, as ``model_copy(update=...)`` applies them
    # to its copy, and no one sees it before the end. The rules replace collections, never edit
    # them, so the values ``state`` shares with the copy stay as they were.
    current = state.model_copy() if state is not None else TaskState()
    values, fields_set = current.__dict__, current.__pydantic_fields_set__
    counts = dict(current.counts)
    latest = current.updated_at
    last: ev.TaskEvent | None = None
    for last in events:
        update = _fold_specific(current, last)
        values.update(update)
        fields_set.update(update)
        if "open_call" not in update and current.open_call is not None and not isinstance(last, _CALL_STAYS_OPEN):
            values["open_call"] = None  # something came after the call: it did not end the session
        name = type(last).__name__
        counts[name] = counts.get(name, 0) + 1
        # The latest time seen: a sub-agent's file imported after its session's brings earlier records.
        if latest is None or last.timestamp > latest:
            latest = last.timestamp
    if last is not None:
        # No rule reads these three, so they are set once, for the last event.
        bookkeeping = {"position": last.originator_version, "updated_at": latest, "counts": counts}
        values.update(bookkeeping)
        fields_set.update(bookkeeping)
    return current
