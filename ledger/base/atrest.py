"""Encryption at rest: the key a ledger's payloads are enciphered with, from the environment or a key file.

Optional. ``TRAIL_CIPHER_KEY`` holds the key itself (base64 of 16, 24 or 32 random bytes, as
``trail key new`` prints it); ``TRAIL_CIPHER_KEY_FILE`` names a file holding it, which must be its
owner's alone (0600 or stricter: a key others can read protects nothing). The key goes to the
``eventsourcing`` library's own AES-GCM cipher (``CIPHER_TOPIC`` / ``CIPHER_KEY``), which the mapper
applies to every event and snapshot payload and ``ledger.app.views`` to every view snapshot.

Standard library only: ``open_ledger`` and the hook's fast paths ask whether a key is set before
anything else loads. Which AES package is there is looked up, not imported.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import os
import stat
from collections.abc import Mapping

from ledger.base.errors import BadSetting

KEY_VAR = "TRAIL_CIPHER_KEY"
KEY_FILE_VAR = "TRAIL_CIPHER_KEY_FILE"
SIZES = (16, 24, 32)

CIPHERS = (
    # The library's two AES-GCM ciphers read each other's output (nonce | tag | ciphertext), so a ledger does not
    # depend on which one wrote it. Its ``cryptography`` one first (the ``crypto`` extra): 31 us to encipher and
    # 37 us to decipher 1.5 KB here, against 950 us and 930 us for ``eventsourcing.cipher`` on pycryptodome, which
    # builds its GCM tables anew for every payload (reading 20k events took 25 s more).
    ("cryptography", "eventsourcing.cryptography:AESCipher"),
    ("Crypto", "eventsourcing.cipher:AESCipher"),
)


def key_set(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a key is asked for (either variable set and not empty), without reading or checking it."""
    env = os.environ if environ is None else environ
    return bool(env.get(KEY_VAR, "").strip() or env.get(KEY_FILE_VAR, "").strip())


def cipher_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The library's settings for the key asked for ({} when none is), or ``BadSetting`` naming what is wrong."""
    env = os.environ if environ is None else environ
    given = env.get(KEY_VAR, "").strip()
    path = env.get(KEY_FILE_VAR, "").strip()
    if given and path:
        raise BadSetting(f"both {KEY_VAR} and {KEY_FILE_VAR} are set; set one")
    if path:
        given, where = _read_key_file(path), f"{KEY_FILE_VAR} ({path})"
    elif given:
        where = KEY_VAR
    else:
        return {}
    check_key(given, where)
    return {"CIPHER_TOPIC": _cipher_topic(), "CIPHER_KEY": given}


def check_key(text: str, where: str) -> None:
    """``BadSetting`` unless ``text`` is base64 of a 16-, 24- or 32-byte key."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise BadSetting(f"{where} is not a base64 key; make one with `trail key new`") from None
    if len(raw) not in SIZES:
        raise BadSetting(f"{where} holds a {len(raw)}-byte key; AES needs 16, 24 or 32 bytes (`trail key new`)")


def new_key(size: int = 32) -> str:
    """A fresh random key, base64, as the library's ``AESCipher.create_key`` makes one."""
    if size not in SIZES:
        raise BadSetting(f"a key is 16, 24 or 32 bytes, not {size}")
    return base64.b64encode(os.urandom(size)).decode("ascii")


def _read_key_file(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise BadSetting(f"{KEY_FILE_VAR}: cannot read {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise BadSetting(f"{KEY_FILE_VAR}: {path} is not a file")
        if mode & 0o077:
            raise BadSetting(
                f"{KEY_FILE_VAR}: {path} is readable by others (mode {stat.S_IMODE(mode):04o}); chmod 600 {path}"
            )
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        return data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise BadSetting(f"{KEY_FILE_VAR}: {path} is not a base64 key; make one with `trail key new`") from None


def _cipher_topic() -> str:
    for package, topic in CIPHERS:
        if importlib.util.find_spec(package) is not None:
            return topic
    raise BadSetting(
        f"{KEY_VAR}/{KEY_FILE_VAR} is set but no AES package is installed: pip install 'tasktrail[crypto]'"
    )
