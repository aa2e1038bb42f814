"""The one shell tokenizer (``ledger.base.shell``) behind reading commands in the fold and their file effects
at capture: held against bash itself, and on the shapes agents write (redirections, heredocs, ``$(...)``)."""

from __future__ import annotations

import shlex
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.base.shell import Op, Redirect, tokens, words

# Characters bash reads without expanding anything once globbing is off (no $, `, ~, braces, operators).
plain = st.text(alphabet=st.sampled_from([*"ab-./=#*?", "'", '"', "\\", " ", "\t", "é", "\u3000"]), max_size=20)


@settings(max_examples=200, deadline=None)
@given(line=plain)
def test_words_are_the_words_bash_finds(line: str) -> None:
    # bash prints each argument it was given, NUL-ended (after a first, so that none is not one empty);
    # a quote left open is its syntax error.
    done = subprocess.run(["bash", "-c", "set -f; printf '%s\\0' first " + line], capture_output=True)
    expected = None if done.returncode else done.stdout.decode().split("\0")[1:-1]
    assert tokens(line) == expected


OPS = ["&&", "||", ";", ";;", "|", "|&", "&", "(", ")", "\n"]


@settings(max_examples=200)
@given(pieces=st.lists(st.one_of(st.text(max_size=8).map(lambda w: ("word", w)),
                                 st.sampled_from(OPS).map(lambda o: ("op", o))), max_size=8))
def test_quoted_words_and_operators_come_back_as_written(pieces: list[tuple[str, str]]) -> None:
    line = " ".join(shlex.quote(text) if kind == "word" else text for kind, text in pieces)
    got = tokens(line)
    assert got is not None
    assert [("op" if isinstance(t, Op) else "word", t) for t in got] == pieces


@settings(max_examples=500)
@given(line=st.text(max_size=40) | st.text(alphabet=st.sampled_from(list("a '\"\\$()<>&|;#\n-EOF")), max_size=40))
def test_any_text_gives_tokens_or_none(line: str) -> None:
    got = tokens(line)
    assert got is None or all(isinstance(t, str | Redirect) for t in got)


def test_redirections_are_kept_apart_from_words() -> None:
    assert tokens("pytest -q 2>&1 | tail -5") == ["pytest", "-q", Redirect(">&", "1"), "|", "tail", "-5"]
    assert tokens("ls ~/x 2>/dev/null") == ["ls", "~/x", Redirect(">", "/dev/null")]
    assert tokens("make >build.log") == ["make", Redirect(">", "build.log")]
    assert tokens("run &> 'out file'") == ["run", Redirect("&>", "out file")]
    writes = {line: any(isinstance(t, Redirect) and t.writes_file for t in tokens(line) or ())
              for line in ("a 2>&1", "a >/dev/null", "a 2>&-", "a > f", "a >> f", "a &> f", "a < f")}
    assert writes == {"a 2>&1": False, "a >/dev/null": False, "a 2>&-": False, "a > f": True, "a >> f": True,
                      "a &> f": True, "a < f": False}


def test_a_heredoc_body_is_skipped() -> None:
    line = "cat > types/todo.ts << 'EOF'\nexport * from './todo';\n  EOF not yet\nEOF\nls"
    assert tokens(line) == ["cat", Redirect(">", "types/todo.ts"), Redirect("<<", "EOF"), "\n", "ls"]
    assert tokens("cat <<-END\n\tbody\n\tEND\npwd") == ["cat", Redirect("<<-", "END"), "\n", "pwd"]


def test_a_command_substitution_is_one_word_and_its_heredoc_opens_no_quote() -> None:
    line = "git add a.py && git commit -m \"$(cat <<'EOF'\nfix: it couldn't (not yet)\nEOF\n)\""
    assert tokens(line) == ["git", "add", "a.py", "&&", "git", "commit", "-m",
                            "$(cat <<'EOF'\nfix: it couldn't (not yet)\nEOF\n)"]
    assert tokens("echo $(date; ls) done") == ["echo", "$(date; ls)", "done"]


@pytest.mark.parametrize("line", ["echo 'open", 'echo "open', "echo $(ls", 'x "$(cat <<E\nE\n"'])
def test_unclosed_quotes_and_substitutions_give_none(line: str) -> None:
    assert tokens(line) is None


def test_comments_and_line_joins() -> None:
    assert tokens("ls # list\npwd") == ["ls", "\n", "pwd"]
    assert tokens("a#b \\\n c") == ["a#b", "c"]


def test_words_splits_at_operators_and_leaves_redirections_out() -> None:
    toks = tokens("(cd x && make 2>&1) | tee log; echo '&&'")
    assert toks is not None
    assert words(toks) == [[], ["cd", "x"], ["make"], [], ["tee", "log"], ["echo", "&&"]]
    assert not isinstance(toks[-1], Op)  # a quoted && is a word


shell_text = st.text(alphabet=st.sampled_from([*"ab -|&;()<>'\"\\$#\n\t=2"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(line=shell_text)
def test_a_line_split_again_gives_what_splitting_it_afresh_gives(line: str) -> None:
    from ledger.base.shell import _tokens

    first = tokens(line)
    if first is not None:
        first.append("spoiled")  # a caller's list is its own (``projections.commands`` pops from its)
    again, afresh = tokens(line), _tokens(line)
    assert again == afresh and [type(t) for t in again or []] == [type(t) for t in afresh or []]  # an Op stays one
    assert tokens(line) is not tokens(line) or tokens(line) is None
    long = "a " * 2100 + line  # past the memo's length: split each time
    assert tokens(long) == _tokens(long)
