"""The `trail` console script (also installed as `tasktrail`): routes the capture hook before anything heavy loads.

`trail hook NAME` (``ledger.capture.agents``) runs on every tool call of the agent, so they must not
pay for click, pydantic or eventsourcing; nor does `trail [--db PATH] resume [TASK]` when the brief
cache holds its answer (``ledger.app.briefcache``); everything else goes to the click app in ``cli.app``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs the hook ~3 ms; the annotation below is read by mypy alone
if TYPE_CHECKING:
    from typing import Any


def resume_args(argv: list[str]) -> tuple[str | None, str | None] | None:
    """``(db, task)`` when ``argv`` (after the program name) is `[--db PATH] resume [TASK]` and nothing
    else, the only form the brief cache answers; None otherwise (click parses it, and says what is wrong)."""
    db = None
    if argv[:1] == ["--db"] and len(argv) >= 2:
        db, argv = argv[1], argv[2:]
    elif argv[:1] and argv[0].startswith("--db="):
        db, argv = argv[0].removeprefix("--db="), argv[1:]
    if argv[:1] != ["resume"] or len(argv) > 2 or any(a.startswith("-") for a in argv[1:]) or db == "":
        return None
    return db, argv[1] if len(argv) == 2 else None


FIND_VALUED = {"-n": "limit", "--limit": "limit", "--project": "project", "--status": "statuses",
               "--since": "since", "--agent": "agent"}
"""`trail find`'s options that take a value, by what they set."""


def find_args(argv: list[str]) -> tuple[str | None, Any] | None:
    """``(db, findindex.Asked)`` when ``argv`` is `[--db PATH] find WORD... [OPTION...]` with options the find
    index answers for, each in a form it is sure to read as click does; None otherwise (click parses it)."""
    db = None
    if argv[:1] == ["--db"] and len(argv) >= 2:
        db, argv = argv[1], argv[2:]
    elif argv[:1] and argv[0].startswith("--db="):
        db, argv = argv[0].removeprefix("--db="), argv[1:]
    if argv[:1] != ["find"] or db == "":
        return None
    words: list[str] = []
    asked: dict[str, Any] = {"statuses": []}
    rest = iter(argv[1:])
    for arg in rest:
        name, _, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if arg in ("--json", "--here"):
            asked[arg[2:].replace("json", "as_json")] = True
        elif name in FIND_VALUED:
            value = value or next(rest, "")
            if not value or value.startswith("-"):
                return None
            if FIND_VALUED[name] == "statuses":
                asked["statuses"].append(value)
            else:
                asked[FIND_VALUED[name]] = value
        elif arg.startswith("-") or not arg:
            return None
        else:
            words.append(arg)
    limit = asked.get("limit", "10")
    if not (limit.isascii() and limit.isdigit()) or not 1 <= int(limit) < 2**63:
        return None
    from ledger.app.findindex import Asked
    from projections.find import words_of

    asked.update(limit=int(limit), statuses=tuple(asked["statuses"]))
    return db, Asked(words=words_of(tuple(words)), **asked)


def main() -> None:
    import os

    # Before anything is created: every file and folder made from here on is private (ledger.base.private;
    # inline, so `trail --help` imports nothing of the ledger).
    os.umask(os.umask(0o077) | 0o077)
    if sys.argv[1:2] == ["hook"] and sys.argv[2:3] and not sys.argv[2].startswith("-"):
        # Any name, registered or not: the hook answers an unknown one with one line and exit 0 (a stale
        # install must not break the agent), and only `trail hook --help` needs click.
        from ledger.capture.hook import run

        sys.exit(run(sys.argv[2:]))
    asked = resume_args(sys.argv[1:])
    if asked is not None:
        # `trail resume [TASK]` answers from the brief cache while nothing it shows has changed.
        from ledger.app.briefcache import cached_resume
        from ledger.capture.agents import BUILTIN

        text = cached_resume(asked[1], asked[0], BUILTIN)
        if text is not None:
            sys.stdout.write(text)
            sys.exit(0)
    find = find_args(sys.argv[1:])
    if find is not None:
        # `trail find` answers from the find index while nothing it would show has changed.
        from ledger.app.findindex import cached_find

        text = cached_find(find[1], find[0])
        if text is not None:
            sys.stdout.write(text)
            sys.exit(0)
    # This process is ours: pydantic need not search every installed package for plugins of its own
    # (~30 ms a process; cli.plugin_search). A host importing the ledger as a library keeps them.
    from cli import plugin_search
    from cli.app import cli

    plugin_search.skip()
    cli()


def __getattr__(name: str) -> Any:
    # ``from cli.main import cli`` keeps working without importing click on the hook path.
    if name == "cli":
        from cli.app import cli

        return cli
    raise AttributeError(name)
