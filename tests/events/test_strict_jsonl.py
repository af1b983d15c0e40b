"""Strict reading of JSON lines (``reduce_stream(..., strict=True)``, ``Reducer.feed_jsonl``) takes one loop that
checks a line against the event schema's branch for its type (``_jsonl.feed_lines_strict``): it must accept and
refuse exactly what the general path does (each line parsed and fed, checked against the whole event schema),
with the same messages, event count and error (pointer, rule, message)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import Reducer, ValidationError, reduce_stream
from agentmsg._codec.schemas import (
    BASE_URI,
    _validator,
    event_array_validator,
    event_type_array_validators,
    event_type_validators,
)
from agentmsg.events import _jsonl
from tests._support.budget import examples

pytestmark = pytest.mark.differential

TS = "2026-11-22T10:34:38.563248392Z"


def dump(value: Any) -> bytes:
    """JSON text of any depth (orjson writes at most 254 levels)."""
    return json.dumps(value, ensure_ascii=False).encode()


def ev(n: int, type_: str, **keys: Any) -> dict[str, Any]:
    return {"type": type_, "id": f"{n:032x}", "createdAt": TS, "replyId": "r", **keys}


def _valid_stream() -> list[dict[str, Any]]:
    return [
        ev(0, "AGENT_START", name="Friday", sessionId="s1"),
        ev(1, "MODEL_CALL_START"),
        ev(2, "THINKING_BLOCK_START", blockId="thinking"),
        ev(3, "TEXT_BLOCK_START", blockId="text"),
        ev(4, "TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
        ev(5, "TOOL_CALL_DELTA", toolCallId="c1", toolCallName="f", delta='{"a":'),
        ev(6, "TEXT_BLOCK_DELTA", blockId="text", delta="hello "),
        ev(7, "THINKING_BLOCK_DELTA", blockId="thinking", delta="hm"),
        ev(8, "THINKING_BLOCK_DELTA", blockId="thinking", delta="", signature="sig=="),
        ev(9, "TEXT_BLOCK_DELTA", blockId="text", delta="world"),
        ev(10, "TOOL_CALL_DELTA", toolCallId="c1", delta="1}"),
        ev(11, "TOOL_CALL_END", toolCallId="c1", toolCallName="f"),
        ev(12, "THINKING_BLOCK_END", blockId="thinking"),
        ev(13, "TEXT_BLOCK_END", blockId="text"),
        ev(14, "MODEL_CALL_END", usage={"inputTokens": 1, "outputTokens": 2, "time": 0.5}),
        ev(15, "AGENT_END"),
    ]


DEEP = {"a": [[[[[[[[[[1]]]]]]]]]]}


def _nest(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


#: Values put in place of a key of an event (or added to it): every kind of wrong and right value.
VALUES: list[Any] = [
    "",
    "x",
    "text",
    "c1",
    "thinking",
    "TEXT_BLOCK_DELTA",
    "NOPE",
    "2026-13-40T10:34:38Z",
    "2026-02-29T10:00:00Z",
    "2024-02-29T23:59:60Z",
    "2026-11-22 10:34:38Z",
    TS,
    0,
    -1,
    2**63,
    2**64 - 1,
    1.5,
    True,
    None,
    [],
    ["x"],
    {},
    {"k": "v"},
    DEEP,
    "\u00e9\U0001f600",
    "x" * 300,
    _nest(60),
    _nest(252),
    _nest(253),
    _nest(254),
]
KEYS = [
    "type",
    "id",
    "createdAt",
    "replyId",
    "blockId",
    "toolCallId",
    "toolCallName",
    "delta",
    "source",
    "metadata",
    "signature",
    "redactedData",
    "name",
    "usage",
    "unknownKey",
]

#: Raw lines put between the events: blank, not JSON, invalid UTF-8, not objects, too deep, CR.
RAW: list[bytes] = [
    b"",
    b"   ",
    b"\r",
    b"\t\x0b\x0c",
    b"not json",
    b"{",
    b"[]",
    b"1",
    b'"TEXT_BLOCK_DELTA"',
    b"null",
    b'{"type": "TEXT_BLOCK_DELTA"}',
    b'{"type": "TEXT_BLOCK_DELTA", "id": "\xff", "createdAt": "' + TS.encode() + b'"}',
    b'{"type": "CUSTOM", "id": "d1", "createdAt": "'
    + TS.encode()
    + b'", "name": "n", "value": '
    + b"[" * 254
    + b"]" * 254
    + b"}",  # 255 deep: over the depth limit
    b'{"type": "CUSTOM", "id": "d2", "createdAt": "'
    + TS.encode()
    + b'", "name": "n", "value": '
    + b"[" * 253
    + b"]" * 253
    + b"}",  # 254 deep: at it
    b'{"type": "TEXT_BLOCK_DELTA", "id": "d3", "createdAt": "' + TS.encode() + b'", "replyId": "r",'
    b' "blockId": "text", "delta": "crlf"}\r',
    b'{"type": 1, "id": "d4"}',
    b'{"type": ["TEXT_BLOCK_DELTA"], "id": "d5"}',
]


def _general(body: bytes, lines: list[bytes]) -> Any:
    """The general path: every line through feed_line and Reducer._feed (the whole schema checked)."""
    r = Reducer(strict=True)
    try:
        _jsonl.feed_lines(r._st, r._feed_parsed, lines, 1)
        return [m.to_dict() for m in r.finish()], r.count, len(body.split(b"\n"))
    except ValidationError as exc:
        return [(p.pointer, p.rule, p.message) for p in exc.problems], r.count, type(exc).__name__


def _fast(body: bytes) -> Any:
    r = Reducer(strict=True)
    try:
        n = r.feed_jsonl(body)
        return [m.to_dict() for m in r.finish()], r.count, n
    except ValidationError as exc:
        return [(p.pointer, p.rule, p.message) for p in exc.problems], r.count, type(exc).__name__


def _agree(lines: list[bytes], newline_at_end: bool) -> None:
    body = b"\n".join(lines) + (b"\n" if newline_at_end else b"")
    expected = _general(body, body.split(b"\n"))
    assert _fast(body) == expected
    try:
        got: Any = [m.to_dict() for m in reduce_stream(body, strict=True, sse=False)]
    except ValidationError as exc:
        got = [(p.pointer, p.rule, p.message) for p in exc.problems]
    assert got == expected[0]


def test_valid_stream_agrees() -> None:
    lines = [dump(e) for e in _valid_stream()]
    for end in (True, False):
        _agree(lines, end)
    assert _fast(b"\n".join(lines))[0]  # reduced, not refused


@pytest.mark.parametrize("raw", RAW)
@pytest.mark.parametrize("at", [0, 6, 16])
def test_raw_lines_agree(raw: bytes, at: int) -> None:
    lines = [dump(e) for e in _valid_stream()]
    lines.insert(at, raw)
    _agree(lines, True)
    _agree(lines, False)


@pytest.mark.parametrize("key", KEYS)
def test_each_wrong_value_agrees(key: str) -> None:
    """Each key of each event set to each value (or removed): accepted or refused as the general path does."""
    base = _valid_stream()
    for position in range(len(base)):
        for value in [*VALUES, KeyError]:
            events = _valid_stream()
            if value is KeyError:
                if key not in events[position]:
                    continue
                del events[position][key]
            else:
                events[position][key] = value
            lines = [dump(e) for e in events]
            _agree(lines, position % 2 == 0)


def test_duplicates_and_sources_agree() -> None:
    events = _valid_stream()
    again = [events[6], events[5], {**events[9], "source": "helper"}, {**events[7], "id": 7}]
    for extra in again:
        for at in (7, 10, 13):
            lines = [dump(e) for e in events]
            lines.insert(at, dump(extra))
            _agree(lines, True)


_event = st.sampled_from(range(16)).flatmap(
    lambda i: st.tuples(
        st.just(i),
        st.lists(
            st.tuples(st.sampled_from(KEYS), st.one_of(st.sampled_from(range(len(VALUES))), st.none())), max_size=2
        ),
    )
)


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.one_of(_event, st.sampled_from(RAW)), min_size=1, max_size=30), st.booleans())
def test_random_streams_agree(items: list[Any], newline_at_end: bool) -> None:
    base = _valid_stream()
    lines: list[bytes] = []
    for item in items:
        if isinstance(item, bytes):
            lines.append(item)
            continue
        index, changes = item
        e = dict(base[index])
        for key, value in changes:
            if value is None:
                e.pop(key, None)
            else:
                e[key] = VALUES[value]
        lines.append(dump(e))
    _agree(lines, newline_at_end)


def test_branch_validators_agree_with_the_event_schema() -> None:
    """The branch for an event's type accepts it exactly when the whole event schema does."""
    whole = _validator(BASE_URI + "agent-event.schema.json").is_valid
    checks = event_type_validators()
    assert len(checks) == 31
    for position, e in enumerate(_valid_stream()):
        assert checks[e["type"]](e) and whole(e)
        for key in KEYS:
            for value in VALUES:
                changed = {**_valid_stream()[position], key: value}
                kind = changed.get("type")
                check = checks.get(kind) if type(kind) is str else None
                assert (check is not None and check(changed)) == whole(changed), (key, value)


