"""Provider bodies -> payloads: :class:`Framer` turns raw bytes into payloads through the one SSE decoder
(:class:`agentmsg._wire.sse.SSEDecoder`), or reads JSON lines when the body is not SSE (a body that does not
start with an SSE field or comment: DashScope's SDK-printed streams, logs, an error page), or JSON values
one after another (a JSON array of chunks, pretty-printed payloads).
:class:`~agentmsg.providers._response.parser.BaseStreamParser` reads each payload it gives."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import attrs

from agentmsg._codec.limits import limits
from agentmsg._wire.lines import LineSplitter, Run
from agentmsg._wire.sse import (
    DL_PROVIDER,
    DL_TAKE,
    DL_UNKNOWN,
    SNIFF_LIMIT,
    SSE_PREFIXES,
    FormatSniffer,
    JSONDataDecoder,
    SSEDecoder,
    SSEEvent,
    event_end,
    of_no_field,
    sniff,
)
from agentmsg._wire.values import ValueSplitter
from agentmsg.errors import Problem, WrongTypeError, require_bytes, wrong_type

__all__ = [
    "RAW_CUT",
    "RAW_JSON",
    "SSE_STARTS",
    "TRAILING",
    "Framer",
    "RawUTF8",
    "StrayLine",
    "as_chunks",
    "is_sse_body",
    "without_http_heads",
]


#: A whole body is read in pieces of this many bytes (characters of a str): its events are made as they are
#: taken, not all at once (a 50 MB SSE body fed whole made its 320,000 events in one list: 220 MB).
WHOLE_PIECE = 1 << 18


def as_chunks(chunks: Iterable[bytes | str] | bytes | str) -> Iterable[bytes | str]:
    """A whole body (in pieces of :data:`WHOLE_PIECE`) or an iterable of chunks, as an iterable of chunks."""
    if isinstance(chunks, (bytes, bytearray, str)):
        if len(chunks) <= WHOLE_PIECE:
            return (chunks,)
        body = chunks
        return (body[i : i + WHOLE_PIECE] for i in range(0, len(body), WHOLE_PIECE))
    if not isinstance(chunks, Iterable):
        raise WrongTypeError.single(
            "", "type", f"expected a body: bytes, str or an iterable of chunks, not {type(chunks).__name__}"
        )
    return chunks


_BOM = b"\xef\xbb\xbf"
_BLANK = b" \t\r\n"
_HTTP = b"HTTP/"  # a captured response's status line starts so (curl -i)
#: A payload read at the end of a body without its terminator (SSE: the blank line; JSON lines: the newline).
#: Bodies saved from docs and logs often lack it, so the payload is still taken when it is whole JSON.
TRAILING = Problem("", "incomplete", "the stream ended inside this payload (no end of event or line after it)")
#: A JSON value an SSE body carries on lines outside any SSE field (Gemini sends its error so after the events,
#: pretty-printed or on one line): read as a payload, as google-genai reads it, and said once by the parser.
RAW_JSON = Problem("", "sse", "a JSON value on lines of no SSE field (no `data:`) is read as a payload")
#: Such a value that ended (a blank line, an SSE field, the end of the body) before its brackets balanced.
RAW_CUT = Problem("", "incomplete", "a JSON value on lines of no SSE field ended before it was whole")


@attrs.frozen
class RawUTF8(Problem):
    """A whole JSON value of no SSE field (as :data:`RAW_JSON`) that held invalid UTF-8, replaced by U+FFFD (rule
    ``utf-8``): the parser says both, each once (the value read outside a field as ``sse``, the bytes replaced
    as ``utf-8``)."""


@attrs.frozen
class StrayLine(Problem):
    """A line of no SSE field that starts no JSON value (a proxy's ``Internal Server Error``, an HTML error page):
    the spec ignores it; the parser says the first of a stream (rule ``sse``). After ``event: error`` with no data,
    it is that error's text (the event's data)."""


@attrs.frozen
class ErrorLine(Problem):
    """An ``error:`` line: a field the SSE spec does not know (it ignores the line), which GPUStack / llama-box send
    their error on (``error: {"error": {"message": ...}}``), ending the stream. Dispatched as an ``error`` event
    whose data is the line's value, so that the provider's error is the reply's; said once (rule ``sse``)."""


