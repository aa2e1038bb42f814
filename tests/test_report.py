"""`trail show TASK --html FILE`: the report, rendered by a real browser (Debian's chromium, headless).

The page is loaded from a file with no network, its scripts run, and the DOM they leave is checked;
a screenshot is taken. Skipped, saying so, where chromium is not installed (.ci/run installs it).
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from ledger.app.store import Ledger, open_ledger
from ledger.base.location import Location
from ledger.domain import events as ev
from projections import report
from projections.state import replay
from tests.conftest import run_here, run_trail

# The PostgreSQL half is skipped: one backend is enough here.
pytestmark = pytest.mark.sqlite_only("one backend is enough: the report's rendering, not the store")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian's chromium package; .ci/run installs it)"
)
HOSTILE = '<script>alert("t")</script><img src=x onerror=alert(1)>'


def _chromium(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / f"chromium-{uuid.uuid4().hex[:8]}"
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
         *args, url],
        capture_output=True, text=True, timeout=180,
    )


def dom(tmp_path: Path, page: Path, fragment: str = "") -> str:
    """The page's DOM after its scripts ran."""
    proc = _chromium(tmp_path, page.resolve().as_uri() + fragment, "--dump-dom")
    assert proc.returncode == 0 and "</html>" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def rows(html: str) -> list[int]:
    """The positions of the timeline rows in the DOM, in order."""
    return [int(p) for p in re.findall(r'<tr class="row[^"]*" id="event-\d+" data-position="(\d+)"', html)]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


def _build_task(home: Path, work: Path) -> None:
    """A task through the real CLI: requirements (one reworded), a correction, a failed attempt with a failing
    command, files changed, a decision, a checkpoint and the next step."""
    work.mkdir()
    _git(work, "init", "-q")
    (work / "auth.py").write_text("def refresh():\n    retry = None\n    return retry\n")
    _git(work, "add", "auth.py")
    _git(work, "commit", "-qm", "base")

    def trail(*args: str, check: bool = True) -> None:  # set-up: in this process (the report is under test)
        run_here(*args, home=home, cwd=work, check=check)

    trail("start", f"Fix login timeout {HOSTILE}")
    trail("require", "Login must work on 3G")  # [2]
    trail("require", "Login must succeed on 3G with a 2 s RTT", "--replaces", "2")  # [3]
    trail("correct", "The retry loop is in auth.py, not the client", "--wrong", "the global HTTP client")  # [4]
    trail("attempt", "Raise the HTTP client timeout to 30 s")  # [5]
    trail("ran", "--", "false", check=False)  # [6] exit 1
    trail("fail", "Timeout is not the cause")  # [7]
    trail("decide", "Cap refresh retries at 3", "--because", "server rejects rapid retries", "--rejected",
          "retry forever")  # [8]
    (work / "auth.py").write_text("def refresh():\n    retry = 3\n    return retry\n")
    (work / "notes.md").write_text("# </script><b>bold</b>\n")
    trail("changed", "auth.py", "notes.md")  # [9], [10]
    trail("checkpoint", "retries-capped", "--note", "tests green")  # [11]
    trail("next", "Re-run the 3G profile")  # [12]


