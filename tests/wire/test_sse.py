"""The SSE decoder (``agentmsg._wire.sse``): line endings, BOMs, comments and multi-line data, chunks split
anywhere, an incomplete last event, the simple-event fast path and the C scanner against the line parser, the
sniffer, ``Last-Event-ID``; memory held per event, not per line."""

from __future__ import annotations

import gc
import random
import re
import tracemalloc
import weakref
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import SSEDecoder, encode_sse, reduce_stream
from agentmsg._wire import sse as _sse
from agentmsg._wire.sse import JSONDataDecoder, SSEEvent
from tests._support.budget import SEED, examples, rounds
from tests._support.events import EVENTS


def c_only(scanner: str) -> Any:
    """A parameter that runs the C scanner: kernel_only (the pure-Python pass has none; tests/README.md)."""
    return pytest.param(scanner, marks=pytest.mark.kernel_only)


def test_an_event_of_many_short_data_lines_holds_its_bytes_not_a_string_per_line() -> None:
    """The SSE decoder held an event's data lines as a str each: about 20 times the bytes the event limit counts
    (2 bytes a line; 1.3 GB under the default limit), 7 times the body here. Now their bytes, decoded once when the
    event is dispatched: the same data, invalid UTF-8 replaced and said as before."""
    n = 50_000  # (in 8 KiB chunks: what a chunk costs stays small beside the body, traced at a quarter of the work)
    body = b"data: xy\n" * n
    decoder = SSEDecoder()
    tracemalloc.start()
    try:
        for i in range(0, len(body), 8192):
            assert decoder.feed(body[i : i + 8192]) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(body), (peak, len(body))  # (6.8 times the body before, 0.5 times now)
    (event,) = decoder.feed(b"\n")
    assert event.data == "\n".join(["xy"] * n) and event.problem is None
    (event,) = SSEDecoder().feed(b"data: a\xff\ndata:\ndata: \xe2\x82\n\n")
    assert event.data == "a\ufffd\n\n\ufffd" and event.problem is not None and event.problem.rule == "utf-8"


@pytest.mark.parametrize("fed", ["in chunks", "whole"])
def test_an_event_of_many_data_lines_is_held_once_up_to_its_dispatch(monkeypatch: Any, fed: str) -> None:
    """An event of millions of short data lines and no blank line until its end (a stream's one event that never
    ends, under a large limit) was read a line at a time (256 MiB: 60 s), and held its bytes and their text both at
    its dispatch: 2.1 times the data; fed whole, a bytes object per line too, and the body copied twice (17 times).
    Now a run of data lines is taken at once and decoded onto the text as it comes, a window at a time (the
    windows made small here, to tell them from the data): the data once, and a few windows."""
    window = 1 << 16
    monkeypatch.setattr(_sse, "_RUN_WINDOW", window, raising=False)
    monkeypatch.setattr(_sse, "_DECODE_AT", window, raising=False)
    n = 400_000
    body = b"data:xy\n" + b"data: xy\r\n" * (n - 1) + b"\n"
    decoder = SSEDecoder(max_event_bytes=1 << 30)
    tracemalloc.start()
    try:
        if fed == "whole":
            events = decoder.feed(body)
        else:
            events = [e for i in range(0, len(body), 65536) for e in decoder.feed(body[i : i + 65536])]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    kept = 3 * n - 1
    assert [(e.data, e.problem) for e in events] == [("\n".join(["xy"] * n), None)]
    assert peak < kept + 8 * window, (peak, kept)  # (was 2.1 times the data in chunks, 17 times whole)


@pytest.mark.parametrize("at", [1, 5, 1 << 20])
def test_an_events_data_decoded_in_pieces_reads_as_decoded_whole(monkeypatch: Any, at: int) -> None:
    """The data is decoded every ``_DECODE_AT`` bytes (whole lines): invalid UTF-8 is replaced and said with the
    byte of the data where it is, as when it was decoded whole at the event's end; a field's invalid UTF-8 said
    first is said."""
    monkeypatch.setattr(_sse, "_DECODE_AT", at)
    body = b"data: ab\ndata: \xc3\xa9\xe2\ndata: cd\xff\ndata: e\n\ndata: \xf0\x9f\x98\x80\nevent: \xff\ndata: \xff\n\n"
    for chunks in ([body], [body[i : i + 3] for i in range(0, len(body), 3)]):
        decoder = SSEDecoder()
        events = [e for chunk in chunks for e in decoder.feed(chunk)]
        assert [(e.data, e.event, e.problem and e.problem.message) for e in events] == [
            ("ab\n\u00e9\ufffd\ncd\ufffd\ne", "message", "invalid UTF-8 (byte 5 of the data) replaced by U+FFFD"),
            ("\U0001f600\n\ufffd", "\ufffd", "invalid UTF-8 (byte 0 of a field) replaced by U+FFFD"),
        ]


def decode_all(chunks: list[bytes]) -> list[tuple[str, str, str]]:
    decoder = SSEDecoder()
    out: list[tuple[str, str, str]] = []
    for chunk in chunks:
        out.extend((e.id, e.event, e.data) for e in decoder.feed(chunk))
    return out


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


def test_empty_chunks_between_cr_and_lf_do_not_add_a_blank_line() -> None:
    """A CRLF split by empty chunks is still one line end (else the blank line would dispatch early)."""
    body = b"data: a\r\ndata: b\r\n\r\n"
    decoder = SSEDecoder()
    chunks = [body[:8], b"", b"", body[8:17], b"", body[17:]]
    assert chunks[0].endswith(b"\r") and chunks[3].endswith(b"\r")
    assert [e.data for c in chunks for e in decoder.feed(c)] == ["a\nb"]


