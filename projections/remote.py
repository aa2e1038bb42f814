"""What a session did with a remote: the pull request it opened, the commit it pushed, and a host it could or
could not reach. Pure readings of a command's line and output (or a tool call's input and output): the fold
(``projections.state``) keeps what they find."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from ledger.base import shell
from ledger.base.lazyregex import lazy

_PR_URL = lazy(r"https?://[\w.-]+/[\w.-]+/[\w.-]+/pull/(\d+)(?![\w/])")
"""A pull request's own address (``…/pull/50``); ``…/pull/new/branch`` is a push's hint, not a PR."""
_PUSHED = lazy(r"^\s*[+*]?\s*[0-9a-f]{7,40}\.\.\.?([0-9a-f]{7,40})\s+(\S+)\s+->\s+(\S+)", re.MULTILINE)
"""A ref git push moved: ``   fe2db25..2f72d05  main -> main`` (``+ a...b`` when forced)."""
_NEW_REF = lazy(r"^\s*\*\s+\[new branch\]\s+(\S+)\s+->\s+(\S+)", re.MULTILINE)
_COMMITTED = lazy(r"(?:^|, stdout: )\[([^\]\s]+)(?: \([^)\]]*\))? ([0-9a-f]{7,40})\] ([^\n]*)", re.MULTILINE)
"""The first line git commit prints: ``[main 2f72d05] Subject`` (``[main (root-commit) 1a2b3c4]``); Codex's report
of a command its sandbox stopped part-way puts it after ``…, exit code: 128, stdout: ``."""
_ACCESS = lazy(
    r"Permission denied \(publickey|Could not read from remote repository|Authentication failed for|"
    r"could not read Username|Host key verification failed", re.IGNORECASE)
"""Words of a remote refusing who asked, not what was asked."""
_HOST = lazy(r"(?:://(?:[^@/\s]+@)?|\b[\w.-]+@)([a-z0-9-]+(?:\.[a-z0-9-]+)+)", re.IGNORECASE)
_REMOTE_VERBS = frozenset({"fetch", "pull", "push", "clone", "ls-remote"})
_HEAD_FIELD = lazy(r"^head=(\S+)$")


def opened_pr(output: str) -> int | None:
    """The number of the pull request an output names by its address (the last one), or None."""
    found = _PR_URL.findall(output)
    return int(found[-1]) if found else None


def pushed(output: str) -> tuple[str | None, str] | None:
    """``(commit, ref)`` of the last ref a ``git push`` output says it moved; the commit is None for a new
    branch (git prints no hash for it: the latest commit made is what went)."""
    moved = [(m.start(), m.group(1), m.group(3)) for m in _PUSHED.finditer(output)]
    moved += [(m.start(), None, m.group(2)) for m in _NEW_REF.finditer(output)]
    if not moved:
        return None
    _, commit, ref = max(moved, key=lambda m: m[0])
    return commit, ref


def committed(output: str) -> str | None:
    """The short hash of the commit a ``git commit`` output says it made, or None."""
    match = _COMMITTED.search(output)
    return match.group(2) if match else None


def commit_subject(output: str) -> str | None:
    """The subject line of the commit a ``git commit`` output says it made (``[main 2f72d05] Subject``), or None."""
    match = _COMMITTED.search(output)
    return " ".join(match.group(3).split()) or None if match else None


def _words(line: str) -> list[list[str]]:
    toks = shell.tokens(line)
    return [part for part in shell.words(toks) if part] if toks is not None else []


@lru_cache(maxsize=1024)  # pure; asked of every command that passes and fails
def pr_created(line: str) -> str | None:
    """The branch a command asked GitHub to open a pull request from: ``gh pr create … --head B`` (any path to
    gh), or a POST to ``…/pulls`` through ``gh api`` with ``-f head=B``; "" when it names none (the current
    branch); None when the line opens none."""
    for words in _words(line):
        while words and ("=" in words[0] or words[0] in ("env", "command")):
            words = words[1:]
        if not words or words[0].rsplit("/", 1)[-1] != "gh":
            continue
        args = words[1:]
        if args[:2] == ["pr", "create"]:
            return next((b for a, b in itertools.pairwise(args) if a in ("--head", "-H")), "")
        if args[:1] == ["api"] and any(a.rstrip("/").endswith("/pulls") for a in args) and "POST" in args:
            return next((m.group(1) for a in args if (m := _HEAD_FIELD.match(a))), "")
    return None


_HEAD_KEY = lazy(r'"head":\s*"([^"\\]+)"')


def tool_pr_created(tool: str, given: str) -> str | None:
    """The branch a tool call (an MCP server's ``create_pull_request``) opened a pull request from, read from
    its input's ``head`` (the input as the fold keeps it: clipped JSON, so not parsed); None when it is no such
    call, "" when its input names no head."""
    if not tool.rsplit(".", 1)[-1].lstrip("_").endswith("create_pull_request"):
        return None
    match = _HEAD_KEY.search(given)
    return match.group(1).split(":")[-1] if match else ""


def access_denied(output: str) -> bool:
    """Whether an output says a remote refused the caller's credentials (``Permission denied (publickey)``)."""
    return _ACCESS.search(output) is not None


def hosts(text: str) -> frozenset[str]:
    """The hosts ``text`` addresses (``git@github.com``, ``https://github.com/o/r``), lower-cased."""
    return frozenset(h.lower() for h in _HOST.findall(text))


@lru_cache(maxsize=1024)
def reaches_remote(line: str) -> bool:
    """Whether ``line`` talks to a git remote (``git fetch``, ``git push``, ``ssh -T git@host`` …): its pass
    shows the host let the caller in."""
    for words in _words(line):
        program = words[0].rsplit("/", 1)[-1]
        if program == "ssh":
            return True
        if program == "git":
            args = iter(words[1:])
            for a in args:
                if a in ("-c", "-C"):
                    next(args, None)  # the option's value
                elif not a.startswith("-"):
                    if a in _REMOTE_VERBS:
                        return True
                    break
    return False
