"""Agent events over SSE (``agentmsg.events.sse`` and ``reduce_stream``'s SSE side): encoding, resume after
``Last-Event-ID`` without duplicates, and the end and error events agentmsg's endpoint sends."""

from __future__ import annotations

from typing import Any

import pytest

from agentmsg import SSEDecoder, ValidationError, encode_sse, reduce_events, reduce_stream
from agentmsg.events.sse import events_after
from tests._support.events import EVENTS


def test_encode_has_id_event_and_data() -> None:
    text = encode_sse(EVENTS[:1])
    assert text.startswith("id: e1\nevent: AGENT_START\ndata: {") and text.endswith("}\n\n")


def test_sse_round_trip_reduces_like_the_events() -> None:
    body = encode_sse(EVENTS).encode()
    assert [m.to_dict() for m in reduce_stream(body)] == [m.to_dict() for m in reduce_events(EVENTS)]
    assert reduce_stream(body)[0].text_content == "héllo ☀️\nline2 world"


def test_resume_after_last_event_id_without_duplicates() -> None:
    body = encode_sse(EVENTS).encode()
    decoder = SSEDecoder()
    first = decoder.feed(body[: body.index(b"id: e4")])  # connection drops after e3
    assert decoder.last_event_id == "e3"
    resumed = list(events_after(EVENTS, decoder.last_event_id))
    assert [e["id"] for e in resumed] == ["e4", "e5", "e6"]
    # A server that replays too much is harmless: the reducer drops events it has seen.
    replayed = [e.json() for e in first] + EVENTS[1:]
    assert reduce_events(replayed)[0].text_content == reduce_events(EVENTS)[0].text_content
    assert list(events_after(EVENTS, "unknown")) == EVENTS


def test_events_after_an_id_sent_in_utf8_and_read_as_latin1() -> None:
    """A client sends Last-Event-ID in UTF-8 (the SSE spec; browsers, @agentmsg/client) and an ASGI framework decodes
    header bytes as Latin-1: the id 'é-€' arrived as 'Ã©-â\x82¬' and matched no event, so every event was resent."""
    events = [dict(e, id=f"é-€-{k}") for k, e in enumerate(EVENTS)]
    header = "é-€-2".encode().decode("latin-1")
    assert [e["id"] for e in events_after(events, header)] == [f"é-€-{k}" for k in range(3, len(EVENTS))]
    assert [e["id"] for e in events_after(events, "é-€-2")] == [f"é-€-{k}" for k in range(3, len(EVENTS))]
    assert list(events_after(events, "\xff-not-utf8")) == events


def test_encode_sse_event_keeps_line_breaks_out_of_its_fields() -> None:
    """An id or type with a line break would end its SSE field and inject another: it stays in the data
    only. What is not an event object, or cannot be written as JSON, raises the SDK's error."""
    import agentmsg
    from agentmsg.events.sse import encode_sse_event

    event = {"type": "CUSTOM\ndata: {}", "id": "a\r\nid: evil", "createdAt": "2025-01-01T00:00:00Z"}
    body = encode_sse_event(event)
    (got,) = SSEDecoder().feed(body.encode())
    assert got.json() == event and got.id == "" and got.event == "message"
    for bad in (5, {"type": "CUSTOM", "value": {"n": 2**64}}, {"type": "CUSTOM", "value": {"s": "\ud800"}}):
        with pytest.raises(agentmsg.ValidationError):
            encode_sse_event(bad)  # type: ignore[arg-type]


