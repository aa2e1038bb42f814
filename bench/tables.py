"""A measure's result: a Markdown table for people, the same figures as JSON for machines, and the
goals it was held to, which the run sums up in one closing line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Goal:
    """One goal a table holds tasktrail to: a ratio to a peer or floor measured in the same run."""

    name: str
    met: bool | None
    """``None``: not measured in this run (a module or the fixtures missing); it is not counted."""


@dataclass
class Table:
    measure: str
    headers: tuple[str, ...]
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    """Raw figures (unrounded) for ``--json``."""
    goals: list[Goal] = field(default_factory=list)

    def add(self, *row: Any) -> None:
        self.rows.append(row)

    def check(self, name: str, ok: bool | None) -> str:
        """Record goal ``name`` as met, missed or (``None``) not measured; the ``goal met`` cell for it."""
        self.goals.append(Goal(name, ok))
        return met(ok)

    def markdown(self) -> str:
        lines = [f"## {self.measure}", "", "| " + " | ".join(self.headers) + " |",
                 "|" + "|".join(" --- " for _ in self.headers) + "|"]
        lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in self.rows]
        lines += [""] + [f"{note}" for note in self.notes]
        return "\n".join(lines).rstrip() + "\n"

    def as_json(self) -> dict[str, Any]:
        return {"measure": self.measure, "headers": list(self.headers), "rows": [list(map(str, r)) for r in self.rows],
                "notes": self.notes, "data": self.data,
                "goals": [{"name": g.name, "met": g.met} for g in self.goals]}


def summary(tables: list[Table]) -> str:
    """The run's closing line: how many goals were met, and which were missed or could not be measured."""
    goals = [goal for table in tables for goal in table.goals]
    measured = [goal for goal in goals if goal.met is not None]
    missed = [goal.name for goal in measured if not goal.met]
    line = (f"goals met: {len(measured) - len(missed)} of {len(measured)}; "
            f"missed: {', '.join(missed) if missed else 'none'}")
    unmeasured = [goal.name for goal in goals if goal.met is None]
    return line + (f"; not measured: {', '.join(unmeasured)}" if unmeasured else "")


NA = "n/a (not built yet)"


def met(ok: bool | None) -> str:
    """The ``goal met`` cell: a miss is bold so it cannot be overlooked."""
    if ok is None:
        return "n/a"
    return "yes" if ok else "**no**"


def ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:,.1f} ms"


def rate(per_second: float | None) -> str:
    return "n/a" if per_second is None else f"{per_second:,.0f}"


def size(count: int) -> str:
    """1000 -> 1k, 1000000 -> 1M: the sizes the tables are keyed by."""
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count >= 1_000 and count % 1_000 == 0:
        return f"{count // 1_000}k"
    return f"{count:,}"


def scale_main(prog: str, doc: str | None, table: Callable[[int, int, Path | None], Table], size: int, runs: int,
               what: str) -> None:
    """The command line of a bench that sets a large ledger (``size`` ``what``) against a small one (``--size``,
    ``--runs``, ``--dir``, ``--json``): its table printed, its figures written."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").splitlines()[0])
    parser.add_argument("--size", type=int, default=size, help=f"{what} (default {size:,})")
    parser.add_argument("--runs", type=int, default=runs, help=f"counted runs per ledger (default {runs})")
    parser.add_argument("--dir", type=Path, help="where to make the ledgers (default: the temporary folder)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    result = table(args.size, args.runs, args.dir)
    print(result.markdown())
    if args.json:
        args.json.write_text(json.dumps(result.as_json(), indent=2) + "\n")
