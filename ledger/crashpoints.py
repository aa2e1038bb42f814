"""Test seams: named points where a process kills itself (kill -9) when ``TRAIL_CRASH_AT`` names them.

Crash tests aim at these instead of sleeping for a while and hoping a kill lands mid-work, which
fails on a busy machine. Unset (always, outside tests), a point costs one environment lookup.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "TRAIL_CRASH_AT"


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
