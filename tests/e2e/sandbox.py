"""Run one real agent inside a network namespace that has only loopback, beside a scripted model server.

A test calls ``run(...)``. That starts ``unshare -n python -m tests.e2e.sandbox ...``: inside the new
namespace this module brings ``lo`` up, refuses to go on if any other interface exists (nothing may leave
the machine), serves the scripted model on 127.0.0.1 in a thread, runs the agent as a child with ``{port}``
filled into its arguments and environment, and logs every request body the model received, one JSON line
per request, for the test to assert on.

The API modules (``tests.e2e.anthropic`` for Claude Code, ``tests.e2e.responses`` for Codex) each define
``respond(path, body, steps, seen) -> Reply``: ``steps`` is the scenario's JSON list, ``seen`` a dict the
module may keep state in across requests of one run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""


def isolation_problem() -> str | None:
    """Why this machine cannot run an agent in a loopback-only namespace, or None when it can."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    probe = subprocess.run([*_unshare(), "sh", "-c", "ip link set lo up"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a network namespace: {(probe.stderr or probe.stdout).strip()[:200]}"
    return None


def _unshare() -> list[str]:
    return ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-r", "-n"]


def run(
    command: Sequence[str],
    *,
    api: str,
    steps: list[Any],
    log: Path,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 180,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` (``{port}`` filled in its arguments and ``env`` values) inside a loopback-only
    namespace beside the scripted ``api`` server answering ``steps``; requests go to ``log`` (appended)."""
    steps_file = log.with_suffix(f".steps{_next_index(log)}.json")
    steps_file.write_text(json.dumps(steps))
    args = [*_unshare(), sys.executable, "-m", "tests.e2e.sandbox", "--api", api, "--steps", str(steps_file),
            "--log", str(log), "--", *command]
    repo = Path(__file__).resolve().parents[2]
    full_env = {**env, "PYTHONPATH": str(repo) + os.pathsep + env.get("PYTHONPATH", "")}
    return subprocess.run(args, env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          input=stdin if stdin is not None else "")


def _next_index(log: Path) -> int:
    return len(list(log.parent.glob(log.stem + ".steps*.json")))


def requests(log: Path) -> list[dict[str, Any]]:
    """Every request the scripted model received, in order (``path``, ``headers``, ``body``)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


# -- inside the namespace ------------------------------------------------------------------------------


def _only_loopback() -> str | None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    # /proc/net/dev is this namespace's own list (/sys/class/net still shows the mounter's)
    lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    interfaces = sorted(line.split(":", 1)[0].strip() for line in lines)
    if interfaces != ["lo"]:
        return f"refusing to run an agent: this namespace has interfaces {interfaces}, not only lo"
    return None


def _serve(api: str, steps: list[Any], log: Path) -> ThreadingHTTPServer:
    module = importlib.import_module(f"tests.e2e.{api}")
    seen: dict[str, Any] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the JSON log is the record
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            with lock:
                entry = {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
                with log.open("a") as out:
                    out.write(json.dumps(entry) + "\n")
                reply: Reply = module.respond(self.path, body, steps, seen)
            chunks = [reply.body] if isinstance(reply.body, bytes) else reply.body
            self.send_response(reply.status)
            streamed = not isinstance(reply.body, bytes)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if streamed:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(len(reply.body)))  # type: ignore[arg-type]
            self.end_headers()
            for chunk in chunks:
                if streamed:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.wfile.write(chunk)
                self.wfile.flush()
            if streamed:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            # an agent dropping a kept-alive connection at exit is not worth a traceback in the run's stderr
            if not isinstance(sys.exc_info()[1], ConnectionError):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.sandbox")
    parser.add_argument("--api", required=True)
    parser.add_argument("--steps", required=True, type=Path)
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("command", nargs="+")
    options = parser.parse_args(argv)
    if problem := _only_loopback():
        print(problem, file=sys.stderr)
        return 97
    server = _serve(options.api, json.loads(options.steps.read_text()), options.log)
    port = str(server.server_address[1])
    env = {name: value.replace("{port}", port) for name, value in os.environ.items()}
    command = [part.replace("{port}", port) for part in options.command]
    try:
        return subprocess.run(command, env=env).returncode
    finally:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
