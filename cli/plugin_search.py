"""Pydantic without its plugin search: a `trail` command (``cli.main``) calls ``skip()`` before any model is built.

Building its first validator, pydantic looks for plugins of its own (the ``pydantic`` entry-point group):
it imports ``importlib.metadata`` (and with it the ``email`` package) and reads the metadata of every
installed distribution. That is ~30-40 ms of CPU in every `trail` process that validates a model, near a
tenth of `trail list`, and the test suite runs thousands of them. tasktrail registers no such plugin and
runs none inside its commands and hooks, so the search answers "none" without looking. A host process that
imports the ledger as a library is not touched (its plugins are its own), nor one whose loader is already in.
"""

from __future__ import annotations

import sys
import types

LOADER = "pydantic.plugin._loader"
"""The module pydantic imports, when it builds a validator, for its one function ``get_plugins``."""


def skip() -> None:
    """Stand in for pydantic's plugin loader with one that finds no plugins (idempotent)."""
    if LOADER in sys.modules:
        return
    stand_in = types.ModuleType(LOADER, "tasktrail: no pydantic plugins are searched for (cli.plugin_search)")
    stand_in.get_plugins = _none  # type: ignore[attr-defined]
    sys.modules[LOADER] = stand_in


def _none() -> tuple[()]:
    return ()
