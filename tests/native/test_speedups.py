"""The optional C writer (agentmsg._speedups) writes exactly what the pure-Python path writes.

Its contract: ``encode(value, ...)`` returns the bytes of ``orjson.dumps(value, default=json_default)``, or
None where it gives up (the caller then runs that pure-Python path). So for every value here, the writer's
bytes equal orjson's, or it gave up, and ``dumps_json`` (what ``to_json_bytes``, ``encode_messages`` and
``block_to_json`` call) gives the pure path's bytes or raises the pure path's error. Oracle: orjson with
agentmsg's compiled hooks (tests/codec/ checks those against the schemas and AgentScope Java).
"""

from __future__ import annotations

import datetime
import enum
import itertools
import json
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
from agentmsg import TextBlock, ToolResultBlock, ToolUseBlock, UserMessage
from agentmsg._codec import converter as _converter
from agentmsg._native import PURE_PYTHON  # the C writer the converter uses (None: pure Python)
from agentmsg._native import speedups as native
from agentmsg.errors import ValidationError
from tests._support.budget import examples
from tests._support.strategies import any_block, messages, scalars
from tests.conftest import c_compiler_available

pytestmark = pytest.mark.differential


if native is None:
    if PURE_PYTHON:
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
    """The C writer writes the pure path's bytes (or, with must_write=False, may give up), and its check without
    writing (``writes``) says whether it does; dumps_json agrees with the pure path, bytes or error."""
    try:
        expected: bytes | None = pure(value)
    except orjson.JSONEncodeError:
        expected = None
    got = c_writer(value)
    # the check without writing (writes) says what the writer does: it writes the value, or gives up
    assert native is not None
    assert native.writes(value, _converter.native_plans, _converter.json_default, orjson.dumps) is (got is not None)
    if got is not None:
        assert _converter.surely_writes(value)
    if non_finite(value):  # orjson writes NaN and infinities as null: the C writer gives up on them
        assert got is None, got
    elif got is not None or must_write:
        assert got == expected, (got, expected)
    if expected is None:
        with pytest.raises(ValidationError):
            _converter.dumps_json(value)
    else:
        assert _converter.dumps_json(value) == expected


def non_finite(value: Any) -> bool:
    """Whether a float NaN or infinity is anywhere in ``value`` (model objects' fields included)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif hasattr(type(node), "__attrs_attrs__"):
            stack.extend(getattr(node, a.name) for a in type(node).__attrs_attrs__)
    return False


# ---- messages, blocks, conversations (hypothesis) ------------------------------------------------------


def message_written_as_the_pure_path_writes_it(msg: Any) -> None:
    same_as_pure(msg, must_write=False)
    assert msg.to_json_bytes() == pure(msg)


# (Making a random message is what these tests spend their time on, not writing it: each message of a random
# conversation is checked as one message too, so the message test's own budget is smaller.)
@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_messages_are_written_as_the_pure_path_writes_them(msg: Any) -> None:
    message_written_as_the_pure_path_writes_it(msg)


@pytest.mark.fuzz
@settings(
    max_examples=examples(120),
    deadline=None,
    # (four random messages are large by design: Hypothesis found them past its entropy budget in 20 of 29 draws
    # once, a health check failure, not a finding)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(messages(), max_size=4))
def test_conversations_are_written_as_the_pure_path_writes_them(msgs: list[Any]) -> None:
    same_as_pure(msgs, must_write=False)
    assert agentmsg.encode_messages(msgs) == pure(msgs)
    for msg in msgs:
        message_written_as_the_pure_path_writes_it(msg)


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_block)
def test_blocks_are_written_as_the_pure_path_writes_them(block: Any) -> None:
    same_as_pure(block, must_write=False)
    assert agentmsg.block_to_json(block).encode() == pure(block)


floats = st.floats() | st.sampled_from([0.0, -0.0, 1e15, 1e16, 1e-4, 1e-5, 5e-324, 1.7976931348623157e308])


@pytest.mark.fuzz
@settings(max_examples=examples(250), deadline=None)
@given(
    st.recursive(
        scalars | floats | st.text(st.characters(codec="utf-8")),
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
        max_leaves=30,
    )
)
def test_json_values_in_metadata_are_written_as_orjson_writes_them(value: Any) -> None:
    """Every JSON value (strings of every plane, 64-bit integer edges, floats in and out of exponent form) is
    written (nothing given up) with orjson's bytes; NaN and infinities, which orjson writes as null, are given up
    (and refused in a message: issue 28)."""
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
    """Each value, alone and in metadata. In metadata (a free-form value) the writers take what constructors take:
    a tuple, a dict or list subclass is refused (by both paths); an enum member is written as its value, by the
    pure path only (the C writer gives up on every other type there)."""
    same_as_pure(value)
    same_as_pure(with_metadata(value), must_write=not isinstance(value, enum.Enum))
    if isinstance(value, (tuple, MyDict, MyList)):
        with pytest.raises(ValidationError):
            _converter.dumps_json(with_metadata(value))


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
    assert c_writer(block) is None  # (gives up: the hook refuses a declared key that would replace the field)
    with pytest.raises(ValidationError) as info:
        _converter.dumps_json(block)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/text", "unknown-key")]
    same_as_pure(UserMessage([TextBlock(text="t", unknown_keys={"extra": [1]})], unknown_keys={"z": 1}))


def test_a_model_class_without_a_plan_is_written_through_its_hook() -> None:
    class Shouting(TextBlock):
        __slots__ = ()

    assert Shouting not in _converter.native_plans
    msg = UserMessage("x")
    msg.content = [Shouting(text="HI")]  # constructors would make it a TextBlock
    assert c_writer(msg) == pure(msg)  # through the fallback: its JSON hook, compiled on first use
    assert Shouting in _converter.native_plans  # and planned with it
    assert c_writer(msg) == pure(msg)
    # (the check, writes, gives up on it: a caller's subclass, which the formatters convert first)
    assert native is not None
    assert not native.writes(msg, _converter.native_plans, _converter.json_default, orjson.dumps)


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
        "import sys, agentmsg; from agentmsg._codec import converter as c; assert c._speedups is None;"
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


# ---- json_string_between: the string of a payload of a known shape (the stream parsers' text deltas) ----------

HEAD = b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":'
TAIL = b"}}"


def between(data: bytes, head: bytes = HEAD, tail: bytes = TAIL) -> str | None:
    assert native is not None
    return native.json_string_between(data, head, tail)  # type: ignore[no-any-return]


def orjson_string(data: bytes) -> str | None:
    """What orjson reads from a payload HEAD + one JSON string + TAIL: the string, or None (not JSON)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    text = value["delta"]["text"]
    assert isinstance(text, str)
    return text


