"""Which shell lines only read: kept in the log, out of "Last results" and never counted as failures."""

from __future__ import annotations

import pytest

from projections.commands import chain_heads, command_head, is_probe, is_read_only


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
    "{ ls; pwd; }",
    "cat <<EOF\nrm -rf /\nEOF",  # a heredoc's body is input, not commands
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


@pytest.mark.parametrize(("line", "head"), [
    # Heads over the shared fixtures that the tokenizer once got wrong: redirection targets, heredoc bodies
    # and a subshell's parenthesis read as arguments.
    ("cat > types/todo.ts << 'EOF'\n/**\n * Core Todo interface\n */\nexport interface Todo {}\nEOF", "cat"),
    ("find ~/.codex -name \"sessions\" -type d 2>/dev/null | head -5", "find .codex"),
    ("claude --help 2>/dev/null | head -100", "claude"),
    ("(source .venv/bin/activate && pytest -x)", "pytest"),
    ("pytest -q 2>&1 | tail -5", "pytest"),
])
def test_a_head_names_no_redirection_heredoc_or_subshell(line: str, head: str) -> None:
    assert command_head(line) == head


def test_chain_heads_read_the_shells_operators() -> None:
    commit = "git add a.py && git commit -m \"$(cat <<'EOF'\nfix: it couldn't\nEOF\n)\""
    assert chain_heads(commit) == ("git add", "git commit")
    assert chain_heads("(source .venv/bin/activate && ruff check src/ && pytest)") == (
        "source activate", "ruff check src", "pytest")
    assert chain_heads("echo '&&' && make") == ("echo", "make")  # a quoted && is an argument
    assert chain_heads("make && make test || true") == ("make",)
