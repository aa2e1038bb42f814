"""Commands that look after the ledger itself rather than a task: moving it, forgetting tasks, its key."""

from __future__ import annotations

import getpass
import os
import sys

import click

from cli.context import Context, emit_json, fails_cleanly, json_option, pass_context
from cli.params import AGE, Age
from ledger.base import atrest
from ledger.base.errors import BadInput, Refused
from ledger.base.location import resolve


@click.command("migrate")
@click.option("--from", "source", required=True, metavar="URL", help="The ledger to copy: PATH, sqlite:PATH or postgresql://...")
@click.option("--to", "target", required=True, metavar="URL", help="Where to copy it (created on first use).")
@click.option("--to-key-file", "to_key_file", metavar="FILE",
              help="Encrypt the copy with the key in FILE (0600; `trail key new --out FILE`).")
@click.option("--to-plain", is_flag=True, help="Write the copy unencrypted (the source is read with its key).")
@json_option
@fails_cleanly
def migrate(source: str, target: str, to_key_file: str | None, to_plain: bool, as_json: bool) -> None:
    """Copy every stored event (and the task registry) to another ledger, hash chains intact.

    The copy is verified on the target afterwards (every event byte for byte, every task's
    chain recomputed). Running it again copies only what is missing, and a target holding
    other events under the same ids is refused. Progress goes to stderr.

    The source is read with TRAIL_CIPHER_KEY / TRAIL_CIPHER_KEY_FILE when it is encrypted; the copy
    is written with the same key unless --to-key-file or --to-plain says otherwise.

    \b
    trail migrate --from sqlite:~/.local/share/tasktrail/ledger.db --to postgresql://me:pw@db:5432/trail
    trail migrate --from old.db --to new.db --to-key-file ~/.config/tasktrail/key   # encrypt a plain ledger
    """
    from ledger.app import migrate as copying

    if to_key_file and to_plain:
        raise BadInput("give --to-key-file FILE or --to-plain, not both")
    cipher = atrest.cipher_env({atrest.KEY_FILE_VAR: to_key_file}) if to_key_file else {} if to_plain else None
    report = copying.run(resolve(source), resolve(target), progress=lambda line: click.echo(line, err=True),
                         target_cipher=cipher)
    if as_json:
        emit_json(report.as_dict())
        return
    click.echo(
        f"{report.copied} events copied, {report.already_there} already there, "
        f"{report.snapshots_copied} snapshots; {report.tasks_verified} task chains verified on {report.target}."
    )


@click.command("forget")
@click.argument("task", required=False, metavar="[TASK]")
@click.option("--older-than", "age", type=AGE, metavar="AGE",
              help="Forget every task idle longer than AGE (180d, 12h).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--actor", default="user", show_default=True, help="Who forgets (kept in the tombstone).")
@json_option
@pass_context
@fails_cleanly
def forget(ctx: Context, task: str | None, age: Age | None, yes: bool, actor: str, as_json: bool) -> None:
    """Remove TASK's content irreversibly, from every store; only a tombstone stays.

    The tombstone keeps the number, id, sha256 of the title, when and by whom, so the
    ledger's own history stays honest. Events, snapshots, archives, the read model (rebuilt
    on next use), diff blobs and capture leftovers go. With --older-than AGE, every task
    whose last event is older than AGE (a retention policy), and every forget that was
    interrupted. Re-running on a forget that was interrupted finishes it. A missing or
    unreadable archive does not stop it: a warning says what it held is not known.
    """
    from ledger.app import forget as forgetting
    from ledger.app import refs
    from ledger.domain.registry import Entry, Tombstone

    if (task is None) == (age is None):
        raise BadInput("give a TASK or --older-than AGE (not both)")
    ledger = ctx.ledger()
    targets: list[Entry | Tombstone]
    if age is not None:
        forgetting.check_registry(ledger)  # which tasks go is read from the task list: it must verify
        targets = [*forgetting.unfinished(ledger, ctx.location), *forgetting.stale(ledger, age.cutoff())]
    elif task is not None and (number := refs.task_number(task)) is not None and not any(
        e.number == number for e in ledger.entries()
    ):
        forgetting.check_registry(ledger)  # the tombstone that names it must be a recorded one
        targets = [forgetting.pending(ledger, number)]  # finish an interrupted forget
    else:
        targets = [ctx.entry(task)]
    if not targets:
        click.echo(f"No task idle longer than {age}.")
        return
    names = ", ".join(f"#{t.number}" + (f" {t.title}" if isinstance(t, Entry) else " (finishing)") for t in targets)
    if not yes:
        if not sys.stdin.isatty():
            raise Refused(f"would forget {names}; pass --yes to confirm when not at a terminal")
        click.confirm(f"Forget {names} irreversibly?", abort=True)
    by = f"{actor} ({getpass.getuser()})"
    done = [forgetting.forget(ledger, ctx.location, t, by, progress=lambda line: click.echo(line, err=True))
            for t in targets]
    for d in done:
        for lost in d.lost:
            click.echo(f"trail: warning: #{d.tombstone.number}: {lost}; the source keys, sessions and diff blobs "
                       "its events named are not known: those blobs and dead letters stay, and a re-import may "
                       "bring those records back", err=True)
    if as_json:
        emit_json([{**d.tombstone.model_dump(mode="json"), "events_deleted": d.events,
                    "files_removed": d.files_removed, "lost": list(d.lost)} for d in done])
        return
    for d in done:
        click.echo(f"Forgot #{d.tombstone.number}: {d.events} events deleted, {d.files_removed} files removed; "
                   f"tombstone kept (title sha256 {d.tombstone.title_sha256[:12]}…).")


@click.group("key")
def key() -> None:
    """Encryption at rest: make the key a ledger's payloads are enciphered with.

    \b
    With TRAIL_CIPHER_KEY (the key itself) or TRAIL_CIPHER_KEY_FILE (a file holding it, mode 0600)
    set, every event, snapshot and view snapshot is stored AES-GCM enciphered (the eventsourcing
    library's own cipher; needs `pip install 'tasktrail[crypto]'`), in SQLite and PostgreSQL alike.
    A new ledger is encrypted from its first event; an existing plain one is not changed in place:
    copy it with `trail migrate --from OLD --to NEW --to-key-file FILE`. Lose the key and the ledger
    cannot be read by anyone, you included. docs/lifecycle.md says what else is and is not encrypted.
    """


@key.command("new")
@click.option("--out", "out", metavar="FILE", help="Write the key to FILE (created 0600, never overwritten) "
              "instead of printing it.")
@click.option("--bytes", "size", type=click.Choice(["16", "24", "32"]), default="32", show_default=True,
              help="Key length (AES-128, -192 or -256).")
@fails_cleanly
def new(out: str | None, size: str) -> None:
    """Make a random key (base64) for TRAIL_CIPHER_KEY or TRAIL_CIPHER_KEY_FILE.

    \b
    trail key new --out ~/.config/tasktrail/key && export TRAIL_CIPHER_KEY_FILE=~/.config/tasktrail/key
    export TRAIL_CIPHER_KEY="$(trail key new)"      # or keep it in your secret manager
    """
    made = atrest.new_key(int(size))
    if out is None:
        click.echo(made)
        return
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise BadInput(f"--out {out}: the file exists; a key is never overwritten (its ledger would be lost)") from None
    except OSError as exc:
        raise BadInput(f"--out {out}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(made + "\n")
    click.echo(f"key written to {out}; set TRAIL_CIPHER_KEY_FILE={out}", err=True)


COMMANDS = [migrate, forget, key]
