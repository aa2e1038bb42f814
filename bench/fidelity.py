"""Fidelity of the continuation brief on real agent sessions: `python -m bench.fidelity`.

    python -m bench.fidelity [--verbose] [--json] [--only NAME]... [--fixtures PATH] [--max-chars N]

For every session annotated in ``bench/fidelity/annotations.json`` (the facts a successor agent
needs, written by hand from the transcript), the transcript is imported into a throw-away ledger and
the brief taken at a budget of 10,000 characters, through real ``trail`` processes. The facts score
is the share of the annotated facts the brief carries. Stale items (what was true once but is not at
the end: a superseded requirement, a fixed failure, a done plan step, a prompt of a rewound branch,
a deleted file) must not be presented as current: one found in a section that does (Next step,
Requirements, Failing now, In progress, Blocked, an open plan step; for a deleted file also a Files
changed line that does not say DELETED, but not Blocked, which lists its Write as never run) is
wrong. The score is the share of all items right. A naive baseline gets the same budget: the last
10,000 characters of the transcript's own text, all of it read as current. The transcripts live in
../shared/fixtures beside the checkout, and the held-out ones in bench/fidelity/sessions (see its
SOURCES.md); with neither this exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from bench.tables import Table

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
ANNOTATIONS = Path(__file__).resolve().parent / "fidelity" / "annotations.json"
SESSIONS = Path(__file__).resolve().parent / "fidelity" / "sessions"
"""The held-out sessions, looked up here, then in ``SHARED_HELD``, before the fixtures folder."""
SHARED_HELD = REPO.parent / "shared" / "held-out"
"""Where the team keeps the held-out transcripts beside the checkout: out of ``fixtures``, so the tests that
import every fixture do not grow with the evaluation set."""
BUDGET = 10_000
GOAL = 0.95
AGENTS = ("claude-code", "codex")
KINDS = frozenset(
    {"file_edited", "correction", "last_failed_command", "final_requirement", "next_step", "plan_pending",
     "where_stopped"}
)
STALE_KINDS = frozenset(
    {"superseded_requirement", "fixed_failure", "done_step", "abandoned_prompt", "deleted_file"}
)
CURRENT_SECTIONS = ("next step", "requirements", "failing now", "in progress", "blocked")
"""Brief sections (heading prefixes) that present what they list as current; the plan's open steps do too."""
STALE_GOAL = 1 / 20
"""At most this share of sessions may present any stale item as current."""
TRAIL = [sys.executable, "-c", "from cli.main import main; main()"]
"""The CLI of this checkout (as bench/hook.py runs it), not an editable install of another worktree."""


# -- annotations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    kind: str
    any_of: tuple[tuple[str, ...], ...]
    """Alternatives; the fact is present when every phrase of one alternative is."""
    ref: str = ""

    def describe(self) -> str:
        alternatives = " | ".join(" + ".join(repr(p) for p in alt) for alt in self.any_of)
        return f"[{self.kind}]{f' {self.ref}' if self.ref else ''}: {alternatives}"

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "ref": self.ref, "any_of": [list(alt) for alt in self.any_of]}


@dataclass(frozen=True)
class Session:
    file: str
    """Path relative to the fixtures folder."""
    agent: str
    facts: tuple[Fact, ...]
    held_out: bool = False
    note: str = ""
    stale: tuple[Fact, ...] = ()
    """What must not be presented as current at the end (kinds in STALE_KINDS)."""
    part: str = ""
    """A held-out session's part when it is not the first one (see PARTS); "" for the first."""

    @property
    def group(self) -> str:
        """The part of the table the session is reported in."""
        return "held-out" if self.held_out and not self.part else self.part or "annotated-seen"

    @property
    def name(self) -> str:
        return Path(self.file).stem


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(p, str) and p.strip() for p in value):
        raise ValueError(f"{where}: an alternative must be a non-empty list of non-empty strings")
    return tuple(value)