#: How a provider's SSE body may start: an SSE field or comment, or an `error:` line (GPUStack / llama-box send an
#: error that comes before any data so: :class:`ErrorLine`, read as the provider's error; the body was read as JSON
#: lines, the error lost and the reply read as cut)
SSE_STARTS = (*SSE_PREFIXES, b"error:")
_OPENERS = (b"{", b"[")
#: What counts for a raw JSON value's depth: a whole string on its line (JSON strings hold no line end), or a bracket
_DEPTH = re.compile(rb'"(?:[^"\\]|\\.)*"?|[][{}]')


class _ProviderSSE(JSONDataDecoder):
    """The SSE decoder of provider bodies: an SSE decoder (:class:`JSONDataDecoder`) that also reads a JSON value
    sent on lines outside any SSE field (no ``data:``): Gemini sends its error so after the events, pretty-printed
    over several lines or on one (google-genai collects such lines until the braces balance and raises the
    error). A line of no SSE field that starts with ``{`` or ``[`` starts such a value; it is dispatched as a
    payload when its brackets balance (problem :data:`RAW_JSON`), or, cut by a blank line, an SSE field or the
    end of the body, with :data:`RAW_CUT`. The spec ignores such lines: the SDKs of the other providers lose
    them. Each line is scanned once; the value is bounded by ``max_event_bytes`` (beyond: dropped, said)."""

    # What is known of a raw JSON value beside its bytes (``_raw``), set when one starts and read only while it is
    # read: class defaults, not set by each decoder, whose attributes then stay within the 30 CPython 3.11 shares
    # its keys for (with these, 31: each decoder's dict was made anew and grown by resizing, about 1 us a reply)
    _raw_depth: int | None = 0  # its open brackets (None: unknown, an overlong line was dropped)
    _raw_size = 0
    _raw_problem: Problem | None = None  # the value was dropped (over a size limit)
    _raw_event = "message"  # its event name: an ``event:`` line just before it, with no data, names it

    def __init__(self) -> None:
        super().__init__()
        # Between events, blank lines and comments do nothing; a line of no SSE field is said (StrayLine) the
        # first time, and does nothing after that (see _stray), unless it may start a JSON value or an error.
        self.dataless = DL_TAKE | DL_PROVIDER
        self._skip_said = False  # a line of no SSE field was said skipped (said once: the parser says it once)
        #: the raw JSON value being read, its lines joined by LFs (None: none): its bytes (a bytes object per line
        #: held about 20 times the bytes of a value of many short lines, which the size limit counts); the rest of
        #: what is known of it is set when it starts (the class's defaults until then)
        self._raw: bytearray | None = None
        self._stray_error = False  # the event's data is the text of lines of no SSE field after `event: error`

    def _process(self, line: bytes, out: list[SSEEvent]) -> None:
        if self._raw is not None:
            if line and of_no_field(line):
                self._raw_line(line, out)
                return
            self._raw_end(out, RAW_CUT)  # a blank line or an SSE field: the value ends here, cut
        elif line[:1] in _OPENERS or (line[:1] in b" \t" and line.lstrip(b" \t")[:1] in _OPENERS):
            # (no SSE field starts so): a JSON value outside any field
            named = self._event if not self._data and self._problem is None else ""
            if self._data or self._problem is not None or self._event or self._retry is not None:
                self._end_event(out)  # the event before it, in its place
            # An event name with no data before it (``event: error``, then the error as a raw JSON value) is the
            # value's: the value is that event's data (else the name was lost, and the error with it)
            self._raw_event = named or "message"
            self._raw, self._raw_depth, self._raw_size, self._raw_problem = bytearray(), 0, 0, None
            # While the value is read, the decoder is inside it (SSEDecoder._own_value): the next chunk's lines go to
            # the line parser, in order, up to a blank line, never to the fast path of simple events ahead of its end.
            self._own_value = True
            self._raw_line(line, out)
            return
        elif not line:
            self._stray_error = False
            if self._event == "error" and not self._data and self._problem is None:
                # `event: error` with no data: the spec dispatches nothing (the error was lost); an error it is
                out.append(SSEEvent("", "error", self.id_buffer, self._retry))
        elif of_no_field(line):
            self._stray(line, out)
            return
        SSEDecoder._process(self, line, out)

    def _end_event(self, out: list[SSEEvent]) -> None:
        """The event being read, dispatched before what comes next (a JSON value or an ``error:`` line): as at a
        blank line, lines of no SSE field are no longer its error's text (else an ``error:`` line after a skipped
        blank line was taken for more of it)."""
        self._stray_error = False
        SSEDecoder._process(self, b"", out)

    def _stray(self, line: bytes, out: list[SSEEvent]) -> None:
        """A line of no SSE field that starts no JSON value: said (:class:`StrayLine`), and, after ``event: error``
        with no data, read as that error's data (its text: a proxy's ``Internal Server Error``)."""
        shown = line[:80].decode("utf-8", "replace")
        if line[:6] == b"error:" and not self._stray_error:
            if self._data or self._problem is not None or self._event or self._retry is not None:
                self._end_event(out)  # the event before it, in its place
            value = line[6:]
            why = "an `error:` line (a field the SSE spec does not know, which it ignores) is read as the provider's error"
            out.append(
                SSEEvent(
                    self._text(value[1:] if value[:1] == b" " else value),
                    "error",
                    self.id_buffer,
                    None,
                    ErrorLine("", "sse", why),
                )
            )
            return
        if self._event == "error" and self._problem is None and (self._stray_error or not self._data):
            why = f"a line of no SSE field after `event: error` is read as the error's text: {shown!r}"
            SSEDecoder._process(self, b"data:" + line, out)
            self._stray_error = True  # (the error's next such line too: its text may span lines)
        else:
            if self._skip_said:
                return  # (the parser says the first of a stream, "and any more like it")
            self._skip_said = True
            self.dataless |= DL_UNKNOWN  # from now on such lines are skipped at once between events
            why = (
                f"a line of no SSE field (no `data:`) is skipped, as the SSE spec reads it (and any more like it):"
                f" {shown!r}"
            )
        out.append(SSEEvent("", "message", self.id_buffer, None, StrayLine("", "sse", why)))

    def _raw_line(self, line: bytes, out: list[SSEEvent]) -> None:
        raw = self._raw
        assert raw is not None
        if self._raw_problem is None:
            self._raw_size += len(line) + 1
            if self._raw_size > self.max_event_bytes:
                raw.clear()
                self._raw_problem = Problem(
                    "",
                    "max-event-bytes",
                    f"a JSON value on lines of no SSE field is longer than {self.max_event_bytes} bytes: dropped",
                )
            else:
                if raw:  # (its first line is not empty: it starts the value)
                    raw += b"\n"
                raw += line
        depth = self._raw_depth
        if depth is None:
            return  # (an overlong line was dropped: the value ends at a blank line or a field)
        for m in _DEPTH.finditer(line):
            token = m.group()
            if token[:1] == b'"':
                continue
            depth += 1 if token in (b"{", b"[") else -1
            if depth <= 0:
                break
        self._raw_depth = depth
        if depth <= 0:
            self._raw_end(out, RAW_JSON)

    def _raw_end(self, out: list[SSEEvent], problem: Problem) -> None:
        raw, self._raw = self._raw, None
        self._own_value = False
        assert raw is not None
        if self._raw_problem is not None:
            out.append(SSEEvent("", self._raw_event, self.id_buffer, None, self._raw_problem))
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "replace")
            if problem is RAW_JSON:  # (a cut value is skipped whole: its bytes are not read)
                problem = RawUTF8(
                    "", "utf-8", f"invalid UTF-8 (byte {exc.start} of a JSON value of no SSE field) replaced by U+FFFD"
                )
        out.append(SSEEvent(text, self._raw_event, self.id_buffer, None, problem))

    def _overlong(self) -> None:
        if self._raw is None:
            super()._overlong()
            return
        self._line.clear()
        self._skip = True
        self._raw.clear()
        self._raw_depth = None
        self._raw_problem = Problem(
            "",
            "max-line-bytes",
            f"a line longer than {self.max_line_bytes} bytes in a JSON value of no SSE field: dropped",
        )


