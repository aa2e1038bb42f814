"""A realistic sample task, recorded by `trail demo` and used by scenario tests.

It follows the login-timeout story in the README: a wrong first guess, a user
correction, a decision with its reason, a fix with its diff, tests going green.
"""

from __future__ import annotations

from typing import Any

from ledger.app.store import Ledger
from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections.state import TaskState

TITLE = "Fix login timeout on slow networks"

_REFRESH_DIFF = """--- a/auth/refresh.py
+++ b/auth/refresh.py
@@ -10,9 +10,14 @@ def refresh_token(session):
-    while True:
-        resp = session.post(TOKEN_URL, data=refresh_payload(session))
-        if resp.ok:
-            return resp.json()["access_token"]
+    for attempt in range(MAX_RETRIES):
+        resp = session.post(TOKEN_URL, data=refresh_payload(session))
+        if resp.ok:
+            return resp.json()["access_token"]
+        time.sleep(BACKOFF_S * 2**attempt)
+    raise RefreshFailed(f"token refresh failed after {MAX_RETRIES} tries")
"""

_PYTEST_FAIL = """tests/test_login.py::test_login_3g FAILED
E   TimeoutError: login did not complete within 30.0 s
E   (token refresh attempted 57 times)
1 failed, 11 passed in 31.42s
"""


def _timeout_diff(old: int, new: int) -> str:
    return (f"--- a/net/client.py\n+++ b/net/client.py\n@@ -3,3 +3,3 @@\n import httpx\n \n"
            f"-TIMEOUT_S = {old}\n+TIMEOUT_S = {new}\n")


def steps() -> list[tuple[type[ev.TaskEvent], dict[str, Any]]]:
    """The sample task's events after it is opened, in order."""
    agent = "agent:claude-code"
    return [
        (ev.RequirementStated, {"text": "Login must succeed on 3G (2 s RTT)"}),
        (ev.RequirementStated, {"text": "No change to the public auth API"}),
        (ev.ConversationLinked, {"agent": "claude-code", "session_id": "demo-session-1", "actor": "system"}),
        (ev.AttemptStarted, {"text": "Raise the HTTP client timeout to 30 s", "actor": agent}),
        (ev.FileChanged, {"path": "net/client.py", "operation": "modified", "before_sha256": "9f2c" * 16,
                          "after_sha256": "41ab" * 16, "diff": bound(_timeout_diff(10, 30)),
                          "actor": agent}),
        (ev.CommandRan, {"argv": ("pytest", "tests/test_login.py"), "exit_code": 1, "duration_ms": 31420,
                         "stdout": bound(_PYTEST_FAIL), "stderr": bound(""), "actor": agent}),
        (ev.TestResult, {"name": "tests/test_login.py::test_login_3g", "outcome": "failed",
                         "message": "TimeoutError: login did not complete within 30.0 s", "actor": agent}),
        (ev.AttemptEnded, {"attempt": None, "outcome": "failed",
                           "reason": "Timeout is not the cause: the token refresh retries forever", "actor": agent}),
        (ev.CorrectionMade, {"text": "Don't touch the global client; the retry loop is in auth/refresh.py",
                             "wrong": "raised the global HTTP timeout"}),
        (ev.DecisionRecorded, {"text": "Cap refresh retries at 3 with exponential backoff",
                               "reason": "the server rejects more than 5 rapid retries",
                               "rejected": ("retry until the login deadline",), "actor": agent}),
        (ev.AttemptStarted, {"text": "Bounded retry loop in auth/refresh.py", "actor": agent}),
        (ev.FileChanged, {"path": "net/client.py", "operation": "modified", "before_sha256": "41ab" * 16,
                          "after_sha256": "9f2c" * 16, "diff": bound(_timeout_diff(30, 10)),
                          "actor": agent}),
        (ev.FileChanged, {"path": "auth/refresh.py", "operation": "modified", "before_sha256": "07d1" * 16,
                          "after_sha256": "c3e8" * 16, "diff": bound(_REFRESH_DIFF), "actor": agent}),
        (ev.CommandRan, {"argv": ("pytest", "tests/test_login.py"), "exit_code": 0, "duration_ms": 4210,
                         "stdout": bound("12 passed in 4.21s\n"), "stderr": bound(""), "actor": agent}),
        (ev.TestResult, {"name": "tests/test_login.py::test_login_3g", "outcome": "passed", "actor": agent}),
        (ev.CheckpointMarked, {"label": "unit-tests-green", "note": "retry cap in place; 3G profile not yet run",
                               "actor": agent}),
        (ev.NextStepSet, {"text": "Run the 3G network profile (tc netem, 2 s RTT) against staging login"}),
        (ev.StatusChanged, {"status": "paused", "reason": "end of day"}),
    ]


def record(ledger: Ledger) -> TaskState:
    """Open the sample task in ``ledger`` and record its story; returns its final state."""
    opened = ledger.open_task(TITLE, cwd="/home/dev/webapp")
    assert opened.id is not None
    state = opened
    for event_class, fields in steps():
        state = ledger.append(opened.id, event_class, **fields)
    return state
