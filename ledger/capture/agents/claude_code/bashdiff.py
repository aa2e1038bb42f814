"""The files a Bash command changed, as Claude Code 2.1.332 states them (pure; see docs/capture.md).

From about 2.1.3xx a successful Bash call's result (the PostToolUse hook's ``tool_response``, the transcript's
``toolUseResult``, the same object in both) may carry ``bashEditDiff``: Claude Code snapshots the working tree
around the command and lists each text file it created, changed or deleted with its hunks
(``{"files": [{"filePath", "hunks": [{oldStart, oldLines, newStart, newLines, lines}], "created"?,
"deleted"?}], "moreFiles": N, "changedFiles": [...]}``), or says it could not (``skipped``, ``unavailable``).
It is on by default in ``bypassPermissions`` and auto mode (the ``bashEditDiffEnabled`` setting,
``CLAUDE_CODE_BASH_EDIT_DIFF``). A ``sed -i`` or a ``printf … > file`` is then a file change like an Edit's.

Only ``files`` give changes: ``changedFiles`` beyond them (``moreFiles``) are paths without a diff, mostly
build output (``__pycache__/*.pyc`` after a pytest run), so they are left out. What the command line itself
says (``shell_effects``: ``rm``, ``mv``, ``git mv``) stays the fact for the paths it names: a rename is one
change, not the delete and create this diff shows, and a delete gets the removed lines as its diff.
"""

from __future__ import annotations

from typing import Any

from ledger.capture.items import Item, bounded
from ledger.domain import bounds
from ledger.domain import events as ev

KEY = "#edit"
"""Suffix of a change this diff alone brings (``<tool id>#edit<i>``, ``i`` its place in ``files``): the hook and
the transcript hold the same list, so a session captured live and imported after gives each change once."""


def patch_text(patch: Any) -> str:
    """Hunks (``structuredPatch``, ``bashEditDiff`` ``hunks``) rendered as unified-diff hunks."""
    if not isinstance(patch, list):
        return ""
    out = []
    for hunk in patch:
        if not isinstance(hunk, dict):
            continue
        out.append(
            f"@@ -{hunk.get('oldStart')},{hunk.get('oldLines')} +{hunk.get('newStart')},{hunk.get('newLines')} @@"
        )
        out.extend(str(line) for line in hunk.get("lines") or ())
    return "\n".join(out)


def changed_files(result: Any) -> list[tuple[str, str, str]]:
    """(path, operation, diff) for each file ``bashEditDiff`` lists with hunks, in its order; [] without one."""
    diff = result.get("bashEditDiff") if isinstance(result, dict) else None
    files = diff.get("files") if isinstance(diff, dict) else None
    out: list[tuple[str, str, str]] = []
    for entry in files if isinstance(files, list) else ():
        path = entry.get("filePath") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not path:
            out.append(("", "", ""))  # kept in place: the next entries' keys are their places in the list
            continue
        operation = "created" if entry.get("created") is True else "deleted" if entry.get("deleted") is True \
            else "modified"
        out.append((path, operation, patch_text(entry.get("hunks"))))
    return out


def merged(effects: list[Item], result: Any, actor: str, source: ev.SourceKey, timestamp: Any) -> list[Item]:
    """``effects`` (what ``command_facts`` found in the line) with the changes ``bashEditDiff`` adds: a delete
    the line named gets the removed lines as its diff; a path the line renamed (either side) or deleted is not
    added again; every other listed file is one ``FileChanged`` keyed ``KEY``."""
    listed = changed_files(result)
    if not listed:
        return effects
    named: dict[str, int] = {}
    for index, (cls, fields) in enumerate(effects):
        if cls is ev.FileChanged:
            named[str(fields["path"])] = index
            if fields.get("renamed_from"):
                named[str(fields["renamed_from"])] = index
    out = list(effects)
    added: list[Item] = []
    for place, (path, operation, diff) in enumerate(listed):
        if not path:
            continue
        if path in named:
            cls, fields = out[named[path]]
            if fields["operation"] == "deleted" == operation and diff and fields["path"] == path:
                out[named[path]] = (cls, {**fields, "diff": bounded(diff, bounds.DIFF)})
            continue
        added.append((ev.FileChanged, {
            "path": path,
            "operation": operation,
            "diff": bounded(diff, bounds.DIFF) if diff else None,
            "actor": actor,
            "source": source.model_copy(update={"record": f"{source.record}{KEY}{place}"}),
            "timestamp": timestamp,
        }))
    return out + added
