"""Redaction: secrets are replaced by a marker before anything is written to disk.

A marker keeps the kind of secret and a short hash of it, ``[REDACTED:github-token:3f2a9c1b]``,
so two mentions of one secret stay recognisable without revealing it. Every boundary where
bytes are written calls this module: the ledger's write path (``redact_fields``) for events,
the capture hook for its inbox rows and dead letters, ``trail changed`` for its diff blobs.
Users add patterns in ``TRAIL_HOME/redact.toml`` (or ``redact.json``)::

    [[pattern]]
    name = "internal-token"        # the marker's kind
    regex = "itk_[A-Za-z0-9]{20,}" # Python regex; group 1, when present, is the part replaced

Detection works on whole text, never line by line: every pattern runs over the full string,
the spans found are merged, and each merged span becomes one marker. A list of strings (an
argv, the lines of a patch) is scanned as its elements joined by newlines, so a secret split
across elements (``echo aws_secret_access_key = …`` as separate argv words, a private key
whose lines are separate list items) is found and its pieces are replaced in every element.

The detectors: vendor formats (below), header/flag/URL forms, assignments whose key names a
secret, and two measures taken from ``detect-secrets`` without loading it (its import alone
costs 110-240 ms, more than the whole hook): Shannon entropy of assigned or quoted values, and
base64 runs that decode to text holding a secret. The module is standard library only at
import: the capture hook loads it on every tool call.
"""

from __future__ import annotations

import bisect
import datetime
import itertools
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from ledger.base.errors import BadSetting, TrailError
from ledger.base.home import home_dir
from ledger.base.lazyregex import LazyPattern, lazy
from ledger.domain import ruleset

MARKER_PREFIX = "[REDACTED:"


class Pattern(NamedTuple):
    name: str
    regex: re.Pattern[str]
    group: int = 0
    """The group replaced by the marker (0: the whole match)."""
    hints: tuple[str, ...] = ()
    """Lower-case substrings one of which any match contains: text without them skips the regex
    (most text holds no secret, and every appended string is scanned). Empty: always run."""
    check: Callable[[re.Match[str]], bool] | None = None
    """A test of each match (entropy, a decoded payload): False keeps it. None: every match counts."""
    gate: re.Pattern[str] | None = None
    """Searched in the text lower-cased as ``(?i)`` reads it (``folded_lower``), after the hints: a regex
    that every match of ``regex`` contains a match of, but cheap where ``regex`` is not (no match: the
    regex is not run). There ``(?i)`` matches an ASCII letter only to an ASCII letter, of either case,
    as lower-casing takes it (what outside ASCII a match holds, spaces and values, the gate matches as
    the regex does, or not at all)."""
    needs: str = ""
    """Characters one of which every match contains, looked for (each with ``in``, far cheaper than
    any regex) before the gate: none in the text, the pattern is not run. Empty: no such test."""
    find: Callable[[str], Sequence[Found | re.Match[str]]] | None = None
    """A search giving the matches ``regex.finditer`` gives that pass ``check``: a linear-time one for a
    regex Python's engine runs in quadratic time on some text, or one that skips most texts at once
    (None: ``regex`` itself is run, then ``check``)."""


class Found(NamedTuple):
    """A match a ``Pattern.find`` found: its span, as ``re.Match.span`` (group 0) gives it."""

    start: int
    end: int

    def span(self, group: int = 0) -> tuple[int, int]:
        return (self.start, self.end)


# -- tests of candidate matches ------------------------------------------------------------------

_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=")
_HEX = lazy(r"[0-9a-fA-F]+")
_HEX_DIGITS = frozenset("0123456789abcdef")
BASE64_ENTROPY_LIMIT = 4.5
"""``detect-secrets``' default limit for its Base64HighEntropyString plugin (bits per character)."""


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character, as ``detect-secrets`` computes it."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def high_entropy(value: str) -> bool:
    """A value random enough to be a key: base64-like, mixed letters and digits, entropy over the limit.

    Short strings cannot reach 4.5 bits per character (20 distinct characters give 4.32), so
    the limit is eased to ``log2(len) - 0.35`` below 30 characters. Hex-only values (sha256,
    commit ids, UUIDs) are never taken on entropy alone: a coding ledger is full of them.
    """
    value = value.rstrip("=")
    if len(value) < 20 or _HEX.fullmatch(value.replace("-", "")):
        return False
    if value.isascii():
        # In ASCII a digit and a letter are just these (``isdigit``/``isalpha`` take other scripts' too): one
        # search each, not a Python step a character (a base64 run of letters alone was read whole).
        mixed = _DIGIT.search(value) is not None and _LETTER.search(value) is not None
    else:
        mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    if not mixed:
        return False
    limit = min(BASE64_ENTROPY_LIMIT, math.log2(len(value)) - 0.35)
    return entropy(value) >= limit


_DIGIT = lazy(r"[0-9]")
_LETTER = lazy(r"[A-Za-z]")

_ID_KEY = lazy(
    r"(?i)(?:^|[^a-z])(?:id|ids|uuid|guid|sha\d*|hash|digest|checksum|integrity|etag|commit|rev|version|path|file|url)$"
)
"""Keys whose values are identifiers, not secrets (``detect-secrets`` skips id strings too)."""


def _assigned_key(text: str, start: int) -> str | None:
    """The key a value at ``start`` is assigned to (``key = "…``, ``"key": "…``, ``KEY=…``), "" for a
    quoted value with no key, None for a value that is neither assigned nor quoted."""
    i = start
    quoted = i > 0 and text[i - 1] in "\"'`"
    i -= quoted
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if not (i > 0 and text[i - 1] in ":="):
        return "" if quoted else None
    i -= 1
    i -= i > 0 and text[i - 1] == ":"  # :=
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    i -= i > 0 and text[i - 1] in "\"'"
    end = i
    while i > 0 and end - i < 100 and (text[i - 1].isalnum() or text[i - 1] in "_.-"):
        i -= 1
    return text[i:end]


def _entropy_match(match: re.Match[str]) -> bool:
    value = match.group(0)
    if len(value) < 20 or value.startswith(("sha256-", "sha384-", "sha512-")):  # SRI hashes are not secrets
        return False
    if value.isascii() and (_DIGIT.search(value) is None or _LETTER.search(value) is None):
        # ``high_entropy`` takes no ASCII value without a digit and a letter, nor any part of one (what
        # ``_without_ids`` leaves): decided before the key is read back a character at a time (most runs).
        return False
    key = _assigned_key(match.string, match.start())
    if key is None or _ID_KEY.search(key):
        return False  # neither assigned nor quoted; or the value of an id
    if value[0] == "/" and _file_path_at(match.string, match.start(), key):
        value = _without_ids(value)
        if _words_only(value) or _named_segments(value):
            return False
    return high_entropy(value)


# -- file-system paths ---------------------------------------------------------------------------
#
# A run of base64 characters takes ``/`` in, so a quoted path is one run, judged whole: words, then a
# UUID or a hash, reach 4.5 bits a character together though neither does alone (a Claude Code scratchpad
# path, ``"/mnt/c/Users/…/Temp/claude/D--proj/<uuid>/scratchpad/run.sh"``, was stored masked). In a
# file-system path the UUID and hex segments are set aside and the rest is judged as before: they are
# what ``high_entropy`` never takes alone (ids and hashes, not keys), and what is left, the path's words,
# is masked as it would be without them. A UUID can be a key (Heroku's API keys, some webhook URLs), so
# nothing is set aside where one would be: in a URL (a run after ``//`` or ``host:``), in a relative path
# (a base64 key holds slashes too), under a key that names a secret (``--token=/…``), or in a path one of
# whose segments does (``/hooks/…``, ``/api/keys/…``).

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ID_SEGMENT = lazy(r"/(?:" + _UUID + r"|[0-9a-fA-F]{7,})(?=/|$)|(?<![0-9a-zA-Z])" + _UUID + r"(?![0-9a-zA-Z])")
"""A UUID or hex segment of a path (a commit, a content hash), with its slash; or a UUID inside one."""
_SECRET_WORDS = ("key", "token", "secret", "passw", "auth", "credential", "hook", "cookie", "signature")
"""Words in a key or a path segment that say the id beside it may be a secret (``/hooks/<uuid>``)."""


def _names_secret(text: str) -> bool:
    lower = text.lower()
    return any(word in lower for word in _SECRET_WORDS)  # a substring test each: far cheaper than a regex


def _without_ids(value: str) -> str:
    """A path run with its UUID and hex segments taken out (the whole run when a segment names a secret)."""
    if _names_secret(value):
        return value
    return _ID_SEGMENT.sub("", value)


_WORD = lazy(r"\d*[a-z]+\d*|[A-Z][a-z]+\d*|[A-Z]+\d*|\d+")
"""A word of a path's segment: letters of one case (or one capital, then small letters), digits after them or
before small ones (``v2``, ``x64``, ``4te``, ``USER``), or digits alone."""
_WORD_JOINS = lazy(r"[-_.+@]+")


