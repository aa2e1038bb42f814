"""A seeded generator of realistic agent-task events, the one workload every benchmark uses.

The same stream feeds tasktrail (as ``(event_class, fields)`` items for ``Ledger.append_many``)
and the peers (as plain JSON-able dicts via ``as_dict``), so every system stores the same facts.

Shape, per the issue: user requirements and corrections (~200 B), tool calls (~150 B), command
results (200 B to 8 KB, skewed towards small), file edits with diffs (~1 KB), decisions; plus the
attempts, test results and next steps an agent loop interleaves. Bulky text goes through
``ledger.domain.bounds.bound`` exactly as the capture path does, so outputs over its 4 KB limit are
stored as a tail plus size and hash, by every system alike.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections.state import TaskState

Item = tuple[type[ev.TaskEvent], dict[str, Any]]

# Shares per 1,000 events. Tool traffic dominates a long agent session; what the user says
# (requirements, corrections) is rare, which also keeps the folded state realistic.
MIX: tuple[tuple[str, int], ...] = (
    ("tool", 300),
    ("command", 250),
    ("file", 200),
    ("test", 80),
    ("decision", 40),
    ("attempt", 50),  # a start or, when one is open, its end
    ("correction", 25),
    ("requirement", 15),
    ("next", 30),
    ("checkpoint", 10),
)

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
"""Fixed, so the same seed gives byte-identical events (no wall clock inside the stream)."""

PROSE = (
    "the parser retries the token refresh until the cache expires so login stalls on slow links "
    "we keep the global client untouched and cap retries at three with backoff because the server "
    "rejects rapid retries migrate the schema index before the vendor config loads then rerun the "
    "flaky timeout test under the 3G profile lexer config module handler request response session "
    "error warning assert expected actual line column file path build lint type check coverage"
)
VOCAB = tuple(PROSE.split())
TOOLS = ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "WebFetch")
COMMANDS = ("pytest -x -q", "pytest tests/test_auth.py", "ruff check .", "mypy src", "make build", "npm test",
            "git status --short", "cargo test", "go test ./...")
DIRS = ("src/auth", "src/http", "src/db", "src/ui", "tests", "docs", "scripts")
FILES = ("refresh", "client", "session", "schema", "cache", "config", "views", "models", "retry", "index")
EXTS = (".py", ".ts", ".md", ".toml")


class Workload:
    """A seeded stream of rule-respecting task events (one task, positions from 2 on)."""

    def __init__(self, seed: int = 7, start: datetime = START) -> None:
        self.rng = random.Random(seed)
        self.kinds = [k for k, _ in MIX]
        self.cum_weights = []
        total = 0
        for _, weight in MIX:
            total += weight
            self.cum_weights.append(total)
        self.clock = start
        self.position = 1  # TaskOpened is position 1
        self.open_attempt: int | None = None
        # One corpus per stream: slicing it is ~50x faster than drawing words per event,
        # which matters when a run generates a million events.
        self.corpus = " ".join(self.rng.choice(VOCAB) for _ in range(4_000))
        lines = (" ".join(self.rng.choice(VOCAB) for _ in range(self.rng.randint(5, 16))) for _ in range(3_000))
        self.log = "\n".join(lines)
        self.patch = "\n".join(self.rng.choice(" +-") + line for line in self.log.splitlines())

    def follow(self, state: TaskState) -> Workload:
        """Continue an existing task: its position and open attempt."""
        self.position, self.open_attempt = state.position, state.open_attempt
        return self

    def _slice(self, source: str, size: int) -> str:
        start = int(self.rng.random() * (len(source) - size - 1))
        return source[start : start + size]

    def _text(self, size: int) -> str:
        return self._slice(self.corpus, size).strip() or "text"

    def _sized(self, mean: int, spread: float = 0.25) -> int:
        return max(8, int(self.rng.gauss(mean, mean * spread)))

    def _output(self) -> str:
        # Command output is skewed: mostly a few hundred bytes, a long tail up to 8 KB.
        size = int(min(8_192.0, max(200.0, self.rng.lognormvariate(6.4, 0.9))))
        return self._slice(self.log, size)

    def _diff(self, path: str) -> str:
        header = f"--- a/{path}\n+++ b/{path}\n@@ -{self.rng.randint(1, 400)},7 +{self.rng.randint(1, 400)},8 @@\n"
        return header + self._slice(self.patch, self._sized(1_000, 0.3) - len(header))

    def _sha(self) -> str:
        return hashlib.sha256(self.rng.randbytes(16)).hexdigest()

    def item(self) -> Item:
        self.position += 1
        self.clock += timedelta(seconds=self.rng.expovariate(1 / 15))
        kind = self.rng.choices(self.kinds, cum_weights=self.cum_weights)[0]
        base: dict[str, Any] = {"timestamp": self.clock}
        match kind:
            case "tool":
                call = f"toolu_{self.rng.getrandbits(64):016x}"
                tool = self.rng.choice(TOOLS)
                return ev.ToolCalled, {**base, "actor": "agent:claude", "tool": tool, "call_id": call,
                                       "input": bound(self._text(self._sized(150)))}
            case "command":
                code = 0 if self.rng.random() < 0.75 else self.rng.choice((1, 2, 127))
                out = self._output()
                return ev.CommandRan, {
                    **base,
                    "actor": "agent:claude",
                    "shell": self.rng.choice(COMMANDS),
                    "cwd": "/home/dev/project",
                    "exit_code": code,
                    "duration_ms": self.rng.randint(20, 60_000),
                    "stdout": bound(out) if code == 0 else None,
                    "stderr": bound(out) if code else None,
                }
            case "file":
                path = f"{self.rng.choice(DIRS)}/{self.rng.choice(FILES)}{self.rng.choice(EXTS)}"
                return ev.FileChanged, {**base, "actor": "agent:claude", "path": path, "operation": "modified",
                                        "before_sha256": self._sha(), "after_sha256": self._sha(),
                                        "diff": bound(self._diff(path))}
            case "test":
                outcome = "passed" if self.rng.random() < 0.8 else "failed"
                name = f"tests/test_{self.rng.choice(FILES)}.py::test_{self.rng.randint(1, 30)}"
                message = self._text(self._sized(120)) if outcome == "failed" else None
                return ev.TestResult, {**base, "name": name, "outcome": outcome,
                                       "duration_ms": self.rng.randint(1, 900), "message": message}
            case "decision":
                return ev.DecisionRecorded, {**base, "actor": "agent:claude", "text": self._text(self._sized(90)),
                                             "reason": self._text(self._sized(110))}
            case "attempt" if self.open_attempt is not None:
                attempt, self.open_attempt = self.open_attempt, None
                outcome = self.rng.choice(("failed", "failed", "succeeded", "abandoned"))
                return ev.AttemptEnded, {**base, "attempt": attempt, "outcome": outcome,
                                         "reason": self._text(self._sized(120))}
            case "attempt":
                self.open_attempt = self.position
                return ev.AttemptStarted, {**base, "actor": "agent:claude", "text": self._text(self._sized(120))}
            case "correction":
                return ev.CorrectionMade, {**base, "text": self._text(self._sized(150)),
                                           "wrong": self._text(self._sized(50))}
            case "requirement":
                return ev.RequirementStated, {**base, "text": self._text(self._sized(200))}
            case "next":
                return ev.NextStepSet, {**base, "actor": "agent:claude", "text": self._text(self._sized(120))}
            case _:
                return ev.CheckpointMarked, {**base, "label": f"cp-{self.position}", "git_head": self._sha()[:40],
                                             "git_dirty": self.rng.random() < 0.5}

    def items(self, count: int) -> Iterator[Item]:
        for _ in range(count):
            yield self.item()

    def batches(self, count: int, size: int) -> Iterator[list[Item]]:
        """``count`` events in lists of at most ``size``: the import path's unit of work."""
        done = 0
        while done < count:
            n = min(size, count - done)
            yield [self.item() for _ in range(n)]
            done += n


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def as_dict(item: Item, position: int) -> dict[str, Any]:
    """The event as a plain JSON-able dict, for peers that know nothing of our models."""
    cls, fields = item
    return {"type": cls.__name__, "position": position, **{k: _plain(v) for k, v in fields.items()}}


def dicts(seed: int, count: int) -> Iterator[dict[str, Any]]:
    """The same stream as ``Workload(seed).items(count)``, as plain dicts."""
    workload = Workload(seed)
    for _ in range(count):
        item = workload.item()
        yield as_dict(item, workload.position)
