"""Capping huge strings in hook payloads before they reach the inbox (standard library only).

A hook payload can carry a 50 MB command output. The inbox row must stay small, yet the
event built from it later must still state the full size and hash. The cut is recorded out
of band: ``cap_payload`` keeps each long string's tail in place and lists where it cut, with
the full size and sha256, under the payload's ``CUTS_KEY``, a key the hook owns (it drops any
the agent sent). ``restore`` turns those entries back into ``Cut`` strings when the inbox is
read, and ``ledger.domain.bounds.bound`` takes size and hash from them. Nothing inside a string says
it was cut, so no output can claim to be a cut one.
"""

from __future__ import annotations

from typing import Any

LIMIT = 1 << 20
"""Characters of a payload string kept whole; longer ones keep their last LIMIT."""

CUTS_KEY = "_trail_cuts"
"""The payload key listing the strings the hook cut: ``[{"path": [...], "size": N, "sha256": H}]``."""


class Cut(str):
    """The kept tail of a string the hook cut, with the full string's size in bytes and sha256."""

    size: int
    sha256: str

    def __new__(cls, tail: str, size: int, sha256: str) -> Cut:
        made = super().__new__(cls, tail)
        made.size, made.sha256 = size, sha256
        return made

    def __str__(self) -> str:
        return self  # str(cut) keeps the cut's size and hash


def cap_payload(payload: dict[str, Any], limit: int = LIMIT) -> dict[str, Any]:
    """``payload`` with every string over ``limit`` characters cut to its tail, the cuts under ``CUTS_KEY``."""
    cuts: list[dict[str, Any]] = []

    def walk(value: Any, path: list[str | int]) -> Any:
        if isinstance(value, str):
            if len(value) <= limit:
                return value
            import hashlib  # only for a string this long: the hook's start-up never pays it otherwise

            raw = value.encode("utf-8", "replace")
            cuts.append({"path": path, "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()})
            return value[-limit:]
        if isinstance(value, list):
            return [walk(v, [*path, i]) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: walk(v, [*path, k]) for k, v in value.items()}
        return value

    capped = walk({k: v for k, v in payload.items() if k != CUTS_KEY}, [])
    if cuts:
        capped[CUTS_KEY] = cuts
    return dict(capped)


def restore(payload: dict[str, Any]) -> dict[str, Any]:
    """An inbox payload with its ``CUTS_KEY`` entries turned back into ``Cut`` strings (the key removed)."""
    cuts = payload.pop(CUTS_KEY, None)
    for cut in cuts if isinstance(cuts, list) else ():
        try:
            *parents, last = cut["path"]
            holder = payload
            for step in parents:
                holder = holder[step]
            if isinstance(holder[last], str):
                holder[last] = Cut(holder[last], int(cut["size"]), str(cut["sha256"]))
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # a path that no longer leads anywhere: the tail stands as it is
    return payload

