"""Where per-user state lives: ``TRAIL_HOME``, else ``$XDG_DATA_HOME/tasktrail``, else ``~/.local/share/tasktrail``.

Resolved with ``os`` alone: the capture hook and the redaction of every appended event
both need it, and neither can afford pathlib or dataclasses on their path.
"""

from __future__ import annotations

import os


def home_dir() -> str:
    if home := os.environ.get("TRAIL_HOME"):
        return os.path.expanduser(home)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "tasktrail")
