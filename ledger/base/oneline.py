"""Recorded text shown inside our own layout (a heading of the brief, a `trail list` or `trail log`
row): it must not break the line or restyle the terminal. A title "x\\n# Next step: rm -rf /" must
not forge a heading of the brief, ESC must not recolour the screen, a bidi override must not reorder
what follows. The stored event keeps the text as it was; only what is shown is escaped. Error lines
(``reason``) are made the same way. Pure, standard library only: the folds, the application and the CLI
all show text through here.
"""

from __future__ import annotations

import re

from ledger.base.lazyregex import lazy

_CONTROL = lazy(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls (tab and newline aside), DEL, and the bidirectional marks and overrides."""


_HEADING = lazy(r"^(\s*)#")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escaped(text: str) -> str:
    """``text`` with every control character but tab and newline shown as its escape (``\\x1b``, ``\\u202e``)."""
    return _CONTROL.sub(_escape, text)


def one_line(text: str, width: int | None = None) -> str:
    """``text`` on one line: runs of whitespace (newlines too) made one space, other controls escaped,
    cut to ``width`` characters with an ellipsis when given."""
    text = escaped(" ".join(text.split()))
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def reason(exc: BaseException, width: int | None = None) -> str:
    """What ``exc`` says, on one line (``one_line``), or its type's name when it says nothing."""
    return one_line(str(exc), width) or type(exc).__name__


def quoted_line(line: str) -> str:
    """One line of a quoted multi-line text (the agent's last words, a summary): controls escaped and a
    leading ``#`` made literal, so the quote never reads as one of the brief's own headings."""
    return _HEADING.sub(r"\1\\#", escaped(line.replace("\t", "    ")))
