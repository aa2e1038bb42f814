"""Click parameter types shared by commands: a value is checked while the command line is parsed,
so a bad one is one line on stderr (exit 2) before any work starts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any

import click

from ledger.errors import BadSetting
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
        option = param.opts[0] if param is not None and param.opts else "AGE"
        try:
            age = Age(text, points.parse_age(text, option))
            age.cutoff()
        except BadSetting as exc:
            raise BadOption(str(exc)) from None
        except OverflowError:
            oldest = (datetime.now(UTC) - datetime.min.replace(tzinfo=UTC)).days
            raise BadOption(f"{option} {text} reaches back before year 1; give at most {oldest}d") from None
        return age


class BadOption(click.ClickException):
    """One line, as ``cli.context.fails_cleanly`` prints a TrailError (click's usage errors print the usage block)."""

    exit_code = BadSetting.exit_code

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"trail: {self.format_message()}", err=True, file=file)


AGE = AgeType()