class Framer:
    """Raw body chunks -> payloads (:class:`agentmsg._wire.sse.SSEEvent`: event name, data text, problem): SSE
    through :class:`SSEDecoder`, or JSON lines (the one line splitter, :class:`agentmsg._wire.lines.LineSplitter`)
    when the body does not start as SSE does (:func:`agentmsg._wire.sse.sniff`, as for agent event streams: a
    body that is neither, an HTML error page say, is then reported line by line, not skipped as SSE), or
    JSON values one after another (:class:`agentmsg._wire.values.ValueSplitter`) when it starts with ``[`` (a
    JSON array of payloads: Gemini without ``alt=sse``, a saved list of chunks) or with ``{`` alone on its
    first line (pretty-printed payloads).

    Nothing is changed or dropped silently: ``problem`` is the decoder's (rule ``utf-8``: invalid UTF-8
    replaced by U+FFFD, the data otherwise whole; ``max-line-bytes`` / ``max-event-bytes``: a line or
    event over ``limits.max_event_bytes`` was dropped, ``data`` is empty) or :data:`TRAILING` for the last
    payload of a body that ended inside it; a JSON array of payloads that ended before its ``]`` says so in
    :attr:`unclosed`. The SSE ``data: [DONE]`` sentinel is passed on as ``"[DONE]"``.
    Time is linear in the body, whatever the chunking; memory holds one line or event."""

    __slots__ = ("_count", "_decoder", "_first", "_format", "_head", "_lines", "_mode", "_scanned", "_values", "notes")

    def __init__(self) -> None:
        self._mode: str | None = None  # "sse" | "jsonl" | "values", decided by the body's first bytes
        #: what tells the format from the first bytes, made when they do not tell it at once (see feed); None
        #: before that and once decided
        self._format: FormatSniffer | None = None
        self._decoder = _ProviderSSE()  # data as bytes, for BaseStreamParser._data
        self._lines: LineSplitter | None = None  # made when the body is JSON lines
        self._values: ValueSplitter | None = None  # made when the body is JSON values
        self._head: bytearray | None = bytearray()  # the body's start while it may be an HTTP head (None: past it)
        self._scanned = 0  # bytes of the held head with no blank line in them
        #: the payloads of a body of JSON lines or values (counted up to 2) and the first of them (see :attr:`lone`)
        self._count = 0
        self._first: SSEEvent | None = None
        #: What was left out that is not the reply's: the status lines of a captured response (``curl -i``),
        #: for the parser to say (:meth:`BaseStreamParser.feed`).
        self.notes: list[str] = []

    @property
    def unclosed(self) -> bool:
        """Whether the body, a JSON array of payloads, ended without its ``]`` (a cut stream; set by :meth:`close`)."""
        return self._values is not None and self._values.unclosed

    @property
    def lone(self) -> SSEEvent | None:
        """The body's one payload when it held no other and was neither SSE nor a JSON array: a JSON object given
        whole (a whole response: a server that ignored ``stream: true``, a saved response), else None."""
        if self._count != 1 or (self._values is not None and self._values.arrayed):
            return None
        return self._first

    @property
    def decided(self) -> bool:
        """Whether the body's format is known (its first bytes told it)."""
        return self._mode is not None

    def sse_feed(self) -> Callable[[bytes], list[SSEEvent]] | None:
        """Once the body is known to be SSE, the SSE decoder's ``feed``: what :meth:`feed` does with a ``bytes``
        chunk from then on, without the call in between (a stream parser's per-chunk path); else None."""
        return self._decoder.feed if self._mode == "sse" else None

    def sse_decoder(self) -> SSEDecoder | None:
        """Once the body is known to be SSE, its decoder (what :meth:`sse_feed` feeds), else None."""
        return self._decoder if self._mode == "sse" else None

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8", "surrogatepass")  # a lone surrogate becomes invalid UTF-8: reported
        elif not isinstance(chunk, (bytes, bytearray)):
            if not isinstance(chunk, memoryview):  # (the SDK's TypeError: SSEDecoder.feed's, at /chunk)
                raise wrong_type("/chunk", "a body or a chunk of it is bytes or str", chunk)
            chunk = bytes(chunk)
        if self._head is not None:
            if not self._head and type(chunk) is bytes and len(chunk) >= 8 and chunk.startswith(SSE_STARTS):
                # The common first chunk, SSE from its first byte: what _past_http_head, _decide and the sniffer
                # would tell of it (no HTTP head; "sse"), told at once, with no sniffer made for it
                self._head = None
                self._mode = "sse"
                return self._decoder.feed(chunk)
            chunk = self._past_http_head(chunk)
            if self._head is not None:
                return []
        if self._mode is None:
            chunk = self._decide(chunk)
            if self._mode is None:
                return []
        if self._mode == "sse":
            return self._decoder.feed(chunk)
        if self._values is not None:
            return self._value_payloads(self._values.feed(chunk), trailing=False)
        assert self._lines is not None
        return self._payloads(self._lines.feed(chunk), trailing=False)

    def _past_http_head(self, chunk: bytes) -> bytes:
        """A body saved with its HTTP response head (``curl -i``: a status line, headers, a blank line; an
        interim ``100 Continue`` head before it): the heads are left out and their status lines noted; then
        the rest of the body. Other bodies are given back as they are, with no copy. A head is held until its
        blank line (each byte looked at once), at most 64 KiB: without a blank line by then, it is no head."""
        head = self._head
        assert head is not None
        if not head and chunk[: len(_HTTP)] != _HTTP[: len(chunk)]:
            self._head = None  # the usual case: no HTTP head
            return chunk
        head += chunk
        while True:
            if head[: len(_HTTP)] != _HTTP[: len(head)]:
                self._head = None
                return bytes(head)
            if len(head) < len(_HTTP):
                return b""  # maybe "HTTP/" cut across chunks: wait
            start = max(0, self._scanned - 3)  # (a blank line may straddle the last chunk's end)
            end = event_end(bytes(head[start:]))
            if end < 0:
                self._scanned = len(head)
                if len(head) <= SNIFF_LIMIT:
                    return b""  # the head goes on in the next chunk
                self._head = None  # no blank line in 64 KiB: no HTTP head after all
                return bytes(head)
            end += start
            status = bytes(head[: head.find(b"\n")]).strip().decode("utf-8", "replace")[:200]
            self.notes.append(f"the body starts with an HTTP response head ({status!r}): left out")
            del head[:end]
            self._scanned = 0

    def _decide(self, chunk: bytes) -> bytes:
        """Read the body's first bytes until they tell its format (:class:`agentmsg._wire.sse.FormatSniffer`, as
        ``reduce_stream`` tells them); then the bytes to parse."""
        if self._format is None:
            self._format = FormatSniffer(SSE_STARTS)
        kind = self._format.feed(chunk)
        if kind == "jsonl" and self._format.head.removeprefix(_BOM).lstrip(_BLANK)[:1] not in _OPENERS:
            # a first line that is no SSE field and starts no JSON value (a proxy's banner, a stray line): no JSON
            # lines either; read as SSE, which skips and says it (StrayLine) and reads the events after it (as JSON
            # lines, each data: line was "not JSON": the reply lost). JSON lines after it are read there too.
            kind = "sse"
        return b"" if kind is None else self._begin(kind)

    def _begin(self, kind: str) -> bytes:
        """Read the body as ``kind`` from now on; the bytes read so far, to parse (a BOM left out for JSON lines
        and values; the SSE decoder handles its own)."""
        head = b"" if self._format is None else self._format.head  # (None: the body ended before its first byte)
        self._format = None  # the head is handed over: not held twice
        self._mode = kind
        if kind == "sse":
            return head
        if kind == "values":
            self._values = ValueSplitter(limits.max_event_bytes)
        else:
            self._lines = LineSplitter(limits.max_event_bytes)
        return head.removeprefix(_BOM)

    def close(self) -> list[SSEEvent]:
        """End of the body: a last payload not followed by its terminator, with :data:`TRAILING` (or the
        decoder's own problem)."""
        if self._head:  # the body ended inside what may be an HTTP head: read as a body after all
            held, self._head = bytes(self._head), None
            return self.feed(held) + self.close()
        self._head = None
        first: list[SSEEvent] = []
        if self._mode is None:  # the body ended before it told its format (blanks, or "{" and blanks): lines
            head = self._begin("jsonl")
            assert self._lines is not None
            first = self._payloads(self._lines.feed(head), trailing=False)
        if self._values is not None:
            return self._value_payloads(self._values.close(), trailing=True)
        if self._lines is not None:
            return first + self._payloads(self._lines.close(), trailing=True)
        if self._decoder.idle:  # between two events with nothing held: no last event (what the feed below tells)
            return []
        # A last event without its blank line: dispatched (the spec discards it; saved bodies lack it).
        out = self._decoder.feed(b"\n\n")
        for e in out:
            e.problem = e.problem or TRAILING
        return out

    def _value_payloads(self, items: list[tuple[bytes, bool] | None], trailing: bool) -> list[SSEEvent]:
        # text between values that is no value is read, and reported, as a payload that is not JSON
        out = [_dropped("value") if item is None else _payload(item[0], "value") for item in items]
        self._counted(out)
        return _trailing(out) if trailing else out

    def _payloads(self, runs: list[Run | None], trailing: bool) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for run in runs:
            if run is None:
                out.append(_dropped("line"))
                continue
            data, start, end = run
            out.extend(_payload(line, "line") for line in data[start:end].split(b"\n") if line.strip(_BLANK))
        self._counted(out)
        return _trailing(out) if trailing else out

    def _counted(self, out: list[SSEEvent]) -> None:
        """The payloads of a body of JSON lines or values, counted up to two, and the first kept (:attr:`lone`)."""
        if out and self._count < 2:
            if not self._count:
                self._first = out[0]
            self._count += len(out)
            if self._count > 1:
                self._first = None  # (no lone payload: not held while the body goes on)


