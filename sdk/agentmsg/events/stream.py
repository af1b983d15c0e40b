"""Reading event streams from files and sockets: JSONL or SSE, in bounded memory.

:func:`reduce_stream` is the fast path from bytes to messages: it reads in chunks, parses JSON lines in
batches (one ``orjson.loads`` per batch; a batch that fails is parsed line by line so the bad line is
named) and feeds the reducer, so a stream of any size reduces in memory close to the size of the
resulting messages.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Literal

import msgspec
import orjson

from .._schemas import schema_documents
from .._sse import SSEDecoder
from ..errors import Problem, ValidationError
from ..message import AssistantMessage
from .reducer import _JOIN_EVERY, Reducer

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
    """(line number, event, error) for non-blank lines; batch-parsed when all are valid."""
    try:
        batch = orjson.loads(b"[" + b",".join(lines) + b"]")  # fails on a blank line too
    except orjson.JSONDecodeError:
        batch = None
    if batch is not None and len(batch) == len(lines):
        for event in batch:
            yield 0, event, None
        return
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
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
    for event, error in _iter_sse(source):
        if error is not None:
            if strict:
                raise ValidationError([Problem("", "json", error)], "event")
            continue
        yield event


def _iter_sse(source: IO[bytes] | bytes | Iterable[bytes]) -> Iterator[tuple[Any, str | None]]:
    decoder = SSEDecoder()
    for chunk in _chunks(source):
        for sse in decoder.feed(chunk):
            try:
                yield orjson.loads(sse.data), None
            except orjson.JSONDecodeError as exc:
                yield None, f"SSE event {sse.id!r} ({sse.event}): data is not JSON: {exc}"


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
            for event, error in _iter_sse(again()):
                if error is None:
                    r.feed(event)
                else:  # reported like a bad JSON line (raises when strict)
                    r._problem(r.count, "", "json", error)
                    r.count += 1
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


# A Literal of the schema's event types: msgspec returns the interned constant (no str allocation per
# event) and rejects unknown types, which sends the batch through the general path where they are
# reported. Derived from agent-event.schema.json, the one list of event types.
if TYPE_CHECKING:
    _EventType = str
else:
    # Interned, so that the hot loop's comparisons with literal constants are identity checks.
    _EventType = Literal[
        tuple(sys.intern(t) for t in schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"])
    ]


class _View(msgspec.Struct, gc=False):
    """The few keys of an event the fast path needs; the rest of a line is skipped by the decoder.
    Keys typed ``None`` make the decoder reject a batch that sets them (a forwarded subagent event, a
    thinking delta carrying a signature or redacted data): such a batch takes the general path. This
    costs nothing per event, where scanning the bytes for those keys cost more than the decoding."""

    type: _EventType
    id: str | None = None
    blockId: str | None = None
    toolCallId: str | None = None
    delta: str | None = None
    source: None = None
    signature: None = None
    redactedData: None = None


_views = msgspec.json.Decoder(_View)
_ROUTED = ("TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA")


class _Routes:
    """Where the deltas of the current reply go: per delta type, block/call id -> ``parts.append``
    of the open block of the right kind. Rebuilt whenever an event other than a routed delta is applied."""

    __slots__ = ("by_type", "calls", "live")

    def __init__(self, r: Reducer) -> None:
        text: dict[str | None, Callable[[str], None]] = {}
        think: dict[str | None, Callable[[str], None]] = {}
        calls: dict[str | None, Callable[[str], None]] = {}
        self.by_type = {"TEXT_BLOCK_DELTA": text, "THINKING_BLOCK_DELTA": think, "TOOL_CALL_DELTA": calls}
        self.calls = calls
        self.live: list[tuple[Any, int]] = []  # (block, its fragment count when routed)
        reply = r._reply
        if reply is None:
            return
        for block_id, b in reply.by_block.items():
            if b.kind == "text":
                text[block_id] = b.parts.append
            elif b.kind == "thinking":
                think[block_id] = b.parts.append
            else:
                continue
            self.live.append((b, len(b.parts)))
        for call_id, b in reply.by_call.items():
            if b.open:
                calls[call_id] = b.parts.append
                self.live.append((b, len(b.parts)))

    def sync(self) -> None:
        """Bring the blocks' bookkeeping up to date with the fragments appended through the routes."""
        join_every = _JOIN_EVERY
        for b, n0 in self.live:
            parts = b.parts
            if len(parts) != n0 and b.kind == "tool_use":
                b.had_delta = True
            if len(parts) >= join_every:
                b.text.flush()


