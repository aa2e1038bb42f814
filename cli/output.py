"""Output as the tools people already use behave: colour on a terminal only, long output through a pager.

Colour: only when stdout is a terminal, and never with ``NO_COLOR`` set to anything but "" (no-color.org) or
``--no-color``. The pager: only when stdout and stdin are terminals, the text is taller than the terminal and
``--no-pager`` was not given; it is ``$PAGER`` (click's ``echo_via_pager``: ``less`` or ``more`` without it).
Machine output (``--json``) and the brief (an agent's input, and the fast path's text) are never styled."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import click


def _settings() -> tuple[bool, bool]:
    """``(no_color, no_pager)`` as the command line said (the group's options), both False outside one."""
    current = click.get_current_context(silent=True)
    obj = current.find_root().obj if current else None
    return bool(getattr(obj, "no_color", False)), bool(getattr(obj, "no_pager", False))


def color() -> bool:
    no_color, _ = _settings()
    return not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def style(text: str, **how: Any) -> str:
    """``text`` styled as click.style would, when colour is on; else as it is."""
    return click.style(text, **how) if color() else text


def page(text: str) -> None:
    """``text`` (no final line break) to stdout, through the pager when it is taller than the terminal."""
    _, no_pager = _settings()
    tall = text.count("\n") + 1 >= shutil.get_terminal_size().lines
    if tall and not no_pager and sys.stdout.isatty() and sys.stdin.isatty():
        click.echo_via_pager(text, color=color())
    else:
        click.echo(text)