def _words_only(path: str) -> bool:
    """Whether ``path`` (a rooted path, its id segments set aside) is made of words alone, joined by ``-``,
    ``_``, ``.``: ``/home/USER/projects/spotter-4te/_build/dev/dialyxir_erlang-28``. Judged whole, such a path
    reaches the entropy limit once it is long and varied (real paths were stored masked); a segment by
    segment test would let a base64 key through that starts with ``/`` and has more (its segments are short),
    but a key's random characters change case within a run of letters, or put digits inside one, nearly
    always: one such segment and the path is judged whole, as before. A segment naming a secret
    (``/api/keys/...``) is never words only."""
    if _names_secret(path):
        return False
    for segment in path.split("/"):
        for word in _WORD_JOINS.split(segment):
            if word and _WORD.fullmatch(word) is None:
                return False
    return True


# A path of names, judged segment by segment. ``_words_only`` takes each piece of a segment as one word, so a
# CamelCase name (``OpenPrintKit``, ``LK5Pro``), a plural acronym (``APIs``) or a generated folder name
# (``codemie-enterprise-sznbGEWF-py3``, macOS's ``/var/folders/hs/pt2n3nn16k…0000gn/T``) had the path judged
# whole, and a long real path reaches the limit. Shapes alone are no guard: almost any run of letters splits
# into humps, and with the shapes and each segment's entropy alone 1.5% of random keys made of humps (the test's)
# were kept that the whole judgement masks. What random letters lack is a word's spelling (``_sayable``): with it,
# 1 of 300,000 such keys. A random base64 key has no piece of these shapes: 0 of 200,000.

_MAC_TEMP = lazy(r"(?:/private)?/var/folders/[0-9a-z_+-]{2}/[0-9a-z_+-]{30}(?=/|$)")
"""macOS's per-user folder, under which ``$TMPDIR`` and the caches are: two characters, then thirty derived from
the user's UUID and uid (``…0000gn``), the same in every such path of one user; no key is written there."""
_CAMEL = lazy(
    r"(?:[A-Z]{2,4}\d*(?=[A-Z][a-z])|[a-z]{2,}(?=[A-Z]))?(?:[A-Z][a-z]{2,})+(?:[A-Z]{2,4})?\d*|[A-Z]{2,5}s"
)
"""A CamelCase name: humps of a capital and two or more small letters; before them an acronym, its digits after
it (``LK5Pro``), or small letters (``openPrint``); after them an acronym (``OpenAI``), then digits; or a plural
acronym (``APIs``)."""
_HUMP = lazy(r"[A-Z]?[a-z]{2,}")
"""A hump of a name, its capital and its small letters: what ``_sayable`` reads (lower-cased)."""
_STAMP = lazy(r"\d{8}T\d{4,6}Z?")
"""An ISO 8601 time in its basic form, as file names carry it (``20260710T000000Z``)."""
_HEX_PIECE = lazy(r"[0-9a-f]{7,}|[0-9A-F]{7,}")
"""A hash or a commit joined to a word in one segment (``<sha>_20260710T000000Z``): what ``_without_ids`` sets
aside as a segment of its own."""
_PIECES = lazy(r"([-_.+@]+)")
_VOWELS = frozenset("aeiouy")
_PAIR_TEXT = (
    "bbbjblbnbrbschckclcrcsctdbdddgdldmdndrdsdwffflfrfsftggghglgngrgsgthphrhtkdklknksktlblcldlflglklllmln"
    "lplsltlvlwmbmmmnmpmsncndnfngnknlnnnsntnvpfphplppprpsptrbrcrdrfrgrkrlrmrnrprrrsrtrvscshskslsmsnspsqss"
    "stswtcthtltmtrtstttwwkwlwnwrwsxcxpxt"
)
_PAIRS = frozenset(_PAIR_TEXT[i : i + 2] for i in range(0, len(_PAIR_TEXT), 2))
"""Two consonants English spells side by side (``print``, ``length``, ``desktop``); of the 400 pairs of
consonants random letters make, 118."""
_SHORT = 8
"""At most this long, one piece of a path may be of no shape (a generated suffix: Poetry's ``sznbGEWF``,
``mkstemp``'s ``Gkv5xW``), beside a spelt word in its segment: short of the 20 characters any value needs to be
taken for a key."""


def _sayable(letters: str) -> bool:
    """Whether a run of small letters is spelt as a word: a vowel (not ``y`` alone), and every pair of
    letters has a vowel or ``y`` in it, or is in ``_PAIRS``."""
    if not any(c in "aeiou" for c in letters):
        return False
    return all(a in _VOWELS or b in _VOWELS or a + b in _PAIRS for a, b in itertools.pairwise(letters))


def _camel(piece: str) -> bool:
    return _CAMEL.fullmatch(piece) is not None and all(_sayable(hump.lower()) for hump in _HUMP.findall(piece))


def _named_segments(path: str) -> bool:
    """Whether ``path`` (a rooted path, its id segments set aside) is kept segment by segment: each segment is
    words alone (as ``_words_only`` reads them) or is made of pieces that are words, CamelCase names
    (``_camel``), times or hashes, with at most one short piece of no shape in the whole path, and its entropy
    is under the limit ``high_entropy`` sets for a value of its length; macOS's per-user folder is set aside.
    One segment that is none of these, or a segment naming a secret, and the path is judged whole."""
    if _names_secret(path):
        return False
    if (folder := _MAC_TEMP.match(path)) is not None:
        path = path[folder.end() :]
    odd = False  # the short piece of no shape, once seen
    for segment in path.split("/"):
        parts = _PIECES.split(segment)
        pieces, joins = parts[0::2], parts[1::2]
        if all(not piece or _WORD.fullmatch(piece) for piece in pieces):
            continue
        for at, piece in enumerate(pieces):
            if (
                not piece or _WORD.fullmatch(piece) or _camel(piece) or _STAMP.fullmatch(piece)
                or _HEX_PIECE.fullmatch(piece)
            ):
                continue
            beside = joins[max(at - 1, 0) : at + 1]
            if odd or len(piece) > _SHORT or not beside or any(join not in ("-", "_", ".") for join in beside):
                return False
            if not any(len(word) >= 5 and word.islower() and _sayable(word) for word in pieces):
                return False  # a generated suffix is glued to a name (``codemie-enterprise``), not to others
            odd = True
        if entropy(segment) >= min(BASE64_ENTROPY_LIMIT, math.log2(len(segment)) - 0.35):
            return False
    return True


def _file_path_at(text: str, start: int, key: str) -> bool:
    """Whether the run at ``start`` (it starts with ``/``) is a rooted file-system path: ``/x`` after a
    quote, a space or ``=``, or ``C:/x`` after a drive letter; not ``//`` (a URL, a share), not after a
    key that names a secret."""
    if text.startswith("//", start) or _names_secret(key):
        return False
    before = text[start - 1] if start else ""
    if before == ":":  # a drive letter alone before it, not a host or a scheme
        return start >= 2 and text[start - 2].isalpha() and (start < 3 or not text[start - 3].isalnum())
    return before in "\"'` \t=" or not before


_ASCII_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\n\r\t"
"""The ASCII characters ``_decoded`` counts as printable (``str.isprintable``, or a line or tab break)."""
_CONTROL = bytes(sorted(set(range(0x20)) - {0x09, 0x0A, 0x0D} | {0x7F}))
"""The ASCII characters it does not."""


def _decoded(token: str) -> str | None:
    """``token`` decoded from base64 (standard or URL-safe) when that gives text, else None."""
    import base64  # here: most hook payloads hold no base64 run, and the hook imports this module
    import binascii

    try:
        data = (base64.urlsafe_b64decode if ("-" in token or "_" in token) else base64.b64decode)(
            token + "=" * (-len(token) % 4)
        )
        # Each control byte is a character of its own that is not printable, and the text has at
        # most as many characters as bytes: over 5% of them, and it cannot pass the test below
        # (random bytes, most runs decoded, fail here, before a failed UTF-8 decode's exception).
        if len(data) - len(data.translate(None, _CONTROL)) > 0.05 * len(data):
            return None
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if data.isascii():  # the same count, without a Python step a character
        printable = len(data) - len(data.translate(None, _ASCII_PRINTABLE))
    else:
        printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    return text if text and printable >= 0.95 * len(text) else None


def _base64_secret(match: re.Match[str]) -> bool:
    token = match.group(0)
    verdict = _BASE64_VERDICTS.get(token)
    if verdict is None:
        text = None if _HEX.fullmatch(token) else _decoded(token)  # hex: a hash or an id, not encoded text
        verdict = text is not None and bool(_spans(text, _PLAIN))
        if len(token) <= 1024:
            if len(_BASE64_VERDICTS) >= 4096:
                _BASE64_VERDICTS.clear()
            _BASE64_VERDICTS[token] = verdict
    return verdict


_WRAPPED = lazy(
    r"(?<![A-Za-z0-9+/=])[+-]?[A-Za-z0-9+/]{40,}={0,2}"
    r"(?:(?:[ \t]*\r?\n[ \t]*|[ \t]+)[+-]?[A-Za-z0-9+/]{4,}={0,2}(?![A-Za-z0-9+/=]))+"
)
"""Lines of base64 or hex, the first of 40+ characters; apart on lines, or on one (``echo`` of them)."""
_RUN40 = b"a" * 40