def _regions(source: IO[bytes] | bytes | Iterable[bytes]) -> Iterator[tuple[bytes, int, int]]:
    """``(buffer, start, end)``: ``buffer[start:end]`` is a run of whole lines (about CHUNK bytes, the
    last newline excluded), then a final run without a newline. Bytes in memory are not copied."""
    if isinstance(source, bytes):
        start, size = 0, len(source)
        while start < size:
            end = source.rfind(b"\n", start, start + CHUNK)
            if end < 0:  # a line longer than CHUNK
                end = source.find(b"\n", start + CHUNK)
                if end < 0:
                    end = size
            yield source, start, end
            start = end + 1
        return
    rest = b""
    for chunk in _chunks(source):
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
            continue
        rest = data[cut + 1 :]
        yield data, 0, cut
    if rest:
        yield rest, 0, len(rest)


def _reduce_jsonl_fast(r: Reducer, source: IO[bytes] | bytes | Iterable[bytes]) -> None:
    """JSONL → reducer: each run of lines is decoded into views in one call; deltas of open blocks
    are appended inline through :class:`_Routes`, everything else (and any batch that is not clean:
    duplicates, missing ids, subagent events, unknown types, bad JSON) goes through the general path
    with full dicts, so behaviour is exactly :meth:`Reducer.feed`'s."""
    for data, start, cut in _regions(source):
        first = r.count + 1  # line numbers in messages assume one event per line
        views: list[_View] | None = None
        with memoryview(data) as view:
            try:
                views = _views.decode_lines(view[start:cut])
            except msgspec.DecodeError:
                views = None
        if views is not None:
            fresh = {v.id for v in views}
            if (
                # Blank lines are skipped by decode_lines: the line numbers would not match.
                len(views) != data.count(b"\n", start, cut) + 1
                or len(fresh) != len(views)
                or None in fresh
                or not fresh.isdisjoint(r._seen)
                or not fresh.isdisjoint(r._seen_old)
            ):
                views = None
        if views is None:
            _feed_lines(r, data[start:cut].split(b"\n"), first)
            continue
        r._seen |= fresh  # type: ignore[arg-type]  # None was excluded above
        lines: list[bytes] | None = None
        base = r.count
        routes = _Routes(r)
        by_type_get = routes.by_type.get
        calls = routes.calls
        i = -1
        for v in views:
            i += 1
            m = by_type_get(v.type)
            if m is not None:
                append = m.get(v.toolCallId if m is calls else v.blockId)
                delta = v.delta
                if append is not None and delta is not None:
                    append(delta)
                    continue
            # General path: the full event (the duplicate check was done for the whole batch).
            if lines is None:
                lines = data[start:cut].split(b"\n")
            routes.sync()
            r.count = base + i + 1
            r._dispatch(orjson.loads(lines[i]), base + i)
            routes = _Routes(r)
            by_type_get = routes.by_type.get
            calls = routes.calls
        routes.sync()
        r.count = base + len(views)
        r._rotate_seen()


def _feed_lines(r: Reducer, lines: list[bytes], first: int) -> None:
    for _, event, error in _parse_lines(lines, first):
        if error is None:
            r.feed(event)
        else:
            r._problem(r.count, "", "json", error)
            r.count += 1
