"""The planted sweep of ``test_secrets_everywhere`` on PostgreSQL: a file of its own, so that the suite's
workers (a whole file each) run it beside the SQLite one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_secrets_everywhere import sweep_every_byte


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_no_planted_secret_in_any_byte_on_postgres(
    tmp_path: Path, backend: str, new_store: Callable[[], str], capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_every_byte(tmp_path, backend, new_store, capsys)