def same_string_as_orjson(body: bytes) -> str | None:
    """``body`` between quotes in a payload: json_string_between reads orjson's string, or gives up (None)."""
    data = HEAD + b'"' + body + b'"' + TAIL
    got = between(data)
    if got is not None:
        assert got == orjson_string(data), data
    return got


def escaped(text: str, data: st.DataObject) -> bytes:
    """``text`` as a JSON string's body, each character written as a server might: raw UTF-8, or escaped (a
    short escape where JSON has one, ``\\u`` with lower or upper case hex, a surrogate pair beyond the BMP)."""
    out = []
    short = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "/": "\\/"}
    for ch in text:
        how = data.draw(st.integers(0, 3))
        if ch in short and (how or ch in '"\\' or ord(ch) < 0x20):
            out.append(short[ch] if how != 3 else f"\\u{ord(ch):04x}")
        elif ord(ch) < 0x20 or how == 3:
            code = ord(ch)
            if code > 0xFFFF:  # a surrogate pair: left to orjson
                code -= 0x10000
                esc = f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
            else:
                esc = f"\\u{code:04x}"
            out.append(esc.upper().replace("\\U", "\\u") if data.draw(st.booleans()) else esc)
        else:
            out.append(ch)
    return "".join(out).encode("utf-8", "surrogatepass")


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_json_string_between_reads_text_as_orjson_does(data: st.DataObject) -> None:
    """Any text, written raw or escaped every way JSON allows: the string orjson reads, or None where it gives up
    (only where the text holds a surrogate pair escape)."""
    text = data.draw(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"])))
    body = escaped(text, data)
    got = same_string_as_orjson(body)
    assert got == text or (got is None and b"\\u" in body.lower())
    assert same_string_as_orjson(orjson.dumps(text)[1:-1]) == text  # as orjson (and the API) writes it


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=40)
    | st.lists(
        st.sampled_from([b"\\", b'"', b"u", b"d83d", b"00e9", b"\xff", b"\xe4\xb8\xad", b"\x01", b"a", b"n", b"/"]),
        max_size=12,
    ).map(b"".join)
)
def test_json_string_between_on_any_bytes_reads_orjsons_string_or_gives_up(body: bytes) -> None:
    """Any bytes between the quotes: orjson's string, or None; never a string where orjson fails."""
    got = same_string_as_orjson(body)
    if orjson_string(HEAD + b'"' + body + b'"' + TAIL) is None:
        assert got is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (HEAD + b'"Hello"' + TAIL, "Hello"),
        (HEAD + b'""' + TAIL, ""),
        (HEAD + b'"a\\n\\"b\\" \\u00e9\\u4E2D \\/"' + TAIL, 'a\n"b" é中 /'),
        (HEAD + b'"\xe4\xb8\xad"' + TAIL, "中"),
        (HEAD + b'"\\ud83d\\ude00"' + TAIL, None),  # a surrogate pair: orjson's
        (HEAD + b'"\\ud83d"' + TAIL, None),  # a lone surrogate: the parser's repair
        (HEAD + b'"a"b"' + TAIL, None),  # not one string
        (HEAD + b'"a\\"' + TAIL, None),  # the string is not closed
        (HEAD + b'"a\x01"' + TAIL, None),  # a raw control character: not JSON
        (HEAD + b'"\\x"' + TAIL, None),  # no such escape
        (HEAD + b'"\\u12"' + TAIL, None),
        (HEAD + b'"\xff"' + TAIL, None),  # invalid UTF-8
        (HEAD + b'"x"' + TAIL + b" ", None),  # other bytes around it
        (HEAD[:-1] + b' "x"' + TAIL, None),
        (HEAD.replace(b"0", b"1") + b'"x"' + TAIL, None),
        (HEAD + b'"x', None),
        (b"", None),
    ],
)
def test_json_string_between_cases(data: bytes, expected: str | None) -> None:
    assert between(data) == expected
    if expected is not None:
        assert orjson_string(data) == expected