def test_branch_array_validators_agree_with_the_branches() -> None:
    """One call for many events of a type accepts them exactly when the branch accepts each."""
    checks, arrays = event_type_validators(), event_type_array_validators()
    assert set(arrays) == set(checks)
    for e in _valid_stream():
        kind = e["type"]
        assert arrays[kind]([e, e]) and arrays[kind]([])
        for key in KEYS:
            for value in VALUES:
                changed = {**e, key: value}
                assert arrays[kind]([e, changed, e]) == (changed.get("type") == kind and checks[kind](changed))


@pytest.mark.parametrize("bad_at", [None, 3, 1500, 2990])
def test_long_streams_agree(bad_at: int | None) -> None:
    """Streams of several runs (reduce_stream reads about 128 KB at a time), a bad event in the first or a later one."""
    events = _valid_stream()
    head, tail = events[:5], events[11:]
    lines = [dump(e) for e in head]
    for n in range(3000):
        kind = ("TEXT_BLOCK_DELTA", "blockId", "text") if n % 3 else ("TOOL_CALL_DELTA", "toolCallId", "c1")
        lines.append(dump(ev(100 + n, kind[0], **{kind[1]: kind[2], "delta": f"w{n} " + "x" * (n % 40)})))
    lines += [dump(e) for e in tail]
    if bad_at is not None:
        lines[bad_at] = dump({**json.loads(lines[bad_at]), "createdAt": "2026-02-30T00:00:00Z"})
    body = b"\n".join(lines) + b"\n"
    assert len(body) > 3 * (1 << 17)
    expected = _general(body, body.split(b"\n"))
    try:
        got: Any = [m.to_dict() for m in reduce_stream(body, strict=True, sse=False)]
    except ValidationError as exc:
        got = [(p.pointer, p.rule, p.message) for p in exc.problems]
    assert got == expected[0]
    assert (bad_at is None) == (got and "content" in got[0])


def test_one_check_for_a_run_agrees_with_the_event_schema() -> None:
    """The check of a whole run accepts an array exactly when the event schema accepts each of its items."""
    whole = _validator(BASE_URI + "agent-event.schema.json").is_valid
    every = event_array_validator()
    assert every is not None
    events = _valid_stream()
    assert every(events) and every([])
    for e in events:
        for key in KEYS:
            for value in VALUES:
                changed = {**e, key: value}
                assert every([*events, changed]) == whole(changed), (key, value)
        for other in VALUES:
            assert every([e, other]) == whole(other)
