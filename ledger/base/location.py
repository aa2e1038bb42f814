"""Where the ledger lives: ``--db``, then ``TRAIL_DATABASE_URL``, then ``TRAIL_HOME``, then the user data dir."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from ledger.base.errors import BadInput
from ledger.base.home import DB_FILENAME, home_dir, named, sqlite_file
from ledger.base.ledger_file import inbox_for_url, masked

URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


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
    def is_postgres(self) -> bool:
        return self.url.startswith(("postgresql://", "postgres://"))

    @property
    def is_default(self) -> bool:
        """The zero-set-up location, ``$TRAIL_HOME/ledger.db``: any command may create it."""
        return self.url == f"sqlite:{self.home / DB_FILENAME}"

    @property
    def display(self) -> str:
        """The URL as it may be printed or stored: any password replaced by ``***``."""
        return self.url if self.is_sqlite else masked(self.url)

    @property
    def key(self) -> str:
        """Identifies this ledger in per-user files (the active-task pointer); never holds a password."""
        return str(self.sqlite_path.resolve()) if self.is_sqlite else self.display

    def postgres(self) -> PostgresTarget:
        """The server, database and schema a ``postgresql://`` URL names, or BadInput saying what is missing."""
        return PostgresTarget.parse(self.url, self.display)


DEFAULT_CONNECT_TIMEOUT = 5
"""Seconds to wait for a PostgreSQL server: a wrong URL fails fast, not after the library's 30 s."""


@dataclass(frozen=True)
class PostgresTarget:
    host: str
    port: int
    dbname: str
    user: str
    password: str
    schema: str
    connect_timeout: int

    @classmethod
    def parse(cls, url: str, shown: str) -> PostgresTarget:
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        unknown = sorted(set(query) - {"schema", "connect_timeout"})
        if unknown:
            raise BadInput(f"ledger URL {shown}: unknown parameter {unknown[0]!r} (known: schema, connect_timeout)")
        try:
            port = parts.port or 5432
        except ValueError:
            raise BadInput(f"ledger URL {shown}: the port is not a number") from None
        dbname = unquote(parts.path.lstrip("/"))
        if not parts.hostname:
            raise BadInput(f"ledger URL {shown}: no host (expected postgresql://USER:PASSWORD@HOST:PORT/DBNAME)")
        if not dbname or "/" in dbname:
            raise BadInput(f"ledger URL {shown}: no database name (expected postgresql://USER:PASSWORD@HOST:PORT/DBNAME)")
        if not parts.username:
            raise BadInput(f"ledger URL {shown}: no user (expected postgresql://USER:PASSWORD@HOST:PORT/DBNAME)")
        timeout = query.get("connect_timeout", str(DEFAULT_CONNECT_TIMEOUT))
        if not timeout.isdigit() or int(timeout) < 1:
            raise BadInput(f"ledger URL {shown}: connect_timeout must be a whole number of seconds, got {timeout!r}")
        schema = query.get("schema", "")
        if schema and not (schema.replace("_", "a").isalnum() and schema.isascii() and not schema[0].isdigit()):
            raise BadInput(f"ledger URL {shown}: schema {schema!r} must be letters, digits and _")
        return cls(
            host=parts.hostname,
            port=port,
            dbname=dbname,
            user=unquote(parts.username),
            password=unquote(parts.password or ""),
            schema=schema or "public",
            connect_timeout=int(timeout),
        )




def trail_home() -> Path:
    return Path(home_dir())


def resolve(db: str | None = None) -> Location:
    """Resolve a ``--db`` value (a path, ``sqlite:PATH`` or a URL) or the defaults."""
    home = trail_home()
    value = named(db)
    if value and URL_SCHEME.match(value) and not value.startswith("sqlite:"):
        return Location(url=value, home=home)  # PostgreSQL, or an unknown scheme refused when the ledger opens
    return Location(url=f"sqlite:{Path(sqlite_file(value))}", home=home)


def inbox_path(location: Location) -> Path:
    """Where hooks queue payloads for this ledger: its own file, or a server ledger's local one
    (``ledger_file.inbox_for_url``, which the hook reaches with ``os`` alone)."""
    if location.is_sqlite:
        return location.sqlite_path
    return Path(inbox_for_url(str(location.home), location.url))
