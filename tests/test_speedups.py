"""The optional C writer (agentmsg._speedups) writes exactly what the pure-Python path writes.

Its contract: ``encode(value, ...)`` returns the bytes of ``orjson.dumps(value, default=json_default)``, or
None where it gives up (the caller then runs that pure-Python path). So for every value here, the writer's
bytes equal orjson's, or it gave up, and ``dumps_json`` (what ``to_json_bytes``, ``encode_messages`` and
``block_to_json`` call) gives the pure path's bytes or raises the pure path's error. Oracle: orjson with
agentmsg's compiled hooks (tests/test_codec*.py check those against the schemas and AgentScope Java).
"""

from __future__ import annotations

import datetime
import enum
import math
import os
import subprocess
import sys
import uuid
from collections import namedtuple
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import TextBlock, ToolResultBlock, ToolUseBlock, UserMessage, _converter
from agentmsg.errors import ValidationError
from tests.conftest import c_compiler_available
from tests.fuzz.budget import examples
from tests.fuzz.msg_strategies import any_block, messages, scalars

native = _converter._speedups


if native is None:
    if os.environ.get("AGENTMSG_PURE_PYTHON"):
        pytestmark = pytest.mark.skip("AGENTMSG_PURE_PYTHON is set: the C writer is turned off")
    elif not c_compiler_available():
        pytestmark = pytest.mark.skip("no C compiler or Python headers here: agentmsg was built without its C writer")


def test_the_c_writer_is_built_where_a_compiler_is() -> None:
    assert native is not None, "a C compiler is here, but agentmsg._speedups was not built (see the install log)"


def pure(value: Any) -> bytes:
    return orjson.dumps(value, default=_converter.json_default)


def c_writer(value: Any) -> bytes | None:
    assert native is not None
    return native.encode(value, _converter.native_plans, _converter.json_default, orjson.dumps)  # type: ignore[no-any-return]


def same_as_pure(value: Any, *, must_write: bool = True) -> None:
    """The C writer writes the pure path's bytes (or, with must_write=False, may give up); dumps_json agrees
    with the pure path, bytes or error."""
    try:
        expected: bytes | None = pure(value)
    except orjson.JSONEncodeError:
        expected = None
    got = c_writer(value)
    if got is not None or must_write:
        assert got == expected, (got, expected)
    if expected is None:
        with pytest.raises(ValidationError):
            _converter.dumps_json(value)
    else:
        assert _converter.dumps_json(value) == expected


# ---- messages, blocks, conversations (hypothesis) ------------------------------------------------------


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_messages_are_written_as_the_pure_path_writes_them(msg: Any) -> None:
    same_as_pure(msg, must_write=False)
    assert msg.to_json_bytes() == pure(msg)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages(), max_size=4))
def test_conversations_are_written_as_the_pure_path_writes_them(msgs: list[Any]) -> None:
    same_as_pure(msgs, must_write=False)
    assert agentmsg.encode_messages(msgs) == pure(msgs)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_block)
def test_blocks_are_written_as_the_pure_path_writes_them(block: Any) -> None:
    same_as_pure(block, must_write=False)
    assert agentmsg.block_to_json(block).encode() == pure(block)


floats = st.floats() | st.sampled_from([0.0, -0.0, 1e15, 1e16, 1e-4, 1e-5, 5e-324, 1.7976931348623157e308])


@settings(max_examples=examples(500), deadline=None)
@given(
    st.recursive(
        scalars | floats | st.text(st.characters(codec="utf-8")),
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
        max_leaves=30,
    )
)
def test_json_values_in_metadata_are_written_as_orjson_writes_them(value: Any) -> None:
    """Every JSON value (strings of every plane, 64-bit integer edges, floats in and out of exponent form,
    NaN and infinities) is written (nothing given up) with orjson's bytes."""
    same_as_pure(with_metadata(value))
    same_as_pure(value)


def with_metadata(value: Any) -> Any:
    msg = UserMessage("x")
    msg.metadata = {"v": value}  # set after construction: any value, as a program may
    return msg


# ---- edge values, one by one -----------------------------------------------------------------------------


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Plain(enum.Enum):
    ONE = (1,)


class MyDict(dict):  # type: ignore[type-arg]
    def items(self) -> Any:  # orjson (and the C writer) read the dict itself, not items()
        return []


class MyList(list):  # type: ignore[type-arg]
    pass


Pair = namedtuple("Pair", "a b")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "".join(map(chr, range(0x80))),  # every control character and every escape
        "é ü \xff",  # Latin-1 above ASCII
        "\u2028 \u4e2d \uffff",  # the BMP
        "\U0001f600 \U0010ffff",  # astral planes
        [0, 1, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1],
        [True, False, None],
        [0.0, -0.0, 0.1, 1.5, 100.0, 1e15, 1e16, 1e-4, 1e-5, 1.2345678901234568e16, 5e-324, 1e308],
        [math.nan, math.inf, -math.inf],
        (1, "two", [3]),
        {"a": {"b": {"c": []}}, "": {}},
        Colour.RED,
        Level.HIGH,
        MyDict(a=1),
        MyList([1, 2]),
        {"s": Colour.RED, "i": Level.HIGH, "d": MyDict(x=[MyList()])},
    ],
)
def test_values_the_c_writer_writes(value: Any) -> None:
    same_as_pure(value)
    same_as_pure(with_metadata(value))


