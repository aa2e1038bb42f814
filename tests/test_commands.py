"""Which shell lines only read: kept in the log, out of "Last results" and never counted as failures."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.commands import _tokens, command_head, is_probe, is_read_only


@pytest.mark.parametrize("line", [
    "ls -la",
    "sed -n 1,20p src/app.py",
    "cd /repo && git status --short",
    "grep -rn foo . | head -20",
    "nl -ba f.py | sed -n 3,9p",
    "ls 2>/dev/null",
    "cat x 2>&1 | head",
    'rg -n "compact|compaction" node_modules --glob \'!**/*.map\'',  # a | inside quotes is not a pipe
    'ps -ef | rg -i "Google Chrome|chrome"',
    'ls -la ~/.claude/ 2>/dev/null || echo "No .claude directory"',
    "git log --oneline -5",
    "find . -name '*.py' -newer setup.cfg",
])
def test_reads(line: str) -> None:
    assert is_read_only(line)


@pytest.mark.parametrize("line", [
    "pytest -q",
    "npm test",
    "cat a > b",
    "echo hi >> notes.md",
    "rm -rf build",
    "git commit -m 'x | y'",
    "find . -name x -delete",
    "sed -i 's/a/b/' f",
    "echo $(rm x)",
    "for d in a b; do touch $d; done",
    "cat <<EOF > f",
    "",
    "unknown-tool --flag",
    "git branch -D old",
])
def test_work(line: str) -> None:
    assert not is_read_only(line)


@pytest.mark.parametrize(("one", "other"), [
    ("ruff check claude_code_log/renderer.py", "ruff check /Users/x/claude_code_log/renderer.py"),
    ("cd /repo && python -m pytest -q tests/test_x.py -x", "pytest tests/test_x.py"),
    ("codemie-codex --task 'write hi'", "codemie-codex --task 'write hi' --profile ollama"),
    ("git commit -m 'first try'", "git commit -am 'second try'"),
    ("FOO=1 make test", "make test"),
])
def test_same_program_and_target_share_a_head(one: str, other: str) -> None:
    assert command_head(one) == command_head(other)


@pytest.mark.parametrize(("one", "other"), [
    ("npm run build", "npm run lint"),
    ("pytest tests/a.py", "pytest tests/b.py"),
    ("git commit -m x", "git push"),
])
def test_other_work_has_another_head(one: str, other: str) -> None:
    assert command_head(one) != command_head(other)


def test_inline_scripts_are_probes() -> None:
    assert is_probe('cd test && uv run python -c "import x"') and is_probe("node -e 'console.log(1)'")
    assert not is_probe("python manage.py migrate") and not is_probe("pytest -c setup.cfg")


# Words, every character shlex treats apart (quotes, escapes, comments, operators) and whitespace it
# does and does not split at (str.split splits at more), mixed.
shellish = st.text(alphabet=st.sampled_from(list("ab-./=*~$`{}!") + list("'\"\\#();<>|&") +
                                            [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0",
                                             "\u2003", "\u3000", "é"]), max_size=24)


@settings(max_examples=2000)
@given(line=shellish | st.text(max_size=24))
def test_a_line_splits_into_the_words_shlex_finds(line: str) -> None:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        expected: list[str] | None = list(lexer)
    except ValueError:
        expected = None  # a quote left open
    assert _tokens(line) == expected
