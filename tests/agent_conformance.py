"""What every agent behind ``ledger.capture.agent.Agent`` must do, as one abstract test case: an agent's
own tests subclass ``AgentConformance`` and name the agent and a sample of its transcripts and hook
payloads (real ones, in its own format). Run on real ledgers (SQLite and PostgreSQL, by the fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from ledger.app.store import Ledger
from ledger.base.location import Location, inbox_path
from ledger.capture import agents
from ledger.capture.agent import Agent
from ledger.capture.importer import import_files, read_session
from ledger.capture.inbox import drain
from ledger.capture.inbox_queue import enqueue
from ledger.capture.items import bounded
from ledger.domain import events as ev
from projections.brief import injection


class AgentConformance:
    name: ClassVar[str]
    transcript: ClassVar[Path]
    """One transcript file of the agent's, one session with at least one user prompt."""
    hooks: ClassVar[Path]
    """The agent's hook payloads of one session, a JSON list or one JSON object a line."""

    @property
    def agent(self) -> Agent:
        return agents.load(self.name)

    def payloads(self) -> list[dict[str, Any]]:
        text = self.hooks.read_text()
        return json.loads(text) if text.lstrip().startswith("[") else [json.loads(x) for x in text.splitlines() if x]

    def test_the_registry_names_it(self) -> None:
        agent = self.agent
        assert isinstance(agent, Agent) and agent.name == self.name
        assert agents.known(self.name) and self.name in agents.names()
        assert agent.actor == f"agent:{self.name}" and agent.title
        assert self.transcript.name.endswith(agent.transcript_suffix)

    def test_a_transcript_maps_the_same_twice_under_its_own_name(self) -> None:
        first, second = read_session(self.agent, self.transcript), read_session(self.agent, self.transcript)
        assert first.items and first.items == second.items and first.session_id == second.session_id
        sources = {fields["source"].agent for _, fields in first.items if fields.get("source")}
        assert sources == {self.name}
        assert any(cls is ev.ConversationLinked for cls, _ in first.items)
        assert any(cls is ev.RequirementStated and fields["actor"] == "user" for cls, fields in first.items)

    def test_an_import_round_trips_and_a_second_adds_nothing(self, ledger: Ledger, location: Location) -> None:
        report = import_files(ledger, location, self.name, [self.transcript])
        assert report.new_tasks == 1 and sum(report.events.values()) > 2
        again = import_files(ledger, location, self.name, [self.transcript])
        assert sum(again.events.values()) == 0 and again.new_tasks == 0
        (entry,) = ledger.entries()
        stored = list(ledger.task_events(entry.task_id))
        assert {e.source.agent for e in stored if e.source is not None} == {self.name}
        assert sum(report.events.values()) == len(stored) - 1  # all but TaskOpened came from the file

    def test_its_hook_payloads_fold_into_one_task(self, ledger: Ledger, location: Location) -> None:
        payloads = self.payloads()
        for payload in payloads:
            enqueue(str(inbox_path(location)), self.name, payload)
        drained = drain(ledger, location)
        assert drained.rows == len(payloads) and drained.waiting == 0 and not drained.dead, drained
        assert len(drained.tasks) == 1 and drained.events > len(payloads) // 2
        (task,) = drained.tasks
        stored = list(ledger.task_events(task))
        assert {e.source.agent for e in stored if e.source is not None} == {self.name}
        links = [e for e in stored if isinstance(e, ev.ConversationLinked)]
        assert links and all(e.agent == self.name for e in links)

    def test_a_plain_failure_is_no_refusal(self) -> None:
        agent = self.agent
        assert agent.refusal("Traceback (most recent call last):\n  ValueError: no") is None
        assert agent.refusal("") is None
        failed = (ev.ToolResult, {"tool": "t", "ok": False, "output": bounded("boom")})
        passed = (ev.ToolResult, {"tool": "t", "ok": True, "output": bounded("The user doesn't want to")})
        assert agent.normalised([failed, passed]) == [failed, passed]

    def test_the_session_start_injection_fits_its_budget(self, ledger: Ledger, location: Location) -> None:
        import_files(ledger, location, self.name, [self.transcript])
        (entry,) = ledger.entries()
        budget = self.agent.budget
        assert 0 < budget.default <= budget.cap
        text = injection(ledger.state(entry.task_id), max_chars=10**6, budget=budget)
        assert budget.measure(text) <= budget.cap
