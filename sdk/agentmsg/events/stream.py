"""Reading event streams from bytes, files and sockets: JSONL, SSE or a JSON array of events, in bounded
memory and linear time.

This module is transport only: it finds the format (:func:`sniff_sse`, from however many bytes that
takes), cuts JSONL into runs of whole lines with their line numbers (:func:`_runs`, through the one line
splitter, :mod:`agentmsg._wire.lines`), decodes SSE (:class:`agentmsg._wire.sse.SSEDecoder`) or cuts a JSON array
of events (or pretty-printed events one after another) into its values (:mod:`agentmsg._wire.values`),
enforces the line and event size limit,
and hands events to the :class:`~agentmsg.Reducer` through its public methods (``feed``,
``feed_jsonl``, ``report``, ``feed_unreadable``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import orjson

from agentmsg._codec.jsontext import TooDeep, loads_bounded, unreadable
from agentmsg._codec.limits import limits
from agentmsg._wire.lines import LineSplitter, Run, checked
from agentmsg._wire.sse import (
    DL_TAKE,
    SNIFF_LIMIT,
    FormatSniffer,
    JSONDataDecoder,
    SSEDecoder,
    SSEEvent,
    of_no_field,
    sniff,
    sniff_format,
)
from agentmsg._wire.values import ValueSplitter
from agentmsg.errors import Problem, SizeLimitError, ValidationError, WrongTypeError
from agentmsg.events._jsonl import parse_line
from agentmsg.events.reducer import Reducer
from agentmsg.message import AssistantMessage

__all__ = ["iter_jsonl", "iter_sse_events", "read_events", "reduce_stream", "sniff_format", "sniff_sse"]

CHUNK = 1 << 17  # bytes read (or sliced) at a time: about one run of lines
_BOM = b"\xef\xbb\xbf"
_LIMIT_RULES = ("max-line-bytes", "max-event-bytes", "max-depth")
#: The SSE event type agentmsg's endpoint (agentmsg.web.EventEndpoint) ends a stream with (data ``{}``); no agent
#: event is sent under it (their types are upper case): not an agent event. The stream ends there, in both
#: runtimes: @agentmsg/client stops reading, and Python's readers read nothing after it into events; SSE events
#: a saved body has after it are said (rule ``order``, with their count, in the end event's place), not folded.
END_EVENT = "end"
#: The SSE event type agentmsg's endpoint sends when its event source failed (data ``{"message": ...}``), then
#: closes the stream: no agent event either; said (rule ``source-error``, the server's message), as
#: @agentmsg/client throws a StreamError with that message.
ERROR_EVENT = "error"

#: What the readers take: bytes, a binary file, an iterable of byte chunks, or the stream's text as one str (as
#: :func:`~agentmsg.encode_sse` returns it; read as its UTF-8 bytes; not a file name: ``open(path, "rb")``).
Source = IO[bytes] | bytes | Iterable[bytes] | str


def _text(source: Source) -> Source:
    """A stream given as one str: its UTF-8 bytes (a lone surrogate kept as the bytes it would be, which the
    readers report as invalid UTF-8). A str was read as an iterable of one-character chunks: the same
    messages, about 150 times slower."""
    return source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source


def max_event_bytes() -> int:
    """The size limit of one event: a JSONL line, an SSE line, an SSE event's data."""
    return limits.max_event_bytes