OPENAI_HEAD = b'{"id":"c","choices":[{"index":0,"delta":{"content":'
OPENAI_TAIL = b'},"finish_reason":null}],"obfuscation":'
OPENAI_REST = b"}"


def with_other(text: bytes, other: bytes) -> tuple[str | None, str | None]:
    """A payload whose text is followed by another string (OpenAI's obfuscation): what json_string_between reads
    with ``rest`` and what orjson reads (None: not JSON)."""
    assert native is not None
    data = OPENAI_HEAD + b'"' + text + b'"' + OPENAI_TAIL + b'"' + other + b'"' + OPENAI_REST
    got = native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL, (OPENAI_REST,))
    try:
        want = orjson.loads(data)["choices"][0]["delta"]["content"]
    except orjson.JSONDecodeError:
        want = None
    return got, want


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    *[
        st.binary(max_size=24)
        | st.lists(
            st.sampled_from([b"\\", b'"', b"u", b"d83d", b"00e9", b"\xff", b"\xe4\xb8\xad", b"\x01", b"a", b"}"]),
            max_size=10,
        ).map(b"".join)
    ]
    * 2
)
def test_json_string_between_with_rest_reads_orjsons_string_or_gives_up(text: bytes, other: bytes) -> None:
    """Any bytes in the text and in the other string: orjson's text, or None; never a string where orjson fails
    (the other string is checked as the text is)."""
    got, want = with_other(text, other)
    if got is not None:
        assert got == want
    if want is None:
        assert got is None


@pytest.mark.parametrize(
    ("text", "other", "expected"),
    [
        (b"Hello", b"x9Q", "Hello"),
        (b"", b"", ""),
        (b'a \\"q\\" \\\\', b"\\u00e9\\\\", 'a "q" \\'),  # escaped quotes and backslashes in both
        (b"x", b"\\ud83d", None),  # a lone surrogate in the other string: orjson's to refuse
        (b"x", b"a\x01", None),  # a raw control character in it: not JSON
        (b"x", b"\xff", None),  # invalid UTF-8 in it
        (b'x"', b"y", None),  # the text closes early: not this shape
        (b"x", b'y"', None),
    ],
)
def test_json_string_between_with_rest_cases(text: bytes, other: bytes, expected: str | None) -> None:
    got, want = with_other(text, other)
    assert got == expected
    if expected is not None:
        assert want == expected


def test_json_string_between_with_rest_needs_its_bytes() -> None:
    assert native is not None
    data = OPENAI_HEAD + b'"t"' + OPENAI_TAIL + b'"o"' + OPENAI_REST
    assert native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL, (OPENAI_REST,)) == "t"
    assert native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL, (b"]",)) is None
    assert native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL + b" ", (OPENAI_REST,)) is None
    assert native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL) is None  # (no holes: the tail ends it)
    assert native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL, ()) is None
    assert native.json_string_between(data[:-1], OPENAI_HEAD, OPENAI_TAIL, (OPENAI_REST,)) is None
    with pytest.raises(TypeError):
        native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL, OPENAI_REST)
    with pytest.raises(TypeError):
        native.json_string_between(data, OPENAI_HEAD, OPENAI_TAIL, ("}",))


