"""The JSONL fast path of reduce_stream (batch-decoded views, inline delta routing) must give exactly what
feeding the same events one at a time gives: messages and reported problems, wherever batches are cut."""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import (
    AssistantMessage,
    Reducer,
    SizeLimitError,
    SSEDecoder,
    TextBlock,
    ToolUseBlock,
    ValidationError,
    emit_events,
    encode_sse,
    reduce_stream,
)
from agentmsg.events import read_events
from agentmsg.events import stream as stream_mod
from agentmsg.events import stream as stream_module
from tests._support.budget import SECONDS, examples
from tests._support.events import (
    TEXT_CASES,
    TS,
    _jsonable,
    base_streams,
    by_stream,
    comparable,
    ev,
    events_of,
    feed_text,
    jsonl,
    load,
    problems_of,
    reference_lines,
    rules,
    seeded,
)
from tests._support.mutators import garble_bytes, garble_events
from tests._support.valid import assistant_messages


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


@pytest.mark.no_kernel
@pytest.mark.differential
@pytest.mark.parametrize("chunk", [1, 7, 64, 333, 1 << 17])
@pytest.mark.parametrize("name", TEXT_CASES)
def test_vectors_agree_for_any_batch_size(name: str, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    case = load(name)
    events = events_of(case)
    data = case["jsonl"].encode() if "jsonl" in case else jsonl(events)
    assert via_bytes(data, chunk, monkeypatch) == one_by_one(events)


BASE = [
    ev(0, "AGENT_START", name="Friday"),
    ev(1, "THINKING_BLOCK_START", blockId="thinking"),
    ev(2, "TEXT_BLOCK_START", blockId="text"),
    ev(3, "TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
    ev(4, "TOOL_CALL_START", toolCallId="c2", toolCallName="g"),
]


@pytest.mark.differential
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


@pytest.mark.differential
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


@pytest.mark.no_kernel
@pytest.mark.differential
@pytest.mark.fuzz
@settings(max_examples=examples(60), deadline=None)
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


@pytest.mark.differential
@pytest.mark.fuzz
@settings(max_examples=examples(75), deadline=None)
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


@pytest.mark.no_kernel
@pytest.mark.differential
@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
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


@pytest.mark.differential
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
        ("/0", "incomplete_stream", "the stream ended inside reply r (no AGENT_END; open"),  # BASE: cut
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


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_a_json_array_cut_short_or_followed_by_junk_is_said(chunk: int | None) -> None:
    """The reader of a JSON array of events never closed its value splitter after the last chunk (it closed it
    before the first): what the input ended inside, junk after the array, and an array with no `]`, were dropped
    unsaid. Each is now said: junk as a value that is no JSON, a missing `]` as a cut stream (incomplete)."""
    from agentmsg.events import read_events

    first = orjson.dumps(BASE[0])
    cases = {
        b"[" + first + b"]x": ["json"],  # junk after the array
        b"[" + first: ["incomplete"],  # the writer was cut after a whole event
        b"[" + first + b', {"type": "TEXT_BL': ["json", "incomplete"],  # inside an event
        b"[\x00\x00\x00": ["json", "incomplete"],
        b"[" + first + b"]": [],
    }
    for body, want in cases.items():
        source: Any = body if chunk is None else [body[i : i + chunk] for i in range(0, len(body), chunk)]
        said: list[Any] = []
        got = list(read_events(source if chunk is None else iter(source), strict=False, on_problem=said.append))
        assert [p.rule for p in said] == want, (body, said)
        assert got[:1] == ([BASE[0]] if body[1:2] == b"{" else []), body
        r = Reducer()
        reduce_stream(source if chunk is None else iter(source), reducer=r)
        assert [p.rule for p in r.problems if p.rule in ("json", "incomplete")] == want, (body, r.problems)


@pytest.mark.differential
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


def test_a_stream_given_as_text_is_read_as_its_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """encode_sse returns a str, and reduce_stream(encode_sse(events)) is the natural call: a str was read as
    an iterable of one-character chunks (the same messages, about 150 times slower), and a lone surrogate in
    it was a bare UnicodeEncodeError."""
    reply = AssistantMessage("hello world " * 2000)
    events = emit_events(reply, chunk_size=10)
    chunks: list[int] = []
    real = stream_module._chunks

    def counted(source: Any) -> Any:
        for chunk in real(source):
            chunks.append(len(chunk))
            yield chunk

    monkeypatch.setattr(stream_module, "_chunks", counted)
    for text in (encode_sse(events), "".join(json.dumps(e) + "\n" for e in events)):
        chunks.clear()
        assert [m.content for m in reduce_stream(text)] == [reply.content]
        assert len(chunks) <= len(text.encode()) // stream_module.CHUNK + 2  # was one per character
        assert [e["type"] for e in read_events(text)] == [e["type"] for e in events]

    reducer = Reducer()
    (msg,) = reduce_stream(
        '{"type": "TEXT_BLOCK_DELTA", "id": "e1", "blockId": "t", "delta": "\ud800"}\n', reducer=reducer
    )
    assert set(msg.text_content) == {"\ufffd"} and [p.rule for p in reducer.problems][:1] == ["utf-8"]


DEEP = (SECONDS or 0) > 60  # `make fuzz`: every split point of every stream too


@pytest.mark.no_kernel
@pytest.mark.fuzz
def test_garbled_bytes_fast_path_equals_the_reference() -> None:
    for rng in seeded("bytes", 40):
        seed = rng.seed_label  # type: ignore[attr-defined]
        events = garble_events(rng, base_streams(rng))
        data = garble_bytes(rng, b"".join(orjson.dumps(e) + b"\n" for e in events if _jsonable(e)))
        try:
            ref = reference_lines(data)
            assert by_stream(data, chunk=rng.choice([16, 97, 1000, 1 << 17]), sse=False) == ref
            assert by_stream(data, chunk=1 << 17, pieces=rng.choice([1, 2, 5, 64]), sse=False) == ref
        except Exception as exc:  # any failure names its seed
            raise AssertionError(f"seed {seed}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.fuzz
def test_garbled_sse_never_raises_and_any_split_agrees() -> None:
    for rng in seeded("sse", 60):
        seed = rng.seed_label  # type: ignore[attr-defined]
        events = [e for e in garble_events(rng, base_streams(rng)) if isinstance(e, dict) and _jsonable(e)]
        body = garble_bytes(rng, encode_sse(events).replace("\n", rng.choice(["\n", "\r\n", "\r"])).encode())
        try:
            whole = by_stream(body, chunk=1 << 17, sse=True)
            assert by_stream(body, chunk=1 << 17, pieces=rng.choice([1, 3, 17]), sse=True) == whole
        except Exception as exc:  # any failure names its seed
            raise AssertionError(f"seed {seed}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.fuzz
@pytest.mark.parametrize("name", ["java-case5", "multi-iteration-reply", "bad-input-tolerant"])
def test_every_split_point(name: str) -> None:
    """A stream cut into two chunks at any byte gives what the whole stream gives (JSONL and SSE):
    every cut in ``make fuzz``, every cut within the first 64 bytes and every 7th after that otherwise."""
    events = events_of(load(name))
    for data, sse in ((b"".join(orjson.dumps(e) + b"\n" for e in events), False), (encode_sse(events).encode(), True)):
        whole = by_stream(data, chunk=1 << 17, sse=None)
        if not sse:
            assert whole == reference_lines(data)
        cuts = range(1, len(data)) if DEEP else [*range(1, 64), *range(64, len(data), 7)]
        for cut in cuts:
            r = Reducer()
            got = reduce_stream(iter([data[:cut], data[cut:]]), reducer=r)
            assert (comparable(got, check=False), problems_of(r)) == whole, f"cut at {cut}"


def test_sse_line_without_newline_is_dropped_as_it_arrives() -> None:
    decoder = SSEDecoder(max_line_bytes=1 << 20)
    chunk = b"x" * 4096
    events = decoder.feed(b"data: ")
    for _ in range(2000):  # 8 MB, fed in 4 KB pieces: never buffered whole
        events += decoder.feed(chunk)
        assert len(decoder._line) <= (1 << 20) + len(chunk)
    events += decoder.feed(b"\n\ndata: after\n\n")
    assert [(e.data, e.problem and e.problem.rule) for e in events] == [("", "max-line-bytes"), ("after", None)]


def test_reduce_stream_sse_long_line_is_a_problem_and_the_rest_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentmsg.limits, "max_event_bytes", 1 << 16)
    good = encode_sse(
        [
            ev(0, "AGENT_START"),
            ev(1, "TEXT_BLOCK_START", blockId="t"),
            ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="kept"),
        ]
    )
    body = good.encode() + b"data: " + b"x" * 200_000 + b"\n\n" + encode_sse([ev(3, "AGENT_END")]).encode()
    r = Reducer()
    (msg,) = reduce_stream(io.BytesIO(body), reducer=r)
    assert msg.text_content == "kept"
    assert rules(r) == [("/3", "max-line-bytes")]
    with pytest.raises(SizeLimitError):
        reduce_stream(body, strict=True)


def test_jsonl_long_line_is_a_problem_in_every_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentmsg.limits, "max_event_bytes", 1 << 16)
    long_line = orjson.dumps(ev(1, "TEXT_BLOCK_DELTA", blockId="t", delta="y" * 100_000))
    body = (
        jsonl([ev(0, "AGENT_START")]) + long_line + b"\n" + jsonl([ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="z")])
    )
    for source in (body, io.BytesIO(body), [body[i : i + 1000] for i in range(0, len(body), 1000)]):
        r = Reducer()
        (msg,) = reduce_stream(source, reducer=r)
        assert msg.text_content == "z"
        assert rules(r)[0] == ("/1", "max-event-bytes") and "line 2" in r.problems[0].message
    with pytest.raises(SizeLimitError):
        list(agentmsg.events.iter_jsonl(body))
    # Without a final newline the long line still does not end up buffered whole in a reader.
    r = Reducer()
    reduce_stream(io.BytesIO(body[: -len(b"\n")] + b"y" * 200_000), reducer=r)
    assert [p.rule for p in r.problems].count("max-event-bytes") == 2


