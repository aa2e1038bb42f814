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
        ("instead, write TOML", "change"),
        ("scratch that, go with SQLite", "change"),
        ("Now add a --json flag", "requirement"),
        # Redirections without a leading cue word (the worst misses on the real transcripts).
        ("oh, I didn't find those links helpful, can you replace them with one link?", "correction"),
        ("Oh no, we lost the navigation section somehow :(", "correction"),
        ("it's bad idea, since the whole conversation is read every time", "correction"),
        ("ir's not jsonl file. it's json file with a structure", "correction"),
        ("The redirection doesn't work :( we might need vercel.json?", "correction"),
        ("Are you sure the HTML is the issue? The page loaded", "correction"),
        ("TODO is not acceptable, implementation must be full.", "correction"),
        ("I said tabs, not spaces", "correction"),
        ("I asked for a CLI flag, not an env var", "correction"),
        ("you shouldn't touch the migrations", "correction"),
        ("instead of JSON write TOML", "correction"),
        ("why is it still slow?", "correction"),
        ("the tests still fail", "correction"),
        ("it's still showing the old page", "correction"),
        ("use pnpm not npm", "correction"),
        ("we don't need a cache here", "correction"),
        ("remove the logging you added", "correction"),
        # Ordinary new requests stay requirements.
        ("Please add a test that the parser doesn't work on empty input", "requirement"),
        ("Is everything OK with this project? Do all the tests pass?", "requirement"),
        ("There's only a README.md there, please also fill in the readme", "requirement"),
        ("ok, fine, let's do vite", "requirement"),
        ("I think we should use SQLite for the cache", "requirement"),
        ("Remove the unused imports in cli/", "requirement"),
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