@pytest.mark.parametrize(
    "value",
    [
        2**64,  # integer-range
        -(2**63) - 1,
        "lone \ud800 surrogate",  # lone-surrogate
        "\udfff",
        {1: "int key"},  # orjson: dict keys must be str
        {Colour.RED: "str-enum key"},
        Plain.ONE,  # types orjson writes itself, or refuses: left to orjson
        datetime.datetime(2025, 1, 2, 3, 4, 5),
        uuid.UUID(int=7),
        Pair(1, 2),
        object(),
        b"bytes",
    ],
)
def test_values_the_c_writer_leaves_to_orjson(value: Any) -> None:
    assert c_writer({"v": value}) is None
    same_as_pure(with_metadata(value), must_write=False)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [1, 100, 235, 239, 240, 250, 252, 253, 254, 255, 300, 5000])
def test_deep_values_the_same_as_the_pure_path_or_its_error(depth: int) -> None:
    """Deep nesting: written alike below the writer's limit, left to orjson above it (which writes the same
    bytes up to its own limit and raises max-depth beyond), never a RecursionError or a crash."""
    same_as_pure(nested(depth), must_write=depth < 230)
    same_as_pure(with_metadata(nested(depth)), must_write=depth < 225)


def test_unknown_keys_are_merged_as_the_hook_merges_them() -> None:
    block = TextBlock(text="t", unknown_keys={"extra": [1, {"k": "v"}]})
    same_as_pure(block)
    block.unknown_keys = {"extra": [1, {"k": "v"}], "text": "declared key again"}  # the constructor refuses it
    same_as_pure(block)
    assert c_writer(block) == b'{"type":"text","text":"declared key again","extra":[1,{"k":"v"}]}'
    same_as_pure(UserMessage([block], unknown_keys={"z": 1}))


def test_a_model_class_without_a_plan_is_written_through_its_hook() -> None:
    class Shouting(TextBlock):
        __slots__ = ()

    assert Shouting not in _converter.native_plans
    msg = UserMessage("x")
    msg.content = [Shouting(text="HI")]  # constructors would make it a TextBlock
    assert c_writer(msg) == pure(msg)  # through the fallback: its JSON hook, compiled on first use
    assert Shouting in _converter.native_plans  # and planned with it
    same_as_pure(msg)


def test_nested_results_and_none_fields() -> None:
    inner = ToolResultBlock(id="c1", name="f", output=[TextBlock(text="deep")])
    outer = ToolResultBlock(id="c2", name="g", output=[inner, "plain"])
    same_as_pure(outer)
    same_as_pure(ToolUseBlock(id="c", name="f", input={}))


def test_a_mutated_message_with_a_bad_value_gets_the_pure_paths_error() -> None:
    msg = UserMessage("hi")
    msg.metadata = {"big": 2**70}
    with pytest.raises(ValidationError) as info:
        msg.to_json_bytes()
    assert info.value.problems[0].rule == "integer-range"
    msg.content.append(object())  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        msg.to_json_bytes()


def test_pure_python_mode_writes_the_same_bytes() -> None:
    """AGENTMSG_PURE_PYTHON=1 turns the C writer off (a fresh interpreter); the bytes are the same."""
    script = (
        "import sys, agentmsg; from agentmsg import _converter as c; assert c._speedups is None;"
        "m = agentmsg.Msg.from_json(sys.stdin.buffer.read()); sys.stdout.buffer.write(m.to_json_bytes())"
    )
    msg = agentmsg.AssistantMessage(
        [
            agentmsg.ThinkingBlock(thinking="hm \u4e2d"),
            TextBlock(text='x\n"y"'),
            ToolUseBlock(id="a", name="b", input={"f": 1e-7}),
        ],
        usage=agentmsg.ChatUsage(input_tokens=3, output_tokens=4, time=0.25),
    )
    env = {**os.environ, "AGENTMSG_PURE_PYTHON": "1"}
    r = subprocess.run(
        [sys.executable, "-c", script], input=msg.to_json_bytes(), capture_output=True, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == msg.to_json_bytes()


@pytest.mark.parametrize("levels", [1, 60, 100, 115, 120, 125, 126, 200])
def test_nested_models_deep_the_same_as_the_pure_path_or_its_error(levels: int) -> None:
    """Tool results nested in tool results (two JSON levels each): written alike, or left to orjson near its
    depth limit (which writes up to 254 levels and raises max-depth beyond), never written past it."""
    block = ToolResultBlock(id="c", name="f", output=[TextBlock(text="x")])
    for _ in range(levels):
        outer = ToolResultBlock(id="c", name="f", output=[TextBlock(text="x")])
        outer.output = [block]  # set after construction: constructors bound the depth themselves
        block = outer
    same_as_pure(block, must_write=levels <= 115)
