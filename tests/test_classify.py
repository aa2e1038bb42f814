"""The prompt classifier's documented rules, one case each way."""

from __future__ import annotations

import pytest

from ledger.capture.classify import classify


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("no, use the existing parser", "correction"),
        ("Don't touch the migrations", "correction"),
        ("That's wrong: the limit is per user", "correction"),
        ("it still fails with the same error", "correction"),
        ("you forgot the README", "correction"),
        ("Why did you delete the test?", "correction"),
        ("revert that change", "correction"),
        ("<ide_selection>x = 1</ide_selection> no, keep x", "correction"),
        ("Actually, make it a CLI flag", "change"),
        ("instead of JSON write TOML", "change"),
        ("scratch that, go with SQLite", "change"),
        ("Now add a --json flag", "requirement"),
        ("no need to hurry, but add logging", "requirement"),
        ("Please explain why the tests are slow; no rush", "requirement"),
    ],
)
def test_rules(text: str, kind: str) -> None:
    assert classify(text, first=False) == kind


def test_first_prompt_is_a_requirement_even_when_it_sounds_like_a_correction() -> None:
    assert classify("no tests exist yet; add them", first=True) == "requirement"


def test_after_an_interrupt_any_prompt_is_a_correction() -> None:
    assert classify("add the flag to the parser", first=False, after_interrupt=True) == "correction"
    assert classify("add the flag to the parser", first=False) == "requirement"