def test_invalid_utf8_in_sse_data_is_reported_and_the_event_kept() -> None:
    body = encode_sse([ev(0, "AGENT_START")]).encode()
    body += b'data: {"type":"TEXT_BLOCK_DELTA","id":"e1","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"a\xffb"}\n\n'
    r = Reducer()
    (msg,) = reduce_stream(body, reducer=r)
    assert msg.text_content == "a\ufffdb"
    assert rules(r) == [("/1", "utf-8"), ("/1/blockId", "order"), ("/0", "incomplete_stream")]
    with pytest.raises(ValidationError) as info:
        reduce_stream(body, strict=True)
    assert info.value.problems[0].rule == "utf-8"


@pytest.mark.parametrize("bad", [b"\xff", b"\xed\xa0\x80"], ids=["invalid-byte", "cesu8-surrogate"])
def test_invalid_utf8_in_a_jsonl_line_is_reported_and_the_event_kept(bad: bytes) -> None:
    body = jsonl([ev(0, "AGENT_START"), ev(1, "TEXT_BLOCK_START", blockId="t")])
    body += (
        b'{"type":"TEXT_BLOCK_DELTA","id":"e2","createdAt":"2025-01-01T00:00:00Z","replyId":"r","blockId":"t","delta":"a'
        + bad
        + b'b"}\n'
    )
    for source in (body, io.BytesIO(body)):
        r = Reducer()
        (msg,) = reduce_stream(source, reducer=r)
        assert msg.text_content.startswith("a\ufffd") and msg.text_content.endswith("b")
        assert rules(r) == [("/2", "utf-8"), ("/0", "incomplete_stream")]


