"""Server-sent events (text/event-stream): the generic codec, with no knowledge of what the data holds.

:class:`SSEDecoder` parses a stream incrementally, as the WHATWG spec says: LF, CRLF or CR line ends
(also split across chunks), a leading BOM, comment lines, multi-line ``data``, ``retry``, the last event
id. It works on bytes in time linear in the input, holds at most one line and one event's data, and
changes nothing silently: invalid UTF-8 is replaced by U+FFFD as the spec says *and* reported on the
event (:attr:`SSEEvent.problem`, rule ``utf-8``); a line or an event's data beyond the size limit is
dropped and reported (rules ``max-line-bytes``, ``max-event-bytes``). :func:`encode_event` writes one
event. Agent events over SSE are in :mod:`agentmsg.events.sse`; provider streams use the same decoder.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Any, ClassVar, Final, Literal, cast

import attrs

from agentmsg._codec.jsontext import loads_bounded
from agentmsg._codec.limits import limits, require_limit
from agentmsg._native import speedups
from agentmsg._wire.values import starts_values
from agentmsg.errors import Problem, ValidationError, require_bytes, require_count, short_repr, wrong_type

__all__ = [
    "FormatSniffer",
    "JSONDataDecoder",
    "SSEDecoder",
    "SSEEvent",
    "Sniffer",
    "encode_event",
    "sniff",
    "sniff_format",
]

_BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"
#: What an SSE line starts with (a field the spec knows, or a comment): the sniffers' and the provider framing's
SSE_PREFIXES = (b"data:", b"id:", b"event:", b":", b"retry:")
SNIFF_LIMIT = 1 << 16  # leading blanks beyond this: not SSE
#: The fields the SSE spec knows; a line of another (nor a comment) is ignored by the spec
SSE_FIELDS: Final = (b"data", b"event", b"id", b"retry")


def of_no_field(line: bytes) -> bool:
    """Whether a line that is not blank is of no SSE field: neither a comment nor one of :data:`SSE_FIELDS` (the spec
    ignores it; the readers of provider bodies and of agent events say it)."""
    return line[:1] != b":" and line.partition(b":")[0] not in SSE_FIELDS


#: What a first chunk that settles no BOM question starts with: nothing (an empty chunk), or a BOM's first byte
_NO_HEAD = (b"", _BOM[:1])
_WS_OR_BOM = _WS + _BOM[:1]  # the bytes a body may start with before its first field
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_bytes(text: str) -> bytes:
    """A str chunk as UTF-8. Surrogates (a str holds them only from UTF-16 text, as a JavaScript string does)
    are read as UTF-16: a pair is one character; a surrogate still alone becomes the invalid byte 0xFF, which
    the decoder replaces by one U+FFFD and reports (rule ``utf-8``), as ``@agentmsg/client``'s does."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text.encode("utf-8")
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _SURROGATE.sub("\udcff", joined).encode("utf-8", "surrogateescape")  # U+DCFF: the byte 0xFF


@attrs.define
class SSEEvent:
    """One dispatched SSE event. ``problem`` says what went wrong while reading it (None: nothing):
    rule ``utf-8`` (invalid UTF-8 was replaced by U+FFFD; the data is otherwise whole), or
    ``max-line-bytes`` / ``max-event-bytes`` (a line or the data went over the limit and was dropped:
    ``data`` is then empty)."""

    data: str
    event: str = "message"
    id: str = ""  # the last event id in effect when this event was dispatched
    retry: int | None = None  # a retry field of this event's own lines (the stream's: SSEDecoder.retry)
    problem: Problem | None = None

    def json(self) -> Any:
        return loads_bounded(self.data)


def event_end(chunk: bytes, pos: int = 0, stop: int | None = None) -> int:
    """Where the first blank line ``\n\n`` or ``\r\n\r\n`` of ``chunk[pos:stop]`` ends (-1: none): whatever
    line ``pos`` is in, the second line end there ends an empty line, so the line parser holds no event after
    it. (A blank line of lone CRs or of mixed line ends is not looked for: the line parser reads on line by
    line, which finds it.) Both are looked for from the first LF (memchr): a find of two bytes or more reads
    each byte, 60 times slower, so a chunk inside a long line cost a tenth of a millisecond per 64 KiB here.
    (Package-internal: the provider framing's, ``_wire/framing.py``, too.)"""
    if stop is None:
        stop = len(chunk)
    first = chunk.find(b"\n", pos, stop)
    if first < 0:
        return -1
    lf = chunk.find(b"\n\n", first, stop)
    crlf = chunk.find(b"\r\n\r\n", max(first - 1, pos), stop)
    if crlf >= 0 and (lf < 0 or crlf + 4 < lf + 2):
        return crlf + 4
    return lf + 2 if lf >= 0 else -1


def sniff(head: bytes, prefixes: tuple[bytes, ...] = SSE_PREFIXES) -> bool | None:
    """Whether a stream that starts with ``head`` is a text/event-stream (True: after a BOM and blanks it
    starts with an SSE field, ``data:``, ``id:``, ``event:``, ``retry:``, or a comment), something else
    (False: JSON lines, an error page, ...), or None when ``head`` is too short to tell."""
    if len(head) < len(_BOM) and _BOM.startswith(head):
        return None
    text = head.removeprefix(_BOM).lstrip(_WS)
    if not text:
        return None if len(head) < SNIFF_LIMIT else False
    for prefix in prefixes:
        if text.startswith(prefix):
            return True
        if prefix.startswith(text):
            return None
    return False


class Sniffer:
    """:func:`sniff` as bytes arrive: ``feed(chunk)`` is None until the stream's first bytes tell, then
    True (SSE) or False; :attr:`head` holds what was fed so far (at most one chunk past 64 KiB of blanks).
    Each byte is scanned once."""

    __slots__ = ("_content", "_prefixes", "head")

    def __init__(self, prefixes: tuple[bytes, ...] = SSE_PREFIXES) -> None:
        self.head: bytearray | bytes = bytearray()
        self._content = -1  # where the first byte that is not a blank (or a BOM) is, once seen
        self._prefixes = prefixes  # the starts of an SSE body (see sniff)

    def feed(self, chunk: bytes) -> bool | None:
        if not self.head and len(chunk) >= 8 and chunk[0] not in _WS_OR_BOM:
            self.head = chunk  # the common case, told by the first chunk's first bytes: held, not copied
            self._content = 0
            return sniff(chunk[:8], self._prefixes)
        at = len(self.head)
        self.head += chunk
        if self._content < 0:
            rest = chunk.lstrip(_WS + _BOM)
            if rest:
                self._content = at + len(chunk) - len(rest)
            elif len(self.head) < SNIFF_LIMIT:
                return None  # only blanks so far: nothing to decide (no re-scan of what was read)
            else:
                return False  # 64 KiB of blanks and no field yet: no SSE (as sniff says; it was undecided for ever)
        return sniff(bytes(self.head[: min(max(self._content, 0) + 8, SNIFF_LIMIT + 8)]), self._prefixes)