def _chunks(source: Source) -> Iterator[bytes]:
    source = _text(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        for start in range(0, len(view), CHUNK):
            yield bytes(view[start : start + CHUNK])
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            chunk = read(CHUNK)
            if not chunk:
                return
            yield chunk if isinstance(chunk, bytes) else str(chunk).encode("utf-8", "surrogatepass")
    else:
        if not isinstance(source, Iterable):
            raise WrongTypeError.single(
                "",
                "type",
                f"expected a stream: bytes, str, a binary file or an iterable of chunks, not {type(source).__name__}",
            )
        for chunk in source:
            yield (
                chunk
                if isinstance(chunk, bytes)
                else bytes(chunk)
                if not isinstance(chunk, str)
                else chunk.encode("utf-8", "surrogatepass")
            )


def sniff_sse(head: bytes) -> bool:
    """True when a stream that starts with ``head`` is SSE rather than JSON lines."""
    return bool(sniff(head))


def _detect(chunks: Iterator[bytes]) -> tuple[str, Iterator[bytes]]:
    """Read as many chunks as it takes to tell SSE, JSONL and JSON values apart
    (:class:`agentmsg._wire.sse.FormatSniffer`); then the same chunks again, all of them."""
    sniffer = FormatSniffer()
    kind = None
    for chunk in chunks:
        kind = sniffer.feed(chunk)
        if kind is not None:
            break
    head = sniffer.head

    def again() -> Iterator[bytes]:
        if head:
            yield head
        yield from chunks

    return kind or "jsonl", again()


# ---- JSONL ----------------------------------------------------------------------------------------------------


def _runs(source: Source, max_line: int) -> Iterator[Run | None]:
    """Runs of whole lines, in order (about CHUNK bytes each; bytes in memory are not copied; a leading
    BOM left out), and None in place of each line longer than ``max_line`` bytes (its bytes are skipped,
    never buffered whole): :mod:`agentmsg._wire.lines`. Line numbers are counted by the consumer: a run has
    ``count(newline) + 1`` lines, a None one."""
    if isinstance(source, bytes):
        start, size = (len(_BOM) if source.startswith(_BOM) else 0), len(source)
        while start < size:
            end = source.rfind(b"\n", start, start + CHUNK)
            if end < 0:  # a line longer than CHUNK
                end = source.find(b"\n", start + CHUNK)
                if end < 0:
                    end = size
            yield from checked(source, start, end, max_line)
            start = end + 1
        return
    lines = LineSplitter(max_line)
    for chunk in _without_bom(_chunks(source)):
        yield from lines.feed(chunk)
    yield from lines.close()


def _without_bom(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The stream without a leading UTF-8 BOM (which may arrive split across chunks)."""
    head = b""
    for chunk in chunks:
        head += chunk
        if len(head) >= len(_BOM) or not _BOM.startswith(head):
            break
    yield head.removeprefix(_BOM)
    yield from chunks


def _too_long(line: int, max_line: int) -> str:
    return f"line {line}: longer than {max_line} bytes (limits['max_event_bytes']): skipped"


def iter_jsonl(
    source: Source, *, strict: bool = True, on_problem: Callable[[Problem], None] | None = None
) -> Iterator[Any]:
    """Parsed events from JSON lines. A bad line (not JSON, invalid UTF-8, over the size limit) raises
    :class:`ValidationError` (``strict``) or is skipped and passed to ``on_problem`` (a line whose only
    fault is invalid UTF-8 is then kept, with U+FFFD)."""
    max_line = max_event_bytes()
    line_no = 1
    for run in _runs(_text(source), max_line):
        if run is None:
            problem = Problem("", "max-event-bytes", _too_long(line_no, max_line))
            if strict:
                raise SizeLimitError([problem], "event")
            if on_problem is not None:
                on_problem(problem)
            line_no += 1
            continue
        data, start, end = run
        for line in data[start:end].split(b"\n"):
            if line.strip():
                event, rule, message, at = parse_line(line, line_no)
                if rule is not None:
                    if strict:
                        raise (SizeLimitError if rule in _LIMIT_RULES else ValidationError)(
                            [Problem(at, rule, message)], "event"
                        )
                    if on_problem is not None:
                        on_problem(Problem(at, rule, message))
                if rule is None or event is not None:  # (a `null` line is read: it is no event, which the reader says)
                    yield event
            line_no += 1


# ---- JSON values -----------------------------------------------------------------------------------------------


def _values(chunks: Iterable[bytes]) -> Iterator[tuple[int, Any, Problem | None]]:
    """Each value of a JSON array of events (or of events one after another): (its number, from 1, the parsed
    event or None, a problem or None). Invalid UTF-8 is replaced by U+FFFD and said (the event kept); a value
    that is not JSON, text between values that is none, or a value over the size limit is said, no event."""
    splitter = ValueSplitter(max_event_bytes())
    number = 0

    def fed() -> Iterator[list[tuple[bytes, bool] | None]]:
        for chunk in _without_bom(iter(chunks)):
            yield splitter.feed(chunk)
        yield splitter.close()  # (after the last chunk: what the input ended inside, said)

    for items in fed():
        for item in items:
            number += 1
            if item is None:
                limit = max_event_bytes()
                too_long = f"value {number}: longer than {limit} bytes (limits['max_event_bytes']): skipped"
                yield number, None, Problem("", "max-event-bytes", too_long)
                continue
            data, value = item
            event, problem = _value(number, data, value)
            yield number, event, problem
    if splitter.unclosed:  # (counted as one event, as a cut SSE event is)
        cut = "the JSON array of events ends without its ']': the stream was cut"
        yield number + 1, None, Problem("", "incomplete", cut)


def _value(number: int, data: bytes, value: bool) -> tuple[Any, Problem | None]:
    """The event a value's bytes hold (None: none) and what was wrong with them (None: nothing)."""
    try:
        return loads_bounded(data), None
    except TooDeep as exc:
        return None, Problem(exc.pointer, "max-depth", f"value {number}: {exc}")
    except orjson.JSONDecodeError as exc:
        error = exc
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        replaced = Problem("", "utf-8", f"value {number}: invalid UTF-8 (byte {exc.start}) replaced by U+FFFD")
        try:
            return loads_bounded(data.decode("utf-8", "replace")), replaced
        except TooDeep as deep:
            return None, Problem(deep.pointer, "max-depth", f"value {number}: {deep}")
        except orjson.JSONDecodeError as again:
            error = again
    what = "not valid JSON" if value else "not a JSON value"
    rule, words = unreadable(error, data)
    return None, Problem("", rule, f"value {number}: {what}: {words}")


def _iter_values(source: Source, *, strict: bool, on_problem: Callable[[Problem], None] | None) -> Iterator[Any]:
    for _, event, problem in _values(_chunks(source)):
        if problem is not None:
            if strict:
                raise (SizeLimitError if problem.rule in _LIMIT_RULES else ValidationError)([problem], "event")
            if on_problem is not None:
                on_problem(problem)
        if problem is None or event is not None:  # (a `null` value is read: it is no event, which the reader says)
            yield event


def _value_agent_events(r: Reducer, chunks: Iterable[bytes]) -> Iterator[Any]:
    """The events of a JSON array of events, for ``r.feed_many``; what cannot be read is told to ``r`` in its
    place, as :func:`_sse_agent_events` does."""
    for _, event, problem in _values(chunks):
        if problem is not None:
            if event is None:  # (said at its pointer: "", but for a value nested too deep)
                limit = problem.rule in _LIMIT_RULES
                r._unreadable_at(problem.pointer, f"{problem.message}: event skipped", problem.rule, limit)
                continue
            r.report(problem.message, rule=problem.rule)
        yield event


# ---- SSE ------------------------------------------------------------------------------------------------------


class _EventSSE(JSONDataDecoder):
    """The SSE decoder of agent events: each line of no SSE field (an event's JSON that lost its ``data:``, say) is
    said, as an event with no data and a problem (rule ``sse``): the spec ignores such a line, and the event it held
    was lost without a word (a reply reduced without its text, exit 0). Blank lines and comments do nothing."""

    dataless = DL_TAKE  # (the fast path leaves lines of unknown fields to _process)

    def _process(self, line: bytes, out: list[SSEEvent]) -> None:
        if line and of_no_field(line):
            shown = line[:80].decode("utf-8", "replace")
            why = f"a line of no SSE field (no `data:`) is skipped, as the SSE spec reads it: {shown!r}"
            out.append(SSEEvent("", "message", self.id_buffer, None, Problem("", "sse", why)))
            return
        super()._process(line, out)


def _sse_events(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    decoder = _EventSSE()  # every event's data is parsed as JSON at once: bytes where they can be
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield from decoder.close()


def _endpoints(sse: SSEEvent, name: str) -> bool:
    """Whether ``sse`` is the endpoint's event ``name`` (its end, or its failure): an event of that type that was
    dispatched, whatever its data (invalid UTF-8 there, or data over the limit, leaves it the end, as
    @agentmsg/client takes it); an event the stream ended inside (``incomplete``) is no event of the endpoint's."""
    return sse.event == name and (sse.problem is None or sse.problem.rule != "incomplete")


def _where(sse: SSEEvent) -> str:
    return f"SSE event {sse.id!r:.80} ({sse.event:.80})"


def _after_end(end: SSEEvent, rest: Iterator[SSEEvent]) -> str | None:
    """What a body has after the endpoint's end event (``end``): None when nothing (blank lines and comments are
    no events), else what to say of it. The rest is read (counted, not kept: bounded memory), not folded."""
    first = next(rest, None)
    if first is None:
        return None
    count = 1 + sum(1 for _ in rest)
    what = "1 SSE event" if count == 1 else f"{count} SSE events"
    return (
        f"{_where(end)}: the stream ended here (the end event); {what} after it (the first: id {first.id!r:.80},"
        f" type {first.event!r:.80}) not read"
    )


def _source_failed(sse: SSEEvent) -> str:
    """What the endpoint's ``error`` event says: its data's ``message`` (the text as it came otherwise), whole.
    Its size is bounded where it is read (the event's data within ``limits.max_event_bytes``), and the problem
    that says it shows a long one cut in the middle, saying how much is left out (``Problem.message``,
    :data:`~agentmsg.errors.MESSAGE_MAX`): a cut here first (at 1,000 characters once) made that count wrong and
    lost the message's end without a word."""
    data = sse.data
    text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else str(data)
    try:
        value = loads_bounded(text)
    except orjson.JSONDecodeError:
        value = None
    message = value.get("message") if isinstance(value, dict) else None
    shown = message if isinstance(message, str) else text
    return f"{_where(sse)}: the server's event source failed: {shown}"


def iter_sse_events(
    source: Source, *, strict: bool = True, on_problem: Callable[[Problem], None] | None = None
) -> Iterator[Any]:
    """Parsed agent events from a text/event-stream (each SSE ``data`` is one event's JSON). A bad
    event raises :class:`ValidationError` (``strict``) or is skipped and passed to ``on_problem`` (one
    whose only fault is invalid UTF-8 is then kept, with U+FFFD)."""
    return sse_agent_events(_sse_events(_chunks(source)), strict=strict, on_problem=on_problem)


def event_sse_decoder() -> SSEDecoder:
    """The SSE decoder agent events are read with (:func:`iter_sse_events`'s), for a reader that feeds it itself
    (``agentmsg validate``'s, which counts the lines: :func:`agentmsg._wire.records.read_sse`)."""
    return _EventSSE()


def sse_agent_events(
    events: Iterable[SSEEvent], *, strict: bool = True, on_problem: Callable[[Problem], None] | None = None
) -> Iterator[Any]:
    """:func:`iter_sse_events` of SSE events decoded already (by :func:`event_sse_decoder`): each event's agent
    event or problem is given (yielded, or passed to ``on_problem``) before the next event is read, but the
    endpoint's end event's, said once what follows it is read."""
    events = iter(events)
    for sse in events:
        problem = sse.problem
        if _endpoints(sse, END_EVENT):  # the endpoint's end of stream: no agent event; the end
            said = _after_end(sse, events)
            if said is not None:
                if strict:
                    raise ValidationError([Problem("", "order", said)], "event")
                if on_problem is not None:
                    on_problem(Problem("", "order", said))
            return
        if _endpoints(sse, ERROR_EVENT):  # the endpoint's failure: said, no agent event
            problem = Problem("", "source-error", _source_failed(sse))
            if strict:
                raise ValidationError([problem], "event")
            if on_problem is not None:
                on_problem(problem)
            continue
        if problem is not None:
            problem = Problem("", problem.rule, f"{_where(sse)}: {problem.message}")
            if strict:
                raise (SizeLimitError if problem.rule in _LIMIT_RULES else ValidationError)([problem], "event")
            if on_problem is not None:
                on_problem(problem)
            if problem.rule != "utf-8":
                continue
        try:
            yield loads_bounded(sse.data)
        except orjson.JSONDecodeError as exc:
            deep = isinstance(exc, TooDeep)
            rule, words = ("max-depth", str(exc)) if deep else unreadable(exc, sse.data)
            at = exc.pointer if isinstance(exc, TooDeep) else ""
            bad = Problem(at, rule, f"{_where(sse)}: data is {words if deep else f'not JSON: {words}'}")
            if strict:
                raise (SizeLimitError if deep else ValidationError)([bad], "event") from None
            if on_problem is not None:
                on_problem(bad)


def read_events(
    source: Source, *, strict: bool = True, on_problem: Callable[[Problem], None] | None = None
) -> Iterator[Any]:
    """Events from JSONL, SSE or a JSON array of events, whichever the stream is (detected from however many
    bytes it takes). Bad input raises (``strict``) or is skipped and passed to ``on_problem``."""
    kind, chunks = _detect(_chunks(source))
    if kind == "sse":
        return iter_sse_events(chunks, strict=strict, on_problem=on_problem)
    if kind == "values":
        return _iter_values(chunks, strict=strict, on_problem=on_problem)
    return iter_jsonl(chunks, strict=strict, on_problem=on_problem)


# ---- into the reducer -------------------------------------------------------------------------------------------


def reduce_stream(
    source: Source,
    *,
    strict: bool = False,
    sse: bool | None = None,
    reducer: Reducer | None = None,
) -> list[AssistantMessage]:
    """Bytes (JSONL, SSE or a JSON array of events, detected unless ``sse`` says SSE or JSONL; a binary file,
    chunks, or the text as a str) → messages, in
    bounded memory. Bad lines and events are reported like other bad input (``reducer.problems``, or
    :class:`ValidationError` when ``strict``); a line, SSE event or array value over
    ``limits['max_event_bytes']`` is skipped with a problem (rule ``max-event-bytes``; strict:
    :class:`SizeLimitError`)."""
    r = reducer or Reducer(strict=strict)
    source = _text(source)
    if isinstance(source, (bytearray, memoryview)):
        source = bytes(source)
    kind: str | None = None if sse is None else "sse" if sse else "jsonl"
    if isinstance(source, bytes):
        kind = kind or FormatSniffer().feed(source[: SNIFF_LIMIT + 8]) or "jsonl"
        body: Source = source
    else:
        chunks = _chunks(source)
        kind, body = _detect(chunks) if kind is None else (kind, chunks)
    # Millions of short-lived objects: generational GC passes would dominate; nothing here makes cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if kind == "sse":
            r.feed_many(_sse_agent_events(r, _sse_events(_chunks(body))))
        elif kind == "values":
            r.feed_many(_value_agent_events(r, _chunks(body)))
        else:
            max_line = max_event_bytes()
            line = 1
            for run in _runs(body, max_line):
                if run is None:
                    r.feed_unreadable(_too_long(line, max_line), rule="max-event-bytes", limit=True)
                    line += 1
                else:
                    line += r.feed_jsonl(run[0], run[1], run[2], first_line=line)
        return r.finish()
    finally:
        if gc_was_enabled:
            gc.enable()


def _sse_agent_events(r: Reducer, events: Iterable[SSEEvent]) -> Iterator[Any]:
    """The agent events of SSE events, for ``r.feed_many`` (one ``feed`` each, faster); what cannot be read is
    told to ``r`` in its place: ``feed_unreadable`` (counted as one event), or ``report`` of invalid UTF-8
    replaced before the event it is about (the reducer's count is then that event's index)."""
    events = iter(events)
    for sse in events:
        problem = sse.problem
        if _endpoints(sse, END_EVENT):  # the endpoint's end of stream: no agent event; the end
            said = _after_end(sse, events)
            if said is not None:  # (counted as one event, as @agentmsg/client counts it)
                r.feed_unreadable(said, rule="order")
            return
        if _endpoints(sse, ERROR_EVENT):  # the endpoint's failure: said, counted as one event
            r.feed_unreadable(_source_failed(sse), rule="source-error")
            continue
        if problem is not None:
            if problem.rule != "utf-8":
                r.feed_unreadable(
                    f"{_where(sse)}: {problem.message}: event skipped",
                    rule=problem.rule,
                    limit=problem.rule in _LIMIT_RULES,
                )
                continue
            r.report(f"{_where(sse)}: {problem.message}", rule=problem.rule)
        try:
            event = loads_bounded(sse.data)
        except TooDeep as exc:
            r._unreadable_at(exc.pointer, f"{_where(sse)}: data is {exc}: event skipped", "max-depth", True)
            continue
        except orjson.JSONDecodeError as exc:
            rule, words = unreadable(exc, sse.data)
            r.feed_unreadable(f"{_where(sse)}: data is not JSON: {words}", rule=rule)
            continue
        yield event
