"""`trail completion bash|zsh|fish`: click's own completion script for the shell, to source at its start-up.

The script calls the program back with ``_TRAIL_COMPLETE`` (``_TASKTRAIL_COMPLETE`` for the `tasktrail` name)
set, which click answers before any command runs; command names come from the lazy group's list, so
completing one imports nothing of the others."""

from __future__ import annotations

import os
import sys

import click

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    \b
    bash:  eval "$(trail completion bash)"   in ~/.bashrc
    zsh:   eval "$(trail completion zsh)"    in ~/.zshrc
    fish:  trail completion fish > ~/.config/fish/completions/trail.fish
    """
    from click.shell_completion import get_completion_class

    root = ctx.find_root()
    name = os.path.basename(sys.argv[0]) if sys.argv[0] and not sys.argv[0].startswith("-") else "trail"
    name = name if name in ("trail", "tasktrail") else "trail"
    var = f"_{name.replace('-', '_').upper()}_COMPLETE"
    found = get_completion_class(shell)
    assert found is not None  # every name in SHELLS is one of click's
    click.echo(found(root.command, {}, name, var).source())
COMMANDS: list[click.Command] = [completion]
