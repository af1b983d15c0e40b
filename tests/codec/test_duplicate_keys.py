"""A key given twice in one JSON object: the parsers (msgspec, orjson, json, JSON.parse, Jackson's default) keep the
last value without a word. ``duplicate_keys`` finds every such key whose values differ, with the pointer of the key
in its object, in linear time; ``loads(unique_keys=True)`` refuses the text with rule ``duplicate-key``. A key given
again with the same value (AgentScope Java writes each event's ``type`` twice) loses nothing and is not one."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import ValidationError
from agentmsg._codec import jsontext
from agentmsg._codec.jsontext import duplicate_keys, loads
from agentmsg.errors import Problem, pointer_of, short_repr

ROOT = Path(__file__).resolve().parents[2]

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
    # what is left when a repeat of an earlier member is taken out is the value written back, and yet a key's
    # values differ: each member taken out must repeat one of its own object, byte for byte
    "another-value-before-the-last": ('{"a":0,"k":2,"k":1}', ["/k"]),
    "the-twin-in-a-sibling-object": ('[{"k":1},{"a":0,"k":1,"k":2}]', ["/1/k"]),
    "the-twin-in-the-object-around": ('{"k":1,"o":{"a":0,"k":1,"k":2}}', ["/o/k"]),
    "two-keys-repeated-crosswise": ('{"j":0,"k":2,"j":0,"k":1}', ["/k"]),
    "a-look-alike-inside-a-key": ('{"x\\"k":2,"a":0,"k":2,"k":1}', ["/k"]),
    "a-look-alike-literal": ('{"k":25,"a":0,"k":2,"k":25}', ["/k"]),
    "the-twin-across-brackets-in-strings": ('[{"k":1,"s":"{"},{"t":"}","a":0,"k":1,"k":2}]', ["/1/k"]),
    "the-twin-across-escaped-quotes": ('[{"k":1,"s":"\\"{"},{"t":"}\\\\","a":0,"k":1,"k":2}]', ["/1/k"]),
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


def test_agentscope_java_events_are_not_read_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """AgentScope Java writes each event's "type" first and last, with one value: every line held one colon more
    than its value written back, and was read a second time with json (validate 44% slower on Java's event
    files). The second filter settles each line without a parse; a line whose repeated "type" differs still is
    refused."""
    doc = json.loads((ROOT / "tests/conformance/reducer/java-case5-duplicate-type-jsonl.json").read_text())
    streams = sorted((ROOT / "tests/browser/streams").glob("java-*.jsonl"))
    lines = [line.encode() for text in [doc["jsonl"], *(p.read_text() for p in streams)] for line in text.splitlines()]
    assert len(lines) > 90 and all(line.count(b'"type":') >= 2 for line in lines)
    values = [loads(line) for line in lines]

    def no_second_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("read again")

    monkeypatch.setattr(json, "loads", no_second_reading)
    for line, value in zip(lines, values, strict=True):
        assert duplicate_keys(line, value) == []
        assert duplicate_keys(line + b"\r\n", value) == []  # (a JSON Lines record, read with its newline)
        assert duplicate_keys(line.decode(), value) == []
    monkeypatch.undo()
    line = lines[0]
    changed = line[: line.rindex(b'"type":')] + b'"type":"AGENT_END"}'
    assert [p.pointer for p in duplicate_keys(changed, loads(changed))] == ["/type"]


def test_a_json_array_of_agentscope_java_events_is_not_read_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same events in one JSON array, as a file of Java's events may hold them: the second filter took at most
    16 repeated members out of a text, so an array of more was read a second time with json (validate 80% slower
    on a 10 MB one). It settles the whole array without a parse; an item whose repeated "type" differs, however
    far in, still is refused."""
    doc = json.loads((ROOT / "tests/conformance/reducer/java-case5-duplicate-type-jsonl.json").read_text())
    streams = sorted((ROOT / "tests/browser/streams").glob("java-*.jsonl"))
    lines = [line.encode() for text in [doc["jsonl"], *(p.read_text() for p in streams)] for line in text.splitlines()]
    text = b"[" + b",".join(lines * 20) + b"]"
    value = loads(text)
    assert len(value) > 1000

    def no_second_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("read again")

    monkeypatch.setattr(json, "loads", no_second_reading)
    assert duplicate_keys(text, value) == []
    assert duplicate_keys(b"\n" + text + b"\n", value) == []
    monkeypatch.undo()
    last = lines[-1]
    changed = text[: -1 - len(last)] + last[: last.rindex(b'"type":')] + b'"type":"AGENT_START"}]'
    assert [p.pointer for p in duplicate_keys(changed, loads(changed))] == [f"/{len(value) - 1}/type"]


# A differential of duplicate_keys (its second filter above all) against a reference: json reading every pair of
# every object, on random JSON texts with keys planted twice: with the same value written alike or otherwise,
# with another value, in the same object or in the one around or inside it, keys spelled with escapes, strings
# that hold what looks like a member ('","k":1', '},{'), compact (as the filter takes) or not.

_KEYS = ["a", "k", "type", "", "a,b", "x:y", "{", "k2", '"q', "é"]
_STRINGS = [
    "A",
    "k",
    '","k":1',
    '"k":1',
    '},{"k":1',
    "{",
    "]",
    "\\",
    '\\"k\\":1',
    ',"a":"A"',
    ":",
    "12:30",
    "é",
    "\u2028",
    "\n",
]
_LITERALS = ["1", "1.0", "12", "-0", "0.5", "true", "false", "null", "1e2", "100.0"]


