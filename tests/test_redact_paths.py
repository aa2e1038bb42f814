"""File-system paths that hold a UUID or a hash are stored in clear; secrets in paths and URLs are not.

The entropy check judged a quoted path as one base64 run: its words and a UUID (or a hash) together
reached the limit neither reaches alone, and a Claude Code scratchpad path was stored masked.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ledger.domain.redact import BUILTIN, _sayable, _without_ids, redact_strings, redact_text
from tests.test_redact import CORPUS
from tests.test_secrets_everywhere import ALNUM, rnd

U = "32e7c00e-d1f8-463c-8090-dacd6ba51385"
SHA = hashlib.sha1(b"tasktrail").hexdigest()
SCRATCH = f"/mnt/c/Users/jan/AppData/Local/Temp/claude/D--oh-my-posh/{U}/scratchpad"

KEPT = {
    # The Windows session's command, and the forms of it every agent writes.
    "quoted-posix": f'wsl -e bash "{SCRATCH}/run-test.sh" omp-control',
    "single-quoted": f"bash '{SCRATCH}/run-test.sh'",
    "drive-slashes": f"C:/Users/jan/AppData/Local/Temp/claude/D--oh-my-posh/{U}/scratchpad/run-test.sh",
    "drive-quoted": f'"D:/Users/jan/AppData/Local/Temp/claude/D--oh-my-posh/{U}/scratchpad"',
    "assigned": f"OUT={SCRATCH}/out",
    "flag-equals": f"--output-dir={SCRATCH}",
    "yaml": f"cwd: /mnt/c/Users/jan/AppData/Local/Temp/claude/D--proj/{U}",
    "json-session-file": f'{{"dir": "/mnt/c/Users/jan/AppData/Roaming/Claude/projects/D--x/{U}.jsonl"}}',
    "uuid-in-a-segment": f'"/mnt/c/Users/jan/AppData/Local/Temp/Code/vscode-ipc-{U}/x2"',
    "hash-segment": f'"/Users/jan/Library/Caches/JetBrains/PyCharm2024/{SHA}"',
    "hash-mid-path": f'"/mnt/c/Users/jan/AppData/Local/Temp/claude/D--proj/{SHA}/x"',
    "windows-backslashes": f'"C:\\Users\\jan\\AppData\\Local\\Temp\\claude\\D--proj\\{U}\\run.sh"',
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_a_path_with_a_uuid_or_a_hash_is_kept(name: str) -> None:
    assert redact_text(KEPT[name], BUILTIN) == KEPT[name]


def test_a_listing_of_paths_each_with_a_hash_is_no_key_body() -> None:
    """Lines of one width, 60+ columns of base64 characters: the wrapped-block rule took them for a key."""
    shas = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(4)]
    for lines in (
        [f"/var/lib/docker/overlay2/{sha}/diff" for sha in shas],
        [f"+/home/jan/cache/objects/{sha[:2]}/{sha[2:40]}/blob" for sha in shas],  # in a diff
    ):
        assert redact_text("\n".join(lines), BUILTIN) == "\n".join(lines)
        assert redact_strings(lines, BUILTIN) == lines


def _key(seed: str, n: int = 40, alphabet: str = ALNUM) -> str:
    return rnd(f"paths/{seed}", n, alphabet)


STILL_HIDDEN = {
    # (text, the secret that must not appear)
    "webhook-url": (f'"https://host/hook/T0123/B0456/{_key("hook", 24)}"', _key("hook", 24)),
    "slack-webhook": (f"https://hooks.slack.com/services/T0123/B0456/{_key('slack', 24)}", _key("slack", 24)),
    "query-token": (f"curl 'https://api.example.com/{U}/x?token={_key('q', 20)}'", _key("q", 20)),
    "flag-token-path": (f"tool --token={SCRATCH}/{_key('flag', 24)}", _key("flag", 24)),
    "key-after-uuid": (f'"{SCRATCH}/{U}/{_key("tail", 40)}"', _key("tail", 40)),
    "aws-secret-with-slashes": ('"/wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "bPxRfiCYEXAMPLEKEY"),
    "base64-key-rooted": (f'"/{_key("root", 12)}/{_key("root2", 30, ALNUM + "+")}"', _key("root2", 30, ALNUM + "+")),
    # A UUID under a key word, or under a path segment naming one, is not set aside.
    "uuid-under-api-keys": (f'"/mnt/c/Users/jan/AppData/Local/Temp/api/keys/{U}/{_key("ak", 8)}"', U),
    "uuid-in-a-share": (f'"//fileserver/Share/AppData/Local/Temp/Data2/{U}"', U),
    "github-token-segment": (f"/tmp/{U}/{CORPUS['github-token']}/x", CORPUS["github-token"]),
    "jwt-segment": (f'"{SCRATCH}/{CORPUS["jwt"]}/x"', CORPUS["jwt"]),
    "aws-key-segment": (f"C:/Users/jan/{U}/{CORPUS['aws-access-key']}", CORPUS["aws-access-key"]),
    "private-key-segment": (
        f'"{SCRATCH}/{U}/x" -----BEGIN RSA PRIVATE KEY-----\n{CORPUS["private-key-body"]}\n'
        "-----END RSA PRIVATE KEY-----",
        CORPUS["private-key-body"],
    ),
}


@pytest.mark.parametrize("name", sorted(STILL_HIDDEN))
def test_secrets_in_paths_and_urls_stay_hidden(name: str) -> None:
    text, secret = STILL_HIDDEN[name]
    out = redact_text(text, BUILTIN)
    assert secret not in out and "[REDACTED:" in out, out


def test_a_random_segment_keeps_the_path_masked_as_before() -> None:
    """Only UUID and hex segments are set aside: a base64-ish id among the words is judged as it was
    (uv's archive ids, Claude Code's task ids), the whole run masked."""
    text = '"/uv/archive-v0/Xk3jPq9aZ2LmW8rT4vB1nQ/lib/Pkg"'
    assert redact_text(text, BUILTIN).startswith('"[REDACTED:high-entropy:')


# -- properties ----------------------------------------------------------------------------------

WORDS = st.sampled_from(
    ["home", "jan", "src", "Users", "AppData", "Local", "Temp", "claude", "scratchpad", "D--oh-my-posh",
     "node_modules", "python3", "v2", "x64", "build", "Release", "tests", "fixtures", "tasks", "subagents",
     "-home-jan-src-app", "site-packages", "pytest-12", "test_x0", "Library", "Caches", "run-test"]
)
UUIDS = st.uuids().map(str) | st.uuids().map(lambda u: str(u).upper())
HEXES = st.binary(min_size=4, max_size=32).map(bytes.hex).filter(lambda h: len(h) >= 7)
IDS = UUIDS | HEXES
ROOTS = st.sampled_from(["/", "C:/", "/mnt/c/"])
FRAMES = st.sampled_from(['"{}"', "'{}'", "bash {}", "OUT={}", "--dir={}", '{{"cwd": "{}"}}', "cwd: {}"])


@settings(max_examples=300, deadline=None)
@given(ROOTS, st.lists(WORDS, min_size=1, max_size=14), IDS, st.data(), FRAMES)
def test_an_id_segment_changes_nothing_about_what_is_masked(
    root: str, words: list[str], ident: str, data: st.DataObject, frame: str
) -> None:
    """The path with a UUID or hex segment put in is masked exactly when the path without it is, and
    when it is kept, the id is kept with it."""
    at = data.draw(st.integers(0, len(words)))
    bare = root + "/".join(words)
    path = root + "/".join([*words[:at], ident, *words[at:]])
    kept_bare = redact_text(frame.format(bare), BUILTIN) == frame.format(bare)
    out = redact_text(frame.format(path), BUILTIN)
    assert (out == frame.format(path)) is kept_bare, out
    if kept_bare:
        assert ident in out


@settings(max_examples=200, deadline=None)
@given(ROOTS, st.lists(WORDS, min_size=1, max_size=14), st.lists(UUIDS, min_size=1, max_size=3), st.data())
def test_any_uuid_segment_of_a_path_of_words_is_kept(
    root: str, words: list[str], uuids: list[str], data: st.DataObject
) -> None:
    # The path of words itself must be what the redactor keeps: a long one can reach the entropy limit, and a
    # short quoted one too ('"/Local/pytest-12/run.sh"': its run up to the dot reads 3.97 bits a character at 20).
    bare = f'"{root}{"/".join(words)}/run.sh"'
    assume(redact_text(bare, BUILTIN) == bare)
    segments = list(words)
    for u in uuids:
        segments.insert(data.draw(st.integers(0, len(segments))), u)
    path = f'"{root}{"/".join(segments)}/run.sh"'
    assert redact_text(path, BUILTIN) == path
    assert _without_ids(path.strip('"')).count("-") == "/".join(words).count("-")  # every UUID set aside


SECRETS = st.sampled_from(sorted(kind for kind, secret in CORPUS.items() if secret not in redact_text(secret, BUILTIN)))
"""The corpus's secrets found alone (the others are found by their form: a key word, a header)."""


