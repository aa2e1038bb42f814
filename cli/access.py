"""``trail grant``, ``trail revoke``, ``trail access``: who may read and write which project (PostgreSQL)."""

from __future__ import annotations

import click

from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context


@click.command("grant")
@click.argument("role")
@click.option("--project", "project", required=True, metavar="P",
              help="The project: a folder here (taken to its git root) or a project path as tasks record it.")
@click.option("--read", "access", flag_value="read", help="ROLE may read the project's tasks.")
@click.option("--write", "access", flag_value="write", help="ROLE may read and write them.")
@pass_context
@fails_cleanly
def grant(ctx: Context, role: str, project: str, access: str | None) -> None:
    """Let ROLE (a PostgreSQL role: a person or an agent) read or write project P's tasks.

    Run by the ledger's owner. The server enforces it: without a grant a role sees no row of the
    project, through trail or raw SQL. Granting again changes read to write or back.
    """
    from ledger.app import access as granting
    from ledger.base.errors import BadInput

    if access is None:
        raise BadInput("say --read or --write")
    done = granting.grant(ctx.ledger(), role, granting.project_named(project), access == "write")
    click.echo(f"{done.role} may {access} {done.project}.")


@click.command("revoke")
@click.argument("role")
@click.option("--project", "project", metavar="P", help="The project (default: every project ROLE has).")
@pass_context
@fails_cleanly
def revoke(ctx: Context, role: str, project: str | None) -> None:
    """Take ROLE's grant on project P away (every grant of ROLE's without --project). Run by the owner."""
    from ledger.app import access as granting

    named = None if project is None else granting.project_named(project)
    granting.revoke(ctx.ledger(), role, named)
    click.echo(f"{role} no longer has {named or 'any project'}.")


@click.command("access")
@click.option("--project", "project", metavar="P", help="Only this project's grants.")
@json_option
@pass_context
@fails_cleanly
def access(ctx: Context, project: str | None, as_json: bool) -> None:
    """List the grants: role, project, read or write (a grantee sees its own)."""
    from ledger.app import access as granting

    named = None if project is None else granting.project_named(project)
    found = granting.grants(ctx.ledger(), named)
    if as_json:
        emit_json([g.as_dict() for g in found])
        return
    if not found:
        click.echo("No grants: only the ledger's owner reads and writes it.")
    for g in found:
        click.echo(f"{g.role}\t{'write' if g.write else 'read'}\t{g.project}")


COMMANDS = [grant, revoke, access]