def test_the_endpoints_end_event_is_no_agent_event() -> None:
    """A body saved from agentmsg's endpoint ends with `event: end` (data {}): @agentmsg/client stops there, and
    so do Python's readers (it was reduced as an event of no type: rule enum), on every path."""
    from agentmsg import Reducer
    from agentmsg.events import read_events

    events = [
        {"type": "AGENT_START", "id": "e1", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
        {"type": "AGENT_END", "id": "e2", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
    ]
    body = encode_sse(events).encode() + b"event: end\ndata: {}\n\n"
    assert list(read_events(body)) == events
    r = Reducer()
    assert [m.id for m in reduce_stream(body, reducer=r)] == ["r"] and r.problems == [] and r.count == 2


def test_events_after_the_endpoints_end_event_are_said_not_folded() -> None:
    """The stream ends at the endpoint's `event: end` in both runtimes (@agentmsg/client stops reading there).
    Python's readers skipped the end event and read on: SSE events a saved body has after it were folded into the
    messages, unsaid, where the client never saw them. Now nothing after it is read into events: what is there is
    said once (rule order, its count, in the end event's place), as the client says what came with the end event.
    Blank lines and comments after it are no events: nothing said."""
    from agentmsg import Reducer, ValidationError
    from agentmsg.events import read_events

    events = [
        {"type": "AGENT_START", "id": "e1", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
        {"type": "AGENT_END", "id": "e2", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
    ]
    later = {"type": "AGENT_START", "id": "e3", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r2"}
    body = encode_sse(events).encode() + b"event: end\ndata: {}\n\n" + encode_sse([later]).encode() + b"data: x\n\n"
    r = Reducer()
    assert [m.id for m in reduce_stream(body, reducer=r)] == ["r"]  # r2 is not folded
    ((pointer, rule, message),) = [(p.pointer, p.rule, p.message) for p in r.problems]
    assert (pointer, rule, r.count) == ("/2", "order", 3)
    assert "2 SSE events after it" in message and "'e3'" in message
    seen: list[Any] = []
    assert list(read_events(body, strict=False, on_problem=seen.append)) == events
    assert [p.rule for p in seen] == ["order"]
    with pytest.raises(ValidationError, match="the stream ended here"):
        list(read_events(body))
    # whatever the chunking
    for n in (1, 7):
        r = Reducer()
        reduce_stream(iter([body[i : i + n] for i in range(0, len(body), n)]), sse=True, reducer=r)
        assert [(p.pointer, p.rule) for p in r.problems] == [("/2", "order")]
    # nothing after it but blank lines and a comment: nothing said
    r = Reducer()
    reduce_stream(encode_sse(events).encode() + b"event: end\ndata: {}\n\n\n: bye\n\n", reducer=r)
    assert r.problems == [] and r.count == 2


def test_the_endpoints_end_event_ends_the_stream_whatever_its_data_says() -> None:
    """An `event: end` whose data or id holds invalid UTF-8 is still the end (@agentmsg/client ends there, whatever
    its data): Python's readers took it for an agent event (utf-8 and json problems) and folded the events after it,
    unsaid, where the client stopped. An error event so is still the endpoint's failure. An event the stream ends
    inside is no end event (said: incomplete); one cut short after the end event counts among the events after it
    (the client says it too)."""
    from agentmsg import Reducer
    from agentmsg.events import read_events

    events = [
        {"type": "AGENT_START", "id": "e1", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
        {"type": "AGENT_END", "id": "e2", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
    ]
    later = encode_sse([{"type": "AGENT_START", "id": "e3", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r2"}])
    for end in (b'event: end\ndata: {"\xff"}\n\n', b"id: \xff\nevent: end\ndata: {}\n\n"):
        body = encode_sse(events).encode() + end + later.encode()
        r = Reducer()
        assert [m.id for m in reduce_stream(body, reducer=r)] == ["r"]
        assert [(p.pointer, p.rule) for p in r.problems] == [("/2", "order")]
        seen: list[Any] = []
        assert list(read_events(body, strict=False, on_problem=seen.append)) == events
        assert [p.rule for p in seen] == ["order"]
    body = encode_sse(events[:1]).encode() + b'event: error\ndata: {"message": "gone \xff"}\n\n'
    r = Reducer()
    reduce_stream(body, reducer=r)
    assert [(p.rule, p.message.split(": ", 1)[1]) for p in r.problems] == [
        ("source-error", "the server's event source failed: gone \ufffd"),
        ("incomplete_stream", "kept with what arrived, marked INTERRUPTED"),  # the reply it was in: cut
    ]
    # cut short after the end event: said with the rest; the end event itself cut short: incomplete, not the end
    r = Reducer()
    reduce_stream(encode_sse(events).encode() + b'event: end\ndata: {}\n\nid: z2\ndata: {"type"', reducer=r)
    ((rule, message),) = [(p.rule, p.message) for p in r.problems]
    assert rule == "order" and "1 SSE event after it (the first: id 'z2'" in message
    r = Reducer()
    reduce_stream(encode_sse(events).encode() + b"event: end\ndata: {}", reducer=r)
    assert [p.rule for p in r.problems] == ["incomplete"]


def test_the_endpoints_error_event_is_said_with_the_servers_message() -> None:
    """agentmsg's endpoint ends a failed stream with `event: error` (data {"message": ...}): @agentmsg/client throws
    a StreamError with that message; Python's readers say it (rule source-error, the server's message) instead of
    reducing it as an event of no type (rule enum, the message lost)."""
    from agentmsg import Reducer, ValidationError
    from agentmsg.events import read_events

    events = [
        {"type": "AGENT_START", "id": "e1", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r"},
        {"type": "TEXT_BLOCK_START", "id": "e2", "createdAt": "2026-01-01T00:00:00Z", "replyId": "r", "blockId": "b"},
        {
            "type": "TEXT_BLOCK_DELTA",
            "id": "e3",
            "createdAt": "2026-01-01T00:00:00Z",
            "replyId": "r",
            "blockId": "b",
            "delta": "Hel",
        },
    ]
    body = encode_sse(events).encode() + b'event: error\ndata: {"message": "model timed out"}\n\n'
    r = Reducer()
    (msg,) = reduce_stream(body, reducer=r)
    assert msg.text_content == "Hel"  # what came before is kept
    (said,) = [p for p in r.problems if p.rule == "source-error"]
    assert said.pointer == "/3" and said.message.endswith("the server's event source failed: model timed out")
    assert "enum" not in [p.rule for p in r.problems]
    seen: list[Any] = []
    assert list(read_events(body, strict=False, on_problem=seen.append)) == events
    assert [(p.rule, p.message.split(": ", 1)[1]) for p in seen] == [
        ("source-error", "the server's event source failed: model timed out")
    ]
    with pytest.raises(ValidationError, match="model timed out"):
        list(read_events(body))
    # data that is not the endpoint's object: said as it came
    r = Reducer()
    reduce_stream(encode_sse(events).encode() + b"event: error\ndata: Bad Gateway\n\n", reducer=r)
    assert [p.message.rsplit(": ", 1)[1] for p in r.problems if p.rule == "source-error"] == ["Bad Gateway"]


def test_the_endpoints_long_error_message_is_not_cut_before_it_is_said() -> None:
    """The endpoint's error message was cut at its first 1,000 characters, without a word, before the problem
    said it: the problem's own cut (``Problem.message``, in the middle) then counted the characters left out of
    those 1,000 (696 of a 2,000-character message, not 1,693) and showed a middle part as the end. The message
    is passed whole (its size bounded by ``limits.max_event_bytes`` where it is read), as @agentmsg/client's
    StreamError holds it: the problem says how much it leaves out and shows the real end."""
    import json

    from agentmsg import Reducer
    from agentmsg.errors import bounded
    from agentmsg.events import read_events

    long = "upstream failed: " + "x" * 1970 + " (the end)"
    body = b"event: error\ndata: " + json.dumps({"message": long}).encode() + b"\n\n"
    said = bounded(f"SSE event '' (error): the server's event source failed: {long}")
    assert said.endswith(" (the end)") and "(1,693 characters left out)" in said
    r = Reducer()
    reduce_stream(body, reducer=r)
    assert [(p.rule, p.message) for p in r.problems] == [("source-error", said)]
    seen: list[Any] = []
    assert list(read_events(body, strict=False, on_problem=seen.append)) == []
    assert [(p.rule, p.message) for p in seen] == [("source-error", said)]
    with pytest.raises(ValidationError) as info:
        list(read_events(body))
    assert [p.message for p in info.value.problems] == [said]


@pytest.mark.parametrize("chunk", [None, 1, 7], ids=["whole", "bytewise", "sevens"])
def test_a_line_of_no_sse_field_is_said_not_dropped(chunk: int | None) -> None:
    """An event whose ``data:`` was lost (its JSON alone on a line) is a line the SSE spec ignores: the reply was
    reduced without its text and nothing said it. Each such line is said (rule ``sse``); comments, blank lines and
    the spec's fields say nothing, whichever way the body is cut (the C scanner and the line parser alike)."""
    from agentmsg.events import iter_sse_events

    events = encode_sse(EVENTS).split("\n\n")
    delta = next(i for i, e in enumerate(events) if "TEXT_BLOCK_DELTA" in e)
    bare = events[delta].split("data: ", 1)[1]  # the event's JSON, without its data: prefix
    body = "\n\n".join([*events[:delta], bare, ": a comment\nretry: 5", *events[delta + 1 :]]).encode()
    source: Any = body if chunk is None else [body[i : i + chunk] for i in range(0, len(body), chunk)]
    problems = [(p.rule, p.message) for p in _reduced_problems(source)]  # (tolerant: the reducer says it)
    assert [rule for rule, _ in problems] == ["sse"], problems
    assert "a line of no SSE field" in problems[0][1] and "TEXT_BLOCK_DELTA" in problems[0][1]
    said: list[Any] = []
    got = list(iter_sse_events(source if chunk is None else iter(source), strict=False, on_problem=said.append))
    assert len(got) == len(events) - 2 and [p.rule for p in said] == ["sse"]  # (the last split is the body's end)
    with pytest.raises(ValidationError) as info:
        list(iter_sse_events(source if chunk is None else iter(source)))
    assert info.value.problems[0].rule == "sse"


def _reduced_problems(source: Any) -> list[Any]:
    from agentmsg import Reducer

    reducer = Reducer()
    reduce_stream(source, sse=True, reducer=reducer)
    return list(reducer.problems)