def parse_annotations(doc: object) -> list[Session]:
    """Check and convert the annotation document (the parsed JSON); ValueError names what is wrong."""
    if not isinstance(doc, dict) or not isinstance(doc.get("sessions"), list):
        raise ValueError("annotations: expected an object with a 'sessions' list")
    sessions: list[Session] = []
    seen: set[str] = set()
    for i, raw in enumerate(doc["sessions"]):
        where = f"sessions[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("file"), str):
            raise ValueError(f"{where}: needs a 'file' string")
        where = f"{where} ({raw['file']})"
        if raw["file"] in seen:
            raise ValueError(f"{where}: annotated twice")
        seen.add(raw["file"])
        if raw.get("agent") not in AGENTS:
            raise ValueError(f"{where}: agent must be one of {', '.join(AGENTS)}")
        if not isinstance(raw.get("held_out", False), bool):
            raise ValueError(f"{where}: held_out must be true or false")
        if not isinstance(raw.get("facts"), list) or not raw["facts"]:
            raise ValueError(f"{where}: needs a non-empty 'facts' list")
        if not isinstance(raw.get("stale", []), list):
            raise ValueError(f"{where}: stale must be a list")
        part = raw.get("part", "")
        if part and (part not in _HELD_PARTS or not raw.get("held_out")):
            raise ValueError(f"{where}: part must be one of {', '.join(_HELD_PARTS)}, on a held_out session")
        facts = _facts(raw["facts"], KINDS, f"{where} facts")
        stale = _facts(raw.get("stale", []), STALE_KINDS, f"{where} stale")
        sessions.append(Session(raw["file"], raw["agent"], facts, raw.get("held_out", False),
                                str(raw.get("note", "")), stale, part))
    return sessions


def _facts(raws: list[object], kinds: frozenset[str], where: str) -> tuple[Fact, ...]:
    facts: list[Fact] = []
    for j, f in enumerate(raws):
        fwhere = f"{where}[{j}]"
        if not isinstance(f, dict) or f.get("kind") not in kinds:
            raise ValueError(f"{fwhere}: kind must be one of {', '.join(sorted(kinds))}")
        any_of = f.get("any_of")
        if not isinstance(any_of, list) or not any_of:
            raise ValueError(f"{fwhere}: any_of must be a non-empty list of alternatives")
        facts.append(Fact(f["kind"], tuple(_strings(alt, fwhere) for alt in any_of), str(f.get("ref", ""))))
    return tuple(facts)


def load_annotations(path: Path = ANNOTATIONS) -> list[Session]:
    return parse_annotations(json.loads(path.read_text(encoding="utf-8")))


# -- matching and scoring -------------------------------------------------------------------

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Case-folded, typographic quotes made straight, every run of whitespace one space."""
    return _SPACE.sub(" ", text.translate(_QUOTES).casefold()).strip()


def fact_present(fact: Fact, text: str, *, normalised: bool = False) -> bool:
    """Whether one alternative of ``fact`` has all its phrases in ``text`` (as substrings)."""
    haystack = text if normalised else normalise(text)
    return any(all(normalise(phrase) in haystack for phrase in alt) for alt in fact.any_of)


def missing_facts(facts: Iterable[Fact], text: str) -> list[Fact]:
    haystack = normalise(text)
    return [f for f in facts if not fact_present(f, haystack, normalised=True)]


def score(facts: Sequence[Fact], text: str) -> float:
    """The share of ``facts`` present in ``text`` (1.0 when there are none to find)."""
    if not facts:
        return 1.0
    return 1 - len(missing_facts(facts, text)) / len(facts)


_HEADING = re.compile(r"^(#{1,2}) (.*)$")
_DONE_STEP = re.compile(r"^\s*- \[x\]", re.IGNORECASE)


def current_parts(brief: str) -> tuple[list[str], list[str], list[str]]:
    """The parts of a brief that present their items as current, each normalised; the Files changed lines
    that present a file as there (not DELETED), for deleted files only; and the Blocked parts, which present
    a call as current but as one that never ran (so not its file as there).

    One part per section (a plan gives its open steps), so an item's phrases must all be in one section.
    """
    parts: list[str] = []
    files: list[str] = []
    blocked: list[str] = []
    section = ""
    chunk: list[str] = []

    def flush() -> None:
        if chunk:
            (blocked if section.startswith("blocked") else parts).append(normalise("\n".join(chunk)))
        chunk.clear()

    for line in brief.splitlines():
        heading = _HEADING.match(line)
        if heading:
            flush()
            # "# Task #1 ..." starts a task: no section until its first "## ".
            section = heading.group(2).casefold() if heading.group(1) == "##" else ""
            continue
        open_step = section.startswith("plan") and not _DONE_STEP.match(line)
        if section.startswith(CURRENT_SECTIONS) or open_step:
            chunk.append(line)
        elif section.startswith("files changed") and "deleted" not in line.casefold():
            files.append(normalise(line))
    flush()
    return parts, files, blocked


def stale_as_current(stale: Iterable[Fact], brief: str, *, naive: bool = False) -> list[Fact]:
    """The stale items ``brief`` presents as current; ``naive``: the whole text reads as current (the tail).

    A file never written or deleted (``deleted_file``) is presented as there by a current section or a Files
    changed line, not by a Blocked one: that lists its Write as never run ("needs the user's permission")."""
    whole = [normalise(brief)]
    parts, files, blocked = (whole, whole, []) if naive else current_parts(brief)
    return [item for item in stale
            if any(fact_present(item, part, normalised=True)
                   for part in (parts + files if item.kind == "deleted_file" else parts + blocked))]


# -- the naive baseline ---------------------------------------------------------------------


def _content_text(content: object) -> Iterator[str]:
    """The text of a message content or tool result: a string, or blocks of which text is kept."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                yield block
            elif isinstance(block, dict):
                yield from _block_text(block)


