"""SSE encoding and robust incremental decoding; resume after Last-Event-ID."""

from __future__ import annotations

import random
from typing import Any

import attrs
import pytest

from agentmsg import SSEDecoder, encode_sse, reduce_events, reduce_stream
from agentmsg._wire import sse as _sse
from agentmsg._wire.sse import JSONDataDecoder, SSEEvent
from agentmsg.events.sse import events_after

EVENTS = [
    {"type": "AGENT_START", "id": "e1", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "name": "Friday"},
    {"type": "TEXT_BLOCK_START", "id": "e2", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "text"},
    {
        "type": "TEXT_BLOCK_DELTA",
        "id": "e3",
        "createdAt": "2025-01-01T00:00:00Z",
        "replyId": "r",
        "blockId": "text",
        "delta": "héllo ☀️\nline2",
    },
    {
        "type": "TEXT_BLOCK_DELTA",
        "id": "e4",
        "createdAt": "2025-01-01T00:00:00Z",
        "replyId": "r",
        "blockId": "text",
        "delta": " world",
    },
    {"type": "TEXT_BLOCK_END", "id": "e5", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r", "blockId": "text"},
    {"type": "AGENT_END", "id": "e6", "createdAt": "2025-01-01T00:00:00Z", "replyId": "r"},
]


def decode_all(chunks: list[bytes]) -> list[tuple[str, str, str]]:
    decoder = SSEDecoder()
    out = []
    for chunk in chunks:
        out.extend((e.id, e.event, e.data) for e in decoder.feed(chunk))
    return out


def test_encode_has_id_event_and_data() -> None:
    text = encode_sse(EVENTS[:1])
    assert text.startswith("id: e1\nevent: AGENT_START\ndata: {") and text.endswith("}\n\n")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_decode_line_endings_bom_comments_multiline(newline: str) -> None:
    raw = '\ufeff: a comment\nretry: 3000\nid: 7\nevent: custom\ndata: first\ndata:second\ndata:  third\n\n: keepalive\n\ndata: {"x": 1}\n\n'
    raw = raw.replace("\n", newline)
    events = SSEDecoder().feed(raw.encode())
    assert [(e.id, e.event, e.data) for e in events] == [
        ("7", "custom", "first\nsecond\n third"),
        ("7", "message", '{"x": 1}'),
    ]
    assert events[0].retry == 3000


def test_chunks_split_anywhere_even_inside_crlf_and_utf8() -> None:
    body = encode_sse(EVENTS).replace("\n", "\r\n").encode()
    whole = decode_all([body])
    assert len(whole) == len(EVENTS)
    rng = random.Random(7)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(body)), rng.randint(1, 30)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert decode_all(pieces) == whole
    assert decode_all([bytes([b]) for b in body]) == whole  # one byte at a time


def test_incomplete_last_event_is_not_dispatched_but_reported() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: partial") == []
    (event,) = decoder.close()
    assert event.data == "" and event.problem is not None and event.problem.rule == "incomplete"
    assert decoder.close() == []
    decoder.feed(b"data: whole\n\n")
    assert decoder.close() == []


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


def test_empty_chunks_between_cr_and_lf_do_not_add_a_blank_line() -> None:
    """A CRLF split by empty chunks is still one line end (else the blank line would dispatch early)."""
    body = b"data: a\r\ndata: b\r\n\r\n"
    decoder = SSEDecoder()
    chunks = [body[:8], b"", b"", body[8:17], b"", body[17:]]
    assert chunks[0].endswith(b"\r") and chunks[3].endswith(b"\r")
    assert [e.data for c in chunks for e in decoder.feed(c)] == ["a\nb"]


def test_sse_data_that_is_not_json_is_reported_and_the_rest_kept() -> None:
    import agentmsg
    from agentmsg import Reducer

    body = encode_sse(EVENTS[:3]) + "event: ping\ndata: [DONE\n\n" + encode_sse(EVENTS[3:])
    reducer = Reducer()
    (msg,) = reduce_stream(body.encode(), reducer=reducer)
    assert msg.text_content == "héllo ☀️\nline2 world"
    assert [(p.pointer, p.rule) for p in reducer.problems] == [("/3", "json")]
    assert "'e3' (ping)" in reducer.problems[0].message
    with pytest.raises(agentmsg.ValidationError):
        reduce_stream(body.encode(), strict=True)


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


