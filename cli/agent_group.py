"""A click group with one command per registered agent (``ledger.capture.agents``): `trail import NAME`,
`trail hook NAME`, `trail install NAME`. A command the group defines itself wins; for any other
registered agent, ``make(name)`` builds it when asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


class AgentGroup(click.Group):
    """A group with one command per registered agent (``ledger.capture.agents``), made when asked for:
    an agent's package registers it, no edit here."""

    def __init__(self, *args: Any, make: Callable[[str], click.Command], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.make = make

    def list_commands(self, ctx: click.Context) -> list[str]:
        from ledger.capture.agents import names

        return sorted({*super().list_commands(ctx), *names()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from ledger.capture.agents import known

        found = super().get_command(ctx, cmd_name)
        return found if found is not None or not known(cmd_name) else self.make(cmd_name)
