"""The `trail` console script (also installed as `tasktrail`): routes the capture hook before anything heavy loads.

`trail hook claude-code` and `trail hook codex` run on every tool call of the agent, so they must not
pay for click, pydantic or eventsourcing; everything else goes to the click app in ``cli.app``.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    if sys.argv[1:2] == ["hook"] and sys.argv[2:3] in (["claude-code"], ["codex"]):  # hook.AGENTS
        from ledger.capture.hook import run

        sys.exit(run(sys.argv[2:]))
    from cli.app import cli

    cli()


def __getattr__(name: str) -> Any:
    # ``from cli.main import cli`` keeps working without importing click on the hook path.
    if name == "cli":
        from cli.app import cli

        return cli
    raise AttributeError(name)
