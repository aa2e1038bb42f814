"""A captured task's title says what the task is: the session's first real request, not a throw-away opener
("hi", "show tools", "continue", a bare slash command), in the importers and in live capture alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.capture.items import throwaway, title_from, title_rank
from tests.conftest import SHARED, run_trail
from tests.test_hook_codex import send
from tests.test_routing import _repo


@pytest.mark.parametrize("opener", ["hi", "Hello!", "hey there", "continue", "Continue.", "show tools",
                                    "what tools do you have?", "/clear", "/compact  ", "ok", ""])
def test_openers_say_nothing_of_the_task(opener: str) -> None:
    assert throwaway(opener) and title_rank(opener) == 0


@pytest.mark.parametrize(("prompt", "title", "rank"), [
    ("/orchestrator create TODO app by Next.js", "create TODO app by Next.js", 2),
    ("[Image #1] Can you please add a margin", "add a margin", 2),  # a steering opener names nothing
    ("Oh, this is not supported by Chrome :(\\\nUse a polyfill instead", "Oh, this is not supported by Chrome :( Use a "
     "polyfill instead", 2),
    ("please fix these", "fix these", 1),
    ("ok lets get back to main", "lets get back to main", 2),
    ("Ok so, now please fix the parser", "fix the parser", 2),
    ("so-called bug fix", "so-called bug fix", 1),  # "so" opens nothing here
    ("Hey Claude, can you please add a Github Action", "add a Github Action", 2),
    ("Claude Code hangs on start", "Claude Code hangs on start", 2),  # the program, not the agent addressed
    ("okay", "okay", 0),  # an opener alone stays what it is
    ("show tools and store the response in a file", "show tools and store the response in a file", 2),
])
def test_a_title_is_the_request_of_the_first_line(prompt: str, title: str, rank: int) -> None:
    assert title_from(prompt) == title and title_rank(prompt) == rank


@pytest.mark.sqlite_only("a title is chosen from the session's prompts before it is stored, whichever the store")
def test_an_imported_codex_session_opened_with_show_tools_is_titled_by_its_request(home: Path,
                                                                                    tmp_path: Path) -> None:
    log = SHARED / "fixtures" / "codex" / "codemie-compact-env-019e1625.jsonl"
    if not log.is_file():
        pytest.skip("../shared/fixtures/codex is absent")
    done = run_trail("import", "codex", str(log), "--json", home=home, cwd=tmp_path, check=True)
    titles = [t["title"] for t in json.loads(done.stdout)["tasks"]]
    assert titles == ["let's update the defailt context compart to 90 in env var"]  # it opened with "show tools"


@pytest.mark.sqlite_only("a title is chosen from the session's prompts before it is stored, whichever the store")
def test_a_live_codex_session_that_opens_with_hi_is_titled_by_its_first_request(home: Path, tmp_path: Path) -> None:
    web = _repo(tmp_path, "web")
    send(home, web, "cx-hi", "UserPromptSubmit", prompt="hi")
    send(home, web, "cx-hi", "UserPromptSubmit", prompt="Add CSV export to the report page")
    tasks = json.loads(run_trail("list", "--json", home=home, check=True).stdout)
    assert [t["title"] for t in tasks] == ["Add CSV export to the report page"]
