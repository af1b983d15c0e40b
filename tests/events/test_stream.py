"""The JSONL fast path of reduce_stream (batch-decoded views, inline delta routing) must give exactly what
feeding the same events one at a time gives: messages and reported problems, wherever batches are cut."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg import AssistantMessage, Reducer, ValidationError, emit_events, reduce_stream
from agentmsg.events import stream as stream_mod
from tests._support.events import TEXT_CASES, events_of, feed_text, load
from tests._support.valid import assistant_messages

TS = "2025-01-01T00:00:00Z"


def one_by_one(events: list[Any]) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    r = Reducer()
    for e in events:
        r.feed(e)
    return [_comparable(m) for m in r.finish()], [(p.pointer, p.rule) for p in r.problems]


def via_bytes(data: bytes, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[tuple[str, str]]]:
    monkeypatch.setattr(stream_mod, "CHUNK", chunk)
    r = Reducer()
    out = reduce_stream(data, reducer=r, sse=False)
    return [_comparable(m) for m in out], [(p.pointer, p.rule) for p in r.problems]


def _comparable(m: AssistantMessage) -> dict[str, Any]:
    d = m.to_dict()
    if not d["id"].startswith(("r", "m")):
        d.pop("id")  # minted for replies that carried none
    return d


def jsonl(events: list[Any]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


@pytest.mark.parametrize("chunk", [1, 7, 64, 333, 1 << 17])
@pytest.mark.parametrize("name", TEXT_CASES)
def test_vectors_agree_for_any_batch_size(name: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    case = load(name)
    events = events_of(case)
    data = case["jsonl"].encode() if "jsonl" in case else jsonl(events)
    assert via_bytes(data, chunk, monkeypatch) == one_by_one(events)


def ev(n: int, type_: str, **keys: Any) -> dict[str, Any]:
    return {"type": type_, "id": f"e{n}", "createdAt": TS, "replyId": "r", **keys}


BASE = [
    ev(0, "AGENT_START", name="Friday"),
    ev(1, "THINKING_BLOCK_START", blockId="thinking"),
    ev(2, "TEXT_BLOCK_START", blockId="text"),
    ev(3, "TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
    ev(4, "TOOL_CALL_START", toolCallId="c2", toolCallName="g"),
]


def test_signature_and_subagent_keys_take_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    events = [
        *BASE,
        ev(5, "THINKING_BLOCK_DELTA", blockId="thinking", delta="hm"),
        ev(6, "THINKING_BLOCK_DELTA", blockId="thinking", delta="", signature="sig=="),
        ev(7, "TEXT_BLOCK_DELTA", blockId="text", delta="sub", source="helper"),
        ev(8, "TEXT_BLOCK_DELTA", blockId="text", delta="top"),
        ev(9, "TOOL_CALL_DELTA", toolCallId="c2", delta='{"b":'),
        ev(10, "TOOL_CALL_DELTA", toolCallId="c1", delta='{"a":1}'),
        ev(11, "TOOL_CALL_DELTA", toolCallId="c2", delta="2}"),
        ev(12, "TOOL_CALL_END", toolCallId="c1"),
        ev(13, "TOOL_CALL_END", toolCallId="c2"),
        ev(14, "THINKING_BLOCK_END", blockId="thinking"),
        ev(15, "TEXT_BLOCK_END", blockId="text"),
        ev(16, "AGENT_END"),
    ]
    got = via_bytes(jsonl(events), 1 << 17, monkeypatch)
    assert got == one_by_one(events)
    (msg,) = got[0]
    assert msg["content"][0]["metadata"] == {"signature": "sig=="}
    assert msg["content"][1] == {"type": "text", "text": "top"}
    assert [b["input"] for b in msg["content"][2:]] == [{"a": 1}, {"b": 2}]


def test_odd_lines_inside_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two objects on one line, a blank line, CRLF, an unknown type, a duplicate, a missing id, a delta
    for a block never started, a delta of the wrong type for its block: all as feed() handles them."""
    body = [orjson.dumps(e) for e in BASE]
    body += [
        orjson.dumps(ev(5, "TEXT_BLOCK_DELTA", blockId="text", delta="a"))
        + b","
        + orjson.dumps(ev(6, "TEXT_BLOCK_DELTA", blockId="text", delta="b")),
        b"",
        orjson.dumps(ev(7, "TEXT_BLOCK_DELTA", blockId="text", delta="c")) + b"\r",
        orjson.dumps(ev(8, "RUN_STARTED")),
        orjson.dumps(ev(7, "TEXT_BLOCK_DELTA", blockId="text", delta="dup")),
        orjson.dumps({"type": "TEXT_BLOCK_DELTA", "createdAt": TS, "blockId": "text", "delta": "d"}),
        orjson.dumps(ev(9, "TEXT_BLOCK_DELTA", blockId="nope", delta="e")),
        orjson.dumps(ev(10, "THINKING_BLOCK_DELTA", blockId="text", delta="f")),
        orjson.dumps(ev(11, "TOOL_CALL_DELTA", toolCallId="text", delta="g")),
        orjson.dumps(ev(12, "TEXT_BLOCK_DELTA", blockId="text", delta=None)),
        orjson.dumps(ev(13, "TEXT_BLOCK_DELTA", blockId="text", delta="h")),
    ]
    data = b"\n".join(body) + b"\n"
    (msg,), problems = via_bytes(data, 1 << 17, monkeypatch)
    # The thinking delta for the open text block closes it and takes the id; "h" then reopens a text block.
    assert [(b["type"], b.get("text", b.get("thinking", b.get("content")))) for b in msg["content"]] == [
        ("thinking", ""),
        ("text", "cd"),
        ("tool_use", None),
        ("tool_use", None),
        ("text", "e"),
        ("thinking", "f"),
        ("tool_use", "g"),
        ("text", "h"),
    ]
    assert problems[:2] == [("/5", "json"), ("/7/type", "enum")]
    # Same as parsing the lines one by one (the line with two objects is one bad line there too).
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    r = Reducer()
    for line in lines:
        try:
            r.feed(orjson.loads(line))
        except orjson.JSONDecodeError:
            r.feed_unreadable("not JSON")
    assert [_comparable(m) for m in r.finish()] == [msg]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(assistant_messages(), min_size=1, max_size=3),
    st.integers(1, 400),
    st.lists(st.integers(0, 10_000), max_size=5),
)
def test_random_streams_with_replays_agree(ms: list[Any], chunk: int, replays: list[int]) -> None:
    events = [e for m in ms for e in emit_events(m, chunk_size=2)]
    # Replay some earlier events (a reconnect): they are duplicates and must be ignored.
    for k in replays:
        at = k % (len(events) + 1)
        events[at:at] = events[max(0, at - 3) : at]
    with pytest.MonkeyPatch.context() as mp:
        got = via_bytes(jsonl(events), chunk, mp)
    assert got == one_by_one(events)
    assert got[0] == [_comparable(m) for m in ms]


