"""Telling a tasktrail ledger's SQLite file from another application's database (standard library only).

``open_ledger`` refuses such a file before the library adds its tables to it; the capture hook,
which opens the file itself (it must not load the ledger), makes the same test before it adds the
inbox table.
"""

from __future__ import annotations

from collections.abc import Set

LEDGER_TABLES = frozenset({"stored_events", "capture_inbox"})
"""Tables only a tasktrail ledger file holds: the library's events, and the capture inbox, which the hook
may create before the library first opens the file. A database with tables but none of these is another's."""


def foreign_tables(tables: Set[str]) -> bool:
    """Whether a database with these tables is another application's (tables, none of a ledger's)."""
    return bool(tables) and not tables & LEDGER_TABLES
