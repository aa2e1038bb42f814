"""The benchmark cannot rot silently: the workload stays seeded, valid and shaped as specified, and
every goal is a ratio to a peer or floor measured in the same run, counted in the closing line.

Benchmarks are not tests: this runs the generator and the measures at a tiny size (a few seconds),
and judges only the goals whose outcome the test fixes (a peer far slower or faster), never a time.
"""

from __future__ import annotations

import re
import shutil
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from bench import measures, systems
from bench.systems import FloorRun, GraphRun, Plan, TrailRun
from bench.tables import Goal, Table, summary
from bench.workload import Workload, as_dict, dicts
from ledger.app.store import open_ledger
from ledger.base.location import resolve
from ledger.domain import events as ev
from tests.conftest import SHARED

SIZE = 2_000


def _text_bytes(cls: type[ev.TaskEvent], fields: dict[str, object]) -> int:
    """The payload a user would call the event's size: its text, output or diff."""
    def n(value: object) -> int:
        if isinstance(value, ev.Bounded):
            return len(value.tail.encode())
        return len(str(value).encode()) if value else 0

    keys = {
        ev.RequirementStated: ("text",), ev.CorrectionMade: ("text", "wrong"), ev.ToolCalled: ("input",),
        ev.CommandRan: ("stdout", "stderr"), ev.FileChanged: ("diff",), ev.DecisionRecorded: ("text", "reason"),
    }[cls]
    return sum(n(fields.get(k)) for k in keys)


def test_same_seed_same_events_and_other_seed_differs() -> None:
    first = [orjson.dumps(d) for d in dicts(3, 300)]
    assert first == [orjson.dumps(d) for d in dicts(3, 300)]
    assert first != [orjson.dumps(d) for d in dicts(4, 300)]


def test_mix_and_sizes_match_the_spec() -> None:
    workload = Workload(11)
    sizes: dict[type[ev.TaskEvent], list[int]] = defaultdict(list)
    for cls, fields in workload.items(SIZE):
        if cls in (ev.RequirementStated, ev.CorrectionMade, ev.ToolCalled, ev.CommandRan, ev.FileChanged,
                   ev.DecisionRecorded):
            sizes[cls].append(_text_bytes(cls, fields))
        else:
            sizes[cls].append(0)
    # Every kind the issue names shows up, tool traffic dominates, user input is rare.
    for cls in (ev.RequirementStated, ev.CorrectionMade, ev.ToolCalled, ev.CommandRan, ev.FileChanged,
                ev.DecisionRecorded, ev.AttemptStarted, ev.AttemptEnded):
        assert sizes[cls], cls.__name__
    assert len(sizes[ev.ToolCalled]) > 10 * len(sizes[ev.RequirementStated])
    # Sizes: ~200 B user text, ~150 B tool calls, ~1 KB diffs, 200 B to 8 KB (kept to 4 KB) outputs.
    assert 150 <= statistics.mean(sizes[ev.RequirementStated]) <= 250
    assert 150 <= statistics.mean(sizes[ev.CorrectionMade]) <= 250
    assert 150 <= statistics.mean(sizes[ev.DecisionRecorded]) <= 250
    assert 110 <= statistics.mean(sizes[ev.ToolCalled]) <= 190
    assert 800 <= statistics.mean(sizes[ev.FileChanged]) <= 1_200
    outputs = sorted(sizes[ev.CommandRan])
    assert outputs[0] >= 190 and outputs[-1] <= 4_096
    assert statistics.median(outputs) < statistics.mean(outputs)  # skewed: a long tail of big outputs
    assert outputs[-1] > 4 * statistics.median(outputs)


def test_items_are_accepted_by_the_ledger_and_dicts_mirror_them(tmp_path: Path) -> None:
    ledger = open_ledger(resolve(str(tmp_path / "ledger.db")))
    task = ledger.open_task("bench smoke").id
    assert task is not None
    workload = Workload(5)
    for batch in workload.batches(600, 250):
        ledger.append_many(task, batch)
    assert ledger.state(task).position == 601
    again = Workload(5)
    item = again.item()
    plain = as_dict(item, again.position)
    assert plain["type"] == item[0].__name__ and plain["position"] == 2
    orjson.dumps(plain)  # JSON-able as it stands
    ledger.close()


# -- goals: every one a ratio to something measured in the same run ---------------------------

ABSOLUTE = re.compile(r"\d\s*(ms|s|seconds)\b")
"""A goal worded as a time ("< 20 ms") judges the machine, not the code."""


def _tiny_plan() -> Plan:
    return Plan(quick=True, seed=7, milestones=(200, 600), storage_sizes=(200, 600), resume_sizes=(200, 600),
                append_events=600, each_events=100, langgraph_delta=(200, 600), langgraph_default=(200,),
                build_budget=60.0, travel_points=10, walk_budget=1.0, hook_repeat=1, resume_repeat=1)


