"""The `trail` console script (also installed as `tasktrail`): routes the capture hook before anything heavy loads.

`trail hook claude-code` and `trail hook codex` run on every tool call of the agent, so they must not
pay for click, pydantic or eventsourcing; nor does `trail resume [TASK]` when the brief cache holds
its answer (``ledger.briefcache``); everything else goes to the click app in ``cli.app``.
"""

from __future__ import annotations

import sys
from typing import Any


def main() -> None:
    if sys.argv[1:2] == ["hook"] and sys.argv[2:3] in (["claude-code"], ["codex"]):  # hook.AGENTS
        from ledger.capture.hook import run

        sys.exit(run(sys.argv[2:]))
    if sys.argv[1:2] == ["resume"] and len(sys.argv) <= 3 and not any(a.startswith("-") for a in sys.argv[2:]):
        # `trail resume [TASK]` answers from the brief cache while nothing it shows has changed.
        from ledger.briefcache import cached_resume

        text = cached_resume(sys.argv[2] if len(sys.argv) == 3 else None)
        if text is not None:
            sys.stdout.write(text)
            sys.exit(0)
    from cli.app import cli

    cli()


def __getattr__(name: str) -> Any:
    # ``from cli.main import cli`` keeps working without importing click on the hook path.
    if name == "cli":
        from cli.app import cli

        return cli
    raise AttributeError(name)
