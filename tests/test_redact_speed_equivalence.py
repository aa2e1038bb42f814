"""Redaction's shortcuts change no output: ``_spans`` (hints looked for by their rarest character,
runs found on a byte map of the text, decodes refused on their control bytes, the stronger gates)
against two plain references, on generated text mixing real secrets of every built-in kind,
paths, hashes, base64 of secrets, flags, assignments and prose."""

from __future__ import annotations

import base64
import hashlib
import math
import re
import string
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain import redact
from ledger.domain.redact import BUILTIN, MARKER_PREFIX, Pattern, Span, _spans, marker
from tests.test_redact import CORPUS
from tests.test_secrets_everywhere import ALNUM, issue_23_kinds, rnd

# -- the references ------------------------------------------------------------------------------


def _reference_decoded(token: str) -> str | None:
    """``_decoded`` as first written: decode, then count printable characters one by one."""
    try:
        data = (base64.urlsafe_b64decode if ("-" in token or "_" in token) else base64.b64decode)(
            token + "=" * (-len(token) % 4)
        )
        text = data.decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError are both ValueErrors
        return None
    printable = sum(ch.isprintable() or ch in "\n\r\t" for ch in text)
    return text if text and printable >= 0.95 * len(text) else None


_GATES_BEFORE = {
    pattern.regex: re.compile(r"(?:pass(?:word|wd|phrase)?|secret|token|key|credentials?)[=\s]")
    for pattern in BUILTIN
    if pattern.name == "flag-password" and pattern.gate is not None and pattern.gate.pattern.startswith("[-_](?:pass")
}
"""The gate the key-word flag patterns had before (the key word, then = or a space): the one now is stronger.
(The other flag patterns' gates, on their own literals, are checked as they are.)"""


def _reference(text: str, patterns: Sequence[Pattern], shortcuts: bool) -> list[Span]:
    """The spans, found the plain way: every pattern's regex over the whole text, each check on
    each match, nothing decided before. With ``shortcuts``, a pattern runs only where one of its
    hints is in the lower-cased text and, for ASCII text, its gate matches (the rules ``_spans``
    had before it was made faster); without, every pattern runs everywhere."""
    lower = text.lower()
    found: list[tuple[int, int, int]] = []
    for rank, pattern in enumerate(patterns):
        if shortcuts and pattern.hints and not any(hint in lower for hint in pattern.hints):
            continue
        gate = _GATES_BEFORE.get(pattern.regex, pattern.gate)
        if shortcuts and gate is not None and text.isascii() and not gate.search(lower):
            continue
        check = pattern.check
        if check is redact._base64_secret:
            check = _base64_check(shortcuts)
        for match in pattern.regex.finditer(text):
            start, end = match.span(pattern.group)
            if start < 0 or end <= start or text.startswith(MARKER_PREFIX, start):
                continue
            if check is not None and not check(match):
                continue
            found.append((start, end, rank))
    kept = [(m.start(), m.end()) for m in redact.MARKER.finditer(text)]
    found = sorted(f for f in found if not any(a <= f[0] and f[1] <= b for a, b in kept))
    merged: list[list[int]] = []
    for start, end, rank in found:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] = min(merged[-1][2], rank)
        else:
            merged.append([start, end, rank])
    return [(start, end, patterns[rank].name) for start, end, rank in merged]


def _base64_check(shortcuts: bool) -> Callable[[re.Match[str]], bool]:
    def check(match: re.Match[str]) -> bool:
        token = match.group(0)
        if redact._HEX.fullmatch(token):
            return False
        decoded = _reference_decoded(token)
        return decoded is not None and bool(_reference(decoded, redact._PLAIN, shortcuts))

    return check


# -- the generated text --------------------------------------------------------------------------