EVENTS = [
    ev(0, "AGENT_START", name="F"),
    ev(1, "TEXT_BLOCK_START", blockId="t"),
    ev(2, "TEXT_BLOCK_DELTA", blockId="t", delta="héllo"),
    ev(3, "TEXT_BLOCK_END", blockId="t"),
    ev(4, "AGENT_END"),
]


@pytest.mark.parametrize("split", [1, 2, 3, 5, 7])
def test_sse_is_detected_however_the_first_chunk_is_cut(split: int) -> None:
    body = encode_sse(EVENTS).encode()
    pieces = [body[i : i + split] for i in range(0, len(body), split)]
    r = Reducer()
    (msg,) = reduce_stream(iter(pieces), reducer=r)
    assert msg.text_content == "héllo" and r.problems == []
    assert [e["id"] for e in agentmsg.events.read_events(iter(pieces))] == [e["id"] for e in EVENTS]
    # JSONL fed one byte at a time, too (and a BOM split across chunks).
    data = b"\xef\xbb\xbf" + jsonl(EVENTS)
    (msg,) = reduce_stream(iter([data[i : i + split] for i in range(0, len(data), split)]))
    assert msg.text_content == "héllo"


def test_line_numbers_do_not_drift_after_blank_lines_across_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [orjson.dumps(ev(0, "AGENT_START"))]
    for n in range(1, 400):
        lines.append(orjson.dumps(ev(n, "TEXT_BLOCK_DELTA", blockId="t", delta="x")))
        if n % 7 == 0:
            lines.append(b"")
            lines.append(b"   ")
        if n % 50 == 0:
            lines.append(b"{not json %d" % n)
    body = b"\n".join(lines) + b"\n"
    expected = [str(i + 1) for i, line in enumerate(lines) if line.startswith(b"{not")]
    for chunk in (64, 333, 4096, 1 << 17):
        monkeypatch.setattr(stream_mod, "CHUNK", chunk)
        for source in (body, io.BytesIO(body)):
            r = Reducer()
            reduce_stream(source, reducer=r)
            bad = [p for p in r.problems if p.rule == "json"]
            assert [p.message.split(":")[0].removeprefix("line ") for p in bad] == expected