def _spell(text: str, rng: random.Random) -> str:
    """A JSON string of ``text``, most often as orjson writes it, else with escapes."""
    roll = rng.random()
    if roll < 0.75:
        return orjson.dumps(text).decode()
    if roll < 0.9:
        return json.dumps(text)  # (non-ASCII escaped)
    return '"' + "".join(f"\\u{ord(c):04x}" if c.isalnum() else json.dumps(c)[1:-1] for c in text) + '"'


def _random_value(rng: random.Random, depth: int, pretty: bool) -> str:
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        return _spell(rng.choice(_STRINGS), rng) if rng.random() < 0.5 else rng.choice(_LITERALS)
    if roll < 0.6:
        items = [_random_value(rng, depth + 1, pretty) for _ in range(rng.randrange(4))]
        return "[" + (", " if pretty else ",").join(items) + "]"
    return _random_object(rng, depth, pretty)


def _random_object(rng: random.Random, depth: int, pretty: bool) -> str:
    members = [
        (_spell(rng.choice(_KEYS), rng), _random_value(rng, depth + 1, pretty)) for _ in range(rng.randrange(1, 5))
    ]
    for _ in range(rng.choice([0, 1, 1, 2])):  # keys planted twice
        key, value = rng.choice(members)
        roll = rng.random()
        if roll < 0.5:
            twin = (key, value)  # the same member, byte for byte
        elif roll < 0.65:
            twin = (_spell(json.loads(key), rng), value)  # the key spelled otherwise
        elif roll < 0.8:
            twin = (key, _spell(json.loads(value), rng) if value.startswith('"') else value.replace(".0", ""))
        else:
            twin = (key, _random_value(rng, depth + 1, pretty))
        members.insert(rng.randrange(len(members) + 1), twin)
    if rng.random() < 0.3:  # a member given again in the object inside, after another member, then another value
        key, value = members[0]
        inner = f'"a":0,{key}:{value},{key}:{_random_value(rng, depth + 1, pretty)}'
        members.append(('"o"', "{" + inner + "}" if rng.random() < 0.7 else "[" + "{" + inner + "}]"))
    sep, colon = (", ", ": ") if pretty else (",", ":")
    return "{" + sep.join(key + colon + value for key, value in members) + "}"


def random_json_texts(seed: str, count: int) -> list[str]:
    """``count`` random JSON texts of objects (nested, in arrays) with keys planted twice: most compact."""
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < count:
        pretty = rng.random() < 0.1
        roll = rng.random()
        if roll < 0.05:  # (an array of many objects: more repeated members than one object holds)
            text = "[" + ",".join(_random_object(rng, 1, pretty) for _ in range(rng.randrange(17, 40))) + "]"
        else:
            text = _random_object(rng, 0, pretty) if roll < 0.8 else _random_value(rng, 0, pretty)
        try:
            loads(text)
        except ValidationError:  # (a long literal or the like: none of the texts this is about)
            continue
        texts.append(text)
    return texts


class _Pairs(list[tuple[str, Any]]):
    """An object as json reads it with every pair kept."""


def _reference(text: str) -> list[Problem]:
    """The duplicate-key problems of ``text`` as documented, from json's pairs: an object's keys given more than
    once with values that differ (1, 1.0 and true three values; an object with such a key differs from any),
    each object's before those of the objects inside it, in document order, the dropped values not looked into."""

    def last(pairs: _Pairs) -> dict[str, Any]:
        return dict(pairs)

    def conflicts(pairs: _Pairs) -> dict[str, int]:
        kept, counts = last(pairs), dict[str, int]()
        for key, _ in pairs:
            counts[key] = counts.get(key, 0) + 1
        differ = {key for key, value in pairs if counts[key] > 1 and not same(value, kept[key])}
        return {key: n for key, n in counts.items() if key in differ}

    def same(a: Any, b: Any) -> bool:
        if type(a) is not type(b):
            return False
        if isinstance(a, _Pairs):
            if conflicts(a) or conflicts(b):
                return False
            x, y = last(a), last(b)
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return bool(a == b)

    found: list[Problem] = []

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(node, _Pairs):
            found.extend(
                Problem(
                    pointer_of((*path, key)),
                    "duplicate-key",
                    f"key {short_repr(key, 60)} given {n} times in one object, its values differ: readers keep one"
                    " (most, the last)",
                )
                for key, n in conflicts(node).items()
            )
            for key, child in last(node).items():
                walk(child, (*path, key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, (*path, i))

    walk(json.loads(text, object_pairs_hook=_Pairs), ())
    return found


def differential(texts: list[str]) -> dict[str, int]:
    """Check duplicate_keys and its second filter against the reference on every text; what was met, counted."""
    seen = {"texts": 0, "refused": 0, "equal repeats only": 0, "settled by the filter": 0}
    for text in texts:
        expected = _reference(text)
        value = loads(text)
        for data in (text, text.encode()):
            assert duplicate_keys(data, value) == expected, text
        written = orjson.dumps(value)
        settled = jsontext._equal_repeats_only(text, written)
        assert not (settled and expected), text  # (the filter says "nothing to say" only when that is so)
        seen["texts"] += 1
        seen["refused"] += bool(expected)
        repeated = not expected and jsontext._colons(text) > written.count(b":")
        seen["equal repeats only"] += repeated
        seen["settled by the filter"] += repeated and settled
    return seen


def test_duplicate_keys_agrees_with_the_reference_on_random_texts() -> None:
    """3,000 random texts (a run of 50,000 agrees too): every verdict, pointer and message is the reference's, and
    the second filter settles many of the texts whose keys are all repeated with one value."""
    seen = differential(random_json_texts("duplicate-keys", 3000))
    assert seen["refused"] > 600 and seen["equal repeats only"] > 300
    assert seen["settled by the filter"] > 50  # (the others: escapes, 1e2, spaces, a repeat in another object)
