"""Where the ledger lives: ``--db``, then ``TRAIL_DATABASE_URL``, then ``TRAIL_HOME``, then the user data dir."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DB_FILENAME = "ledger.db"


@dataclass(frozen=True)
class Location:
    """A resolved ledger location. ``home`` holds per-user state such as the active task."""

    url: str
    """``sqlite:PATH`` or a ``postgresql://`` URL."""
    home: Path

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite:")

    @property
    def sqlite_path(self) -> Path:
        return Path(self.url.removeprefix("sqlite:"))

    @property
    def key(self) -> str:
        """Identifies this ledger in per-user files (the active-task pointer)."""
        return str(self.sqlite_path.resolve()) if self.is_sqlite else self.url


def trail_home() -> Path:
    if home := os.environ.get("TRAIL_HOME"):
        return Path(home).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "tasktrail"


def resolve(db: str | None = None) -> Location:
    """Resolve a ``--db`` value (a path, ``sqlite:PATH`` or a URL) or the defaults."""
    home = trail_home()
    value = db or os.environ.get("TRAIL_DATABASE_URL")
    if not value:
        return Location(url=f"sqlite:{home / DB_FILENAME}", home=home)
    if value.startswith(("postgresql://", "postgres://")):
        return Location(url=value, home=home)
    path = Path(value.removeprefix("sqlite:")).expanduser()
    return Location(url=f"sqlite:{path}", home=home)