def test_incomplete_sse_event_is_reported_not_as_a_size_limit() -> None:
    body = encode_sse(EVENTS).encode() + b'data: {"type":'
    r = Reducer()
    (msg,) = reduce_stream(body, reducer=r)
    assert msg.text_content == "héllo" and rules(r) == [("/5", "incomplete")]
    with pytest.raises(ValidationError) as info:
        reduce_stream(body, strict=True)
    assert not isinstance(info.value, SizeLimitError) and info.value.problems[0].rule == "incomplete"


def test_a_leading_bom_is_not_part_of_the_first_line() -> None:
    data = b"\xef\xbb\xbf" + jsonl(EVENTS)
    for source in (data, io.BytesIO(data), iter([data[:1], data[1:2], data[2:]])):
        r = Reducer()
        (msg,) = reduce_stream(source, reducer=r)
        assert msg.name == "F" and r.problems == []
    assert len(list(agentmsg.events.iter_jsonl(data))) == len(EVENTS)


def _stream_with_text(text_deltas: list[str], args: str) -> bytes:
    head = [
        {"type": "AGENT_START", "id": "e0", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
        {"type": "TEXT_BLOCK_START", "id": "e1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "t"},
    ]
    deltas = [
        {
            "type": "TEXT_BLOCK_DELTA",
            "id": f"d{i}",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "blockId": "t",
            "delta": d,
        }
        for i, d in enumerate(text_deltas)
    ]
    tail = [
        {"type": "TEXT_BLOCK_END", "id": "e2", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "t"},
        {
            "type": "TOOL_CALL_START",
            "id": "e3",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "toolCallId": "c",
            "toolCallName": "f",
        },
        {
            "type": "TOOL_CALL_DELTA",
            "id": "e4",
            "createdAt": "2025-01-01T00:00:00Z",
            "replyId": "r",
            "toolCallId": "c",
            "delta": args,
        },
        {"type": "TOOL_CALL_END", "id": "e5", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "toolCallId": "c"},
        {"type": "AGENT_END", "id": "e6", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
    ]
    return b"\n".join(orjson.dumps(e) for e in head + deltas + tail)


@pytest.mark.no_kernel
def test_reducing_keeps_one_copy_of_non_ascii_text_and_a_bounded_peak() -> None:
    """The message is built from checked deltas without writing its text through orjson (which keeps a
    UTF-8 copy inside every non-ASCII str it writes) and without orjson's reader (about 13 bytes of memory
    per byte read); large tool arguments are checked by the walk, which writes nothing: the strings hold no
    second copy, and the peak stays a small multiple of the message."""
    import sys
    import tracemalloc

    data = _stream_with_text(["25°C, sunny. "] * 20_000, orjson.dumps({"log": "25°C " * 20_000}).decode())
    tracemalloc.start()
    try:
        (msg,) = reduce_stream(io.BytesIO(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    answer, call = msg.content
    assert isinstance(answer, TextBlock) and isinstance(call, ToolUseBlock)
    text = answer.text
    assert text == "25°C, sunny. " * 20_000
    # a Latin-1 str is its characters plus a fixed header; a cached UTF-8 copy would add len + extra bytes
    assert sys.getsizeof(text) < len(text) + 100
    assert call.input == {"log": "25°C " * 20_000}
    assert sys.getsizeof(call.input["log"]) < 100_000 + 100  # nor do the parsed arguments
    assert peak < 6 * len(msg.to_json_bytes())


def test_blank_lines_cost_no_memory_per_line() -> None:
    """Issue 28 (class 4): 60 MB of newlines held 640 MB in ``agentmsg reduce``. Blank lines are counted, never split
    into a list of lines nor parsed: the peak stays near the longest line plus the message, whatever their number, on
    every path (bytes whole, chunks, a file, ``feed_jsonl``; tolerant and strict), and line numbers stay right."""
    import io
    import tracemalloc

    ts = "2026-11-22T10:34:38Z"
    start = orjson.dumps({"type": "AGENT_START", "id": "a", "createdAt": ts, "replyId": "r"})
    delta = orjson.dumps({"type": "TEXT_BLOCK_DELTA", "id": "c", "createdAt": ts, "replyId": "r", "blockId": "t"})
    opened = orjson.dumps({"type": "TEXT_BLOCK_START", "id": "b", "createdAt": ts, "replyId": "r", "blockId": "t"})
    blanks = b"\n" * 2_000_000 + b" \r\n\t\n" * 1000
    body = b"\n".join([start, opened, blanks, delta, b"not json", blanks + b"\n"])

    def reduce_stream_chunks(strict: bool) -> Reducer:
        r = Reducer(strict=strict)
        reduce_stream((body[i : i + 65536] for i in range(0, len(body), 65536)), reducer=r)
        return r

    def reduce_stream_file(strict: bool) -> Reducer:
        r = Reducer(strict=strict)
        reduce_stream(io.BytesIO(body), reducer=r)
        return r

    def reduce_stream_bytes(strict: bool) -> Reducer:
        r = Reducer(strict=strict)
        reduce_stream(body, reducer=r)
        return r

    def feed_jsonl(strict: bool) -> Reducer:
        r = Reducer(strict=strict)
        r.feed_jsonl(body)
        return r

    for read in (reduce_stream_chunks, reduce_stream_file, reduce_stream_bytes, feed_jsonl):
        for strict in (False, True):
            tracemalloc.start()
            try:
                r = read(strict)
            except ValidationError as exc:
                problems = list(exc.problems)
            else:
                problems = r.problems
                r.finish()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert peak < 4 << 20, (read.__name__, strict, peak)  # 2 million lines as a list: 16 MB of pointers
            # the delta without its delta key, and the line that is no JSON, named by their index and line number
            json_problem = [p for p in problems if p.rule == "json"]
            if strict:
                assert problems[0].pointer == "/2", (read.__name__, problems)
            else:
                assert [p.pointer for p in json_problem] == ["/3"], (read.__name__, problems)
                number = body[: body.index(b"not json")].count(b"\n") + 1  # 2,002,005
                assert json_problem[0].message.startswith(f"line {number}:"), json_problem


def test_the_vector_helper_splits_jsonl_as_the_reducer_does() -> None:
    """events_of split a vector's jsonl with str.splitlines, which also ends a line at NEL, U+2028 and U+2029:
    orjson writes them raw inside a string (JSON needs no escape for them), so an event holding one was cut in two
    there (a JSONDecodeError), where the reducer reads one event. (The control characters str.splitlines also
    ends a line at, VT, FF, FS, GS, RS, are escaped in a JSON string: raw, they make a line no JSON.)"""
    from tests._support.events import events_of, jsonl_lines

    events = [ev(n, "TEXT_BLOCK_DELTA", blockId="t", delta=f"a{ch}b") for n, ch in enumerate("\x85\u2028\u2029")]
    text = jsonl(events).decode()
    assert all(ch in text for ch in "\x85\u2028\u2029")
    assert events_of({"jsonl": text}) == events == list(agentmsg.events.iter_jsonl(text.encode()))
    # a CR alone ends no line: two events after it are one line that is not JSON, for the reducer and the helper
    joined = orjson.dumps(events[0]) + b"\r" + orjson.dumps(events[1]) + b"\n"
    with pytest.raises(agentmsg.ValidationError):
        list(agentmsg.events.iter_jsonl(joined))
    assert jsonl_lines(joined) == [joined[:-1]] and jsonl_lines(joined.decode()) == [joined[:-1].decode()]
    with pytest.raises(orjson.JSONDecodeError):
        events_of({"jsonl": joined.decode()})
    assert jsonl_lines(b"a\r\n\n \n b\n") == [b"a\r", b" b"]  # (blank lines skipped, a CR before LF kept: JSON space)


def test_a_line_of_a_character_str_strip_takes_is_no_blank_line_for_the_reducer() -> None:
    from tests._support.events import jsonl_lines

    for ch in "\x1c\x85\u2028":
        assert jsonl_lines(f"{{}}\n{ch}\n") == ["{}", ch]
        assert jsonl_lines(f"{{}}\n{ch}\n".encode()) == [b"{}", ch.encode()]
        with pytest.raises(agentmsg.ValidationError):  # (a line the reducer reads, and finds no JSON in)
            list(agentmsg.events.iter_jsonl(f"{{}}\n{ch}\n".encode()))


@pytest.mark.parametrize("source", [None, 7, 1.5, object()], ids=["None", "int", "float", "object"])
def test_a_source_that_is_no_stream_is_a_validation_error(source: Any) -> None:
    """It raised a bare TypeError ('NoneType' object is not iterable) from inside the chunk loop."""
    readers = (
        lambda: list(read_events(source)),
        lambda: list(agentmsg.events.iter_jsonl(source)),
        lambda: list(agentmsg.events.iter_sse_events(source)),
        lambda: agentmsg.reduce_stream(source),
    )
    for read in readers:
        with pytest.raises(ValidationError) as info:
            read()
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("", "type") and type(source).__name__ in problem.message
    assert agentmsg.reduce_stream(iter([b""])) == []  # an iterable of chunks is a stream