GEMINI_HEAD = b'{"candidates":[{"content":{"parts":[{"text":'
GEMINI_PIECES = (b'}]}}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":', b',"totalTokenCount":', b"}}")


@pytest.mark.parametrize(
    ("counts", "readable"),
    [
        ((b"5", b"199"), True),
        ((b"0", b"-0"), True),
        ((b"-12", b"123456789012345678"), True),
        ((b'"x"', b"1"), True),  # a string where a count was: any JSON string or integer is a hole
        ((b"1234567890123456789", b"1"), False),  # 19 digits: past what the hole reads (orjson's int64 at most)
        ((b"05", b"1"), False),  # not JSON
        ((b"1.5", b"1"), False),  # a float: not a hole
        ((b"1e3", b"1"), False),
        ((b"", b"1"), False),
        ((b"-", b"1"), False),
        ((b"null", b"1"), False),
        ((b"1 ", b"1"), False),
    ],
)
def test_json_string_between_integer_holes(counts: tuple[bytes, bytes], readable: bool) -> None:
    """Gemini's usage counts change from one text chunk to the next: holes that are integers (or strings),
    checked as orjson reads them; anything else gives up."""
    assert native is not None
    data = (
        GEMINI_HEAD + b'"Hi \\"you\\""' + GEMINI_PIECES[0] + counts[0] + GEMINI_PIECES[1] + counts[1] + GEMINI_PIECES[2]
    )
    got = native.json_string_between(data, GEMINI_HEAD, GEMINI_PIECES[0], GEMINI_PIECES[1:])
    assert got == ('Hi "you"' if readable else None)
    if readable:
        assert orjson.loads(data)["candidates"][0]["content"]["parts"][0]["text"] == got


def test_json_string_between_takes_bytes_only() -> None:
    assert native is not None
    with pytest.raises(TypeError):
        native.json_string_between("x", HEAD, TAIL)
    with pytest.raises(TypeError):
        native.json_string_between(b"x", HEAD)


@pytest.mark.parametrize("dumps", ["orjson", "ascii", "spaced"])
def test_pure_python_mode_reads_anthropic_text_deltas_the_same(dumps: str) -> None:
    """AGENTMSG_PURE_PYTHON=1 (a fresh interpreter: no C speed-ups, so no text delta read in C): the events of
    Anthropic streams whose text deltas the C path reads (escapes, multi-byte text, one it leaves to orjson)
    are the same."""
    deltas = ["Hello", ' "quoted" \\ back', "line\nbreak\ttab", "\u4e2d\u6587 \u00e9", "\U0001f600 emoji", "", "/"]
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in deltas),
        {"type": "ping"},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in deltas),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "late"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    if dumps == "orjson":  # compact, UTF-8: the API's bytes, read in C
        write: Any = orjson.dumps
    elif dumps == "ascii":  # compact, ASCII-escaped: read in C but for the emoji's surrogate pair (orjson)
        write = lambda e: json.dumps(e, separators=(",", ":")).encode()  # noqa: E731
    else:  # spaced: no text delta has the API's bytes (all read by orjson)
        write = lambda e: json.dumps(e).encode()  # noqa: E731
    body = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + write(e) + b"\n\n" for e in events)
    script = (
        "import sys, itertools, orjson; from agentmsg.providers import anthropic; from agentmsg.providers._response import parser as _stream;"
        "assert _stream._string_between is None; n = itertools.count();"
        "evs = list(anthropic.parse_stream(sys.stdin.buffer.read(), id_factory=lambda: str(next(n)), clock=lambda: 'T'));"
        "sys.stdout.buffer.write(orjson.dumps(evs))"
    )
    env = {**os.environ, "AGENTMSG_PURE_PYTHON": "1"}
    r = subprocess.run([sys.executable, "-c", script], input=body, capture_output=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    from agentmsg.providers import anthropic
    from agentmsg.providers._response import parser as _stream

    assert _stream._string_between is not None
    n = itertools.count()
    ours = list(anthropic.parse_stream(body, id_factory=lambda: str(next(n)), clock=lambda: "T"))
    assert orjson.loads(r.stdout) == ours


# ---- fold_deltas: the reducer's delta loop -------------------------------------------------------------------

_FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "providers")


