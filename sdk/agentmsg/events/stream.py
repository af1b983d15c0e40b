"""Reading event streams from files and sockets: JSONL or SSE, in bounded memory.

:func:`reduce_stream` is the fast path from bytes to messages: it reads in chunks, parses JSON lines in
batches (one ``orjson.loads`` per batch; a batch that fails is parsed line by line so the bad line is
named) and feeds the reducer, so a stream of any size reduces in memory close to the size of the
resulting messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from ..errors import Problem, ValidationError
from ..message import AssistantMessage
from .reducer import Reducer
from .sse import SSEDecoder

CHUNK = 1 << 20  # bytes read at a time
_SSE_PREFIXES = (b"data:", b"id:", b"event:", b":", b"retry:")


def _chunks(source: IO[bytes] | bytes | Iterable[bytes]) -> Iterator[bytes]:
    if isinstance(source, (bytes, bytearray)):
        yield bytes(source)
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            chunk = read(CHUNK)
            if not chunk:
                return
            yield chunk if isinstance(chunk, bytes) else chunk.encode()
    else:
        yield from source


def _parse_lines(lines: list[bytes], first_line: int) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, event, error) for non-empty lines; batch-parsed when all are valid."""
    lines = [ln for ln in lines if ln.strip()] if any(not ln.strip() for ln in lines) else lines
    try:
        batch = orjson.loads(b"[" + b",".join(lines) + b"]")
    except orjson.JSONDecodeError:
        batch = None
    if batch is not None and len(batch) == len(lines):
        for event in batch:
            yield 0, event, None
        return
    for offset, line in enumerate(lines):
        try:
            yield first_line + offset, orjson.loads(line), None
        except orjson.JSONDecodeError as exc:
            yield first_line + offset, None, f"line {first_line + offset}: not valid JSON: {exc}"


def iter_jsonl(source: IO[bytes] | bytes | Iterable[bytes], *, strict: bool = True) -> Iterator[Any]:
    """Parsed events from JSON lines. A bad line raises :class:`ValidationError` (``strict``) or is skipped."""
    for _, event, error in _iter_jsonl(source):
        if error is not None:
            if strict:
                raise ValidationError([Problem("", "json", error)], "event")
            continue
        yield event


def _iter_jsonl(source: IO[bytes] | bytes | Iterable[bytes]) -> Iterator[tuple[int, Any, str | None]]:
    rest = b""
    line_no = 1
    for chunk in _chunks(source):
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1 :]
        lines = data[:cut].split(b"\n")
        yield from _parse_lines(lines, line_no)
        line_no += len(lines)
    if rest.strip():
        yield from _parse_lines([rest], line_no)


def iter_sse_events(source: IO[bytes] | bytes | Iterable[bytes], *, strict: bool = True) -> Iterator[Any]:
    """Parsed agent events from a text/event-stream (each SSE ``data`` is one event's JSON)."""
    decoder = SSEDecoder()
    for chunk in _chunks(source):
        for sse in decoder.feed(chunk):
            try:
                yield orjson.loads(sse.data)
            except orjson.JSONDecodeError as exc:
                if strict:
                    raise ValidationError(
                        [Problem("", "json", f"SSE event {sse.id!r}: data is not JSON: {exc}")], "event"
                    ) from None


def sniff_sse(head: bytes) -> bool:
    """True when a stream looks like SSE rather than JSON lines."""
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    return text.startswith(_SSE_PREFIXES)


def read_events(source: IO[bytes] | bytes, *, strict: bool = True) -> Iterator[Any]:
    """Events from JSONL or SSE, whichever the stream is."""
    chunks = _chunks(source)
    first = next(chunks, b"")

    def again() -> Iterator[bytes]:
        yield first
        yield from chunks

    if sniff_sse(first):
        return iter_sse_events(again(), strict=strict)
    return iter_jsonl(again(), strict=strict)


def reduce_stream(
    source: IO[bytes] | bytes | Iterable[bytes],
    *,
    strict: bool = False,
    sse: bool | None = None,
    reducer: Reducer | None = None,
) -> list[AssistantMessage]:
    """Bytes (JSONL or SSE) → messages, in bounded memory. Bad lines are reported like other bad input
    (``reducer.problems``, or :class:`ValidationError` when ``strict``)."""
    r = reducer or Reducer(strict=strict)
    chunks = _chunks(source)
    first = next(chunks, b"")

    def again() -> Iterator[bytes]:
        yield first
        yield from chunks

    is_sse = sniff_sse(first) if sse is None else sse
    feed = r.feed
    if is_sse:
        for event in iter_sse_events(again(), strict=strict):
            feed(event)
        return r.finish()
    for _, event, error in _iter_jsonl(again()):
        if error is None:
            feed(event)
        else:
            r._problem(r.count, "", "json", error)
            r.count += 1
    return r.finish()
