"""Redaction and the JSON depth check on the worst inputs known: `python -m bench.hostile`.

Each hostile input (a run of one character class, or a repeated fragment that once made a pattern
read to the end of the text from every position) is redacted at two sizes. Two goals, both ratios
measured in the same run: per MB, the worst input costs at most ``FLOOR_GOAL`` times a plain
``re.sub`` of the same bytes (the floor: one regex pass over the text), and the cost per MB at the
larger size is at most ``FLAT_GOAL`` times that at the smaller (linear: a quadratic scan doubles
per doubling). Before the fixes 32 KiB of ``-`` took 15 s in the hook.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from bench.tables import Table

FLOOR_GOAL = 100.0
FLAT_GOAL = 1.5
_FLOOR = re.compile(r"[A-Za-z0-9_-]{16,}")
"""The floor: one plain pass of a regex over the text (base64url runs, as the detectors' own run scan)."""


_END = "-----END PRIVATE KEY-----"


def _repeat(piece: str) -> Callable[[int], str]:
    return lambda size: (piece * (size // len(piece) + 1))[:size]


def _whole_lines(line: str, size: int) -> str:
    """Whole lines filling at most ``size`` characters, left-padded with spaces to ``size``: a key body cut off
    from its BEGIN line at every size (a partial last line before the END is no body, so one size would find and
    redact a body and another not, and their costs per MB would not compare)."""
    body = line * (size // len(line))
    return " " * (size - len(body)) + body


INPUTS: dict[str, Callable[[int], str]] = {
    "`-` run": _repeat("-"),
    "base64url run": _repeat("Zm9vYmFyX-_0aGVyZQ"),
    "`a-` (dashes between words)": _repeat("a-"),
    "`eyJ-` (JWT starts)": _repeat("eyJ-"),
    "`(-u` (curl user flags)": _repeat("(-u"),
    "key lines before `-----END`": lambda size: _whole_lines("QUFBQUFBQUFBQUFBQUFB\n", size - len(_END)) + _END,
    "`mysql ` (a client's -p flag looked for)": _repeat("mysql "),
    "escaped JSON (`\\\"k\\\": [1]`)": _repeat('{\\"k\\": [1]} '),
}
"""Hostile inputs by name, each a function of the size in characters."""


def _best(work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - began)
    return best


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g}"  # the quick run's 256 KiB is 0.25, not "0"


def table(sizes: tuple[int, int] = (1 << 20, 4 << 20), repeat: int = 3) -> Table:
    from ledger.capture.jsonl import too_deep
    from ledger.domain.redact import BUILTIN, redact_text

    small, large = sizes
    lo, hi = _mib(small), _mib(large)
    out = Table(
        f"redaction, worst input per MB ({lo} and {hi} MiB, best of {repeat})",
        ("input", "ms per MB", "floor ms per MB", "vs floor", f"goal (<= {FLOOR_GOAL:g}x)", "goal met",
         f"per MB at {hi} vs {lo} MiB", f"goal (<= {FLAT_GOAL:g}x)", "goal met"),
    )
    data: dict[str, dict[str, float]] = {}
    for name, make in INPUTS.items():
        per_mb = {}
        for size in sizes:
            text = make(size)

            def redact(text: str = text) -> None:
                redact_text(text, BUILTIN)
                too_deep("[" * 200 + text)  # the depth check a torn payload of this text meets

            per_mb[size] = _best(redact, repeat) / (size / (1 << 20))
        floor_text = make(large)
        floor = _best(lambda text=floor_text: _FLOOR.sub("", text), repeat) / (large / (1 << 20))
        worst, flat = per_mb[large] / floor, per_mb[large] / per_mb[small]
        out.add(name, f"{per_mb[large] * 1000:.1f}", f"{floor * 1000:.2f}", f"{worst:.1f}x", f"<= {FLOOR_GOAL:g}x",
                out.check(f"{name} <= {FLOOR_GOAL:g}x floor", worst <= FLOOR_GOAL), f"{flat:.2f}x",
                f"<= {FLAT_GOAL:g}x", out.check(f"{name} flat per MB", flat <= FLAT_GOAL))
        data[name] = {"per_mb_s": per_mb[large], "per_mb_small_s": per_mb[small], "floor_per_mb_s": floor}
    out.data = data
    out.notes.append("Redaction with the built-in patterns (`redact_text`), then the JSON depth check on the same "
                     "text behind 200 open brackets; the floor is `re.sub` of one base64url-run regex over the "
                     "same bytes.")
    return out


if __name__ == "__main__":
    print(table().markdown())