_DATA = [b'{"a": 1}', b"x" * 40, b"\xff", b""]
# UTF-8 at its edges (the C scanner checks it itself when it hands data as bytes): valid 2-, 3- and 4-byte
# forms and the largest ones; overlong forms, surrogates, code points past U+10FFFF, cut sequences, stray
# continuation bytes.
_UTF8 = [
    b"\xc3\xa9",
    b"\xe2\x82\xac",
    b"\xf0\x9f\x98\x80",
    b"\xef\xbf\xbf",
    b"\xf4\x8f\xbf\xbf",
    b"\xed\x9f\xbf",
    b"\xee\x80\x80",
    b"\xc0\x80",
    b"\xc1\xbf",
    b"\xe0\x9f\xbf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf0\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc3",
    b"\x80",
    b"\xbf",
]


def _utf8_edge(rng: Any) -> bytes:
    """ASCII runs (of every length around 8, the C check's word) with UTF-8 edge cases between them."""
    return b"".join(b"a" * rng.randint(0, 17) + rng.choice(_UTF8) for _ in range(rng.randint(1, 3)))


def _mixed_body(rng: Any) -> bytes:
    """Short lines, many of them blank, each with its own line end: CRLF blank lines after LF or CR lines
    and the like, where a scanner that looks for CRLF CRLF can be misled."""
    lines = [b"data: one", b"data: two", b'data: {"k": "\xc3\xa9"}', b"", b"", b"event: e", b"id: 7", b": c"]
    ends = [b"\n", b"\r\n", b"\r"]
    return b"".join(rng.choice(lines) + rng.choice(ends) for _ in range(rng.randint(0, 16)))


def _sse_body(rng: Any) -> bytes:
    """A random event stream: the simple shapes providers send, and everything else the spec allows."""
    if rng.random() < 0.3:
        return _mixed_body(rng)
    eol = rng.choice([b"\n", b"\r\n", b"\r", None])
    out = []
    for _ in range(rng.randint(0, 12)):
        end = eol or rng.choice([b"\n", b"\r\n", b"\r"])
        kind = rng.random()
        if kind < 0.5:  # the simple shape
            if rng.random() < 0.4:
                out.append(b"event: " + rng.choice([b"message_start", b"delta", b"", b"\xc3\xa9t\xc3\xa9"]) + end)
            out.append(b"data:" + rng.choice([b" ", b""]) + rng.choice([*_DATA, _utf8_edge(rng)]) + end)
            out.append(end)
        else:
            out.append(
                rng.choice(
                    [
                        b"id: " + str(rng.randint(0, 9)).encode(),
                        b"id: a\x00b",
                        b"retry: 150",
                        b": comment",
                        b"data: two",
                        b"data",
                        b"event:x",
                        b"field: ignored",
                        b"",
                        b"y" * 70,
                        b":" + b"z" * 70,
                        b"id: \xc3\xa9",
                        b"id",
                        b"event",
                        b"event: \x01",
                    ]
                )
                + end
            )
    return b"".join(out)


