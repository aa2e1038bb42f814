"""A command's output tail: the quick readings give what the plain definition gives, on any text."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from uuid import uuid4

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain import events as ev
from ledger.domain.bounds import bound
from projections import facts

# Error words in any case, the non-ASCII letters the case-blind regex folds onto ASCII ones (the
# Kelvin sign, dotless i, long s), and every line break splitlines knows, \r\n included.
PIECES = ["error", "ERROR", "Fail", "not found", "NOT FOUND", "traceback", "ok", "passed", " ", "x" * 30,
          "\u212a", "\u0131", "\u0130", "\u017f", "tracebac\u212a", "fa\u0131l", "\n", "\r", "\r\n", "\x0b", "\x0c",
          "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\t", "é"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
# Long enough for the window tail_lines reads first, with its lines long or short.
long_texts = st.lists(st.sampled_from(["line of output\n", "x" * 300 + "\r\n", "y" * 700 + "\n", "error here\r",
                                       "\n", "  \n"]), min_size=100, max_size=400).map("".join)
_REGEX = re.compile(r"error|exception|traceback|fail|fatal|panic|cannot|not found", re.IGNORECASE)


def plain_tail(text: str, lines: int = facts.OUTPUT_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def plain_output_tail(event: ev.CommandRan) -> str:
    out = facts.shown(event.stderr)
    if not out.strip():
        out = facts.shown(event.stdout)
    tail = plain_tail(out)
    if facts.command_failed(event.exit_code) and not _REGEX.search(tail):
        telling = [line for line in out.splitlines() if _REGEX.search(line)]
        if telling:
            return plain_tail("\n".join([*telling[-(facts.OUTPUT_TAIL_LINES - 1) :], out.rstrip().splitlines()[-1]]))
    return tail


@settings(max_examples=1000)
@given(text=texts | st.text(max_size=40))
def test_names_error_is_the_case_blind_regex(text: str) -> None:
    assert facts.names_error(text) == (_REGEX.search(text) is not None)


@settings(max_examples=300)
@given(text=long_texts | texts, lines=st.integers(1, 6))
def test_tail_lines_reads_a_long_text_as_a_split_of_all_of_it_would(text: str, lines: int) -> None:
    assert facts.tail_lines(text, lines) == plain_tail(text, lines)


@settings(max_examples=500)
@given(stdout=long_texts | texts, stderr=st.none() | texts, exit_code=st.sampled_from([0, 1, None]))
def test_output_tail_is_the_plain_definition(stdout: str, stderr: str | None, exit_code: int | None) -> None:
    event = ev.CommandRan(originator_id=uuid4(), originator_version=2, timestamp=datetime.now(UTC), shell="make",
                          exit_code=exit_code, stdout=bound(stdout), stderr=bound(stderr) if stderr else None)
    assert facts.output_tail(event) == plain_output_tail(event)
