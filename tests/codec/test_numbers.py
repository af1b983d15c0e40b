"""Whole numbers written with a fraction or an exponent (``1.0``, ``-0.0``, ``7e2``) in integer fields: JSON
Schema counts them as integers, so every reader accepts them; they are held as the ints they are (typed as the
field says, written back as ``1``, ``0``, ``700``), and one beyond the 64-bit range JSON is written in is refused
where it is (rule ``integer-range``), as an integer written in digits is: whatever is accepted can be written."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmsg import Msg, Reducer, ValidationError, block_from_dict, block_from_json, block_to_json, decode_messages

URL = {"type": "url", "url": "https://example.com/a.png"}
#: (block, its integer field's wire key) for every integer field of a block (and the snake-case spelling).
BLOCK_FIELDS = [
    ({"type": "image", "source": URL}, "minPixels"),
    ({"type": "image", "source": URL}, "maxPixels"),
    ({"type": "image", "source": URL}, "min_pixels"),
    ({"type": "video", "source": URL}, "maxFrames"),
    ({"type": "video", "source": URL}, "minPixels"),
    ({"type": "video", "source": URL}, "maxPixels"),
    ({"type": "video", "source": URL}, "totalPixels"),
]
USAGE_KEYS = [
    "inputTokens",
    "outputTokens",
    "cachedTokens",
    "totalTokens",
    "cacheCreationInputTokens",
    "reasoningTokens",
]
WHOLE = [1.0, -0.0, 7e2, 2147483647.0, -1.0]


def _msg(usage: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": "m1",
        "name": "Friday",
        "role": "ASSISTANT",
        "content": [{"type": "text", "text": "hi"}],
        "metadata": metadata or {},
        "timestamp": "2025-01-01 12:00:00.000",
        "usage": {"time": 0.5, **usage},
    }


@pytest.mark.parametrize(("block", "key"), BLOCK_FIELDS)
@pytest.mark.parametrize("number", [n for n in WHOLE if n >= 0])
def test_a_whole_float_in_a_block_is_read_as_the_int_it_is(block: dict[str, Any], key: str, number: float) -> None:
    value = {**block, key: number}
    for got in (block_from_dict(value, notes=[]), block_from_json(json.dumps(value), notes=[])):
        written = json.loads(block_to_json(got))
        field = next(v for k, v in written.items() if k.lower().replace("_", "") == key.lower().replace("_", ""))
        assert type(field) is int and field == number
        assert block_from_json(block_to_json(got)) == got


@pytest.mark.parametrize("key", USAGE_KEYS)
@pytest.mark.parametrize("number", WHOLE)
def test_a_whole_float_in_a_usage_is_read_as_the_int_it_is(key: str, number: float) -> None:
    if number < 0:  # counts are never negative: the schema refuses it before anything is held
        with pytest.raises(ValidationError) as info:
            Msg.from_dict(_msg({key: number}))
        assert info.value.problems[0].rule == "minimum"
        return
    value = _msg({key: number})
    for got in (Msg.from_dict(value), Msg.from_json(json.dumps(value)), decode_messages(json.dumps([value]))[0]):
        written = json.loads(got.to_json())
        assert type(written["usage"][key]) is int and written["usage"][key] == number
        assert Msg.from_json(got.to_json()) == got


@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("usage", "totalTokens"),
        ("usage", "cacheCreationInputTokens"),
        ("usage", "reasoningTokens"),
        # the usage's copy in metadata: the readers put back into the usage the keys Java's ChatUsage lacks
        ("metadata", "cacheCreationInputTokens"),
        ("metadata", "reasoningTokens"),
    ],
)
def test_a_whole_float_beyond_64_bits_is_refused_where_it_is(where: str, key: str) -> None:
    # These counts have no maximum in the schema: 1e300 is a valid integer to it, but JSON is written within 64 bits.
    value = _msg({key: 1e300}) if where == "usage" else _msg({}, {"_chat_usage": {"time": 0.5, key: 2e19}})
    pointer = f"/usage/{key}" if where == "usage" else f"/metadata/_chat_usage/{key}"
    for read, at in (
        (lambda: Msg.from_dict(value), pointer),
        (lambda: Msg.from_json(json.dumps(value)), pointer),
        (lambda: decode_messages(json.dumps([value, value])), "/0" + pointer),
    ):
        with pytest.raises(ValidationError) as info:
            read()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == (at, "integer-range"), problem


def _events(usage: dict[str, Any], block: dict[str, Any]) -> list[dict[str, Any]]:
    head = {"createdAt": "2025-01-01T00:00:00Z", "replyId": "r1"}
    return [
        {**head, "type": "AGENT_START", "id": "e1", "name": "Friday"},
        {**head, "type": "MODEL_CALL_START", "id": "e2"},
        {**head, "type": "DATA_BLOCK_START", "id": "e3", "blockId": "d1", "block": block},
        {**head, "type": "DATA_BLOCK_END", "id": "e4", "blockId": "d1"},
        {**head, "type": "MODEL_CALL_END", "id": "e5", "usage": usage},
        {**head, "type": "AGENT_END", "id": "e6"},
    ]


@pytest.mark.parametrize("strict", [True, False])
def test_the_reducer_reads_whole_floats_as_the_ints_they_are(strict: bool) -> None:
    reducer = Reducer(strict=strict)
    for event in _events(
        {"inputTokens": 7.0, "outputTokens": 3.0, "time": 0.5}, {**BLOCK_FIELDS[0][0], "minPixels": 1.0}
    ):
        reducer.feed(event)
    (msg,) = reducer.finish()
    assert reducer.problems == []
    written = json.loads(msg.to_json())
    assert written["usage"] == {"inputTokens": 7, "outputTokens": 3, "time": 0.5}
    assert type(written["usage"]["inputTokens"]) is int
    assert written["content"][0]["minPixels"] == 1 and type(written["content"][0]["minPixels"]) is int


_BIG = 2**70
_TWO_BAD: list[tuple[dict[str, Any], str]] = [  # (a message with two problems, the pointer of the first)
    (
        {
            "id": "m",
            "role": "ASSISTANT",
            "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": {"x": _BIG}},
                {"type": "tool_use", "id": "b", "name": "f", "input": {"y": _BIG}},
            ],
        },
        "/content/0/input/x",
    ),
    ({"id": "m", "role": "USER", "content": [], "metadata": {"a": _BIG, "b": -_BIG}}, "/metadata/a"),
    ({"id": "m", "role": "USER", "content": [], "metadata": {"a": [1, _BIG, _BIG]}}, "/metadata/a/1"),
    (
        {"id": "m", "role": "USER", "content": [], "metadata": {"a": _BIG}, "usage": {"inputTokens": _BIG}},
        "/metadata/a",
    ),
]


@pytest.mark.parametrize(("data", "first"), _TWO_BAD, ids=["inputs", "metadata", "items", "metadata-usage"])
def test_of_two_values_that_cannot_be_written_the_first_is_said(data: dict[str, Any], first: str) -> None:
    text = json.dumps(data)
    for read, at in (
        (lambda: Msg.from_json(text), first),
        (lambda: Msg.from_json(text.encode()), first),
        (lambda: Msg.from_dict(data), first),
        (lambda: decode_messages(json.dumps([data, data])), "/0" + first),
        (lambda: decode_messages(json.dumps([{"id": "ok", "role": "USER", "content": []}, data])), "/1" + first),
    ):
        with pytest.raises(ValidationError) as caught:
            read()
        assert caught.value.problems[0].pointer == at, caught.value


def test_of_two_problems_in_parsed_json_the_first_is_said_keys_included() -> None:
    for metadata, said in (
        ({"a": _BIG, 1: "x"}, ("/metadata/a", "integer-range")),  # (a key is checked where it is, not before)
        ({"a": "\ud800", "b": _BIG}, ("/metadata/a", "lone-surrogate")),
        ({"a": {"b": _BIG}, "\ud800": 1}, ("/metadata/a/b", "integer-range")),
        ({"a": 1, 2: _BIG}, ("/metadata", "json-value")),
    ):
        with pytest.raises(ValidationError) as caught:
            Msg.from_dict({"id": "m", "role": "USER", "content": [], "metadata": metadata})
        assert [(p.pointer, p.rule) for p in caught.value.problems] == [said]
    with pytest.raises(ValidationError) as caught:
        block_from_dict({"type": "tool_use", "id": "a", "name": "f", "input": {"a": [_BIG], 1: "x"}})
    assert [(p.pointer, p.rule) for p in caught.value.problems] == [("/input/a/0", "integer-range")]


@pytest.mark.parametrize(
    ("usage", "first", "restored"),
    [
        ({"reasoningTokens": 1e300, "totalTokens": 2e300}, "reasoningTokens", "reasoningTokens"),
        ({"reasoningTokens": 1e300, "cacheCreationInputTokens": 2e300}, "reasoningTokens", "reasoningTokens"),
        ({"time": 0.5, "totalTokens": 1e300}, "totalTokens", None),
        ({"totalTokens": 1e300, "cacheCreationInputTokens": 2e300}, "totalTokens", "cacheCreationInputTokens"),
    ],
)
def test_of_two_whole_floats_beyond_64_bits_the_first_in_the_text_is_said(
    usage: dict[str, Any], first: str, restored: str | None
) -> None:
    """The usage's hook structures its counts in the class's field order and stopped at the first bad one there:
    with ``reasoningTokens`` before ``totalTokens`` in the text the error named ``totalTokens``. The first bad value
    in document order is said, as every reader says it (test_of_two_values_that_cannot_be_written_the_first_is_said),
    its own number quoted. In the usage's metadata copy, the first the readers put back into the usage (``restored``:
    ``totalTokens`` is Java's own, never taken from the copy)."""
    value = _msg(usage)
    text = json.dumps(value)
    copied = {**value, "usage": {"time": 0.5}, "metadata": {"_chat_usage": {"time": 0.5, **usage}}}
    reads: list[tuple[Any, str, str]] = [
        (lambda: Msg.from_dict(value), f"/usage/{first}", first),
        (lambda: Msg.from_json(text), f"/usage/{first}", first),
        (lambda: Msg.from_json(text.encode()), f"/usage/{first}", first),
        (lambda: decode_messages(f"[{text}]"), f"/0/usage/{first}", first),
    ]
    if restored is not None:
        reads.append((lambda: Msg.from_json(json.dumps(copied)), f"/metadata/_chat_usage/{restored}", restored))
    for read, at, key in reads:
        with pytest.raises(ValidationError) as info:
            read()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == (at, "integer-range"), problem
        assert problem.message.startswith(f"integer {usage[key]!r:.40} "), problem