_LINE_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_LINE_MARKS = bytes(b"a"[0] if i in _LINE_CHARS else b" "[0] for i in range(256))
"""Each byte as the first line of ``_WRAPPED`` sees it: one of its characters (a), or not (space)."""
_LINE40 = re.compile(rb"a{40,}")


def _wrapped(text: str) -> list[Found]:
    """``_WRAPPED``'s matches that ``_wrapped_secret`` takes, looked for only where the text has a run of
    40 base64 characters (one byte-map test: most texts have none), and tried only where such a run of
    its first line's characters starts (or at a dash just before one). Its look-behind refuses any other
    place, which ``finditer`` tried one by one (a 20 KB output: most of the pattern's time)."""
    marks = _LAST_MARKS[1] if _LAST_MARKS[0] is text else _marks(text)
    if _RUN40 not in marks:
        return []
    return [Found(*match.span()) for match in _wrapped_matches(text) if _wrapped_secret(match)]


def _wrapped_matches(text: str) -> list[re.Match[str]]:
    """``list(_WRAPPED.finditer(text))``, tried only where a match may start."""
    found: list[re.Match[str]] = []
    after = 0  # where the last match ended: as finditer, the next one starts there or later
    for run in _LINE40.finditer(text.encode("latin-1", "replace").translate(_LINE_MARKS)):
        start = run.start()
        for at in (start - 1, start) if start and text[start - 1] == "-" else (start,):
            if at >= after and (match := _WRAPPED.match(text, at)) is not None:
                found.append(match)
                after = match.end()
                break
    return found


def _wrapped_secret(match: re.Match[str]) -> bool:
    """Lines of base64 or hex holding a wrapped block (``base64`` wraps at 76, PEM at 64, ``xxd -p`` at
    60: equal widths, the last line shorter) that, joined, decodes to text holding a secret; or base64
    of 3+ lines of 60+ columns that is no text, key material (a PEM body whose BEGIN and END lines are
    gone). The whole run of lines is the match: blocks of other widths beside one are taken with it."""
    lines = match.group(0).split()
    if len({line[0] for line in lines}) == 1 and lines[0][0] in "+-":
        # A diff's marks, or the block's own first characters: both readings are tried.
        return _wrapped_blocks(lines) or _wrapped_blocks([line[1:] for line in lines])
    return _wrapped_blocks(lines)


def _wrapped_blocks(lines: list[str]) -> bool:
    at = 0
    while at < len(lines):
        width, end = len(lines[at]), at + 1
        while end < len(lines) and len(lines[end]) == width:
            end += 1
        if end < len(lines) and len(lines[end]) < width:
            end += 1  # the block's last, shorter line
        if end - at >= 2 and _wrapped_block(lines[at:end], width):
            return True
        at = end
    return False


def _wrapped_block(block: list[str], width: int) -> bool:
    joined, count = "".join(block), len(block)
    if _HEX.fullmatch(joined):
        if len(joined) % 2:
            return False
        raw = bytes.fromhex(joined)
        # ASCII text only (hex of binary is a hash list or a dump, not an encoded secret).
        return raw.isascii() and not raw.translate(None, _ASCII_PRINTABLE) and bool(_spans(raw.decode(), _PLAIN))
    text = _decoded(joined.rstrip("="))
    if text is not None:
        return bool(_spans(text, _PLAIN))
    # A listing of paths of one width (``ls -d /var/lib/docker/overlay2/*/diff``: a hash in each) is no key.
    return count >= 3 and width >= 60 and "=" not in joined.rstrip("=") and not _path_lines(block)


def _path_lines(block: list[str]) -> bool:
    """Whether every line is a rooted path (a diff's mark before it, if any, read off) and the lines' words,
    their UUID and hex segments set aside, are no key: judged together, one entropy for the block (a line
    at a time cost a 1 MiB listing twice the time of the rest of redaction)."""
    paths = [line[1:] if line[0] in "+-" else line for line in block]
    if not all(path[:1] == "/" and path[1:2] != "/" for path in paths):
        return False
    return not high_entropy("".join(_without_ids(path) for path in paths))


_BASE64_VERDICTS: dict[str, bool] = {}
"""``_base64_secret`` by token: its verdict rests on the token alone, and runs recur from batch to
batch (a batch's ``Redactor`` remembers only its own texts): the bench workload's 10 batches of
1,000 events check 5,492 runs, 3,099 of them distinct."""


# -- the built-in detectors, in priority order ---------------------------------------------------

_RUN = lazy(r"[A-Za-z0-9+/_-]{16,}={0,2}")
"""A run of base64/base64url characters: scanning left to right, each match is a whole run."""

_KEY_WORDS = (
    r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|SECRET[_-]?KEY|"
    r"PRIVATE[_-]?KEY(?:[_-]?ID)?|CREDENTIALS?|AUTH[_-]?KEY)"
)
_PLACEHOLDER = r"(?!\[REDACTED|\$|<|\*\*\*|(?:true|false|null|none)\b)"
_SEP = r"(?:\\[rn]|[\s\"'>|,-])+"  # between the lines of a key body: whitespace, escaped newlines, diff marks
_QUOTED = r"([\"'])((?:(?!\1)[^\\]|\\.){1,200})\1"
"""A quoted value (group 2 its inside), with backslash escapes; across lines (an argv split)."""
_MYSQL = r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlshow|mariadb|mariadb-dump)\b"

_KEY_END = lazy(r"-----END[A-Z0-9\s]*PRIVATE\s+KEY[A-Z\s]*-----")
_SEP_REVERSED = r"(?:[rn]\\|[\s\"'>|,-])+"
_B64_REVERSED = r"(?:[A-Za-mo-qs-z0-9+/=]|[rn](?!\\))"  # an r or n after a backslash is an escape's
_KEY_BODY_REVERSED = lazy(
    r"(?:" + _SEP_REVERSED + _B64_REVERSED + r"{1,15})?(?:" + _SEP_REVERSED + _B64_REVERSED + r"{16,})*"
    # The first line (the last read) may start with an r or n right after a backslash.
    + _SEP_REVERSED + r"(?:" + _B64_REVERSED + r"{15,}[rn](?=\\)|" + _B64_REVERSED + r"{16,})(?![A-Za-z0-9+/=])"
)
"""The lines of a key body before its END line, read backwards from the END (``_SEP`` reversed)."""


def _key_bodies(text: str) -> list[Found]:
    """The cut-off key bodies the regex of that pattern finds, found from each END line backwards.

    Forwards, Python's engine tries the body at every line of a run of base64 lines and reads each
    try to the run's end: quadratic in the run (64 KiB of such lines took over 9 s). Backwards from
    an END line, the body is read once; the text is reversed once, and a body is looked for only
    after the previous one (as ``finditer`` resumes after a match)."""
    found: list[Found] = []
    backwards: str | None = None
    floor = 0
    at = text.find("-----END")
    while at >= 0:
        end = _KEY_END.match(text, at)
        if end is not None:
            if backwards is None:
                backwards = text[::-1]
            size = len(text)
            body = _KEY_BODY_REVERSED.match(backwards, size - at, size - floor)
            if body is not None:
                found.append(Found(at - (body.end() - body.start()), end.end()))
                floor = end.end()
                at = text.find("-----END", floor)
                continue
        at = text.find("-----END", at + 1)
    return found


_ASSIGNED = lazy(r"(?:passw(?:or)?d|passphrase|secret|token|key(?:[_-]?id)?|credentials?)[\"']?\s*[:=]")
"""A key word's end, then [:=]: what every assignment to a secret key holds."""

_KEY_WORD_END = lazy(
    r"(?:passw(?:or)?d|passphrase|secret|token|key(?:[_-]?id|_base)?|credentials?)(?![a-z0-9_.-])"
)
"""In a lower-cased text, a key word ending a run of key characters: where the key of every assignment
pattern ends (its key word is followed by a quote, a space, : or =, none of them key characters)."""
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
"""What ``(?i)[A-Za-z0-9_.-]`` matches, in a text lowered by ``folded_lower``."""
_FOLDED = ("\u0130", "\u0131", "\u017f", "\u212a")
"""The characters besides ASCII that ``(?i)`` matches to an ASCII letter (dotted and dotless I to i, the
long s to s, the Kelvin sign to k); U+0130 and the Kelvin sign are also the only characters whose lower
case is longer than one character or, from outside ASCII, in it."""
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _holds_folded(text: str) -> bool:
    """Whether ``text`` holds one of ``_FOLDED``: only then does its ``lower`` differ from ``folded_lower``."""
    return not text.isascii() and any(char in text for char in _FOLDED)