_SECRETS = list(CORPUS.values())
_PIECES = [
    *_SECRETS,
    *(base64.b64encode(f"token={s}".encode()).decode() for s in _SECRETS[:6]),
    *(base64.urlsafe_b64encode(f"DB_PASSWORD={s}\n".encode()).decode().rstrip("=") for s in _SECRETS[6:10]),
    base64.b64encode(b"just words, nothing secret at all here").decode(),
    hashlib.sha256(b"x").hexdigest(),
    "sha512-" + base64.b64encode(hashlib.sha512(b"x").digest()).decode(),
    "toolu_01abcdef23456789",
    "src/auth/refresh_token_cache.py", "/home/dev/project/node_modules/.bin/tsc", "a/src/http/client.ts",
    "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "MIIEpQIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2ZTcrnS4Iv",
    "password", "PASSWORD", "passwd", "passphrase", "secret", "client_secret", "token", "api_key", "API-KEY",
    "credentials", "key_id", "authorization", "Authorization:", "Bearer", "bearer", "basic",
    "--password", "--api-key=", "--client_secret", "--db_password=", "-x-private-key",
    "-p", "-u", "--user", "admin:hunter22", "1000:1000", "mysql -uroot", "sshpass -p",
    "https://", "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "postgres://app:", "@db.local/x",
    "?token=", "&sig=", "#frag", "_authToken=", "//registry.example/:_auth=", "npm_",
    "sk-", "sk-ant-", "ghp_", "github_pat_", "xoxb-", "xapp-", "AKIA", "ASIA", "AIza", "eyJ", "whsec_", "_live_",
    "[REDACTED:github-token:0123abcd]", marker("openai-key", "x"), "${PASSWORD}", "<redacted>", "***", "null",
    "the parser retries the token refresh until the cache expires", "max_tokens=4096", "key = value",
    "\u017fecret", "to\u212aen", "İ", "é", "naïve", "日本語", "\u2028", "\x1c", "\x00", "\x7f",
    # Issue 23's kinds, whole and in pieces (their hints, their separators).
    *(plant for plant, _ in issue_23_kinds(lambda kind, n=32, alphabet=ALNUM: rnd(f"eq/{kind}", n, alphabet)).values()),
    "glpat-", "gldt-", "pypi-AgE", "GOCSPX-", "hf_", "SG.", "hvs.", "dop_v1_", ":AA", "MT", "machine", "login",
    "password", "docker login", "-p", "redis-cli", "-a", "-passin", "pass:", "SECRET_KEY_BASE", "ENCRYPTION_KEY",
    "ssh-keygen -N", "Cookie:", "-b", "sessionid=", "Private-Lines: 2", "key_passphrase: |", "\\\n", "\\ ",
    "+" + "A" * 64, "0123456789abcdef" * 4,
]
_GLUE = ["", " ", "  ", "\n", "\t", "=", " = ", ":", ": ", '"', "'", "`", "-", "--", "_", "/", ",", ";", "|", "&",
         "?", "\\n", "+", "==", "(", ")"]
_text = st.lists(
    st.one_of(
        st.sampled_from(_PIECES),
        st.sampled_from(_GLUE),
        st.text(alphabet=string.ascii_letters + string.digits + "+/_-=", min_size=1, max_size=40),
        st.text(max_size=6),
    ),
    max_size=24,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_text)
def test_spans_as_before_on_any_text(text: str) -> None:
    assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=True)


@settings(max_examples=300, deadline=None)
@given(_text)
def test_spans_as_every_pattern_run_everywhere_on_ascii_text(text: str) -> None:
    # On ASCII text the hints and gates only skip work: every pattern run over the whole text
    # finds the same. (Not on all text: a long s, U+017F, matches (?i)s, so "\u017fecret" matches
    # (?i)secret yet holds no hint "secret".)
    text = text.encode("ascii", "ignore").decode()
    assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=False)


def test_every_piece_the_corpus_text_and_flags_as_before() -> None:
    from tests.test_redact import TEXT

    flags = ["tool --client_secret hunter22", "x --db_password=abc123", "-x-private-key s3cr3tv4lue",
             "--api-key abcdef", "?token=abc123", "mysql -h db -pS3cret! app", "curl -u admin:hunter22 url",
             "cmd --Token=Zz9", "--credential 'abc'"]
    for text in [TEXT, *_PIECES, *flags, " ".join(_PIECES), "\n".join(_PIECES)]:
        assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=True), text
        if text.isascii():
            assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=False), text


def test_user_patterns_always_run_with_the_builtin_ones() -> None:
    mine = (Pattern("internal", re.compile(r"itk_[a-z0-9]{8,}")), *BUILTIN)
    text = f"use itk_abcdef123 and {CORPUS['github-token']} then src/auth/refresh_token_cache.py"
    assert [kind for _, _, kind in _spans(text, mine)] == ["internal", "github-token"]
    assert _spans(text, mine) == _reference(text, mine, shortcuts=True)


