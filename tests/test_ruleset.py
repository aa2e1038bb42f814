"""The maintained vendor ruleset (``ledger.domain.ruleset``, betterleaks' rules) on the write path: a token
only it knows is redacted where it runs (``TRAIL_RULESET=on``, ``trail import``) and kept where it does
not (``off``), on both backends; the built-in rules stay as they were without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.domain import ruleset
from ledger.domain.redact import BUILTIN, Redactor, redact_text
from tests.conftest import run_trail

pytest.importorskip("betterleaks")

SHOPIFY = "shpat_" + "4f1c9a0be27d5386" * 2
"""A Shopify access token: in the ruleset (``shopify-access-token``), not in the built-in rules."""


def _stored(home: Path, number: str = "1") -> str:
    return run_trail("log", number, "--json", home=home, check=True).stdout


def test_the_built_in_rules_alone_miss_the_token() -> None:
    # Else the tests below would not show the ruleset doing anything.
    assert redact_text(f"use {SHOPIFY} now", BUILTIN) == f"use {SHOPIFY} now"


def test_a_write_runs_the_ruleset_when_on_and_not_when_off(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ruleset.RULESET_ENV, "on")
    run_trail("start", "Shop sync", home=home, check=True)
    run_trail("note", f"the admin token is {SHOPIFY}, rotate it", home=home, check=True)
    monkeypatch.setenv(ruleset.RULESET_ENV, "off")
    run_trail("note", f"again: {SHOPIFY}", home=home, check=True)
    log = _stored(home)
    notes = [e for e in json.loads(log) if e["type"] == "NoteAdded"]
    assert "[REDACTED:ruleset-shopify-access-token:" in json.dumps(notes[0]) and SHOPIFY not in json.dumps(notes[0])
    assert SHOPIFY in json.dumps(notes[1])  # off: the built-in rules alone


def test_an_import_runs_the_ruleset_without_being_asked(home: Path, tmp_path: Path) -> None:
    base = {"sessionId": "77777777-aaaa-4bbb-8ccc-000000000007", "cwd": str(tmp_path), "version": "2.0.0",
            "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "p1", "parentUuid": None, "timestamp": "2026-01-01T00:00:01Z",
         "message": {"role": "user", "content": f"Sync the shop; its token is {SHOPIFY}"}},
    ]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run_trail("import", "claude-code", str(transcript), home=home, check=True)
    log = _stored(home)
    assert SHOPIFY not in log and "[REDACTED:ruleset-shopify-access-token:" in log


def test_one_call_for_a_batch_and_every_occurrence_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = ruleset._scanner()
    assert real is not None

    def counted(text: str) -> list[object]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(ruleset, "_scanner", lambda: counted)
    monkeypatch.setenv(ruleset.RULESET_ENV, "on")
    batch = [{"text": f"token {SHOPIFY}"}, {"argv": ("curl", "-H", f"X-Shopify-Access-Token: {SHOPIFY}")},
             {"text": "nothing here"}]
    redactor = Redactor(BUILTIN).prescan(batch)
    assert len(calls) == 1
    out = [redactor.fields(fields) for fields in batch]
    assert SHOPIFY not in json.dumps(out) and out[2] == {"text": "nothing here"}
    marker = out[0]["text"].removeprefix("token ")
    assert marker.startswith("[REDACTED:ruleset-shopify-access-token:")
    assert out[1]["argv"][2].endswith(marker[-10:])  # the same secret, the same hash (here under a secret key)
