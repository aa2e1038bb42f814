"""`trail list` names each task's project and `--here` keeps to this folder's: with tasks begun in two git
repositories, on a real ledger (both backends) through the real command."""

from __future__ import annotations

import json
from pathlib import Path

from ledger.base.location import Location
from tests.conftest import run_here, run_trail


def _two_projects(tmp_path: Path, home: Path) -> tuple[Path, Path]:
    site, api = tmp_path / "site", tmp_path / "api-server"
    for repo in (site, api):
        (repo / ".git").mkdir(parents=True)
        (repo / "src").mkdir()
    run_here("start", "Redirect /old to /new", home=home, cwd=site, check=True)  # set-up, in this process
    run_here("start", "Rate-limit the login endpoint", home=home, cwd=api, check=True)
    run_here("start", "Cache the sitemap", home=home, cwd=site / "src", check=True)  # a subfolder: same project
    return site, api


def test_each_task_names_its_project_and_here_keeps_to_this_one(
    tmp_path: Path, home: Path, location: Location
) -> None:
    site, api = _two_projects(tmp_path, home)
    rows = json.loads(run_trail("list", "--json", home=home, cwd=site, check=True).stdout)
    assert [(r["number"], r["project"]) for r in rows] == [(1, str(site)), (2, str(api)), (3, str(site))]
    here = json.loads(run_trail("list", "--here", "--json", home=home, cwd=site / "src", check=True).stdout)
    assert [(r["number"], r["active"]) for r in here] == [(1, False), (3, True)]
    text = run_trail("list", "--here", home=home, cwd=api, check=True).stdout.splitlines()
    assert len(text) == 1 and text[0].split()[:4] == ["*", "#2", "active", "api-server"]
    everything = run_trail("list", home=home, cwd=api, check=True).stdout
    assert [line[2:].split()[2] for line in everything.splitlines() if "#" in line] == ["site", "api-server", "site"]


def test_here_in_a_project_with_no_task_says_so(tmp_path: Path, home: Path, location: Location) -> None:
    _two_projects(tmp_path, home)
    empty = tmp_path / "docs-repo"
    (empty / ".git").mkdir(parents=True)
    done = run_trail("list", "--here", home=home, cwd=empty, check=True)
    assert done.stdout.strip() == f"No tasks of {empty} yet. `trail list` shows every project's."
    assert json.loads(run_trail("list", "--here", "--json", home=home, cwd=empty, check=True).stdout) == []
