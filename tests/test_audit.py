"""`trail why`, `trail diff`, `trail branch` and log filters, on real ledgers."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import cli
from ledger.app import sample
from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev
from projections import hunks, statediff, why
from tests.conftest import run_here, run_trail
from tests.strategies import Step, histories, record_history


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_why_names_the_correction_and_decision_behind_the_sample_fix(home: Path) -> None:
    """The scenario from the audit issue, through real processes."""
    assert run_here("demo", "--keep", home=home).returncode == 0
    out = run_trail("why", "auth/refresh.py", home=home, check=True).stdout
    assert "modified auth/refresh.py" in out
    assert "correction [10]" in out and "Don't touch the global client" in out
    assert "decision [11]" in out and "the server rejects more than 5 rapid retries" in out
    assert "attempt [12]" in out
    data = json.loads(run_trail("why", "auth/refresh.py", "--json", home=home, check=True).stdout)
    (change,) = data["changes"]
    assert change["position"] == 14 and change["intent"]["kind"] == "correction"
    assert change["decision"]["detail"] == "the server rejects more than 5 rapid retries"


def test_why_lists_changes_newest_first_with_attempt_outcomes(home: Path) -> None:
    _invoke("demo", "--keep")
    data = json.loads(_invoke("why", "net/client.py", "--json"))
    assert [c["position"] for c in data["changes"]] == [13, 6]
    first_try = data["changes"][1]
    assert first_try["attempt"]["detail"].startswith("failed: Timeout is not the cause")
    assert first_try["intent"]["text"] == "No change to the public auth API"  # latest intent then
    assert first_try["decision"] is None


def test_why_line_follows_moves_through_later_diffs(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    f = work / "app.py"

    def trail(*args: str) -> None:  # set-up, in this process; the `why` reads under test stay processes
        run_here(*args, home=home, cwd=work, check=True)

    f.write_text("a\nb\nc\n")
    trail("start", "line history")
    trail("require", "c must be C")
    trail("changed", "app.py")                      # [3] created: every line born here
    f.write_text("a\nb\nC\n")
    trail("decide", "uppercase c", "--because", "style guide")
    trail("changed", "app.py")                      # [5] line 3 rewritten
    f.write_text("header\nheader2\na\nb\nC\n")
    trail("changed", "app.py")                      # [6] two lines inserted above: C moves to line 5
    out = json.loads(run_trail("why", "app.py:5", "--json", home=home, cwd=work, check=True).stdout)
    assert [(c["position"], c["line"]) for c in out["changes"]] == [(5, 3), (3, 3)]
    assert out["changes"][0]["decision"]["text"] == "uppercase c"
    top = json.loads(run_trail("why", "app.py:1", "--json", home=home, cwd=work, check=True).stdout)
    assert [c["position"] for c in top["changes"]] == [6]  # line 1 was born in the last change


def test_hunk_trace_maps_lines_around_edits() -> None:
    diff = "@@ -1,4 +1,5 @@\n a\n-b\n+B\n+B2\n c\n d\n@@ -10,2 +11,2 @@\n x\n-y\n+Y\n"
    parsed = hunks.parse(diff)
    assert hunks.trace(parsed, 1) == hunks.Trace(False, 1)
    assert hunks.trace(parsed, 2) == hunks.Trace(True, 2)   # B replaced b
    assert hunks.trace(parsed, 3) == hunks.Trace(True, None)  # B2 is new
    assert hunks.trace(parsed, 4) == hunks.Trace(False, 3)
    assert hunks.trace(parsed, 8) == hunks.Trace(False, 7)   # between hunks: shifted by one
    assert hunks.trace(parsed, 12) == hunks.Trace(True, 11)
    assert hunks.trace(parsed, 20) == hunks.Trace(False, 19)


@settings(max_examples=20, deadline=None)
@given(history=histories, data=st.data())
def test_diff_applied_to_a_gives_b_and_why_finds_every_change(history: list[Step], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        ledger = open_ledger(Location(url=f"sqlite:{home / 'l.db'}", home=home))
        try:
            last = record_history(ledger, history)
            task_id = ledger.entries()[0].task_id
            a = data.draw(st.integers(1, last), label="a")
            b = data.draw(st.integers(1, last), label="b")
            sa, sb = ledger.state(task_id, at=a), ledger.state(task_id, at=b)
            assert statediff.apply(statediff.diff(sa, sb), sa.model_dump(mode="json")) == sb.model_dump(mode="json")
            events = list(ledger.task_events(task_id))
            for path in ("a.py", "b/c.py", "README.md"):
                expected = [e.originator_version for e in events
                            if isinstance(e, ev.FileChanged) and e.path == path]
                assert [c.position for c in why.changes(events, path)] == expected
        finally:
            ledger.close()


def test_diff_command_describes_what_changed(home: Path) -> None:
    _invoke("demo", "--keep")
    out = _invoke("diff", "1", "4", "12")
    assert "+ correction [10]" in out and "+ decision [11]" in out
    assert "+ attempt [5] Raise the HTTP client timeout to 30 s -> failed" in out
    nxt = _invoke("diff", "1", "17", "18")
    assert "~ next step: None -> 'Run the 3G network profile" in nxt


def test_branch_copies_history_and_leaves_the_original_intact(location: Location) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    assert final.id is not None
    before = [e.model_dump() for e in app.task_events(final.id)]
    branched = app.branch(final.id, 9, "Try a circuit breaker instead")
    assert branched.id is not None and branched.number == 2
    assert [e.model_dump() for e in app.task_events(final.id)] == before
    origin_at_9 = app.state(final.id, at=9)
    copy_at_9 = app.state(branched.id, at=9)
    # The copy was opened now, after the events it copies: its latest time seen is its opening.
    identity = {"id", "number", "title", "slug", "opened_at", "updated_at", "counts"}
    assert copy_at_9.model_dump(exclude=identity) == origin_at_9.model_dump(exclude=identity)
    assert branched.links[0].relation == "branched_from" and branched.links[0].other_number == 1
    assert branched.position == 10
    from ledger.app.verify import verify_task

    assert verify_task(app, branched.id).ok
    app.close()


def test_log_filters(home: Path) -> None:
    _invoke("demo", "--keep")

    def positions(*args: str) -> list[int]:
        return [e["position"] for e in json.loads(_invoke("log", "1", "--json", *args))]

    assert positions("--type", "CommandRan") == [7, 15]
    assert positions("--actor", "user", "--type", "RequirementStated") == [2, 3]
    assert set(positions("--actor", "agent:*")) >= {5, 6, 7, 14}
    assert positions("--file", "auth/refresh.py", "--type", "FileChanged") == [14]
    assert positions("--grep", "TIMEOUTERROR") == [7, 8]
    everything = json.loads(_invoke("log", "1", "--json"))
    cut = everything[5]["timestamp"]
    assert positions("--since", cut) == [e["position"] for e in everything if e["timestamp"] >= cut]
    assert positions("--until", cut) == [e["position"] for e in everything if e["timestamp"] < cut]