@needs_chromium
def test_the_report_renders_in_chromium_with_its_events_history_and_diffs(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    _build_task(home, work)
    out = run_trail("show", "1", "--html", "report.html", home=home, cwd=work, check=True).stdout
    assert "wrote the report of task #1" in out
    page = work / "report.html"
    source = page.read_text()
    # Self-contained: nothing to fetch, and a policy that forbids fetching.
    assert not re.search(r'\b(?:src|href)\s*=\s*"(?!#)', source), "the page loads nothing from anywhere"
    assert "Content-Security-Policy" in source and "default-src 'none'" in source
    assert source.count("</script>") == 2  # the data and the script: no string broke out

    html = dom(tmp_path, page)
    # The header: the title (escaped, not run), the status and the next step.
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "Fix login timeout &lt;script&gt;alert(\"t\")&lt;/script&gt;" in html
    assert '<span id="next-step">Re-run the 3G profile</span>' in html
    # The requirement history: the superseded wording struck through, the current one not.
    assert '<del class="superseded">Login must work on 3G</del>' in html
    assert '<span class="current">Login must succeed on 3G with a 2 s RTT</span>' in html
    # The failed attempt stands out, in the attempts and in the timeline (its group and its rows).
    assert re.search(r'<li class="attempt-failed" data-position="5">.*?Raise the HTTP client timeout', html)
    assert re.search(r'<tr class="group group-attempt failed"><td colspan="5">Attempt \[5\] Raise the HTTP client '
                     r'timeout to 30 s — failed: Timeout is not the cause</td></tr>', html)
    assert re.search(r'<tr class="row fail in-attempt in-failed-attempt" id="event-6"', html)
    assert '<tr class="row corr" id="event-4"' in html
    # Every event is a row (one page), grouped under one session header.
    assert rows(html) == list(range(1, 13))
    assert "Recorded outside any agent session" in html
    # Commands with exit codes; the file's diff and its why chain.
    assert "ran `false` -&gt; exit 1" in html and '<td class="exit">exit 1</td>' in html
    assert 'data-path="notes.md"' in html and 'data-path="auth.py"' in html
    assert '<span class="d">-    retry = None</span><span class="a">+    retry = 3</span>' in html
    assert '<span class="a">+# &lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;</span>' in html
    assert re.search(r"<b>decision</b> <span class=\"pos\">\[8\]</span> decision: Cap refresh retries at 3", html)
    assert re.search(r"<b>because</b> <span class=\"pos\">\[4\]</span> correction: The retry loop is in auth.py, "
                     r"not the client <span class=\"muted\">\(the global HTTP client\)", html)
    # Checkpoints with git HEAD; the activity chart.
    assert "retries-capped" in html and re.search(r"<code>[0-9a-f]{12}</code>", html)
    assert '<svg class="chart"' in html and 'class="bar-fail"' in html

    shot = tmp_path / "report.png"
    proc = _chromium(tmp_path, page.resolve().as_uri(), f"--screenshot={shot}", "--window-size=1280,900")
    assert proc.returncode == 0, proc.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1280, 900)
    assert len(png) > 20_000, "a blank page compresses to a few KB"


@needs_chromium
def test_the_report_at_a_point_shows_the_task_as_it_was(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "repo"
    _build_task(home, work)
    out = run_trail("show", "1", "--html", "at.html", "--at", "3", home=home, cwd=work, check=True).stdout
    assert "as of event 3 of 12" in out
    html = dom(tmp_path, work / "at.html")
    assert "As it was after event 3 of 12" in html
    assert rows(html) == [1, 2, 3]
    assert '<del class="superseded">Login must work on 3G</del>' in html
    assert "Raise the HTTP client timeout" not in html and "next-step" not in html
    bad = run_trail("show", "1", "--html", "x.html", "--at", "99", home=home, cwd=work)
    assert bad.returncode == 2 and "past the end" in bad.stderr and not (work / "x.html").exists()


@pytest.mark.sqlite_only("measures rendering, not storage")
@needs_chromium
def test_a_ten_thousand_event_report_keeps_one_page_of_rows_and_pages_through(
    ledger: Ledger, home: Path, tmp_path: Path
) -> None:
    from bench.workload import Workload

    task = ledger.open_task("ten thousand events").id
    assert task is not None
    for batch in Workload(3).batches(9_999, 2_000):
        ledger.append_many(task, batch)
    assert ledger.state(task).position == 10_000
    page = tmp_path / "big.html"
    began = time.perf_counter()
    run_trail("show", "1", "--html", str(page), home=home, check=True)
    took = time.perf_counter() - began
    size = page.stat().st_size
    print(f"10,000 events: {size / 1e6:.1f} MB written in {took:.1f} s")
    assert size < 8_000_000

    began = time.perf_counter()
    html = dom(tmp_path, page)
    print(f"chromium loaded it and ran its script in {time.perf_counter() - began:.1f} s (process included)")
    shown = rows(html)
    assert shown == list(range(1, report.PAGE_ROWS + 1)) and len(shown) <= 500
    assert 'data-page="1" data-pages="50" data-total="10000"' in html
    # Paging through the real code paths: a link to a page, a link to an event, a click on "next".
    assert rows(dom(tmp_path, page, "#page=3"))[0] == 2 * report.PAGE_ROWS + 1
    target = dom(tmp_path, page, "#event-9990")
    assert "9990" in [str(p) for p in rows(target)] and '<tr class="row target' in target
    assert 'data-page="50"' in target
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.read_text().replace(
        "</body>", '<script>document.getElementById("tl-next").click();</script></body>'))
    after = dom(tmp_path, clicked)
    assert rows(after)[0] == report.PAGE_ROWS + 1 and 'data-page="2"' in after