class FormatSniffer:
    """A body's format from its first bytes, as they arrive: ``feed(chunk)`` is None until they tell, then
    ``"sse"`` (:class:`Sniffer`), ``"values"`` (JSON values one after another: the body starts with ``[``, or
    with ``{`` alone on its first line, :func:`agentmsg._wire.values.starts_values`) or ``"jsonl"``. A body that
    ends undecided (blanks, or ``{`` and blanks) is JSON lines. :attr:`head` is every byte fed so far. Each
    byte is looked at once; at most 64 KiB is held undecided."""

    __slots__ = ("_held", "_sniffer")

    def __init__(self, prefixes: tuple[bytes, ...] = SSE_PREFIXES) -> None:
        self._sniffer = Sniffer(prefixes)
        self._held: bytearray | None = None  # "{" and blanks so far: the next byte that is not one tells

    @property
    def head(self) -> bytes:
        return bytes(self._sniffer.head if self._held is None else self._held)

    def feed(self, chunk: bytes) -> str | None:
        held = self._held
        if held is not None:
            held += chunk
            values = starts_values(b"{" + chunk.lstrip(b" \t"))
        else:
            decision = self._sniffer.feed(chunk)
            if decision is None:
                return None
            if decision:
                return "sse"
            head = self._sniffer.head
            values = starts_values(bytes(head).removeprefix(_BOM).lstrip(_WS))
            if values is None:
                held = self._held = bytearray(head)
        if values is None and held is not None and len(held) < SNIFF_LIMIT:
            return None
        return "values" if values else "jsonl"


def sniff_format(head: bytes) -> Literal["sse", "jsonl", "values"] | None:
    """The format of an event stream that starts with ``head``, as :func:`agentmsg.events.read_events` and
    :func:`~agentmsg.events.reduce_stream` tell it (``agentmsg.events.sniff_format``; here, that a file's checker
    tells SSE without the event package): ``"sse"`` (text/event-stream: after a BOM and blanks, an SSE field or a
    comment), ``"values"`` (JSON values one after another: a JSON array of events, or events pretty-printed one
    after another), ``"jsonl"`` (JSON lines, and whatever starts otherwise), or None when ``head`` is too short
    to tell (blanks, ``da``, a ``{`` alone): read on, or take ``"jsonl"`` when the stream ends there. Blanks
    beyond 64 KiB before the first field are no SSE. ``head`` is not bytes: a ValidationError (rule ``type``,
    pointer ``/head``)."""
    require_bytes(head, "head")
    return cast("Literal['sse', 'jsonl', 'values'] | None", FormatSniffer().feed(head))


_LINE_END = re.compile("\r\n|\r|\n")
_FIELD_SAFE = re.compile("[^\r\n\x00]*")  # what an id field can hold (read back as written)


def encode_event(data: str, *, id: str | None = None, event: str | None = None, retry: int | None = None) -> str:
    """One SSE event block (ends with a blank line). Multi-line ``data`` becomes several ``data:`` lines: a
    line end in it (LF, CRLF or CR: SSE's) starts the next one, so the data reads back with LF line ends,
    nothing lost (SSE cannot carry a CR in data; written as it is, it would end the line there). An ``id`` or
    ``event`` holding a line break would end its field there and start another (the rest read as a field of
    its own: a forged event), and a decoder ignores an id holding NUL: :class:`~agentmsg.ValidationError`
    (rule ``sse``, pointer ``/id`` or ``/event``) for either. A ``retry`` is what SSE reads in one, an int of 0 or
    more (``retry: -1``, ``retry: True`` would be written and ignored): else ValidationError at ``/retry``, rule
    ``type`` or ``minimum``; one of more digits than Python writes, rule ``integer-range`` (:func:`field_digits`)."""
    if (id and not _FIELD_SAFE.fullmatch(id)) or (event and _LINE_END.search(event)):
        which = "id" if id and not _FIELD_SAFE.fullmatch(id) else "event"
        raise ValidationError.single(
            f"/{which}",
            "sse",
            f"an SSE {which} cannot hold a line break (CR or LF){' or NUL' if which == 'id' else ''}",
        )
    head = ""
    if id:
        head += f"id: {id}\n"
    if event:
        head += f"event: {event}\n"
    if retry is not None:
        count = require_count(retry, "retry", 0, "an SSE retry is an int of milliseconds, 0 or more")
        head += f"retry: {field_digits(count, 'retry')}\n"
    body = "".join(f"data: {line}\n" for line in _LINE_END.split(data))
    return f"{head}{body}\n"


def field_digits(value: Any, name: str) -> str:
    """``str(value)``, the text of a field (an event id, a retry) the caller gave as a number; an integer of more digits
    than Python writes (``sys.get_int_max_str_digits()``, 4,300 by default; ``str`` raised a bare ValueError) is
    :class:`~agentmsg.ValidationError`, rule ``integer-range``, at ``/<name>``: not written with the limit lifted,
    which guards against conversions that take time quadratic in the digits, nor could a reader (the SDK's own,
    Python's ``int``) read it back."""
    try:
        return str(value)
    except ValueError:
        if not isinstance(value, int):
            raise
    raise ValidationError.single(
        f"/{name}",
        "integer-range",
        f"{name} {short_repr(value, 60)} has more digits than Python writes (sys.get_int_max_str_digits():"
        f" {sys.get_int_max_str_digits()}): no SSE field carries it",
    )


_scan = speedups.sse_scan if speedups is not None else None
#: What :meth:`SSEDecoder.idle_scanner` gives: ``scan(chunk, last_id, out, dataless) -> (pos, stop, last_id)``
IdleScan = Callable[[bytes, str, list[SSEEvent], int], tuple[int, int, str]]
#: The idle scan's scanner (:meth:`SSEDecoder.idle_scanner`): sse_scan from a chunk's start, its bounds given once
_Scanner: Callable[[int, int, type[SSEEvent], bool], IdleScan] | None = (
    speedups.SSEScanner if speedups is not None else None
)

#: What a piece of no data line may hold and still take the fast path (sse_scan's ``dataless`` flags): comment,
#: ``id`` and ``event`` lines (no event; its last id kept; a ``retry`` line, which sets
#: :attr:`SSEDecoder.retry`, is always the line parser's); unknown fields too; the provider
#: decoder's rules (``event: error``, an ``error`` field, a line starting with ``{`` or ``[`` after any blanks:
#: not simple). Package-internal (not in ``__all__``): the decoders that set :attr:`SSEDecoder.dataless`
#: (``_wire/framing.py``'s, ``events/stream.py``'s) import them.
DL_TAKE, DL_UNKNOWN, DL_PROVIDER = 1, 2, 4
#: A blank line: two line ends in a row (each read whole, so the LF of a CRLF is never a line end of its own)
_BLANK_LINE = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


#: Line-end searches of one chunk made plainly before its line ends are remembered (:class:`_Ends`): what a search
#: to the chunk's end costs at most, that many times, is linear in the chunk
_PLAIN_SEARCHES = 8


