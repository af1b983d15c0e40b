"""Reading event streams from files and sockets: JSONL or SSE, in bounded memory.

:func:`reduce_stream` is the fast path from bytes to messages: it reads in chunks, parses JSON lines in
batches (one ``orjson.loads`` per batch; a batch that fails is parsed line by line so the bad line is
named) and feeds the reducer, so a stream of any size reduces in memory close to the size of the
resulting messages.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from typing import IO, Any

import msgspec
import orjson

from ..errors import Problem, ValidationError
from ..message import AssistantMessage
from .reducer import _JOIN_EVERY, Reducer
from .sse import SSEDecoder

CHUNK = 1 << 17  # bytes read (or sliced) at a time: one batch of events
_SSE_PREFIXES = (b"data:", b"id:", b"event:", b":", b"retry:")


def _chunks(source: IO[bytes] | bytes | Iterable[bytes]) -> Iterator[bytes]:
    if isinstance(source, (bytes, bytearray)):
        view = memoryview(source)
        for start in range(0, len(source), CHUNK):
            yield bytes(view[start : start + CHUNK])
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
    if b"" in lines:
        lines = [ln for ln in lines if ln.strip()]
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
    # Millions of short-lived objects: generational GC passes would dominate; nothing here makes cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if is_sse:
            r.feed_many(iter_sse_events(again(), strict=strict))
        elif r.strict or r.source is not None:
            for _, event, error in _iter_jsonl(again()):
                if error is None:
                    r.feed(event)
                else:
                    r._problem(r.count, "", "json", error)
                    r.count += 1
        else:
            _reduce_jsonl_fast(r, again())
        return r.finish()
    finally:
        if gc_was_enabled:
            gc.enable()


class _View(msgspec.Struct, gc=False):
    """The few keys of an event the fast path needs; the rest of a line is skipped by the decoder."""

    type: str
    id: str | None = None
    blockId: str | None = None
    toolCallId: str | None = None
    delta: str | None = None
    signature: Any = None
    redactedData: Any = None


_views = msgspec.json.Decoder(list[_View])


def _reduce_jsonl_fast(r: Reducer, chunks: Iterable[bytes]) -> None:
    """JSONL → reducer: each chunk of lines is decoded into views in one call; deltas of open blocks
    are appended inline, everything else (and any batch that is not clean: duplicates, missing ids,
    subagent events, bad JSON) goes through the general path with full dicts, so behaviour is exactly
    :meth:`Reducer.feed`'s."""
    rest = b""
    join_every = _JOIN_EVERY
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1 :]
        body = data[:cut]
        first = r.count + 1  # line numbers in messages assume one event per line
        views: list[_View] | None = None
        if b"\n\n" not in body and b'"source"' not in body and body.strip():
            try:
                views = _views.decode(b"[" + body.replace(b"\n", b",") + b"]")
            except msgspec.DecodeError:
                views = None
        if views is not None:
            fresh = {v.id for v in views}
            if (
                len(fresh) != len(views)
                or None in fresh
                or not fresh.isdisjoint(r._seen)
                or not fresh.isdisjoint(r._seen_old)
            ):
                views = None
        if views is None:
            _feed_lines(r, body.split(b"\n"), first)
            continue
        r._seen |= fresh  # type: ignore[arg-type]  # None was excluded above
        lines: list[bytes] | None = None
        base = r.count
        reply = r._reply
        by_block = reply.by_block if reply is not None else None
        by_call = reply.by_call if reply is not None else None
        touched: list[Any] = []
        i = -1
        for v in views:
            i += 1
            kind = v.type
            if by_block is not None:
                if kind == "TEXT_BLOCK_DELTA":
                    b = by_block.get(v.blockId)  # type: ignore[arg-type]
                    if b is not None and b.kind == "text" and v.delta is not None:
                        b.parts.append(v.delta)
                        continue
                elif kind == "TOOL_CALL_DELTA":
                    b = by_call.get(v.toolCallId)  # type: ignore[union-attr, arg-type]
                    if b is not None and b.open and v.delta is not None:
                        b.parts.append(v.delta)
                        if not b.had_delta:
                            b.had_delta = True
                        continue
                elif kind == "THINKING_BLOCK_DELTA" and v.signature is None and v.redactedData is None:
                    b = by_block.get(v.blockId)  # type: ignore[arg-type]
                    if b is not None and b.kind == "thinking" and v.delta is not None:
                        b.parts.append(v.delta)
                        continue
            # General path: the full event (the duplicate check was done for the whole batch).
            if lines is None:
                lines = body.split(b"\n")
            touched.extend(by_block.values() if by_block is not None else ())
            touched.extend(by_call.values() if by_call is not None else ())
            r.count = base + i + 1
            r._dispatch(orjson.loads(lines[i]), base + i)
            reply = r._reply
            by_block = reply.by_block if reply is not None else None
            by_call = reply.by_call if reply is not None else None
        # Join the fragments appended in this batch (keeps memory near the text size).
        touched.extend(by_block.values() if by_block is not None else ())
        touched.extend(by_call.values() if by_call is not None else ())
        for b in touched:
            if len(b.parts) >= join_every:
                b.text.flush()
        r.count = base + len(views)
        r._rotate_seen()
    if rest.strip():
        _feed_lines(r, [rest], r.count + 1)


def _feed_lines(r: Reducer, lines: list[bytes], first: int) -> None:
    for _, event, error in _parse_lines(lines, first):
        if error is None:
            r.feed(event)
        else:
            r._problem(r.count, "", "json", error)
            r.count += 1
