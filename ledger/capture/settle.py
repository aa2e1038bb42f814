"""The background drain a stopping session starts (``ledger.capture.detach``): fold the capture inbox in, then
keep the brief cache's SessionStart answers for every task that changed, so the next session's start finds
nothing waiting and answers from the cache instead of loading the ledger.

It runs in a process of its own that nobody reads: what a drain run by a command would print (refused
events, rows moved to the dead letters) and any failure go to ``TRAIL_HOME/drain.log`` (0600), one line
each. It holds the inbox's drain lock throughout, so drains started by consecutive hooks take turns, and a
SessionStart that misses the cache meanwhile waits for it rather than fold the same rows beside it. A drain
that fails or is killed leaves the rows queued (they are deleted only once their events are saved): the
next read folds them in, SessionStart by its full path.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING

from ledger.app import briefcache, refs, verify
from ledger.app.store import open_ledger
from ledger.base.crashpoints import crash_point, gate_point
from ledger.base.home import home_dir
from ledger.base.ledger_file import ledger_file
from ledger.base.location import Location, resolve
from ledger.capture import agents
from ledger.capture.detach import drain_lock
from ledger.capture.inbox import Drained, drain
from ledger.capture.inbox_queue import waiting
from ledger.domain import ruleset
from ledger.domain.redact import redact_text, safe_patterns

if TYPE_CHECKING:
    from uuid import UUID

    from ledger.app.store import Ledger

LIMIT_S = 300
"""Seconds a drain may take before it ends itself (SIGALRM's default action): one stuck on a server ledger
never holds the lock for ever. Killed midway, it loses nothing (see above)."""
LOCK_WAIT_S = 120.0
"""Seconds a drain waits for the one before it; past that it leaves the rows to the next read."""
LOG_BYTES = 1 << 20
"""``drain.log`` past this size is moved to ``drain.log.1`` (one old log kept)."""


def main() -> None:
    """The detached process's entry point: drain, keep, log; never raises."""
    signal.alarm(LIMIT_S)
    ruleset.enable()  # detached: nobody waits on this process, so it runs the vendor ruleset too
    try:
        drained = run()
    except Exception as exc:
        _log([f"drain failed, the rows stay queued: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"])
        return
    if drained is not None:
        _log([f"captured event refused: {line}" for line in drained.rejected] + drained.poisoned)


def run() -> Drained | None:
    """Drain the inbox and refresh the cache under the drain lock; None when there was nothing to do."""
    inbox = ledger_file()
    with drain_lock(inbox, LOCK_WAIT_S) as lock:
        if not lock.held:
            _log(["another drain held the inbox too long: its rows wait for the next read"])
            return None
        gate_point("settle-locked")
        location = resolve(os.environ.get("TRAIL_DB"))
        if not waiting(location):
            return None  # the drain before this one took them (it started at an earlier stop): load nothing
        ledger = open_ledger(location)
        try:
            crash_point("settle-drain")
            drained = drain(ledger, location)
            crash_point("settle-keep")
            try:
                keep(ledger, location, drained.tasks)
            except Exception as exc:  # the rows are in: only the next start's speed is at stake
                _log([f"brief cache not refreshed: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"])
        finally:
            ledger.close()
    return drained


def keep(ledger: Ledger, location: Location, tasks: set[UUID]) -> None:
    """Keep the brief cache's answers for ``tasks`` and for their projects' active tasks, as a SessionStart's
    full path keeps its task's (``inbox.session_start_answer``); a task that fails to load is left to it."""
    projects: dict[UUID, str] = {}
    for task in sorted(tasks):
        project = _project(ledger, task)
        pointer = refs.project_pointer(location, project) if project is not None else None
        for one in (task, pointer):
            if one is not None and one not in projects and (of := _project(ledger, one)) is not None:
                projects[one] = of
    for task, project in projects.items():
        watch = briefcache.watch(location, "session", cwd=project, budgets=agents.budgets)
        if watch is None:
            return  # not cacheable (a server ledger, a setting the full path checks): for none of them
        try:
            state = verify.checked_state(ledger, task)
        except Exception:
            watch.close()
            continue  # refused or unreadable: the full path refuses it in its own words
        watch.keep(task, state)


def _project(ledger: Ledger, task: UUID) -> str | None:
    try:
        return ledger.state(task).project
    except Exception:
        return None  # a pointer to a task gone (forgotten), or one that fails to load: the full path says why


def _log(lines: list[str]) -> None:
    if not lines:
        return
    path = os.path.join(home_dir(), "drain.log")
    try:
        if os.path.getsize(path) > LOG_BYTES:
            os.replace(path, path + ".1")
    except OSError:
        pass
    try:
        os.makedirs(home_dir(), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        patterns = safe_patterns()
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            for line in lines:
                one = " ".join(redact_text(line, patterns).split())
                handle.write(f"{stamp} {one}\n")
    except OSError:
        pass  # nobody to tell: the rows and dead letters say what happened
