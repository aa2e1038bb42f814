"""The ledger's SQLite file, for the lean paths (the hook, the brief cache) and the full paths alike, with
``os`` alone (dataclasses and pathlib cost the hook ~10 ms): which file a ``--db`` value, ``TRAIL_DB``,
``TRAIL_DATABASE_URL`` or the defaults name (``ledger.base.location.resolve`` builds on ``sqlite_file``),
where a server ledger's hooks queue instead (``inbox_for_url``), the capture inbox's table, and telling a
tasktrail ledger's file from another application's database.

``open_ledger`` refuses such a file before the library adds its tables to it; the capture hook,
which opens the file itself (it must not load the ledger), makes the same test before it adds the
inbox table.
"""

from __future__ import annotations

import os

from ledger.base.home import home_dir, named, sqlite_file

TYPE_CHECKING = False  # collections.abc (and typing) cost the hook's path: annotations only
if TYPE_CHECKING:
    from collections.abc import Set

LEDGER_TABLES = frozenset({"stored_events", "capture_inbox"})
"""Tables only a tasktrail ledger file holds: the library's events, and the capture inbox, which the hook
may create before the library first opens the file. A database with tables but none of these is another's."""


def foreign_tables(tables: Set[str]) -> bool:
    """Whether a database with these tables is another application's (tables, none of a ledger's)."""
    return bool(tables) and not tables & LEDGER_TABLES


def ledger_file(db: str | None = None) -> str:
    """The SQLite file that holds the inbox: the ledger's own file, as ``ledger.base.location.resolve``
    finds it, or for a PostgreSQL ledger a local file named after its URL (``inbox_for_url``).

    ``db`` as `--db` gives it, else ``TRAIL_DB`` (which the CLI reads into `--db`), then as ``resolve``.
    """
    value = named(db or os.environ.get("TRAIL_DB"))
    if value and value.startswith(("postgresql://", "postgres://")):
        return inbox_for_url(home_dir(), value)
    return sqlite_file(value)


def sqlite_ledger(db: str | None = None) -> str | None:
    """The ledger's own SQLite file (``ledger_file``), or None when the ledger is a server's or its URL unknown."""
    value = named(db or os.environ.get("TRAIL_DB")) or ""
    return None if "://" in value and not value.startswith("sqlite:") else ledger_file(db)


def inbox_for_url(home: str, url: str) -> str:
    """The local inbox file of a server ledger: hooks stay local and fast, the next command folds it in.

    Named by a digest of the URL with its password masked (``Location.display``): a digest of the
    whole URL let anyone who can list the folder guess the password offline."""
    import hashlib  # here: only a server ledger's inbox needs it; the hook imports this module on every event

    return os.path.join(home, "inbox", hashlib.sha256(masked(url).encode()).hexdigest()[:16] + ".db")


def legacy_inbox_for_url(home: str, url: str) -> str:
    """Where releases before the masked digest queued a server ledger's rows: drained, then removed."""
    import hashlib  # as above

    return os.path.join(home, "inbox", hashlib.sha256(url.encode()).hexdigest()[:16] + ".db")


def read_only_uri(path: str) -> str:
    """An SQLite URI opening ``path`` read-only; what a URI path would take as syntax is escaped (urllib's
    ``quote`` does the same, at ~5 ms of imports)."""
    return "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=ro"


INBOX_DDL = (
    "CREATE TABLE IF NOT EXISTS capture_inbox ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, received REAL NOT NULL, payload TEXT NOT NULL)"
)
"""The capture inbox: hook payloads queued in the ledger's file (or a server ledger's local one) until folded in."""


def masked(url: str) -> str:
    """A server URL as it may be printed or stored (``Location.display``): any password replaced by ``***``."""
    import re  # here, as urllib: the hook of an SQLite ledger needs neither
    from urllib.parse import urlsplit  # stdlib, ~2 ms: only a server ledger's hook pays for it

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not even a URL: show its scheme only, it may hold a password
        return url.partition("://")[0] + "://..."
    netloc = parts.netloc if password is None else parts.netloc.replace(f":{password}@", ":***@", 1)
    query = "&".join(
        f"{name}=***" if re.search(_SECRET_PARAM, name) else f"{name}={value}" if sep else name
        for name, sep, value in (pair.partition("=") for pair in parts.query.split("&") if pair)
    )
    return parts._replace(netloc=netloc, query=query).geturl()


_SECRET_PARAM = r"(?i)pass|pwd|secret|token|key|auth|sig|credential"
"""Query parameters a URL may carry a secret in (``?password=…``): shown as ``***``."""
