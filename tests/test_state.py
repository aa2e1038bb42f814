"""The task state stays bounded however long the task runs; the log keeps everything."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from ledger.app.store import Ledger
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections import brief
from projections import state as st


def _event(cls: type[ev.TaskEvent], position: int, task: object, **fields: object) -> ev.TaskEvent:
    return cls(originator_id=task, originator_version=position, timestamp=datetime.now(UTC), **fields)


def test_windows_cap_every_growing_collection_and_the_brief_points_at_the_log() -> None:
    task = uuid4()
    events: list[ev.TaskEvent] = [_event(ev.TaskOpened, 1, task, originator_topic="x", number=1, title="long",
                                         slug="long")]
    position = 1
    for i in range(400):
        for cls, fields in (
            (ev.RequirementStated, {"text": f"req {i}"}),
            (ev.CorrectionMade, {"text": f"cor {i}"}),
            (ev.DecisionRecorded, {"text": f"dec {i}"}),
            (ev.AttemptStarted, {"text": f"try {i}"}),
            (ev.AttemptEnded, {"attempt": position + 4, "outcome": "failed", "reason": f"no {i}"}),
            (ev.FileChanged, {"path": f"src/f{i}.py", "operation": "modified"}),
            (ev.TestResult, {"name": f"t{i}", "outcome": "passed"}),
            (ev.ConversationLinked, {"agent": "claude-code", "session_id": f"s{i}"}),
            (ev.CommandRan, {"shell": f"make {i}", "exit_code": 0, "stdout": bound("ok")}),
        ):
            position += 1
            events.append(_event(cls, position, task, **fields))
    final = st.replay(events)
    assert len(final.requirements) == st.RECENT_INTENTS and final.requirements[-1].text == "req 399"
    assert len(final.corrections) == st.RECENT_INTENTS
    assert len(final.decisions) == st.RECENT_DECISIONS
    assert len(final.attempts) == st.RECENT_ATTEMPTS and final.attempts_failed == 400
    assert len(final.files) == st.RECENT_FILES and list(final.files)[-1] == "src/f399.py"
    assert len(final.tests) == st.RECENT_TESTS and len(final.conversations) == st.RECENT_CONVERSATIONS
    assert final.counts["RequirementStated"] == 400
    # The whole state stays small: what a snapshot stores and a resume decodes.
    assert len(final.model_dump_json()) < 250_000
    text = brief.render(final)
    assert "(300 earlier in the log: trail log --type RequirementStated)" in text
    assert "(350 earlier in the log: trail log --type AttemptEnded)" in text


def test_a_file_touched_again_moves_to_the_front_and_keeps_its_count() -> None:
    task = uuid4()
    events: list[ev.TaskEvent] = [_event(ev.TaskOpened, 1, task, originator_topic="x", number=1, title="t", slug="t")]
    for i, path in enumerate(["a.py", "b.py", "a.py"], start=2):
        events.append(_event(ev.FileChanged, i, task, path=path, operation="modified"))
    final = st.replay(events)
    assert list(final.files) == ["b.py", "a.py"] and final.files["a.py"].changes == 2


def test_a_broader_or_chained_pass_answers_for_a_narrower_failure(ledger: Ledger) -> None:
    """What fixed a failure need not be the same command: the whole suite after one test, `go test ./...`
    after `-run X`, the `&&` chain whose last part is the command that was rejected."""
    task = ledger.open_task("Broader passes").id
    assert task is not None

    def ran(line: str, code: int) -> None:
        ledger.append(task, ev.CommandRan, argv=["sh", "-c", line], shell=line, cwd="/w", exit_code=code,
                      duration_ms=1)

    ran("pytest tests/test_a.py::test_x", 1)
    ran("go test -run TestY ./pkg", 1)
    ran("git push", 1)
    ran("ruff check src/b.py", 1)
    ran("pytest -q", 0)
    ran("go test ./...", 0)
    ran("git pull --rebase && git push", 0)
    ran("ruff check src/other.py", 0)  # another target: says nothing of b.py
    open_now = [f.what for f in ledger.state(task).failures if f.resolved_at is None]
    assert open_now == ["ruff check src/b.py"]
