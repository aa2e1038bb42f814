"""The agent's replies, written in Markdown, as safe HTML: markdown-it-py's CommonMark with raw HTML off.

A reply is the agent's text and may quote anything (a page it fetched, a log, a user's paste): with ``html``
off, a ``<script>`` or ``<img onerror>`` in it is shown as text, and the library's own link check refuses
``javascript:`` and ``data:`` links. Images are off too: a report loads nothing (its policy would block the
fetch anyway, and the broken image would say nothing).
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt
from markupsafe import Markup


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).disable("image")


def markdown(text: str | None) -> Markup:
    """``text`` (Markdown) as HTML safe to put in a page as it is."""
    return Markup(_parser().render(text or ""))  # markdown-it escapes every text, raw HTML off
