"""End-to-end tests with the real agent programs (Claude Code, Codex CLI) against a scripted model on loopback."""