def _recorded_events() -> list[tuple[str, list[dict[str, Any]]]]:
    from agentmsg.providers import get

    out = []
    for provider in ("openai", "anthropic", "gemini", "dashscope"):
        folder = os.path.join(_FIXTURES, provider)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".sse"):
                with open(os.path.join(folder, name), "rb") as f:
                    out.append((f"{provider}/{name}", list(get(provider).parse_stream(f.read()))))
    return out


RECORDED_EVENTS = _recorded_events()


def _reduced(chunks: list[list[Any]], window: int | None, c_loop: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    from agentmsg.events import _handlers, reducer

    with monkeypatch.context() as m:
        if not c_loop:
            m.setattr(_handlers, "_fold_deltas", None)
            m.setattr(reducer, "_fold_deltas", None)
        r = agentmsg.Reducer(dedupe_window=window)
        fold = r._trusted_feed()
        for chunk in chunks:
            fold([dict(e) if type(e) is dict else e for e in chunk])
        count = r._st.count
        msgs = [msg.to_dict() for msg in r.finish()]
    return count, msgs, [(p.pointer, p.rule, p.message) for p in r.problems]


@pytest.mark.fuzz
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_c_delta_loop_reduces_as_the_python_loop(data: st.DataObject) -> None:
    """Recorded streams' events, repeated deltas (past the texts' join size), duplicates, events with a source,
    signed thinking deltas, a small dedupe window, cut into chunks anywhere: the reducer with the C delta loop
    (``fold_deltas``) ends with the pure loop's count, messages and problems."""
    name, events = data.draw(st.sampled_from(RECORDED_EVENTS))
    events = list(events)
    deltas = [k for k, e in enumerate(events) if str(e.get("type", "")).endswith("_DELTA")]
    if bool(deltas) and data.draw(st.booleans()):  # a long run of deltas: past JOIN_EVERY
        k = data.draw(st.sampled_from(deltas))
        events[k + 1 : k + 1] = [dict(events[k], id=f"{events[k]['id']}-{n}") for n in range(600)]
    for _ in range(data.draw(st.integers(0, 4))):  # duplicates, events with a source, thinking with a signature
        k = data.draw(st.integers(0, len(events) - 1))
        how = data.draw(st.sampled_from(["dup", "source", "signature", "no-id", "not-dict"]))
        e = dict(events[k]) if type(events[k]) is dict else {"type": "TEXT_BLOCK_DELTA"}
        if how == "source":
            e["source"] = "sub-agent"
        elif how == "signature":
            e["signature"] = "sig"
        elif how == "no-id":
            e["id"] = 7
        events.insert(data.draw(st.integers(k, len(events))), "not an event" if how == "not-dict" else e)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=8)))
    chunks = [events[a:b] for a, b in itertools.pairwise([0, *cuts, len(events)])]
    window = data.draw(st.sampled_from([None, 2, 5, 1024]))
    with pytest.MonkeyPatch.context() as mp:
        assert _reduced(chunks, window, True, mp) == _reduced(chunks, window, False, mp), name


def test_fold_deltas_takes_plain_deltas_only() -> None:
    assert native is not None
    from agentmsg.events._state import Text

    text, call = Text(), Text()
    routes = {"TEXT_BLOCK_DELTA": {"b1": text}, "TOOL_CALL_DELTA": {"c1": call}}
    current: set[str] = {"seen"}
    events = [
        {"type": "TEXT_BLOCK_DELTA", "id": "e1", "blockId": "b1", "delta": "a"},
        {"type": "TEXT_BLOCK_DELTA", "id": "seen", "blockId": "b1", "delta": "dup"},  # a duplicate: skipped
        {"type": "TOOL_CALL_DELTA", "id": "e2", "toolCallId": "c1", "delta": "{"},
        {"type": "TEXT_BLOCK_DELTA", "id": "e3", "blockId": "other", "delta": "b"},  # no open block: stop
        {"type": "TEXT_BLOCK_DELTA", "id": "e4", "blockId": "b1", "delta": "c"},
    ]
    calls = routes["TOOL_CALL_DELTA"]
    assert native.fold_deltas(events, 0, current, set(), 0, routes, calls, 512) == 3
    assert (text.parts, call.parts, current) == (["a"], ["{"], {"seen", "e1", "e2"})
    assert native.fold_deltas(events, 4, current, set(), 0, routes, calls, 512) == 5
    assert native.fold_deltas(events, 4, current, set(), 0, routes, calls, 512) == 5  # (now a duplicate)
    assert text.parts == ["a", "c"]
    assert native.fold_deltas([dict(events[0], id="e9")], 0, set(), set(), 1, routes, calls, 512) == 0  # window
    assert native.fold_deltas([dict(events[0], id="e9")], 0, set(), set(), 0, routes, calls, 3) == 0  # join size
    assert native.fold_deltas([dict(events[0], id="e9", source="s")], 0, set(), set(), 0, routes, calls, 512) == 0