def test_every_string_is_escaped_and_nothing_breaks_out_of_the_data(ledger: Ledger) -> None:
    """Pure: no browser needed. Hostile titles, requirements, commands and outputs stay text."""
    task = ledger.open_task(HOSTILE).id
    assert task is not None
    ledger.append_many(task, [
        (ev.RequirementStated, {"text": "</script><script>alert(2)</script>"}),
        (ev.CommandRan, {"shell": "make '</script>' <!--", "exit_code": 2,
                         "stderr": ev.Bounded(tail="<iframe src=//evil>", size=20)}),
        (ev.NoteAdded, {"text": "\u2028 & <b>"}),
    ])
    events = list(ledger.task_events(task))
    html = report.render(replay(events), events)
    assert html.count("</script>") == 2 and html.count("<script") == 2
    assert "<iframe" not in html and "<img" not in html and " & <b>" not in html
    assert "&lt;iframe src=//evil&gt;" in html and "&amp; &lt;b&gt;" in html


@needs_chromium
def test_long_texts_fold_and_the_agents_replies_are_markdown_that_runs_nothing(
    home: Path, tmp_path: Path, location: Location
) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    _git(work, "init", "-q")
    har = json.dumps({"log": {"entries": [{"request": {"url": f"https://api.example.org/{i}"}} for i in range(150)]}},
                     indent=2) + "\nEND-OF-HAR"
    wish = "The login must keep working on a slow network " + "with retries and backoff, " * 30 + "END-OF-REQUIREMENT"
    for args in (("start", "Fix the login"), ("correct", har), ("require", wish)):
        run_here(*args, home=home, cwd=work, check=True)
    for n in (1, 2):
        (work / "auth.py").write_text(f"retries = {n}\n")
        run_here("changed", "auth.py", home=home, cwd=work, check=True)
    app = open_ledger(location)
    task = app.task_id(1)
    app.append_many(task, [(ev.AgentReplied, {"text": ev.Bounded(size=200, tail=(
        "Done: **retries capped** in `auth.py`.\n\n- one\n- two\n\n"
        "<script>document.body.setAttribute('data-pwned', 'script')</script>"
        "<img src=x onerror=\"document.body.setAttribute('data-pwned', 'img')\"> [go](javascript:alert(1))"))})])
    app.close()
    run_trail("show", "1", "--html", "report.html", home=home, cwd=work, check=True)
    html = dom(tmp_path, work / "report.html")

    # Nothing in the reply ran or became markup; its Markdown did.
    assert not re.search(r"<body[^>]*data-pwned", html) and "<img" not in html and 'href="javascript' not in html
    assert re.search(r'<div class="reply" id="last-reply"><p>Done: <strong>retries capped</strong> in '
                     r"<code>auth.py</code>.</p>\s*<ul>\s*<li>one</li>", html)
    assert "&lt;script&gt;document.body.setAttribute" in html
    assert re.search(r'<tr class="row" id="event-\d+" data-position="\d+">.*?replied: Done: \*\*retries capped', html)
    # The pasted HAR file: a short line in the list, the whole behind a fold, once.
    corr = re.search(r'<li class="corr">(.*?)</li>', html, re.S)
    assert corr and re.search(r'^<span class="pos">\[2\]</span> \{ <details class="blob"><summary>\d+ lines, '
                              r'[\d.]+ KB</summary><pre class="wrap">', corr.group(1))
    assert "<details class=\"blob\" open" not in html and html.count("END-OF-HAR") == 1
    # The long requirement: whole in its section only; under each change, one clipped line.
    assert html.count("END-OF-REQUIREMENT") == 1
    because = re.findall(r"<b>because</b> <span class=\"pos\">\[3\]</span> requirement: (.*?)</li>", html)
    assert len(because) == 2 and all(len(b) <= 160 and b.endswith("…") for b in because)
