"""A key given twice in one JSON object: the parsers (msgspec, orjson, json, JSON.parse, Jackson's default) keep the
last value without a word. ``duplicate_keys`` finds every such key whose values differ, with the pointer of the key
in its object, in linear time; ``loads(unique_keys=True)`` refuses the text with rule ``duplicate-key``. A key given
again with the same value (AgentScope Java writes each event's ``type`` twice) loses nothing and is not one."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from agentmsg import ValidationError
from agentmsg._codec.jsontext import duplicate_keys, loads

MSG: dict[str, Any] = {
    "id": "m1",
    "name": None,
    "role": "USER",
    "content": [{"type": "text", "text": "hi"}],
    "metadata": {},
}

#: text -> the pointers of its duplicate keys (every one, in document order)
CASES: dict[str, tuple[str, list[str]]] = {
    "top-level": ('{"a":1,"b":2,"a":3}', ["/a"]),
    "nested-in-a-block": (
        '{"id":"m1","role":"USER","content":[{"type":"text","text":"rm -rf /","text":"hi"}],"metadata":{}}',
        ["/content/0/text"],
    ),
    "inside-an-array-element": ('[{"x":1},{"y":[{"k":1,"k":2}]}]', ["/1/y/0/k"]),
    "spelled-with-an-escape": ('{"a":1,"\\u0061":2}', ["/a"]),
    "a-slash-and-a-tilde": ('{"a/b~":1,"a\\/b~":2}', ["/a~1b~0"]),
    "several-in-document-order": ('{"z":{"k":1,"k":2},"a":[{"j":0,"j":1}],"z2":0,"z2":1}', ["/z2", "/z/k", "/a/0/j"]),
    "pretty-printed": ('{\n  "a" : 1,\n  "b" : {\n    "c" : "12:30",\n    "c" : 2\n  }\n}', ["/b/c"]),
    # a colon written as an escape in a string hides the key a duplicate drops from a count of the colons
    "escaped-colon-in-the-dropped-value": ('{"a":"\\u003a","a":1}', ["/a"]),
    "escaped-colon-in-the-kept-value": ('{"a":1,"a":"\\u003A"}', ["/a"]),
    # none: colons in strings, written as they are or escaped, and an escaped backslash before "u003a"
    "colons-in-strings": ('{"t":"2026-12-04 22:52:41.655","u":"https://x.y:8080/","k:":"::"}', []),
    "escaped-colons": ('{"a\\u003a":"\\u003a\\u003A","b":1}', []),
    "a-backslash-then-u003a": ('{"a":"\\\\u003a","b":{"c":1}}', []),
    "same-key-in-sibling-objects": ('[{"a":1},{"a":1}]', []),
    "same-key-at-two-depths": ('{"a":{"a":{"a":1}}}', []),
    # a key given again with the same value loses nothing (AgentScope Java writes each event's "type" twice) ...
    "same-value-twice": (
        '{"type":"AGENT_START","id":"e1","o":{"k":[1,{"x":null}]},"type":"AGENT_START","o":{"k":[1,{"x":null}]}}',
        [],
    ),
    "same-object-in-another-order": ('{"o":{"a":1,"b":2},"o":{"b":2,"a":1}}', []),
    # ... but 1, 1.0 and true are three values, and an equal value with a conflict inside is no equal value
    "one-and-true": ('{"a":1,"a":true}', ["/a"]),
    "one-and-one-point-zero": ('{"a":1,"a":1.0}', ["/a"]),
    "a-different-value-in-between": ('{"a":1,"a":2,"a":1}', ["/a"]),
    "same-value-with-a-conflict-inside": ('{"o":{"k":1,"k":2},"o":{"k":1,"k":2}}', ["/o", "/o/k"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_duplicate_key_is_found_with_its_pointer(name: str) -> None:
    text, pointers = CASES[name]
    for data in (text, text.encode(), b"\xef\xbb\xbf" + text.encode()):
        value = loads(data)
        found = duplicate_keys(data, value)
        assert [p.pointer for p in found] == pointers
        assert {p.rule for p in found} <= {"duplicate-key"}
    # the reference: json reading every pair of every object, each value written as the text holds it
    conflicts: list[bool] = []

    def hook(items: list[tuple[str, object]]) -> dict[str, object]:
        seen: dict[str, str] = {}
        for key, value in items:
            written = json.dumps(value, sort_keys=True)
            conflicts.append(seen.setdefault(key, written) != written)
        return dict(items)

    json.loads(text, object_pairs_hook=hook)
    assert any(conflicts) == bool(pointers)


def test_the_problem_names_the_key_and_how_many_times() -> None:
    (problem,) = duplicate_keys('{"a":{"k":1,"k":2,"k":3}}', loads('{"a":{"k":1,"k":2,"k":3}}'))
    assert (problem.pointer, problem.rule) == ("/a/k", "duplicate-key")
    assert (
        problem.message == "key 'k' given 3 times in one object, its values differ: readers keep one (most, the last)"
    )


def test_loads_keeps_the_last_value_by_default_and_refuses_a_duplicate_when_asked() -> None:
    text = orjson.dumps(MSG)[:-1] + b',"role":"SYSTEM"}'
    assert loads(text)["role"] == "SYSTEM"  # (what every JSON parser does)
    with pytest.raises(ValidationError) as caught:
        loads(text, "msg", unique_keys=True)
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/role", "duplicate-key")]
    assert loads(orjson.dumps(MSG), "msg", unique_keys=True) == MSG


def test_a_large_text_without_duplicates_is_not_read_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Colons in every string, escaped ones too, over more than the 64 KiB above which loads walks the value: no
    duplicate is found, and the text is not parsed a second time (the count of colons tells)."""
    item = {"t": "12:30", "u": "https://example.com:8080/a", "n": {"k": [1, {"x:y": "::"}]}}
    text = orjson.dumps([dict(item, i=i) for i in range(5000)]).replace(b'"::"', b'"\\u003a:"')
    assert len(text) > 1 << 18
    value = loads(text)

    def no_second_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("read again")

    monkeypatch.setattr(json, "loads", no_second_reading)
    assert duplicate_keys(text, value) == []
    monkeypatch.undo()
    planted = text[:-2] + b',"i":1}]'  # the last item's key "i" twice
    assert [p.pointer for p in duplicate_keys(planted, loads(planted))] == ["/4999/i"]