def without_http_heads(data: bytes) -> tuple[bytes, list[str]]:
    """A reply body saved whole with the HTTP response heads it starts with (``curl -i``: a status line, headers,
    a blank line; an interim ``100 Continue`` head before it), without them, and the notes that say what was
    left out (one per head, naming its status line); the body as it is, and no note, when it starts with none.
    For ``parse_response``, which takes a body; a stream parser leaves heads out itself (and says so in a
    CUSTOM ``agentmsg.not-kept`` event). (:meth:`Framer._past_http_head`.) ``data`` is not bytes: a
    ValidationError (rule ``type``, pointer ``/data``)."""
    require_bytes(data, "data")
    framer = Framer()
    rest = framer._past_http_head(data)
    if framer._head is not None:  # no blank line after what looked like a head: no head after all
        return data, []
    return rest, framer.notes


def is_sse_body(data: bytes) -> bool:
    """Whether a provider's reply body, saved whole, is a stream as the provider sends one (text/event-stream),
    not a whole response: after a BOM, blanks and any HTTP response head saved with it (:func:`without_http_heads`),
    it starts with an SSE field or comment, or with an ``error:`` line (GPUStack and llama-box send an error
    that comes before any data so). A stream saved as JSON lines or a JSON array of chunks is not told so: it
    is read as a stream when the caller says it is one. ``data`` is not bytes: a ValidationError (rule ``type``,
    pointer ``/data``)."""
    require_bytes(data, "data")
    if sniff(data[: SNIFF_LIMIT + 8], SSE_STARTS):
        return True
    body, notes = without_http_heads(data)
    return bool(notes) and bool(sniff(body[: SNIFF_LIMIT + 8], SSE_STARTS))


def _payload(data: bytes, what: str) -> SSEEvent:
    """A JSON line's or value's payload: its text (invalid UTF-8 replaced by U+FFFD and said, rule ``utf-8``)."""
    try:
        return SSEEvent(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        problem = Problem("", "utf-8", f"invalid UTF-8 (byte {exc.start} of a {what}) replaced by U+FFFD")
        return SSEEvent(data.decode("utf-8", "replace"), problem=problem)


def _dropped(what: str) -> SSEEvent:
    """The empty payload said in place of a line or value over ``limits.max_event_bytes``."""
    limit = limits.max_event_bytes
    return SSEEvent("", problem=Problem("", "max-event-bytes", f"a {what} longer than {limit} bytes: dropped"))


def _trailing(out: list[SSEEvent]) -> list[SSEEvent]:
    """The payloads read at the end of a body: the last one lacked its terminator (:data:`TRAILING`)."""
    if out and out[-1].problem is None:
        out[-1].problem = TRAILING
    return out