@settings(max_examples=200, deadline=None)
@given(SECRETS, ROOTS, st.lists(WORDS, max_size=6), st.lists(WORDS, max_size=3), UUIDS, st.sampled_from(['"{}"', "{}"]))
def test_a_secret_the_patterns_find_is_found_in_a_path(
    kind: str, root: str, before: list[str], after: list[str], u: str, frame: str
) -> None:
    """Every stand-alone secret of the corpus, put as a segment of a path that holds a UUID, is not stored."""
    secret = CORPUS[kind]
    text = frame.format(root + "/".join([*before, u, secret, *after]))
    assert secret not in redact_text(text, BUILTIN)


def test_uuid_module_agrees_on_the_canonical_form() -> None:
    """The forms the path rule sets aside are the ones ``uuid`` writes (lower case) and some tools print."""
    u = str(uuid.UUID(U))
    assert _without_ids(f"/a/{u}/b") == _without_ids(f"/a/{u.upper()}/b") == "/a/b"
    assert _without_ids(f"/api/keys/{u}") == f"/api/keys/{u}"  # under a key word: left in the judged text


# -- paths made of words alone ------------------------------------------------------------------------------

WORD_PATHS = [
    # Seen masked in the fixtures and held-out logs (the user's name shown as Entire's placeholder).
    "/home/USER/projects/spotter-worktrees/spotter-4te/_build/dev/dialyxir_erlang-28",
    "/private/tmp/cyspbot-module-exp/wrangler-logs/wrangler-2026-06-27_12-38-45_740",
    "/Local/pytest-12/run.sh",
    "/home/jan/src/app-v2/build/x64/Release/tests_3.log",
]


