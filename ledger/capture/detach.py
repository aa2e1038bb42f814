"""The hook's side of the background drain: when a session stops, start a detached process that folds the
inbox in and refreshes the brief cache (``ledger.capture.settle``), so the next SessionStart finds nothing
waiting and answers from the cache; and the lock that keeps such drains and SessionStart's full path apart.

Standard library at import, as the hook needs (``tests/test_startup.py``). The process is started with
``os.posix_spawn`` in a new session, its standard streams on ``/dev/null`` and no other descriptor of the
hook's: the agent, which waits for the hook's pipes to close, never waits for it, and the hook never waits
for it either. ``TRAIL_BACKGROUND_DRAIN=off`` (or ``0``, ``no``, ``false``) starts none; ``wait`` waits for
it (tests, and a user who wants the drain's cost paid at the stop). Nothing is lost when it does not run or
fails: the rows stay queued, and the next read folds them in (SessionStart by its full path, as before).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

from ledger.base.home import home_dir

TYPE_CHECKING = False  # collections.abc costs the hook of every stop; annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

SWITCH = "TRAIL_BACKGROUND_DRAIN"
OFF = ("0", "off", "no", "false")
WAIT = "wait"
AFTER = frozenset({"Stop", "SessionEnd", "PreCompact"})
"""The events after which a drain pays: the agent waits for the user (Stop), is gone (SessionEnd), or is about
to start again compacted (PreCompact, then SessionStart with source compact). Not the tool events: the
agent is working then, and a read folds their rows in anyway."""
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""Where the ``ledger`` package was found: the child imports it from there whatever its path."""


def mode() -> str:
    """``"off"``, ``"wait"`` or ``"detach"`` (the default), as ``TRAIL_BACKGROUND_DRAIN`` says."""
    value = os.environ.get(SWITCH, "").strip().lower()
    if value in OFF:
        return "off"
    return WAIT if value == WAIT else "detach"


def wanted(event: object) -> bool:
    """Whether a hook that queued ``event`` starts a drain."""
    return event in AFTER and mode() != "off" and hasattr(os, "posix_spawn") and bool(sys.executable)


def start() -> int:
    """Start the drain (``ledger.capture.settle.main``) as a process of its own; returns its pid. In ``wait``
    mode, returns once it has ended. Raises OSError when it cannot be started (the rows wait, as before)."""
    code = f"import sys; sys.path.insert(0, {_ROOT!r}); from ledger.capture.settle import main; main()"
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited()]
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", code], dict(os.environ),
                         file_actions=actions, setsid=True)
    if mode() == WAIT:
        os.waitpid(pid, 0)
    return pid


def _inherited() -> list[int]:
    """Descriptors past the standard streams that the child would inherit (the agent may have passed some):
    closed in it, so nothing the agent holds stays open in a process that outlives the hook."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    found = []
    for fd in fds:
        try:
            if fd > 2 and os.get_inheritable(fd):
                found.append(fd)
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return found


WAIT_S = 1.5
"""Seconds a SessionStart that misses the cache waits at most for a running drain. A drain costs about what
the full path does, so a wait beyond that only pays when the drain is nearly done; at most a third of what is
left of the hook's deadline, so the full path still fits after a wait that ran out."""


def wait_s(left: float) -> float:
    """How long a SessionStart with ``left`` seconds before its deadline waits for a running drain."""
    return max(0.0, min(WAIT_S, left / 3))


def lock_file(inbox: str) -> str:
    """The lock of the inbox at ``inbox``: one per ledger, in ``TRAIL_HOME/locks``."""
    import hashlib  # here: only a drain's lock needs it, and the hook imports this module on every event

    name = hashlib.sha256(os.path.realpath(inbox).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(home_dir(), "locks", f"drain-{name}.lock")


@contextmanager
def drain_lock(inbox: str, wait_s: float, on_wait: Callable[[], None] | None = None) -> Iterator[Held]:
    """Hold the inbox's drain lock for the block, waiting at most ``wait_s`` seconds for another holder
    (``on_wait`` is called once, when another holder is found first). The block runs even when the wait runs
    out or no lock can be had (``Held.held`` False): drains may race, they only cost each other time
    (``ledger.capture.inbox``: each source key lands once)."""
    import fcntl

    found = Held()
    try:
        path = lock_file(inbox)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield found
        return
    try:
        ends = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                found.held = True
                break
            except BlockingIOError:
                if not found.waited and on_wait is not None:
                    on_wait()
                found.waited = True
                if time.monotonic() >= ends:
                    break
                time.sleep(0.01)  # a drain takes about a second: polling costs nothing beside it
            except OSError:
                break
        yield found
    finally:
        os.close(fd)  # releases the lock


class Held:
    """What ``drain_lock`` got: the lock (``held``), and whether another process held it first (``waited``)."""

    def __init__(self) -> None:
        self.held = False
        self.waited = False
