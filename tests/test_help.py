"""Every command's `--help`: it runs, it names no bound nobody chose, and `--task` has its `-t` everywhere."""

from __future__ import annotations

from collections.abc import Iterator

import click
from click.testing import CliRunner

from cli.app import cli


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the app loads a command's module only when asked for it
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_help_runs_and_reads_clean() -> None:
    seen = 0
    for path, command in _commands(cli):
        done = CliRunner().invoke(cli, [*path, "--help"])
        assert done.exit_code == 0, (path, done.output)
        assert "9223372036854775807" not in done.output, path
        for option in command.params:
            if isinstance(option, click.Option) and "--task" in option.opts:
                assert "-t" in option.opts, (path, option.opts)
        seen += 1
    assert seen > 30
