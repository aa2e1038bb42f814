"""The LangGraph peer: a StateGraph whose state holds the task's fields, saved by SqliteSaver.

One node, ``agent``, takes the next event of the workload per super-step and returns the
update an agent loop would write (a requirement appended, a file's latest touch, the
next step...), so LangGraph writes one checkpoint per step, as it does for a real loop.
``variant="default"`` uses ordinary reducer channels (every checkpoint carries the whole
state); ``variant="delta"`` puts the growing fields in ``DeltaChannel`` (stores writes,
snapshots every 100 updates) where the installed LangGraph has it.
"""

from __future__ import annotations

import operator
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, StateGraph

DeltaChannel: Any
try:
    from langgraph.channels import DeltaChannel
except ImportError:  # older LangGraph: the delta variant is reported as unavailable
    DeltaChannel = None

Variant = Literal["default", "delta"]
RECENT = 20
THREAD = "task-1"


def has_delta() -> bool:
    return DeltaChannel is not None


def _merge(left: dict[str, Any] | None, right: dict[str, Any]) -> dict[str, Any]:
    return {**(left or {}), **right}


def _concat_all(state: list[Any] | None, writes: Sequence[list[Any]]) -> list[Any]:
    out = list(state or [])
    for write in writes:
        out.extend(write)
    return out


def _merge_all(state: dict[str, Any] | None, writes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out = dict(state or {})
    for write in writes:
        out.update(write)
    return out


def _schema(variant: Variant) -> Any:
    """The state schema: the same fields for both variants, only the channels differ."""
    if variant == "delta":
        assert DeltaChannel is not None
        listing: Any = DeltaChannel(_concat_all)
        mapping: Any = DeltaChannel(_merge_all)
    else:
        listing, mapping = operator.add, _merge

    # The functional form: the class form's annotations would be strings (future import)
    # that cannot see the channels chosen above.
    fields: dict[str, Any] = {
        "position": int,
        "event": dict[str, Any],  # the step's whole event: every system stores every fact
        "requirements": Annotated[list[dict[str, Any]], listing],
        "corrections": Annotated[list[dict[str, Any]], listing],
        "decisions": Annotated[list[dict[str, Any]], listing],
        "attempts": Annotated[list[dict[str, Any]], listing],
        "files": Annotated[dict[str, dict[str, Any]], mapping],
        "tests": Annotated[dict[str, dict[str, Any]], mapping],
        "commands": list[dict[str, Any]],
        "open_attempt": int | None,
        "next_step": str | None,
    }
    return TypedDict("TaskGraphState", fields, total=False)  # type: ignore[operator]  # built at run time


def _update(state: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """What the agent node writes for ``event``: the same fold as tasktrail's, in LangGraph's terms."""
    kind, pos = event["type"], event["position"]
    update: dict[str, Any] = {"position": pos, "event": event}
    if kind == "RequirementStated":
        update["requirements"] = [{"position": pos, "text": event["text"]}]
    elif kind == "CorrectionMade":
        update["corrections"] = [{"position": pos, "text": event["text"], "wrong": event.get("wrong")}]
    elif kind == "DecisionRecorded":
        update["decisions"] = [{"position": pos, "text": event["text"], "reason": event.get("reason")}]
    elif kind == "AttemptStarted":
        update["attempts"] = [{"position": pos, "text": event["text"]}]
        update["open_attempt"] = pos
    elif kind == "AttemptEnded":
        update["attempts"] = [{"position": pos, "ended": event["attempt"], "outcome": event["outcome"]}]
        update["open_attempt"] = None
    elif kind == "FileChanged":
        update["files"] = {event["path"]: {"position": pos, "after_sha256": event.get("after_sha256")}}
    elif kind == "TestResult":
        update["tests"] = {event["name"]: {"position": pos, "outcome": event["outcome"]}}
    elif kind == "CommandRan":
        recent = list(state.get("commands") or [])[-(RECENT - 1):]
        update["commands"] = [*recent, {"position": pos, "shell": event.get("shell"), "exit": event["exit_code"]}]
    elif kind == "NextStepSet":
        update["next_step"] = event["text"]
    return update


class LangGraphPeer:
    """One SQLite checkpoint file and one thread that grows as the workload is fed to it."""

    def __init__(self, path: Path, variant: Variant) -> None:
        self.path = path
        self.variant = variant
        self.con = sqlite3.connect(path, check_same_thread=False)
        self.saver = SqliteSaver(self.con)
        self.feed: Iterator[dict[str, Any]] = iter(())
        self.last = 0
        graph: StateGraph[Any] = StateGraph(_schema(variant))
        graph.add_node("agent", self._agent)
        graph.set_entry_point("agent")
        graph.add_conditional_edges("agent", self._more)
        self.app = graph.compile(checkpointer=self.saver)
        self.steps = 0
        self.ids: dict[int, str] = {}
        """Checkpoint id of the step that wrote each event position."""
        self.max_step = -10

    def _agent(self, state: Any) -> dict[str, Any]:
        return _update(state, next(self.feed))

    def _more(self, state: dict[str, Any]) -> str:
        return "agent" if state["position"] < self.last else END

    def config(self, checkpoint_id: str | None = None, steps: int | None = None) -> RunnableConfig:
        configurable: dict[str, Any] = {"thread_id": THREAD}
        if checkpoint_id:
            configurable["checkpoint_id"] = checkpoint_id
        config = RunnableConfig(configurable=configurable)
        if steps is not None:
            config["recursion_limit"] = steps + 10  # one super-step per event, plus the run's own
        return config

    def run(self, events: list[dict[str, Any]]) -> float:
        """Feed ``events`` as one agent run (one checkpoint per step); seconds taken."""
        self.feed, self.last = iter(events), events[-1]["position"]
        began = time.perf_counter()
        self.app.invoke({}, self.config(steps=len(events)))
        self.steps += len(events)
        self._record_ids([e["position"] for e in events])
        return time.perf_counter() - began

    def checkpoint(self) -> None:
        self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _record_ids(self, positions: list[int]) -> None:
        # The run's loop checkpoints, in step order, are the events' positions in order: reading
        # the metadata column avoids deserialising every checkpoint just to find one.
        rows = self.con.execute(
            "SELECT checkpoint_id, json_extract(metadata, '$.step') AS step FROM checkpoints "
            "WHERE thread_id = ? AND json_extract(metadata, '$.source') = 'loop' AND step > ? ORDER BY step",
            (THREAD, self.max_step),
        ).fetchall()
        # The first loop checkpoint of a run holds only its (empty) input; each later one, one event.
        for position, (checkpoint_id, step) in zip(positions, rows[1:], strict=True):
            self.ids[position] = checkpoint_id
            self.max_step = step

    def state_at(self, checkpoint_id: str) -> dict[str, Any]:
        return dict(self.app.get_state(self.config(checkpoint_id)).values)

    def state_by_walk(self, position: int, deadline: float) -> tuple[dict[str, Any] | None, int]:
        """The state at ``position`` found by walking the history back from the latest, giving up
        at ``deadline`` (a ``time.perf_counter`` value); also how many checkpoints it read."""
        walked = 0
        for snapshot in self.app.get_state_history(self.config()):
            walked += 1
            if snapshot.values.get("position") == position:
                return dict(snapshot.values), walked
            if time.perf_counter() > deadline:
                break
        return None, walked

    def latest(self) -> dict[str, Any]:
        return dict(self.app.get_state(self.config()).values)

    def close(self) -> None:
        self.con.close()

