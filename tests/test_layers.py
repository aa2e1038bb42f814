"""The layers import one way (docs/layers.md): every import of every module, parsed with ``ast``.

Fails on an import cycle between modules (function-level and ``TYPE_CHECKING`` imports count: hiding a
cycle in a function or behind a type check is still a cycle), on an import from a lower layer to a higher
one (``TYPE_CHECKING`` imports count too: a type is a dependency), on a third-party import in
``ledger/base``, and on a function-level import of a project module that is not in ``DEFERRED`` below.
Each failure names the file and line.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

LAYERS = ("ledger.base", "ledger.domain", "ledger.stores", "projections", "ledger.app", "ledger.capture", "cli")
"""Lowest first: a module may import its own layer and the layers before it, never one after it."""

DEFERRED: dict[tuple[str, str], str] = {
    # (importing module, or a folder's modules as "cli.*"; imported module or package): why inside a function
    ("cli.*", "ledger"): "a command loads what it runs when it runs: `trail --help` loads none (test_startup.py)",
    ("cli.*", "projections"): "as above: the folds and DuckDB load only for the commands that use them",
    ("cli.*", "cli"): "as above: one command's module loads another's only when that command runs",
    ("ledger.capture.hook", "ledger.app.briefcache"): "SessionStart only: every other hook event stays lean",
    ("ledger.capture.hook", "ledger.capture.agent_mcp"): "SessionStart only, as above",
    ("ledger.capture.hook", "ledger.capture.inbox"): "SessionStart's cache miss only: the inbox loads the ledger",
    ("ledger.capture.hook", "ledger.capture.patchlines"): "an apply_patch PostToolUse only: the rest stay lean",
    ("ledger.capture.inbox_queue", "ledger.base.location"): "only a command asks whether rows wait; the hook"
    " imports the queue, and dataclasses and pathlib cost it ~10 ms",
    ("ledger.app.briefcache", "projections.brief"): "a cached answer is standard library only; keeping one folds",
    ("ledger.app.briefcache", "ledger.app.refs"): "as above: only keeping an answer reads the pointers",
    ("ledger.app.briefcache", "ledger.base.location"): "as above (dataclasses and pathlib cost the hook ~10 ms)",
    ("ledger.app.store", "ledger.stores.postgres"): "psycopg loads only for PostgreSQL ledgers",
    ("ledger.stores", "ledger.stores.postgres"): "psycopg loads only for PostgreSQL ledgers",
    ("ledger.stores.archived", "ledger.stores.duckdb_offline"): "DuckDB (~20 ms) loads only for compacted tasks",
    ("ledger.app.forget", "projections.readmodel"): "DuckDB loads only when there is a read model to remove",
    ("ledger.app.migrate", "projections.readmodel"): "DuckDB loads only when there is a read model to drop",
    ("ledger.app.artifacts", "projections.readmodel"): "DuckDB loads only when there is a read model to drop",
    ("ledger.app.recording", "ledger.domain.events"): "`trail mcp` names the record kinds before it loads pydantic",
    ("ledger.domain.redact", "ledger.domain.events"): "the hook redacts every payload; events loads pydantic",
    ("ledger.app.reading", "projections.why"): "unidiff loads for `why` only: `resume` reads through here too",
    ("projections.timeline", "projections.why"): "unidiff loads only for a path filter, not for `resume`",
    ("ledger.app.recording", "ledger.app.workspace"): "subprocess and difflib load only for a checkpoint",
    ("projections.capped_query", "projections.readmodel"): "DuckDB loads in the sandboxed child, not the parent",
    ("ledger.capture.agents.*", "ledger.capture.agents"): "an agent's parsers load at its first mapping: `resume`"
    " loads the agent for its budget only (test_startup.py)",
    ("ledger.capture.agents.*", "projections.brief"): "the brief's measures (~100 ms with the folds) load for a budget:"
    " draining the inbox loads agents, not briefs",
    ("ledger.capture.agent", "projections.brief"): "as above: the default budget",
    ("ledger.capture.hook", "ledger.capture.detach"): "a stop's hook only: contextlib and the drain's lock",
    ("ledger.capture.hook", "ledger.capture.inbox_queue"): "the full path only: a spooled tool event takes no"
    " json, sqlite3 or typing",
    ("ledger.capture.hook", "ledger.domain.redact"): "as above: redaction runs where the spool is folded",
    ("ledger.app.briefcache", "ledger.base.hook_spool"): "only a cache that would answer asks whether files wait",
    ("ledger.app.findindex", "ledger.base"): "the fast find is sqlite3 and json only: dataclasses, pathlib and"
    " the ledger's helpers load for the full path or a fill (test_startup.py)",
    ("ledger.app.findindex", "projections.readmodel"): "DuckDB loads only to fill the index",
    ("ledger.app.findindex", "projections.queries"): "as above: its dataclasses cost the fast find ~15 ms",
    ("ledger.app.findindex", "ledger.app.verify"): "pydantic and eventsourcing load only to fill the index",
    ("ledger.app.forget", "ledger.app.findindex"): "the index is removed only where an SQLite ledger has one",
    ("projections.find", "projections.queries"): "its module's dataclass costs the fast find ~15 ms",
}
"""Function-level imports of project modules, each there only for start-up cost."""

PENDING: dict[tuple[str, str], str] = {}
"""Imports up a layer that another change in flight removes; ``test_pending_imports_still_exist`` fails once
one is gone, so an entry cannot outlive its import."""

ROOTS = ("ledger", "projections", "cli")


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    path: Path
    line: int
    kind: str  # "module", "function" or "TYPE_CHECKING"

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The project module an imported name lives in (``ledger.app.store.Ledger`` -> ``ledger.app.store``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _names(node: ast.Import | ast.ImportFrom, module: str, path: Path) -> Iterator[str]:
    """The full dotted names one import statement reaches (relative imports made absolute)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    # Each name is a submodule or a name in the module ``base``: ``_resolve`` finds which.
    yield from (base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)


