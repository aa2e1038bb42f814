"""The hook's private spool: a payload kept as the agent sent it, in a file of its own, until a read folds it in.

A tool event need not be answered, so the hook keeps it without parsing or redacting it (``ledger.capture.hook``):
one file per payload in ``TRAIL_HOME/spool`` (0700), written under a temporary name (0600, ``O_EXCL``) and renamed
into place once whole, so a file under a final name is never torn by the hook. The next drain redacts and folds
the files in, in name order, before the inbox's rows (``inbox_queue.take_spooled``), and unlinks them.

A file is ``MAGIC``, then the agent, the inbox file it is meant for, the hook's working folder and its kind,
each ended by a NUL (none can hold one), then the payload's bytes. Its name, ``<time_ns>-<pid>.json``, orders it
(a clock set back between two hooks of one session would misorder them; nothing else does). A file without
``MAGIC`` is an older release's ``agent\\n`` and payload, meant for whichever ledger reads it first.

Only an inbox the hook has queued into by the full path (its file checked: a tasktrail ledger, not another
application's database nor a folder) is spooled for (``trusted``, ``trust``), so those refusals stay where
they were: at the hook, one line on stderr. Standard library ``os`` and ``time`` only: it is the hook's whole
cost on most events.
"""

from __future__ import annotations

import os
import time

from ledger.base.crashpoints import crash_point, gate_point
from ledger.base.home import home_dir

DROPPED_KEY = "_trail_dropped"
"""The key of a stand-in payload: ``{"size": N, "sha256": H, "limit": MAX_PAYLOAD}``, set by the hook only
(the fold drops one a raw payload holds)."""
HUNKS_KEY = "_trail_patch_hunks"
"""Where the hook puts, for each file of a PostToolUse ``apply_patch``, the ``[old, new]`` 1-based starts of
its hunks (``{path as written: [[old, new], …]}``, ``ledger.capture.patchlines``); set by the hook only (the
fold drops one a raw payload holds)."""
LIMIT = 64 << 20
"""Bytes of a payload the hook reads and keeps (``hook.MAX_PAYLOAD``); a longer one is noted, not kept."""
MAGIC = b"trail-spool 1\0"
RAW = "raw"
"""Kind of a payload kept as it came: the fold drops what only the hook may set (``DROPPED_KEY``, ``HUNKS_KEY``)."""
PARSED = "parsed"
"""Kind of a payload the hook parsed and wrote itself (its keys vetted, an ``apply_patch``'s hunks located)."""
HEADER_MAX = 3 * 4096 + 64
"""Bytes that always hold a file's header (an agent name, two paths of at most 4096 bytes, a kind)."""
SUFFIX = ".json"
TEMP_SUFFIX = ".tmp"


def folder() -> str:
    return os.path.join(home_dir(), "spool")


def registry() -> str:
    """The inbox files the hook may spool for, one absolute path a line."""
    return os.path.join(home_dir(), "spool.inboxes")


def trusted(inbox: str) -> bool:
    """Whether the hook's full path has queued into ``inbox`` (an absolute path) before: its file is a ledger's."""
    try:
        with open(registry(), "rb") as handle:
            return os.fsencode(inbox) in handle.read().split(b"\n")
    except OSError:
        return False


def trust(inbox: str) -> None:
    """Note that ``inbox`` (absolute) is a tasktrail inbox, once the full path has checked it (appended, 0600)."""
    if trusted(inbox):
        return
    os.makedirs(home_dir(), mode=0o700, exist_ok=True)
    fd = os.open(registry(), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, os.fsencode(inbox) + b"\n")
    finally:
        os.close(fd)


def write(agent: str, inbox: str, cwd: str, kind: str, body: bytes) -> str:
    """Keep ``body`` for ``inbox`` (absolute) in a new private file, whole or not at all; returns its path."""
    where = folder()
    os.makedirs(where, mode=0o700, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}"
    temp = os.path.join(where, f".{name}{TEMP_SUFFIX}")
    head = MAGIC + b"\0".join(os.fsencode(part) for part in (agent, inbox, cwd, kind)) + b"\0"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, head + body[: len(body) // 2])
        crash_point("hook-spool-torn")  # a hook killed mid-write leaves a temporary file only
        _write_all(fd, body[len(body) // 2:])
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    os.close(fd)
    target = os.path.join(where, name + SUFFIX)
    gate_point("hook-spool-written")
    os.rename(temp, target)
    return target


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Spooled:
    """One spooled payload, read back: ``inbox`` None for an older release's file (any ledger's)."""

    __slots__ = ("agent", "body", "cwd", "inbox", "kind", "received")

    def __init__(self, agent: str, inbox: str | None, cwd: str | None, kind: str, body: bytes,
                 received: float) -> None:
        self.agent, self.inbox, self.cwd, self.kind, self.body, self.received = agent, inbox, cwd, kind, body, received


def parse(name: str, data: bytes) -> Spooled:
    """The payload of the file called ``name`` holding ``data``; ValueError when its header is not whole."""
    received = stamp(name)
    if not data.startswith(MAGIC):
        agent, newline, body = data.partition(b"\n")
        if not newline:
            raise ValueError("no header")
        return Spooled(os.fsdecode(agent), None, None, RAW, body, received)
    parts = data[len(MAGIC):].split(b"\0", 4)
    if len(parts) != 5:
        raise ValueError("a torn header")
    agent, inbox, cwd, kind, body = parts
    return Spooled(os.fsdecode(agent), os.fsdecode(inbox), os.fsdecode(cwd), kind.decode("ascii", "replace"), body,
                   received)


def stamp(name: str) -> float:
    """When the hook wrote the file called ``name`` (seconds since the epoch), from its name; 0 when it says none."""
    head = name.lstrip(".").partition("-")[0]
    return int(head) / 1e9 if head.isdigit() else 0.0


def order(name: str) -> tuple[int, int, str]:
    """The sort key of a file's name: its time, then its writer's pid."""
    stem = name.lstrip(".").removesuffix(TEMP_SUFFIX).removesuffix(SUFFIX)
    ns, _, pid = stem.partition("-")
    return (int(ns) if ns.isdigit() else 0, int(pid) if pid.isdigit() else 0, name)


def listing() -> tuple[list[str], list[str]]:
    """The spooled files' names in the order the hooks wrote them, and the temporary ones' (being written, or
    left by a hook that died writing)."""
    try:
        names = os.listdir(folder())
    except OSError:
        return [], []
    temps = [n for n in names if n.startswith(".") and n.endswith(TEMP_SUFFIX)]
    return sorted((n for n in names if not n.startswith(".")), key=order), temps


def abandoned(name: str) -> bool:
    """Whether the temporary file called ``name`` was left by a hook that is gone (its pid runs no more)."""
    pid = order(name)[1]
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # there, another user's: alive
        return False
    return False


def pending(inbox: str) -> bool:
    """Whether a spooled payload (or a temporary file the drain must clear) may be meant for ``inbox``."""
    names, temps = listing()
    if temps:
        return True
    where = folder()
    mine = os.path.realpath(inbox)
    for name in names:
        try:
            with open(os.path.join(where, name), "rb") as handle:
                head = handle.read(HEADER_MAX)
        except OSError:
            return True  # let the drain look, and report what is wrong
        try:
            meant = parse(name, head).inbox
        except ValueError:
            return True
        if meant is None or os.path.realpath(meant) == mine:
            return True
    return False
