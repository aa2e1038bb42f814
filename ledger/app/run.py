"""Running a command for `trail ran`: output goes to the terminal as usual and is captured too."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import IO, Any

CAPTURE_LIMIT = 1 << 20
"""Bytes of each stream kept in memory; the event keeps a smaller tail (ledger.domain.bounds)."""


_EMPTY = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True)
class Finished:
    exit_code: int
    duration_ms: int
    stdout: bytes
    stderr: bytes
    stdout_size: int
    stderr_size: int
    stdout_sha256: str
    stderr_sha256: str


def _pump(source: IO[bytes], sink: IO[bytes], kept: bytearray, size: list[int], digest: Any) -> None:
    for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
        sink.write(chunk)
        sink.flush()
        size[0] += len(chunk)
        digest.update(chunk)
        kept.extend(chunk)
        if len(kept) > CAPTURE_LIMIT:
            del kept[: len(kept) - CAPTURE_LIMIT]


def run(argv: list[str], cwd: str | None = None, echo: bool = True) -> Finished:
    """Run ``argv``, teeing both streams; a missing program is exit code 127, as in a shell."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        message = f"{argv[0]}: command not found\n".encode()
        if echo:
            sys.stderr.buffer.write(message)
        return Finished(127, 0, b"", message, 0, len(message), _EMPTY, hashlib.sha256(message).hexdigest())
    except PermissionError:
        message = f"{argv[0]}: permission denied\n".encode()
        if echo:
            sys.stderr.buffer.write(message)
        return Finished(126, 0, b"", message, 0, len(message), _EMPTY, hashlib.sha256(message).hexdigest())
    out, err = bytearray(), bytearray()
    out_size, err_size = [0], [0]
    out_hash, err_hash = hashlib.sha256(), hashlib.sha256()
    devnull = open("/dev/null", "wb")  # noqa: SIM115 - closed below
    sinks = (sys.stdout.buffer, sys.stderr.buffer) if echo else (devnull, devnull)
    assert proc.stdout is not None and proc.stderr is not None
    threads = [
        threading.Thread(target=_pump, args=(proc.stdout, sinks[0], out, out_size, out_hash)),
        threading.Thread(target=_pump, args=(proc.stderr, sinks[1], err, err_size, err_hash)),
    ]
    for thread in threads:
        thread.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        code = proc.wait()
    for thread in threads:
        thread.join()
    devnull.close()
    duration = int((time.monotonic() - started) * 1000)
    return Finished(
        code, duration, bytes(out), bytes(err), out_size[0], err_size[0], out_hash.hexdigest(), err_hash.hexdigest()
    )
