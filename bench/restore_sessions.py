"""Restore the held-out transcripts of `python -m bench.fidelity` from git mirrors of their sources.

    python -m bench.restore_sessions --into DIR [--mirrors DIR] [--sources FILE]
    python -m bench.restore_sessions --list-repos [--mirrors DIR]

The transcripts may not be committed; ``bench/fidelity/sessions/SOURCES.md`` says for each one which repository,
commit and path it was copied from, with its bytes and sha256. This reads every table there, finds each
repository's git directory under the mirrors folder (``owner+name/...``, as the search tool's ``fetch`` leaves it),
takes the blob with ``git show COMMIT:PATH``, checks bytes and sha256 and writes ``DIR/<file>``. A file already
there with the right sha256 is left alone, so a re-run only does what is missing. Exit 0 when every row is
restored, 1 when any is not, 2 when SOURCES.md cannot be read.

It lives beside ``bench/fidelity.py``, not in ``bench/fidelity/``: that is a data folder, and a package there
would be shadowed by the module of the same name.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "bench" / "fidelity" / "sessions" / "SOURCES.md"
DEFAULT_INTO = SOURCES.parent
MIRRORS = REPO.parent / ".mirror"

_REPO_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*"
# A repository named in prose: not part of a longer path (`test/test_data/...`, `/Users/user/repo`).
_PROSE_REPO = re.compile(rf"(?<![\w./`-])({_REPO_NAME})(?![\w/-])")
_SHA1 = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_ELLIPSIS = ("…", "...")


@dataclass(frozen=True)
class Row:
    """One transcript of SOURCES.md: where it is written and where its bytes come from."""

    file: str
    bytes: int
    sha256: str
    repo: str
    commit: str
    path: str
    ref: str | None
    """A ref naming the same tree as ``commit`` (Entire's checkpoint refs), tried when the commit is absent."""
    line: int


@dataclass(frozen=True)
class Outcome:
    row: Row
    status: str
    """``ok``, ``kept`` (already there), or what went wrong, as one printable phrase."""

    @property
    def restored(self) -> bool:
        return self.status in ("ok", "kept")


class SourcesError(ValueError):
    """SOURCES.md holds a table this cannot read: the message names the line."""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _snapshot_repo(prose: str) -> str | None:
    """The repository whose snapshot the prose says the table's files were taken from.

    "the snapshot of [the fork] OWNER/NAME", else the last repository named before the first "snapshot"
    ("... of marot/spotter (MIT ...), taken from the snapshot at HEAD ...")."""
    text = " ".join(prose.split())
    at = text.find("snapshot")
    if at < 0:
        return None
    after = re.match(rf"snapshot of (?:the fork )?({_REPO_NAME})", text[at:])
    if after:
        return after.group(1)
    before = _PROSE_REPO.findall(text[:at])
    return before[-1] if before else None


def _expand(path: str, earlier: list[str], where: str) -> str:
    """Undo the table's shorthand: ``258c7280-…/x`` and ``.../-Users-user-project/x`` name an earlier row's path."""
    for mark in _ELLIPSIS:
        if path.startswith(mark + "/"):
            tail = path[len(mark) + 1:]
            anchor = tail.split("/", 1)[0]
            for prior in reversed(earlier):
                parts = prior.split("/")
                if anchor in parts:
                    return "/".join(parts[:parts.index(anchor)] + tail.split("/"))
            raise SourcesError(f"{where}: no earlier row's path has {anchor!r} to expand {path!r}")
    parts = path.split("/")
    for i, part in enumerate(parts):
        for mark in _ELLIPSIS:
            if part.endswith(mark):
                stem = part[: -len(mark)]
                for prior in reversed(earlier):
                    found = [p for p in prior.split("/") if p.startswith(stem) and p != part]
                    if found:
                        parts[i] = found[0].removesuffix(".jsonl")
                        break
                else:
                    raise SourcesError(f"{where}: no earlier row's path starts with {stem!r} to expand {path!r}")
    return "/".join(parts)


def _same(value: str, previous: str | None, what: str, where: str) -> str:
    if value != "same":
        return value
    if previous is None:
        raise SourcesError(f"{where}: 'same' {what} with no row above it")
    return previous


def _table_rows(header: list[str], rows: list[tuple[int, str]], prose: str) -> Iterator[Row]:
    names = [h.lower() for h in header]
    try:
        i_file, i_bytes, i_sha = names.index("file"), names.index("bytes"), names.index("sha256")
    except ValueError as e:
        raise SourcesError(f"a table without file, bytes and sha256 columns: {' | '.join(header)}") from e
    i_source = next((i for i, n in enumerate(names) if "original path" in n), None)
    if i_source is None:
        raise SourcesError(f"a table without an original path column: {' | '.join(header)}")
    i_commit = names.index("commit") if "commit" in names else None
    source_head = header[i_source]
    under = re.search(r"\(under ([^)]+)\)", source_head)
    prefix = under.group(1).strip("` /") + "/" if under else ""
    named = re.search(rf"\(({_REPO_NAME})\)", source_head)
    table_repo = named.group(1) if named else None
    if "source repo @" not in source_head and table_repo is None:
        table_repo = _snapshot_repo(prose)
        if table_repo is None:
            raise SourcesError(f"no repository named for the table: {' | '.join(header)}")
    repo: str | None = None
    commit: str | None = None
    earlier: list[str] = []
    for number, line in rows:
        where = f"SOURCES.md line {number}"
        cells = _cells(line)
        if len(cells) < len(header):
            raise SourcesError(f"{where}: {len(cells)} cells, the header has {len(header)}")
        spec = cells[i_source].replace("`", "")
        if "source repo @" in source_head:
            m = re.fullmatch(r"(\S+) @ (\S+) : (.+)", spec)
            if not m:
                raise SourcesError(f"{where}: expected 'owner/name @ commit : path', got {spec!r}")
            repo = _same(m.group(1), repo, "repository", where)
            commit = _same(m.group(2), commit, "commit", where)
            raw = m.group(3)
        elif "commit :" in source_head:
            m = re.fullmatch(r"(\S+) : (.+)", spec)
            if not m:
                raise SourcesError(f"{where}: expected 'commit : path', got {spec!r}")
            repo, commit, raw = table_repo, _same(m.group(1), commit, "commit", where), m.group(2)
        elif i_commit is not None:
            repo, commit, raw = table_repo, _same(cells[i_commit], commit, "commit", where), spec
        else:
            raise SourcesError(f"{where}: the table names no commit")
        raw = re.sub(r"\s+\([^()]*\)$", "", raw.strip())  # "(session ..., 10 checkpoints)"
        ref = None
        m = re.fullmatch(r"(refs/[^:\s]+):(\S+)", raw)
        if m:
            ref, raw = m.group(1), m.group(2)
        raw = _expand(raw, earlier, where)
        earlier.append(raw)
        file, size, sha = cells[i_file].strip("`"), cells[i_bytes].replace(",", ""), cells[i_sha].strip("`")
        if repo is None or not re.fullmatch(_REPO_NAME, repo):
            raise SourcesError(f"{where}: {repo!r} is no owner/name")
        if not _SHA1.fullmatch(commit or ""):
            raise SourcesError(f"{where}: {commit!r} is no 40-hex commit")
        if not _SHA256.fullmatch(sha):
            raise SourcesError(f"{where}: {sha!r} is no sha256")
        if not size.isdigit():
            raise SourcesError(f"{where}: bytes {size!r} is no number")
        if file.startswith("/") or ".." in Path(file).parts or not file.endswith(".jsonl"):
            raise SourcesError(f"{where}: {file!r} is no relative .jsonl path")
        if any(mark in raw for mark in _ELLIPSIS) or " " in raw:
            raise SourcesError(f"{where}: path {raw!r} still holds shorthand")
        assert commit is not None
        yield Row(file, int(size), sha, repo, commit, prefix + raw, ref, number)


def parse(text: str) -> list[Row]:
    """Every row of every table of a SOURCES.md text, in order."""
    lines = text.splitlines()
    found: list[Row] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("| file") and i + 1 < len(lines) and re.match(r"\|\s*-", lines[i + 1]):
            header = _cells(line)
            rows: list[tuple[int, str]] = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append((i + 1, lines[i]))
                i += 1
            found.extend(_table_rows(header, rows, "\n".join(prose)))
            prose = []
            continue
        if line.startswith("#"):
            prose = []
        prose.append(line)
        i += 1
    files = [r.file for r in found]
    twice = sorted({f for f in files if files.count(f) > 1})
    if twice:
        raise SourcesError(f"named in two rows: {', '.join(twice)}")
    return found


def git_dir(mirrors: Path, repo: str) -> Path | None:
    """The git directory of ``repo``'s mirror (``owner+name/repo`` or ``owner+name/repo/.git``), if any."""
    top = mirrors / repo.replace("/", "+")
    if not top.is_dir():
        return None
    for candidate in (top, *sorted(top.glob("*")), *sorted(top.glob("*/.git"))):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _show(git: Path, treeish: str, path: str) -> bytes | None:
    done = subprocess.run(["git", f"--git-dir={git}", "show", f"{treeish}:{path}"], capture_output=True,
                          check=False)
    return done.stdout if done.returncode == 0 else None


def restore(row: Row, into: Path, mirrors: Path) -> Outcome:
    target = into / row.file
    if target.is_file() and target.stat().st_size == row.bytes and _sha256(target) == row.sha256:
        return Outcome(row, "kept")
    git = git_dir(mirrors, row.repo)
    if git is None:
        return Outcome(row, f"missing mirror: {row.repo}")
    data = _show(git, row.commit, row.path)
    if data is None and row.ref is not None:
        data = _show(git, row.ref, row.path)
    if data is None:
        return Outcome(row, f"missing object: {row.commit[:12]}:{row.path}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != row.sha256 or len(data) != row.bytes:
        return Outcome(row, f"sha256 mismatch: {len(data)} bytes, {digest[:16]}… (want {row.bytes}, "
                            f"{row.sha256[:16]}…)")
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    part.write_bytes(data)
    os.replace(part, target)  # never a half-written transcript under the real name
    return Outcome(row, "ok")


def repos(rows: Iterable[Row]) -> list[str]:
    return sorted({r.repo for r in rows}, key=str.lower)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.restore_sessions",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--into", type=Path, default=DEFAULT_INTO, metavar="DIR",
                        help="where the transcripts go (default: bench/fidelity/sessions, git-ignored)")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, metavar="DIR",
                        help=f"the folder of git mirrors, owner+name/... (default: {MIRRORS})")
    parser.add_argument("--sources", type=Path, default=SOURCES, metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--list-repos", action="store_true",
                        help="print the repositories to fetch (github:owner/name, and whether a mirror is there)")
    args = parser.parse_args(argv)
    try:
        rows = parse(args.sources.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SourcesError) as e:
        print(f"restore_sessions: cannot read {args.sources}: {e}", file=sys.stderr)
        return 2
    if args.list_repos:
        for name in repos(rows):
            print(f"github:{name}\t{'mirrored' if git_dir(args.mirrors, name) else 'to fetch'}")
        return 0
    outcomes = [restore(row, args.into, args.mirrors) for row in rows]
    for o in outcomes:
        print(f"{o.row.file}: {o.status}")
    bad = [o for o in outcomes if not o.restored]
    written = sum(1 for o in outcomes if o.status == "ok")
    print(f"{len(outcomes) - len(bad)} of {len(outcomes)} restored into {args.into} ({written} written, "
          f"{len(outcomes) - len(bad) - written} already there), {len(bad)} not")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
