"""cli/jsonedit.py: a user's JSON edited in place. Adding members or items and taking the same ones out again gives
the text back byte for byte; what is kept is never rewritten; the result always parses to what was asked."""

from __future__ import annotations

import json

import pytest

from cli.jsonedit import edited

TEXTS = {
    "indented, a one-line array": '{\n    "allow": ["a", "b"],\n    "x": {"y": 1}\n}\n',
    "tight, one line": '{"allow":["a","b"],"x":{}}',
    "tabs, an empty object": '{\n\t"x": {},\n\t"list": [\n\t\t1\n\t]\n}',
    "odd spacing": '{  "a" : [ 1 ,2 ],\n   "b":{ "c": [] } }',
}
UNITS = {"indented, a one-line array": "    ", "tight, one line": "", "tabs, an empty object": "\t",
         "odd spacing": "   "}


def _add(data: dict) -> dict:
    grown = json.loads(json.dumps(data))
    grown["new"] = {"hooks": [{"type": "command", "command": "trail hook", "timeout": 10}]}
    for value in grown.values():
        if isinstance(value, list):
            value.append({"ours": "bär"})
        elif isinstance(value, dict) and value is not grown["new"]:
            value["ours"] = [1]
    return grown


@pytest.mark.parametrize("name", TEXTS)
def test_adding_then_taking_out_gives_the_text_back(name: str) -> None:
    text, unit = TEXTS[name], UNITS[name]
    data = json.loads(text)
    grown = _add(data)
    written = edited(text, data, grown, unit, False)
    assert written is not None and json.loads(written) == grown
    assert edited(written, grown, data, unit, False) == text


def test_taking_out_the_first_or_every_item_keeps_the_rest_as_written() -> None:
    text = '{\n  "list": [1,   2, 3],\n  "keep": "bär"\n}\n'
    assert edited(text, json.loads(text), {"list": [2, 3], "keep": "bär"}, "  ", False) == (
        '{\n  "list": [2, 3],\n  "keep": "bär"\n}\n')
    assert edited(text, json.loads(text), {"keep": "bär"}, "  ", False) == '{\n  "keep": "bär"\n}\n'
    assert edited(text, json.loads(text), {"list": [], "keep": "bär"}, "  ", False) == (
        '{\n  "list": [],\n  "keep": "bär"\n}\n')


def test_what_it_cannot_follow_is_left_to_the_caller() -> None:
    assert edited("{not json", {}, {"a": 1}, "  ", False) is None
