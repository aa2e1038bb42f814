"""Placeholder; filled in by the next commit."""

import click

COMMANDS: list[click.Command] = []
