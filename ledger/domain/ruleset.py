"""A maintained vendor ruleset beside the built-in rules: betterleaks' 465 rules (gitleaks' own, kept up by
gitleaks' author, MIT), run in-process on a write's whole batch of texts in one call.

Loading it costs 0.4-0.8 s a process (its Go library, then the rules compiled on the first scan); a scan
then costs about 0.1 ms a call plus 10 us a KiB. So it runs where a process lives long or nobody waits on
it: the MCP server, ``trail import``, the background drain after a session stops (``enable()`` there),
and everywhere when ``TRAIL_RULESET=on``; never with ``TRAIL_RULESET=off``. The hook and the other
commands keep to the built-in rules, which hold every kind the sweep plants (docs/lifecycle.md, "which
check runs where"). A platform without the package's wheel keeps the built-in rules alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

RULESET_ENV = "TRAIL_RULESET"
"""on: every write runs the ruleset; off: none does; unset (or auto): the processes that ``enable()`` it."""

MIN_SECRET = 8
"""Finds shorter than this are left to the built-in rules: replacing a short string everywhere in a batch
would take words with it."""

_enabled = False


def enable() -> None:
    """This process can afford the ruleset (a long-lived server, a bulk import, a detached drain)."""
    global _enabled
    _enabled = True


def active() -> bool:
    """Whether this process's writes run the ruleset."""
    setting = os.environ.get(RULESET_ENV, "auto").strip().lower()
    if setting == "off":
        return False
    return (setting == "on" or _enabled) and _scanner() is not None


@lru_cache(maxsize=1)
def _scanner() -> Callable[[str], list[Any]] | None:
    try:
        import betterleaks
    except ImportError:  # no wheel for this platform: the built-in rules alone
        return None
    scan: Callable[[str], list[Any]] = betterleaks.scan_string
    return scan


def vendor_secrets(texts: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The secrets the ruleset finds in ``texts``, as (secret, kind), longest first; scanned as one text
    (the texts joined by newlines), so a write's batch costs one call. () when the ruleset is not active."""
    if not active():
        return ()
    joined = "\n".join(text for text in texts if text)
    if not joined:
        return ()
    scan = _scanner()
    assert scan is not None  # active() said so
    found = {
        (finding.secret, f"ruleset-{finding.rule_id}")
        for finding in scan(joined)
        if len(finding.secret) >= MIN_SECRET and "\n" not in finding.secret
    }
    return tuple(sorted(found, key=lambda pair: (-len(pair[0]), pair)))