class _Ends:
    """Where the next LF and the next CR of one chunk are from a position on, each search remembered: a chunk read
    line by line asks at every line, and a search to the chunk's end for a byte that comes late or never (an LF in
    a stream of CR line ends, one CR after a megabyte of LF events) made reading it quadratic (3.6 MB of CR lines:
    11 s). An answer found from ``start`` holds for any position from ``start`` up to it: each byte of the chunk is
    searched once per kind, whatever the number of lines."""

    __slots__ = ("chunk", "found")

    def __init__(self, chunk: bytes) -> None:
        self.chunk = chunk
        never = (len(chunk) + 1, -1)  # (a start past every position: not looked for)
        self.found = {b"\n": never, b"\r": never}  # byte -> (where the search started, what it found)

    def next_from(self, byte: bytes, pos: int) -> int:
        """``chunk.find(byte, pos)``, ``byte`` an LF or a CR, searching no byte twice."""
        start, at = self.found[byte]
        if start <= pos and (at < 0 or at >= pos):
            return at
        at = self.chunk.find(byte, pos)
        self.found[byte] = (pos, at)
        return at


def _blank_end(chunk: bytes, pos: int, ends: _Ends | None = None) -> int:
    """Where the first blank line after the line ``pos`` is in ends (-1: none), as :data:`_BLANK_LINE` finds it, in
    one search. Two line ends in a row hold one of the pairs LF LF, LF CR, CR CR (a CR then an LF is one line end;
    a CRLF then a line end holds LF LF or LF CR): each is looked for with ``find`` only up to the first pair found,
    the CR pairs only where a CR is (memchr), so LF line ends pay one ``find``, CRLF ones two or three. The regular
    expression, which looks at each byte in turn, took four times as long (5 ms per MB), and a chunk inside an event
    of CRLF lines was searched twice: by :meth:`SSEDecoder._feed` for its event's end (:func:`event_end`, which
    reads LFs only), then again here. ``ends``: the chunk's :class:`_Ends`, for a caller that asks line by line."""
    if ends is None:
        cr, lf = chunk.find(b"\r", pos), chunk.find(b"\n", pos)
    else:
        cr, lf = ends.next_from(b"\r", pos), ends.next_from(b"\n", pos)
    if cr < 0:
        at = chunk.find(b"\n\n", lf) if lf >= 0 else -1
        return -1 if at < 0 else at + 2
    if 0 <= lf < cr - 1:  # an LF pair before the first CR is the first pair (one with a CR starts at cr - 1 or later)
        at = chunk.find(b"\n\n", lf, cr)
        if at >= 0:
            return at + 2
    at, stop = -1, len(chunk)  # the first pair found, and where the pairs that start before it end
    if lf >= 0:
        at = chunk.find(b"\n\r", max(lf, cr - 1))
        if at >= 0:
            stop = at + 1
        found = chunk.find(b"\n\n", lf, stop)
        if found >= 0:
            at, stop = found, found + 1
    found = chunk.find(b"\r\r", cr, stop)
    if found >= 0:
        at = found
    if at < 0:
        return -1
    if chunk[at + 1] == 0x0A:
        return at + 2  # LF LF
    return at + 3 if chunk[at + 2 : at + 3] == b"\n" else at + 2  # a CR: a line end alone, or a CRLF's first byte


def _line_end(chunk: bytes, pos: int, ends: _Ends | None = None) -> int:
    """Where the line at ``pos`` ends, its line end (LF, CRLF, CR) included; ``len(chunk)``: not in ``chunk``. Two
    ``find`` (memchr), the CR's only up to the LF: a regex for the three line ends looked at each byte in turn, a
    tenth of the speed (a line of 2 MB fed in 64 KiB chunks took 17 ms, 8 of them here). ``ends``: the chunk's
    :class:`_Ends`, for a caller that asks line by line."""
    if ends is not None:
        lf, cr = ends.next_from(b"\n", pos), ends.next_from(b"\r", pos)
        if cr >= 0 and (lf < 0 or cr < lf):
            return cr + 2 if chunk[cr + 1 : cr + 2] == b"\n" else cr + 1
        return len(chunk) if lf < 0 else lf + 1
    lf = chunk.find(b"\n", pos)
    cr = chunk.find(b"\r", pos, len(chunk) if lf < 0 else lf)
    if cr >= 0:
        return cr + 2 if chunk[cr + 1 : cr + 2] == b"\n" else cr + 1
    return len(chunk) if lf < 0 else lf + 1


#: The most a regular expression's repeat may count here (re's own bound is 2**32 - 1): a line longer than this is
#: left to the line parser, which holds it to its limit (a limit past re's bound raised OverflowError)
_RE_REPEAT = (1 << 31) - 1


@functools.lru_cache(maxsize=16)
def idle_lines(max_line: int, dataless: int) -> re.Pattern[bytes]:
    """A run of lines that do nothing between events (none may be over ``max_line`` bytes: that is reported):
    blank lines and comments; with the flag ``DL_UNKNOWN`` in ``dataless``, lines of fields the spec does not
    know (ignored) too, but with ``DL_PROVIDER`` (:class:`agentmsg._wire.framing._ProviderSSE`) none that starts
    with ``{`` or ``[`` after any blanks (a JSON value outside any field) or is an ``error`` field. A run of line
    ends (CR, LF) at a line start is blank lines, whichever way they pair."""
    if dataless & DL_UNKNOWN:
        provider = dataless & DL_PROVIDER
        known = rb"data|event|id|retry|error" if provider else rb"data|event|id|retry"
        start = rb"(?![ \t]*[{\[])" if provider else b""
        line = rb"(?!(?:" + known + rb")[:\r\n])" + start + rb"[^\r\n]{0,%d}" % min(max_line, _RE_REPEAT)
    else:
        line = rb":[^\r\n]{0,%d}" % min(max(max_line - 1, 0), _RE_REPEAT)
    # No possessive quantifier or atomic group: CPython before 3.11.5 matches some of them wrongly (Debian 12's
    # 3.11.2 read whole bodies otherwise than byte by byte). Nothing follows the repeat, so greedy matching never
    # backtracks into it, and a CR is a line end of its own only when no LF follows (as CRLF is read whole).
    return re.compile(rb"(?:[\r\n]+|" + line + rb"(?:\r\n|\r(?!\n)|\n))*")


_idle = speedups.sse_idle if speedups is not None else None

#: Bytes of a chunk a run of data lines is taken from at once, at most (:meth:`SSEDecoder._data_lines`): what it
#: copies is bounded so, whatever the chunk's size (a whole body fed at once)
_RUN_WINDOW = 1 << 20
#: Bytes up to an event's end (or the chunk's) from which on its runs of data lines are looked for: a smaller event
#: is read line by line (a few lines: what the run's search would cost more than it saves)
_RUN_MIN = 1 << 12
#: Bytes of an event's data held before they are decoded onto its text (:meth:`SSEDecoder._decode`)
_DECODE_AT = 1 << 20


