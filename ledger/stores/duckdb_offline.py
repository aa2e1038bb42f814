"""DuckDB connections that never reach the network: every DuckDB connection tasktrail opens comes from here.

Left to its defaults, DuckDB downloads and loads a known extension the first time a query needs one
(``httpfs`` for an ``https://`` or ``s3://`` path, ``spatial`` for ``st_point``): a query could make
the machine fetch code from the internet. With auto-install and auto-load off, such a query fails
at once naming the extension it lacks, and nothing is fetched. What tasktrail itself uses (Parquet
for archives and export, JSON, ICU time zones) is built into the DuckDB wheel, so it still works.

Import this lazily, as ``duckdb`` itself is: everyday commands do not load DuckDB.
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb

OFFLINE: Mapping[str, bool] = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
"""Connect-time settings of every connection (a query may not turn them back on in a sandboxed one)."""


def connect(
    database: str = ":memory:", *, read_only: bool = False, config: Mapping[str, str | bool] | None = None
) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with the caller's ``config`` plus ``OFFLINE``, which it cannot override."""
    return duckdb.connect(database, read_only=read_only, config={**(config or {}), **OFFLINE})
