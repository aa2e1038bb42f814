"""A sandboxed query run in a child process whose memory, time and answer size are capped.

DuckDB's ``memory_limit`` does not hold for everything a query makes: a 300 MB string, or a
result of many wide rows, is built outside it and again as Python objects, so one query could
take gigabytes and minutes of the process that asked. Here the query runs in a child process
under ``RLIMIT_AS`` and ``RLIMIT_CPU``, killed after a wall-clock bound; the child asks DuckDB
for at most ``limit + 1`` rows (so a huge result is never built), cuts each row to ``ROW_BYTES``
of JSON and the whole answer to ``RESULT_BYTES``, and writes it as one JSON object. The caller
holds only that bounded answer, so a query can cost it neither memory nor more than
``seconds + GRACE_SECONDS`` (docs/readmodel.md, "Query modes").

Run as ``python -m projections.capped_query``: the request (JSON) on stdin, the answer on stdout.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

ROW_BYTES = 32 * 1024
"""A row's JSON is cut to about this size: its largest values are cut to fit, each with ``CUT``."""
RESULT_BYTES = 256 * 1024
"""The rows' JSON stops before this size: the rows after are left out and ``truncated`` is true."""
MEMORY_BYTES = 1536 << 20
"""The child's address space (RLIMIT_AS); DuckDB's own ``memory_limit`` in the sandbox is below it."""
GRACE_SECONDS = 5.0
"""Past the query's ``seconds``, the child's start-up and the time to stop work DuckDB cannot interrupt."""
CUT = "…[cut {:,} bytes]"

_INT64 = 2**63


@dataclass(frozen=True)
class Capped:
    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool
    """Rows were left out: past ``limit`` or past ``RESULT_BYTES``."""
    cut: int
    """Values cut to fit ``ROW_BYTES``."""


def json_ready(value: Any) -> Any:
    """``value`` in types any JSON encoder takes: intervals and decimals as text, BLOBs as hex and
    integers past 64 bits (HUGEINT sums) as text, which orjson refuses; times and UUIDs pass."""
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, timedelta) or type(value).__name__ == "Decimal":
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT64 <= value < _INT64:
        return str(value)
    return value


