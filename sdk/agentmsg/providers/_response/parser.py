"""Provider bodies -> agentmsg AgentEvents: the one stream parser and the one whole-reply reader.

:class:`StreamParser` serves every provider: the body's bytes go through the
:class:`~agentmsg._wire.framing.Framer` (SSE, JSON lines or JSON values), each payload is decoded here
(``[DONE]``, payloads that are not JSON, lone surrogate escapes, a payload after the end), and the provider's
:class:`~agentmsg.providers._response.reader.PayloadReader` (``Reader.chunk``) drives a
:class:`~agentmsg.providers._response.builder.StreamBuilder`, which writes the AgentEvents; the one
:class:`agentmsg.Reducer` folds them into the message. No provider keeps an accumulator of its own.

A non-streaming response is turned into the events its stream would give (:func:`read_response` reads the
body, the provider's ``Reader.reply`` writes through a builder) and reduced the same way
(:func:`response_message`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from time import time_ns as _time_ns
from typing import TYPE_CHECKING, Any, cast

import orjson

from agentmsg._codec.jsontext import INT_MAX, INT_MIN, check_json_value, json_type, parse_fast
from agentmsg._codec.jsontext import loads as json_loads
from agentmsg._native import speedups
from agentmsg._wire.framing import RAW_CUT, RAW_JSON, TRAILING, ErrorLine, Framer, RawUTF8, StrayLine, as_chunks
from agentmsg._wire.sse import SSEDecoder, SSEEvent
from agentmsg.errors import Problem, ValidationError, WrongTypeError
from agentmsg.events.reducer import reduce_events
from agentmsg.message import Msg
from agentmsg.providers._response import builder as _builder
from agentmsg.providers._response.builder import MICROS_Z, MILLIS
from agentmsg.providers._response.builder import now as _default_now
from agentmsg.providers._response.numbers import HugeNumber, loads_beyond_double
from agentmsg.providers._response.reader import PayloadReader, Route
from agentmsg.providers._response.think import make_builder

if TYPE_CHECKING:
    from agentmsg.providers.spec import Spec

__all__ = ["StreamParser", "decode_body", "read_response", "response_message", "run_parser"]


_ESCAPE = re.compile(r"\\\\|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # an escaped backslash, or a surrogate escape


def _without_lone_surrogates(data: str) -> str | None:
    """``data`` with each lone surrogate escape (``\\ud83d`` not followed by a low one, or a low one alone)
    written as ``\\ufffd``, or None when it has none. JSON's grammar allows them; orjson (and the message,
    which must be written back) does not. One pass over the escapes."""
    if "\\u" not in data:
        return None
    out: list[str] = []
    last = 0
    pending: re.Match[str] | None = None  # a high surrogate escape waiting for its low half
    changed = False
    for m in _ESCAPE.finditer(data):
        token = m.group()
        if token == "\\\\":
            continue
        high = token[2].lower() == "d" and token[3].lower() in "89ab"
        if pending is not None:
            if not high and m.start() == pending.end():
                pending = None  # a whole pair
                continue
            out.append(data[last : pending.start()] + "\\ufffd")
            last, changed = pending.end(), True
            pending = None
        if high:
            pending = m
        else:
            out.append(data[last : m.start()] + "\\ufffd")
            last, changed = m.end(), True
    if pending is not None:
        out.append(data[last : pending.start()] + "\\ufffd")
        last, changed = pending.end(), True
    if not changed:
        return None
    out.append(data[last:])
    return "".join(out)


#: The string of a payload of a known shape, in C (see PayloadReader.route_text); None without agentmsg._speedups
_string_between: Callable[[bytes, bytes, bytes, tuple[bytes, ...]], str | None] | None = getattr(
    speedups, "json_string_between", None
)


def _scanner_routes() -> bool:
    """Whether the C scanner reads a payload by a reader's route (``SSEScanner``'s ``route``; a module built before
    it did is read without it)."""
    scanner = getattr(speedups, "SSEScanner", None)
    try:
        return scanner is not None and scanner(1, 1, SSEEvent, True)(b"", "", [], 0, None)[0] == 0
    except TypeError:
        return False


#: Whether feed's scan reads the routed payloads too (see StreamParser.feed)
_SCAN_ROUTES = _scanner_routes()
#: The idle scan (SSEDecoder.idle_scanner's) given the reader's route: ``scan(chunk, last_id, out, dataless, route)``
_RoutedScan = Callable[[bytes, str, list[Any], int, Route | None], tuple[int, int, str]]


def loads(data: str | bytes) -> Any:
    """orjson.loads, for the parsers (one import site)."""
    return orjson.loads(data)


# ---- the incremental parser of every provider ----------------------------------------------------


class StreamParser:
    """Raw body bytes in, AgentEvent dicts out: ``feed(chunk) -> events``, ``close() -> events``.

    Framing (SSE, JSON lines or JSON values), JSON decoding, the ``[DONE]`` sentinel and unreadable payloads are
    handled here; the provider's reader (``reader``, a :class:`PayloadReader` subclass) reads each decoded JSON
    payload by driving :attr:`builder`. ``options``: the reader's own (``reader.options``), the rest go to the
    :class:`StreamBuilder` (``provider``: the name kept as reasoning provenance, default the spec's first
    family; ``think_tags``: ``<think>`` text read as reasoning, :mod:`.think`)."""

    def __init__(self, reader: type[PayloadReader], spec: Spec, **options: Any) -> None:
        # (most readers take no option of their own: no comprehension, a frame of its own, for them)
        own = {k: options.pop(k) for k in reader.options if k in options} if reader.options else {}
        # (feed ticks before the first event: the builder's own first reading of the clock was never used)
        try:
            self.builder = make_builder(options.pop("provider", spec.families[0]), _tick_later=True, **options)
        except TypeError as exc:  # a keyword no builder takes (the SDK's TypeError, at it)
            raise WrongTypeError.single("/options", "type", f"a stream parser's option: {exc}") from None
        self.reader = reader(self.builder, spec, **own)
        self._framer = Framer()
        #: where a bytes chunk goes once the body's format is known: the SSE decoder's feed (Framer.sse_feed), or
        #: the framer's own for a body of JSON lines or values
        self._sse: Callable[[bytes], list[Any]] | None = None
        #: the SSE decoder once the body is SSE and its scanner is in C: feed makes an idle decoder's scan itself
        #: (SSEDecoder's idle scan), with the scanner the decoder gives once (SSEDecoder.idle_scanner)
        self._dec: SSEDecoder | None = None
        self._scan: _RoutedScan | None = None
        #: the routed events of the route they were made for (reader.route, by identity): an event with its fixed
        #: parts (b.route_parts) that each copies, and a call's argument pieces (see _route_events); None: b.routed
        self._parts: tuple[dict[str, Any], list[str] | None] | None = None
        self._parts_of: object = None
        #: the millisecond of the last chunk's createdAt: its first nanosecond and its text up to there
        #: ("2026-12-02T15:31:12.345"); at first none (no clock's nanoseconds are within a millisecond of it)
        self._ms_ns = -(1 << 62)
        self._ms_text = ""
        #: that millisecond's second's text ("2026-12-02T15:31:12.") and the millisecond in it (345): a chunk read
        #: later in the same second is stamped with small ints only (see feed)
        self._ms_second = ""
        self._ms_of = 0
        #: the builder's clock when the caller gave one, called at each chunk; None: the default one, read inline
        self._clock = None if self.builder.clock is _default_now else self.builder.clock
        self._after_end = False  # a payload after the end was said (see _past_end)
        self._joined_said = False  # SSE events joined for want of blank lines were said (see _lines_of)
        self._raw_said = False  # a JSON value on lines of no SSE field was said (see _raw)
        self._stray_said: set[str] = set()  # the kinds of lines of no SSE field (no JSON) said (see _data)

    @property
    def done(self) -> bool:
        """Whether the provider's end-of-stream signal was seen."""
        return self.reader.done

    @property
    def problems(self) -> list[Problem]:
        return self.builder.problems

    def feed(self, chunk: bytes | str) -> list[dict[str, Any]]:
        """Parse the next piece of the body; the events it completes."""
        b = self.builder
        if b.closed:
            if not self._after_end:  # read on only to say whether the body goes on after its end
                for payload in self._framer.feed(chunk):
                    self._past_end(payload.event, payload.data)
            return b.drain()
        # b.tick(), inline (the events of one chunk share their createdAt), and the default clock's now too: a
        # live chunk's few Python frames cost most when they run cold (a model's chunks come apart)
        if self._clock is None:
            # (chunks read back to back: the same millisecond, its text kept; the nanoseconds into it a small int,
            # no division of the clock's 64-bit nanoseconds)
            ns = _time_ns()
            into = ns - self._ms_ns
            # (two comparisons, not chained: a chained one takes twice the steps; a live chunk, mostly a millisecond
            # or more after the last, is told by the first)
            if into < 1_000_000 and into >= 0:
                b.stamp = self._ms_text + MICROS_Z[into // 1000]
            elif into < 1_000_000_000 and into > 0 and (ms := self._ms_of + into // 1_000_000) < 1000:
                # (a live chunk: a few milliseconds after the last, mostly in the same second: its text and the
                # millisecond in it kept, the chunk's millisecond and microsecond found from ``into``, an int of one
                # 30-bit digit, not from the clock's nanoseconds, of three, each division of which costs more)
                head = self._ms_second + MILLIS[ms]
                self._ms_ns, self._ms_text, self._ms_of = ns - into % 1_000_000, head, ms
                b.stamp = head + MICROS_Z[into // 1000 % 1000]
            else:
                b.stamp = self._stamp_at(ns)
        else:
            b.stamp = self._clock()
        reader = self.reader
        dec = self._dec
        if dec is not None and dec.idle and type(chunk) is bytes:
            # The decoder's idle scan (SSEDecoder's contract: feed's C path), inline: the scan of the chunk's simple
            # events (the data of each UTF-8 bytes, checked; no problem), the rest of the chunk, if any, left to it
            payloads: list[Any] = []  # (SSEEvents, and the routed payloads' (value, data))
            # (a decoder is kept only with its scanner, SSEDecoder.idle_scanner's: its bounds bound, no crlf to tell).
            # With the reader's route: the payloads it reads come as (the string's value, the data), see the loop
            # (a decoder is kept with a scanner of the C kernel: json_string_between is there too)
            route = None if reader.done else reader.route
            # (the scanner taken as an attribute, then called: ``self._scan(...)`` is a method lookup, which an
            # instance's attribute never specializes; and the two comparisons an ``if``'s, which specialize, not an
            # expression's, which do not: about 250 instructions a chunk together)
            scan = self._scan
            pos, stop, last_id = scan(chunk, dec.id_buffer, payloads, dec.dataless, route)  # type: ignore[misc]
            if pos:  # whole events were dispatched: the last one's id
                dec.id_buffer = dec.last_event_id = last_id
            if stop < 0 and pos == len(chunk):
                simple = True  # every payload the scanner's: bytes, no problem
            else:
                simple = False
                dec.scan_on(chunk, pos, stop, payloads)
        elif self._sse is not None and type(chunk) is bytes:
            payloads, simple = self._sse(chunk), False
        else:
            simple = False
            framer = self._framer
            payloads = framer.feed(chunk)
            if framer.decided:  # from now on, bytes go straight to the SSE decoder (or to the framer, not SSE)
                self._sse = framer.sse_feed() or framer.feed
                dec = framer.sse_decoder()
                scanner = dec.idle_scanner() if dec is not None and _SCAN_ROUTES else None
                if scanner is not None:
                    self._dec, self._scan = dec, cast(_RoutedScan, scanner)
        # (orjson.loads and _string_between are taken where they are called: a chunk is mostly one payload, read
        # by the scan with its route, which calls neither; _string_between is None without the C kernel, where no
        # reader makes a route)
        for payload in payloads:
            route = reader.route
            if type(payload) is tuple:  # read by the scan with the route (its string's value, its data): as below
                text, data = payload
            else:
                data = payload.data
                # The common payload, inline (what _data does first): a simple event's data from the C scanner
                # (UTF-8, checked) holding a JSON object, before the provider's end of stream. A routed one first:
                # its bytes before the string (route[0]) begin with the "{" (no slice of the data to look at it)
                text = None
                if (
                    route is not None
                    and _string_between is not None
                    and payload.event == route[3]
                    and (simple or (type(data) is bytes and payload.problem is None))
                    and not reader.done
                ):
                    text = _string_between(data, route[0], route[1], route[4])  # (bytes: simple, or looked at)
            if text is not None:  # a payload of the shape the last one had: its delta (route_text)
                assert route is not None  # (for the type checker)
                b.payload = data
                try:
                    if self._parts_of is not route:  # (once per route: its block is open while it runs)
                        self._parts_of, self._parts = route, self._route_events(route)
                    parts = self._parts
                    if parts is not None and text:  # b.routed(...), inline (its frames cost most cold)
                        # (a copy of the route's event and three keys set cost a third less than a dict made)
                        event = parts[0].copy()
                        event["id"] = next(b.ids)
                        event["createdAt"] = b.stamp
                        event["delta"] = text
                        b.events.append(event)
                        if parts[1] is not None:  # a call's arguments (or a block's text, kept: block_texts)
                            parts[1].append(text)
                    else:  # (and the parts looked up again: a call's first argument text may have come)
                        b.routed(route[6], route[2], text)
                        self._parts_of = None
                    if route[5] is not None:
                        route[5](data)  # (bytes: a route is taken for bytes only)
                except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
                    self._shape(exc)
                continue
            if type(data) is bytes and data[:1] == b"{" and payload.problem is None and not reader.done:
                if route is not None:
                    reader.route = None  # another payload: read as below, which may set the route again
                try:
                    obj = orjson.loads(data)
                except orjson.JSONDecodeError:
                    pass  # _data reads it again, as text, to say why
                else:
                    if type(obj) is dict:
                        b.payload = data
                        try:
                            reader.chunk(payload.event, obj)
                        except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
                            self._shape(exc)
                        continue
            self._data(payload.event, data, payload.problem)
        if self._framer.notes and b.opened():
            self._say_notes()
        events = b.events  # (b.drain(), inline)
        b.events = []
        return events

    def _stamp_at(self, ns: int) -> str:
        """createdAt of a chunk read at ``ns`` (the default clock's nanoseconds) in another millisecond than the
        last chunk and not later in its second (see feed): its text, its second's and the millisecond in it kept
        for the chunks after it (as :func:`~.builder.now` writes it)."""
        micros = ns // 1000
        second = _builder.SECOND
        if second[0] != micros // 1_000_000:  # another second: formatted (and kept) by the builder's clock
            return _default_now()
        ms = micros // 1000 % 1000
        head = second[1] + MILLIS[ms]
        self._ms_ns, self._ms_text, self._ms_second, self._ms_of = micros // 1000 * 1_000_000, head, second[1], ms
        return head + MICROS_Z[micros % 1000]

    def _route_events(self, route: Any) -> tuple[dict[str, Any], list[str] | None] | None:
        """What feed writes a routed payload's delta as, while the route runs (see :attr:`_parts`): the delta event of
        ``b.routed`` with its fixed parts (:meth:`StreamBuilder.route_parts`), its keys in the builder's order, and
        the pieces the delta joins (a call's arguments, a block's text the builder keeps; else None); None when the
        builder does more."""
        parts = self.builder.route_parts(route[6], route[2])
        if parts is None:
            return None
        kind, reply_id, key, pieces = parts
        owner = "toolCallId" if kind == "TOOL_CALL_DELTA" else "blockId"
        return {"type": kind, "id": "", "createdAt": "", "replyId": reply_id, owner: key, "delta": ""}, pieces

    def _say_unclosed(self) -> None:
        """A JSON array of payloads (Gemini's stream without ``alt=sse``, a saved list of chunks) that ended before
        its ``]``: the stream was cut, whatever the reply's own end says (rule ``incomplete``, as ``reduce_stream``
        says an array of agent events cut so)."""
        if self._framer.unclosed:
            self.builder.problem("incomplete", "the JSON array of payloads ends without its ']': the stream was cut")

    def _say_notes(self) -> None:
        """What the framer left out that is not the reply's (an HTTP response head), said as not kept once the
        reply is open (said before its first payload, it would open the reply before the payload names it)."""
        for note in self._framer.notes:
            self.builder.not_kept(f"framing/{note}", note)
        self._framer.notes.clear()

    def _past_end(self, event: str, data: str | bytes) -> None:
        """A payload after the provider's end-of-stream signal (``[DONE]``, Anthropic's ``message_stop``): the
        reply is over, so it is skipped, and said once (problem ``order``), not dropped silently. Another
        ``[DONE]``, a ping or an empty payload is no news."""
        if self._after_end or event == "ping":
            return
        text = data.strip() if isinstance(data, str) else data.strip().decode("utf-8", "replace")
        if not text or text.startswith("[DONE]"):
            return
        self._after_end = True
        self.builder.problem(
            "order", f"a payload after the end of the reply: skipped, as is any after it: {text[:80]!r}"
        )

    def _data(self, event: str, data: str | bytes, problem: Problem | None) -> None:
        self.reader.route = None  # (every payload but the route's own is read by chunk(), which may set it again)
        if self.reader.done:
            self._past_end(event, data)
            return
        if type(data) is bytes:  # a simple event's data from the C scanner (UTF-8, checked) that feed's inline
            data = data.decode("utf-8")  # path did not take (not an object, not JSON): read as text, to say why
        assert isinstance(data, str)  # (for the type checker)
        if type(problem) is ErrorLine:  # an `error:` line (GPUStack's): the provider's error, said as read so
            if "error-line" not in self._stray_said:
                self._stray_said.add("error-line")
                self.builder.problem(problem.rule, problem.message)
            problem = None
        elif type(problem) is StrayLine:  # (each kind said once a stream: a proxy's page sends many such lines)
            kind = problem.message.partition(":")[0]
            if kind not in self._stray_said:
                self._stray_said.add(kind)
                self.builder.problem(problem.rule, problem.message)
            return
        if problem is RAW_JSON or problem is RAW_CUT or type(problem) is RawUTF8:
            if not self._raw(data, problem):
                return
            problem = None if problem is RAW_JSON else problem  # (invalid UTF-8 in it is said too, as utf-8)
        if problem is not None and problem is not TRAILING:
            self.builder.problem(problem.rule, f"{problem.message}: {'skipped' if not data else 'payload kept'}")
            if not data:
                return
        if not data.strip() and event != "error":
            return  # an event without data (a ping's `data:`): no news, as the SDKs skip it
        if data.startswith("[DONE]"):  # as the OpenAI SDK reads it (a trailing space, say)
            self.reader.done = True
            self.reader.end()
            self.builder.close(ended=True)
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            fixed = _without_lone_surrogates(data)
            text, error = data, exc
            if fixed is not None:
                try:
                    obj = orjson.loads(fixed)
                except orjson.JSONDecodeError as again:
                    text, error = fixed, again  # (also a number beyond a double, say: read below without them)
                else:  # a surrogate pair split across two payloads (a server cutting UTF-16): all else kept
                    self._surrogates_replaced()
                    self._object(event, obj, fixed)
                    return
            if "infinity" in str(error):  # a number beyond a double's range (1e400): read so, the payload kept
                # (read from the text without lone surrogates: orjson stops at the first fault, so a payload with
                # both got here with its surrogates unread, and the reader for such numbers takes them)
                huge = loads_beyond_double(text)
                if huge is not None:
                    if text is fixed:
                        self._surrogates_replaced()
                    self._object(event, huge, text)
                    return
            if "\n" in data and self._lines_of(event, data):
                return
            if event == "error":  # an error event whose data is plain text ("Internal Server Error")
                self.builder.error(data or "error event without data")
                self.reader.end_at_error()
            elif problem is TRAILING:
                self.builder.problem("incomplete", f"{problem.message}, and it is not JSON: skipped: {data[:80]!r}")
            else:
                self.builder.problem("json", f"a payload is not JSON ({exc}): skipped: {data[:80]!r}")
            return
        self._object(event, obj, data)

    def _surrogates_replaced(self) -> None:
        self.builder.problem("surrogate", "a lone UTF-16 surrogate escape (half of a character) replaced by U+FFFD")

    def _raw(self, data: str, problem: Problem) -> bool:
        """A JSON value the SSE body sent on lines of no SSE field (no ``data:``; Gemini's error after the events,
        as google-genai reads it): said once (problem ``sse``); whether it is read as a payload (it is whole)."""
        if not self._raw_said:
            self._raw_said = True
            self.builder.problem("sse", f"{RAW_JSON.message} (the SSE spec ignores such lines): {data[:80]!r}")
        if problem is RAW_CUT:
            self.builder.problem("incomplete", f"{problem.message}: skipped: {data[:80]!r}")
            return False
        return True

    def _lines_of(self, event: str, data: str) -> bool:
        """SSE saved without the blank lines between events (``data: {…}`` lines one after another): the spec
        joins them into one event's data, which is then no JSON. When each of its lines is a JSON object (or
        ``[DONE]``), they are the payloads: each read as a payload of its own (True), and said once (problem
        ``sse``). The SDKs' decoders, which join them too, lose them all."""
        lines = [line for line in data.split("\n") if line.strip()]
        try:
            payloads = len(lines) > 1 and all(
                line.startswith("[DONE]") or type(orjson.loads(line)) is dict for line in lines
            )
        except orjson.JSONDecodeError:
            return False
        if not payloads:
            return False
        for k, line in enumerate(lines):
            if k == 1 and not self._joined_said:  # said once the first payload has opened (and named) the reply
                self._joined_said = True
                self.builder.problem(
                    "sse",
                    f"an SSE event's data holds {len(lines)} JSON payloads on lines of their own (no blank line"
                    " between events?): read one by one",
                )
            self._data(event, line, None)
        return True

    def _dispatch(self, event: str, obj: dict[str, Any], data: str | bytes) -> None:
        self.builder.payload = data
        try:
            self.reader.chunk(event, obj)
        except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
            self._shape(exc)

    def _shape(self, exc: Exception) -> None:
        if type(exc) is RecursionError:  # a value nested too deep to write as text (a payload's depth is orjson's)
            self.builder.problem("max-depth", "a payload nested too deep to read (RecursionError): skipped")
            return
        self.builder.problem("type", f"an unexpected payload shape ({type(exc).__name__}: {exc}): skipped")

    def _object(self, event: str, obj: Any, data: str) -> None:
        if not isinstance(obj, dict):
            self.builder.problem("type", f"a payload is not a JSON object: skipped: {data[:80]!r}")
            return
        self._dispatch(event, obj, data)

    def error(self, message: str, **info: Any) -> list[dict[str, Any]]:
        """The transport failed (disconnect, timeout, cancellation): end every open choice as interrupted,
        keeping all that was received. Returns the closing events."""
        b = self.builder
        if not b.closed:
            self._last_payload()
            self.reader.end()
            b.error(message, **info)
            b.close()
        return b.drain()

    def close(self) -> list[dict[str, Any]]:
        """End of the body: the closing events (a reply the provider did not finish ends interrupted)."""
        b = self.builder
        if (
            b.closed and self.reader.done and not self._after_end
        ):  # a last payload after the end, without its blank line
            for payload in self._framer.close():
                self._past_end(payload.event, payload.data)
            self._say_unclosed()
        if not b.closed:
            self._last_payload()
            self._say_unclosed()
            self.reader.end()
            b.close(ended=self._whole())
        if self._framer.notes:  # (a body of nothing but an HTTP head and the end signal)
            self._say_notes()
        return b.drain()

    def _whole(self) -> bool:
        """Whether the body was a whole response, which ends its reply as ``parse_response`` ends it (a choice
        without a finish reason is whole: no reason invented, nothing said): one JSON object, neither SSE nor in
        an array (a server that ignored ``stream: true``, a saved response read with ``--stream``), of a shape the
        reader takes for a whole response (:meth:`PayloadReader.whole`), not a stream's one chunk."""
        lone = self._framer.lone
        if lone is None or (lone.problem is not None and lone.problem is not TRAILING):
            return False
        try:
            obj = decode_body(lone.data)
        except ValidationError:
            return False
        return type(obj) is dict and self.reader.whole(obj)

    def _last_payload(self) -> None:
        """The body ended (its end or a failed transport) with the reply open: read the payload the framer still
        holds (one without its blank line) and say the framer's notes, before the reply is ended."""
        self.builder.tick()
        for payload in self._framer.close():
            self._data(payload.event, payload.data, payload.problem)
        if self._framer.notes:
            self._say_notes()


# ---- non-streaming responses: one reader for every provider --------------------------------------


def read_response(
    body: bytes | str | Mapping[str, Any] | list[Any],
    what: str,
    events: Callable[[Any], list[dict[str, Any]]],
    *,
    arrays: bool = False,
) -> list[dict[str, Any]]:
    """The AgentEvents ``events(obj)`` makes of a response body (text is read under :data:`agentmsg.limits`;
    ``arrays``: a JSON array of responses is accepted too). Whatever is not such a response raises
    :class:`ValidationError`: text that is not JSON (rule ``json``, ...), a body that is not an object
    (``type``), or a shape the provider's reader cannot follow (``shape``), never a bare TypeError."""
    obj = decode_body(body) if isinstance(body, (bytes, bytearray, memoryview, str)) else body
    if not (isinstance(obj, Mapping) or (arrays and isinstance(obj, list))):
        raise ValidationError.single("", "type", f"{what} is a JSON object, not a JSON {json_type(obj)}")
    try:
        return events(obj)
    except ValidationError:
        raise  # the reader's own word (rule shape: not this provider's response)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise ValidationError.single(
            "", "shape", f"{what} has an unexpected shape ({type(exc).__name__}: {exc})"
        ) from None


def decode_body(body: bytes | bytearray | memoryview | str) -> Any:
    """A response body read by the codec (under the limits), as every provider's ``response_events`` and
    ``parse_response`` read it: a caller that asks several providers about one body (``agentmsg parse``'s hint)
    decodes it once with this and gives them the object. Raises :class:`ValidationError` for text that is not
    JSON. An integer beyond 64 bits, which a message cannot
    hold, does not cost the whole reply: it is read as it is, so that a tool's input keeps it in its raw
    arguments text (``argumentsError``), as the streamed reply does; a count saturates (:func:`safe_int`).
    Anything else the codec refuses still raises. A leading UTF-8 byte order mark is not part of the JSON (RFC 8259
    lets a reader ignore it; a stream's is too): left out, as it is of a stream."""
    if isinstance(body, str):
        if body[:1] == "\ufeff":
            body = body[1:]
    elif bytes(body[:3]) == b"\xef\xbb\xbf":
        body = bytes(body[3:])
    try:
        return json_loads(body)
    except ValidationError as exc:
        if all(p.rule == "json" and "infinity" in p.message for p in exc.problems):
            # a number beyond a double's range (1e400): read so (HugeNumber), as a stream's payload is
            value = loads_beyond_double(bytes(body) if isinstance(body, (bytearray, memoryview)) else body)
            if value is None:
                raise
            check_json_value(_big_ints_as_zero(value))
            return value
        if any(p.rule != "integer-range" for p in exc.problems):
            raise
        refused = exc
    text = bytes(body) if isinstance(body, (bytearray, memoryview)) else body
    value = parse_fast(text)
    if value is None:  # an integer of more digits than Python's int() reads (4,300): a HugeNumber, as a stream's is
        value = loads_beyond_double(text)
        if value is None:
            raise refused
    check_json_value(_big_ints_as_zero(value))  # depth, lone surrogates: what else the codec checks
    return value


def _big_ints_as_zero(value: Any) -> Any:
    """A copy of ``value`` with each integer beyond 64 bits replaced by 0 (for the codec's other checks)."""
    out: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, out, 0)]
    while stack:
        node, parent, key = stack.pop()
        kind = type(node)
        if kind is dict:
            copy: Any = dict(node)
            stack.extend((child, copy, k) for k, child in node.items())
        elif kind is list:
            copy = list(node)
            stack.extend((child, copy, i) for i, child in enumerate(node))
        elif (kind is int and not INT_MIN <= node <= INT_MAX) or kind is HugeNumber:
            copy = 0
        else:
            copy = node
        parent[key] = copy
    return out[0]


def response_message(events: list[dict[str, Any]], choice: int, what: str) -> Msg:
    """The message of choice ``choice`` among a response's events; :class:`ValidationError` (rule
    ``choice``) when the response has no such choice."""
    msgs = reduce_events(events, source=None if choice == 0 else f"choice/{choice}", trusted=True)
    if not msgs:
        raise ValidationError.single("", "choice", f"{what} has no choice {choice}")
    return msgs[0]


def run_parser(parser: StreamParser, chunks: Iterable[bytes | str] | bytes | str) -> Iterator[dict[str, Any]]:
    """Every event of a body given whole or as chunks."""
    for chunk in as_chunks(chunks):
        yield from parser.feed(chunk)
    yield from parser.close()
