"""`trail find WORD...`: the task you remember a word of, found across every place a task holds text, on a
real ledger (both backends) through the real command; the read model it reads is caught up first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.app import sample
from ledger.app.store import open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from tests.conftest import run_here, run_trail


def _two_tasks(location: Location) -> None:
    app = open_ledger(location)
    try:
        sample.record(app)  # #1, the login-timeout story
        other = app.open_task("Redirect /old to /new on the website")
        assert other.id is not None
        app.append(other.id, ev.NoteAdded, text="tried the rewrites in next.config.js, no luck")
        app.append(other.id, ev.CommandRan, argv=("vercel", "deploy"), exit_code=0, duration_ms=10,
                   stdout=bound(""), stderr=bound(""), actor="agent:claude-code")
    finally:
        app.close()


def _found(home: Path, *words: str) -> list[dict[str, Any]]:
    """`trail find WORDS --json`'s tasks, in this process (each call opens the ledger afresh): what is checked is
    what find matches and ranks; the text answers and usage errors below are processes of their own."""
    done = run_here("find", *words, "--json", home=home, check=True)
    return list(json.loads(done.stdout))


def test_a_word_from_any_place_finds_its_task_and_says_where(home: Path, location: Location) -> None:
    _two_tasks(location)
    # a requirement's word, a decision's reason, a file's path part, a test's name: all task #1, nothing else
    for word, kind in (("3G", "requirement"), ("rapid retries", "decision"), ("refresh.py", "file"),
                       ("test_login_3g", "test"), ("retries forever", "attempt")):
        (task,) = _found(home, word)
        assert task["number"] == 1 and task["title"] == "Fix login timeout on slow networks", word
        assert kind in [m["kind"] for m in task["matches"]], (word, task["matches"])
        assert all(set(m) == {"position", "kind", "text"} and m["position"] >= 1 for m in task["matches"])
    (task,) = _found(home, "next.config")  # a note of the other task
    assert task["number"] == 2 and task["matches"][0] == {
        "position": 2, "kind": "note", "text": "tried the rewrites in next.config.js, no luck"}


def test_every_word_must_be_in_the_task_not_in_one_place(home: Path, location: Location) -> None:
    _two_tasks(location)
    (task,) = _found(home, "redirect", "vercel")  # the title and a command: two places, one task
    assert task["number"] == 2 and {m["kind"] for m in task["matches"]} == {"title", "command"}
    assert _found(home, "redirect", "3G") == []  # one word in each task: neither holds both
    assert [t["number"] for t in _found(home, "LOGIN")] == [1]  # case does not matter


def test_a_title_outranks_a_tool_line_and_the_text_names_the_places(home: Path, location: Location) -> None:
    _two_tasks(location)
    app = open_ledger(location)
    try:
        third = app.open_task("Speed up the deploy")
        assert third.id is not None
    finally:
        app.close()
    found = _found(home, "deploy")  # #3's title against #2's `vercel deploy` command line
    assert [t["number"] for t in found] == [3, 2] and found[0]["score"] > found[1]["score"]
    text = run_trail("find", "deploy", home=home, check=True).stdout
    assert text.index("#3") < text.index("#2") and "[1] title: Speed up the deploy" in text
    assert "command: vercel deploy" in text


def test_nothing_found_says_so_and_no_word_is_a_usage_error(home: Path, location: Location) -> None:
    _two_tasks(location)
    missing = run_trail("find", "kubernetes", home=home)
    assert missing.returncode == 0 and "No task holds all of: kubernetes" in missing.stdout
    blank = run_trail("find", "  ", home=home)
    assert blank.returncode == 2 and "give at least one word" in blank.stderr
    assert run_trail("find", "--limit", "0", "x", home=home).returncode == 2


def test_a_forgotten_task_is_not_found(home: Path, location: Location) -> None:
    _two_tasks(location)
    assert [t["number"] for t in _found(home, "next.config")] == [2]
    index = Path(f"{location.sqlite_path.resolve()}.find") if location.is_sqlite else None
    assert index is None or index.is_file()  # find's index of the read model (ledger.app.findindex)
    run_trail("forget", "2", "--yes", home=home, check=True)
    assert index is None or not index.exists()  # it held the task's text: it goes with the read model
    assert _found(home, "next.config") == [] and _found(home, "redirect") == []


def test_filters_narrow_the_tasks_looked_in(home: Path, location: Location) -> None:
    _two_tasks(location)
    project = json.loads(run_trail("list", "--json", home=home, check=True).stdout)[0]["project"]
    assert project  # the tasks began in the tests' folder, which is their project
    name = Path(project).name
    assert [t["number"] for t in _found(home, "login", "--project", name)] == [1]
    assert [t["number"] for t in _found(home, "login", "--project", project)] == [1]
    assert _found(home, "login", "--project", "no-such-project") == []
    assert [t["number"] for t in _found(home, "redirect", "--agent", "claude-code")] == [2]
    assert _found(home, "redirect", "--agent", "codex") == []
    assert _found(home, "login", "--since", "2999-01-01") == []
    assert [t["number"] for t in _found(home, "login", "--since", "2000-01-01")] == [1]
    assert _found(home, "login", "--status", "done") == []
    said = run_trail("find", "login", "--status", "done", home=home)
    assert said.returncode == 0 and "among the tasks asked for" in said.stdout
    both = run_trail("find", "login", "--here", "--project", name, home=home)
    assert both.returncode == 2 and "give one" in both.stderr
    assert run_trail("find", "login", "--since", "yesterday", home=home).returncode == 2
