"""``agentmsg._wire.values.ValueSplitter``: JSON values one after another (a JSON array of payloads,
pretty-printed payloads) split in any chunking, with the text between them handed over and a bounded look at
each byte."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg._wire.values import ValueSplitter
from tests._support.budget import examples
from tests._support.providers import _write

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

_TEXT = st.text(st.sampled_from('ab{}[]",\\\n é😀'), max_size=12)


_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=10,
)


_OBJECTS = st.lists(st.dictionaries(_TEXT, _VALUE, max_size=4), max_size=6)


def _split(splitter: ValueSplitter, body: bytes, cuts: list[int]) -> list[Any]:
    bounds = [0, *sorted(c % (len(body) + 1) for c in cuts), len(body)]
    items = [item for a, b in itertools.pairwise(bounds) for item in splitter.feed(body[a:b])] + splitter.close()
    return [None if item is None else (orjson.loads(item[0]) if item[1] else item[0]) for item in items]


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(
    _OBJECTS,
    st.sampled_from(["array-pretty", "array-compact", "gemini", "objects"]),
    st.lists(st.integers(0, 1 << 16), max_size=8),
)
def test_value_splitter_gives_each_payload_in_any_chunking(objs: list[Any], shape: str, cuts: list[int]) -> None:
    """Whatever the chunking, each object of an array (or each of objects written one after another,
    pretty-printed) comes out whole, strings holding brackets, quotes, escapes and multi-byte characters."""
    assert _split(ValueSplitter(1 << 20), _write(objs, shape), cuts) == objs


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None)
@given(
    _OBJECTS,
    st.integers(0, 6),
    st.sampled_from([b"oops", b"data: x", b"42", b"}"]),
    st.lists(st.integers(0, 1 << 16), max_size=8),
)
def test_value_splitter_hands_over_text_between_values_and_goes_on(
    objs: list[Any], at: int, junk: bytes, cuts: list[int]
) -> None:
    """Text between values that is no value is handed over up to its line end (the reader reports it as not
    JSON); the values after it come out whole."""
    at = min(at, len(objs))
    parts = [orjson.dumps(o) for o in objs]
    body = b"\n".join([*parts[:at], junk, *parts[at:]]) + b"\n"
    assert _split(ValueSplitter(1 << 20), body, cuts) == [*objs[:at], junk, *objs[at:]]


def test_value_splitter_drops_a_value_over_the_limit_and_goes_on() -> None:
    body = b'[{"a": 1}, {"big": "' + b"x" * 100 + b'"}, {"b": 2}]'
    for size in (1, 7, len(body)):
        splitter = ValueSplitter(50)
        items = [i for k in range(0, len(body), size) for i in splitter.feed(body[k : k + size])] + splitter.close()
        assert items == [(b'{"a": 1}', True), None, (b'{"b": 2}', True)]


class _CountingPattern:
    """A compiled pattern whose searches add the bytes they go through to ``scanned``."""

    scanned = 0

    def __init__(self, pattern: Any) -> None:
        self.pattern = pattern

    def search(self, data: bytes, pos: int = 0) -> Any:
        m = self.pattern.search(data, pos)
        _CountingPattern.scanned += (m.end() if m else len(data)) - pos
        return m


def test_value_splitter_looks_at_each_byte_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value of many small strings and brackets, fed a byte at a time or in 64-byte chunks: the bytes its
    searches go through stay the size of the input (the bytes held are not searched again)."""
    from agentmsg._wire import values as _values

    for name in ("_BLANK", "_STRUCT", "_IN_STRING", "_JUNK_END", "_JUNK_END_ARRAY"):
        monkeypatch.setattr(_values, name, _CountingPattern(getattr(_values, name)))
    value = b'{"a": [' + b",".join(b'"x\\"y"' for _ in range(5_000)) + b"]}"
    for size in (1, 64, len(value)):
        _CountingPattern.scanned = 0
        splitter = ValueSplitter(1 << 24)
        items = [i for k in range(0, len(value), size) for i in splitter.feed(value[k : k + size])]
        assert items == [(value, True)]
        assert _CountingPattern.scanned <= len(value), (size, _CountingPattern.scanned)


def test_value_splitter_hands_over_scalars_in_the_array_up_to_the_next_comma() -> None:
    splitter = ValueSplitter(1 << 10)
    body = b'[{"a": 1}, 42, "s,t" , {"b": [2]}]\n{"c": 3}'
    items = splitter.feed(body) + splitter.close()
    assert items == [
        (b'{"a": 1}', True),
        (b"42", False),
        (b'"s', False),
        (b't" ', False),
        (b'{"b": [2]}', True),
        (b'{"c": 3}', True),
    ]