@pytest.mark.parametrize("scanner", ["C", "C bytes", "Python"])
def test_the_simple_event_fast_path_decodes_as_the_line_parser(scanner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole bodies take the fast path for the simple pieces; fed one byte at a time they never do: the
    events (data, name, id, retry, problem) are the same, whatever the line ends, limits and splits. The
    fast path runs in C (agentmsg._speedups.sse_scan) where it was built, and in Python. "C bytes": the
    decoder of the provider parsers and agent events over SSE (``JSONDataDecoder``), whose simple events carry their data as UTF-8
    bytes: the same text, invalid UTF-8 reported alike."""
    if scanner == "Python":
        monkeypatch.setattr(_sse, "_scan", None)
    elif _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")
    as_bytes = scanner == "C bytes"
    kinds: set[type] = set()

    def fields(events: list[Any]) -> list[Any]:
        out = []
        for e in events:
            data = e.data
            kinds.add(type(data))
            if isinstance(data, bytes):
                assert as_bytes
                data = data.decode("utf-8")  # checked by the scanner: never fails
            out.append((data, e.event, e.id, e.retry, e.problem and e.problem.rule))
        return out

    rng = random.Random(20261124)
    for _ in range(1500):
        body = _sse_body(rng)
        limit = rng.choice([None, 30, 60])

        def decode(pieces: list[bytes], limit: int | None = limit) -> list[Any]:
            decoder = (JSONDataDecoder if as_bytes else SSEDecoder)(max_line_bytes=limit, max_event_bytes=limit)
            return fields([e for p in pieces for e in decoder.feed(p)] + decoder.close())

        cut = rng.randrange(len(body) + 1)
        bytewise = decode([body[i : i + 1] for i in range(len(body))])
        assert decode([body]) == bytewise, body
        assert decode([body[:cut], body[cut:]]) == bytewise, (body, cut)
        cuts = sorted(rng.sample(range(len(body) + 1), min(len(body) + 1, 4)))  # chunks ending inside events
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert decode(pieces) == bytewise, (body, cuts)
    assert kinds == ({bytes, str} if as_bytes else {str})


def test_the_sniffer_tells_a_body_the_same_whole_or_byte_by_byte() -> None:
    """A first chunk that starts with content is told at once from its first 8 bytes (held, not copied);
    the answer and the bytes held are those of feeding the same body one byte at a time."""
    from agentmsg._wire.sse import Sniffer

    starts = [b"", b"\xef\xbb\xbf", b" ", b"\r\n", b"\t\n \n", b"\xef\xbb"]
    heads = [
        b"data: {}",
        b"data:x",
        b"id: 1",
        b"event: e",
        b":ok",
        b"retry: 5",
        b"{",
        b'{"a": 1}',
        b"<html>",
        b"da",
        b"dat",
    ]
    rng = random.Random(20261126)
    for _ in range(2000):
        body = rng.choice(starts) + rng.choice(heads) + rng.choice([b"", b"\n", b"data: more\n\n", b"x" * 9])
        whole = Sniffer()
        told = whole.feed(body)
        slow = Sniffer()
        answer = None
        for i in range(len(body)):
            answer = slow.feed(body[i : i + 1])
            if answer is not None:
                break
        assert told == answer, body
        if told is not None:
            assert bytes(whole.head) == body and bytes(slow.head) == body[: len(slow.head)]


def test_the_c_scanner_makes_ordinary_events() -> None:
    """The C scanner fills an SSEEvent's slots itself (no Python frame per event): each is the instance calling
    the class makes (equal, the same repr, evolve and assignment work, ``retry`` and ``problem`` None); a class
    with an ``__attrs_post_init__`` is called as it is, so that its own step runs."""
    if _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")
    body = b'event: delta\nid: 7\ndata: {"a": 1}\n\ndata: two\n\n'
    made = SSEDecoder().feed(body)
    assert made == [SSEEvent('{"a": 1}', "delta", "7"), SSEEvent("two", "message", "7")]
    assert [repr(e) for e in made] == [repr(SSEEvent('{"a": 1}', "delta", "7")), repr(SSEEvent("two", "message", "7"))]
    assert (made[0].retry, made[0].problem) == (None, None)
    assert attrs.evolve(made[1], data="x") == SSEEvent("x", "message", "7")
    made[1].data = "changed"
    assert made[1].data == "changed"

    @attrs.define
    class Counted(SSEEvent):
        def __attrs_post_init__(self) -> None:
            self.retry = 1

    out: list[Any] = []
    _sse._scan(b"data: x\n\n", 0, False, 100, 100, "", out, Counted)
    assert out == [Counted("x", "message", "", 1)] and type(out[0]) is Counted
    out.clear()
    _sse._scan(b"data: y\n\n", 0, False, 100, 100, "", out, SSEEvent)  # back to the plain class
    assert out == [SSEEvent("y")] and type(out[0]) is SSEEvent


@pytest.mark.parametrize("scanner", ["C", "Python"])
def test_last_event_id_is_the_last_dispatched_events(scanner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``last_event_id`` (what a reconnect sends as Last-Event-ID) is the id of the last event dispatched: a
    stream cut inside an event after its ``id:`` line resumes at that event, not after it (it was set at the
    id line, so the cut event was lost on resume). The events carry their ids as before, whatever the chunks."""
    if scanner == "Python":
        monkeypatch.setattr(_sse, "_scan", None)
    elif _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")
    body = b"id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c"  # cut inside event 3
    for pieces in ([body], [body[i : i + 1] for i in range(len(body))], [body[:20], body[20:]]):
        d = SSEDecoder()
        events = [e for p in pieces for e in d.feed(p)]
        assert [(e.data, e.id) for e in events] == [("a", "1"), ("b", "2")]
        assert d.last_event_id == "2"
        (cut,) = d.close()
        assert (cut.id, cut.problem and cut.problem.rule) == ("3", "incomplete")
        assert d.last_event_id == "2"
    d = SSEDecoder()
    d.feed(b"id: 7\n")  # an id line, its event not ended yet
    assert d.last_event_id == ""
    assert [(e.data, e.id) for e in d.feed(b"data: x\n\n")] == [("x", "7")] and d.last_event_id == "7"
    d.feed(b"id: 8\n\n")  # an event of no data still sets it, as the spec says
    assert d.last_event_id == "8"


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
        ("source-error", "the server's event source failed: gone \ufffd")
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
