"""The walk that finds what a request's writer cannot send (``jsontext.unwritten_at``), against the two walks it
replaced, kept here as the oracles: ``json_text``'s (``providers/_request/context.py`` ``_unwritable``: the
standard library's fallback, int keys written as digits, past ``limits.max_depth`` refused) and the tool
definitions' and schemas' (``unwritten_at`` as it was: orjson's writer, enum members and dataclasses walked, past the
depth not walked)."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg import limits
from agentmsg._codec import jsontext
from agentmsg.errors import pointer_of, short_repr
from tests._support.budget import examples

pytestmark = [pytest.mark.no_kernel]


class Colour(enum.Enum):
    RED = 1
    NAN = float("nan")
    LONE = "\ud800"


@dataclasses.dataclass(frozen=True)
class Point:
    x: Any
    _hidden: Any = float("nan")  # (orjson leaves out an attribute named with a leading _)


chars = st.sampled_from(["a", "b", "\u00e9", "\U0001f600", "\ud800", "\udc00"])
strings = st.lists(chars, max_size=3).map("".join)
# (past Python's digits: made by a map, since Hypothesis would write the strategy's repr)
ints = (
    st.integers(-(2**70), 2**70)
    | st.sampled_from([2**64 - 1, 2**64, -(2**63) - 1])
    | st.sampled_from([1, -1]).map(lambda sign: sign * 10**5000)
)
floats = st.floats() | st.sampled_from([float("nan"), float("inf"), -0.0])
keys = strings | st.integers(-(2**70), 2**70) | floats | st.booleans() | st.none()
odd = (
    st.binary(max_size=2)
    | st.sets(st.integers(0, 3), max_size=2)
    | st.frozensets(st.integers(0, 3), max_size=2)
    | st.just(Decimal("1.5"))
    | st.sampled_from(list(Colour))
)
leaves = strings | ints | floats | st.booleans() | st.none() | odd


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=3)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(keys, children, max_size=3)
        | st.dictionaries(strings, children, max_size=3).map(MappingProxyType)
        | st.builds(Point, children)
    )


trees = st.recursive(leaves, _containers, max_leaves=12)


def _nest(value: Any, levels: int) -> Any:
    """``value`` inside ``levels`` arrays and objects, taken in turn (nesting near the depth limit)."""
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


values = st.builds(_nest, trees, st.integers(0, 6))


@pytest.fixture
def depth() -> Iterator[None]:
    kept = limits.max_depth
    yield
    limits.max_depth = kept


# ---- the oracles: the two walks replaced, as they were at 4e5d5f3c (but for their names and docstrings) -------


def _old_json_text_walk(value: Any) -> tuple[str, str, str] | None:
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        kind = type(node)
        if kind is bool or node is None:
            continue
        if kind is int:
            if not jsontext.INT_MIN <= node <= jsontext.INT_MAX and (why := jsontext.undigited(node)) is not None:
                return pointer_of(path), "integer-range", why.removesuffix(": no JSON body carries it")
            continue
        if isinstance(node, str):
            if jsontext.has_lone_surrogate(node):
                return pointer_of(path), "lone-surrogate", jsontext.surrogate_words(node)
            continue
        if len(path) > limits.max_depth:  # (a value that holds itself, too)
            return pointer_of(path), "json-value", f"nested deeper than {limits.max_depth} levels (limits.max_depth)"
        if isinstance(node, Mapping):
            for key in node:
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    where = pointer_of((*path, str(key)))
                    return where, "json-value", f"object key {short_repr(key)} is neither a string nor an int"
                if isinstance(key, str) and jsontext.has_lone_surrogate(key):
                    return pointer_of(path), "lone-surrogate", "object key: " + jsontext.surrogate_words(key)
            stack.extend((child, (*path, str(key))) for key, child in reversed(list(node.items())))
        elif isinstance(node, Sequence) and not isinstance(node, (bytes, bytearray)):
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(node))))
        elif isinstance(node, float) and not math.isfinite(node):
            return pointer_of(path), "json-value", f"{node!r} is not a JSON number"
        elif not isinstance(node, (int, float)):
            return pointer_of(path), "json-value", f"a value of type {type(node).__name__} is no JSON value"
    return None


def _old_tools_walk(value: Any, max_depth: int) -> tuple[str, str, str] | None:
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if jsontext.has_lone_surrogate(node):
                return pointer_of(path), "lone-surrogate", jsontext.surrogate_words(node) + jsontext._NO_BODY
            continue
        if isinstance(node, int):
            if not jsontext.INT_MIN <= node <= jsontext.INT_MAX and (why := jsontext.undigited(node)) is not None:
                return pointer_of(path), "integer-range", why
            continue
        if node is None:
            continue
        inner = node if type(node) is dict or type(node) is list else jsontext.container(node)
        if inner is None:
            if jsontext._not_written(node):
                # (inside an enum member's value or a dataclass, what is not written, at its own pointer)
                parts = jsontext._written_parts(node)
                inside = None if parts is None else _old_tools_walk(parts, max_depth)
                if inside is not None:
                    return pointer_of(path) + inside[0], inside[1], inside[2]
                if isinstance(node, (bytes, bytearray)):
                    what = f"{type(node).__name__} is no JSON value (give its text as a string)"
                elif isinstance(node, float):
                    what = "NaN or an infinity is not a JSON number"
                else:
                    what = f"a {type(node).__name__} is no JSON value"
                return pointer_of(path), "json-value", f"{what}: no JSON body carries it"
            continue
        if len(path) > max_depth:
            continue
        if type(inner) is dict:
            for key in inner:
                if isinstance(key, str) and jsontext.has_lone_surrogate(key):
                    return (
                        pointer_of(path),
                        "lone-surrogate",
                        "object key: " + jsontext.surrogate_words(key) + jsontext._NO_BODY,
                    )
            stack.extend((child, (*path, str(key))) for key, child in reversed(inner.items()))
        else:
            stack.extend((child, (*path, i)) for i, child in reversed(list(enumerate(inner))))
    return None


def _old_json_text(value: Any) -> tuple[str, str, str] | None:
    """``json_text``'s verdict before the merge: its walk's, with the suffix it added."""
    found = _old_json_text_walk(value)
    return None if found is None else (found[0], found[1], found[2] + ": no JSON body carries it")


@pytest.mark.differential
@pytest.mark.fuzz
@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(value=values, max_depth=st.integers(1, 6))
def test_the_walk_says_what_the_two_walks_said(depth: None, value: Any, max_depth: int) -> None:
    """The same pointer, rule and words (or none) as each walk it replaces, over nested values holding every kind
    of key, NaN, big integers (past 64 bits, past Python's digits), bytes, sets, lone surrogates, enum members and
    dataclasses, nested around ``limits.max_depth``."""
    limits.max_depth = max_depth
    assert jsontext.unwritten_at(value, max_depth) == _old_tools_walk(value, max_depth)
    new = jsontext.unwritten_at(value, max_depth, check_keys=True, refuse_deep=True, stdlib=True)
    assert new == _old_json_text(value)


@pytest.mark.parametrize("stdlib", [False, True], ids=["orjson", "stdlib"])
def test_an_int_key_past_pythons_digits_is_refused_at_its_object(stdlib: bool) -> None:
    """An int key of more digits than Python writes raised a bare ValueError from both walks (``str(key)``, for its
    value's pointer). Now rule integer-range at its object's pointer, as a lone-surrogate key is."""
    found = jsontext.unwritten_at(
        {"a": [{1: 2, 10**5000: 3}]}, 254, check_keys=stdlib, refuse_deep=stdlib, stdlib=stdlib
    )
    assert found is not None and found[:2] == ("/a/0", "integer-range"), found
    assert found[2].startswith("object key: integer 2**16609 or more") and "than Python writes" in found[2]
