"""Memory of the whole-input readers: a body or file given at once is read in pieces, not decoded at once."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest

from agentmsg import Reducer, reduce_events
from agentmsg.providers import get

HEAD = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
)
DELTA = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hello world "},"finish_reason":null}]}\n\n'
)
TAIL = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)
BODY = HEAD + DELTA * 40_000 + TAIL  # about 6 MB


def test_parse_stream_of_a_whole_body_makes_its_events_as_they_are_taken() -> None:
    """A whole body was fed to the parser at once: all its events were made in one list (4.5 times the body)."""
    for _ in get("openai").parse_stream(BODY[:4096]):  # (the modules a parse imports, compiled outside the count)
        pass
    tracemalloc.start()
    try:
        count = sum(1 for _ in get("openai").parse_stream(BODY))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 40_006
    assert peak < len(BODY) // 2  # (before: 27 MB for 6 MB; now about 1.5 MB)


def test_feed_jsonl_of_a_whole_file_decodes_it_in_runs() -> None:
    """A whole file of JSON lines was decoded at once (2.5 times the file, and a copy split in lines)."""
    events = list(get("openai").parse_stream(BODY))
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    r = Reducer()
    tracemalloc.start()
    try:
        lines = r.feed_jsonl(data)
        messages = r.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == len(events) + 1  # (the empty line after the last newline)
    assert [m.to_dict() for m in messages] == [m.to_dict() for m in reduce_events(events)]
    assert peak < len(data) // 2  # (before: 16 MB for 6.6 MB; now about 2 MB)


def test_feed_jsonl_in_runs_counts_and_reports_lines_as_one_run() -> None:
    """Runs cut at newlines, blank lines and a bad line among them: the same lines, problems and message."""
    events = list(get("openai").parse_stream(BODY))
    rows = [orjson.dumps(e) for e in events]
    rows[20_000:20_000] = [b"", b"", b"not json", b""]
    data = b"\n".join(rows) + b"\n\n"
    whole, runs = Reducer(), Reducer()
    assert runs.feed_jsonl(data) == data.count(b"\n") + 1
    for row_no, row in enumerate(data.split(b"\n"), 1):  # line by line: the reference
        whole.feed_jsonl(row, first_line=row_no)
    assert [(p.pointer, p.rule) for p in runs.problems] == [(p.pointer, p.rule) for p in whole.problems]
    assert runs.problems and "line 20003: not valid JSON" in runs.problems[0].message
    assert [m.to_dict() for m in runs.finish()] == [m.to_dict() for m in whole.finish()]


def test_the_message_of_a_long_trusted_reply_holds_its_text_once() -> None:
    """The message of a reply built from trusted events was written as JSON and read back: its text, the JSON bytes
    (with orjson's reserve, ten times the text) and the text decoded from them were alive at once at the end of
    the stream (12 times the text in all). Now the message holds the joined text itself: the deltas and their
    join, twice the text, are the peak."""
    text = "".join(f"{i:07d} the quick brown fox jumps over the lazy dog " * 21 for i in range(4000))  # ~4 MB
    pieces = [text[at : at + 1024] for at in range(0, len(text), 1024)]
    body = HEAD + b"".join(DELTA.replace(b"hello world ", p.encode()) for p in pieces) + TAIL
    chunks = [body[at : at + 65536] for at in range(0, len(body), 65536)]
    reduce_events(get("openai").parse_stream(BODY[:4096]), trusted=True)  # (imports and compiled hooks: outside)
    for through in ("reduce_events", "Reducer"):
        tracemalloc.start()
        try:
            if through == "reduce_events":
                messages = reduce_events(get("openai").parse_stream(chunks), trusted=True)
            else:
                parser, r = get("openai").stream_parser(), Reducer()
                for chunk in chunks:
                    r.feed_many(parser.feed(chunk), trusted=True)
                r.feed_many(parser.close(), trusted=True)
                messages = r.finish()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert [m.text_content for m in messages] == [text], through
        assert peak < 4 * len(text), (through, peak / len(text))  # (before: 12 times the text; now about 2.2)


def test_feed_jsonl_refuses_arguments_of_another_type_as_the_sdks_error() -> None:
    """A str (which reduce_stream and SSEDecoder take), a number, a position that is no int raised bare TypeErrors
    from inside the run splitter; an ``end`` past 64 bits an OverflowError. Each is now WrongTypeError (a TypeError
    too) at the argument, and an ``end`` past the data is its end. A bytearray or memoryview is read as its bytes."""
    from agentmsg.errors import WrongTypeError

    line = b'{"type":"X"}'
    for args, kwargs, pointer in (
        (('{"type":"X"}',), {}, "/data"),
        ((123,), {}, "/data"),
        ((line,), {"start": "0"}, "/start"),
        ((line,), {"end": 1.5}, "/end"),
        ((line,), {"end": "3"}, "/end"),
        ((line,), {"first_line": None}, "/first_line"),
    ):
        with pytest.raises(WrongTypeError) as info:
            Reducer().feed_jsonl(*args, **kwargs)
        assert info.value.problems[0].pointer == pointer, (args, kwargs)
    for data in (line, bytearray(line), memoryview(line)):
        assert Reducer().feed_jsonl(data, end=2**70) == 1
