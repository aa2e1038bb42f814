"""Reading the working tree for `trail changed` and `trail checkpoint`: hashes, diffs, git state.

Diff baselines, in order: the content this ledger saw at the file's last recorded
change (kept in a local content-addressed cache, never in the log), else the file at
git HEAD, else nothing (the file is new).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ledger.base import private
from ledger.base.errors import BadInput
from ledger.domain.redact import redact_text

GIT_TIMEOUT_S = 5
DIFF_LIMIT = 1 << 20
"""Bytes of a file's content held and diffed: a bigger file is hashed as a stream and recorded
without a diff (``Change.undiffed`` says why). difflib's work grows faster than the text, and a
file may be any size (a 2 GB file read whole ended in MemoryError)."""
_KINDS = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO",
          stat.S_IFSOCK: "a socket"}


@dataclass(frozen=True)
class Change:
    operation: str
    before_sha256: str | None
    after_sha256: str | None
    diff: str | None
    undiffed: str | None = None
    """Why there is no diff when the file was too big to diff (None: diffed, or binary)."""


@dataclass(frozen=True)
class Content:
    """A file as read for a change: its bytes when at most ``DIFF_LIMIT``, else only its size and hash."""

    sha256: str
    size: int
    data: bytes | None


def read_content(path: Path, shown: str) -> Content | None:
    """The file at ``path`` read within bounds (None: it does not exist). Anything but a regular file
    (a device, a FIFO, a socket) is refused before it is opened: reading /dev/zero never ends, and
    opening a FIFO waits for a writer."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInput(f"cannot read {shown}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{shown} is a directory; name the files that changed")
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise BadInput(f"{shown} is {kind}, not a regular file; trail changed records files")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped since the stat above
                raise BadInput(f"{shown} is not a regular file; trail changed records files")
            head = handle.read(DIFF_LIMIT + 1)
            if len(head) <= DIFF_LIMIT:
                return Content(sha256(head), len(head), head)
            digest, size = hashlib.sha256(head), len(head)
            del head
            while piece := handle.read(1 << 20):
                digest.update(piece)
                size += len(piece)
            return Content(digest.hexdigest(), size, None)
    except OSError as exc:
        raise BadInput(f"cannot read {shown}: {exc.strerror or exc}") from exc


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git(args: list[str], cwd: Path) -> bytes | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state(cwd: Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty?) when ``cwd`` is in a git work tree, else (None, None)."""
    head = _git(["rev-parse", "HEAD"], cwd)
    if head is None:
        return None, None
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return head.decode().strip(), bool(status and status.strip())


def _git_head_content(path: Path) -> bytes | None:
    """The file at git HEAD, when it is there and at most ``DIFF_LIMIT`` bytes (its size asked first)."""
    parent = path.parent if path.parent.exists() else Path.cwd()
    top = _git(["rev-parse", "--show-toplevel"], parent)
    if top is None:
        return None
    root = Path(top.decode().strip())
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    size = _git(["cat-file", "-s", f"HEAD:{rel.as_posix()}"], root)
    if size is None or not size.strip().isdigit() or int(size) > DIFF_LIMIT:
        return None
    return _git(["show", f"HEAD:{rel.as_posix()}"], root)


class BlobCache:
    """Content seen at recorded changes, by sha256, so the next change can be diffed."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get(self, digest: str | None) -> bytes | None:
        if not digest:
            return None
        try:
            return (self.root / digest[:2] / digest).read_bytes()
        except OSError:
            return None

    def put(self, data: bytes) -> None:
        """Keep ``data`` under its sha256, redacted: what is kept is only a diff baseline, and a
        ``.env`` must not land in the cache in clear. Binary files are not kept (they get no diff)."""
        digest = sha256(data)
        target = self.root / digest[:2] / digest
        lines = _text(data)
        if target.exists() or lines is None:
            return
        data = "".join(lines).encode("utf-8", "surrogatepass")
        try:
            private.folder(target.parent)
            tmp = target.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        except OSError:
            pass  # the cache only improves later diffs; recording must not fail for it


def _text(data: bytes) -> list[str] | None:
    """The lines of a text file, secrets redacted on the whole text (a key block spans lines), so
    both sides of a diff carry the same markers; None for a binary file."""
    if b"\x00" in data[:8192]:
        return None  # binary: hashes only
    return redact_text(data.decode("utf-8", "replace")).splitlines(keepends=True)


def unified_diff(before: bytes | None, after: bytes | None, label: str) -> str | None:
    old = _text(before) if before is not None else []
    new = _text(after) if after is not None else []
    if old is None or new is None:
        return None
    lines = difflib.unified_diff(old, new, fromfile=f"a/{label}", tofile=f"b/{label}")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def describe_change(path_given: str, last_sha256: str | None, cache: BlobCache) -> Change:
    """Hash ``path_given`` now and diff it against the best baseline available."""
    path = Path(path_given)
    content = read_content(path, path_given)
    before = cache.get(last_sha256)
    if before is None:
        before = _git_head_content(path)
    before_sha = last_sha256 or (sha256(before) if before is not None else None)
    if content is None:
        if before_sha is None:
            raise BadInput(f"{path_given} does not exist and was never recorded; nothing changed")
        return Change("deleted", before_sha, None, unified_diff(before, None, path_given))
    operation = "created" if before_sha is None else "modified"
    if content.data is None:
        why = f"{content.size} bytes, over the {DIFF_LIMIT} diffed"
        return Change(operation, before_sha, content.sha256, None, undiffed=why)
    cache.put(content.data)
    return Change(operation, before_sha, content.sha256, unified_diff(before, content.data, path_given))