def _peer(latest: float, by_id: float, sizes: tuple[int, ...] = (200, 600)) -> GraphRun:
    """LangGraph's figures as a run would have measured them (LangGraph itself is not in the test extra)."""
    return GraphRun("delta", steps=max(sizes), seconds=1.0, disk={n: 1 for n in sizes},
                    latest={n: latest for n in sizes}, by_id=[by_id] * 10, by_id_cpu=[by_id] * 10)


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Plan, TrailRun, FloorRun, Path]]:
    """A real 600-event task (SQLite file, `trail resume` processes) and the floor beside it."""
    directory = tmp_path_factory.mktemp("bench")
    plan = _tiny_plan()
    trail = systems.grow_trail(plan, directory, lambda _: None)
    floor = systems.grow_floor(plan, directory, lambda _: None)
    yield plan, trail, floor, directory
    trail.ledger.close()


def _goal(table: Table, prefix: str) -> bool | None:
    [goal] = [g for g in table.goals if g.name.startswith(prefix)]
    return goal.met


def test_resume_and_time_travel_are_judged_against_langgraph_in_the_same_run(
    grown: tuple[Plan, TrailRun, FloorRun, Path],
) -> None:
    plan, trail, _, _ = grown
    absent = GraphRun("default")
    # The same tasktrail figures meet the goal beside a slow peer and miss it beside a fast one.
    slow, fast = _peer(latest=1_000.0, by_id=1_000.0), _peer(latest=1e-12, by_id=1e-12)
    for peer, expected in ((slow, True), (fast, False)):
        resumed = measures.resume(plan, trail, peer, absent)
        assert _goal(resumed, "resume 200 in-process <= 0.5x LangGraph delta") is expected
        assert _goal(resumed, "resume 600 in-process <= 0.5x LangGraph delta") is expected
        travelled = measures.time_travel(plan, trail, peer, absent)
        assert _goal(travelled, "time travel p95 <= 0.5x LangGraph delta by id") is expected
    # The largest task also carries the flatness goal (its outcome is the machine's to decide).
    names = [g.name for g in measures.resume(plan, trail, slow, absent).goals]
    assert names[-2:] == ["latest snapshot 600 <= 1.5x 200", "resume 600 process CPU <= 1.2x 200"]
    # Judged by the processes' own CPU, which a real `trail resume` spends (interpreter, imports, read).
    figures = measures.resume(plan, trail, slow, absent).data["600"]
    assert figures["process_cpu_s"] > 0 and figures["vs_smallest_cpu"] > 0
    # Where LangGraph was not grown as far, the goal names the size it is judged against.
    short = measures.resume(plan, trail, _peer(latest=1_000.0, by_id=1_000.0, sizes=(200,)), absent)
    assert _goal(short, "resume 600 in-process <= 0.5x LangGraph delta at 200") is True


def test_no_goal_is_an_absolute_time_and_the_run_closes_with_the_count(
    grown: tuple[Plan, TrailRun, FloorRun, Path],
) -> None:
    plan, trail, floor, directory = grown
    peer, absent = _peer(latest=1_000.0, by_id=1_000.0), GraphRun("default")
    tables = [
        measures.append_batched(plan, trail, floor, peer, absent),
        measures.storage(plan, trail, floor, peer, absent),
        measures.resume(plan, trail, peer, absent),
        measures.time_travel(plan, trail, peer, absent),
        measures.import_logs(plan, directory, bare_seconds=0.02, fixtures=directory / "no-such-folder"),
        measures.find_vs_resume(plan, trail),
    ]
    for table in tables:
        assert table.goals, table.measure
        goal_columns = [i for i, header in enumerate(table.headers) if header.startswith("goal")]
        cells = [str(row[i]) for row in table.rows for i in goal_columns]
        texts = [g.name for g in table.goals] + [table.headers[i] for i in goal_columns] + cells
        assert not [text for text in texts if ABSOLUTE.search(text)], table.measure
    line = summary(tables)
    measured = [g for t in tables for g in t.goals if g.met is not None]
    missed = [g.name for g in measured if not g.met]
    assert line.startswith(f"goals met: {len(measured) - len(missed)} of {len(measured)}; missed: ")
    # Without the fixtures the import goal is not measured, and said so rather than counted.
    assert line.endswith("; not measured: import of every real log")


def test_closing_line_names_every_miss() -> None:
    table = Table("t", ("goal met",))
    assert table.check("a", True) == "yes"
    assert table.check("b <= 2x c", False) == "**no**"
    assert table.check("d", None) == "n/a"
    other = Table("u", ("goal met",))
    other.check("e", False)
    assert summary([table, other]) == "goals met: 1 of 3; missed: b <= 2x c, e; not measured: d"
    assert summary([Table("v", ("x",))]) == "goals met: 0 of 0; missed: none"


