"""Reading stored diffs into hunks and following a line back through them (projections/hunks.py)."""

from __future__ import annotations

import json
from pathlib import Path

from projections import hunks
from tests.conftest import run_trail


def test_removed_lines_that_start_with_two_dashes_are_body_lines() -> None:
    # "-- old" removed reads "--- old" in the diff; it counts as a removed line, not a file header.
    diff = "@@ -1,3 +1,3 @@\n--- old\n+-- new\n SELECT 1;\n SELECT 2;\n"
    parsed = hunks.parse(diff)
    assert hunks.trace(parsed, 1) == hunks.Trace(True, 1)    # "-- new" replaced "-- old"
    assert hunks.trace(parsed, 2) == hunks.Trace(False, 2)
    assert hunks.trace(parsed, 3) == hunks.Trace(False, 3)


def test_added_lines_that_start_with_two_pluses_are_body_lines() -> None:
    diff = "--- a/c.c\n+++ b/c.c\n@@ -1,2 +1,3 @@\n x;\n+++i;\n y;\n"
    parsed = hunks.parse(diff)
    assert hunks.trace(parsed, 2) == hunks.Trace(True, None)  # "++i;" is new
    assert hunks.trace(parsed, 3) == hunks.Trace(False, 2)


def test_bare_hunks_and_text_before_the_first_hunk_are_read() -> None:
    # A bounded tail starts mid-hunk: what precedes the first header is left out, as before.
    tail = "ine of a cut hunk\n-x\n@@ -10,2 +10,3 @@\n a\n+b\n c\n"
    parsed = hunks.parse(tail)
    assert [(h.source_start, h.target_start) for h in parsed] == [(10, 10)]
    assert hunks.trace(parsed, 11) == hunks.Trace(True, None)
    assert hunks.trace(parsed, 12) == hunks.Trace(False, 11)
    assert hunks.trace(parsed, 20) == hunks.Trace(False, 19)
    assert hunks.parse("-a\n+b\n") == []  # no hunk header: nothing to follow (the change is kept whole)


def test_a_cut_hunk_costs_only_its_own_lines() -> None:
    diff = "@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -10,3 +10,4 @@\n x\n+y\n"  # the second hunk is cut short
    parsed = hunks.parse(diff)
    assert len(parsed) == 2
    assert hunks.trace(parsed, 1) == hunks.Trace(True, 1)
    assert hunks.trace(parsed, 5) == hunks.Trace(False, 5)
    assert hunks.trace(parsed, 11) == hunks.Trace(True, None)  # inside the cut hunk: born there
    assert hunks.trace(parsed, 20) == hunks.Trace(False, 19)   # below it: its header still shifts


def test_no_newline_marker_and_empty_context_lines() -> None:
    diff = "@@ -1,3 +1,3 @@\n a\n\n-b\n\\ No newline at end of file\n+B\n\\ No newline at end of file\n"
    parsed = hunks.parse(diff)
    assert hunks.trace(parsed, 2) == hunks.Trace(False, 2)  # the stripped " " line is context
    assert hunks.trace(parsed, 3) == hunks.Trace(True, 3)


def test_an_empty_new_side_names_the_line_before_it() -> None:
    # Lines 3 and 4 removed; "+2,0" means "after new line 2".
    parsed = hunks.parse("@@ -3,2 +2,0 @@\n-c\n-d\n")
    assert hunks.trace(parsed, 2) == hunks.Trace(False, 2)
    assert hunks.trace(parsed, 3) == hunks.Trace(False, 5)


def test_why_line_follows_sql_comment_rewrites(tmp_path: Path) -> None:
    """Through real processes: a `--` comment replaced in a .sql file does not shift the lines below it."""
    home, work = tmp_path / "home", tmp_path / "w"
    work.mkdir()
    db = str(tmp_path / "ledger.db")
    query = work / "q.sql"

    def trail(*args: str) -> str:
        return run_trail("--db", db, *args, home=home, cwd=work, check=True).stdout

    query.write_text("-- old comment\nSELECT 1;\nSELECT 2;\n")
    trail("start", "sql history")
    trail("changed", "q.sql")                                   # [2] created
    query.write_text("-- old comment\nSELECT 10;\nSELECT 2;\n")
    trail("changed", "q.sql")                                   # [3] line 2 rewritten
    query.write_text("-- new comment\n-- second new comment\nSELECT 10;\nSELECT 2;\n")
    trail("changed", "q.sql")                                   # [4] the comment replaced by two

    def why(line: int) -> list[tuple[int, int]]:
        out = json.loads(trail("why", f"q.sql:{line}", "--json"))
        return [(c["position"], c["line"]) for c in out["changes"]]

    assert why(4) == [(2, 3)]           # "SELECT 2;": untouched since it was created
    assert why(3) == [(3, 2), (2, 2)]   # "SELECT 10;": rewritten at [3]
    assert why(1) == [(4, 1), (2, 1)]   # "-- new comment" replaced the first comment
    assert why(2) == [(4, 2)]           # the second comment is new at [4]
