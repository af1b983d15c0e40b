"""Provider body framing (``agentmsg._wire.framing``'s ``Framer``): what the SSE decoder and the line splitter
report reaches the events as problems (nothing changed or dropped silently), bodies saved as JSON values, with
their HTTP head or without their blank lines read as their SSE, and a long line costs work linear in its length
(counted, never timed)."""

from __future__ import annotations

import itertools
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import limits
from agentmsg.providers import dashscope, gemini, get, openai
from tests._support.budget import examples
from tests._support.providers import _write, every_choice, reduce_ok, sse_payloads
from tests.conftest import ROOT

OPENAI_CHUNK = {"id": "chatcmpl-x", "object": "chat.completion.chunk", "model": "m"}


def text_chunk(text: str, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    return orjson.dumps({**OPENAI_CHUNK, "choices": [choice]})


def sse(*payloads: bytes) -> bytes:
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


def parsed(body: bytes | list[bytes], mod: Any = openai) -> tuple[agentmsg.AssistantMessage, list[tuple[str, str]]]:
    """The message and the (rule, message) of every problem event; the events are valid and reduce cleanly."""
    events = list(mod.parse_stream(body))
    msg = reduce_ok(events)
    problems = [(e["value"]["rule"], e["value"]["message"]) for e in events if e.get("name") == "agentmsg.problem"]
    return msg, problems


def test_invalid_utf8_in_sse_data_is_reported_and_the_payload_kept() -> None:
    body = sse(text_chunk("caf\u00e9").replace("\u00e9".encode(), b"\xe9"), text_chunk(" ok", finish="stop"))
    assert b"\xe9" in body
    msg, problems = parsed(body)
    assert msg.text_content == "caf\ufffd ok"
    assert [rule for rule, _ in problems] == ["utf-8"]
    assert "payload kept" in problems[0][1]


def test_invalid_utf8_in_a_json_line_is_reported_and_the_line_kept() -> None:
    line = orjson.dumps({"output": {"text": "caf\u00e9", "finish_reason": "stop"}, "request_id": "r"})
    body = line.replace("\u00e9".encode(), b"\xe9") + b"\n"
    msg, problems = parsed(body, dashscope)
    assert msg.text_content == "caf\ufffd"
    assert [rule for rule, _ in problems] == ["utf-8"]


@pytest.mark.parametrize("pieces", [1, 7, 1000])
def test_a_json_line_body_with_a_bom_in_any_chunking(pieces: int) -> None:
    body = b"\xef\xbb\xbf\n" + orjson.dumps({"output": {"text": "hi", "finish_reason": "stop"}, "request_id": "r"})
    chunks = [body[i : i + pieces] for i in range(0, len(body), pieces)]
    msg, problems = parsed(chunks, dashscope)
    assert msg.text_content == "hi" and problems == []  # a last line without its newline is taken when whole


def test_oversize_sse_line_and_event_are_reported_and_the_rest_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "max_event_bytes", 200)
    long_line = text_chunk("x" * 300)
    long_event = b"data: " + text_chunk("y" * 100)[:100] + b"\ndata: " + text_chunk("y" * 100)[100:] + b"\n\n"
    body = sse(text_chunk("a")) + sse(long_line) + long_event + sse(text_chunk("b", finish="stop"))
    msg, problems = parsed([body[i : i + 64] for i in range(0, len(body), 64)])
    assert msg.text_content == "ab"
    assert [rule for rule, _ in problems] == ["max-line-bytes", "max-event-bytes"]


def test_oversize_json_line_is_reported_and_the_rest_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "max_event_bytes", 200)

    def line(text: str, finish: str = "null") -> bytes:
        return orjson.dumps({"output": {"text": text, "finish_reason": finish}, "request_id": "r"}) + b"\n"

    body = line("a") + line("x" * 300) + line("b", "stop")
    msg, problems = parsed([body[i : i + 50] for i in range(0, len(body), 50)], dashscope)
    assert msg.text_content == "ab"
    assert [rule for rule, _ in problems] == ["max-event-bytes"]