def folded_lower(text: str) -> str:
    """``text`` lower-cased as ``(?i)`` reads it, a character for a character: each of ``_FOLDED`` as the
    ASCII letter it matches (plain ``lower`` keeps U+0131 and U+017F, and makes U+0130 two characters),
    so every other character outside ASCII stays outside it. A text holding none of them: ``lower``."""
    return text.translate(_FOLD).lower() if _holds_folded(text) else text.lower()


_LAST_KEYS: tuple[str | None, list[tuple[int, int]]] = (None, [])
"""The text ``_key_runs`` last read and its runs: the assignment patterns ask for them in turn."""


def _key_runs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each run of key characters that ends in a key word, in order: read on the text as
    ``(?i)`` reads it (``folded_lower``), whose characters line up with the text's. (On plain ``lower``, a
    text holding one of ``_FOLDED`` had the whole regex run over it: a 3 KB web search result with
    a Turkish name spelt with a dotless i cost 6 ms, a fifth of its log's import.)"""
    global _LAST_KEYS
    if _LAST_KEYS[0] is text:
        return _LAST_KEYS[1]
    lower = folded_lower(text)
    runs = []
    for hit in _KEY_WORD_END.finditer(lower):
        start = hit.start()
        while start > 0 and lower[start - 1] in _KEY_CHARS:
            start -= 1
        runs.append((start, hit.end()))
    _LAST_KEYS = (text, runs)
    return runs


def _assignments(regex: re.Pattern[str]) -> Callable[[str], list[re.Match[str]]]:
    """``list(regex.finditer)`` for an assignment pattern (a run of key characters ending in a key word,
    then the rest), tried only at the start of each run that ends in a key word.

    Run over the whole text, the pattern tries at every character, and each try reads the key characters
    ahead to the run's end and back (most of an import's redaction time, on prose and code that hold a
    key word somewhere). Its key ends where its run does (``_KEY_WORD_END``), so a match starts in such a run:
    at the run's start for the patterns that refuse a key character before them, and for the one that
    does not, at the earliest place it may (a match from a later place in the run is one from there)."""

    def find(text: str) -> list[re.Match[str]]:
        runs = _key_runs(text)
        found: list[re.Match[str]] = []
        after = 0  # where the last match ended: as finditer, the next one starts there or later
        for start, end in runs:
            at = max(start, after)
            if at < end and (match := regex.match(text, at)) is not None:
                found.append(match)
                after = match.end()
        return found

    return find

_GLUED = r"(?<![A-Za-z0-9])"
"""Before a vendor token: no letter or digit. Not ``\b``: a token glued to a word by an underscore
(``key_ghp_…``, ``MY_sk-…``) has no word boundary before it, and was missed."""

def _assignment(
    regex: re.Pattern[str], group: int, hints: tuple[str, ...], gate: re.Pattern[str], needs: str
) -> Pattern:
    """An assignment pattern, found by ``_assignments``."""
    return Pattern("assignment", regex, group, hints, gate=gate, needs=needs, find=_assignments(regex))


