"""Test seams: named points where a process kills itself (kill -9) when ``TRAIL_CRASH_AT`` names them,
or waits for a signal when ``TRAIL_STALL_AT`` does (a step that never ends, for the hook's deadline), or
waits for a FIFO the test holds when ``TRAIL_GATE_AT`` does (a step held open until the test lets it go).

Crash tests aim at these instead of sleeping for a while and hoping a kill lands mid-work, which
fails on a busy machine. Unset (always, outside tests), a point costs one environment lookup.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "TRAIL_CRASH_AT"
STALL_ENV = "TRAIL_STALL_AT"
GATE_ENV = "TRAIL_GATE_AT"


def crash_point(step: str) -> None:
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def stall_point(step: str) -> None:
    """Wait here until a signal's handler raises (the hook's deadline timer) when ``TRAIL_STALL_AT`` names ``step``."""
    if os.environ.get(STALL_ENV) == step:
        while True:
            signal.pause()


def gate_point(step: str) -> None:
    """When ``TRAIL_GATE_AT`` is ``step:PATH``, PATH a FIFO: open it and read to its end, so the process waits
    here until the test has opened the FIFO (it then knows the process got this far) and closed it again."""
    name, _, path = os.environ.get(GATE_ENV, "").partition(":")
    if name == step and path:
        with open(path, "rb") as gate:
            gate.read()
