"""Units of the response machinery (``agentmsg.providers._response``) tested on their own: the partial-arguments
writer (Gemini's streamed ``partialArgs``: the last value of a path wins, held strings stay linear) and the
reading of lone surrogate escapes."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg.providers._response.partial_json import json_fragment_writer
from tests._support.budget import examples
from tests._support.providers import once

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)


def write(*updates: tuple[Any, ...]) -> tuple[str, list[str]]:
    """The text the updates write (checked to be one JSON object, each key once) and the notes; the text is the
    object of every update, or the writer says that object (:meth:`changed`), which is then returned as text."""
    w = json_fragment_writer()
    out = []
    for path, value, *more in updates:
        out.append(w.add(path, value, is_string=isinstance(value, str), more=bool(more and more[0])))
    out.append(w.close())
    text = "".join(out)
    once(text)
    changed = w.changed()
    return (text if changed is None else orjson.dumps(changed).decode()), [rule for rule, _ in w.notes]


@pytest.mark.parametrize(
    ("updates", "value", "said"),
    [
        ([("$.city", "Paris"), ("$.city", "Rome")], {"city": "Rome"}, ["duplicate"]),
        ([("$.city", "Paris"), ("$.n", 1), ("$.city", "Rome")], {"city": "Rome", "n": 1}, ["duplicate"]),
        ([("$.a.x", 1), ("$.b", 2), ("$.a.y", 3)], {"a": {"x": 1, "y": 3}, "b": 2}, ["order"]),
        ([("$.a[0]", 1), ("$.a[1]", 2), ("$.a[0]", 9)], {"a": [9, 2]}, ["duplicate"]),
        ([("$.a[1]", "b"), ("$.a[0]", "a")], {"a": ["a", "b"]}, ["order"]),
        ([("$.a", 1), ("$.a.b", 2)], {"a": {"b": 2}}, ["order"]),
        ([("$.s", "ab", True), ("$.s", "cd"), ("$.s", "X", True), ("$.s", "Y")], {"s": "XY"}, ["duplicate"]),
        ([("$.a", "1"), ("$.a", "2", True), ("$.a", "3"), ("$.b", 5)], {"a": "23", "b": 5}, ["duplicate"]),
        # what Gemini sends: a string in pieces, the last one (empty) without willContinue; nothing said
        (
            [("$.c", "USA", True), ("$.c", ""), ("$.m[0][0]", 1), ("$.m[0][1]", 2), ("$.m[1][0]", 3)],
            {"c": "USA", "m": [[1, 2], [3]]},
            [],
        ),
    ],
)
def test_partial_args_the_last_value_of_a_path_wins(updates: list[Any], value: Any, said: list[str]) -> None:
    """The arguments are the object every update builds, the last value of a path winning (as a JSON parser reads
    a repeated key): the streamed text, read by a JSON parser, is that object; an update that could not be
    appended (a path given again, a container already complete, an index out of order) is noted once."""
    text, notes = write(*updates)
    assert orjson.loads(text) == value
    assert notes == said


def test_partial_args_held_strings_and_gaps_stay_linear_in_the_input() -> None:
    """Held updates (after a repeat) keep a string that arrives in pieces as its pieces, joined once when written
    (appending to a str held in a dict copies it each time: quadratic in a long streamed value); an index
    beyond an array's end pads it with nulls only within the size of the updates received, so an index of
    10**9 (a 20-byte update) is skipped and said, not a billion nulls."""
    import tracemalloc

    from agentmsg.providers._response import partial_json as _partial_json

    w = json_fragment_writer()
    text = w.add("$.a", 1, is_string=False, more=False)
    text += w.add("$.a", 2, is_string=False, more=False)  # a repeat: from here on, updates are held
    n = 20_000
    for i in range(n):
        text += w.add("$.body", "xy", is_string=True, more=i < n - 1)
    held = w._tree["body"]
    assert isinstance(held, _partial_json._Pieces) and len(held.parts) == n  # pieces, not a str copied n times
    text += w.close()
    once(text)
    assert orjson.loads(text) == {"a": 1, "body": "xy" * n}  # the streamed text keeps a's first value
    assert w.changed() == {"a": 2, "body": "xy" * n}  # the call's input: the last

    tracemalloc.start()
    try:
        w = json_fragment_writer()
        assert w.add("$.a[1000000000]", 1, is_string=False, more=False) == ""
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000
    assert [rule for rule, _ in w.notes] == ["order"] and w.notes[0][1].endswith(": skipped")
    text, said = write(("$.a[2]", "c"), ("$.a[0]", "a"), ("$.a[1]", "b"))  # a small gap: padded, then filled
    assert orjson.loads(text) == {"a": ["a", "b", "c"]} and said == ["order"]


_JSON_STRING_PIECES = [r"\ud83d", r"\ude00", r"\uD83D", r"\uDE00", r"\\", r"\\ud83d", "a", r"\n", r"\u00e9", "é", r"\""]


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(_JSON_STRING_PIECES), max_size=12))
def test_lone_surrogate_escapes_become_replacement_characters(pieces: list[str]) -> None:
    """What a payload with lone surrogate escapes is read as (providers/_response/parser.py): the string JSON's
    grammar gives (the stdlib reader, which keeps lone surrogates), each lone one as U+FFFD; pairs whole."""
    import re

    from agentmsg.providers._response.parser import _without_lone_surrogates

    data = '{"a":"' + "".join(pieces) + '"}'
    expected = re.sub("[\ud800-\udfff]", "\ufffd", json.loads(data)["a"])
    fixed = _without_lone_surrogates(data)
    assert orjson.loads(data if fixed is None else fixed)["a"] == expected


def test_stream_builders_keep_their_attributes_in_slots() -> None:
    # A builder has more attributes than CPython shares a dict's keys for: each reply's builder made a dict that
    # grew by resizing. In slots, it makes none (a new attribute needs its slot: mypy says so).
    from agentmsg.providers._response.builder import StreamBuilder
    from agentmsg.providers._response.think import ThinkTagBuilder

    for b in (StreamBuilder("openai"), ThinkTagBuilder("openai")):
        assert not hasattr(b, "__dict__")


def test_event_id_counter_writes_every_id_as_its_number_in_ten_hex_digits() -> None:
    # The counter's first run of 4,096 ids is made at once (its high digits written as zeros, no formatting), the
    # later runs each from their number: every id, across the runs' joins, is the prefix and f"{n:010x}".
    from agentmsg.providers._response.builder import _id_counter

    prefix = "0123456789abcdef012345"
    ids = _id_counter(prefix)
    assert [next(ids) for _ in range(3 * 4096 + 2)] == [f"{prefix}{n:010x}" for n in range(3 * 4096 + 2)]
