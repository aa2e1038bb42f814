"""Whether this process may take on one-off upkeep whose cost grows with the ledger.

An open of a ledger from before an index builds that index (``stores.sqlite``): one read of the events table,
about 3 s at a million rows. A hook is bound by its deadline (``capture.hook.deadline``) and an agent stops it
after its own timeout, which would roll the build back and leave every later hook to start it again: so the
hook defers such a build on a large ledger to the next process without a deadline (any `trail` command, the
hook's background drain). Standard library only: the lean hook imports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

BOUNDED_ROWS = 200_000
"""Rows up to which a deferring process builds an index all the same (well under a second here)."""

deferring = False
"""Set while a hook runs (``deferred``): for its call only, so a process that runs a hook in-process (a test, a
front door) builds as any command once the call is over."""


@contextmanager
def deferred() -> Iterator[None]:
    """Upkeep over ``BOUNDED_ROWS`` deferred for the calls inside (``capture.hook.run``)."""
    global deferring
    before, deferring = deferring, True
    try:
        yield
    finally:
        deferring = before


def may_build(rows: int) -> bool:
    """Whether an index over ``rows`` rows may be built now."""
    return not deferring or rows <= BOUNDED_ROWS
