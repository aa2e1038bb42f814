"""Which project a working directory belongs to: its git top level, else the directory itself.

A task belongs to a project, and each project keeps its own active task (``ledger.app.refs``), as git
keeps HEAD per repository. Found by looking for ``.git`` upwards (a folder, or the file a worktree
or submodule has), with no subprocess: the hook path calls this on every session.
"""

from __future__ import annotations

import os


def project_of(cwd: str | None) -> str | None:
    """The project of ``cwd``: the nearest folder at or above it holding ``.git``, else ``cwd``.

    A path that does not exist here (a transcript from another machine) is its own project.
    """
    if not cwd or not cwd.strip():
        return None
    start = os.path.normpath(os.path.abspath(os.path.expanduser(cwd)))
    here = start
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return start
        here = parent


def current_project() -> str | None:
    """The project of the process's working directory (None when it is gone)."""
    try:
        return project_of(os.getcwd())
    except OSError:
        return None


def within(folder: str, project: str | None) -> bool:
    """Whether ``folder`` is ``project`` or a folder inside it."""
    return project is not None and (folder == project or folder.startswith(project.rstrip("/") + "/"))
