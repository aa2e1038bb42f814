"""Regular expressions compiled on first use: ``lazy(source, flags)`` stands in for ``re.compile``.

The capture hook imports ``ledger.domain.redact`` on every tool call of the agent, and compiling all its
patterns up front was ~10 ms of each call, while a payload runs only the patterns whose hints it
holds (most payloads: a few). Standard library only, like the hook.
"""

from __future__ import annotations

import re
from typing import Any, cast

_BOUND = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "flags", "groups",
          "groupindex")
"""What a first use copies from the compiled pattern onto the stand-in, so later uses cost what
``re.Pattern``'s own do (an attribute found, no call through ``__getattr__``)."""


class LazyPattern:
    """An ``re.Pattern`` not compiled until one of its methods (or ``flags``, ``groups``) is first asked for."""

    def __init__(self, source: str, flags: int = 0) -> None:
        self.pattern = source
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        if name not in _BOUND:
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for bound in _BOUND:
            setattr(self, bound, getattr(compiled, bound))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(source: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern that behaves as ``re.compile(source, flags)`` and compiles on first use; a bad ``source``
    fails then, so give it only patterns this code owns (a user's pattern is compiled at once, to be refused
    where it is read)."""
    return cast("re.Pattern[str]", LazyPattern(source, flags))