def _encoded(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


_CHUNK = 1 << 20


def _utf8_size(text: str) -> int:
    """UTF-8 bytes of ``text``, counted a chunk at a time (never a second copy of a huge value)."""
    if text.isascii():
        return len(text)
    return sum(len(text[i:i + _CHUNK].encode("utf-8", "surrogatepass")) for i in range(0, len(text), _CHUNK))


def _json_size(value: Any, cap: int = ROW_BYTES) -> int:
    """Bytes of ``value``'s JSON: exact when it is small; for a value that cannot fit ``cap``, counted
    without encoding it (escapes aside). orjson, asked to encode a value of tens of MB near the child's
    memory limit, dies of SIGSEGV instead of raising MemoryError: a 50 MB string ended the child so."""
    if isinstance(value, str):
        if len(value) * 6 + 2 <= cap:  # even all escapes would fit
            return len(_encoded(value))
        size = _utf8_size(value) + 2
        return size if size > cap else len(_encoded(value))
    if isinstance(value, list | tuple | dict):
        items = list(value.items()) if isinstance(value, dict) else list(value)
        total = 2 + max(len(items) - 1, 0)
        for item in items:
            if isinstance(item, tuple):  # a dict's key and value
                total += _json_size(item[0], cap) + 1 + _json_size(item[1], cap)
            else:
                total += _json_size(item, cap)
        return total
    return len(_encoded(value))


def _json_prefix(value: Any, room: int) -> str:
    """The start of ``value``'s JSON, at least ``room`` bytes of it when it has them, built an item at a
    time so a huge value is never encoded whole."""
    parts: list[str] = []
    used = 0

    def walk(item: Any) -> bool:  # True once enough is written
        nonlocal used
        if isinstance(item, list | tuple | dict):
            pairs = list(item.items()) if isinstance(item, dict) else list(item)
            parts.append("{" if isinstance(item, dict) else "[")
            used += 1
            for n, pair in enumerate(pairs):
                if n:
                    parts.append(",")
                    used += 1
                if isinstance(item, dict):
                    key = _encoded(str(pair[0])).decode() + ":"
                    parts.append(key)
                    used += len(key)
                if used >= room or walk(pair[1] if isinstance(item, dict) else pair):
                    return True
            parts.append("}" if isinstance(item, dict) else "]")
            used += 1
            return used >= room
        if isinstance(item, str) and len(item) > room:
            text = _encoded(item[:room]).decode()[:-1]  # cut: no closing quote
            parts.append(text)
            used += len(text)
            return True
        text = _encoded(item).decode()
        parts.append(text)
        used += len(text)
        return used >= room

    walk(value)
    return "".join(parts)


def _cut(value: Any, size: int, room: int) -> str:
    """``value`` as text whose JSON takes at most ``room`` bytes (escapes counted), marked with what was dropped."""
    if isinstance(value, str):
        whole, total = value[:max(room, 0)].encode("utf-8", "surrogatepass"), _utf8_size(value)
    else:
        whole, total = _json_prefix(value, max(room, 0)).encode("utf-8", "surrogatepass"), size
    keep = room - len(CUT.format(size)) - 2
    while True:
        head = whole[:max(keep, 0)].decode("utf-8", "ignore")
        out = head + CUT.format(total - len(head.encode()))
        over = len(_encoded(out)) - room
        if over <= 0 or keep <= 0:
            return out
        keep -= over


def fit_row(columns: Sequence[str], row: Sequence[Any], budget: int = ROW_BYTES) -> tuple[dict[str, Any], int]:
    """The row as column -> JSON-ready value within ``budget`` bytes of JSON, and how many values were cut.

    The budget is shared out smallest value first: a value that fits its fair share stays whole,
    the larger ones are each cut to the share that is left."""
    values = [json_ready(v) for v in row]
    sizes = [_json_size(v, budget) for v in values]
    room = budget - 2 - sum(len(_encoded(c)) + 2 for c in columns)  # braces, quoted names, colons, commas
    if sum(sizes) <= room:
        return dict(zip(columns, values, strict=True)), 0
    share, left = 0, room
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    for done, i in enumerate(order):
        share = left // (len(order) - done)
        if sizes[i] > share:
            break
        left -= sizes[i]
    cut = [i for i in order if sizes[i] > share]
    for i in cut:
        values[i] = _cut(values[i], sizes[i], share)
    return dict(zip(columns, values, strict=True)), len(cut)


def fit(columns: Sequence[str], rows: Iterable[Sequence[Any]], limit: int,
        budget: int = RESULT_BYTES, row_budget: int = ROW_BYTES) -> Capped:
    """At most ``limit`` rows, each within ``row_budget``, all within ``budget`` bytes of JSON."""
    kept: list[dict[str, Any]] = []
    used, cut = 1, 0  # the list's brackets, less the last row's comma
    truncated = False
    for row in rows:
        if len(kept) == limit:
            truncated = True
            break
        record, cuts = fit_row(columns, row, row_budget)
        size = len(_encoded(record)) + 1
        if used + size > budget:
            truncated = True
            break
        kept.append(record)
        used += size
        cut += cuts
    return Capped(columns=list(columns), rows=kept, truncated=truncated, cut=cut)


def run(path: Path, sql: str, *, limit: int, seconds: float) -> Capped:
    """Run ``sql`` sandboxed on the read model at ``path`` in a capped child process.

    A query that fails, runs out of memory or time, or whose process dies, is one ``ReadModelError`` line.
    """
    from projections.readmodel import ReadModelError

    if not path.exists():
        raise ReadModelError(f"no read model at {path}; refresh it first")
    request = json.dumps({"path": str(path), "sql": sql, "limit": limit, "seconds": seconds})
    try:
        done = subprocess.run([sys.executable, "-m", "projections.capped_query"], input=request.encode(),
                              capture_output=True, timeout=seconds + GRACE_SECONDS, check=False)
    except subprocess.TimeoutExpired:  # run() has killed the child
        raise ReadModelError(f"query stopped: it ran past its limit of {seconds:g} s") from None
    answer: dict[str, Any] | None = None
    if done.returncode == 0:
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            answer = None
    if answer is None:
        raise ReadModelError(_death(done.returncode, seconds))
    if "error" in answer:
        raise ReadModelError(answer["error"])
    return Capped(columns=answer["columns"], rows=answer["rows"], truncated=answer["truncated"], cut=answer["cut"])


def _death(returncode: int, seconds: float) -> str:
    if returncode == -signal.SIGXCPU:
        return f"query stopped: it ran past its CPU limit ({_cpu_seconds(seconds)} s)"
    how = f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"
    return (f"query stopped: its process ended with {how}, most likely at its memory limit "
            f"of {MEMORY_BYTES >> 20} MiB")


def _cpu_seconds(seconds: float) -> int:
    return int(seconds * 2 + GRACE_SECONDS) + 1  # DuckDB's threads add up CPU time faster than the clock


def _child() -> None:
    request = json.loads(sys.stdin.read())
    seconds = float(request["seconds"])
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    cpu = _cpu_seconds(seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    try:
        answer: dict[str, Any] = _answer(Path(request["path"]), request["sql"], int(request["limit"]), seconds)
    except MemoryError:
        answer = {"error": f"query stopped: it ran out of its memory limit of {MEMORY_BYTES >> 20} MiB"}
    sys.stdout.buffer.write(_encoded(answer))


PROBE_ROWS = 16
"""Rows read first to tell how wide rows are, and so how many more can fit ``RESULT_BYTES`` once cut."""


def _rows(relation: Any, limit: int) -> list[tuple[Any, ...]]:
    """Up to ``limit + 1`` rows, but no more than the answer can hold: 1,000 rows of 1 MB would be built
    whole before any was cut. A relation runs again on each fetch, so the probe costs a second run."""
    rows: list[tuple[Any, ...]] = relation.limit(min(limit + 1, PROBE_ROWS)).fetchall()
    if len(rows) < PROBE_ROWS or limit + 1 <= PROBE_ROWS:
        return rows
    wide = sum(_json_size(json_ready(list(row)), RESULT_BYTES) for row in rows) // len(rows)
    wanted = min(limit + 1, RESULT_BYTES // max(1, min(wide, ROW_BYTES)) + 2)
    return rows if wanted <= len(rows) else relation.limit(wanted).fetchall()


def _answer(path: Path, sql: str, limit: int, seconds: float) -> dict[str, Any]:
    import threading

    import duckdb

    from projections.readmodel import ReadModelError, _first_line, connect

    try:
        with connect(path, sandbox=True) as con:
            timer = threading.Timer(seconds, con.interrupt)
            timer.start()
            try:
                # A relation with a LIMIT: DuckDB stops at limit + 1 rows instead of building the whole result.
                relation = con.sql(sql)
                if relation is None:  # a statement with no rows
                    return {"columns": [], "rows": [], "truncated": False, "cut": 0}
                columns = list(relation.columns)
                rows = _rows(relation, limit)
            finally:
                timer.cancel()
    except duckdb.InterruptException:
        return {"error": f"query stopped: it ran past its limit of {seconds:g} s"}
    except duckdb.OutOfMemoryException as exc:
        return {"error": f"query stopped: it ran out of memory: {_first_line(exc)}"}
    except duckdb.Error as exc:
        return {"error": f"query failed: {_first_line(exc)}"}
    except ReadModelError as exc:
        return {"error": str(exc)}
    capped = fit(columns, rows, limit)
    del rows
    return {"columns": capped.columns, "rows": capped.rows, "truncated": capped.truncated, "cut": capped.cut}


if __name__ == "__main__":
    _child()
