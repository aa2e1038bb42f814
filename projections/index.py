"""The served index (`trail serve`'s front page): every task grouped by project with its status and next
step, most recently changed project first, and the tasks a search found (``trail find``'s answer). Pure:
rows in, an HTML string out (``templates/index.html.j2``, autoescaped)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.find import Found
from projections.templating import environment, static


def by_project(rows: Sequence[dict[str, Any]]) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """``rows`` (``reading.task_rows``) grouped by project: the project changed last first, and so each task."""
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: r["updated_at"] or "", reverse=True):
        groups.setdefault(row["project"], []).append(row)
    return list(groups.items())


def render(rows: Sequence[dict[str, Any]], where: str, query: str = "", words: Sequence[str] = (),
           found: Sequence[Found] = (), refused: Sequence[str] = (), live: str | None = None,
           version: int = 0) -> str:
    """The index of ``rows``; with ``query``, the tasks found for its ``words`` above it. ``where`` names the
    ledger. ``live``: the path a served index polls for the ledger's ``version`` (its last notification),
    drawing itself anew when that moved."""
    return environment().get_template("index.html.j2").render(
        projects=by_project(rows), total=len(rows), where=where, query=query, words=list(words), found=found,
        refused=refused, css=static("report.css"), live=live, version=version,
        live_script=static("index_live.js") if live else "",
    ) + "\n"