def test_a_small_log_meets_the_import_goal_by_costing_no_more_than_a_bare_interpreter() -> None:
    assert measures.import_met(10_000_000, 1.0, None)  # 10 MB/s: by its rate
    assert measures.import_met(40_000, 0.015, 0.025)  # 2.7 MB/s, but quicker than starting python
    assert not measures.import_met(40_000, 0.015, 0.010)
    assert not measures.import_met(40_000, 0.015, None)


def test_import_of_a_real_log_is_judged_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = sorted((SHARED / "fixtures" / "claude-code").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if not real:
        pytest.skip("../shared/fixtures/claude-code is absent")
    fixtures = tmp_path / "fixtures"
    (fixtures / "claude-code").mkdir(parents=True)
    shutil.copy(real[0], fixtures / "claude-code" / real[0].name)
    user_home = tmp_path / "user-home"  # the home a person running the bench has: the import keeps out of it
    monkeypatch.setenv("TRAIL_HOME", str(user_home))
    table = measures.import_logs(_tiny_plan(), tmp_path, bare_seconds=1_000.0, fixtures=fixtures)
    assert not user_home.exists()
    assert [row[0] for row in table.rows] == [real[0].name, "**all 1 logs**"]
    assert table.goals == [Goal("import of every real log", True)]
    assert table.data[f"claude-code/{real[0].name}"]["events"] > 0
    # The process's first import (its loading) was paid before the row, on a ledger of its own, and is named.
    (warm_up,) = table.data["warm_up"]
    assert warm_up.startswith("claude-code ") and warm_up.endswith(f"({real[0].name})")
    assert any(warm_up in note for note in table.notes)


def test_the_big_import_row_runs_a_real_import_process_and_judges_its_peak(tmp_path: Path) -> None:
    from bench import bigimport

    table = bigimport.table(tmp_path, megabytes=1)  # the row's machinery on a 1 MB transcript
    found = table.data
    assert found["bytes"] >= 1_000_000 and found["events"] == found["calls"] + 4  # request, link, end, status
    assert 20 < found["peak_mb"] < 1_000  # the child's own figure, in MB
    assert table.goals == [Goal("import 1 MB peak RSS <= 150 MB", True)]


def test_the_sessionstart_scale_row_times_real_hooks_that_answered_with_the_brief(tmp_path: Path) -> None:
    from bench import sessionscale

    table = sessionscale.table(large=2_000, runs=1, directory=tmp_path)  # the row's machinery on small ledgers
    samples = table.data["samples_cpu_s"]
    assert set(samples) == {"1000", "2000"} and all(len(cpu) == 1 and cpu[0] > 0 for cpu in samples.values())
    [goal] = table.goals
    assert goal.name == "SessionStart new session 2k CPU <= 1.2x 1k" and goal.met is not None


def test_the_dedupe_row_times_each_question_on_both_ledgers(tmp_path: Path) -> None:
    from bench import dedupe

    table = dedupe.table(large=2_000, runs=1, directory=tmp_path)  # the row's machinery on small ledgers
    samples = table.data["samples_cpu_s"]
    assert {name: set(by) for name, by in samples.items()} == {
        **{name: {"1000", "2000"} for name in ("held", "scan", "prompts", "records")}, "append": {"1", "0"}}
    assert all(len(cpu) == 1 for by in samples.values() for cpu in by.values() if by is not samples["append"])
    assert all(len(cpu) == 2 and min(cpu) > 0 for cpu in samples["append"].values())
    [goal] = table.goals
    assert goal.name == "capture dedupe 2k CPU <= 1.2x 1k" and goal.met is not None


def test_without_langgraph_its_goals_are_not_measured_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "bench.langgraph_peer", None)  # its import fails, as without the extra
    said: list[str] = []
    plan = _tiny_plan()
    graph = systems.grow_langgraph(plan, tmp_path, "delta", plan.langgraph_delta, said.append)
    assert graph.available is False and graph.peer is None
    assert said and said[0].startswith("LangGraph delta: not run")


def test_time_travel_into_the_archive_is_judged_between_two_compacted_tasks(tmp_path: Path) -> None:
    plan = replace(_tiny_plan(), archive_scale=(1_200, 2_400))
    table = measures.archived_replay(plan, tmp_path)
    assert _goal(table, "time travel into the archive") is not None  # judged, two real compactions read back
    assert [row[0] for row in table.rows] == ["1,200", "2,400"]
    assert all(row[1].endswith(" ms") for row in table.rows)