@pytest.mark.parametrize("frame", ['"{}"', "'{}'", "OUT={}", '{{"cwd": "{}"}}', "--dir={}"])
@pytest.mark.parametrize("path", WORD_PATHS)
def test_a_path_of_words_is_kept_however_long(path: str, frame: str) -> None:
    assert redact_text(frame.format(path), BUILTIN) == frame.format(path)


@pytest.mark.parametrize("path", [
    "/private/tmp/hs/pt2n3nn16k3935lw_ljnl5t40000gn/T/codex-security-scans",  # a random segment: judged whole
    "/home/USER/api-keys/spotter-worktrees/spotter-4te/_build/dev/dialyxir_erlang-28",  # a segment names a secret
])
def test_a_path_with_a_segment_of_no_words_is_judged_whole(path: str) -> None:
    assert path not in redact_text(f'"{path}"', BUILTIN)


def test_a_random_key_that_starts_with_a_slash_is_never_taken_for_a_path_of_words() -> None:
    # Base64 keys hold slashes; one that starts with one, in a quoted value, is a rooted path to the check.
    # Its random letters change case or take digits inside a run of letters: kept as words, none of 5,000.
    rng = random.Random(20261203)
    _none_kept_that_the_whole_judgement_masks(
        [_slashed(rng, base64.b64encode(rng.randbytes(rng.randint(15, 45))).decode().rstrip("=")) for _ in range(5_000)]
    )


def _none_kept_that_the_whole_judgement_masks(values: list[str]) -> None:
    judged = 0
    for value in values:
        kept = redact_text(f'"{value}"', BUILTIN) == f'"{value}"'
        whole = _judged_whole_as_key(value)
        judged += whole
        # Kept only where the whole value would be kept without the path rules too.
        assert not (kept and whole), value
    assert judged > 0.6 * len(values)  # most of the sample reaches the limit judged whole (the short ones cannot)


def _slashed(rng: random.Random, key: str) -> str:
    """``key`` with 0-3 more slashes put in, and one before it: a base64 key's as a path check reads one."""
    for _ in range(rng.randint(0, 3)):
        at = rng.randint(1, len(key) - 1)
        key = key[:at] + "/" + key[at:]
    return "/" + key


def _judged_whole_as_key(value: str) -> bool:
    from ledger.domain.redact import high_entropy

    return high_entropy(_without_ids(value))


# -- paths of names: CamelCase, generated folders -----------------------------------------------------------

NAMED_PATHS = [
    # The six real paths the words rule left masked in the fixtures and held-out logs.
    "/Users/Sample_User/Library/Caches/pypoetry/virtualenvs/codemie-enterprise-sznbGEWF-py3",
    "/blog/2017/07/12/Give-app-servers-a-REST-CDNs-and-APIs-are-the-new-LAMP",
    "/home/randy/projects/python-3/OpenPrintKit/examples/filaments/PLA_Baseline_LK5Pro",
    "/private/var/folders/hs/pt2n3nn16k3935lw_ljnl5t40000gn/T",
    "/private/var/folders/hs/pt2n3nn16k3935lw_ljnl5t40000gn/T/codex-security-scans/cyspbot/"
    "eb7e37e9240c385b9061f0f4a59a91dd8f68d287_20260710T000000Z/report",
    "/var/folders/20/76km_m352m390m49yn4j7yjm0000gq/T/TemporaryItems/NSIRD_screencaptureui_Gkv5xW/Screenshot",
]


