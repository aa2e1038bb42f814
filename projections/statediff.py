"""What changed in a task's state between two points, as a patch that can be applied.

Works on the JSON form of ``TaskState``: lists of items are keyed by their
``position`` (requirements, attempts, commands...), mappings by their key (files,
tests, counts), everything else is a scalar with a before and an after. ``apply(diff,
a) == b`` holds for any two states, which the property tests check.
"""

from __future__ import annotations

from typing import Any

from projections.state import TaskState

Json = dict[str, Any]


def _keyed(items: list[Json]) -> dict[int, Json]:
    return {int(item["position"]): item for item in items}


def diff(a: TaskState, b: TaskState) -> Json:
    """``{field: change}`` for every field that differs between states ``a`` and ``b``."""
    before, after = a.model_dump(mode="json"), b.model_dump(mode="json")
    out: Json = {}
    for name, old in before.items():
        new = after[name]
        if old == new:
            continue
        if isinstance(old, list) and all(isinstance(i, dict) and "position" in i for i in [*old, *new]):
            was, now = _keyed(old), _keyed(new)
            out[name] = {
                "added": [now[p] for p in sorted(now.keys() - was.keys())],
                "changed": [{"before": was[p], "after": now[p]} for p in sorted(now.keys() & was.keys())
                            if was[p] != now[p]],
                "removed": sorted(was.keys() - now.keys()),
            }
        elif isinstance(old, dict) and isinstance(new, dict):
            out[name] = {
                "added": {k: new[k] for k in new.keys() - old.keys()},
                "changed": {k: {"before": old[k], "after": new[k]} for k in new.keys() & old.keys()
                            if old[k] != new[k]},
                "removed": sorted(old.keys() - new.keys()),
            }
        else:
            out[name] = {"before": old, "after": new}
    return out


def apply(patch: Json, state: Json) -> Json:
    """The JSON state ``patch`` turns ``state`` into."""
    result = dict(state)
    for name, change in patch.items():
        current = result[name]
        if "before" in change:
            result[name] = change["after"]
        elif isinstance(current, list):
            items = {int(i["position"]): i for i in current}
            for p in change["removed"]:
                items.pop(p)
            for c in change["changed"]:
                items[int(c["after"]["position"])] = c["after"]
            for item in change["added"]:
                items[int(item["position"])] = item
            result[name] = [items[p] for p in sorted(items)]
        else:
            mapping = {k: v for k, v in current.items() if k not in change["removed"]}
            mapping.update({k: c["after"] for k, c in change["changed"].items()})
            mapping.update(change["added"])
            result[name] = mapping
    return result


def describe(patch: Json) -> list[str]:
    """Human lines for the parts of a state diff a reader cares about."""
    lines: list[str] = []

    def section(name: str) -> Json:
        return patch.get(name) or {"added": [], "changed": [], "removed": []}

    reqs = section("requirements")
    lines += [f"+ requirement [{r['position']}] {r['text']}" for r in reqs["added"]]
    lines += [f"~ requirement [{c['after']['position']}] reworded: {c['before']['text']!r} -> {c['after']['text']!r}"
              for c in reqs["changed"]]
    lines += [f"+ correction [{c['position']}] {c['text']}" for c in section("corrections")["added"]]
    lines += [f"+ decision [{d['position']}] {d['text']}" for d in section("decisions")["added"]]
    attempts = section("attempts")
    for a in attempts["added"]:
        end = f" -> {a['outcome']}" + (f": {a['reason']}" if a["reason"] else "") if a["outcome"] else " (open)"
        lines.append(f"+ attempt [{a['position']}] {a['text']}{end}")
    for c in attempts["changed"]:
        a = c["after"]
        lines.append(f"~ attempt [{a['position']}] {a['text']} -> {a['outcome']}"
                     + (f": {a['reason']}" if a["reason"] else ""))
    files = patch.get("files") or {"added": {}, "changed": {}, "removed": []}
    lines += [f"+ file {path} ({f['operation']} at [{f['position']}])" for path, f in files["added"].items()]
    lines += [f"~ file {path} ({c['after']['operation']} at [{c['after']['position']}])"
              for path, c in files["changed"].items()]
    for c in section("commands")["added"]:
        lines.append(f"+ ran `{c['line']}` -> exit {c['exit_code']} [{c['position']}]")
    tests = patch.get("tests") or {"added": {}, "changed": {}, "removed": []}
    lines += [f"+ test {name} {t['outcome']}" for name, t in tests["added"].items()]
    lines += [f"~ test {name} {c['before']['outcome']} -> {c['after']['outcome']}"
              for name, c in tests["changed"].items()]
    for field in ("status", "next_step"):
        if field in patch:
            lines.append(f"~ {field.replace('_', ' ')}: {patch[field]['before']!r} -> {patch[field]['after']!r}")
    return lines
