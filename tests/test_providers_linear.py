"""Provider parsers on crafted streams whose cost the parser could make super-linear: the work is counted (the
characters a step writes, the calls a step makes), never timed."""

from __future__ import annotations

import base64
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg._wire.sse import SSEDecoder
from agentmsg.providers import anthropic, gemini, openai
from agentmsg.providers._response import builder as _builder
from agentmsg.providers._response.parser import run_parser


def data_event(payload: Any) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def sse(*payloads: Any) -> bytes:
    return b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _call(**fn: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function", "function": fn}]})


class _CountedCall(_builder._Call):
    """A call that counts the characters of every name given to it."""

    written = 0

    def __setattr__(self, key: str, value: Any) -> None:
        if key == "name" and isinstance(value, str):
            _CountedCall.written += len(value)
        super().__setattr__(key, value)


@pytest.mark.parametrize("shape", ["growing", "letters"])
def test_a_name_in_many_pieces_is_joined_once(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name split across the fragments before the arguments is every piece joined (as the SDK's accumulator joins
    them); it was joined again at each piece (the pieces so far, or the name so far plus the piece): quadratic in
    the pieces, cubic for a server that sends the name so far growing (a name of 45,150 characters from 300 pieces
    wrote 4.5 million). Now the pieces are joined when the name is read: the characters written stay a small
    multiple of the body."""
    monkeypatch.setattr(_builder, "_Call", _CountedCall)
    if shape == "growing":
        pieces = ["f" * (i + 1) for i in range(300)]
        name = "f" * (300 * 301 // 2)
    else:
        pieces = ["f", *("x" * 5000)]
        name = "f" + "x" * 5000
    body = sse(*(_call(name=p) for p in pieces), _call(arguments="{}"), chunk({}, "tool_calls"))
    _CountedCall.written = 0
    (msg,) = agentmsg.reduce_events(list(openai.parse_stream(body)))
    (call,) = msg.content
    assert call.name == name and call.input == {}
    assert _CountedCall.written <= 2 * len(body), (_CountedCall.written, len(body))


def _anthropic(kind: str, **data: Any) -> bytes:
    return f"event: {kind}\ndata: ".encode() + orjson.dumps({"type": kind, **data}) + b"\n\n"


def test_anthropic_usage_of_many_keys_then_many_events_is_copied_in_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each message_delta's usage is merged into the counts so far and a copy handed on (converted at the end): the
    copy held every key any event gave, so one usage of 5,000 keys (no count among them) and 5,000 events after it
    copied 25 million keys. Only the counts read are kept now."""
    handed = []
    usage_later = _builder.StreamBuilder.usage_later

    def counted(self: _builder.StreamBuilder, convert: Any, raw: Any, input_key: str) -> None:
        handed.append(len(raw))
        usage_later(self, convert, raw, input_key)

    monkeypatch.setattr(_builder.StreamBuilder, "usage_later", counted)
    n = 5000
    message = {"id": "m", "type": "message", "role": "assistant", "model": "c", "content": []}
    body = _anthropic("message_start", message={**message, "usage": {"input_tokens": 7, "output_tokens": 1}})
    body += _anthropic("message_delta", delta={}, usage={f"k{i}": {"n": i} for i in range(n)})
    body += b"".join(_anthropic("message_delta", delta={}, usage={"output_tokens": i}) for i in range(n))
    body += _anthropic("message_delta", delta={"stop_reason": "end_turn"}) + _anthropic("message_stop")
    # (the Python parser: the whole-body C fast path of parse_stream keeps its own 4 counts, and calls no usage_later)
    (msg,) = agentmsg.reduce_events(list(run_parser(anthropic.StreamParser(), body)))
    assert msg.usage is not None and (msg.usage.input_tokens, msg.usage.output_tokens) == (7, n - 1)
    assert len(handed) == n + 2 and sum(handed) <= 4 * len(handed), sum(handed)


_SDK = str(Path(agentmsg.__file__).parent)


def _lines_run(run: Callable[[], Any]) -> int:
    """How many lines of the SDK's Python code ``run()`` executes: work counted, not timed."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if not frame.f_code.co_filename.startswith(_SDK):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return count


def _growth(make: Callable[[int], bytes], parse: Callable[[bytes], Any], n: int) -> float:
    """The work of parsing ``make(2n)`` over that of ``make(n)``: about 2 when linear, 4 when quadratic."""
    small, large = make(n), make(2 * n)
    return _lines_run(lambda: parse(large)) / _lines_run(lambda: parse(small))


def _events(mod: Any) -> Callable[[bytes], Any]:
    return lambda body: agentmsg.reduce_events(list(mod.parse_stream(body)))


def _choice(i: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c", "model": "m", "choices": [{"index": i, "delta": delta, "finish_reason": "stop"}]}


def _choices_with_a_problem(n: int) -> bytes:
    """Choices 1..n (no choice 0), each with two calls sharing an id: a problem said of each, held for choice 0."""
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    return sse(
        *(_choice(i, {"tool_calls": [{"index": k, "id": f"t{i}", **call} for k in (0, 1)]}) for i in range(1, n + 1))
    )


def _choices_with_audio(n: int) -> bytes:
    """Choices 0..n-1, each with 3 bytes of audio: too few to tell its type, so its block waits for the end."""
    audio = base64.b64encode(b"abc").decode()
    return sse(*(_choice(i, {"audio": {"id": f"a{i}", "data": audio}}) for i in range(n)))


@pytest.mark.parametrize("make", [_choices_with_a_problem, _choices_with_audio], ids=["held-problems", "waiting-audio"])
def test_many_choices_take_work_linear_in_them(make: Callable[[int], bytes]) -> None:
    """What the builder holds per choice (problems said before choice 0 opened, audio too short to start a block)
    was looked through whole at each choice that opened or closed: quadratic in the choices (8,000 choices with a
    problem each: 53 s). Now each choice finds its own: the SDK lines run grow as the choices (about 2 for twice
    as many; 2.7 and more before)."""
    events = list(openai.parse_stream(make(2)))
    if make is _choices_with_a_problem:  # said in choice 0, which opens to say them
        said = [e for e in events if e.get("name") == "agentmsg.problem"]
        assert [("source" in e, e["value"]["rule"]) for e in said] == [(False, "id"), (False, "id")]
    for i in (1, 2) if make is _choices_with_a_problem else (0, 1):
        (msg,) = agentmsg.reduce_events(events, source=f"choice/{i}" if i else None)
        assert [b.type for b in msg.content] == (["tool_use"] * 2 if make is _choices_with_a_problem else ["data"])
    assert _growth(make, _events(openai), 300) < 2.4


def test_an_event_of_many_short_data_lines_holds_its_bytes_not_a_string_per_line() -> None:
    """The SSE decoder held an event's data lines as a str each: about 20 times the bytes the event limit counts
    (2 bytes a line; 1.3 GB under the default limit), 7 times the body here. Now their bytes, decoded once when the
    event is dispatched: the same data, invalid UTF-8 replaced and said as before."""
    n = 200_000
    body = b"data: xy\n" * n
    decoder = SSEDecoder()
    tracemalloc.start()
    try:
        for i in range(0, len(body), 65536):
            assert decoder.feed(body[i : i + 65536]) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(body), (peak, len(body))  # (12 MB before: 1.8 MB body)
    (event,) = decoder.feed(b"\n")
    assert event.data == "\n".join(["xy"] * n) and event.problem is None
    (event,) = SSEDecoder().feed(b"data: a\xff\ndata:\ndata: \xe2\x82\n\n")
    assert event.data == "a\ufffd\n\n\ufffd" and event.problem is not None and event.problem.rule == "utf-8"


def test_a_json_value_on_many_short_lines_of_no_sse_field_holds_its_bytes() -> None:
    """A JSON value sent on lines of no SSE field (Gemini's error after the events) was held as a bytes object per
    line: 16 times the body for a value of many short lines. Now its bytes; the value read as before."""
    n = 200_000
    items = b"".join(b'"%d",\n' % (i % 10) for i in range(n))
    body = data_event({"candidates": [{"content": {"parts": [{"text": "a"}]}}]}) + b'{"error": {"details": [\n' + items
    parser, events = gemini.StreamParser(), []
    tracemalloc.start()
    try:
        for i in range(0, len(body), 65536):
            events += parser.feed(body[i : i + 65536])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(body), (peak, len(body))  # (16 times before)
    events += parser.feed(b'""], "code": 500, "message": "boom", "status": "INTERNAL"}}\n') + parser.close()
    (msg,) = agentmsg.reduce_events(events)
    assert msg.text_content == "a" and msg.generate_reason.value == "INTERRUPTED"
    assert [e["message"] for e in msg.to_dict()["metadata"]["agentmsg_errors"]] == ["boom"]