def test_sse_data_that_is_not_json_is_reported_and_the_rest_kept() -> None:
    from agentmsg import Reducer

    body = encode_sse(EVENTS[:3]) + "event: ping\ndata: [DONE\n\n" + encode_sse(EVENTS[3:])
    reducer = Reducer()
    (msg,) = reduce_stream(body.encode(), reducer=reducer)
    assert msg.text_content == "héllo ☀️\nline2 world"
    assert [(p.pointer, p.rule) for p in reducer.problems] == [("/3", "json")]
    assert "'e3' (ping)" in reducer.problems[0].message
    with pytest.raises(agentmsg.ValidationError):
        reduce_stream(body.encode(), strict=True)


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
                        b"",
                        b"",
                        b" ",
                        b"x",
                        b"\t{",
                        b"id: 9",
                        b"id: \x00",
                    ]
                )
                + end
            )
    return b"".join(out)


@pytest.mark.differential
@pytest.mark.parametrize("scanner", [c_only("C"), c_only("C bytes"), "Python"])
def test_the_simple_event_fast_path_decodes_as_the_line_parser(scanner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole bodies take the fast path for the simple pieces; fed one byte at a time they never do: the
    events (data, name, id, retry, problem) are the same, whatever the line ends, limits and splits. The
    fast path runs in C (agentmsg._speedups.sse_scan) where it was built, and in Python. "C bytes": the
    decoder of the provider parsers and agent events over SSE (``JSONDataDecoder``), whose simple events carry their data as UTF-8
    bytes: the same text, invalid UTF-8 reported alike."""
    if scanner == "Python":
        monkeypatch.setattr(_sse, "_scan", None)
        monkeypatch.setattr(_sse, "_idle", None)
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
            events = [e for p in pieces for e in decoder.feed(p)]
            last_id = decoder.last_event_id  # (blank lines skipped between events still set it)
            return [*fields(events + decoder.close()), last_id]

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


@pytest.mark.parametrize("chunk", [1 << 12, 1 << 16, 100_003])
def test_blanks_past_the_sniff_limit_decide_and_are_not_held(chunk: int) -> None:
    """64 KiB of blank lines with no field yet are no SSE (sniff's rule), but the sniffer fed them in pieces never
    decided: every reader held the whole body (128 MB of newlines: 1.3 GB, in 24 s). Now it decides there, and a
    provider stream of nothing but newlines is read in bounded memory."""
    from agentmsg._wire.sse import SNIFF_LIMIT, FormatSniffer, Sniffer
    from agentmsg.providers import openai

    sniffer, formats = Sniffer(), FormatSniffer()
    told = found = None
    fed = 0
    while told is None or found is None:
        fed += chunk
        told = sniffer.feed(b"\n" * chunk) if told is None else told
        found = formats.feed(b"\r\n" * (chunk // 2)) if found is None else found
        assert fed <= SNIFF_LIMIT + chunk, (told, found)
    assert (told, found) == (False, "jsonl")
    parser = openai.StreamParser()
    tracemalloc.start()
    try:
        for _ in range((8 << 20) // chunk):
            parser.feed(b"\n" * chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    parser.close()
    assert peak < 4 * SNIFF_LIMIT + 3 * chunk, peak  # (was the whole 8 MB, several times over)


@pytest.mark.differential
@pytest.mark.kernel_only
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


@pytest.mark.kernel_only
def test_the_c_scanner_keeps_no_event_class_alive() -> None:
    """The C scanner remembered the last event class it saw (to fill its slots directly) with a strong reference:
    a class made for one decoder (an SSEEvent subclass, created at run time) could never be freed. It now keeps
    a weak one: once the caller lets the class go, it is collected; the slots are read again for the next class,
    the plain class's events still filled in directly."""
    if _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")

    for post_init in (False, True):
        namespace: dict[str, Any] = {"__attrs_post_init__": lambda self: None} if post_init else {}
        made = attrs.define(type("Made", (SSEEvent,), namespace))
        out: list[Any] = []
        _sse._scan(b"data: x\n\n", 0, False, 100, 100, "", out, made)
        assert out == [made("x")] and type(out[0]) is made
        held = weakref.ref(made)
        del made, out
        gc.collect()
        assert held() is None, post_init
    out = []
    _sse._scan(b"data: y\n\n", 0, False, 100, 100, "", out, SSEEvent)
    assert out == [SSEEvent("y")] and type(out[0]) is SSEEvent


@pytest.mark.parametrize("scanner", [c_only("C"), "Python"])
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


def _provider_body(rng: Any) -> bytes:
    """A random provider body: events among runs of lines that carry no data (blank lines, comments, ids,
    fields the spec does not know) and the lines the provider decoder reads itself (a JSON value outside any
    field, an ``error:`` line, ``event: error`` with no data and the text after it)."""
    lines = [
        b"data: {}",
        b'data: {"a": 1}',
        b"",
        b"",
        b"",
        b": ping",
        b":",
        b"id: 4",
        b"event: x",
        b"event: error",
        b"retry: 5",
        b"junk",
        b" ",
        b"  {",
        b"\t[1]",
        b'{"error": {"message": "m"}}',
        b"}",
        b"error: boom",
        b"errors: not one",
        b"x" * 40,
    ]
    eol = rng.choice([b"\n", b"\r\n", b"\r", None])
    return b"".join(rng.choice(lines) + (eol or rng.choice([b"\n", b"\r\n", b"\r"])) for _ in range(rng.randint(0, 24)))


@pytest.mark.differential
@pytest.mark.parametrize("scanner", [c_only("C"), "Python"])
def test_the_provider_decoder_reads_the_same_in_any_chunking(scanner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider decoder skips runs of lines that do nothing between events at once (in C, or by a regular
    expression), and lines of no SSE field once the first was said: what it dispatches (events, JSON values
    outside any field, stray lines said, errors) and the last event id are those of the same body fed a byte at
    a time, whatever the line ends, limits and cuts."""
    from agentmsg._wire.framing import _ProviderSSE

    if scanner == "Python":
        monkeypatch.setattr(_sse, "_scan", None)
        monkeypatch.setattr(_sse, "_idle", None)
    elif _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")

    def decode(pieces: list[bytes], limit: int | None) -> list[Any]:
        decoder = _ProviderSSE()
        if limit:
            decoder.max_line_bytes = decoder.max_event_bytes = limit
        events = [e for p in pieces for e in decoder.feed(p)]
        last_id = decoder.last_event_id
        events += decoder.close()
        data = [e.data.decode() if isinstance(e.data, bytes) else e.data for e in events]
        kept = ((d, e.event, e.id, e.retry, e.problem) for d, e in zip(data, events, strict=True))
        return [*kept, last_id, decoder.retry]

    rng = random.Random(20261202)
    for _ in range(1500):
        body = _provider_body(rng)
        limit = rng.choice([None, None, 30])
        bytewise = decode([body[i : i + 1] for i in range(len(body))], limit)
        assert decode([body], limit) == bytewise, body
        cuts = sorted(rng.sample(range(len(body) + 1), min(len(body) + 1, 4)))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert decode(pieces, limit) == bytewise, (body, cuts)


def _fed_by_idle_scan(decoder: Any, scan: Any, chunk: bytes) -> list[SSEEvent]:
    """``decoder.feed(chunk)`` as a stream parser makes it: the idle scan by SSEDecoder's contract (its docstring),
    with the scanner the decoder gave once (``scan``), where it applies; where the scan takes the whole chunk,
    every event is the scanner's (bytes data, no problem)."""
    if not (decoder.idle and type(chunk) is bytes):
        return list(decoder.feed(chunk))
    out: list[SSEEvent] = []
    pos, stop, last_id = scan(chunk, decoder.id_buffer, out, decoder.dataless)
    if pos:
        decoder.id_buffer = decoder.last_event_id = last_id
    if stop >= 0 or pos < len(chunk):
        decoder.scan_on(chunk, pos, stop, out)
    else:
        assert all(isinstance(e.data, bytes) and e.problem is None for e in out), chunk  # (data: str, typed)
    return out


@pytest.mark.differential
@pytest.mark.kernel_only
@pytest.mark.parametrize("kind", ["provider", "JSONDataDecoder"])
def test_the_idle_scan_made_by_its_contract_reads_what_feed_reads(kind: str) -> None:
    """The provider stream parser makes an idle decoder's scan itself, by the names SSEDecoder's docstring gives
    (``idle_scanner``, ``idle``, ``id_buffer``, ``dataless``, ``scan_on``), not by its private state: made so, each
    chunk gives the events that ``feed`` gives a twin decoder, and leaves the same last event id, whatever the
    body (ids, comments, stray lines that change ``dataless`` on the way, JSON values outside any field) and
    its cuts."""
    from agentmsg._wire.framing import _ProviderSSE

    if _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")
    make: Any = _ProviderSSE if kind == "provider" else JSONDataDecoder
    assert SSEDecoder().idle_scanner() is None  # (str data: feed's scan is its own)
    rng = random.Random(20261206)
    scanned = 0
    for _ in range(1500):
        body = b"data: {}\n\n" + _provider_body(rng)
        cuts = sorted(rng.sample(range(len(body) + 1), min(len(body) + 1, rng.randint(1, 6))))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        by_contract, by_feed = make(), make()
        scan = by_contract.idle_scanner()  # (once: the scanner keeps the decoder's limits)
        assert scan is not None
        for piece in pieces:
            scanned += by_contract.idle and bool(piece)
            got = _fed_by_idle_scan(by_contract, scan, piece)
            want = by_feed.feed(piece)
            assert [attrs.astuple(e) for e in got] == [attrs.astuple(e) for e in want], (body, cuts)
            assert (by_contract.last_event_id, by_contract.idle) == (by_feed.last_event_id, by_feed.idle), (body, cuts)
        assert [attrs.astuple(e) for e in by_contract.close()] == [attrs.astuple(e) for e in by_feed.close()]
    assert scanned > 150  # (the idle scan was made, not only feed)


#: Bodies of lines that carry no data, 64 KiB each, after one event: blank lines with each line end, comments,
#: fields the spec does not know, blanks, ids.
_DATALESS = {
    "blank LF": b"\n",
    "blank CRLF": b"\r\n",
    "blank CR": b"\r",
    "comments": b":\n",
    "comment blocks": b": keep-alive\n\n",
    "unknown fields": b"x\n",
    "unknown blocks": b"x\n\n",
    "spaces": b" \n",
    "ids": b"id: 1\n\n",
}


@pytest.mark.parametrize("name", list(_DATALESS))
@pytest.mark.parametrize("size", [7, 64, 1 << 20])
def test_lines_with_no_data_are_skipped_a_run_at_a_time(name: str, size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines that carry no data cost what events cost: the Python line parser reads none of them one by one (it
    did, each a Python call: 100-200 times an event's cost per byte), whatever the chunking; the fast path's
    Python form is called at most a few times a chunk (in C, the scanner and the skipping of such lines). Both
    the agent event decoder and the provider decoder (whose first line of no field is said, once)."""
    from agentmsg._wire.framing import _ProviderSSE

    unit = _DATALESS[name]
    body = b"data: x\n\n" + unit * ((64 << 10) // len(unit)) + b"data: y\n\n"
    chunks = [body[i : i + size] for i in range(0, len(body), size)]
    calls = {"line": 0, "piece": 0}
    process, simple = SSEDecoder._process, SSEDecoder._simple_event

    def count_line(self: Any, line: bytes, out: list[Any]) -> None:
        calls["line"] += 1
        process(self, line, out)

    def count_piece(self: Any, *args: Any) -> Any:
        calls["piece"] += 1
        return simple(self, *args)

    monkeypatch.setattr(SSEDecoder, "_process", count_line)
    monkeypatch.setattr(SSEDecoder, "_simple_event", count_piece)
    for decoder in (SSEDecoder(), _ProviderSSE()):
        calls.update(line=0, piece=0)
        events = [e for c in chunks for e in decoder.feed(c)] + decoder.close()
        said = [e for e in events if e.problem is not None]
        data = [e.data.decode() if isinstance(e.data, bytes) else e.data for e in events if e.problem is None]
        assert data == ["x", "y"], events
        assert len(said) <= 1  # (the provider decoder says the first line of no field)
        if name == "ids":
            assert decoder.last_event_id == "1"
        per_chunk = 4 if name != "ids" or _sse._scan is not None else len(body)  # (Python: one call an id piece)
        assert calls["line"] <= 4 * len(chunks) + 8, (type(decoder).__name__, calls)
        assert calls["piece"] <= per_chunk * len(chunks) + 8, (type(decoder).__name__, calls)


def test_a_line_end_is_found_with_bytes_find_as_the_three_sse_line_ends_read() -> None:
    """The line parser found where a line a chunk before began ends with a regex of the three line ends, which
    looked at each byte in turn: a data line of 2 MB fed in 64 KiB chunks took 17 ms (0.2 ms fed whole). Now two
    ``find``, the CR's only up to the LF (8.5 ms): the same ends as the regex at every position (CRLF whole, a CR
    alone, a CR at the chunk's end), and one long line's event whole whatever its line end."""
    spec = re.compile(rb"\r\n|\r|\n")
    rng = random.Random(7)
    for _ in range(300):
        chunk = bytes(rng.choice(b"\r\nxx") for _ in range(rng.randint(0, 12)))
        for pos in range(len(chunk) + 1):
            found = spec.search(chunk, pos)
            assert _sse._line_end(chunk, pos) == (len(chunk) if found is None else found.end()), (chunk, pos)
    for eol in (b"\n", b"\r\n", b"\r"):
        body = b"data: " + b"x" * 300_000 + eol + eol + b"data: b" + eol + eol
        decoder = SSEDecoder()
        events = [e for i in range(0, len(body), 65536) for e in decoder.feed(body[i : i + 65536])]
        assert [len(e.data) for e in events] == [300_000, 1] and not decoder.close()


@pytest.mark.kernel_only
def test_an_event_name_or_id_past_ascii_anywhere_is_read_as_the_line_parser_reads_it() -> None:
    """The C scanner takes an event or id line only when its value is ASCII (looked at 8 bytes at a time, then a byte
    at a time): a value with a byte past ASCII at any place, in a word or in the bytes after the last, is left to
    the line parser, and read as it reads it (fed a byte at a time, it never takes the fast path)."""
    if _sse._scan is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")
    for size in range(20):
        for at in range(-1, size):
            value = b"v" * size if at < 0 else b"v" * at + "é".encode() + b"v" * (size - at - 1)
            for field in (b"event", b"id"):
                body = b"%s: %s\ndata: x\n\ndata: y\n\n" % (field, value)
                whole = [(e.data, e.event, e.id) for e in SSEDecoder().feed(body)]
                decoder = SSEDecoder()
                bytewise = [(e.data, e.event, e.id) for i in range(len(body)) for e in decoder.feed(body[i : i + 1])]
                assert whole == bytewise, body


def test_an_event_end_is_looked_for_from_the_first_lf() -> None:
    """event_end looked for ``\\n\\n`` and ``\\r\\n\\r\\n`` over the whole chunk, a find of two bytes or more that
    reads each byte (54 us per 64 KiB, memchr's 1 us): every chunk inside a long line paid it twice, 2.7 ms of a
    2 MB line's 8.5. Now from the chunk's first LF (none: no blank line, no search); the same ends."""
    spec = re.compile(rb"\n\n|\r\n\r\n")
    scanned: list[int] = []

    class Counted(bytes):
        def find(self, sub: Any, *args: Any) -> int:
            if len(sub) > 1:
                start = args[0] if args else 0
                scanned.append(len(self) - start)
            return super().find(sub, *args)

    assert _sse.event_end(Counted(b"x" * 65536)) == -1 and sum(scanned) == 0
    assert _sse.event_end(Counted(b"x" * 65536 + b"\r\n\r\n")) == 65540 and sum(scanned) <= 8
    rng = random.Random(11)
    for _ in range(2000):
        chunk = bytes(rng.choice(b"\r\nxx") for _ in range(rng.randint(0, 14)))
        found = spec.search(chunk)
        assert _sse.event_end(chunk) == (-1 if found is None else found.end()), chunk


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_a_data_line_split_across_chunks_is_held_once(eol: bytes) -> None:
    """A line a chunk before began was copied four times at its end (the held bytes, the line, its value, the data:
    2.5 ms per MB in 64 KiB chunks; the peak 4 times the line). Now the held bytes of the event's first data line
    become its data as they are: the line, and its text at the dispatch. The data is the same, whatever the line
    end, the chunks, and the data lines before and after it."""
    n = 4 << 20
    body = b"data: " + b"x" * n + eol + eol
    decoder = SSEDecoder()
    tracemalloc.start()
    try:
        events = [e for i in range(0, len(body), 65536) for e in decoder.feed(body[i : i + 65536])]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(len(e.data), e.problem) for e in events] == [(n, None)] and not decoder.close()
    assert peak < 2.5 * n, (peak, n)  # (4.0 times the line before, 2.0 now)
    # data lines before, between and after lines cut anywhere, a value cut in a UTF-8 sequence, no space after
    # ``data:``, lines over the limit and an event over it
    lines = [b"data: a", b"data:" + b"\xc3\xa9" * 40, b"data: " + b"y" * 100, b"data", b"id: 3", b"data:  z" * 9]
    rng = random.Random(5)
    for _ in range(300):
        body = b"".join(rng.choice(lines) + rng.choice([b"\n", b"\r\n", b"\r"]) for _ in range(rng.randint(1, 8)))
        body += eol + eol
        limit = rng.choice([None, 90, 300])
        whole = decode_all_limited([body], limit)
        cuts = sorted(rng.sample(range(len(body) + 1), min(len(body) + 1, rng.randint(1, 6))))
        pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        assert decode_all_limited(pieces, limit) == whole, (body, cuts, limit)
        assert decode_all_limited([body[i : i + 1] for i in range(len(body))], limit) == whole, (body, limit)


def decode_all_limited(chunks: list[bytes], limit: int | None) -> list[Any]:
    decoder = SSEDecoder(max_line_bytes=limit, max_event_bytes=limit)
    events = [e for chunk in chunks for e in decoder.feed(chunk)] + decoder.close()
    return [(e.id, e.event, e.data, e.problem and e.problem.rule) for e in events]


@pytest.mark.parametrize("fed", ["in chunks", "whole"])
def test_an_events_blank_line_is_looked_for_once_per_byte(fed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside an event the line parser looked for its blank line with a regular expression from each piece's start
    (4 ms per MB): over each chunk again after the chunk's blank line was looked for, and, fed whole, over the rest
    of the event at each window of data lines (16 MiB of short lines took 0.9 s, 4 MiB 0.08 s). Now the search
    goes on from where it stopped: the bytes read looking for blank lines are the body's, once. With CRLF line
    ends in chunks they were read twice: each chunk for its event's end (``event_end``, which reads LFs), then
    again by the line parser (a regular expression, a CR making a blank line of mixed line ends possible); now one
    search (``_blank_end``) finds every kind of blank line."""
    monkeypatch.setattr(_sse, "_RUN_WINDOW", 1 << 16)
    scanned, inside = [0], [False]

    def counted(finder: Any) -> Any:
        def find(chunk: bytes, *args: Any) -> int:
            if inside[0]:
                return int(finder(chunk, *args))  # (one finder calling another reads the bytes once)
            inside[0] = True
            try:
                found: int = finder(chunk, *args)
            finally:
                inside[0] = False
            scanned[0] += (found if found >= 0 else len(chunk)) - (args[0] if args else 0)
            return found

        return find

    blank_line = _sse._BLANK_LINE

    class Counted:
        def search(self, chunk: bytes, pos: int = 0, *args: Any) -> Any:
            found = blank_line.search(chunk, pos, *args)
            if not inside[0]:
                scanned[0] += (found.end() if found else args[0] if args else len(chunk)) - pos
            return found

    monkeypatch.setattr(_sse, "event_end", counted(_sse.event_end))
    monkeypatch.setattr(_sse, "_blank_end", counted(_sse._blank_end))
    monkeypatch.setattr(_sse, "_BLANK_LINE", Counted())
    for eol in (b"\n", b"\r\n"):
        line = b"data: 0123456789" + eol
        body = line * ((2 << 20) // len(line)) + eol + b"data: b" + eol + eol
        scanned[0] = 0
        decoder = SSEDecoder()
        size = 65536 if fed == "in chunks" else len(body)
        events = [e for i in range(0, len(body), size) for e in decoder.feed(body[i : i + size])]
        assert [len(e.data) for e in events] == [(2 << 20) // len(line) * 11 - 1, 1]
        assert scanned[0] <= len(body) * 1.05, (eol, scanned[0] / len(body))  # (CRLF in chunks: 2.0 before)


def test_a_blank_line_is_found_as_the_regular_expression_of_two_line_ends_finds_it() -> None:
    """``_blank_end`` (finds of the pairs LF LF, LF CR, CR CR) ends where :data:`_BLANK_LINE` (two line ends in a row,
    each LF, CRLF or CR) ends, from any position: every line end, mixed ones too."""
    rng = random.Random(17)
    for _ in range(20_000):
        chunk = bytes(rng.choice(b"\r\n\r\nxd") for _ in range(rng.randint(0, 14)))
        pos = rng.randint(0, len(chunk))
        found = _sse._BLANK_LINE.search(chunk, pos)
        assert _sse._blank_end(chunk, pos) == (-1 if found is None else found.end()), (chunk, pos)


@pytest.mark.differential
@pytest.mark.parametrize("windows", ["default", "small"])
@pytest.mark.parametrize("scanner", [c_only("C"), "Python"])
def test_a_body_in_random_chunks_decodes_as_fed_byte_by_byte(
    scanner: str, windows: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bodies of several random streams (LF, CRLF, CR and mixed line ends, comments, ids, retry fields, events of
    many data lines) cut into chunks of random sizes decode as fed one byte at a time with the fast paths off: each
    chunk between events, inside one, or ending anywhere (in a CRLF, after a blank line of a CR alone) takes the
    paths it takes in a live stream. "small": the windows of data runs and of decoding made a few bytes, so that
    small bodies take them. A failure names the seed (AGENTMSG_FUZZ_SEED=<seed> replays it)."""
    if windows == "small":
        monkeypatch.setattr(_sse, "_RUN_MIN", 16)
        monkeypatch.setattr(_sse, "_RUN_WINDOW", 64)
        monkeypatch.setattr(_sse, "_DECODE_AT", 8)
    fast = (_sse._scan, _sse._idle)
    if scanner == "Python":
        fast = (None, None)
    elif fast[0] is None:
        pytest.skip("agentmsg was built without its C speed-ups (no C compiler, or AGENTMSG_PURE_PYTHON)")

    def decode(pieces: list[bytes], limit: int | None) -> list[Any]:
        decoder = SSEDecoder(max_line_bytes=limit, max_event_bytes=limit)
        events = [e for p in pieces for e in decoder.feed(p)]
        last_id = decoder.last_event_id
        events += decoder.close()
        return [
            *((e.data, e.event, e.id, e.retry, e.problem and e.problem.rule) for e in events),
            last_id,
            decoder.retry,
        ]

    rng = random.Random(f"{SEED}/sse-chunks/{scanner}/{windows}")
    for round_ in rounds(120, share=0.25):
        body = b"".join(_sse_body(rng) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.2:  # an event of many data lines
            eol, space = rng.choice([b"\n", b"\r\n", b"\r"]), rng.choice([b" ", b"", None])
            for _ in range(rng.randint(1, 300)):  # (each line with a space, none, or either)
                body += (
                    b"data:"
                    + (rng.choice([b" ", b"  ", b""]) if space is None else space)
                    + b"x" * rng.randint(0, 9)
                    + eol
                )
            body += rng.choice([eol, b"\r\n" + eol, b"x" + eol + eol])
        limit = rng.choice([None, None, 30, 200])
        monkeypatch.setattr(_sse, "_scan", None)
        monkeypatch.setattr(_sse, "_idle", None)
        bytewise = decode([body[i : i + 1] for i in range(len(body))], limit)
        monkeypatch.setattr(_sse, "_scan", fast[0])
        monkeypatch.setattr(_sse, "_idle", fast[1])
        pieces, at = [], 0
        while at < len(body):
            size = rng.choice([1, 2, 3, 7, 16, 64, 1024, rng.randint(1, 200)])
            pieces.append(body[at : at + size])
            at += size
        assert decode(pieces, limit) == bytewise, (f"AGENTMSG_FUZZ_SEED={SEED}, round {round_ + 1}", body, pieces)


@pytest.mark.parametrize("eol", [b"\n", b"\r\n"])
def test_a_run_of_data_lines_that_begin_alike_is_read_with_one_replace(eol: bytes) -> None:
    """A run of data lines was read with three replaces of its bytes (CRLF to LF, ``\\ndata:``, ``\\n ``): 0.23 s of
    the 0.36 s 32 MiB of 10-byte lines took. When each line after the first begins alike (its line end, ``data:``,
    a space or none), ``_run_end`` says so and one replace reads them; lines that begin otherwise (a space in some,
    or LF and CRLF mixed) are read as before. The data is the same either way."""
    decoder = SSEDecoder()
    for space, told in ((b" ", True), (b"", True), (None, False)):
        lines = [b"data:" + (space if space is not None else b" " * (k % 2)) + b"v%d" % k + eol for k in range(200)]
        chunk = b"".join(lines)
        stop, head, _ = decoder._run_end(_sse.data_run(1000) or re.compile(b""), chunk, 0, len(chunk), 0)
        assert stop == len(chunk)
        assert head == ((eol + b"data:" + space) if told and space is not None else None), (eol, space)
        body = chunk + eol
        (event,) = SSEDecoder().feed(body)
        assert event.data == "\n".join(line.removesuffix(eol)[5:].removeprefix(b" ").decode() for line in lines), (
            eol,
            space,
        )
    mixed = b"data: a\r\n" + b"data: b\n" * 10
    assert decoder._run_end(_sse.data_run(1000) or re.compile(b""), mixed, 0, len(mixed), 0)[:2] == (len(mixed), None)


@pytest.mark.parametrize("bad", [None, 1, "data: x\n\n", ["data: x"]])
def test_sniff_format_refuses_what_is_not_bytes(bad: Any) -> None:
    """sniff_format (and agentmsg.events.sniff_format, the same) given None, an int or a str raised a bare
    TypeError from len() or a concatenation; now a ValidationError naming the argument."""
    for sniff_format in (_sse.sniff_format, agentmsg.events.sniff_format):
        with pytest.raises(agentmsg.ValidationError) as info:
            sniff_format(bad)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/head", "type")]


@pytest.mark.parametrize("bad", [None, 1, [b"data: x\n\n"], 2.5])
def test_the_decoder_refuses_a_chunk_that_is_neither_str_nor_bytes(bad: Any) -> None:
    """``SSEDecoder().feed(None)`` raised a bare TypeError from bytes(), and ``feed(1)`` read bytes(1), one NUL
    byte, and returned no event, silently; both are a ValidationError now, and the decoder reads on."""
    decoder = SSEDecoder()
    with pytest.raises(agentmsg.ValidationError) as info:
        decoder.feed(bad)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/chunk", "type")]
    assert [e.data for e in decoder.feed(b"data: x\n\n")] == ["x"]


def _field_runs() -> list[bytes]:
    """Bodies of a long run of field lines with no blank line (ids, event names, comments, unknown fields, with LF
    and CRLF line ends), then events."""
    runs = [b"id: 1\n", b"event: x\n", b"id: 2\r\n", b"id: 1\n: c\n", b"idx: 1\n", b"id: 3\nevent: y\n", b"id\n"]
    tail = b"data: a\n\nid: 7\nid: 8\n\ndata: b\n\nid: 9\n"
    return [run * 2000 + (tail.replace(b"\n", b"\r\n") if b"\r" in run else tail) for run in runs]


@pytest.mark.differential
@pytest.mark.parametrize("decoder", ["SSEDecoder", "JSONDataDecoder", "provider", "events"])
def test_a_run_of_id_lines_is_read_at_once_and_alike_in_c_and_python(
    decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million ``id:`` lines with no blank line, fed in 64 KiB chunks to the event stream reader, took 1.4 s with
    the C scanner and 1.7 s without: between events an id line leaves nothing pending, so the line parser read
    each alone, a call each (0.7 s now, both). Now an id line and those after it up to the blank line or the next data line are read at once, as
    inside an event. Whole, in chunks of 1000 bytes and byte by byte, with the C scanner and without, the events
    and the last event id are the same; and the lines are not read one call each."""
    from agentmsg._wire.framing import _ProviderSSE
    from agentmsg.events.stream import _EventSSE

    cls: Any = {"SSEDecoder": SSEDecoder, "JSONDataDecoder": JSONDataDecoder, "provider": _ProviderSSE}.get(
        decoder, _EventSSE
    )
    calls = 0
    read_lines = cls._read_lines

    def counted(self: Any, chunk: bytes, out: list[SSEEvent]) -> None:
        nonlocal calls
        calls += 1
        read_lines(self, chunk, out)

    def decode(pieces: list[bytes]) -> list[Any]:
        d = cls()
        events = [e for p in pieces for e in d.feed(p)] + d.close()
        data = [e.data.decode() if isinstance(e.data, bytes) else e.data for e in events]
        return [*zip(data, [e.event for e in events], [e.id for e in events], strict=True), d.last_event_id]

    for body in _field_runs():
        got = {}
        for scanner in ("C", "Python") if _sse._scan is not None else ("Python",):
            with monkeypatch.context() as m:
                if scanner == "Python":
                    m.setattr(_sse, "_scan", None)
                    m.setattr(_sse, "_idle", None)
                m.setattr(cls, "_read_lines", counted)
                calls = 0
                got[scanner] = decode([body])
                if body.startswith(b"id"):
                    assert calls < 20, (scanner, body[:20], calls)  # (2000 before)
                assert decode([body[i : i + 1000] for i in range(0, len(body), 1000)]) == got[scanner], scanner
        assert got["Python"] == decode([body[i : i + 1] for i in range(len(body))]), body[:20]
        assert got.get("C", got["Python"]) == got["Python"], body[:20]


# ---- field lines between events, fuzzed (the id-run read of 2d239867) --------------------------------------

_FIELD_LINES = [
    b"id: 1", b"id:2", b"id: ", b"id", b"id: a\x00b", b"id: \xc3\xa9", b"idx: 1", b"id : 3", b"ID: 4",
    b"event: x", b"event:", b"event", b"retry: 150", b"retry: x", b"retry:", b": comment", b":", b"",
    b"data: a", b"data:", b"data", b'data: {"k": 1}', b"data: \xff", b"field: ignored", b'{"raw": 1}',
]  # fmt: skip
_EOLS = [b"\n", b"\r\n", b"\r"]
_DECODERS = ["SSEDecoder", "JSONDataDecoder", "provider", "events"]


def _decoder_class(name: str) -> Any:
    from agentmsg._wire.framing import _ProviderSSE
    from agentmsg.events.stream import _EventSSE

    return {"SSEDecoder": SSEDecoder, "JSONDataDecoder": JSONDataDecoder, "provider": _ProviderSSE}.get(name, _EventSSE)


@st.composite
def _field_bodies(draw: st.DrawFn) -> bytes:
    """A body of random field lines (ids, event names, retries, data, comments, unknown fields, runs of each), each
    ended by LF, CR or CRLF (one for the body, or one per line)."""
    eol = draw(st.sampled_from([*_EOLS, None]))
    lines = draw(
        st.lists(st.sampled_from(_FIELD_LINES) | st.sampled_from(_FIELD_LINES).map(lambda x: x * 2), max_size=40)
    )
    runs = draw(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 60)), max_size=2))
    for at, n in runs:  # (a run of one line: the id run 2d239867 reads at once)
        lines[at:at] = [lines[at % len(lines)] if lines else b"id: 5"] * n
    return b"".join(line + (eol or draw(st.sampled_from(_EOLS))) for line in lines) + draw(
        st.sampled_from([b"", b"\n", b"\r\n\r\n", b"data: end\n\n"])
    )


def _decoded(cls: Any, pieces: list[bytes], fast: bool) -> list[Any]:
    saved = _sse._scan, _sse._idle
    if not fast:
        _sse._scan, _sse._idle = None, None
    try:
        d = cls()
        events = [e for p in pieces for e in d.feed(p)]
        last_id = d.last_event_id
        events += d.close()
    finally:
        _sse._scan, _sse._idle = saved
    data = [e.data.decode("utf-8", "replace") if isinstance(e.data, bytes) else e.data for e in events]
    kept = [(e.event, e.id, e.retry, e.problem and e.problem.rule) for e in events]
    return [*zip(data, kept, strict=True), last_id, d.last_event_id, d.retry]


@pytest.mark.fuzz
@pytest.mark.differential
@pytest.mark.parametrize("decoder", _DECODERS)
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_field_bodies(), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_field_lines_between_events_decode_alike_however_fed_in_c_and_python(
    decoder: str, body: bytes, cuts: list[int]
) -> None:
    """Random field lines (runs of ids, event names, retries, data and comments; LF, CR and CRLF, one per body or
    per line), fed whole, at random cuts and byte by byte, with the C scanner and without: the same events (data,
    name, id, retry, problem), the same last event id, before close and after, and the same decoder's retry, for each
    of the four decoders."""
    cls = _decoder_class(decoder)
    points = sorted({c % (len(body) + 1) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    want = _decoded(cls, [body], fast=False)
    assert _decoded(cls, [body[i : i + 1] for i in range(len(body))], fast=False) == want, body
    for fast in (False, True) if _sse._scan is not None else (False,):
        assert _decoded(cls, [body], fast) == want, (fast, body)
        assert _decoded(cls, pieces, fast) == want, (fast, body, pieces)


@pytest.mark.parametrize(
    ("limits_given", "pointer", "rule"),
    [
        ({"max_line_bytes": -5}, "/max_line_bytes", "minimum"),
        ({"max_event_bytes": -1}, "/max_event_bytes", "minimum"),
        ({"max_event_bytes": 2**70}, "/max_event_bytes", "maximum"),
        ({"max_line_bytes": "x"}, "/max_line_bytes", "type"),
        ({"max_event_bytes": 1.5}, "/max_event_bytes", "type"),
        ({"max_line_bytes": True}, "/max_line_bytes", "type"),
    ],
)
def test_a_decoders_limit_that_cannot_be_is_a_validation_error(
    limits_given: dict[str, Any], pointer: str, rule: str
) -> None:
    """A negative limit dropped every line as over it, with no problem said; one past 2**63 raised OverflowError
    at the first chunk; a str or a float a bare TypeError: each is the SDK's ValidationError at its name now. 0 and
    None stay the default (a conformance vector)."""
    with pytest.raises(agentmsg.ValidationError) as info:
        SSEDecoder(**limits_given)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    for fine in (0, None, 1 << 62):
        assert [e.data for e in SSEDecoder(max_line_bytes=fine, max_event_bytes=fine).feed(b"data: 1\n\n")] == ["1"]


def test_a_retry_of_more_digits_than_python_writes_is_refused_as_the_sdk_s_error() -> None:
    """``encode_event(retry=...)`` past Python's int string limit (4,300 digits) raised a bare ValueError from the
    f-string: ValidationError, rule integer-range at /retry, now; below it, the digits."""
    with pytest.raises(agentmsg.ValidationError) as info:
        _sse.encode_event("x", retry=10**5000)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/retry", "integer-range")]
    assert _sse.encode_event("x", retry=10**4299) == f"retry: {10**4299}\ndata: x\n\n"


@pytest.mark.parametrize(("retry", "rule"), [(True, "type"), (1.5, "type"), ("250", "type"), (-1, "minimum")])
def test_a_retry_no_sse_reader_reads_is_refused(retry: Any, rule: str) -> None:
    """A retry field is ASCII digits (the SSE spec; SSEDecoder reads it so): ``encode_event(retry=True)`` wrote
    ``retry: True`` and ``retry=-1`` ``retry: -1``, each read by no client. Now ValidationError at /retry; 0 and
    more are their digits."""
    with pytest.raises(agentmsg.ValidationError) as info:
        _sse.encode_event("x", retry=retry)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/retry", rule)]
    assert _sse.encode_event("x", retry=0) == "retry: 0\ndata: x\n\n"
    assert [e.retry for e in SSEDecoder().feed(_sse.encode_event("x", retry=1500))] == [1500]


def test_a_limit_set_between_chunks_bounds_the_next_chunk() -> None:
    """feed's fast path scans with a scanner made once with the decoder's limits (SSEScanner, not sse_scan's ten
    arguments per chunk): a limit set after a chunk was read still bounds the next one, as the line parser's does."""
    decoder = SSEDecoder()
    assert [e.data for e in decoder.feed(b"data: " + b"x" * 40 + b"\n\n")] == ["x" * 40]
    decoder.max_line_bytes = 20
    (event,) = decoder.feed(b"data: " + b"y" * 40 + b"\n\n")
    assert event.data == "" and event.problem is not None and event.problem.rule == "max-line-bytes"
    decoder.max_line_bytes = 100
    decoder.max_event_bytes = 10
    (event,) = decoder.feed(b"data: " + b"z" * 40 + b"\n\n")
    assert event.data == "" and event.problem is not None and event.problem.rule == "max-event-bytes"
    assert [e.data for e in decoder.feed(b"data: short\n\n")] == ["short"]


@pytest.mark.parametrize(
    "body",
    [
        b"data: x\r\r" * 20_000,  # CR line ends: no LF anywhere
        b"data: x\n\n" * 20_000 + b": one CR at the end\r\n\r\n",  # LF events, one CR far after them
        (b"data: x\n" + b": c\n") * 20_000 + b"\n",  # one event of data lines, a comment between each two
        (b"data: x\n" + b"id: 1\n") * 10_000 + b"data: y\r" * 10_000 + b"\n\n",
    ],
    ids=["cr-lines", "one-far-cr", "interleaved-comments", "interleaved-ids-then-cr"],
)
def test_a_body_read_line_by_line_is_searched_in_work_linear_in_it(
    body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line ends were looked for from each line to the chunk's end (an LF in a stream of CR lines, a CR that comes
    once, a megabyte on), and each data line among other lines of one event had the window of data lines after it
    counted again (1 MiB each): 3.6 MB of CR lines took 11 s, 480 kB of data lines and comments 19 s. The bytes
    the line-end searches read (``_Ends``), and those ``_run_end`` searches and counts, are now at most a few times
    the body's, whatever its lines (each search's bytes counted as it runs: no clock)."""
    scanned = [0, 0]  # bytes searched for a line end; bytes of data-line windows searched or counted

    class Searched:
        """A chunk whose searches count the bytes they read (into ``scanned[k]``)."""

        def __init__(self, chunk: bytes, k: int) -> None:
            self.chunk, self.k = chunk, k

        def _span(self, start: int, stop: int | None) -> None:
            scanned[self.k] += (len(self.chunk) if stop is None else stop) - start

        def find(self, sub: bytes, start: int, stop: int | None = None) -> int:
            found = self.chunk.find(sub, start, *(() if stop is None else (stop,)))
            self._span(start, (found + len(sub)) if found >= 0 else stop)
            return found

        def rfind(self, sub: bytes, start: int, stop: int) -> int:
            found = self.chunk.rfind(sub, start, stop)
            self._span(found if found >= 0 else start, stop)
            return found

        def count(self, sub: bytes, start: int, stop: int) -> int:
            self._span(start, stop)
            return self.chunk.count(sub, start, stop)

        def __getitem__(self, at: Any) -> Any:
            return self.chunk[at]

    class Ends(_sse._Ends):
        def __init__(self, chunk: bytes) -> None:
            super().__init__(chunk)
            self.chunk = Searched(chunk, 0)  # type: ignore[assignment]

    class Runs:
        def __init__(self, runs: re.Pattern[bytes]) -> None:
            self.runs = runs

        def match(self, chunk: Searched, pos: int, stop: int) -> Any:
            return self.runs.match(chunk.chunk, pos, stop)

    run_end = SSEDecoder._run_end

    def counted(self: SSEDecoder, runs: Any, chunk: bytes, pos: int, limit: int, mixed: int) -> Any:
        return run_end(self, Runs(runs), Searched(chunk, 1), pos, limit, mixed)  # type: ignore[arg-type]

    monkeypatch.setattr(_sse, "_Ends", Ends)
    monkeypatch.setattr(SSEDecoder, "_run_end", counted)
    for scanner in ((_sse._scan, _sse._idle), (None, None)):
        monkeypatch.setattr(_sse, "_scan", scanner[0])
        monkeypatch.setattr(_sse, "_idle", scanner[1])
        scanned[:] = [0, 0]
        decoder = SSEDecoder()
        events = decoder.feed(body) + decoder.close()
        assert events and all(e.problem is None for e in events)
        assert scanned[0] <= 3 * len(body) and scanned[1] <= 8 * len(body), (scanned, len(body))
