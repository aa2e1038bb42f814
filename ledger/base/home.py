"""Where per-user state lives: ``TRAIL_HOME``, else ``$XDG_DATA_HOME/tasktrail``, else ``~/.local/share/tasktrail``;
and which SQLite file a ledger's name means (the default ledger lives there).

Resolved with ``os`` alone: the capture hook and the redaction of every appended event
both need it, and neither can afford pathlib or dataclasses on their path.
"""

from __future__ import annotations

import os


def home_dir() -> str:
    if home := os.environ.get("TRAIL_HOME"):
        return os.path.expanduser(home)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "tasktrail")


DB_FILENAME = "ledger.db"


def named(db: str | None) -> str | None:
    """What names the ledger: ``db`` (a path, ``sqlite:PATH`` or a URL), else ``TRAIL_DATABASE_URL``."""
    return db or os.environ.get("TRAIL_DATABASE_URL") or None


def sqlite_file(value: str | None) -> str:
    """The SQLite file a path or ``sqlite:PATH`` names (``~`` expanded), or the default under ``TRAIL_HOME``."""
    if value:
        return os.path.expanduser(value.removeprefix("sqlite:"))
    return os.path.join(home_dir(), DB_FILENAME)
