"""`trail serve`: a local, read-only web view of the ledger.

``/`` is every task by project with its status and next step, and a search box (``?q=``: `trail find`'s
answer); ``/task/N`` is task N's report (``projections.report``), which asks ``/task/N/position`` every
second and draws itself anew when the task has grown (a hook appended); the index likewise asks ``/version``
(the ledger's last notification) and draws itself anew when any task moved. Every request is a read command of
its own: it catches up with the capture inbox (``Context.catch_up``, as `trail list` would) and reads
through the same checks, so a tampered task is refused with the one line `trail show` prints (HTTP 409).
Nothing else is written. The standard library's ``ThreadingHTTPServer``; the ledger is used by one request
at a time (a lock), as a command uses it.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import sqlite3
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import click
import orjson

from cli.context import Context, fails_cleanly, pass_context
from ledger.base.errors import BadSetting, NotFound, StoreUnavailable, TrailError
from ledger.base.oneline import reason

if TYPE_CHECKING:
    from ledger.domain.registry import Entry
    from projections.state import TaskState

DEFAULT_PORT = 7767
FOUND_LIMIT = 50
"""Tasks a search shows at most."""


def status_of(exc: TrailError) -> HTTPStatus:
    """The HTTP status of a refusal: the CLI's exit codes, as a browser reads them."""
    from ledger.app.verify import LedgerBroken

    if isinstance(exc, LedgerBroken):
        return HTTPStatus.CONFLICT  # exit 5: the stored task is not what its hash chain says
    if isinstance(exc, NotFound):
        return HTTPStatus.NOT_FOUND
    if isinstance(exc, StoreUnavailable):
        return HTTPStatus.SERVICE_UNAVAILABLE
    return HTTPStatus.BAD_REQUEST if exc.exit_code == 2 else HTTPStatus.INTERNAL_SERVER_ERROR


class Site:
    """The pages, each read afresh from the ledger, one request at a time."""

    def __init__(self, ctx: Context, any_host: bool = False) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self.any_host = any_host
        """--allow-remote: a request may name the server by any host name."""
        self.checked: dict[str, tuple[str, int]] = {}
        """Tasks (id hex) whose page or poll passed a read's checks, with the key read before them and the
        position: while the key stays, a poll answers that position without loading the task again."""

    def _entry(self, number: int) -> Any:
        self.ctx.next_command()  # a new read: the inbox is folded in first, as by any command
        return self.ctx.entry(str(number))

    def index(self, query: str) -> str:
        from ledger.app import reading
        from ledger.base.project import current_project
        from projections import find, index, readmodel

        self.ctx.next_command()
        ledger = self.ctx.ledger()
        rows = reading.task_rows(ledger, self.ctx.location, current_project())
        words = find.words_of((query,))
        found: list[find.Found] = []
        refused: list[str] = []
        if words:
            path = readmodel.readmodel_path(self.ctx.location)
            readmodel.refresh(ledger, path)
            kept, broken = reading.checked_found(ledger, readmodel.find_tasks(path, words, FOUND_LIMIT))
            found, refused = kept, [str(exc) for exc in broken]
        return index.render(rows, self.ctx.location.display, query, words, found, refused, live="/version",
                            version=self.version(caught_up=True))

    def version(self, caught_up: bool = False) -> int:
        """The ledger's last notification (after folding in the capture inbox): the index is drawn anew when
        it moves, as a hook appended to a task or began one."""
        if not caught_up:
            self.ctx.next_command()
        return self.ctx.ledger().recorder.max_notification_id() or 0

    def task(self, number: int) -> str:
        from ledger.app import verify
        from projections import report

        entry = self._entry(number)
        state = self._checked(entry)
        events = verify.load_events(self.ctx.ledger(), entry.task_id, entry.number)
        return report.render(state, events[: state.position], live=f"/task/{entry.number}/position")

    def position(self, number: int) -> int:
        """The task's position for an open page's poll: a whole load, with a read's checks, only when the task's
        key moved since the last (an SQLite ledger's; on a server every poll loads it)."""
        entry = self._entry(number)
        task = entry.task_id.hex
        held = self.checked.get(task)
        if held is not None and self._keys(task).get(task) == held[0]:
            return held[1]
        return self._checked(entry).position

    def _checked(self, entry: Entry) -> TaskState:
        from ledger.app import reading

        task = entry.task_id.hex
        before = self._keys(task).get(task)
        self.checked.pop(task, None)
        state = reading.state(self.ctx.ledger(), entry)
        if before is not None and self._keys(task).get(task) == before:  # nothing moved while it was checked
            self.checked[task] = (before, state.position)
        return state

    def _keys(self, task: str) -> dict[str, str]:
        if not self.ctx.location.is_sqlite:
            return {}
        from ledger.app import briefcache

        return briefcache.task_keys(os.path.realpath(self.ctx.location.sqlite_path), [task])


def handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "tasktrail"

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            parts = [p for p in url.path.split("/") if p]
            named = self.headers.get("Host", "")
            if not site.any_host and _host_name(named) not in LOOPBACK_NAMES:
                # A page of another site whose name its owner pointed at 127.0.0.1 (DNS rebinding) would be
                # "same origin" to its own script: answer only requests that name this machine's loopback.
                self._refuse(HTTPStatus.FORBIDDEN, f"trail: refused a request for host {named!r}: this server "
                             "answers for 127.0.0.1 and localhost only")
                return
            try:
                with site.lock:
                    if not parts:
                        query = " ".join(parse_qs(url.query).get("q", []))
                        self._send(HTTPStatus.OK, "text/html", site.index(query).encode())
                    elif parts == ["version"]:
                        self._send(HTTPStatus.OK, "application/json", orjson.dumps({"version": site.version()}))
                    elif len(parts) == 2 and parts[0] == "task" and parts[1].isdigit():
                        self._send(HTTPStatus.OK, "text/html", site.task(int(parts[1])).encode())
                    elif len(parts) == 3 and parts[0] == "task" and parts[1].isdigit() and parts[2] == "position":
                        body = orjson.dumps({"position": site.position(int(parts[1]))})
                        self._send(HTTPStatus.OK, "application/json", body)
                    else:
                        self._refuse(HTTPStatus.NOT_FOUND, f"trail: no page {url.path}: / lists every task")
            except TrailError as exc:
                self._refuse(status_of(exc), f"trail: {exc}")
            except sqlite3.Error as exc:
                self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, f"trail: ledger storage failed: {reason(exc)}")
            except Exception as exc:
                from eventsourcing.persistence import PersistenceError

                if not isinstance(exc, PersistenceError):
                    raise
                self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, f"trail: ledger storage failed: {reason(exc)}")

        def _refuse(self, status: HTTPStatus, line: str) -> None:
            """One line, as the CLI prints it: JSON to the page's own poll, text to a browser."""
            if self.path.endswith(("/position", "/version")):
                self._send(status, "application/json", orjson.dumps({"error": line}))
            else:
                self._send(status, "text/plain", (line + "\n").encode())

        def _send(self, status: HTTPStatus, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a request log would bury the one line that says where the server is

    return Handler


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})


def _host_name(header: str) -> str:
    """The name in a Host header, without its port, lower-cased."""
    name = header.strip().lower()
    if name.startswith("["):
        return name.split("]", 1)[0] + "]"
    return name.rsplit(":", 1)[0] if ":" in name else name


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True, metavar="PORT",
              help="Port to listen on; 0 takes any free one (the URL printed says which).")
@click.option("--host", default="127.0.0.1", show_default=True, metavar="ADDRESS",
              help="Address to listen on. Loopback only unless --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Listen on an address other machines reach. There is no login: anyone who reaches it reads "
              "every task, with its commands, outputs and diffs.")
@pass_context
@fails_cleanly
def serve(ctx: Context, port: int, host: str, allow_remote: bool) -> None:
    """Serve a read-only web view of the ledger on this machine: every task by project with its status, next
    step and a search box, and each task's report, which updates itself as events arrive. Ctrl-C stops it.

    It listens on 127.0.0.1 only: the pages show everything the ledger holds (commands, their output,
    diffs) to whoever reaches the port, with no login, so another address needs --allow-remote.

    \b
    trail serve                 then open the URL it prints
    trail serve --port 0        any free port
    """
    if not _loopback(host) and not allow_remote:
        raise click.UsageError(f"--host {host} is not a loopback address: the pages have no login and show every "
                               "task; give --allow-remote to serve them there anyway")
    ctx.ledger()  # opened (and caught up) before listening: a ledger that cannot open fails here, as a command
    try:
        kind = _Server6 if ":" in host else ThreadingHTTPServer
        server = kind((host, port), handler(Site(ctx, any_host=allow_remote)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise BadSetting(f"port {port} on {host} is taken: choose another with --port, or --port 0 for any "
                             "free one") from exc
        raise BadSetting(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    server.daemon_threads = True
    bound_host, bound_port = server.socket.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    click.echo(f"serving {ctx.location.display} read-only at http://{shown}:{bound_port}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    click.echo("stopped")


COMMANDS: list[click.Command] = [serve]