def test_decode_shortcuts_count_as_the_character_loop() -> None:
    # Every ASCII character: printable to the fast count exactly when it is to the loop.
    fast = set(redact._ASCII_PRINTABLE)
    assert {c for c in range(128) if chr(c).isprintable() or chr(c) in "\n\r\t"} == fast
    assert set(redact._CONTROL) == set(range(128)) - fast
    # Tokens decoding to control bytes, to invalid UTF-8, to text, to mixed text: same verdict.
    for raw in [bytes(range(256)), b"\x00" * 30, b"hello world, ok\x01", "żółć and more text".encode(), b"\xff\xfe" * 9,
                b"password=" + b"\x00" + b"abcdefghijklmnopqrstu", b"ok " * 30 + b"\x00\x01"]:
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            token = encode(raw).decode().rstrip("=")
            assert redact._decoded(token) == _reference_decoded(token), raw


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789abcdefABCDEF", max_size=90))
def test_hex_only_text_skipped_as_every_pattern_run_everywhere(text: str) -> None:
    # _spans returns [] at once for a text of hex digits alone, as long as no pattern can match one.
    assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=False)
    mine = (Pattern("hex-key", re.compile(r"\b[0-9a-f]{40}\b")), *BUILTIN)  # a user pattern that can
    assert _spans(text, mine) == _reference(text, mine, shortcuts=False)


def test_a_pattern_that_can_match_hex_turns_the_hex_skip_off() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    mine = (Pattern("hex-key", re.compile(r"[0-9a-f]{64}")), *BUILTIN)
    assert [kind for _, _, kind in _spans(sha, mine)] == ["hex-key"]
    assert _spans(sha, (Pattern("hinted", re.compile(r"[0-9a-f]{64}"), hints=("ab",)), *BUILTIN)) == (
        [(0, 64, "hinted")] if "ab" in sha else []
    )


# -- the assignment patterns, tried only where a key run ends ------------------------------------

