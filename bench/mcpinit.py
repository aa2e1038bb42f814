"""How soon `trail mcp` answers its client: `python -m bench.mcpinit [--runs N]`.

Each run starts a server as a process on stdio, as a client does, sends ``initialize`` at once and times
the answer, then ``tools/list``. `trail mcp` (as the agents run it, on a ledger holding the demo task)
against a minimal server on the same SDK (``MCPServer`` with one tool), started by the same interpreter,
run in turn. The goal (issue 19) is ``initialize`` answered within 1.5x of the minimal server's median:
Claude Code does not wait for a slow server, and a model turn that starts first has no tasktrail tools.
Importing the SDK is most of either figure, so the ratio is what `trail mcp` adds to it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.tables import Table, ms
from bench.timing import REPO, trail_argv

RUNS = 10
GOAL = 1.5
MINIMAL = "minimal `MCPServer` (one tool)"
TRAIL = "`trail mcp`"
TOOLS = 9
"""The tools `trail mcp` lists (tests/test_mcp.py names them): a count that differs means another server."""
SERVER = (
    "from mcp.server.mcpserver import MCPServer\n"
    "server = MCPServer('minimal')\n"
    "@server.tool()\n"
    "def ping() -> str:\n"
    "    '''Answer pong.'''\n"
    "    return 'pong'\n"
    "server.run('stdio')\n"
)
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _answer(process: subprocess.Popen[bytes], ident: int) -> dict[str, object]:
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its output before it answered")
        found: dict[str, object] = json.loads(line)
        if found.get("id") == ident:
            if "result" not in found:
                raise RuntimeError(f"the server refused: {line[:300]!r}")
            return found


def once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """Seconds from start to the ``initialize`` answer and to the ``tools/list`` answer, and the tools listed."""
    began = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=env, cwd=cwd)
    try:
        _send(process, INITIALIZE)
        _answer(process, 1)
        initialized = time.perf_counter() - began
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = _answer(process, 2)["result"]
        listed = time.perf_counter() - began
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return initialized, listed, len(tools["tools"]) if isinstance(tools, dict) else 0


def measure(runs: int = RUNS) -> dict[str, dict[str, list[float]]] | None:
    """Per server, seconds to ``initialize`` and to ``tools/list`` of each run; None without the SDK."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        return None
    with tempfile.TemporaryDirectory(prefix="trail-mcp-") as tmp:
        project = Path(tmp) / "project"
        (project / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if k not in ("TRAIL_DB", "TRAIL_DATABASE_URL")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as an installed tasktrail has it
        env.update(TRAIL_HOME=str(Path(tmp) / "home"), PYTHONPATH=str(REPO))
        subprocess.run([*trail_argv(), "demo", "--keep"], env=env, cwd=project, check=True, capture_output=True)
        cases = {MINIMAL: [sys.executable, "-c", SERVER], TRAIL: [*trail_argv(), "mcp"]}
        samples: dict[str, dict[str, list[float]]] = {name: {"initialize": [], "tools": []} for name in cases}
        for round_ in range(runs + 1):  # one warm-up round, not counted
            for name, argv in cases.items():  # in turn, so a busy moment slows both alike
                initialized, listed, count = once(argv, env, project)
                if name == TRAIL and count != TOOLS:
                    raise RuntimeError(f"`trail mcp` listed {count} tools, not {TOOLS}")
                if round_:
                    samples[name]["initialize"].append(initialized)
                    samples[name]["tools"].append(listed)
    return samples


def table(runs: int = RUNS) -> Table:
    result = Table(f"MCP server start: `initialize` answered, median of {runs}",
                   ("server", "initialize", "vs minimal", "tools/list", "goal", "goal met"))
    samples = measure(runs)
    goal = f"<= {GOAL:g}x minimal"
    name = f"`trail mcp` initialize <= {GOAL:g}x a minimal MCPServer"
    if samples is None:
        result.add(TRAIL, "n/a (no MCP SDK)", "n/a", "n/a", goal, result.check(name, None))
        return result
    first = {server: statistics.median(s["initialize"]) for server, s in samples.items()}
    listed = {server: statistics.median(s["tools"]) for server, s in samples.items()}
    for server in samples:
        ours = server == TRAIL
        result.add(server, ms(first[server]), f"{first[server] / first[MINIMAL]:.2f}x", ms(listed[server]),
                   goal if ours else "", result.check(name, first[server] <= GOAL * first[MINIMAL]) if ours else "")
    result.notes.append(
        "Each run is a new process answering on stdio, `initialize` sent at once; `trail mcp` runs on a ledger "
        f"holding the demo task and lists its {TOOLS} tools. It loads the ledger at its first tool call, not before."
    )
    result.data = {"runs": runs, "median_initialize_s": first, "median_tools_s": listed, "samples": samples}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.mcpinit", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help=f"counted runs of each server (default {RUNS})")
    args = parser.parse_args()
    print(table(args.runs).markdown())


if __name__ == "__main__":
    main()