def test_fold_deltas_skips_a_duplicate_of_either_generation_and_reads_parts_as_python_does() -> None:
    """An id in ``previous`` or in ``current`` is a duplicate (counted, skipped: ``current`` and the text unchanged),
    whichever generation is empty; a text whose class gives ``parts`` another way (a property) is read through it."""
    assert native is not None
    from agentmsg.events._state import Text

    text = Text()
    routes = {"TEXT_BLOCK_DELTA": {"b1": text}}
    calls: dict[str, Text] = {}

    def delta(eid: str, value: str) -> dict[str, Any]:
        return {"type": "TEXT_BLOCK_DELTA", "id": eid, "blockId": "b1", "delta": value}

    current, previous = {"c"}, {"p"}
    events = [delta("p", "x"), delta("c", "y"), delta("n", "a"), delta("n", "z")]
    assert native.fold_deltas(events, 0, current, previous, 0, routes, calls, 512) == 4
    assert (text.parts, current, previous) == (["a"], {"c", "n"}, {"p"})
    current = set()
    assert native.fold_deltas([delta("m", "b"), delta("m", "w")], 0, current, set(), 0, routes, calls, 512) == 2
    assert (text.parts, current) == (["a", "b"], {"m"})

    kept: list[str] = []

    class Viewed(Text):
        __slots__ = ()
        parts = property(lambda self: kept)  # (not the slot: read as Python reads it)

        def __init__(self) -> None:  # (no slot set)
            pass

    routes["TEXT_BLOCK_DELTA"]["b1"] = Viewed()
    assert native.fold_deltas([delta("v", "c")], 0, set(), set(), 0, routes, calls, 512) == 1
    assert (kept, text.parts) == (["c"], ["a", "b"])


def test_fold_deltas_keeps_no_text_class_alive() -> None:
    """The slot offset of ``parts`` is kept per class by a weak reference: a text class the caller lets go is
    collected (a strong reference pinned the last one seen), and the next class is read again."""
    assert native is not None
    import gc
    import weakref

    from agentmsg.events._state import Text

    def fold_with(cls: type[Text]) -> list[str]:
        text = cls()
        routes = {"TEXT_BLOCK_DELTA": {"b1": text}}
        event = {"type": "TEXT_BLOCK_DELTA", "id": "e1", "blockId": "b1", "delta": "x"}
        assert native.fold_deltas([event], 0, set(), set(), 0, routes, {}, 512) == 1
        return list(text.parts)

    class Made(Text):
        __slots__ = ()

    held = weakref.ref(Made)
    assert fold_with(Made) == ["x"]
    del Made
    gc.collect()
    assert held() is None
    assert fold_with(Text) == ["x"]


def test_an_enum_field_is_written_by_the_c_writer_only_when_it_holds_a_member() -> None:
    """A plan's field may name the one class its value has (an enum field: its members). A member is written in C;
    a plain string, even one of the enum's values, makes the writer give up (``writes`` says so too), so that the
    pure path decides: a value of the enum's is written alike, another string is refused naming the field (a role
    set to ``"BOSS"`` after construction was written as it was, against the schema's enum)."""
    member = UserMessage("hi")
    same_as_pure(member)
    plain = member.copy()
    plain.role = "USER"  # type: ignore[assignment]
    assert c_writer(plain) is None
    assert _converter.dumps_json(plain) == _converter.dumps_json(member)
    plain.role = "BOSS"  # type: ignore[assignment]
    assert c_writer(plain) is None
    with pytest.raises(ValidationError) as info:
        _converter.dumps_json(plain, "msg")
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/role", "enum")]


def test_make_plan_takes_an_exact_class_or_none() -> None:
    assert native is not None
    native.make_plan(UserMessage, [("id", "id", False, 1, None), ("role", "role", False, 1, agentmsg.MsgRole)], None)
    with pytest.raises(TypeError, match="exact class"):
        native.make_plan(UserMessage, [("role", "role", False, 1, "MsgRole")], None)