_ASSIGNMENTS = [pattern for pattern in BUILTIN if pattern.name == "assignment"]
_KEY_PIECES = [
    "password", "PASSWD", "PassPhrase", "secret", "TOKEN", "api_key", "API-KEY", "apikey", "access_key", "secret-key",
    "private_key_id", "PRIVATE_KEYID", "credential", "Credentials", "auth_key", "key", "keys", "SECRET_KEY_BASE",
    "key_base", "ENCRYPTION_KEY", "master-key", "jwtkey", "DATA_KEY", "monkey", "tokens", "passwords", "secretary",
    "\u017fecret", "to\u212aen", "PR\u0130VATE_KEY", "pr\u0131vate_key", "my.app-", "db_", "x", "9", ".", "-", "_",
    "${TOKEN}", "[REDACTED:x:0123abcd]", "<token>", "***", "true", "None", "hunter22", "s3cr3t-V4lue!", "a b",
]
_KEY_GLUE = ["", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2028", "\x1c", ":", "=", ":=", ": ", " = ", '"', "'", "`",
             "|", ">", "|-", ">+2", ",", ";", "(", ")", "{", "}", "\\", "\\n", "é", "日本"]
_key_text = st.lists(st.sampled_from([*_KEY_PIECES, *_KEY_GLUE]), max_size=30).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_key_text)
def test_assignment_patterns_find_what_their_regex_finds(text: str) -> None:
    # Key words of every case (and the characters (?i) folds onto them), runs of key characters,
    # separators, quotes, block scalars, placeholders: each assignment pattern's ``find`` gives the
    # matches its regex finds over the whole text, the same spans and groups.
    for pattern in _ASSIGNMENTS:
        assert pattern.find is not None
        want = [(m.span(), m.groups()) for m in pattern.regex.finditer(text)]
        got = [(m.span(), m.groups()) for m in pattern.find(text)]  # type: ignore[union-attr]
        assert got == want, (pattern.regex.pattern[:60], text)


def test_assignment_patterns_on_every_piece_and_the_corpus_text() -> None:
    from tests.test_redact import TEXT

    for text in [TEXT, *_PIECES, " ".join(_PIECES), "\n".join(_PIECES), ": ".join(_KEY_PIECES),
                 "=".join(_KEY_PIECES), "key:" * 2000 + "x", "a" * 5000 + "_token: |\n  " + "b" * 50]:
        for pattern in _ASSIGNMENTS:
            want = [(m.span(), m.groups()) for m in pattern.regex.finditer(text)]
            assert [(m.span(), m.groups()) for m in pattern.find(text)] == want, text[:80]  # type: ignore[union-attr,misc]


# -- wrapped blocks, tried only where a run of their first line's characters starts --------------

_LINE_PIECES = [
    "A" * 40, "QUJD" * 12, "+" + "x" * 45, "-" + "Zm9v" * 11,
    base64.b64encode(b"DB_PASSWORD=hunter22hunter22").decode(),
    *(base64.b64encode(f"token={s}".encode()).decode() for s in _SECRETS[:3]), "abc", "0123456789abcdef" * 3,
]
_LINE_GLUE = ["", "\n", " ", "\t", "\r\n", "  \n  ", "=", "==", "-", "+", "/", "_", ".", "é", "\u2028", "日", "\x00"]
_line_text = st.lists(st.one_of(st.sampled_from(_LINE_PIECES), st.sampled_from(_LINE_GLUE),
                                st.text(alphabet=string.ascii_letters + string.digits + "+/=-", max_size=70)),
                      max_size=16).map("".join)


@settings(max_examples=600, deadline=None)
@given(_line_text)
def test_wrapped_blocks_found_as_their_regex_finds_them(text: str) -> None:
    # Every match (the same spans and lines), and of them the ones taken as secrets.
    assert [m.span() for m in redact._wrapped_matches(text)] == [m.span() for m in redact._WRAPPED.finditer(text)]
    want = [m.span() for m in redact._WRAPPED.finditer(text) if redact._wrapped_secret(m)]
    assert [found.span() for found in redact._wrapped(text)] == want


_WIDE = ["é", "日本語", "\u00a0", "\u3000", "\u2028", "\u0085", "Σ", "ß", "🙂", "\u017fecret", "to\u212aen", "İ"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_text, st.sampled_from(_WIDE)), min_size=1, max_size=4).map("".join))
def test_gates_on_text_past_ascii_skip_only_what_finds_nothing(text: str) -> None:
    # The gates are searched in text past ASCII too: the spans are those of every pattern its hints name
    # run over the text, ungated.
    text += "é"
    assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=True)


def test_a_key_word_spelt_with_a_folded_character_is_found_past_its_gate() -> None:
    # "pa\u017fsword" is (?i)password, which no gate searched in the plain lower-cased text sees: gates and
    # key runs read the text folded as (?i) reads it (here a hint, "token", lets the assignment patterns
    # run at all).
    for text in ("token here; pa\u017fsword=hunter22x", "token: db_passwor\u212a", "x --\u017fecret=hunter22 token"):
        assert _spans(text, BUILTIN) == _reference(text, BUILTIN, shortcuts=True), text
    assert [kind for _, _, kind in _spans("token here; pa\u017fsword=hunter22x", BUILTIN)] == ["assignment"]


def _reference_high_entropy(value: str) -> bool:
    """``high_entropy`` as first written: letters and digits looked for a character at a time."""
    value = value.rstrip("=")
    if len(value) < 20 or redact._HEX.fullmatch(value.replace("-", "")):
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    return redact.entropy(value) >= min(redact.BASE64_ENTROPY_LIMIT, math.log2(len(value)) - 0.35)


_run_text = st.text(alphabet=string.ascii_letters + string.digits + "+/_-=", min_size=18, max_size=60)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_run_text, _text, st.text(min_size=18, max_size=60), st.sampled_from(_PIECES)))
def test_high_entropy_as_the_character_loop(value: str) -> None:
    # Digits and letters past ASCII ("٣", "é") count for the loop; the search is taken only on ASCII.
    for text in (value, value + "٣", "é" + value):
        assert redact.high_entropy(text) is _reference_high_entropy(text)


def _reference_entropy_match(match: re.Match[str]) -> bool:
    """``_entropy_match`` as it was before the digit-and-letter test moved ahead of the key's: the key read
    back first, the value's ids set aside, a path of words or names kept, then ``high_entropy``."""
    value = match.group(0)
    if len(value) < 20 or value.startswith(("sha256-", "sha384-", "sha512-")):
        return False
    key = redact._assigned_key(match.string, match.start())
    if key is None or redact._ID_KEY.search(key):
        return False
    if value[0] == "/" and redact._file_path_at(match.string, match.start(), key):
        value = redact._without_ids(value)
        if redact._words_only(value) or redact._named_segments(value):
            return False
    return redact.high_entropy(value)


_QUOTED_PATHS = st.lists(
    st.one_of(
        st.sampled_from(["/", "/home/dev/", "/tmp/claude/", "'", '"', "key=", "token = ", "id=", "--token=/",
                         "/hooks/", "C:/x/", "://", "0f3a9c1b2d4e5f60", "3f2a9c1b-1d2f-5804-b36c-7f326747bd17",
                         "OpenPrintKit/", "codemie-enterprise-sznbGEWF-py3/",
                         "/var/folders/hs/pt2n3nn16k3935lw_ljnl5t40000gn/"]),
        _run_text,
        st.sampled_from(_PIECES),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_QUOTED_PATHS, _text))
def test_entropy_match_as_before_on_every_run(text: str) -> None:
    # Every run the high-entropy pattern reads, judged by the check and by its reference.
    for match in redact._RUN.finditer(text):
        assert redact._entropy_match(match) is _reference_entropy_match(match)


def test_fixture_strings_redacted_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real logs (``../shared/fixtures``, when present): every text the import of each one scans (its
    strings, the windows of cut outputs, their escapes decoded, decoded base64), with every shortcut, finds
    what the plain reference finds with the shortcuts the rules had before."""
    from dataclasses import replace

    from ledger.app.store import open_ledger
    from ledger.base.location import resolve
    from ledger.capture.importer import import_files

    fixtures = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
    logs = [(agent, p) for agent in ("claude-code", "codex") for p in sorted((fixtures / agent).glob("*.jsonl"))]
    if not logs:
        pytest.skip("../shared/fixtures is absent")
    scanned: dict[tuple[str, int], Sequence[Pattern]] = {}
    spans = redact._spans

    def recorded(text: str, patterns: Sequence[Pattern]) -> list[Span]:
        scanned[(text, id(patterns))] = patterns
        return spans(text, patterns)

    monkeypatch.setattr(redact, "_spans", recorded)
    for agent, path in logs:
        location = replace(resolve(str(tmp_path / agent / "ledger.db")), home=tmp_path / agent / "home")
        ledger = open_ledger(location)
        import_files(ledger, location, agent, [path])
        ledger.close()
    monkeypatch.undo()
    assert len(scanned) > 4000
    found = 0
    for (text, _), patterns in scanned.items():
        mine = _spans(text, patterns)
        assert mine == _reference(text, patterns, shortcuts=True), text[:200]
        found += len(mine)
    assert found > 20  # the logs hold secrets (and markers' look-alikes): the comparison saw real spans


_FOLDS = {"i": "\u0131", "I": "\u0130", "s": "\u017f", "k": "\u212a", "K": "\u212a"}


@settings(max_examples=400, deadline=None)
@given(_text, st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_text_with_folded_letters_finds_what_every_pattern_ungated_finds(text: str, where: list[int]) -> None:
    # Letters (?i) reads as i, s or k spelt with U+0130, U+0131, U+017F or the Kelvin sign, at random
    # places: gates and key runs (read on ``folded_lower``) skip only what finds nothing ungated.
    chars = list(text)
    for at in where:
        if chars and chars[at % len(chars)] in _FOLDS:
            chars[at % len(chars)] = _FOLDS[chars[at % len(chars)]]
    folded = "".join(chars) + "\u0131"
    assert _spans(folded, BUILTIN) == _reference(folded, BUILTIN, shortcuts=True)


def test_folded_lower_lines_up_with_the_text() -> None:
    # One character for one; an ASCII letter exactly where (?i) matches the character to one, and that one.
    text = "".join(chr(c) for c in range(0x20, 0x3000) if not 0xD800 <= c < 0xE000)
    lowered = redact.folded_lower(text)
    assert len(lowered) == len(text)
    for char, low in zip(text, lowered, strict=True):
        matched = [a for a in string.ascii_lowercase if re.fullmatch(f"(?i){a}", char)]
        assert (low if low.isascii() and low.isalpha() else None) == (matched[0] if matched else None), char


@settings(max_examples=400, deadline=None)
@given(st.one_of(_text, st.lists(st.sampled_from(_PIECES), max_size=40).map(" ".join), st.text(max_size=200)))
def test_hints_found_in_one_pass_as_one_by_one(text: str) -> None:
    # The automaton an import uses (``compile_all``) names the patterns the hint-by-hint search names, and
    # ``always`` itself when it names none (``_spans`` then skips a text without base64 runs at once).
    plan = redact._plan(BUILTIN)
    for lower in (text.lower(), (text + "\ud83d").lower()):  # a lone surrogate: no UTF-8, searched one by one
        one_by_one = _one_by_one(plan, lower)
        found = plan.ranks(lower) if redact._BULK else _in_bulk(plan, lower)
        assert found == one_by_one
        assert (found is plan.always) == (one_by_one is plan.always)


def _one_by_one(plan: redact._Plan, lower: str) -> frozenset[int]:
    ranks = plan.always
    for _, hinted in plan.groups:
        for hint, named in hinted:
            if not named <= ranks and hint in lower:
                ranks = ranks | named
    return ranks


def _in_bulk(plan: redact._Plan, lower: str) -> frozenset[int]:
    redact._BULK = True
    try:
        return plan.ranks(lower)
    finally:
        redact._BULK = False


def test_the_automaton_is_there_where_the_import_runs() -> None:
    # The dependency is installed with the package: an import without it would search hint by hint.
    assert redact._automaton(("token", "-u")) is not None