BUILTIN: tuple[Pattern, ...] = (
    Pattern(
        "private-key",
        # An unterminated block (a cut tail) is redacted to the end of the text.
        lazy(
            r"-----BEGIN[A-Z0-9\s]*PRIVATE\s+KEY[A-Z\s]*-----.*?(?:-----END[A-Z0-9\s]*PRIVATE\s+KEY[A-Z\s]*-----|\Z)",
            re.S,
        ),
        hints=("-----begin",),
    ),
    Pattern(
        "private-key",
        # A key body whose BEGIN line was cut off (an output tail): the base64 lines before its END.
        lazy(
            r"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/=]{16,}" + _SEP + r")+(?:[A-Za-z0-9+/=]{1,15}" + _SEP + r")?"
            + _KEY_END.pattern
        ),
        hints=("-----end",),
        find=_key_bodies,
    ),
    Pattern("anthropic-key", lazy(_GLUED + r"sk-ant-[A-Za-z0-9_-]{20,}"), hints=("sk-ant-",)),
    Pattern("openai-key", lazy(_GLUED + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), hints=("sk-",)),
    Pattern(
        "stripe-key", lazy(_GLUED + r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
        hints=("_live_", "_test_", "whsec_"),
        # Led by a character set, where the regex's look-behind has it try at every character.
        gate=lazy(r"_(?:live|test)_[a-z0-9]{16}|whsec_[a-z0-9]{24}"),
    ),
    Pattern(
        "github-token", lazy(_GLUED + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Pattern("aws-access-key", lazy(_GLUED + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), hints=("akia", "asia")),
    Pattern(
        "slack-webhook",
        lazy(r"\bhttps://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{8,}"),
        hints=("hooks.slack.com",),
    ),
    Pattern("slack-token", lazy(_GLUED + r"(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"), hints=("xox", "xapp-")),
    Pattern("npm-token", lazy(_GLUED + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), hints=("npm_",)),
    Pattern(
        "npm-token",  # .npmrc: //registry.example/:_authToken=…, _auth=…, _password=…
        lazy(r"(?i):?_(?:authToken|auth|password)\s*=\s*[\"']?" + _PLACEHOLDER + r"([^\s\"']{3,})"),
        group=1,
        hints=("_auth", "_password"),
    ),
    Pattern("google-api-key", lazy(_GLUED + r"AIza[0-9A-Za-z_-]{35,}"), hints=("aiza",)),
    # Issue 23's vendor kinds, in the forms gitleaks' rules give them.
    Pattern("google-oauth-secret", lazy(_GLUED + r"GOCSPX-[A-Za-z0-9_-]{28}"), hints=("gocspx-",)),
    Pattern(
        "gitlab-token",
        lazy(_GLUED + r"gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|agent|oas)-[A-Za-z0-9_-]{20,}"),
        hints=("gl",),
        gate=lazy(r"gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|agent|oas)-"),
    ),
    Pattern("pypi-token", lazy(_GLUED + r"pypi-AgE[A-Za-z0-9_-]{50,}"), hints=("pypi-age",)),
    Pattern(
        "huggingface-token", lazy(_GLUED + r"(?:hf_|api_org_)[A-Za-z]{34}(?![A-Za-z0-9])"), hints=("hf_", "api_org_")
    ),
    Pattern(
        "sendgrid-key",
        lazy(_GLUED + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"),
        hints=("sg.",),
    ),
    Pattern("vault-token", lazy(_GLUED + r"hv[sbr]\.[A-Za-z0-9_-]{24,}"), hints=("hv",), gate=lazy(r"hv[sbr]\.")),
    Pattern("digitalocean-token", lazy(_GLUED + r"do[opr]_v1_[a-f0-9]{64}"), hints=("_v1_",)),
    Pattern(
        "telegram-bot-token", lazy(r"(?<![0-9])[0-9]{5,16}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"), hints=(":aa",)
    ),
    Pattern(
        "discord-bot-token",
        lazy(r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![A-Za-z0-9_-])"),
        hints=(".",),  # (a hint, so that a text of hex digits alone still skips every pattern)
        # Led by a literal dot (a fast search), where the regex tries at every letter.
        gate=lazy(r"\.[a-z0-9_-]{6}\.[a-z0-9_-]{27}"),
    ),
    Pattern(
        "jwt",
        # The header ends at a dash or underscore before another "eyJ" (where the next try starts): else
        # each "eyJ" of a run like "eyJ-eyJ-…" read the run to its end. Atomic: a header never holds its dot.
        lazy(
            _GLUED + r"eyJ(?=[A-Za-z0-9_-]{8})(?>[A-Za-z0-9]*(?:[-_](?!eyJ)[A-Za-z0-9]*)*)\.eyJ[A-Za-z0-9_-]{8,}\."
            r"[A-Za-z0-9_-]{8,}"
        ),
        hints=("eyj",),
    ),
    Pattern(
        "bearer",
        lazy(
            r"(?i)(?:\bbearer\s+|\bauthorization[\"']?\s*[:=]\s*[\"']?(?:basic|token|bearer|digest)?\s*)"
            r"([A-Za-z0-9._~+/-]{12,}=*)"
        ),
        group=1,
        hints=("bearer", "authorization"),
    ),
    Pattern(
        "url-password",
        # A scheme of at most 32 characters: unbounded, each word start in a run of them scanned to its end.
        lazy(r"\b[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s:/@]+:([^\s@/]+)@"), group=1, hints=("://",),
        # Led by "://", where the regex tries a scheme at every word start (a 20 KB output: 0.7 ms).
        gate=lazy(r"://[^\s:/@]+:[^\s@/]+@"),
    ),
    Pattern(
        "url-password",  # ?password=…, &token=…, ?sig=… in a URL or a DSN
        lazy(
            r"(?i)[?&](?:[a-z0-9_.-]*" + _KEY_WORDS + r"|pwd|pass|sig|signature|auth|key)=" + _PLACEHOLDER
            + r"([^&\s\"'#]+)"
        ),
        group=1,
        hints=("?", "&"),
    ),
    Pattern(
        "flag-password",  # --password X, --password=X, --api-key X, --client-secret=X
        lazy(
            r"(?i)(?<![\w-])--?(?:[a-z0-9]+[-_])*(?:password|passwd|pass|passphrase|secret|token|api-?key|apikey|"
            r"access-?key|secret-?key|private-?key|credentials?)(?:=|\s+)[\"']?" + _PLACEHOLDER
            + r"((?:\\.|[^\s\"'-])(?:\\.|[^\s\"']){2,})"  # a backslash escapes a space: one word
        ),
        group=1,
        hints=("-",),
        # The dash or underscore before the key word, the word, then = or a space: the pattern itself is
        # slow on text full of dashes (diffs). Led by a literal, so the search skips to each dash, where
        # it costs a few steps (a stretch of flag characters before the word cost a run of dashes a scan
        # to its end from each: 32 KiB of "-" took 15 s).
        gate=lazy(r"[-_](?:pass(?:word|wd|phrase)?|secret(?:-?key)?|token|api-?key|access-?key|private-?key|"
                        r"credentials?)[=\s]"),
    ),
    Pattern(
        "flag-password",  # mysql -pSECRET (no space: with one, -p prompts and the word is a database)
        # Word by word, at most 24, each ending in a space, up to the next client name (which starts a
        # try of its own): one character at a time up to 300, each name's try read what the next one did.
        lazy(
            r"(?i)" + _MYSQL + r"(?:(?!" + _MYSQL + r")[^|;&\s]*+\s++){0,24}?-p" + _PLACEHOLDER + r"([^\s\"'|;&]+)"
        ),
        group=1,
        hints=("mysql", "mariadb"),
    ),
    Pattern("flag-password", lazy(r"\bsshpass\s+(?:-[a-zA-Z]\s+)*-p\s*([^\s\"']+)"), group=1, hints=("sshpass",)),
    Pattern(
        "flag-password",  # curl -u user:pw, --user user:pw (not docker's -u 1000:1000)
        # A user name of at most 128 characters: unbounded, each "(-u" of a run of them read it to its end.
        lazy(
            r"(?<![\w-])(?:-u|--user)(?:\s+|=)?[\"']?[^\s:\"'@/]{1,128}:(?!\d+\b)" + _PLACEHOLDER + r"([^\s\"'@]+)"
        ),
        group=1,
        hints=("-u", "--user"),
        # The flag, its user and the colon, led by a dash: the regex's look-behind tries every character.
        gate=lazy(r"(?:-u|--user)(?:\s+|=)?[\"']?[^\s:\"'@/]{1,128}:"),
    ),
    Pattern(
        "flag-password",  # a flag's quoted value holding spaces: --password "two words"
        lazy(
            r"(?i)(?<![\w-])--?(?:[a-z0-9]+[-_])*(?:password|passwd|pass|passphrase|secret|token)(?:=|\s+)"
            + _QUOTED
        ),
        group=2,
        hints=("pass", "secret", "token"),
        needs="\"'",
        # Led by a literal, as the unquoted flag pattern's gate: the pattern tries every word start.
        gate=lazy(r"[-_](?:pass(?:word|wd|phrase)?|secret|token)(?:=|\s+)[\"']"),
    ),
    Pattern(
        "flag-password",  # ssh-keygen -N "a b c", -P 'old'
        lazy(r"\bssh-keygen\b[^|;&]{0,200}?\s-[NP]\s*" + _QUOTED),
        group=2,
        hints=("ssh-keygen",),
    ),
    Pattern(
        "flag-password",  # docker login -p X, podman login -p X (the flag is -p, not -p glued)
        lazy(
            r"(?i)\b(?:docker|podman|nerdctl|buildah|skopeo|oras|registry)\s+login\b[^|;&]{0,300}?\s-p(?:\s+|=)"
            + _PLACEHOLDER + r"([^\s\"'|;&]+)"
        ),
        group=1,
        hints=("docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "registry"),  # not "login": common
        # From "login" to the flag, led by a literal: the regex tries its seven names at every word start.
        gate=lazy(r"login\b[^|;&]{0,300}?\s-p[\s=]"),
    ),
    Pattern(
        "flag-password",  # redis-cli -a X
        lazy(r"\b(?:redis|valkey|keydb)-cli\b[^|;&]{0,300}?\s-a\s+" + _PLACEHOLDER + r"([^\s\"'|;&]+)"),
        group=1,
        hints=("-cli",),
        gate=lazy(r"-cli\b[^|;&]{0,300}?\s-a\s"),  # led by a literal, where the regex tries every word start
    ),
    Pattern(
        "flag-password",  # openssl -passin pass:X, -passout pass:X, -pass pass:X
        lazy(r"(?i)(?<![\w-])-pass(?:in|out)?\s+[\"']?pass:" + _PLACEHOLDER + r"([^\s\"']+)"),
        group=1,
        hints=("pass:",),
    ),
    Pattern(
        "netrc",  # machine HOST login USER password X (one line or several)
        # Between the words: white space, and on a new line a diff's or a quote's mark. "login and password
        # reset" is prose: no netrc names a user or host "and" or "or".
        lazy(r"(?i)\b(?:machine|default|login|account)\s+[+>-]?\s*(?!(?:and|or|&)\s)\S+\s+[+>-]?\s*password\s+"
             r"[+>-]?\s*"
             + _PLACEHOLDER + r"(\S+)"),
        group=1,
        hints=("password",),
        gate=lazy(r"password\s"),  # led by a literal: the pattern's alternation is not
    ),
    Pattern(
        "session-cookie",  # Cookie: a=b; sessionid=X; Set-Cookie: ..., curl -b/--cookie 'sid=X'
        lazy(
            r"(?i)(?:\b(?:set-)?cookie[\"']?\s*:|(?<![\w-])(?:-b|--cookie)(?:\s+|=))\s*[\"']?"
            r"((?:[^\s\"';=]+=[^\s\"';]+(?:;\s*)?)+)"
        ),
        group=1,
        hints=("cookie", "-b ", "-b="),
        # The header's name and colon or the flag, led by a "c" or a dash: the regex, case-blind with a
        # look-behind, tries at every character (a 20 KB output: 1.6 ms).
        gate=lazy(r"cookie[\"']?\s*:|(?:-b|cookie)[\s=]"),
        needs="=",
    ),
    Pattern(
        "putty-key",  # a .ppk file's private lines
        lazy(r"(?i)\bPrivate-Lines:\s*\d+((?:\s+[A-Za-z0-9+/=]{4,})+)"),
        group=1,
        hints=("private-lines",),
    ),
    _assignment(  # a YAML block scalar under a secret key: its lines, up to the next key or blank line
        lazy(
            r"(?i)[A-Za-z0-9_.-]*" + _KEY_WORDS + r"\b[\"']?\s*:\s*[|>][-+0-9]*(?:[ \t]*\r?\n|[ \t]+)"
            r"((?:[ \t]*(?![A-Za-z0-9_.-]+:)\S[^\n]*(?:\r?\n|\Z)){1,20})"
        ),
        group=1,
        hints=("passw", "passphrase", "secret", "token", "key", "credential"),
        needs="|>",
        gate=lazy(r":\s*[|>]"),
    ),
    _assignment(  # keys that name key material: SECRET_KEY_BASE, ENCRYPTION_KEY, MASTER_KEY (hex included)
        lazy(
            r"(?i)(?<![A-Za-z0-9_.:-])[A-Za-z0-9_.-]*(?:SECRET_KEY_BASE|KEY_BASE|(?:ENCRYPTION|ENCRYPT|ENC|MASTER|"
            r"SIGNING|CIPHER|AES|HMAC|CRYPTO|SESSION|COOKIE|JWT|DATA)[_-]?KEY)\b[\"']?\s*[:=]\s*[\"']?"
            + _PLACEHOLDER + r"([^\s\"'`,;(){}]{8,}+)(?!\()"
        ),
        group=1,
        hints=("key",),
        needs=":=",
        gate=lazy(r"key(?:_base)?[\"']?\s*[:=]"),
    ),
    _assignment(  # a quoted value under a secret key, to its closing quote: PASSWORD="two words", "a\"b"
        lazy(
            r"(?i)(?<![A-Za-z0-9_.:-])[A-Za-z0-9_.-]*" + _KEY_WORDS + r"\b[\"']?\s*[:=]\s*" + _PLACEHOLDER[:-1]
            + r"|[\"'](?:\[REDACTED|\$|<|\*\*\*))" + _QUOTED
        ),
        group=2,
        hints=("passw", "passphrase", "secret", "token", "key", "credential"),
        gate=_ASSIGNED,  # the assignment pattern's own: ``_spans`` searches a gate once a text
        needs="\"'",
    ),
    # .env-style or JSON/YAML assignments and headers whose key names a secret: KEY=value, "key": "value",
    # X-Api-Key: value.
    _assignment(
        lazy(
            r"(?i)(?<![A-Za-z0-9_.:-])[A-Za-z0-9_.-]*" + _KEY_WORDS + r"\b[\"']?\s*[:=]\s*[\"']?" + _PLACEHOLDER
            + r"([^\s\"'`,;(){}]{3,}+)(?!\()"
        ),
        group=1,
        hints=("passw", "passphrase", "secret", "token", "key", "credential"),
        # The key word's end, then [:=]: the pattern tries every word start before it (most of the
        # write path's redaction time on prose that merely mentions a token or a key).
        gate=_ASSIGNED,
        needs=":=",
    ),
    # Any other assigned or quoted value random enough to be a key (detect-secrets' entropy measure).
    # Both scan the same runs of base64 characters (``_spans`` scans them once).
    Pattern("high-entropy", _RUN, check=_entropy_match),
    Pattern(
        "wrapped-secret",
        _WRAPPED,
        check=_wrapped_secret,
        find=_wrapped,  # always run, but only where a base64 run is (``_Plan.runs_only``)
    ),
    # A base64 run that decodes to text holding a secret (echo … | base64 -d, a k8s Secret's data).
    Pattern("base64-secret", _RUN, check=_base64_secret),
)

_PLAIN = tuple(p for p in BUILTIN if p.name != "base64-secret")
"""What a decoded base64 run is checked against (one level deep)."""


def marker(kind: str, secret: str) -> str:
    import hashlib  # here: only a payload holding a secret needs it

    digest = hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{MARKER_PREFIX}{kind}:{digest}]"


MARKER = lazy(r"\[REDACTED:([A-Za-z0-9_.-]+):[0-9a-f]{8}\]")
"""A marker as ``marker`` writes it; its group is the kind (a reader that puts a value back checks the digest)."""


def _load_user_patterns(home: str) -> tuple[Pattern, ...]:
    """Patterns from ``redact.toml`` or ``redact.json`` in ``home``; a bad file is one clear error."""
    for name in ("redact.toml", "redact.json"):
        path = os.path.join(home, name)
        if not os.path.exists(path):
            continue
        import tomllib  # only when a config file exists: the hook path imports this module

        try:
            with open(path) as handle:
                raw = handle.read()
            data = tomllib.loads(raw) if name.endswith(".toml") else json.loads(raw)
            entries = data.get("pattern", data.get("patterns", []))
        except (OSError, ValueError, AttributeError) as exc:
            raise BadSetting(f"bad redaction config {path}: {exc}") from exc
        patterns = []
        for i, entry in enumerate(entries, 1):
            try:
                regex = re.compile(str(entry["regex"]))
            except (KeyError, TypeError, re.error) as exc:
                raise BadSetting(f"bad redaction config {path}, pattern {i}: {exc!r}") from exc
            patterns.append(Pattern(str(entry.get("name", "custom")), regex, 1 if regex.groups >= 1 else 0))
        return tuple(patterns)
    return ()


def compile_all() -> None:
    """Compile every pattern of this module now, for work that will run most of them (an import): each is
    otherwise compiled on its first use (``lazy``), a one-off cost of 15-20 ms in all. From then on this
    process finds a text's hints in one pass (``_BULK``)."""
    global _BULK
    _BULK = True
    for value in globals().values():
        if isinstance(value, LazyPattern):
            value.search("")
    for pattern in BUILTIN:
        pattern.regex.search("")
        if pattern.gate is not None:
            pattern.gate.search("")


@lru_cache(maxsize=8)
def patterns_for(home: str) -> tuple[Pattern, ...]:
    return (*_load_user_patterns(home), *BUILTIN)


def safe_patterns(home: str | None = None) -> tuple[Pattern, ...]:
    """``patterns_for`` the home, or the built-in ones when its config is broken: for paths that
    must write something whatever happens (the hook's dead letters) and so cannot fail on it."""
    try:
        return patterns_for(home if home is not None else home_dir())
    except TrailError:
        return BUILTIN


# -- finding and replacing ---------------------------------------------------------------------

Span = tuple[int, int, str]
"""(start, end, kind) of a secret in a text."""


def _spans(text: str, patterns: Sequence[Pattern]) -> list[Span]:
    """The secrets in ``text``: every pattern's matches, overlapping ones merged (kind of the first
    pattern among them), markers already in the text left alone."""
    plan = _plan(patterns)
    if plan.hex_quiet and _HEX.fullmatch(text):
        return []  # a sha256, a commit id: most of an event's longer strings
    lower = text.lower()
    gate_text = folded_lower(text) if _holds_folded(text) else lower
    found: list[tuple[int, int, int]] = []
    scanned: dict[re.Pattern[str], Sequence[Any]] = {}  # patterns sharing a regex scan once
    gated: dict[int, bool] = {}  # and a gate is searched once
    marked = MARKER_PREFIX in text  # (a match at a marker is the marker: left alone)
    ranks = plan.ranks(lower)
    if ranks is plan.always and plan.runs_only:
        # No hint found, and what always runs scans base64 runs: a text without one (most) has none.
        runs = scanned[_RUN] = _runs(text)
        if not runs:
            return []
    for rank in sorted(ranks):
        pattern = patterns[rank]
        if pattern.needs and not any(char in text for char in pattern.needs):
            continue
        if pattern.gate is not None:
            passed = gated.get(id(pattern.gate))
            if passed is None:
                passed = gated[id(pattern.gate)] = pattern.gate.search(gate_text) is not None
            if not passed:
                continue
        matches = scanned.get(pattern.regex)
        if matches is None:
            if pattern.regex is _RUN:
                matches = _runs(text)
            elif pattern.find is not None:
                matches = pattern.find(text)
            else:
                matches = list(pattern.regex.finditer(text))
            scanned[pattern.regex] = matches
        candidates: Sequence[Any] = matches  # re.Match objects, or Found ones (a find takes no check)
        group = pattern.group
        check = pattern.check if pattern.find is None else None  # a find runs its pattern's check itself
        for match in candidates:
            start, end = match.span(group)
            if start < 0 or end <= start or (marked and text.startswith(MARKER_PREFIX, start)):
                continue
            if check is not None and not check(match):
                continue
            found.append((start, end, rank))
    if not found:
        return []
    if marked:  # a secret inside an existing marker is the marker's own hash or kind
        # Markers do not overlap, so the one a span could lie in is the last starting at or before it.
        kept = [(m.start(), m.end()) for m in MARKER.finditer(text)]
        starts = [a for a, _ in kept]
        found = [f for f in found if not _inside(f, kept, starts)]
    found.sort()
    merged: list[list[int]] = []
    for start, end, rank in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            last[2] = min(last[2], rank)
        else:
            merged.append([start, end, rank])
    return [(start, end, patterns[rank].name) for start, end, rank in merged]


def _inside(span: tuple[int, int, int], kept: list[tuple[int, int]], starts: list[int]) -> bool:
    k = bisect.bisect_right(starts, span[0]) - 1
    return k >= 0 and span[1] <= kept[k][1]


_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_RUN_MARKS = bytes(b"a"[0] if i in _RUN_CHARS else b"="[0] if i == b"="[0] else b" "[0] for i in range(256))
"""Each byte as ``_RUN`` sees it: one of its run characters (a), a pad (=), anything else (space)."""
_RUN_MARKED = re.compile(rb"aaaaaaaaaaaaaaaaa*={0,2}")
"""``_RUN`` over the marks, written with a literal head (the search jumps to each 16 run characters)."""
_RUN_FLOOR = b"a" * 16
_LAST_MARKS: tuple[str | None, bytes] = (None, b"")
"""The text ``_runs`` last mapped and its marks: the wrapped-block search of the same text reuses them."""


def _marks(text: str) -> bytes:
    """``text`` as ``_RUN_MARKS`` maps it, a byte a character: a character past Latin-1 is encoded as "?",
    which, as every character outside ASCII, is no run character."""
    return text.encode("latin-1", "replace").translate(_RUN_MARKS)


def _runs(text: str) -> list[re.Match[str]]:
    """``list(_RUN.finditer(text))``, found on the text's marks: ``_RUN`` tries a match at each run
    character, so a text of words costs it a few steps a character; most texts (words, short paths)
    hold no run at all, which one substring test of the marks tells."""
    if len(text) < 16:
        return []  # shorter than any run
    global _LAST_MARKS
    marks = _marks(text)
    _LAST_MARKS = (text, marks)
    if _RUN_FLOOR not in marks:
        return []
    return [_RUN.match(text, run.start()) for run in _RUN_MARKED.finditer(marks)]  # type: ignore[misc]


_RARE = "?&:./_-zqjxkvbywgpfmucldhrsniaote"
"""Characters from rarest to commonest in text: a hint is looked for only where its rarest one is."""

Hinted = tuple[tuple[str, frozenset[int]], ...]
"""Hints, each with the ranks of the patterns naming it."""


class _Plan(NamedTuple):
    """How a pattern list's hints are looked for in a text (``ranks``). The hints are grouped by
    their rarest character, and a group is looked at only when the text holds that character: a
    one-character search is a memory scan that stops at the first one found, many times cheaper
    than a search for a longer string, and most texts lack most groups' characters."""

    always: frozenset[int]
    """The ranks of the patterns that always run (no hints)."""
    groups: tuple[tuple[str, Hinted], ...]
    """Each rare character and the hints holding it."""
    hex_quiet: bool
    """No pattern can match in a text of hex digits alone: each either has hints none of which is
    made of hex digits alone (none is in such a text), or scans base64 runs with a check that turns
    down hex (such a text is one run, a hex one, at its very start: no key, no decoding tried)."""
    runs_only: bool
    """Every pattern that always runs scans base64 runs (``_RUN``) and has no needs or gate."""
    short: Hinted
    """The hints of one character or none (each an ``in``: a memory scan), with their ranks."""
    long: dict[str, frozenset[int]]
    """The longer hints, with their ranks: found in one pass once ``compile_all`` has run (``_matcher``)."""
    matcher: list[Any]
    """The longer hints' automaton once built (None: no ``ahocorasick_rs``); empty before."""

    def ranks(self, lower: str) -> frozenset[int]:
        """The ranks of the patterns to run on a text, ``lower`` being the text lower-cased: those
        that always run, and those naming a hint the text contains (``always`` itself when none)."""
        found = self._found(lower) if _BULK else None
        if found is not None:
            ranks = self.always
            for hint, named in self.short:
                if not named <= ranks and hint in lower:
                    ranks = ranks | named
            for hint in found:
                named = self.long[hint]
                if not named <= ranks:
                    ranks = ranks | named
            return ranks
        ranks = self.always
        for char, hinted in self.groups:
            if char in lower:
                for hint, named in hinted:
                    if not named <= ranks and hint in lower:  # one hint found is enough for a pattern
                        ranks = ranks | named
        return ranks

    def _found(self, lower: str) -> set[str] | None:
        """The longer hints ``lower`` holds, every one (all matches, overlapping), in one pass of an
        Aho-Corasick automaton: an ``in`` a hint reads a long text to its end for each hint it lacks (most
        of them: a 20 KB output's 60 searches took 0.6 ms). None without the automaton."""
        if not self.matcher:
            self.matcher.append(_automaton(tuple(self.long)))
        automaton = self.matcher[0]
        if automaton is None:
            return None
        try:
            return set(automaton.find_matches_as_strings(lower, overlapping=True))
        except UnicodeEncodeError:  # a lone surrogate (a decoded "\\ud83d"): no UTF-8 for the automaton
            return None


def _automaton(hints: tuple[str, ...]) -> Any:
    """An automaton finding ``hints`` (``ahocorasick_rs``, imported here: the hook never builds one), or None."""
    if not hints:
        return None
    try:
        import ahocorasick_rs
    except ImportError:  # no wheel for this platform: the hints are looked for one by one
        return None
    return ahocorasick_rs.AhoCorasick(list(hints))


_BULK = False
"""Whether ``compile_all`` has run in this process: work that redacts many long texts (an import), for which
the hints are found by the automaton (``_Plan._found``); the hook and the other commands look for them one by one."""


def _make_plan(patterns: Sequence[Pattern]) -> _Plan:
    named: dict[str, set[int]] = {}
    for rank, pattern in enumerate(patterns):
        for hint in pattern.hints:
            named.setdefault(hint, set()).add(rank)
    groups: dict[str, list[tuple[str, frozenset[int]]]] = {}
    for hint, ranks in named.items():
        # Not in _RARE (find: -1) is rarer still; an empty hint is in every text (a group of its own).
        rarest = min(hint, key=_RARE.find, default="")
        groups.setdefault(rarest, []).append((hint, frozenset(ranks)))
    always = frozenset(rank for rank, pattern in enumerate(patterns) if not pattern.hints)
    hex_quiet = all(
        (pattern.regex is _RUN and pattern.check in (_entropy_match, _base64_secret))
        or pattern.find is _wrapped  # its lines are apart: hex digits alone are one line
        or (pattern.hints and not any(set(hint) <= _HEX_DIGITS for hint in pattern.hints))
        for pattern in patterns
    )
    runs_only = all(
        (patterns[rank].regex is _RUN or patterns[rank].find is _wrapped)  # a wrapped block is a run's lines
        and not patterns[rank].needs and patterns[rank].gate is None
        for rank in always
    )
    short = tuple((hint, frozenset(ranks)) for hint, ranks in named.items() if len(hint) <= 1)
    long = {hint: frozenset(ranks) for hint, ranks in named.items() if len(hint) > 1}
    return _Plan(always, tuple((char, tuple(hinted)) for char, hinted in groups.items()), hex_quiet, runs_only,
                 short, long, [])


_PLANS: dict[int, tuple[Sequence[Pattern], _Plan]] = {}
"""By the pattern list's id (the list kept with it, so the id stays its own)."""


def _plan(patterns: Sequence[Pattern]) -> _Plan:
    known = _PLANS.get(id(patterns))
    if known is None or known[0] is not patterns:
        if len(_PLANS) > 64:
            _PLANS.clear()
        known = _PLANS[id(patterns)] = (patterns, _make_plan(patterns))
    return known[1]


Secret = tuple[int, int, str, str]
"""(start, end, kind, the text its marker hashes) of a secret in a text."""


def _secrets(text: str, patterns: Sequence[Pattern], known: Sequence[tuple[str, str]] = ()) -> list[Secret]:
    """The secrets in ``text``, found as it is and, when it holds escapes (JSON dumped inside JSON, a
    tool's input kept as its JSON text), also with its escapes decoded: ``\\"api_key\\": \\"…`` is no
    assignment until decoded, ``\\nsk-ant-…`` has no word boundary. A shell line continuation
    (backslash, newline) is also read joined, as the shell reads it: ``--password ab\\<newline>cd``
    is one word. ``known`` secrets (found by the vendor ruleset in the write's batch) are found where
    they occur. Spans found any way merge."""
    found = [(start, end, kind, text[start:end]) for start, end, kind in _spans(text, patterns)]
    vendor = [(at, at + len(secret), kind, secret) for secret, kind in known for at in _occurrences(text, secret)]
    if "\\" not in text and not vendor:
        return found
    views: list[tuple[str, Callable[[int, bool], int]]] = []
    if "\\\n" in text or "\\\r\n" in text:
        views.append(_continued(text))
    if "\\" in text:
        view, to_raw = _unescaped(text)
        views.append((view, to_raw))
        if "\\\n" in view or "\\\r\n" in view:
            joined, to_view = _continued(view)
            views.append((joined, lambda i, end: to_raw(to_view(i, end), end)))
    decoded = [
        (back(start, False), back(end, True), kind, seen[start:end])
        for seen, back in views
        for start, end, kind in _spans(seen, patterns)
    ]
    if not decoded and not vendor:
        return found
    # A span the built-in rules also found keeps their kind: the label of a secret must not depend on
    # whether this process runs the vendor ruleset.
    ranked = [(*secret, 0) for secret in found + decoded] + [(*secret, 1) for secret in vendor]
    merged: list[Secret] = []
    rank = 0
    for start, end, kind, seen_text, own in sorted(ranked, key=lambda s: (s[0], s[4], s[1], s[2], s[3])):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            stop = max(last[1], end)
            label = last[2] if rank <= own else kind
            merged[-1] = (last[0], stop, label, text[last[0] : stop])
            rank = min(rank, own)
        else:
            merged.append((start, end, kind, seen_text))
            rank = own
    return merged


def _occurrences(text: str, secret: str) -> list[int]:
    found: list[int] = []
    at = text.find(secret)
    while at >= 0:
        if not text.startswith(MARKER_PREFIX, at):
            found.append(at)
        at = text.find(secret, at + len(secret))
    return found


_CONTINUATION = lazy(r"\\\r?\n")


def _continued(raw: str) -> tuple[str, Callable[[int, bool], int]]:
    """``raw`` with its line continuations (backslash, newline) removed, and the map of an index in
    it (a span's start, or with True its end) back to ``raw``."""
    parts: list[str] = []
    cuts: list[int] = []  # the view index at which each continuation was removed
    gone: list[int] = []  # characters removed up to and including that one
    at = total = 0
    for match in _CONTINUATION.finditer(raw):
        parts.append(raw[at : match.start()])
        total += match.end() - match.start()
        cuts.append(match.start() - (total - (match.end() - match.start())))
        gone.append(total)
        at = match.end()
    parts.append(raw[at:])

    def to_raw(index: int, end: bool) -> int:
        # A start keeps the removals at or before it; an end, those before its last character.
        k = bisect.bisect_right(cuts, index - 1 if end else index) - 1
        return index + (gone[k] if k >= 0 else 0)

    return "".join(parts), to_raw


_ESCAPE = lazy(r"\\(u[0-9a-fA-F]{4}|[nrtbf]|[^A-Za-z0-9])", re.S)
"""A JSON escape, or a backslash before a character that is no letter or digit. Not ``\\U``, ``\\3``: in
``C:\\Users\\…\\32e7c00e-…`` they are a Windows path's separators, and read as escapes they joined its
segments into one run the entropy check took for a key."""
_UNESCAPE = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}


def _unescaped(raw: str) -> tuple[str, Callable[[int, bool], int]]:
    """``raw`` with its JSON escapes decoded, and the map of an index in it (a span's start, or with
    True its end) back to ``raw``."""
    view: list[str] = []
    marks: list[tuple[int, int, int]] = []  # (view index, raw start, raw end) of each escape
    at = size = 0
    for match in _ESCAPE.finditer(raw):
        view.append(raw[at : match.start()])
        size += match.start() - at
        code = match.group(1)
        view.append(chr(int(code[1:], 16)) if len(code) == 5 else _UNESCAPE.get(code, code))
        marks.append((size, match.start(), match.end()))
        size += 1
        at = match.end()
    view.append(raw[at:])
    starts = [m[0] for m in marks]

    def to_raw(index: int, end: bool) -> int:
        k = bisect.bisect_right(starts, index - 1 if end else index) - 1
        if k < 0:
            return index
        vstart, rstart, rend = marks[k]
        if not end and index == vstart:
            return rstart
        return rend + (index - vstart - 1)

    return "".join(view), to_raw


def _apply(text: str, secrets: list[Secret]) -> str:
    out, at = [], 0
    for start, end, kind, secret in secrets:
        out += [text[at:start], marker(kind, secret)]
        at = end
    out.append(text[at:])
    return "".join(out)


def redact_text(
    text: str, patterns: tuple[Pattern, ...] | None = None, known: Sequence[tuple[str, str]] = ()
) -> str:
    """``text`` with every secret replaced by its marker (the same object when it holds none)."""
    secrets = _secrets(text, patterns if patterns is not None else patterns_for(home_dir()), known)
    return _apply(text, secrets) if secrets else text


def redact_strings(
    items: Sequence[str], patterns: tuple[Pattern, ...] | None = None, known: Sequence[tuple[str, str]] = ()
) -> list[str]:
    """Strings that belong together (an argv, a patch's lines), scanned as one text joined by newlines.

    A secret split across items is found on the joined text; each item it overlaps has its part
    replaced by the marker of the whole secret. Returns the items themselves when none holds one.
    """
    joined = "\n".join(items)
    spans = _secrets(joined, patterns if patterns is not None else patterns_for(home_dir()), known)
    if not spans:
        return list(items)
    out: list[str] = []
    at = first = 0
    for item in items:
        lo, hi = at, at + len(item)
        while first < len(spans) and spans[first][1] <= lo:
            first += 1  # spans are sorted and apart: those ending before this item are done with
        mine = []
        k = first
        while k < len(spans) and spans[k][0] < hi:
            s, e, kind, secret = spans[k]
            mine.append((max(s, lo) - lo, min(e, hi) - lo, kind, secret))
            k += 1
        if mine:
            parts, pos = [], 0
            for s, e, kind, secret in mine:
                parts += [item[pos:s], marker(kind, secret)]
                pos = e
            parts.append(item[pos:])
            item = "".join(parts)
        out.append(item)
        at = hi + 1
    return out


def redact_json_text(raw: str, patterns: tuple[Pattern, ...] | None = None) -> str:
    """JSON text that does not parse (torn, nested too deep), redacted on what its strings say:
    ``redact_text``, which reads a text with escapes both as it is and with them decoded."""
    return redact_text(raw, patterns)


_SECRET_KEY = lazy(r"(?i)[A-Za-z0-9_.-]*" + _KEY_WORDS + r"\b[A-Za-z0-9_.-]*")
"""A JSON key naming a secret, as the assignment pattern's key part does."""
_NOT_A_VALUE = lazy(r"(?i)\[REDACTED|\$|<|\*\*\*|(?:true|false|null|none)$")
"""A placeholder, not a secret: what the assignment pattern leaves alone."""


def redact_json(value: Any, patterns: tuple[Pattern, ...] | None = None) -> Any:
    """Parsed JSON with every string redacted; lists of strings as one text (``redact_strings``).

    A string under a key that names a secret (``{"password": "hunter2"}``, an MCP tool's input) is
    redacted whole: parsed, the key is no longer beside its value in any text the detectors read."""
    patterns = patterns if patterns is not None else patterns_for(home_dir())
    if isinstance(value, str):
        return redact_text(value, patterns)
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            return redact_strings(value, patterns)
        return [redact_json(v, patterns) for v in value]
    if isinstance(value, dict):
        return {k: marker("assignment", v) if _secret_key(k, v) else redact_json(v, patterns) for k, v in value.items()}
    return value


def _secret_key(key: Any, value: Any) -> bool:
    return (
        isinstance(value, str) and isinstance(key, str) and len(value.strip()) >= 3
        and _SECRET_KEY.fullmatch(key) is not None and _NOT_A_VALUE.match(value.strip()) is None
    )



class Redactor:
    """Redaction of many values with one pattern list (a write's batch of events): the patterns are
    looked up once, and a text met again (a tool name, a path, a repeated output) is scanned once."""

    def __init__(self, patterns: tuple[Pattern, ...] | None = None) -> None:
        self.patterns = patterns if patterns is not None else patterns_for(home_dir())
        self._texts: dict[str, str] = {}
        self.known: tuple[tuple[str, str], ...] = ()
        """Secrets the vendor ruleset found in what ``prescan`` was given (``ledger.domain.ruleset``)."""
        # Imported here so the capture hook can use redact_text without loading pydantic.
        from pydantic import BaseModel

        from ledger.domain.events import SourceKey

        self._model, self._source = BaseModel, SourceKey

    def prescan(self, values: Iterable[Any]) -> Redactor:
        """Run the vendor ruleset, when this process runs it, over every string in ``values`` (a write's
        batch) in one call; what it finds is redacted wherever it occurs in what this redactor is given."""
        if ruleset.active():
            strings: list[str] = []
            for value in values:
                self._collect(value, strings)
            found = ruleset.vendor_secrets(strings)
            if found:
                self.known = tuple(dict.fromkeys((*self.known, *found)))
                self._texts.clear()  # remembered before these were known
        return self

    def _collect(self, value: Any, into: list[str]) -> None:
        kind = type(value)
        if kind is str:
            into.append(value)
        elif kind in _AS_IS:
            return
        elif isinstance(value, self._source):
            return  # not redacted (``value``)
        elif isinstance(value, self._model):
            for name in type(value).model_fields:
                self._collect(value.__dict__[name], into)
        elif isinstance(value, (tuple, list)):
            for item in value:
                self._collect(item, into)
        elif isinstance(value, dict):
            for item in value.values():
                self._collect(item, into)

    def text(self, text: str) -> str:
        """``redact_text`` of ``text`` (the same object when it holds no secret)."""
        done = self._texts.get(text)
        if done is None:
            done = redact_text(text, self.patterns, self.known)
            if len(text) < _MEMO_LIMIT:
                self._texts[text] = done
        return text if done == text else done

    def value(self, value: Any) -> Any:
        """Redact every string inside ``value`` (str, pydantic model, list, tuple, dict)."""
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind in _AS_IS:
            return value
        names = _MODEL_FIELDS.get(kind)
        if names is None:
            names = _MODEL_FIELDS[kind] = self._fields_of(kind)
        if names:
            update = {}
            stored = value.__dict__  # pydantic keeps each field's value here: no getattr a field
            for name in names:
                old = stored[name]
                new = old if type(old) in _AS_IS else self.value(old)
                if new is not old and new != old:
                    update[name] = new
            return value.model_copy(update=update) if update else value  # most values hold no secret
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, self._source):
            return value  # identifiers, not content: redacting could merge or split source keys
        if isinstance(value, (tuple, list)) and value and all(isinstance(v, str) for v in value):
            # An argv split across words, a key split across lines: one text.
            joint = redact_strings(value, self.patterns, self.known)
            return value if joint == list(value) else type(value)(joint)
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value

    def _fields_of(self, kind: type) -> tuple[str, ...]:
        """The fields ``value`` walks in a model of class ``kind``: () for what is not a model, or is
        a source key; a model with no fields is left as it is, as the walk over none would."""
        if issubclass(kind, self._source) or not issubclass(kind, self._model):
            return ()
        return tuple(kind.model_fields)

    def fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """An event's fields with every string redacted (a new dict; the input is left alone)."""
        return {name: self.value(value) for name, value in fields.items()}


_AS_IS = frozenset({type(None), int, bool, float, datetime.datetime, datetime.date})
"""Types ``Redactor.value`` returns as they are, found by exact type (no string inside)."""
_MODEL_FIELDS: dict[type, tuple[str, ...]] = {}
"""By value class: the fields of a pydantic model (not a source key) ``Redactor.value`` walks, () for
any other class. Classes live as long as the process; so do their field lists."""

_MEMO_LIMIT = 4096
"""Texts longer than this are not remembered by a ``Redactor`` (they seldom repeat)."""


def redact_value(value: Any, patterns: tuple[Pattern, ...] | None = None) -> Any:
    """Redact every string inside ``value`` (str, pydantic model, list, tuple, dict)."""
    return Redactor(patterns).value(value)


def redact_fields(fields: dict[str, Any], redactor: Redactor | None = None) -> dict[str, Any]:
    """An event's fields with every string redacted (a new dict; the input is left alone); with
    ``redactor``, through that one (a batch's, shared by all its events)."""
    return (redactor or Redactor()).fields(fields)
