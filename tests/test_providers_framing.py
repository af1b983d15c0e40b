"""Provider body framing (providers/_stream.py ``Framer``): what the SSE decoder and the line splitter
report reaches the events as problems (nothing changed or dropped silently), and a long line costs work
linear in its length."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

import agentmsg
from agentmsg import limits
from agentmsg.providers import dashscope, openai
from tests.test_providers_odd import reduce_ok

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

    def find(self, *args: Any) -> int:  # type: ignore[override]
        Counted.work += len(self)
        return super().find(*args)

    def rfind(self, *args: Any) -> int:  # type: ignore[override]
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
    """Format detection is the one reduce_stream uses (agentmsg._sse.sniff): an error page is read as
    lines and each is reported; as SSE its lines would have been unknown fields, ignored in silence."""
    body = b"<html>\n<body>502 Bad Gateway</body>\n</html>\n"
    events = list(openai.parse_stream([body[i : i + 3] for i in range(0, len(body), 3)]))
    problems = [e["value"]["rule"] for e in events if e.get("name") == "agentmsg.problem"]
    assert problems == ["json", "json", "json"]
    (msg,) = agentmsg.reduce_events(events)
    assert msg.generate_reason.value == "INTERRUPTED"


@pytest.mark.parametrize("size", [1, 2, 5])
def test_sse_after_blanks_and_a_bom_in_any_chunking(size: int) -> None:
    body = b"\xef\xbb\xbf\r\n\n" + sse(text_chunk("hi", finish="stop"))
    msg, problems = parsed([body[i : i + size] for i in range(0, len(body), size)])
    assert msg.text_content == "hi" and problems == []