class _MyText(TextBlock):
    """A caller's subclass of a block class."""


def test_the_check_gives_up_on_a_callers_subclass_and_a_class_it_has_no_plan_of() -> None:
    """``writes`` (the formatters' check of their messages) says True only when every model object is of one of
    agentmsg's own classes (the walks tell blocks apart by class): a caller's subclass gives up, though ``encode``
    writes it, and so does a class it has no plan of yet (``encode`` makes it: the check never calls the fallback)."""
    assert native is not None

    def writes(value: Any) -> bool:
        return native.writes(value, _converter.native_plans, _converter.json_default, orjson.dumps)  # type: ignore[no-any-return]

    msg = UserMessage("hi")
    c_writer(msg)  # encode makes the plans it needs: alone, this test runs before any other has made them
    assert writes([msg])
    msg.content.append(_MyText(text="more"))
    _converter.native_plans.pop(_MyText, None)
    assert not writes([msg])  # no plan of the subclass yet
    assert c_writer(msg) == pure(msg)  # (encode writes it, making its plan)
    assert _MyText in _converter.native_plans
    assert not writes([msg]) and not _converter.surely_writes([msg])  # its plan is not agentmsg's own
    assert writes([UserMessage(["hi", "more"])])
    assert not _converter._own_class(_MyText) and _converter._own_class(TextBlock)

    class MyMessage(UserMessage):  # a caller's message subclass: read by its role, so the check passes it
        pass

    mine = MyMessage("hi")
    assert c_writer(mine) == pure(mine)
    assert writes([mine])


def test_the_writer_stops_at_its_byte_cap_and_at_a_free_form_part_met_twice() -> None:
    """``encode``'s fifth argument, ``max_bytes``: it writes a value whose text is that long at most, and stops
    (False) once its output passes it, so that a message changed after construction to share its members (a list
    of the same list twice, 40 levels down in a tool's input: 2**40 values as JSON) is not written path by path for
    ever. It stops at once, well before the cap, where a dict or list of a free-form value is met twice past its
    first 4,096 (such a value's text is counted by Python, linear in its objects), or a string of 65,536 characters
    or more; a part shared among fewer is written. ``writes`` counts at most what ``encode`` writes (a string's
    characters 6 bytes each) and says True only within the cap: what it passes, ``encode`` writes."""
    assert native is not None
    plans, default = _converter.native_plans, _converter.json_default

    def encode(value: Any, cap: int | None = None) -> bytes | bool | None:
        return native.encode(value, plans, default, orjson.dumps, cap)  # type: ignore[no-any-return]

    def writes(value: Any, cap: int | None = None) -> bool:
        return native.writes(value, plans, default, orjson.dumps, cap)  # type: ignore[no-any-return]

    block = ToolUseBlock(id="c1", name="f", input={"a": ["caf\u00e9", 1, 2.5, None, {"b": "\n"}]})
    msg = agentmsg.AssistantMessage([block])
    text = pure(msg)
    assert c_writer(msg) == encode(msg, None) == encode(msg, len(text)) == encode(msg, 1 << 62) == text
    assert encode(msg, len(text) - 1) is False and encode(msg, 0) is False
    assert writes(msg) and writes(msg, 6 * len(text)) and not writes(msg, len(text) - 1)
    for cap in range(0, 8 * len(text), 7):  # (True within the cap only where encode writes within it)
        assert not writes(msg, cap) or encode(msg, cap) == text, cap
    for bad, error in (("1", TypeError), (1.0, TypeError), (True, TypeError), (-1, ValueError), (-(2**70), ValueError)):
        with pytest.raises(error):
            encode(msg, bad)  # type: ignore[arg-type]
        with pytest.raises(error):
            writes(msg, bad)  # type: ignore[arg-type]
    assert encode(msg, 2**70) == text and writes(msg, 2**70)

    shared: Any = [1]
    for _ in range(40):
        shared = [shared, shared]
    block.input["a"] = shared
    assert encode(msg) is False and not writes([msg]) and encode([msg], 1 << 40) is False
    few: Any = [1]
    for _ in range(8):  # (2**8 lists: written)
        few = [few, few]
    block.input["a"] = few
    assert encode(msg) == pure(msg) and writes(msg)
    long = "x" * 65536
    block.input["a"] = [long, long]
    assert encode(msg) is False and not writes(msg)
    block.input["a"] = [long[1:], long[1:], long]
    assert encode(msg) == pure(msg) and writes(msg, None)
    # (outside a free-form value a part met twice is written: the cap stops it)
    assert encode([long, long]) == orjson.dumps([long, long]) and encode([long, long], 65536 * 2) is False
    assert encode([shared], 1 << 20) is False and not writes([shared], 1 << 20)


