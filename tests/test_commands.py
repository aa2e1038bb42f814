"""Which shell lines only read: kept in the log, out of "Last results" and never counted as failures."""

from __future__ import annotations

import pytest

from projections.commands import is_read_only


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