@functools.lru_cache(maxsize=16)
def data_run(max_line: int) -> re.Pattern[bytes] | None:
    """A run of whole ``data`` lines, each with its line end (LF or CRLF; a CR alone is left to the line parser)
    and none over ``max_line`` bytes (that is reported, by the line parser); None when ``data:`` alone is over."""
    if max_line < 5:
        return None
    return re.compile(rb"(?:data:[^\r\n]{0,%d}\r?\n)+" % min(max_line - 5, _RE_REPEAT))


def _byte_limit(value: int | None, name: str) -> int | None:
    """An SSEDecoder's byte limit as given: None or 0 (the default, ``limits['max_event_bytes']``), else an int from 1
    to 2**62; anything else a ValidationError at ``/<name>`` (rule ``type``, ``minimum`` or ``maximum``). A negative
    one dropped every line as over it, silently; one past 2**63 raised OverflowError at the first chunk."""
    if value is None:
        return None
    return require_limit(
        value, name, f"SSEDecoder's {name} is a number of bytes (an int from 1 to 2**62; 0 or None: the default)", 0
    )


class SSEDecoder:
    """Incremental text/event-stream parser. ``feed(chunk)`` returns the events completed by the chunk;
    chunks may split anything, even a CRLF or a UTF-8 sequence. A ``str`` chunk is read as its UTF-8 bytes;
    its surrogates as UTF-16 (a pair split across two chunks is one character, a lone one an invalid byte:
    one U+FFFD, reported), as ``@agentmsg/client``'s decoder reads a string (tests/conformance/sse).

    ``max_line_bytes`` and ``max_event_bytes`` (default ``limits['max_event_bytes']``, 64 MiB) bound
    what is held: a longer line is dropped as it arrives (never buffered whole), data beyond the event
    limit is dropped; either way the event is dispatched with an empty ``data`` and a ``problem``.
    :attr:`last_event_id` and :attr:`retry` are what the stream has set so far: what a reconnect sends as
    ``Last-Event-ID``, and the reconnection time to wait before it.

    **The idle scan** (a contract with the package's stream parsers, not public API). Between two events with
    nothing held (:attr:`idle`), :meth:`feed` hands a ``bytes`` chunk to the C scanner, which dispatches its
    simple events at once. A reader that feeds every chunk itself and counts each Python frame (the provider
    stream parser, :class:`agentmsg.providers._response.parser.StreamParser`) makes that scan itself, with
    these names alone; what it gets is what :meth:`feed` returns::

        scan = dec.idle_scanner()  # once: None without the C scanner, or for str data
        if dec.idle and type(chunk) is bytes:  # each chunk
            out = []
            pos, stop, last_id = scan(chunk, dec.id_buffer, out, dec.dataless)  # (dataless may change)
            if pos:
                dec.id_buffer = dec.last_event_id = last_id
            if stop >= 0 or pos < len(chunk):  # the scan did not take the whole chunk
                dec.scan_on(chunk, pos, stop, out)

    Where the scan took the whole chunk, every event of ``out`` is the scanner's: its ``data`` UTF-8 ``bytes``
    (checked), no ``problem``. A chunk that is not ``bytes``, or one that comes while the decoder is not idle, goes
    to :meth:`feed`."""

    #: A subclass for readers that parse each event's data as JSON at once (the provider stream parsers'
    #: framing) sets it: the C scanner then hands the data of the simple events it dispatches as UTF-8
    #: ``bytes``, checked to be valid UTF-8 as a decode would, so orjson reads them without a ``str`` in
    #: between; every other event's ``data`` is ``str``, as it always is here.
    _bytes_data: ClassVar[bool] = False
    #: What pieces of no data line the fast path takes (the ``DL_*`` flags): comment, id, event and
    #: unknown field lines, none of which dispatches an event (the idle scan's; a subclass may change it at any time)
    dataless: int = DL_TAKE | DL_UNKNOWN

    def __init__(self, *, max_line_bytes: int | None = None, max_event_bytes: int | None = None) -> None:
        default = limits.max_event_bytes
        self.max_line_bytes = _byte_limit(max_line_bytes, "max_line_bytes") or default
        self.max_event_bytes = _byte_limit(max_event_bytes, "max_event_bytes") or default
        self._head: bytes | None = b""  # the first bytes, until the BOM question is settled
        self._line = bytearray()  # the line being read
        self._skip = False  # dropping the rest of a line over the limit
        self._pending_cr = False
        #: the event's data lines: how many, a run of them one (``_data``, what tells an event has data), and their
        #: bytes, joined by LFs (``_buf``), decoded every :data:`_DECODE_AT` bytes onto the data's text (``_decoded``,
        #: grown in place, :meth:`_decode`) and at the event's end: a list of a ``str`` per line held about 20 times
        #: the bytes of an event of many short lines (the limit counts bytes: 1.3 GB under the default one), and the
        #: bytes decoded whole at the end twice them
        self._data = 0
        self._buf = bytearray()
        self._decoded = ""
        self._decoded_bytes = 0  # the bytes of the data decoded so far
        self._bad: int | None = None  # where in the data the first invalid UTF-8 is, when there is one
        self._size = 0
        self._event = ""
        #: a subclass reads lines of its own as one value (the provider decoder's JSON value outside any field):
        #: the decoder is inside it, so the line parser reads on, in order, up to its end
        self._own_value = False
        self._retry: int | None = None  # the event's (its :attr:`SSEEvent.retry`)
        self._problem: Problem | None = None
        #: The reconnection time the stream last set, in milliseconds (None: none yet): a ``retry`` field of at most
        #: 15 ASCII digits, read when its line is read, whether an event follows or not, as the spec's reconnection
        #: time and ``@agentmsg/client``'s ``retry`` are (agentmsg's EventEndpoint sends it in a block of its own)
        self.retry: int | None = None
        #: The id of the last event dispatched (what a reconnect sends as Last-Event-ID): set at the event's
        #: blank line, so a stream cut inside an event resumes at that event, not after it.
        self.last_event_id = ""
        #: the spec's last event ID buffer: an id line sets it at once (the idle scan's)
        self.id_buffer = ""
        self._high = ""  # a high surrogate a str chunk ended with: the next chunk may end its pair
        #: between two events, nothing held (:meth:`_between`), as the last call to feed, close or :meth:`scan_on`
        #: left it: only they change what it tells (the C scanner changes none of it), so it is told once per call,
        #: not per chunk (the idle scan's)
        self.idle = False
        #: :meth:`feed`'s scanner (the C one, sse_scan with the bounds given once) and the limits it was made with
        self._scanner: IdleScan | None = None
        self._scanned = self._scanned_event = 0

    def _scanner_now(self) -> IdleScan:
        """:meth:`feed`'s scanner for the decoder's limits as they are now (made, and kept with them)."""
        self._scanned, self._scanned_event = self.max_line_bytes, self.max_event_bytes
        self._scanner = scan = self._new_scanner()
        return scan

    def _new_scanner(self) -> IdleScan:
        """The C scanner with the decoder's limits as they are now and its event class bound (asked only where the
        C scanner is: :meth:`feed`, :meth:`idle_scanner`)."""
        assert _Scanner is not None
        line = self.max_line_bytes
        return _Scanner(min(self.max_event_bytes - 1, line), line, SSEEvent, self._bytes_data)

    def idle_scanner(self) -> IdleScan | None:
        """The idle scan's scanner (see the class): the C scanner (``agentmsg._speedups.SSEScanner``) with the
        decoder's limits and event class bound, which reads the chunk's line ends itself and scans it from its
        start, as :meth:`feed` does (``sse_scan``); None where :meth:`feed` makes no such scan (no C scanner, or a
        decoder whose events' data is ``str``). Asked once, after the limits are set: the scanner keeps them.
        (``sse_scan``'s ten arguments, loaded and converted at each chunk, cost a live chunk about 800 instructions
        more: callgrind, a loop making and scanning chunks of one TEXT_BLOCK_DELTA event, 8,570 against 7,760.)"""
        if _Scanner is None or not self._bytes_data:
            return None
        # (the one feed made, when it scanned a chunk with these limits: a reply's first chunk, and its close's
        # feed, scan with the scanner its parser gets, not with one made for each)
        scan = self._scanner
        if scan is None or self._scanned is not self.max_line_bytes or self._scanned_event is not self.max_event_bytes:
            scan = self._scanner_now()
        return scan

    def _between(self) -> bool:
        """Between two events with nothing held: no BOM question, no surrogate half, no CR, no part of an event
        (:meth:`_inside_event`). The common chunk's fast path in :meth:`feed` is taken then."""
        return (
            self._head is None
            and not (
                self._high
                or self._pending_cr
                or self._line
                or self._skip
                or self._data
                or self._event
                or self._own_value
            )
            and self._problem is None
            and self._retry is None
        )

    def feed(self, chunk: str | bytes) -> list[SSEEvent]:
        if self.idle and type(chunk) is bytes:
            # The common chunk, between two events (what a live stream's reads are): the simple events first,
            # then whatever is left to the line parser; the general path (_feed) gives the same events.
            out: list[SSEEvent] = []
            if not chunk:
                return out
            if _scan is None:
                rest = self._simple_events(chunk, out)
                if rest:
                    self._lines(rest, out)
                self.idle = self._between()
                return out
            # _simple_events' C path, inline (its call cost a tenth of the chunk's framing), by the decoder's own
            # scanner (sse_scan with the bounds bound, made again when a limit was set since: compared by identity,
            # an int set anew makes it again); sse_scan's ten arguments cost a chunk about 800 instructions more,
            # the check of the limits here about 270 of them back (feed: 10,920 -> 10,390 a chunk; idle_scanner)
            scan = self._scanner
            if (
                scan is None
                or self._scanned is not self.max_line_bytes
                or self._scanned_event is not self.max_event_bytes
            ):
                scan = self._scanner_now()
            pos, stop, last_id = scan(chunk, self.id_buffer, out, self.dataless)
            if pos:  # whole events were dispatched: the last one's id
                self.id_buffer = self.last_event_id = last_id
            if stop >= 0 or pos < len(chunk):
                self.scan_on(chunk, pos, stop, out)
            return out
        if self._head == b"" and type(chunk) is bytes and chunk[:1] not in _NO_HEAD:
            # A first chunk that starts with no byte order mark (nor a piece of one) settles the BOM question at
            # once (what _feed would tell of it): between two events with nothing held, it takes the idle scan
            # above, as the chunks after it do, not the general path
            self._head = None
            self.idle = self._between()
            return self.feed(chunk)
        if not isinstance(chunk, (str, bytes, bytearray, memoryview)):  # (not on the bytes path above)
            raise wrong_type("/chunk", "an SSE chunk is str or bytes", chunk)
        out = self._feed(chunk)
        self.idle = self._between()
        return out

    def scan_on(self, chunk: bytes, pos: int, stop: int, out: list[SSEEvent]) -> None:
        """The rest of an idle chunk's fast path (:meth:`feed`) after its first scan stopped at ``pos`` short of
        the chunk's end (``stop``: the end of the piece it stopped at, -1 for none whole): that piece to the line
        parser, then :meth:`_simple_events` after it; the rest after the last blank line to the line parser.
        (The idle scan's, see the class: a reader that makes the first scan itself calls this only when the scan
        did not take the whole chunk.)"""
        if stop >= 0:
            self._lines(chunk[pos:stop], out)  # a piece that is not simple, with its blank line
            rest = self._simple_events(chunk, out, stop)
        else:
            rest = chunk[pos:]
        if rest:
            self._lines(rest, out)
        self.idle = self._between()  # (the line parser read a piece: it may have left the decoder inside an event)

    def _feed(self, chunk: str | bytes) -> list[SSEEvent]:
        """:meth:`feed` of any chunk, whatever the decoder holds."""
        if isinstance(chunk, str):
            if self._high:
                chunk, self._high = self._high + chunk, ""
            if chunk and "\ud800" <= chunk[-1] <= "\udbff":
                chunk, self._high = chunk[:-1], chunk[-1]  # the first half of a pair split across chunks?
            chunk = _text_bytes(chunk)  # a lone surrogate becomes an invalid byte: reported
        else:
            if type(chunk) is not bytes:
                chunk = bytes(chunk)  # (a subclass too: the C scanner reads bytes, and the chunk from pos on)
            if self._high:
                chunk, self._high = b"\xff" + chunk, ""  # the held high surrogate stays alone
        if self._head is not None:
            head = self._head + chunk
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._head = head  # maybe a BOM split across chunks: wait
                return []
            self._head = None
            chunk = head.removeprefix(_BOM)
        out: list[SSEEvent] = []
        if not chunk:
            return out
        pos = 0
        if self._pending_cr:
            self._pending_cr = False
            if chunk[0] == 0x0A:
                pos = 1  # the LF of a CRLF split across chunks
        blank = -2
        if self._inside_event():
            # The last chunk ended inside an event: the line parser reads on to its blank line, the fast path
            # takes the rest (else one cut event would send the whole stream down the line parser). Where the blank
            # line is is handed on, not looked for again (none: -1).
            blank = _blank_end(chunk, pos)
            if blank > 0:
                self._lines(chunk[pos:blank], out, 0, blank - pos)
                if blank < len(chunk):
                    self._pending_cr = False  # (a CR that ends the piece is a line end alone: no LF after it)
                pos, blank = blank, -2
        if not self._inside_event():
            chunk, pos = self._simple_events(chunk, out, pos), 0
        self._lines(chunk, out, pos, blank)
        return out

    def _inside_event(self) -> bool:
        """Whether the line parser holds part of an event (a line, fields, data or a problem)."""
        return (
            bool(self._line or self._skip or self._data or self._event or self._problem or self._own_value)
            or self._retry is not None
        )

    def _simple_events(self, chunk: bytes, out: list[SSEEvent], pos: int = 0) -> bytes:
        """The fast path, between events: whole events of one ``data`` line after any ``event``, ``id`` and
        comment lines (the shapes providers send) are dispatched straight from the chunk's
        blank-line-separated pieces (C searches, one decode per field); any other piece goes through the
        line parser (:meth:`_lines`), which leaves no event pending after the piece's blank line. Returns
        the rest of the chunk after its last blank line, for the line parser: the events are the line
        parser's on the whole chunk. (From ``pos``: what is before it was read.)"""
        if chunk.find(b"\r", pos) >= 0:  # a CR (memchr)
            if _scan is None:  # (the C scanner checks each piece for mixed line ends itself)
                crlf = chunk.count(b"\r\n", pos)
                if crlf != chunk.count(b"\r", pos) or crlf != chunk.count(b"\n", pos):
                    return chunk[pos:]  # mixed line ends: the line parser
            crlf = True
        else:
            crlf = False
        limit = self.max_event_bytes - 1
        if self.max_line_bytes < limit:
            limit = self.max_line_bytes
        if _scan is not None:  # the same, in C (agentmsg._speedups.sse_scan)
            while True:
                start = pos
                pos, stop, last_id = _scan(
                    chunk,
                    pos,
                    crlf,
                    limit,
                    self.max_line_bytes,
                    self.id_buffer,
                    out,
                    SSEEvent,
                    self._bytes_data,
                    self.dataless,
                )
                if pos > start:  # whole events were dispatched: the last one's id
                    self.id_buffer = self.last_event_id = last_id
                if stop < 0:
                    return chunk[pos:]
                self._lines(chunk[pos:stop], out)  # a piece that is not simple, with its blank line
                pos = stop
        sep, eol = (b"\r\n\r\n", b"\r\n") if crlf else (b"\n\n", b"\n")
        find, size = chunk.find, len(sep)
        eol_data = eol + b"data:"
        while True:
            if chunk[pos : pos + 5] != b"data:":  # (lines that do nothing between events, skipped at once)
                pos = self._skip_idle(chunk, pos)
            end = find(sep, pos)
            if end < 0:
                return chunk[pos:]
            if end - pos >= _RUN_MIN and (
                (data := find(eol_data, pos, end)) >= 0
                and (chunk.startswith(b"data:", pos) or find(eol_data, data + 1, end) >= 0)
            ):
                # a large event of two data lines or more: no simple event (and not split into a list of its lines,
                # nor copied twice; a small one is read as simple events are, at no cost of this search)
                self._lines(chunk[pos : end + size], out)
                pos = end + size
                continue
            piece = chunk[pos:end]
            pos = end + size
            event = self._simple_event(piece, eol, limit)
            if event is None:
                self._lines(piece + sep, out)
            elif event is not True:
                out.append(event)

    def _simple_event(self, piece: bytes, eol: bytes, limit: int) -> SSEEvent | Literal[True] | None:
        """The event of a piece that is simple (see :meth:`_simple_events`); True for a simple piece with no
        data line (no event; its last id kept; what :attr:`dataless` allows), else None (nothing changed).
        (agentmsg._speedups.sse_scan's simple_event, in Python.)"""
        piece = piece.lstrip(b"\r\n")  # blank lines it starts with (only CRLFs where eol is CRLF: checked)
        if piece[:5] == b"data:" and piece.find(eol) < 0:
            if len(piece) > limit:
                return None
            line: bytes | None = piece
            event, last_id = "message", self.id_buffer
        else:
            *fields, last = piece.split(eol)
            dataless = self.dataless
            if last[:5] == b"data:":
                if len(last) > limit:
                    return None
                line = last
            elif dataless & DL_TAKE:
                fields.append(last)
                line = None
            else:
                return None
            event, last_id, other, named = "message", self.id_buffer, False, b""
            for field in fields:
                if len(field) > self.max_line_bytes:
                    return None
                if field[:1] == b":" or not field:
                    continue  # a comment (or the empty piece of a blank line)
                name, _, value = field.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"event" or name == b"id":
                    if not value.isascii():
                        return None
                    if name == b"event":
                        named = value
                        event = value.decode("ascii") or "message"
                    elif b"\x00" not in value:
                        last_id = value.decode("ascii")
                elif name == b"data":
                    return None  # a data line that is not the last: more than one
                elif name == b"retry":
                    return None  # (it sets the decoder's retry: the line parser's)
                else:
                    if not dataless & DL_UNKNOWN:
                        return None
                    if dataless & DL_PROVIDER and (field.lstrip(b" \t")[:1] in (b"{", b"[") or name == b"error"):
                        return None
                    other = True
            if line is None:
                if dataless & DL_PROVIDER and named == b"error":
                    return None
                self.id_buffer = self.last_event_id = last_id
                return True
            if other:
                return None
        assert line is not None
        try:
            data = (line[6:] if line[5:6] == b" " else line[5:]).decode("utf-8")
        except UnicodeDecodeError:
            return None  # the line parser reports the invalid UTF-8
        self.id_buffer = self.last_event_id = last_id
        return SSEEvent(data, event, last_id)

    def _lines(self, chunk: bytes, out: list[SSEEvent], pos: int = 0, blank: int = -2) -> None:
        """The line parser (every case of the spec), from ``pos`` on. Between events, a run of lines that do nothing
        there (:meth:`_skip_idle`: blank lines, comments, fields the spec does not know) is skipped at once; inside
        an event, a run of data lines is taken at once (:meth:`_data_lines`), the other lines up to the next blank
        line or data line are read one by one (:meth:`_read_lines`). Each byte is looked at a bounded number of
        times: the event's blank line is looked for once (:func:`_blank_end`; ``blank``: where the caller found it
        from ``pos``, -1 none, -2 not looked for), and again only past it (a regular expression looked for it from
        each piece's start, reading the chunk's bytes again at each and 4 ms per MB)."""
        n = len(chunk)
        if pos >= n:
            return
        # the chunk's line ends, remembered (_Ends) once it has been searched a few times: a piece of a few lines
        # reads them with plain searches (each _Ends search costs twice one), a chunk of many lines each once
        ends: _Ends | None = None
        searches = 0  # (a turn of the loop makes one line-end search at most)
        mixed = pos  # (where the data lines of the event are known to come with other lines between, up to)
        while pos < n:
            if ends is None and (searches := searches + 1) > _PLAIN_SEARCHES:
                ends = _Ends(chunk)
            if self._line or self._skip:  # a line a chunk before began: its end first
                end = _line_end(chunk, pos, ends)
                self._carry_on(chunk, pos, end, out)
                pos = end
                continue
            if not self._inside_event():
                pos = self._skip_idle(chunk, pos)
                if pos >= n:
                    break
                if not chunk.startswith(b"id", pos):
                    # a line that may start an event: read alone (it may leave nothing pending: skip on after it)
                    end = _line_end(chunk, pos, ends)
                    self._read_lines(chunk[pos:end], out)
                    pos = end
                    continue
                # an id line leaves nothing pending: it and the lines after it up to the blank line or the next data
                # line are read at once, as inside an event (a million id lines were read one call each: 4 s)
            if blank <= pos and blank != -1:  # (not looked for, or passed: from here on)
                blank = _blank_end(chunk, pos, ends)
            end = n if blank < 0 else blank
            if end - pos >= _RUN_MIN and not self._own_value and (runs := data_run(self.max_line_bytes)) is not None:
                if chunk.startswith(b"data:", pos):
                    stop, head, mixed = self._run_end(runs, chunk, pos, n if blank < 0 else blank - 1, mixed)
                    if stop > pos:  # whole data lines of the event: its data at once, not line by line
                        self._data_lines(chunk[pos:stop], out, head)
                        pos = stop
                        continue
                data = chunk.find(b"\ndata:", pos, end)  # (the lines up to the next data line, which may begin a run)
                if data >= 0:
                    end = data + 1
            self._read_lines(chunk[pos:end] if pos or end < n else chunk, out)
            pos = end
        if chunk[-1] == 0x0D:
            self._pending_cr = True  # an LF at the start of the next chunk belongs to this CR

    def _carry_on(self, chunk: bytes, pos: int, end: int, out: list[SSEEvent]) -> None:
        """The line a chunk before began (held in ``_line``, or being dropped) goes on in ``chunk[pos:end]``, and
        ends there when ``end`` is after a line end (:func:`_line_end`). Its bytes are copied once, onto what is
        held; a data line's value is then the event's data as it is held (:meth:`_data_value`). It was copied four
        times (the piece, the line, its value, the data: 2.5 ms per MB in 64 KiB chunks), and split into lines
        again."""
        last = chunk[end - 1]
        line = self._line
        if last != 0x0A and last != 0x0D:  # no line end yet: the line goes on in the next chunk
            if not self._skip:
                line += memoryview(chunk)[pos:end] if pos or end < len(chunk) else chunk
                if len(line) > self.max_line_bytes:
                    self._overlong()
            return
        cut = end - 2 if last == 0x0A and end - pos >= 2 and chunk[end - 2] == 0x0D else end - 1
        if self._skip:
            self._skip = False  # the line over the limit ends here; it was reported
            return
        if len(line) + cut - pos > self.max_line_bytes:
            self._overlong()
            self._skip = False
            return
        if cut > pos:
            line += memoryview(chunk)[pos:cut]
        if line.startswith(b"data:") and not self._own_value:  # (a subclass's own value reads its lines itself)
            del line[: 6 if line[5:6] == b" " else 5]  # (from a bytearray's start: no copy)
            self._data_value(line)
            self._line.clear()  # (the bytes held, unless they became the data's)
        else:
            whole = bytes(line)
            line.clear()
            self._process(whole, out)

    def _run_end(
        self, runs: re.Pattern[bytes], chunk: bytes, pos: int, limit: int, mixed: int
    ) -> tuple[int, bytes | None, int]:
        """Where the run of whole data lines (:func:`data_run`) from the line start ``pos`` ends, before ``limit``
        and within :data:`_RUN_WINDOW` bytes (``pos``: none), and what starts each of its lines after the first when
        that is the same for all, its line end included (``\\ndata: ``, ``\\ndata:``, ``\\r\\ndata: ``,
        ``\\r\\ndata:``; None: not told, :meth:`_data_lines` reads any). The common run, every line of the window a
        data line with the same line end and the same space or none, is told by counting (bytes methods, no copy);
        any other by the pattern ``runs``. ``mixed``: up to where the window counted last held other lines than data
        lines, which the pattern alone then reads (counting the window again at each data line between them read the
        event in time quadratic in it); the third value is that, as it is now."""
        limit = min(limit, pos + _RUN_WINDOW)
        end = chunk.rfind(b"\n", pos, limit) + 1 if pos >= mixed else pos
        if pos < end <= pos + self.max_line_bytes:  # (no line in it can be over the limit)
            lines = chunk.count(b"\n", pos, end)
            eol = b"\n"
            if chunk.find(b"\r", pos, end) >= 0:
                # CRLF each: as many CRs as LFs, one before the last LF and one before each line start counted below
                eol = b"\r\n" if chunk[end - 2] == 0x0D and chunk.count(b"\r", pos, end) == lines else b""
            if eol:
                head = eol + b"data: "
                spaced = chunk.count(head, pos, end)
                if spaced == lines - 1:
                    return end, head, mixed
                if chunk.count(head[:-1], pos, end) == lines - 1:
                    return end, head[:-1] if not spaced else None, mixed
            mixed = end  # (the window holds other lines: up to its end, the pattern's)
        run = runs.match(chunk, pos, limit)
        return (pos if run is None else run.end()), None, mixed

    def _data_lines(self, run: bytes, out: list[SSEEvent], head: bytes | None = None) -> None:
        """A run of whole ``data`` lines inside an event (:func:`data_run`, :meth:`_run_end`): :meth:`_process` of
        each, in a few passes over the run's bytes (an event of a million lines took a million calls). The data
        lines of every subclass are :class:`SSEDecoder`'s (a subclass's lines of its own value are never in a
        run)."""
        if self._problem is not None and self._problem.rule != "utf-8":
            return  # this event's data was dropped
        # Each line's value with its LF: no value holds a line end, so each LF (of a CRLF too) is a line's end and
        # each ``\ndata:``, then ``\n ``, is where a line begins (the first line's, ``data:`` then a space or
        # not, is skipped below); when every line begins alike (``head``, :meth:`_run_end`), one replace of it (the
        # three took 0.23 s of the 0.36 s of 32 MiB of 10-byte lines)
        tail = 1
        if head is None:
            values = run.replace(b"\r\n", b"\n") if 13 in run else run
            values = values.replace(b"\ndata:", b"\n").replace(b"\n ", b"\n")
        else:
            values = run.replace(head, b"\n")
            tail = 2 if head[0] == 0x0D else 1  # (the last line's CRLF, or LF, is left)
        first = 6 if values[5:6] == b" " else 5
        size = len(values) - first - tail + 1
        if self._size + size > self.max_event_bytes:
            self._read_lines(run, out)  # over the limit within the run: line by line, said where it is
            return
        self._size += size
        if self._data:
            self._buf += b"\n"
        self._buf += memoryview(values)[first:-tail]
        self._data += 1  # (data was read: what the count tells)
        if len(self._buf) >= _DECODE_AT:
            self._decode()

    def _skip_idle(self, chunk: bytes, pos: int) -> int:
        """Where the run of lines that do nothing between events (:func:`idle_lines`, by :attr:`dataless`) from
        the line start ``pos`` on ends; a blank line among them dispatches nothing, but sets the last event id."""
        end: int
        blank: bool
        if _idle is not None and type(chunk) is bytes:
            end, blank = _idle(chunk, pos, self.max_line_bytes, self.dataless)
        else:
            run = idle_lines(self.max_line_bytes, self.dataless).match(chunk, pos)
            assert run is not None  # (it matches the empty string)
            end = run.end()
            blank = end > pos and (chunk[pos] in b"\r\n" or _BLANK_LINE.search(chunk, pos, end) is not None)
        if blank:
            self.last_event_id = self.id_buffer
        return end

    def _read_lines(self, chunk: bytes, out: list[SSEEvent]) -> None:
        """The lines of ``chunk``, one by one; a last piece without a line end is the start of a line the
        next chunk goes on with."""
        # bytes.splitlines breaks at exactly the SSE line ends (LF, CRLF, CR), in C
        lines = chunk.splitlines(True)
        process = self._process
        max_line = self.max_line_bytes
        for raw in lines:
            end = raw[-1]
            if end == 0x0A:
                cut = -2 if raw[-2:-1] == b"\r" else -1
            elif end == 0x0D:
                cut = -1
            else:  # the unfinished last line
                if not self._skip:
                    self._line += raw
                    if len(self._line) > max_line:
                        self._overlong()
                break
            if self._skip:
                self._skip = False  # the line over the limit ends here; it was reported
                continue
            if self._line:
                self._line += raw[:cut]
                line = bytes(self._line)
                self._line.clear()
            else:
                line = raw[:cut]
            if len(line) > max_line:
                self._overlong()
                self._skip = False
            else:
                process(line, out)

    def close(self) -> list[SSEEvent]:
        """End of stream. Per the spec an event not followed by a blank line is not dispatched; so that
        nothing is dropped silently, when such an event (or a partial line, or the first bytes of a BOM) was
        pending the result is one event with empty ``data`` and a ``problem`` (rule ``incomplete``); otherwise
        ``[]``."""
        out = self.feed(b"") if self._high else []  # a high surrogate held: alone (an invalid byte)
        pending = bool(self._data or self._line or self._skip or self._problem is not None or self._head)
        if self._head:
            self._head = b""  # (bytes that may have begun a BOM: the stream ended there)
        if pending:
            size = self._size + len(self._line)
            out.append(
                SSEEvent(
                    "",
                    self._event or "message",
                    self.id_buffer,
                    self._retry,
                    Problem("", "incomplete", f"the stream ended inside an event ({size} bytes of it dropped)"),
                )
            )
        self._line.clear()
        self._skip = False
        self._drop_data()
        self._event, self._retry, self._problem = "", None, None
        self.idle = self._between()
        return out

    def _overlong(self) -> None:
        self._line.clear()
        self._skip = True
        self._drop_data()
        self._problem = Problem(
            "", "max-line-bytes", f"a line longer than {self.max_line_bytes} bytes was dropped with the event's data"
        )

    def _drop_data(self) -> None:
        """The event's data, none any more."""
        self._data, self._size, self._decoded, self._decoded_bytes, self._bad = 0, 0, "", 0, None
        self._buf.clear()

    def _decode(self) -> None:
        """The data's bytes held (``_buf``) decoded onto its text: whole lines, so decoded apart they read as decoded
        whole (a line end ends any UTF-8 sequence), invalid UTF-8 replaced by U+FFFD, where the first is kept."""
        buf = self._buf
        try:
            piece = buf.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self._bad is None:
                self._bad = self._decoded_bytes + exc.start
            piece = buf.decode("utf-8", "replace")
        self._decoded_bytes += len(buf)
        buf.clear()
        text, self._decoded = self._decoded, ""
        text += piece  # (the text's only reference is this name: CPython grows it in place, no copy of what it holds)
        self._decoded = text

    def _text(self, value: bytes) -> str:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self._problem is None:
                self._problem = Problem("", "utf-8", f"invalid UTF-8 (byte {exc.start} of a field) replaced by U+FFFD")
            return value.decode("utf-8", "replace")

    def _data_value(self, value: bytes | bytearray) -> None:
        """A data line's value, onto the event's data (``_buf``: its lines joined by LFs). The bytes of a line a chunk
        before began (``_line``) that are the event's first data line become its data as they are (no copy)."""
        if self._problem is not None and self._problem.rule != "utf-8":
            return  # this event's data was dropped
        self._size += len(value) + 1
        if self._size > self.max_event_bytes:
            self._drop_data()
            self._problem = Problem(
                "", "max-event-bytes", f"the event's data is longer than {self.max_event_bytes} bytes: dropped"
            )
            return
        if self._data:
            self._buf += b"\n"
            self._buf += value
        elif value is self._line and not self._buf:
            self._buf, self._line = self._line, self._buf
        else:
            self._buf += value
        self._data += 1
        if len(self._buf) >= _DECODE_AT:
            self._decode()

    def _process(self, line: bytes, out: list[SSEEvent]) -> None:
        if not line:
            self.last_event_id = self.id_buffer  # dispatched (with data or without, as the spec sets it)
            if self._data or self._problem is not None:
                text = ""
                if self._problem is None or self._problem.rule == "utf-8":
                    whole: str | None = None
                    if not self._decoded_bytes:  # (the common event, held whole: decoded at once)
                        try:
                            whole = self._buf.decode("utf-8")
                        except UnicodeDecodeError:
                            whole = None
                    if whole is not None:
                        text = whole
                    else:  # (onto the data's start decoded before; invalid UTF-8 said where it is)
                        self._decode()
                        text = self._decoded
                        if self._bad is not None and self._problem is None:
                            self._problem = Problem(
                                "", "utf-8", f"invalid UTF-8 (byte {self._bad} of the data) replaced by U+FFFD"
                            )
                out.append(SSEEvent(text, self._event or "message", self.id_buffer, self._retry, self._problem))
                self._problem = None
                if self._decoded_bytes:
                    self._drop_data()
                else:
                    self._data, self._size = 0, 0
                    self._buf.clear()
            self._event, self._retry = "", None
            return
        if line[:5] == b"data:":  # the common case first
            self._data_value(line[6:] if line[5:6] == b" " else line[5:])
            return
        if line[0] == 0x3A:  # ':' a comment
            return
        field, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if field == b"data":  # "data" without a colon: an empty data line
            self._process(b"data:", out)
        elif field == b"event":
            self._event = self._text(value)
        elif field == b"id":
            text = self._text(value)
            if "\x00" not in text:
                self.id_buffer = text
        elif field == b"retry" and value.isdigit() and len(value) < 16:
            self._retry = self.retry = int(value)


class JSONDataDecoder(SSEDecoder):
    """An SSE decoder for readers that parse each event's data as JSON at once (the provider stream parsers,
    agent events over SSE): the simple events the C scanner dispatches carry their data as UTF-8 ``bytes``
    (checked), which orjson reads as they are; every other event's ``data`` is ``str``. Without the C
    scanner, always ``str``."""

    _bytes_data = True