@pytest.mark.parametrize("frame", ['"{}"', "'{}'", "OUT={}", '{{"cwd": "{}"}}', "--dir={}"])
@pytest.mark.parametrize("path", NAMED_PATHS)
def test_a_path_of_names_is_kept(path: str, frame: str) -> None:
    assert _judged_whole_as_key(path)  # what was masked: each reaches the limit judged whole
    assert redact_text(frame.format(path), BUILTIN) == frame.format(path)


NEAR_MISSES = {
    # Each a kept path above with one thing changed that the rules refuse: judged whole, masked.
    "odd-piece-of-9": "/Users/Sample_User/Library/Caches/pypoetry/virtualenvs/codemie-enterprise-sznbGEWFq9-py3",
    "two-odd-pieces": "/Users/Sample_User/Library/Caches/pypoetry/virtualenvs/codemie-sznbGEWF-enterprise-Gkv5xW-py3",
    "odd-pieces-in-two-segments": "/Users/Sample_User/Library/Caches/pypoetry/virtualenvs/codemie-enterprise-sznbGEWF"
    "-py3/screencapture_Gkv5xW",
    "odd-piece-after-a-plus": "/Users/Sample_User/Library/Caches/pypoetry/virtualenvs/codemie-enterprise+sznbGEWF-py3",
    "odd-piece-beside-no-name": "/Users/Sample_User/Library/Caches/pypoetry/virtualenvs/LK-sznbGEWF-py3",
    "humps-of-no-word": "/home/randy/projects/python-3/QzvPrkJtw/examples/filaments/PLA_Baseline_LK5Pro",
    "humps-misspelt": "/home/randy/projects/python-3/OpenPrntKvt/examples/filaments/PLA_Baseline_LK5Pro",
    "digits-inside-humps": "/home/randy/projects/python-3/Open3Print7Kit/examples/filaments/PLA_Baseline_LK5Pro",
    "humps-too-varied": "/home/randy/projects/python-3/QuickBrownFoxJumps/examples/filaments/PLA_Baseline_LK5Pro",
    "macos-folder-elsewhere": "/private/tmp/hs/pt2n3nn16k3935lw_ljnl5t40000gn/T/codex-security-scans",
    "macos-folder-of-29": "/private/var/folders/hs/pt2n3nn16k3935lw_ljnl5t4000gn/T/codex-security-scans",
    "key-under-macos-folder": "/var/folders/hs/pt2n3nn16k3935lw_ljnl5t40000gn/T/Xk3jPq9aZ2LmW8rT4vB1nQ",
    "secret-under-macos-folder": "/var/folders/hs/pt2n3nn16k3935lw_ljnl5t40000gn/T/api-keys/OpenPrintKit",
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_a_path_with_a_piece_of_no_name_is_judged_whole(name: str) -> None:
    path = NEAR_MISSES[name]
    assert _judged_whole_as_key(path)
    assert redact_text(f'"{path}"', BUILTIN).startswith('"[REDACTED:high-entropy:')


@pytest.mark.parametrize(("word", "sayable"), [
    ("open", True), ("print", True), ("screencapture", True), ("strength", True), ("kit", True),
    ("sznb", False), ("qzv", False), ("prnt", False), ("rhythm", False), ("lkjhg", False), ("tkx", False),
])
def test_a_word_is_spelt_with_vowels_and_pairs_english_puts_together(word: str, sayable: bool) -> None:
    assert _sayable(word) is sayable


LOW, UP = string.ascii_lowercase, string.ascii_uppercase


def _hump_key(rng: random.Random) -> str:
    """A random key whose letters fall into CamelCase humps, the shape ``_camel`` reads: a random capital and 2-6
    small letters, one time in seven an acronym of 2-4 capitals; 1-3 digits at its end (a key of letters alone
    the whole judgement keeps); 20-60 characters, slashes as above."""
    size = rng.randint(20, 60)
    key = ""
    while len(key) < size:
        if rng.random() < 0.15:
            key += "".join(rng.choices(UP, k=rng.randint(2, 4)))
        else:
            key += rng.choice(UP) + "".join(rng.choices(LOW, k=rng.randint(2, 6)))
    digits = "".join(rng.choices(string.digits, k=rng.randint(1, 3)))
    return _slashed(rng, key[: size - len(digits)] + digits)


def test_a_random_key_of_camelcase_humps_is_never_taken_for_a_path_of_names() -> None:
    # Humps are what the CamelCase rule reads as names: its guard is the spelling, which random letters lack (with
    # the shapes and each segment's entropy alone, 78 of these 5,000 keys were kept that the whole judgement masks).
    rng = random.Random(20261203)
    _none_kept_that_the_whole_judgement_masks([_hump_key(rng) for _ in range(5_000)])