def _block_text(block: dict[str, Any]) -> Iterator[str]:
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text"):
        yield str(block.get("text", ""))
    elif kind == "tool_use":
        yield f"{block.get('name', '')} {json.dumps(block.get('input'), ensure_ascii=False)}"
    elif kind == "tool_result":
        yield from _content_text(block.get("content"))


def _claude_code_texts(record: dict[str, Any]) -> Iterator[str]:
    if record.get("type") in ("user", "assistant"):
        message = record.get("message")
        if isinstance(message, dict):
            yield from _content_text(message.get("content"))


_CODEX_ITEMS = frozenset({"message", "function_call", "function_call_output", "custom_tool_call",
                          "custom_tool_call_output", "local_shell_call"})


def _codex_texts(record: dict[str, Any], prompts_from_events: bool) -> Iterator[str]:
    # The clean prompt is event_msg/user_message; the response_item user messages also carry injected
    # AGENTS.md and environment boilerplate, so they are used only by rollouts without such events.
    if record.get("type") == "event_msg":
        payload = record.get("payload")
        if prompts_from_events and isinstance(payload, dict) and payload.get("type") == "user_message":
            yield str(payload.get("message", ""))
        return
    # Modern rollouts wrap items as {"type": "response_item", "payload": item}; legacy ones are bare items.
    item = record.get("payload") if record.get("type") == "response_item" else record
    if not isinstance(item, dict) or item.get("type") not in _CODEX_ITEMS:
        return
    kind = item["type"]
    if kind == "message":
        if item.get("role") == "assistant" or (item.get("role") == "user" and not prompts_from_events):
            yield from _content_text(item.get("content"))
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        args = item.get("arguments", item.get("input", item.get("action")))
        yield f"{item.get('name', kind)} {args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}"
    else:
        output = item.get("output")
        yield output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _records(path: Path) -> list[dict[str, Any]]:
    records = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn or foreign line
            if isinstance(record, dict):
                records.append(record)
    return records


def transcript_text(path: Path, agent: str) -> str:
    """User and assistant text plus tool inputs and outputs, in file order, one piece per line."""
    records = _records(path)
    if agent == "claude-code":
        pieces = [p for r in records for p in _claude_code_texts(r)]
    else:
        from_events = any(r.get("type") == "event_msg" and isinstance(r.get("payload"), dict)
                          and r["payload"].get("type") == "user_message" for r in records)
        pieces = [p for r in records for p in _codex_texts(r, from_events)]
    return "\n".join(p for p in pieces if p)


def baseline(path: Path, agent: str, budget: int = BUDGET) -> str:
    """The naive brief: the last ``budget`` characters of the transcript's text."""
    text = transcript_text(path, agent)
    return text[-budget:] if budget > 0 else ""