def _walk(nodes: list[ast.stmt], kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, kind
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.body, "TYPE_CHECKING")
            yield from _walk(node.orelse, kind)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk_all(node, "function" if kind == "module" else kind)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _walk(getattr(node, field, None) or [], kind)
            for case in getattr(node, "cases", None) or []:
                yield from _walk(case.body, kind)


def _walk_all(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import anywhere inside a function (nested blocks and functions included)."""
    for child in ast.walk(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, kind


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    for node, kind in _walk(tree.body, "module"):
        targets: set[str] = set()
        for name in _names(node, module, path):
            target = _resolve(name)
            if target is not None and target != module:
                targets.add(target)
        for target in sorted(targets):
            yield Import(module, target, path, node.lineno, kind)


def _third_party(module: str, path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    for node, _ in _walk(tree.body, "module"):
        for name in _names(node, module, path):
            top = name.split(".")[0]
            if node_is_relative(node) or not top:
                continue
            if top not in sys.stdlib_module_names and not name.startswith("ledger.base") and top != "__future__":
                yield name, node.lineno
            break  # the module named is enough; the names imported from it are the same package


def node_is_relative(node: ast.Import | ast.ImportFrom) -> bool:
    return isinstance(node, ast.ImportFrom) and node.level > 0


IMPORTS = [imp for module, path in MODULES.items() for imp in _imports(module, path)]


def _layer(module: str) -> int:
    for rank, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return rank
    return -1  # the `ledger` package itself: nothing below it


def test_no_import_goes_up_a_layer() -> None:
    back = [f"{imp.where}: {imp.source} ({LAYERS[_layer(imp.source)]}) imports {imp.target} "
            f"({LAYERS[_layer(imp.target)]}), a higher layer [{imp.kind}]"
            for imp in IMPORTS if _layer(imp.target) > _layer(imp.source) and (imp.source, imp.target) not in PENDING]
    assert not back, "imports against the layers (docs/layers.md):\n" + "\n".join(back)


def test_base_imports_only_the_standard_library() -> None:
    bad = [f"{path.relative_to(REPO)}:{line}: imports {name}, not in the standard library"
           for module, path in MODULES.items() if module.startswith("ledger.base")
           for name, line in _third_party(module, path)]
    assert not bad, "\n".join(bad)


def _cycle(edges: dict[str, dict[str, Import]]) -> list[Import] | None:
    """One import cycle as the imports that close it, or None (depth-first search)."""
    done: set[str] = set()
    path: list[Import] = []
    on_path: dict[str, int] = {}  # module -> its position on the current path

    def visit(module: str) -> list[Import] | None:
        on_path[module] = len(path)
        for imp in sorted(edges[module].values(), key=lambda i: i.target):
            if imp.target in on_path:
                return [*path[on_path[imp.target]:], imp]
            if imp.target not in done:
                path.append(imp)
                found = visit(imp.target)
                if found:
                    return found
                path.pop()
        del on_path[module]
        done.add(module)
        return None

    for module in sorted(edges):
        if module not in done and (found := visit(module)):
            return found
    return None


def test_no_import_cycle() -> None:
    edges: dict[str, dict[str, Import]] = {module: {} for module in MODULES}
    for imp in IMPORTS:
        # TYPE_CHECKING imports count: never run, but a module that needs another's types to be read
        # is tied to it as much as by an import that runs.
        edges[imp.source].setdefault(imp.target, imp)
    cycle = _cycle(edges)
    assert cycle is None, "import cycle:\n" + "\n".join(
        f"{imp.where}: {imp.source} imports {imp.target} [{imp.kind}]" for imp in cycle)


def test_function_level_imports_of_project_modules_are_only_for_start_up() -> None:
    loose = [f"{imp.where}: {imp.source} imports {imp.target} inside a function"
             for imp in IMPORTS if imp.kind == "function" and not _deferred(imp)]
    assert not loose, ("import at module level, or add to DEFERRED with why start-up needs it:\n"
                       + "\n".join(loose))


def test_every_deferral_and_pending_entry_is_still_needed() -> None:
    deferred = {key for key in DEFERRED if any(_matches(imp, key) for imp in IMPORTS if imp.kind == "function")}
    assert deferred == set(DEFERRED), f"no longer imported inside a function: {sorted(set(DEFERRED) - deferred)}"
    pending = {(imp.source, imp.target) for imp in IMPORTS} & set(PENDING)
    assert pending == set(PENDING), f"gone: delete from PENDING: {sorted(set(PENDING) - pending)}"


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _matches(imp: Import, key: tuple[str, str]) -> bool:
    source = imp.source.startswith(key[0][:-1]) if key[0].endswith(".*") else imp.source == key[0]
    return source and _within(imp.target, key[1])


def _deferred(imp: Import) -> bool:
    return any(_matches(imp, key) for key in DEFERRED)
