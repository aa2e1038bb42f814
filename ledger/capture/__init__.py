"""Capture from real agents: transcript importers, the Claude Code hook and its inbox."""