# -- the brief, through the CLI -------------------------------------------------------------


@dataclass
class Result:
    session: Session
    brief: str = ""
    tasks: list[int] = field(default_factory=list)
    error: str = ""
    baseline_text: str = ""

    @property
    def brief_missing(self) -> list[Fact]:
        return missing_facts(self.session.facts, self.brief)

    @property
    def baseline_missing(self) -> list[Fact]:
        return missing_facts(self.session.facts, self.baseline_text)

    @property
    def brief_stale(self) -> list[Fact]:
        """Stale items the brief presents as current (an errored run presents nothing, and carries nothing)."""
        return stale_as_current(self.session.stale, self.brief)

    @property
    def baseline_stale(self) -> list[Fact]:
        return stale_as_current(self.session.stale, self.baseline_text, naive=True)

    @property
    def items(self) -> int:
        return len(self.session.facts) + len(self.session.stale)

    @property
    def facts_score(self) -> float:
        return 1 - len(self.brief_missing) / len(self.session.facts)

    @property
    def baseline_facts_score(self) -> float:
        return 1 - len(self.baseline_missing) / len(self.session.facts)

    @property
    def brief_score(self) -> float:
        """The share of all items right: facts present, stale items not presented as current (none, on an error)."""
        if self.error:
            return 0.0
        return 1 - (len(self.brief_missing) + len(self.brief_stale)) / self.items

    @property
    def baseline_score(self) -> float:
        return 1 - (len(self.baseline_missing) + len(self.baseline_stale)) / self.items


def _trail(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TRAIL, *args], env=env, cwd=REPO, text=True, capture_output=True, timeout=600)


def _failure(step: str, run: subprocess.CompletedProcess[str]) -> str:
    lines = (run.stderr or run.stdout).strip().splitlines()
    return f"{step} exited {run.returncode}: {lines[-1] if lines else '(no output)'}"


