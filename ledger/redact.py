"""Redaction: secrets are replaced by a marker before anything is appended to the ledger.

A marker keeps the kind of secret and a short hash of it, ``[REDACTED:github-token:3f2a9c1b]``,
so two mentions of one secret stay recognisable without revealing it. The ledger's write path
(``Ledger.append_many``, ``Ledger.open_task``) calls ``redact_fields``, so every path (CLI,
hook, import) is covered. Users add patterns in ``TRAIL_HOME/redact.toml`` (or ``redact.json``)::

    [[pattern]]
    name = "internal-token"        # the marker's kind
    regex = "itk_[A-Za-z0-9]{20,}" # Python regex; group 1, when present, is the part replaced
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from functools import lru_cache
from typing import Any, NamedTuple

from ledger.errors import TrailError
from ledger.home import home_dir

MARKER_PREFIX = "[REDACTED:"


class Pattern(NamedTuple):
    name: str
    regex: re.Pattern[str]
    group: int = 0
    """The group replaced by the marker (0: the whole match)."""
    hints: tuple[str, ...] = ()
    """Lower-case substrings one of which any match contains: text without them skips the regex
    (most text holds no secret, and every appended string is scanned). Empty: always run."""


_KEY_WORDS = r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)"

BUILTIN: tuple[Pattern, ...] = (
    Pattern(
        "private-key",
        # An unterminated block (a cut tail) is redacted to the end of the text.
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|\Z)", re.S
        ),
        hints=("private key",),
    ),
    Pattern("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), hints=("sk-ant-",)),
    Pattern("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), hints=("sk-",)),
    Pattern("stripe-key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), hints=("_live_", "_test_")),
    Pattern(
        "github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Pattern("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), hints=("akia", "asia")),
    Pattern("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), hints=("xox",)),
    Pattern("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35,}"), hints=("aiza",)),
    Pattern("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), hints=("eyj",)),
    Pattern(
        "bearer",
        re.compile(
            r"(?i)(?:\bbearer\s+|\bauthorization[\"']?\s*[:=]\s*[\"']?(?:basic|token|bearer)?\s*)"
            r"([A-Za-z0-9._~+/-]{12,}=*)"
        ),
        group=1,
        hints=("bearer", "authorization"),
    ),
    Pattern("url-password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@"), group=1, hints=("://",)),
    # .env-style or JSON/YAML assignments whose key names a secret: KEY=value, "key": "value".
    Pattern(
        "assignment",
        re.compile(
            r"(?i)(?<![A-Za-z0-9_.:-])[A-Za-z0-9_.-]*" + _KEY_WORDS + r"\b[\"']?\s*[:=]\s*[\"']?"
            r"(?!\[REDACTED|\$|<|\*\*\*|(?:true|false|null|none)\b)([^\s\"'`,;(){}]{3,}+)(?!\()"
        ),
        group=1,
        hints=("passw", "passphrase", "secret", "token", "key", "credential"),
    ),
)


def marker(kind: str, secret: str) -> str:
    digest = hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()[:8]
    return f"{MARKER_PREFIX}{kind}:{digest}]"


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
            raise TrailError(f"bad redaction config {path}: {exc}") from exc
        patterns = []
        for i, entry in enumerate(entries, 1):
            try:
                regex = re.compile(str(entry["regex"]))
            except (KeyError, TypeError, re.error) as exc:
                raise TrailError(f"bad redaction config {path}, pattern {i}: {exc!r}") from exc
            patterns.append(Pattern(str(entry.get("name", "custom")), regex, 1 if regex.groups >= 1 else 0))
        return tuple(patterns)
    return ()


@lru_cache(maxsize=8)
def patterns_for(home: str) -> tuple[Pattern, ...]:
    return (*_load_user_patterns(home), *BUILTIN)


def redact_text(text: str, patterns: tuple[Pattern, ...] | None = None) -> str:
    """``text`` with every secret replaced by its marker."""
    lower = text.lower()
    for pattern in patterns if patterns is not None else patterns_for(home_dir()):
        if pattern.hints and not any(hint in lower for hint in pattern.hints):
            continue
        text = pattern.regex.sub(functools.partial(_replace, pattern), text)
    return text


def _replace(pattern: Pattern, match: re.Match[str]) -> str:
    """The match with its secret group swapped for the marker (left alone if already a marker)."""
    secret = match.group(pattern.group)
    if secret.startswith(MARKER_PREFIX):
        return match.group(0)
    start, end = (i - match.start() for i in match.span(pattern.group))
    text = match.group(0)
    return text[:start] + marker(pattern.name, secret) + text[end:]


def redact_value(value: Any, patterns: tuple[Pattern, ...] | None = None) -> Any:
    """Redact every string inside ``value`` (str, pydantic model, list, tuple, dict)."""
    # Imported here so the capture hook can use redact_text without loading pydantic.
    from pydantic import BaseModel

    from ledger.events import SourceKey

    if isinstance(value, str):
        redacted = redact_text(value, patterns)
        return value if redacted == value else redacted
    if isinstance(value, SourceKey):
        return value  # identifiers, not content: redacting could merge or split source keys
    if isinstance(value, BaseModel):
        update = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = redact_value(old, patterns)
            if new is not old and new != old:
                update[name] = new
        return value.model_copy(update=update) if update else value  # most values hold no secret
    if isinstance(value, tuple):
        return tuple(redact_value(v, patterns) for v in value)
    if isinstance(value, list):
        return [redact_value(v, patterns) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v, patterns) for k, v in value.items()}
    return value


def redact_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """An event's fields with every string redacted (a new dict; the input is left alone)."""
    patterns = patterns_for(home_dir())
    return {name: redact_value(value, patterns) for name, value in fields.items()}
