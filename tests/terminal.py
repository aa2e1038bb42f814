"""A real pseudo-terminal for a `trail` process: what a person at a terminal sees, and what they type."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO


def on_a_terminal(args: list[str], home: Path, cwd: Path, answer: bytes | None = None,
                  env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run `trail ARGS` with a pseudo-terminal for its streams (``env`` added to its variables); type
    ``answer`` once it asks "Which one?". Its exit code and everything it wrote to the terminal."""
    main, child = pty.openpty()
    variables = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "NO_COLOR", "PAGER", "LINES")}
    variables.update(TRAIL_HOME=str(home), PYTHONPATH=str(REPO), TERM="xterm", **(env or {}))
    proc = subprocess.Popen([sys.executable, "-c", "from cli.main import main; main()", *args],
                            stdin=child, stdout=child, stderr=child, cwd=cwd, env=variables, close_fds=True)
    os.close(child)
    seen = b""
    answered = answer is None
    deadline = time.monotonic() + 60  # a guard against a hang, not a measure
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal (EIO on Linux)
                break
            if not chunk:
                break
            seen += chunk
        if not answered and b"Which one?" in seen:
            os.write(main, answer or b"")
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(main)
    return proc.wait(timeout=60), seen.decode(errors="replace").replace("\r\n", "\n")