def take_brief(path: Path, session: Session, budget: int) -> Result:
    """Import one transcript into a fresh ledger (and TRAIL_HOME) and take the brief of its task(s)."""
    result = Result(session)
    with tempfile.TemporaryDirectory(prefix="trail-fidelity-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "TRAIL_DATABASE_URL"}
        env.update(TRAIL_HOME=tmp, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
        db = ["--db", str(Path(tmp) / "ledger.db")]
        # The session's sub-agent files (`<stem>.agent-*.jsonl`, `<stem>.subagents.*.jsonl`) are part of it,
        # as they are of the folder a user imports.
        stem = path.name.removesuffix(".jsonl")
        helpers = sorted(p for p in path.parent.glob(f"{stem}.*.jsonl") if p != path)
        run = _trail([*db, "import", session.agent, str(path), *map(str, helpers), "--json"], env)
        if run.returncode != 0:
            result.error = _failure("import", run)
            return result
        try:
            report = json.loads(run.stdout)
            result.tasks = sorted(int(t["number"]) for t in report["tasks"])
        except (ValueError, KeyError, TypeError) as e:
            result.error = f"import --json: unreadable report ({e})"
            return result
        if not result.tasks:
            result.error = "import made no task"
            return result
        # Several tasks share the budget, so the brief never gets more room than the baseline.
        share = max(200, budget // len(result.tasks))
        briefs = []
        for number in result.tasks:
            run = _trail([*db, "resume", str(number), "--max-chars", str(share)], env)
            if run.returncode != 0:
                result.error = _failure(f"resume {number}", run)
                return result
            briefs.append(run.stdout)
        result.brief = "\n".join(briefs)
    return result


# -- the report -----------------------------------------------------------------------------


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def summary(results: list[Result]) -> dict[str, dict[str, Any]]:
    groups = {"all": results, **{name: [r for r in results if r.session.group == name] for name, _ in _PARTS}}
    return {
        name: {"sessions": len(rs), "facts": sum(len(r.session.facts) for r in rs),
               "stale": sum(len(r.session.stale) for r in rs),
               "brief": _mean([r.brief_score for r in rs]), "baseline": _mean([r.baseline_score for r in rs]),
               "brief_facts": _mean([r.facts_score for r in rs]),
               "baseline_facts": _mean([r.baseline_facts_score for r in rs]),
               "brief_min": min((r.brief_score for r in rs), default=None),
               "brief_stale_sessions": sum(1 for r in rs if r.brief_stale),
               "baseline_stale_sessions": sum(1 for r in rs if r.baseline_stale)}
        for name, rs in groups.items()
    }


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


_PARTS = (("annotated-seen", "the sessions the rules were written on"),
          ("held-out", "the first held-out part: no longer held out (rules since were written after looking at it)"),
          ("held-out-new", "added held out at fold version 5: no longer held out (fold version 6's rules were "
                           "written on it)"),
          ("held-out-3", "added held out at fold version 6: no longer held out (its briefs were read for fold "
                         "version 6's rules)"),
          ("held-out-4", "added held out at fold version 6 (its honest figure: 0.85, bench/RESULTS.md): no longer "
                         "held out (fold version 7's rules were written on its briefs)"),
          ("held-out-5", "added held out at fold version 7 (its honest figure: 0.92, bench/RESULTS.md): no longer "
                         "held out (fold version 8's rules were written on its briefs)"),
          ("held-out-6", "added held out while fold version 8's rules were written (its honest figure: 0.93, "
                         "bench/RESULTS.md): no longer held out (fold version 9's rules were written on its briefs)"),
          ("held-out-7", "added held out while fold version 9's rules were written (its honest figure: 0.92, "
                         "bench/RESULTS.md): no longer held out (fold version 10's rules were written on its briefs)"),
          ("held-out-8", "added held out while fold version 10's rules were written (its honest figure: 0.86, "
                         "bench/RESULTS.md): no longer held out (fold version 11's rules were written on its briefs)"),
          ("held-out-9", "added held out while fold version 11's rules were written (its honest figure: 0.88, "
                         "bench/RESULTS.md): no longer held out (fold version 12's rules were written on its briefs)"),
          ("held-out-10", "added held out while fold version 12's rules were written (its honest figure: 0.86, "
                          "bench/RESULTS.md): no longer held out (fold version 13's rules were written on its briefs)"),
          ("held-out-11", "added held out while fold version 13's rules were written (its honest figure: 0.93, "
                          "bench/RESULTS.md): no longer held out (fold version 14's rules were written on its briefs)"),
          ("held-out-12", "added held out while fold version 14's rules were written (its honest figure: 0.96, "
                          "bench/RESULTS.md): no longer held out (fold version 15's rules were written on its briefs)"),
          ("held-out-13", "added held out while fold version 15's rules were written (its honest figure: 0.91, "
                          "bench/RESULTS.md): no longer held out (fold version 16's rules were written on its briefs)"),
          ("held-out-14", "added held out while fold version 16's rules were written: four more people's Claude Code "
                          "sessions and Codex rollouts, annotated from the log alone before any brief of it was "
                          "taken"))
"""The parts of the table, in order, and what each is now: held-out-14 is held out from rule-writing (once rules are
written on its briefs, the next figure needs a new part, annotated and scored before anyone reads them)."""
_HELD_PARTS = ("held-out", "held-out-new", "held-out-3", "held-out-4", "held-out-5", "held-out-6", "held-out-7",
               "held-out-8", "held-out-9", "held-out-10", "held-out-11", "held-out-12", "held-out-13",
               "held-out-14")


def table(results: list[Result], budget: int) -> Table:
    t = Table(
        f"fidelity of the brief at {budget:,} characters",
        ("session", "agent", "facts", "stale", "brief facts", "brief stale as current", "brief score",
         "baseline score (stale as current)", "brief chars"),
    )
    groups = summary(results)
    for part, label in _PARTS:
        rows = [r for r in results if r.session.group == part]
        if not rows:
            continue
        t.add(f"*{label}*", "", "", "", "", "", "", "", "")
        for r in rows:
            chars = f"error: {r.error}" if r.error else f"{len(r.brief):,}"
            t.add(r.session.name, r.session.agent, len(r.session.facts), len(r.session.stale),
                  _cell(r.facts_score), len(r.brief_stale), _cell(r.brief_score),
                  f"{_cell(r.baseline_score)} ({len(r.baseline_stale)})", chars)
        t.add(*_mean_row(part, groups[part]))
    t.add(*_mean_row("all", groups["all"]))
    t.notes.append(
        "Score: the share of a session's items right (annotated facts found in the brief, stale items not in a "
        "section that presents them as current); means are per session, unweighted. Brief facts: the facts "
        "alone. Stale as current: how many stale items a current section holds (in a mean row: in how many "
        f"sessions any). Baseline: the last {budget:,} characters of the transcript's own text, all of it "
        "read as current."
    )
    return t


def _mean_row(name: str, s: dict[str, Any]) -> tuple[Any, ...]:
    return (f"**mean, {name}** ({s['sessions']} sessions; lowest {_cell(s['brief_min'])})", "", s["facts"],
            s["stale"], _cell(s["brief_facts"]), f"{s['brief_stale_sessions']} sessions", _cell(s["brief"]),
            f"{_cell(s['baseline'])} ({s['baseline_stale_sessions']} sessions)", "")


def goal_met(results: list[Result]) -> bool:
    """The mean score of each part at GOAL or more, and at most STALE_GOAL of the sessions with a stale
    item presented as current."""
    groups = summary(results)
    parts = [groups[name] for name, _ in _PARTS if groups[name]["sessions"]]
    if not parts:
        return False
    stale_ok = groups["all"]["brief_stale_sessions"] <= STALE_GOAL * groups["all"]["sessions"]
    return stale_ok and all(p["brief"] is not None and p["brief"] >= GOAL for p in parts)


def goal_line(results: list[Result], budget: int) -> str:
    return (f"goal: mean brief score >= {GOAL:.2f} in each part and stale items presented as current in at most "
            f"1 in {round(1 / STALE_GOAL)} sessions, at {budget:,} chars: {'yes' if goal_met(results) else 'no'}")


def as_json(results: list[Result], budget: int, fixtures: Path, annotations: Path) -> dict[str, Any]:
    return {
        "budget": budget,
        "goal": GOAL,
        "fixtures": str(fixtures),
        "annotations": str(annotations),
        "sessions": [
            {
                "session": r.session.name,
                "file": r.session.file,
                "agent": r.session.agent,
                "held_out": r.session.held_out,
                "part": r.session.group,
                "facts": len(r.session.facts),
                "stale": len(r.session.stale),
                "brief_score": r.brief_score,
                "baseline_score": r.baseline_score,
                "brief_facts_score": r.facts_score,
                "baseline_facts_score": r.baseline_facts_score,
                "stale_as_current_in_brief": [f.as_json() for f in r.brief_stale],
                "stale_as_current_in_baseline": [f.as_json() for f in r.baseline_stale],
                "brief_chars": len(r.brief),
                "tasks": r.tasks,
                "error": r.error or None,
                "missing_in_brief": [f.as_json() for f in r.brief_missing],
                "missing_in_baseline": [f.as_json() for f in r.baseline_missing],
            }
            for r in results
        ],
        "means": summary(results),
        "goal_met": goal_met(results),
    }


def verbose(results: list[Result]) -> str:
    lines = ["## facts missing from the brief", ""]
    for r in results:
        missing, stale = r.brief_missing, r.brief_stale
        head = (f"{r.session.name} ({len(missing)}/{len(r.session.facts)} missing, "
                f"{len(stale)}/{len(r.session.stale)} stale as current)")
        lines.append(f"### {head}{f' ERROR: {r.error}' if r.error else ''}")
        in_baseline = set(r.baseline_missing)
        lines += [f"- {f.describe()}{'' if f in in_baseline else '  (the baseline has it)'}" for f in missing]
        lines += [f"- STALE AS CURRENT {f.describe()}" for f in stale]
        lines.append("")
    return "\n".join(lines)


def locate(session: Session, fixtures: Path, sessions: Path = SESSIONS) -> Path:
    """The transcript of ``session``: in the held-out folder when it is there, else in the fixtures."""
    for folder in (sessions, SHARED_HELD):
        if (folder / session.file).is_file():
            return folder / session.file
    return fixtures / session.file


def check(sessions: list[Session], fixtures: Path, held: Path = SESSIONS) -> int:
    """An annotation no text could satisfy is a typo: every fact and stale item must be in the whole transcript.

    Its extracted text first, else its raw lines (a prompt that was only queued is in no message).
    """
    bad = 0
    for session in sessions:
        path = locate(session, fixtures, held)
        missing = None
        if path.is_file():
            missing = missing_facts(session.facts + session.stale, transcript_text(path, session.agent))
            raw = path.read_text(encoding="utf-8", errors="replace") if missing else ""
            missing = missing_facts(missing, raw)
        if missing is None:
            print(f"{session.name}: missing transcript {path}")
            bad += 1
        for fact in missing or []:
            print(f"{session.name}: not in the transcript: {fact.describe()}")
            bad += 1
    print(f"{len(sessions)} sessions, {sum(len(s.facts) for s in sessions)} facts, "
          f"{sum(len(s.stale) for s in sessions)} stale items, {bad} problems")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity", description=doc.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES,
                        help="the fixture folder (default: ../shared/fixtures beside the checkout)")
    parser.add_argument("--sessions", type=Path, default=SESSIONS, metavar="PATH",
                        help="the held-out sessions' folder (default: bench/fidelity/sessions)")
    parser.add_argument("--annotations", type=Path, default=ANNOTATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--only", action="append", metavar="NAME", default=[],
                        help="only sessions whose fixture path (e.g. codex/x.jsonl) contains NAME (repeatable)")
    parser.add_argument("--max-chars", type=int, default=BUDGET, metavar="N",
                        help=f"budget of the brief and of the baseline (default {BUDGET:,})")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--verbose", action="store_true", help="also list the facts each brief misses")
    parser.add_argument("--save", type=Path, metavar="DIR", help="write each brief and baseline text to DIR")
    parser.add_argument("--check", action="store_true",
                        help="check the annotations instead: every fact must be in its whole transcript's text")
    args = parser.parse_args(argv)

    sessions = load_annotations(args.annotations)
    if not args.fixtures.is_dir():
        # The held-out sessions in their own folder still run; the others are left out, not scored 0.
        sessions = [s for s in sessions if (args.sessions / s.file).is_file()]
        if not sessions:
            print(f"fidelity: no fixture folder at {args.fixtures} and no annotated session in {args.sessions} "
                  "(needs ../shared/fixtures, or --fixtures PATH)", file=sys.stderr)
            return 2
        print(f"fidelity: no fixture folder at {args.fixtures}: only the {len(sessions)} sessions in "
              f"{args.sessions}", file=sys.stderr)
    if args.only:
        sessions = [s for s in sessions if any(name in s.file for name in args.only)]
        if not sessions:
            print(f"fidelity: no annotated session matches {', '.join(args.only)}", file=sys.stderr)
            return 2

    if args.check:
        return check(sessions, args.fixtures, args.sessions)

    # A transcript that is nowhere (the held-out ones are not committed) leaves its session out, said once,
    # rather than scoring it 0 and pulling its part's mean down.
    absent = [s for s in sessions if not locate(s, args.fixtures, args.sessions).is_file()]
    if absent:
        print(f"fidelity: no transcript for {len(absent)} annotated sessions, left out: "
              f"{', '.join(s.name for s in absent)}", file=sys.stderr)
        sessions = [s for s in sessions if s not in absent]
        if not sessions:
            return 2
    results: list[Result] = []
    for session in sessions:
        path = locate(session, args.fixtures, args.sessions)
        print(f"[fidelity] {session.name}", file=sys.stderr, flush=True)
        result = take_brief(path, session, args.max_chars)
        result.baseline_text = baseline(path, session.agent, args.max_chars)
        results.append(result)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{session.name}.brief.txt").write_text(result.brief, encoding="utf-8")
            (args.save / f"{session.name}.baseline.txt").write_text(result.baseline_text, encoding="utf-8")

    if args.json:
        print(json.dumps(as_json(results, args.max_chars, args.fixtures, args.annotations), indent=2))
    else:
        print(table(results, args.max_chars).markdown())
        if args.verbose:
            print(verbose(results))
        print(goal_line(results, args.max_chars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