def test_a_stream_cut_inside_an_event_is_incomplete_not_a_json_error() -> None:
    whole = sse(text_chunk("Hello"), text_chunk(" world", finish="stop"))
    cut = whole[: whole.index(b"world") + 2]
    events = list(openai.parse_stream(cut))
    (msg,) = agentmsg.reduce_events(events)
    assert msg.text_content == "Hello" and msg.generate_reason.value == "INTERRUPTED"
    problems = [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"]
    assert problems == ["incomplete"]
    assert [e["type"] for e in msg.metadata["agentmsg_errors"]] == ["incomplete_stream"]
    # A last event that is whole but lacks its blank line (bodies saved from docs) is taken as it is.
    msg, problems = parsed(whole.rstrip(b"\n"))
    assert msg.text_content == "Hello world" and problems == []


def test_a_json_line_body_cut_inside_its_last_line() -> None:
    body = orjson.dumps({"output": {"text": "a", "finish_reason": "null"}, "request_id": "r"}) + b'\n{"output": {"te'
    events = list(dashscope.parse_stream(body))
    (msg,) = agentmsg.reduce_events(events)
    assert msg.text_content == "a" and msg.generate_reason.value == "INTERRUPTED"
    assert [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"] == ["incomplete"]


class Counted(bytes):
    """A chunk that counts the bytes each search or concatenation involving it has to go through."""

    work = 0

    def find(self, *args: Any) -> int:
        Counted.work += len(self)
        return super().find(*args)

    def rfind(self, *args: Any) -> int:
        Counted.work += len(self)
        return super().rfind(*args)

    def __add__(self, other: Any) -> bytes:
        Counted.work += len(self) + len(other)
        return super().__add__(other)

    def __radd__(self, other: Any) -> bytes:
        if isinstance(other, bytearray):
            return NotImplemented  # ``buffer += chunk``: let the bytearray extend itself (amortized linear)
        Counted.work += len(self) + len(other)
        return bytes(other) + bytes(self)


@pytest.mark.parametrize("mod", [openai, dashscope], ids=["sse", "jsonl"])
def test_a_long_line_costs_work_linear_in_its_length(mod: Any) -> None:
    """A 1 MiB payload fed in 1 KiB chunks: the bytes searched and copied stay a small multiple of the
    body (buffering by ``rest + chunk`` was quadratic: about 500 MiB here)."""
    text = "word " * (1 << 18)
    if mod is openai:
        body = sse(text_chunk(text, finish="stop"))
    else:
        body = orjson.dumps({"output": {"text": text, "finish_reason": "stop"}, "request_id": "r"}) + b"\n"
    Counted.work = 0
    chunks = [Counted(body[i : i + 1024]) for i in range(0, len(body), 1024)]
    msg, problems = parsed(chunks, mod)  # type: ignore[arg-type]
    assert msg.text_content == text and problems == []
    assert Counted.work <= 4 * len(body), (Counted.work, len(body))


def test_a_body_that_is_neither_sse_nor_json_is_reported_not_skipped() -> None:
    """A body whose first line is no SSE field and starts no JSON value (an error page) is read as SSE, whose
    lines of no field are said (the first of them shown), not ignored in silence; the reply is cut."""
    body = b"<html>\n<body>502 Bad Gateway</body>\n</html>\n"
    events = list(openai.parse_stream([body[i : i + 3] for i in range(0, len(body), 3)]))
    problems = [e["value"] for e in events if e.get("name") == "agentmsg.problem"]
    assert [p["rule"] for p in problems] == ["sse"] and "<html>" in problems[0]["message"]
    (msg,) = agentmsg.reduce_events(events)
    assert msg.generate_reason.value == "INTERRUPTED"


def test_a_stray_first_line_does_not_lose_the_events_after_it() -> None:
    # a banner line before the events: the body was read as JSON lines, each data: line "not JSON", the reply lost
    for head in (b"OK\n\n", b"\xef\xbb\xbf \nInternal note\n"):
        body = head + sse(text_chunk("hi", finish="stop"))
        for size in (1, 3, len(body)):
            events = list(openai.parse_stream([body[i : i + size] for i in range(0, len(body), size)]))
            assert [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"] == ["sse"]
            (msg,) = agentmsg.reduce_events(events)
            assert msg.text_content == "hi" and msg.generate_reason.value == "MODEL_STOP"


@pytest.mark.parametrize("size", [1, 2, 5])
def test_sse_after_blanks_and_a_bom_in_any_chunking(size: int) -> None:
    body = b"\xef\xbb\xbf\r\n\n" + sse(text_chunk("hi", finish="stop"))
    msg, problems = parsed([body[i : i + size] for i in range(0, len(body), size)])
    assert msg.text_content == "hi" and problems == []


def test_a_held_body_start_is_looked_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the framer holds before it can tell the format (an HTTP head up to its blank line, ``{`` and
    blanks up to the next byte) is not searched again with each chunk: fed a byte at a time, the bytes
    searched stay a small multiple of the input (both are bounded by 64 KiB, and were quadratic within it)."""
    from agentmsg._wire import framing as _framing
    from agentmsg._wire import sse as _sse
    from agentmsg._wire import values as _values

    seen = [0]

    def counting(fn: Any) -> Any:
        def wrapper(data: bytes) -> Any:
            seen[0] += len(data)
            return fn(data)

        return wrapper

    # (each counted where it is called, wrapping the function its module defines)
    monkeypatch.setattr(_framing, "event_end", counting(_sse.event_end))
    monkeypatch.setattr(_sse, "starts_values", counting(_values.starts_values))  # (the framer's and the events')
    head = b"HTTP/1.1 200 OK\r\n" + b"x-header: value\r\n" * 2000 + b"\r\n"
    pretty = b"{" + b" " * 30_000 + b"\n" + b'"id": "c", "choices": []}'
    for body in (head + sse(text_chunk("hi", finish="stop")), pretty):
        seen[0] = 0
        parser = openai.StreamParser()
        for k in range(len(body)):
            parser.feed(body[k : k + 1])
        parser.close()
        assert seen[0] <= 4 * len(body), seen[0]
    seen[0] = 0
    reduce_stream_bytewise = agentmsg.reduce_stream(iter([pretty[k : k + 1] for k in range(len(pretty))]))
    assert reduce_stream_bytewise == [] and seen[0] <= 4 * len(pretty)


@pytest.mark.parametrize("shape", ["array-pretty", "array-compact", "gemini", "objects"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope"])
def test_a_recorded_stream_saved_as_json_values_reads_as_its_sse(provider: str, shape: str) -> None:
    """A stream saved as a JSON array of its payloads (Gemini's own format without ``alt=sse``, or a list of
    chunks dumped by a script) or as pretty-printed payloads one after another gives the message its SSE
    gives, in any chunking."""
    fixtures = ROOT / "tests" / "fixtures" / "providers"
    names = {"openai": "openai/stream_parallel_tool_calls.sse", "anthropic": "anthropic/stream_docs_tool_use.sse"}
    names |= {
        "gemini": "gemini/stream_function_call_partial_args.sse",
        "dashscope": "dashscope/native_stream_text_docs.sse",
    }
    sse_body = (fixtures / names[provider]).read_bytes()
    payloads = [p for _, p in sse_payloads(sse_body)]
    mod = get(provider)
    want = every_choice(list(mod.parse_stream(sse_body)))
    body = _write(payloads, shape)
    for size in (len(body), 7, 1):
        events = list(mod.parse_stream([body[k : k + size] for k in range(0, len(body), size)]))
        assert [e for e in events if e["type"] == "CUSTOM"] == []
        assert every_choice(events) == want


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "dashscope"])
def test_a_stream_captured_with_its_http_head_reads_as_its_body(provider: str, tmp_path: Path) -> None:
    """``curl -i`` saves the response head (status line, headers, a blank line; an interim ``100 Continue``
    head first) before the body: the heads are left out and said as not kept (one note each, with the
    status line), whatever the chunking; the message is the body's. ``agentmsg parse`` exits 0 on it."""
    from agentmsg.cli import main

    fixtures = ROOT / "tests" / "fixtures" / "providers"
    names = {"openai": "openai/stream_single_tool_call.sse", "anthropic": "anthropic/stream_sdk_basic.sse"}
    names |= {"gemini": "gemini/stream_text.sse", "dashscope": "dashscope/native_stream_text_docs.sse"}
    sse_body = (fixtures / names[provider]).read_bytes()
    mod = get(provider)
    want = every_choice(list(mod.parse_stream(sse_body)), notes=False)
    heads = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/2 200 \r\ncontent-type: text/event-stream\r\nx-request-id: r1\r\n\r\n"
    body = heads + sse_body
    for size in (len(body), 1, 5, 64):
        events = list(mod.parse_stream([body[k : k + size] for k in range(0, len(body), size)]))
        assert every_choice(events, notes=False) == want
        said = [(e["name"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"]
        assert said == [
            ("agentmsg.not-kept", "the body starts with an HTTP response head ('HTTP/1.1 100 Continue'): left out"),
            ("agentmsg.not-kept", "the body starts with an HTTP response head ('HTTP/2 200'): left out"),
        ]
    path = tmp_path / "captured.txt"
    path.write_bytes(body)
    assert main(["parse", "--provider", provider, "--stream", str(path)]) == 0


def test_an_error_response_captured_with_its_head_is_the_providers_error() -> None:
    body = (
        b'HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\r\n{"error": {"message": "slow down"}}\n'
    )
    events = list(openai.parse_stream(body))
    said = [(e["name"], e["value"]["message"]) for e in events if e["type"] == "CUSTOM"]
    assert said[0] == ("agentmsg.error", "slow down")
    assert said[1][1].startswith("the body starts with an HTTP response head ('HTTP/1.1 429 Too Many Requests')")
    # what only looks like the start of a head is the body
    for odd in (b"HTTP", b"HTTPS is not a head\n", b"HTTP/1.1 200 OK\r\n"):
        _, problems = parsed(odd)
        assert problems and odd.split(b"\r")[0].split(b"\n")[0].decode()[:10] in problems[0][1]


_SSE_FIXTURES = sorted((ROOT / "tests" / "fixtures" / "providers").glob("*/*.sse"))


def _provider_of(path: Path) -> str:
    provider = path.parent.name
    return "openai" if provider == "dashscope" and path.name.startswith("compat_") else provider


@pytest.mark.fuzz
@settings(max_examples=examples(120), deadline=None)
@given(
    st.sampled_from(_SSE_FIXTURES),
    st.sampled_from(["sse", "array-pretty", "array-compact", "gemini", "objects", "jsonl"]),
    st.sampled_from([b"", b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n", b"\xef\xbb\xbf", b"\n\n"]),
    st.lists(st.integers(0, 1 << 16), max_size=10),
)
def test_every_framing_of_a_recorded_stream_gives_its_message(
    path: Path, shape: str, head: bytes, cuts: list[int]
) -> None:
    """A recorded stream, framed as SSE, JSON lines, a JSON array (compact, pretty, Gemini's own) or pretty
    payloads, after an HTTP head, a BOM or blank lines, and cut anywhere: the messages of the SSE as
    recorded, and nothing said but the head left out."""
    provider = _provider_of(path)
    mod = get(provider)
    sse_body = path.read_bytes()
    want = list(mod.parse_stream(sse_body))
    if shape == "sse":
        body = sse_body
    else:
        payloads = [p for _, p in sse_payloads(sse_body)]
        body = b"\n".join(orjson.dumps(p) for p in payloads) + b"\n" if shape == "jsonl" else _write(payloads, shape)
    if head.startswith(b"\xef") and shape != "sse" and not body.startswith((b"[", b"{")):
        head = b""
    body = head + body
    bounds = [0, *sorted(c % (len(body) + 1) for c in cuts), len(body)]
    got = list(mod.parse_stream([body[a:b] for a, b in itertools.pairwise(bounds)]))
    assert every_choice(got, notes=False) == every_choice(want, notes=False)
    said = [(e["name"], e["value"]["rule"]) for e in got if e["type"] == "CUSTOM"]
    expected = [(e["name"], e["value"]["rule"]) for e in want if e["type"] == "CUSTOM"]
    if head.startswith(b"HTTP"):
        expected.append(("agentmsg.not-kept", "not-kept"))
    assert sorted(said) == sorted(expected)


@pytest.mark.parametrize("path", _SSE_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sse_saved_without_its_blank_lines_is_read_payload_by_payload(path: Path) -> None:
    """SSE with the blank lines between events taken out (a hand-edited file) is, as the spec reads it, one
    event whose data lines are joined: no JSON, and everything was lost (as it is for the SDKs' decoders).
    When each line of that data is a JSON object (or ``[DONE]``), they are read one by one and said once
    (problem ``sse``): the recorded message, whatever the chunking."""
    mod = get(_provider_of(path))
    recorded = path.read_bytes()
    stripped = b"\n".join(line for line in recorded.replace(b"\r\n", b"\n").split(b"\n") if line.strip()) + b"\n"
    want = every_choice(list(mod.parse_stream(recorded)), notes=False)
    for size in (len(stripped), 7):
        events = list(mod.parse_stream([stripped[k : k + size] for k in range(0, len(stripped), size)]))
        assert every_choice(events, notes=False) == want
        said = [(e["name"], e["value"]["rule"]) for e in events if e["type"] == "CUSTOM"]
        expected = [(e["name"], e["value"]["rule"]) for e in mod.parse_stream(recorded) if e["type"] == "CUSTOM"]
        payloads = [ln for ln in recorded.splitlines() if ln.startswith(b"data:")]
        if len(payloads) > 1:
            expected.append(("agentmsg.problem", "sse"))
        assert sorted(said) == sorted(expected)


def data_event(payload: Any) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def test_a_json_value_on_many_short_lines_of_no_sse_field_holds_its_bytes() -> None:
    """A JSON value sent on lines of no SSE field (Gemini's error after the events) was held as a bytes object per
    line: 16 times the body for a value of many short lines. Now its bytes; the value read as before."""
    n = 50_000  # (in 8 KiB chunks: what a chunk costs stays small beside the body, traced at a quarter of the work)
    items = b"".join(b'"%d",\n' % (i % 10) for i in range(n))
    body = data_event({"candidates": [{"content": {"parts": [{"text": "a"}]}}]}) + b'{"error": {"details": [\n' + items
    parser, events = gemini.StreamParser(), []
    tracemalloc.start()
    try:
        for i in range(0, len(body), 8192):
            events += parser.feed(body[i : i + 8192])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(body), (peak, len(body))  # (9.4 times the body before, 1.4 times now)
    events += parser.feed(b'""], "code": 500, "message": "boom", "status": "INTERNAL"}}\n') + parser.close()
    (msg,) = agentmsg.reduce_events(events)
    assert msg.text_content == "a" and msg.generate_reason.value == "INTERRUPTED"
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["boom"]


@pytest.mark.parametrize("provider", agentmsg.providers.NAMES)
def test_a_body_that_is_no_body_is_a_validation_error(provider: str) -> None:
    """parse_stream(None) raised a bare TypeError ('NoneType' object is not iterable) from inside the parser."""
    for body in (None, 7):
        with pytest.raises(agentmsg.ValidationError) as info:
            list(get(provider).parse_stream(body))  # type: ignore[arg-type]
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("", "type") and type(body).__name__ in problem.message
    empty = [e["type"] for e in get(provider).parse_stream([])]  # an iterable of chunks is a body
    assert empty == [e["type"] for e in get(provider).parse_stream(b"")]


@pytest.mark.parametrize("bad", [None, 1, "HTTP/1.1 200 OK\r\n\r\ndata: x\n\n"])
def test_the_body_helpers_refuse_what_is_not_bytes(bad: Any) -> None:
    """is_sse_body and without_http_heads given None or an int raised a bare TypeError from slicing, and a str
    a TypeError from a bytes method (or, for without_http_heads, passed it on as it was); now a ValidationError
    naming the argument."""
    from agentmsg._wire.framing import is_sse_body, without_http_heads

    for call in (is_sse_body, without_http_heads):
        with pytest.raises(agentmsg.ValidationError) as info:
            call(bad)
        assert [(p.pointer, p.rule) for p in info.value.problems] == [("/data", "type")]


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"a": 1}\n\ndata: [DONE]\n\n',
        b'event: message_start\ndata: {"a": 1}\n\n',
        b': keep-alive\n\ndata: {"a": 1}\n\n',
        b'id: 7\nretry: 10\ndata: {"a": 1}\n\n',
        b'error: {"error": {"message": "boom"}}\n\n',
        b'data: {"a": 1}\n\n{"error": {"code": 500}}\n',
        b'data: {"cut": ',
    ],
)
def test_a_first_chunk_that_starts_with_an_sse_field_frames_as_the_sniffer_tells_it(body: bytes) -> None:
    """The framer tells the common first chunk (bytes that start with an SSE field) at once, without its format
    sniffer: the payloads are those of the general path (the same bytes as a bytearray, which the sniffer
    reads), whatever follows."""
    from agentmsg._wire.framing import Framer

    def framed(first: Any) -> list[str]:  # (bytes, or a bytearray, which feed takes too)
        framer = Framer()
        out = [repr(p) for p in framer.feed(first)]
        assert framer.decided and framer.sse_feed() is not None
        out += [repr(p) for p in framer.feed(b"data: {}\n\n")]
        return out + [repr(p) for p in framer.close()] + framer.notes

    assert framed(body) == framed(bytearray(body))
    assert framed(body)
