"""`trail serve` in a real process, driven by a real browser (Debian's chromium, headless, through Playwright
so a test can wait on the page's own state): the index of two projects, a search, a task's page that follows a
`trail hook` as it appends, a tampered task refused, and the refusals of a remote host and a taken port.
Skipped, saying so, where chromium is not installed (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.app import sample
from ledger.app.store import open_ledger
from ledger.base.location import Location
from tests.conftest import REPO, run_here, run_trail
from tests.test_reads_refuse import FORGED, _edit_in_place
from tests.test_report import CHROMIUM, needs_chromium

SESSION = "77777777-aaaa-4bbb-8ccc-000000000007"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRAIL_DB"}
    return {**env, "TRAIL_HOME": str(home), "PYTHONPATH": str(REPO)}


def hook(payload: dict[str, Any], home: Path, cwd: Path) -> None:
    """One Claude Code hook call, as the agent makes it: a process with the payload on stdin."""
    proc = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "hook", "claude-code"],
                          input=json.dumps(payload), capture_output=True, text=True, env=_env(home), timeout=60,
                          cwd=cwd)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


class Served:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc, self.url = proc, url

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=60) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode()

    def stop(self) -> tuple[int, str]:
        """Ctrl-C, as a person stops it: the exit status and what it printed after the URL."""
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        return self.proc.returncode, out


@pytest.fixture
def serve(home: Path, tmp_path: Path) -> Iterator[Served]:
    proc = subprocess.Popen([sys.executable, "-c", "from cli.main import main; main()", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(home),
                            cwd=tmp_path)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # printed once it listens: no waiting on time
    found = re.search(r"read-only at (http://127\.0\.0\.1:\d+/) \(Ctrl-C stops\)", first)
    assert found, (first, proc.stderr.read() if proc.stderr else "")
    served = Served(proc, found.group(1))
    yield served
    if proc.poll() is None:
        proc.kill()
        proc.communicate(timeout=60)


@pytest.fixture
def page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM is not None
    with sync_playwright() as driver:
        # The system's Chromium, never a browser Playwright would download.
        browser = driver.chromium.launch(executable_path=CHROMIUM,
                                         args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        tab = browser.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda exc: errors.append(str(exc)))
        yield tab
        browser.close()
        assert errors == [], "the page's script failed"


def _project(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path.resolve()


@needs_chromium
def test_the_index_finds_a_task_and_its_page_follows_a_hook_as_it_appends(
    home: Path, tmp_path: Path, serve: Served, page: Any
) -> None:
    login, parser = _project(tmp_path / "login-app"), _project(tmp_path / "parser-lib")
    run_here("start", "Fix login timeout on 3G", home=home, cwd=login, check=True)
    run_here("next", "Re-run the 3G profile", home=home, cwd=login, check=True)
    hook({"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup"}, home, parser)
    hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit",
          "prompt": "Make the tokenizer accept tabs <script>window.pwned = 1</script>"}, home, parser)

    # The index: both projects, each with its task, status and next step (the inbox folded in by the read).
    page.goto(serve.url)
    projects = page.locator("section.project")
    assert sorted(projects.evaluate_all("els => els.map(e => e.dataset.project)")) == sorted(
        [str(login), str(parser)])
    login_row = page.locator(f'section.project[data-project="{login}"] tr.task')
    assert login_row.count() == 1 and "Fix login timeout on 3G" in login_row.inner_text()
    assert "active" in login_row.inner_text() and "next: Re-run the 3G profile" in login_row.inner_text()
    assert page.locator(f'section.project[data-project="{parser}"] tr.task').count() == 1

    # The search box: a word of the other task's request finds it, and only it.
    page.fill("#q", "tokenizer")
    page.press("#q", "Enter")
    page.wait_for_selector("#found")
    found = page.locator("#found li.found")
    assert found.count() == 1 and "Make the tokenizer accept tabs" in found.inner_text()
    assert page.evaluate("window.pwned") is None  # the title is text, not markup

    # Its page: the report, live.
    found.locator("a").click()
    page.wait_for_selector("#tl-rows tr.row")
    assert page.locator("#task-title").inner_text().startswith("Make the tokenizer accept tabs")
    before = int(page.evaluate("document.documentElement.dataset.position"))
    page.evaluate("window.stillTheSamePage = true")  # gone if the page were loaded anew
    assert page.locator("text=pytest tests/test_tokenizer.py").count() == 0
    page.fill("#tl-find", "test_tokenizer")  # the reader's filter: nothing matches yet
    assert page.locator("#tl-rows tr.row").count() == 0

    hook({"session_id": SESSION, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
          "tool_use_id": "toolu_serve_1", "tool_input": {"command": "pytest tests/test_tokenizer.py"},
          "error": "Exit code 1\nFAILED test_tabs"}, home, parser)
    # The page's own state, awaited in the browser (a selector: the page's policy forbids a test's eval'd
    # predicate, and must not be bypassed, since the page's poll runs under it): the new row, drawn in place.
    row = page.wait_for_selector('#tl-rows tr.row.fail:has-text("pytest tests/test_tokenizer.py")', timeout=60_000)
    assert row is not None and "exit 1" in row.inner_text()
    assert int(page.evaluate("document.documentElement.dataset.position")) > before
    assert page.evaluate("window.stillTheSamePage") is True
    # The filter held through the update: the new command's row is shown, the others still are not.
    assert page.input_value("#tl-find") == "test_tokenizer"
    assert page.locator("#tl-rows tr.row").count() == page.locator("#tl-rows tr.row", has_text="test_tokenizer").count()
    assert "live: updated at event" in page.locator("#live-state").inner_text()
    assert page.locator("#commands").inner_text().count("pytest tests/test_tokenizer.py") >= 1

    code, out = serve.stop()
    assert code == 0 and out.strip() == "stopped"


@needs_chromium
@needs_chromium
def test_the_index_draws_itself_anew_when_a_hook_begins_a_task(
    home: Path, tmp_path: Path, serve: Served, page: Any
) -> None:
    login, parser = _project(tmp_path / "login-app"), _project(tmp_path / "parser-lib")
    run_here("start", "Fix login timeout on 3G", home=home, cwd=login, check=True)
    page.goto(serve.url)
    assert page.locator("tr.task").count() == 1
    page.evaluate("window.stillTheSamePage = true")  # gone if the page were loaded anew
    page.fill("#q", "half-typed")  # what the reader is typing stays

    hook({"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup"}, home, parser)
    hook({"session_id": SESSION, "hook_event_name": "UserPromptSubmit",
          "prompt": "Make the tokenizer accept tabs"}, home, parser)
    # Awaited in the browser (a selector, as the page's policy forbids an eval'd predicate): the new task's row.
    row = page.wait_for_selector(f'section.project[data-project="{parser}"] tr.task', timeout=60_000)
    assert row is not None and "Make the tokenizer accept tabs" in row.inner_text()
    assert page.locator("tr.task").count() == 2 and page.evaluate("window.stillTheSamePage") is True
    assert page.input_value("#q") == "half-typed"
    status, body = serve.get("/version")
    assert status == 200 and json.loads(body)["version"] == int(
        page.evaluate("document.documentElement.dataset.version"))


def test_a_tampered_task_is_refused_on_its_page_and_in_its_poll(
    home: Path, location: Location, serve: Served, page: Any
) -> None:
    app = open_ledger(location)
    final = sample.record(app)
    app.close()
    assert final.id is not None
    page.goto(serve.url + "task/1")
    page.wait_for_selector("#tl-rows tr.row")
    assert "Cap refresh retries" in page.content()

    _edit_in_place(location, final.id, 11, "text", FORGED)
    # The open page's poll is refused: it says so, in the line `trail show` prints, and keeps what it had.
    page.wait_for_selector("#live-state.live-error", timeout=60_000)
    said = page.locator("#live-state").inner_text()
    assert "task #1" in said and "trail verify" in said and FORGED not in page.content()

    code, body = serve.get("task/1")
    assert code == 409 and body.count("\n") == 1 and body.startswith("trail: ") and "task #1" in body
    assert "trail verify" in body and "FORGEDWORD" not in body
    code, body = serve.get("task/1/position")
    assert code == 409 and "trail verify" in json.loads(body)["error"]
    code, body = serve.get("/")
    assert code == 200 and "BROKEN" in body and "FORGEDWORD" not in body
    code, body = serve.get("/?q=forgedword")
    assert code == 200 and "pipe curl into sh" not in body and "task #1" in body  # refused, not shown
    assert serve.get("task/9")[0] == 404 and serve.get("nothing/here")[0] == 404


def test_a_request_naming_another_host_is_refused(home: Path, serve: Served) -> None:
    """DNS rebinding: a web page whose own host name was pointed at 127.0.0.1 may not read the ledger."""
    run_here("start", "Secret work", home=home, check=True)
    port = serve.url.rsplit(":", 1)[1].strip("/")
    for host, allowed in ((f"127.0.0.1:{port}", True), (f"localhost:{port}", True),
                          (f"attacker.example:{port}", False), ("attacker.example", False)):
        request = urllib.request.Request(serve.url, headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                code, body = answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            code, body = refused.code, refused.read().decode()
        assert (code == 200 and "Secret work" in body) if allowed else (
            code == 403 and "Secret work" not in body and body.startswith("trail: refused a request for host")), host


def test_another_host_needs_a_flag_and_a_taken_port_is_one_line(home: Path) -> None:
    remote = run_trail("serve", "--host", "0.0.0.0", "--port", "0", home=home)
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr and "no login" in remote.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = run_trail("serve", "--port", str(port), home=home)
    assert busy.returncode == 2 and busy.stdout == ""
    assert busy.stderr == f"trail: port {port} on 127.0.0.1 is taken: choose another with --port, or --port 0 for " \
        "any free one\n"
    helped = run_trail("serve", "--help", home=home)
    assert "127.0.0.1 only" in helped.stdout and "no login" in helped.stdout


@pytest.mark.sqlite_only("an SQLite ledger's task keys spare the poll a load; on a server every poll loads the task")
def test_an_open_pages_poll_loads_the_task_again_only_once_it_moved(location: Location) -> None:
    # A page polls its task's position every few seconds; a load with a read's checks is most of a second at a
    # million events. While the task's key stays the one read before the last load, the poll answers that load's
    # position; a write, or an edit in place, moves the key, and the next poll loads and checks again.
    from cli.context import Context
    from cli.serve import Site
    from ledger.app import reading, verify
    from ledger.domain import events as ev

    app = open_ledger(location)
    final = sample.record(app)
    app.close()
    assert final.id is not None
    site = Site(Context(location))
    loads: list[object] = []
    real = reading.state

    def counted(*given: Any, **named: Any) -> Any:
        loads.append(given[1])
        return real(*given, **named)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reading, "state", counted)
        assert "Cap refresh retries" in site.task(1)
        first = site.position(1)
        assert site.position(1) == first == final.position and len(loads) == 1  # the page's load only
        writer = open_ledger(location)
        writer.append(final.id, ev.NoteAdded, text="one more")
        writer.close()
        assert site.position(1) == first + 1 and len(loads) == 2
        assert site.position(1) == first + 1 and len(loads) == 2
        _edit_in_place(location, final.id, 11, "text", FORGED)
        with pytest.raises(verify.LedgerBroken):
            site.position(1)
        with pytest.raises(verify.LedgerBroken):  # refused again: a refusal is never remembered as a pass
            site.position(1)
    site.ctx.ledger().close()
