"""Every file and folder tasktrail makes is its owner's alone (0600 / 0700), whatever the umask.

The ledger, the read model, archives, blobs and the inbox hold code, terminal output and decisions;
other local users have no business reading them. Two parts:

- ``restrict``: the process's umask gains 077 (it only narrows), so everything this process
  creates (SQLite's -wal/-shm, DuckDB's files, temporary files renamed into place) is private
  without each call site asking. ``cli.main`` does it first (inline), before the hook or any command.
- ``tighten``: what an older release (or another umask) left open is made private on open (``open_ledger``), with
  one line on stderr. Cheap when there is nothing to do: one ``stat`` of the folder or file; the
  tree under a folder is walked only when the folder itself is open to others (so once).

Stdlib ``os`` alone: the hook's path imports it.
"""

from __future__ import annotations

import os
import stat
import sys

OTHERS = 0o077
"""The group and other bits: none may be set on anything tasktrail keeps."""


def restrict() -> None:
    """Add 077 to this process's umask (a stricter one stays as it is)."""
    os.umask(os.umask(OTHERS) | OTHERS)


def folder(path: str | os.PathLike[str]) -> None:
    """``mkdir -p`` with every folder it makes 0700 whatever the umask (a library caller's may be 022);
    existing ones are left as they are. Raises as ``os.makedirs`` does (a file in the way, no permission)."""
    missing: list[str] = []
    at = os.path.abspath(os.fspath(path))
    while not os.path.isdir(at):
        missing.append(at)
        parent = os.path.dirname(at)
        if parent == at:
            break
        at = parent
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:
            if not os.path.isdir(made):
                raise
            continue  # made meanwhile by another process
        os.chmod(made, 0o700)


def _narrow(path: str, mode: int) -> bool:
    """Clear the group/other bits of ``path``; whether it had any (and they were cleared)."""
    if not mode & OTHERS:
        return False
    try:
        os.chmod(path, stat.S_IMODE(mode) & ~OTHERS, follow_symlinks=False)
    except (OSError, NotImplementedError):  # not ours to change (another owner): left, not fatal
        return False
    return True


def _tree(top: str) -> int:
    """Tighten everything under ``top`` (symlinks neither followed nor changed); how many were open."""
    changed = 0
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                found = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISLNK(found.st_mode):
                changed += _narrow(path, found.st_mode)
    return changed


_told: set[str] = set()


def _notice(path: str, count: int) -> None:
    if path in _told:
        return
    _told.add(path)
    what = f"{path} and {count} path{'s' if count != 1 else ''} in it" if count else path
    sys.stderr.write(f"tasktrail: made {what} private to you (readable by others before)\n")


def tighten(path: str) -> None:
    """Make an existing ``path`` private: a folder with everything in it (walked only when the folder
    is open to others), or a file with its SQLite/DuckDB companions. Missing, it is left alone."""
    try:
        found = os.stat(path)
    except OSError:
        return
    if stat.S_ISDIR(found.st_mode):
        if found.st_mode & OTHERS:
            count = _tree(path)
            if _narrow(path, found.st_mode):
                _notice(path, count)
        return
    count = 0
    for companion in ("-wal", "-shm", "-journal", ".wal"):  # SQLite's, and DuckDB's
        try:
            count += _narrow(path + companion, os.stat(path + companion).st_mode)
        except OSError:
            continue
    if _narrow(path, found.st_mode) or count:
        _notice(path, 0)


def create_file(path: str) -> None:
    """Make an empty private file at ``path`` unless one exists, so what a library then writes into
    it (SQLite gives its -wal and -shm the file's mode) is private even under an open umask."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)  # the mode above is masked by the umask
    finally:
        os.close(fd)
