"""Click parameter types shared by commands: a value is checked while the command line is parsed, so a
bad one is a usage error (one line on stderr naming the command and option, exit 2: ``cli.app``)
before any work starts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import click

from ledger.base.errors import BadSetting
from projections import points


@dataclass(frozen=True)
class Age:
    """An age as typed (``30d``), and how long it is."""

    text: str
    span: timedelta

    def cutoff(self) -> datetime:
        """The moment this age ago: what is older than it is before this."""
        return datetime.now(UTC) - self.span

    def __str__(self) -> str:
        return self.text


class AgeType(click.ParamType[Age, object]):
    """An age such as 30d, 12h or 90m (``points.parse_age``), short enough to count back from now."""

    name = "age"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> Age:
        if isinstance(value, Age):
            return value
        text = str(value)
        try:
            age = Age(text, points.parse_age(text))
            age.cutoff()
        except BadSetting:
            self.fail(f"{text!r} is not an age like 30d, 12h or 90m", param, ctx)
        except OverflowError:  # timedelta's limit, or the date before year 1
            oldest = (datetime.now(UTC) - datetime.min.replace(tzinfo=UTC)).days
            self.fail(f"{text} reaches back before year 1; give at most {oldest}d", param, ctx)
        return age


AGE = AgeType()
