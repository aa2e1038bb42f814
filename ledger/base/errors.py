"""Errors a user can act on. The CLI prints their message as one line and exits non-zero."""


class TrailError(Exception):
    """Base class: the message names what was wrong and where."""

    exit_code = 1


class NotFound(TrailError):
    exit_code = 2


class Ambiguous(TrailError):
    exit_code = 2


class RuleBroken(TrailError):
    """The task's current state does not allow this command; nothing was appended."""

    exit_code = 3


class StoreUnavailable(TrailError):
    """The ledger's storage cannot be opened or written."""

    exit_code = 4


class BadInput(TrailError):
    """A value that does not fit the event it would go into."""

    exit_code = 2


class BadSetting(TrailError):
    """An environment variable or option holds a value tasktrail cannot use."""

    exit_code = 2


class Refused(TrailError):
    """The command would overwrite or contradict what is already stored; nothing was written."""

    exit_code = 3


class PermissionDenied(StoreUnavailable):
    """The ledger's server refused this role: no grant for the project (PostgreSQL row-level security)."""
