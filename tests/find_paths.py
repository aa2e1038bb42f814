"""`trail find` on each of its two paths, for the tests that hold them to the same output: the full path
(the read model, the ledger's checks; it fills the find index) and the find index's (``ledger.app.findindex``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ledger.app import findindex
from tests.conftest import run_here


def full(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`trail ARGS` with the find index never answering: the full path, which fills it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(findindex, "cached_find", lambda *_: None)
        return run_here(*args, home=home, cwd=cwd)


def fast(*args: str, home: Path, cwd: Path | None = None) -> str | None:
    """What `trail ARGS` printed from the find index, or None when the index did not answer (the full path did)."""
    answers: list[str | None] = []
    real = findindex.cached_find

    def recorded(*given: Any) -> str | None:
        answers.append(real(*given))
        return answers[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(findindex, "cached_find", recorded)
        done = run_here(*args, home=home, cwd=cwd)
    assert len(answers) == 1, "not a command line the find index reads"
    if answers[0] is None:
        return None
    assert done.returncode == 0 and done.stdout == answers[0], done.stderr
    return answers[0]


def both(*args: str, home: Path, cwd: Path | None = None) -> str:
    """`trail ARGS`'s output, the same on both paths: the full path first (it fills the index), then the index's."""
    whole = full(*args, home=home, cwd=cwd)
    assert whole.returncode == 0, whole.stderr
    answered = fast(*args, home=home, cwd=cwd)
    assert answered is not None, f"the find index did not answer `trail {' '.join(args)}`"
    assert answered == whole.stdout, f"`trail {' '.join(args)}`: the paths differ"
    return answered
