"""ledger/base/lazyregex.py: a pattern compiled on first use behaves as ``re.compile``'s, and every built-in
redaction pattern (compiled only when a text holds its hints) is a valid regex: a broken one would
otherwise fail only in the middle of some agent's hook."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.base.lazyregex import LazyPattern, lazy
from ledger.domain import redact
from tests.conftest import REPO

SOURCES = [(r"\bsk-[A-Za-z0-9_-]{4,}", 0), (r"(?i)pass(word)?=(\S+)", 0), (r"a.b", re.S)]


def test_every_builtin_pattern_compiles() -> None:
    regexes = [p.regex for p in redact.BUILTIN] + [p.gate for p in redact.BUILTIN if p.gate is not None]
    lazies = [r for r in regexes if isinstance(r, LazyPattern)]
    assert lazies, "the built-in patterns are compiled on first use"
    for regex in lazies:
        assert isinstance(re.compile(regex.pattern, regex.flags), re.Pattern)


@given(st.sampled_from(SOURCES), st.text(alphabet="sk-PASWORDpasword=ab\n xyz_0123", max_size=40))
def test_a_lazy_pattern_answers_as_the_compiled_one(source: tuple[str, int], text: str) -> None:
    mine, theirs = lazy(*source), re.compile(*source)
    assert [m.span() for m in mine.finditer(text)] == [m.span() for m in theirs.finditer(text)]
    assert (mine.search(text) or "").__class__ is (theirs.search(text) or "").__class__
    assert mine.sub("#", text) == theirs.sub("#", text)
    assert (mine.flags, mine.groups, mine.pattern) == (theirs.flags, theirs.groups, theirs.pattern)


def test_an_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        lazy("x").nothing_such  # noqa: B018


def test_importing_redact_compiles_no_builtin_pattern() -> None:
    """What the hook pays at import: no built-in pattern compiled until a text calls for it."""
    probe = (
        "import re, sys\n"
        "compiled = []\n"
        "real = re.compile\n"
        "re.compile = lambda *a, **k: compiled.append(a[0]) or real(*a, **k)\n"
        "import ledger.domain.redact as r\n"
        "from ledger.base.lazyregex import LazyPattern\n"
        "every = [p.regex for p in r.BUILTIN] + [p.gate for p in r.BUILTIN if p.gate is not None]\n"
        "builtin = {x.pattern for x in every if isinstance(x, LazyPattern)}\n"
        "before = builtin & set(compiled)\n"
        "r.redact_text('export GITHUB_TOKEN=ghp_' + 'a' * 36, r.BUILTIN)\n"
        "print(len(before), len(builtin & set(compiled)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    before, after = map(int, done.stdout.split())
    assert before == 0 and after > 0


def test_every_module_level_lazy_pattern_compiles() -> None:
    """The project's rules (intent, claims, classify, the shell tokenizer...) compile on first use: each one
    is compiled here, so a broken pattern fails this test rather than the first fold that reaches it."""
    import importlib

    from tests.test_layers import MODULES

    found = []
    for name in MODULES:
        if name.startswith("cli"):
            continue  # commands hold no patterns of their own; importing them all loads optional extras
        module = importlib.import_module(name)
        found += [(name, key, value) for key, value in vars(module).items() if isinstance(value, LazyPattern)]
    assert {"projections.intent", "ledger.capture.classify", "ledger.base.shell"} <= {n for n, _, _ in found}
    for name, key, value in found:
        assert isinstance(re.compile(value.pattern, value._flags), re.Pattern), f"{name}.{key}"