def _sse_one_by_one(body: bytes) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]], int]:
    """The reference for SSE: each event decoded by the public SSEDecoder and fed on its own, problems told
    to the reducer in its place (what reduce_stream did before it fed them in one feed_many)."""
    from agentmsg import SSEDecoder

    r = Reducer()
    decoder = SSEDecoder()
    for sse in [*decoder.feed(body), *decoder.close()]:
        where = f"SSE event {sse.id!r:.80} ({sse.event:.80})"
        if sse.problem is not None:
            if sse.problem.rule != "utf-8":
                limit = sse.problem.rule in ("max-line-bytes", "max-event-bytes")
                r.feed_unreadable(f"{where}: {sse.problem.message}: event skipped", rule=sse.problem.rule, limit=limit)
                continue
            r.report(f"{where}: {sse.problem.message}", rule=sse.problem.rule)
        try:
            event = orjson.loads(sse.data)
        except orjson.JSONDecodeError as exc:
            r.feed_unreadable(f"{where}: data is not JSON: {exc}")
            continue
        r.feed(event)
    msgs = [_comparable(m) for m in r.finish()]
    return msgs, [(p.pointer, p.rule, p.message) for p in r.problems], r.count


@settings(max_examples=150, deadline=None)
@given(
    ms=st.lists(assistant_messages(), min_size=1, max_size=3),
    faults=st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["utf8", "json", "dup", "ping"])), max_size=4),
    cuts=st.lists(st.integers(1, 4000), max_size=5),
)
def test_sse_streams_with_faults_reduce_as_event_by_event(ms: list[Any], faults: list[Any], cuts: list[int]) -> None:
    """reduce_stream feeds SSE agent events in one feed_many (the reducer's loop runs in C where built) while
    the transport tells the reducer about bad events in place: the same messages, problems (pointers
    included) and count as feeding each event on its own, whatever the chunking."""
    blocks = [orjson.dumps(e) for m in ms for e in emit_events(m)]
    for at, kind in faults:
        i = at % (len(blocks) + 1)
        if kind == "utf8" and i < len(blocks):
            blocks[i] = blocks[i].replace(b'"delta":"', b'"delta":"\xff', 1)
        elif kind == "json":
            blocks.insert(i, b"{not json")
        elif kind == "dup" and i < len(blocks):
            blocks.insert(i, blocks[i])
        else:
            blocks.insert(i, b'{"type":"PING_EVENT_NOBODY_KNOWS","id":"p"}')
    body = b"".join(b"data: " + b + b"\n\n" for b in blocks)
    expected = _sse_one_by_one(body)
    points = sorted({c % (len(body) + 1) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    r = Reducer()
    got = reduce_stream(iter(pieces), sse=True, reducer=r)
    assert ([_comparable(m) for m in got], [(p.pointer, p.rule, p.message) for p in r.problems], r.count) == expected


def _values_one_by_one(blocks: list[bytes]) -> tuple[list[dict[str, Any]], list[tuple[str, str]], int]:
    """The reference for a JSON array of events: each value parsed and fed on its own, what cannot be read told
    to the reducer in its place."""

    r = Reducer()
    for n, data in enumerate(blocks, 1):
        feed_text(r, data, f"value {n}")
    return [_comparable(m) for m in r.finish()], [(p.pointer, p.rule) for p in r.problems], r.count


@settings(max_examples=100, deadline=None)
@given(
    ms=st.lists(assistant_messages(), min_size=1, max_size=3),
    faults=st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["utf8", "json", "dup", "ping"])), max_size=4),
    pretty=st.booleans(),
    cuts=st.lists(st.integers(1, 4000), max_size=5),
)
def test_a_json_array_of_events_reduces_as_event_by_event(
    ms: list[Any], faults: list[Any], pretty: bool, cuts: list[int]
) -> None:
    """Events saved as a JSON array (``JSON.stringify(events)``, a devtools copy), compact or pretty-printed,
    are read as such (detected, as SSE and JSONL are): the same messages, problem pointers and rules, and
    count as feeding each event on its own, whatever the chunking; ``read_events`` gives the events."""
    from agentmsg.events import read_events

    events = [e for m in ms for e in emit_events(m)]
    blocks = [orjson.dumps(e, option=orjson.OPT_INDENT_2 if pretty else 0) for e in events]
    for at, kind in faults:
        i = at % (len(blocks) + 1)
        if kind == "utf8" and i < len(blocks):
            blocks[i] = blocks[i].replace(b'"id":', b'"\xff":1,"id":', 1).replace(b'"id": ', b'"\xff": 1, "id": ', 1)
        elif kind == "json":
            blocks.insert(i, b'{"not": json}')  # brackets balanced: the value is cut where it ends
        elif kind == "dup" and i < len(blocks):
            blocks.insert(i, blocks[i])
        else:
            blocks.insert(i, b'{"type":"PING_EVENT_NOBODY_KNOWS","id":"p"}')
    body = b"[" + (b",\n" if pretty else b",").join(blocks) + b"]"
    expected = _values_one_by_one(blocks)
    points = sorted({c % (len(body) + 1) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    for source in (body, iter(pieces)):
        r = Reducer()
        got = reduce_stream(source, reducer=r)
        assert ([_comparable(m) for m in got], [(p.pointer, p.rule) for p in r.problems], r.count) == expected
    if not faults:
        assert list(read_events(iter(pieces))) == events


def test_a_json_array_of_events_bad_values_are_said_and_the_rest_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmsg import limits
    from agentmsg.events import read_events

    events = BASE
    body = b"[" + b",".join([orjson.dumps(events[0]), b"42", b'{"x": nope}', *map(orjson.dumps, events[1:])]) + b"]"
    r = Reducer()
    msgs = reduce_stream(body, reducer=r)
    assert [_comparable(m) for m in msgs] == one_by_one(events)[0]
    assert [(p.pointer, p.rule, p.message.split(":")[0]) for p in r.problems] == [
        ("/1", "type", "not an event object"),  # 42: JSON, but no event
        ("/2", "json", "value 3"),
    ]
    with pytest.raises(ValidationError, match="value 3: not valid JSON"):
        list(read_events(body))
    monkeypatch.setattr(limits, "max_event_bytes", 60)
    r = Reducer()
    reduce_stream(
        b'[{"type": "CUSTOM", "id": "c", "name": "' + b"x" * 100 + b'"}, ' + orjson.dumps(events[0]) + b"]", reducer=r
    )
    assert [(p.pointer, p.rule) for p in r.problems][:1] == [("/0", "max-event-bytes")]
    assert r.count == 2


@pytest.mark.parametrize(
    "bad",
    [
        None,  # every event valid
        b'{"type": "TEXT_BLOCK_DELTA", "id": "x1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": 7, "delta": "a"}',
        b'{"type": "CUSTOM", "id": "x2", "createdAt": "2025-01-01T00:00:00Z", "name": "n", "value": '
        + b"[" * 254
        + b"]" * 254
        + b"}",  # 255 deep: over the depth limit
        b'{"type": "CUSTOM", "id": "x3", "createdAt": "2025-01-01T00:00:00Z", "name": "n", "value": '
        + b"[" * 253
        + b"]" * 253
        + b"}",  # 254 deep: at it
        b'{"type": "NOPE", "id": "x4", "createdAt": "2025-01-01T00:00:00Z"}',
        b'{"type": "CUSTOM", "id": "x5", "createdAt": "2025-01-01T00:00:00Z", "name": "n", "value": 1e308}',
    ],
)
def test_strict_jsonl_checks_each_line_as_feed_does(bad: bytes | None) -> None:
    """Strict reading of JSON lines checks each event with the one-pass JSON check meant for what orjson read
    from text (agentmsg._codec.schemas.validate_parsed): it accepts and refuses exactly what feeding each parsed
    event to a strict Reducer does, with the same problems."""
    lines = [orjson.dumps(e) for e in BASE]
    if bad is not None:
        lines.insert(2, bad)
    body = b"\n".join(lines) + b"\n"

    def outcome(run: Any) -> Any:
        try:
            return [_comparable(m) for m in run()], None
        except ValidationError as exc:
            return None, [(p.pointer, p.rule, p.message) for p in exc.problems]

    def one_by_one_strict() -> list[AssistantMessage]:
        r = Reducer(strict=True)
        for line in lines:
            r.feed(orjson.loads(line))
        return r.finish()

    assert outcome(lambda: reduce_stream(body, strict=True)) == outcome(one_by_one_strict)
    if bad is None:
        assert outcome(lambda: reduce_stream(body, strict=True))[0]