def _most_written(value: Any) -> int:
    """What ``writes`` counts of a JSON value, as its contract says: a string's characters 6 bytes each and its
    quotes, an integer 20, a float 24, null, true, false, {} and [] their own, a list's brackets and commas, a dict's
    braces, commas and colons."""
    if isinstance(value, str):
        return 6 * len(value) + 2
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        return 20
    if isinstance(value, float):
        return 24
    if isinstance(value, list):
        return len(value) + 1 + sum(map(_most_written, value)) if value else 2
    assert isinstance(value, dict)
    return 2 * len(value) + 1 + sum(_most_written(k) + _most_written(v) for k, v in value.items()) if value else 2


@pytest.mark.parametrize(
    "value",
    [
        "",
        "plain",
        'a "quoted" \\ back\x01slash\n',  # escapes that lengthen it: \u0001 is 6 bytes of one character
        "caf\u00e9 \u4e2d\U0001f600",  # non-ASCII: 2, 3 and 4 bytes a character
        {"k\u00e9y\x1f": "v", "": [], "e": {}},  # keys counted as strings, with their escapes
        [None, True, False, 0, -(2**63), 2**64 - 1, 1.5, 1e300, -0.0],
        {"a": [{"b": [1, "x\u2028"], "c": None}], "d": [[[]]]},
    ],
)
def test_writes_counts_at_most_what_encode_writes_to_the_byte(value: Any) -> None:
    """``encode`` writes a value whose text is exactly ``max_bytes`` and stops one byte short of it; ``writes``
    counts what its contract says (a string's characters 6 bytes each, escaped or not, ASCII or not; its keys too;
    a container's punctuation where it begins): True at that count, False one byte under it, and at no cap where
    encode would not write the value."""
    assert native is not None
    plans, default = _converter.native_plans, _converter.json_default
    text = orjson.dumps(value)
    assert native.encode(value, plans, default, orjson.dumps, len(text)) == text
    assert native.encode(value, plans, default, orjson.dumps, len(text) - 1) is False
    counted = _most_written(value)
    assert counted >= len(text)
    assert native.writes(value, plans, default, orjson.dumps, counted)
    assert not native.writes(value, plans, default, orjson.dumps, counted - 1)
    for cap in range(counted + 2):
        if native.writes(value, plans, default, orjson.dumps, cap):
            assert native.encode(value, plans, default, orjson.dumps, cap) == text, cap


def test_writes_counts_a_model_objects_every_key_within_the_cap() -> None:
    """A model object counts in ``writes`` its every key, braces and commas, its omitted fields' too (a bound, told
    where it begins): True only at a cap ``encode`` writes it within, False from a byte under its text, so that the
    formatters' check passes what is written within the cap and leaves the rest to ``dumps_json``."""
    assert native is not None
    plans, default = _converter.native_plans, _converter.json_default
    few = ToolUseBlock(id="c1", name="f", input={})  # (fields omitted when None: counted all the same)
    msg = agentmsg.AssistantMessage(
        [few, TextBlock(text="\u00e9\n"), ToolUseBlock(id="c2", name="g", input={"k": [1]})]
    )
    for value in (few, msg, [msg, msg]):
        text = pure(value)
        assert c_writer(value) == text
        assert not native.writes(value, plans, default, orjson.dumps, len(text) - 1)
        assert native.writes(value, plans, default, orjson.dumps, 6 * len(text))
        for cap in range(6 * len(text)):
            if native.writes(value, plans, default, orjson.dumps, cap):
                assert native.encode(value, plans, default, orjson.dumps, cap) == text, cap


@pytest.mark.parametrize(
    ("value", "pure"),
    [("1", True), ("yes", True), ("true", True), ("0", False), ("", False), ("false", False), (" Off ", False)],
)
def test_pure_python_is_turned_on_by_a_true_value_only(value: str, pure: bool) -> None:
    """``AGENTMSG_PURE_PYTHON=0`` (or ``false``, ``no``, ``off``, empty) leaves the C kernels on: any value at all
    turned them off, ``0`` too."""
    env = {**os.environ, "AGENTMSG_PURE_PYTHON": value}
    script = "from agentmsg._native import PURE_PYTHON, speedups; print(PURE_PYTHON, speedups is None)"
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(pure), str(pure)]
