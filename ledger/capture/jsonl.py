"""Reading a JSONL transcript: each line's JSON object with its number; what cannot be read is
skipped with the line number and why, never fatal."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Skipped:
    line: int
    reason: str


def records(lines: Iterable[tuple[int, str]], skipped: list[Skipped]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every line that holds a JSON object; the others go to ``skipped``."""
    for number, raw in lines:
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            skipped.append(Skipped(number, f"not JSON ({exc.msg})"))
            continue
        except RecursionError:
            skipped.append(Skipped(number, "JSON nested too deeply"))
            continue
        if not isinstance(record, dict):
            skipped.append(Skipped(number, "not a JSON object"))
            continue
        yield number, record
