"""The optional C kernels (``_speedups.c``), loaded by :mod:`agentmsg._native`.

Generic kernels only: a JSON writer, an SSE scanner, the reducer's delta loop and a JSON string reader. No
provider's or protocol's rules are written here. Each has one Python caller that also holds the pure-Python path,
which defines the result; a kernel either gives exactly that result or gives up (``None`` / a "not simple"
stop) and leaves the case to Python. ``AGENTMSG_PURE_PYTHON=1`` runs without them.
"""

from collections.abc import Callable, Sequence
from typing import Any, Literal, final

def make_plan(
    cls: type,
    fields: Sequence[tuple[str, str, bool, int] | tuple[str, str, bool, int, type | None]],
    unknown_name: str | None,
    own: bool = True,
    /,
) -> object:
    """The plan for writing instances of the model class ``cls``: ``fields`` are (attribute name, wire key,
    omitted when None, expected type[, exact class]) in wire order, the expected type an ``EX_*`` code of
    :mod:`agentmsg._codec.converter` (0 any, 1 str, 2 int, 3 number, 4 bool, 5 dict, 6 list, 7 a model object
    (no JSON value), 8 a list of those; | 16: None too; | 32: free-form, its value and everything in it of the
    exact JSON types only, str, int, float, bool, None, dict, list), a value of another type making :func:`encode`
    give up;
    the exact class, when given and not None, the only class the field's value may have (None aside: the expected
    type says whether None is written), a value of any other class, a subclass too, making :func:`encode` give up
    (an enum field: a plain string is left to the caller, which checks it is one of the enum's values);
    ``unknown_name`` the attribute holding unknown keys (written after the fields), or None; ``own``: ``cls`` is
    agentmsg's own class (or a caller's message subclass), not a caller's subclass of a block or another model
    class (:func:`writes` gives up on instances of a class whose plan is not own). Raises TypeError for an exact class that is no type. Caller:
    :func:`agentmsg._codec.converter._native_plan`."""

def encode(
    value: object,
    plans: dict[type, object],
    fallback: Callable[[Any], Any],
    dumps: Callable[[Any], bytes],
    max_bytes: int | None = None,
    /,
) -> bytes | Literal[False] | None:
    """``value`` as compact JSON, byte for byte what ``orjson.dumps(value, default=fallback)`` writes, or None
    where it gives up: a type it does not write exactly (datetime, UUID, namedtuple, ...), a non-str dict key,
    an integer beyond 64 bits, a lone surrogate, NaN or an infinity (orjson writes null), a model field holding
    a value of another type than its plan expects, nesting beyond 240, an error raised by ``fallback``. ``plans``:
    model class -> :func:`make_plan`; ``fallback``: model object -> dict for a class without a plan; ``dumps``:
    ``orjson.dumps``, for floats. Never raises for a value; the caller then runs orjson.

    False where it stopped before the end, its output not wanted (the caller asks how long the value's text is
    without writing it): the output passed ``max_bytes`` (an int from 0; None, the default: no cap; it begins no
    value once past it, so that it stops at most one string past it), or a part of a free-form field's value
    (``EX_FREE``) was met twice: a dict or list, past the first 4,096 of them (so that a value sharing its members,
    a list of the same list twice 40 levels down, 2**40 values as JSON, stops at once, not at the cap), or a string
    of 65,536 characters or more. False never means that the value cannot be written. ``max_bytes`` not an int nor
    None: TypeError; negative: ValueError. Caller: :func:`agentmsg._codec.converter.dumps_json`."""

def writes(
    value: object,
    plans: dict[type, object],
    fallback: Callable[[Any], Any],
    dumps: Callable[[Any], bytes],
    max_bytes: int | None = None,
    /,
) -> bool:
    """Whether :func:`encode` with the same arguments writes ``value`` (does not give up, nor stop: None or False),
    told without writing it: the same walk and the same rules (a string with a lone surrogate, NaN or an infinity, an
    integer beyond 64 bits, a non-str dict key, a model field of another type than its plan expects, nesting beyond
    240, an error raised by ``fallback``, a part of a free-form value met twice: False), no output; it counts at
    most what :func:`encode` would write and says False once that passes ``max_bytes``: a string's characters 6
    bytes each (the longest an escape is, whatever the character) and its 2 quotes, a dict's keys so too; an integer
    20, a float 24; null, true, false, ``{}`` and ``[]`` their own; a list of n values n + 1 for its brackets and
    commas, a dict 2n + 1 with its colons, a model object every key of its plan with its braces and commas, those of
    fields omitted too, each counted where it begins. So True means that encode writes it within the cap; a value
    whose count is within ``max_bytes`` is never refused for its size, and one whose text is within it but whose
    count is not may be (False, no verdict). Unlike :func:`encode`, it also gives up on a model object whose plan is not
    ``own`` (a caller's subclass of an agentmsg block class) and on one of a class it has no plan of (never calling
    ``fallback`` for it: :func:`encode` makes the plan), so that True also means every model object in ``value`` is
    of one of agentmsg's own classes, which code that tells classes apart by identity (the formatters' walks)
    needs. True means :func:`agentmsg._codec.converter.dumps_json` writes ``value`` without a refusal; False is no
    verdict (the caller writes it to know). Never raises for a value. Caller:
    :func:`agentmsg._codec.converter.surely_writes` (and :func:`agentmsg._codec.jsontext.plainly_written`, for a tool
    definition or a structured output's schema: ``plans`` empty, so True there also means it holds no type but the
    JSON ones and tuples; where False, it walks the value in Python)."""

def fold_deltas(
    events: list[Any],
    start: int,
    current: set[str],
    previous: set[str],
    size: int,
    routes: dict[str, dict[str, Any]],
    calls: dict[str, Any],
    join_every: int,
    /,
) -> int:
    """The reducer's delta loop: take the plain deltas of ``events[start:]`` as
    :func:`agentmsg.events._handlers.fold_events` takes them, and return the index of the first event not taken
    (``len(events)``: all). An event is taken when it is a dict without ``source``, its ``id`` and ``type`` are
    str, ``routes[type]`` is a table (``calls``: keyed by ``toolCallId``, else by ``blockId``), that key and its
    ``delta`` are str, a ``THINKING_BLOCK_DELTA`` has no ``signature`` nor ``redactedData``, and the table holds an
    open text (a :class:`agentmsg.events._state.Text`) under the key. A taken event whose id is in ``current`` or
    ``previous`` (the dedupe window) is skipped; any other has its id added to ``current`` and its delta appended to
    the text's ``parts``. It stops before an event whose id would fill the window (``size`` > 0: it turns there) or
    the text's parts (``join_every``: they are joined there), leaving it to Python. The caller adds the events taken
    to the reducer's count. Never raises for an event. Caller: :meth:`agentmsg.Reducer._trusted_feed` (and
    :func:`agentmsg.events._handlers.fold` for a list)."""

def sse_idle(chunk: bytes, pos: int, max_line: int, dataless: int, /) -> tuple[int, bool]:
    """Where the run of lines that do nothing between events, from the line start ``pos`` on, ends, and whether it
    holds a blank line: blank lines and comments; with ``dataless`` flag 2, lines of fields the spec does not know
    too; flag 4, not an ``error`` field nor a line starting with ``{`` or ``[`` after any blanks. No line over
    ``max_line`` bytes, nor the unfinished last line. :func:`agentmsg._wire.sse.idle_lines` in C. Caller:
    :meth:`agentmsg._wire.sse.SSEDecoder._skip_idle`."""

def sse_scan(
    chunk: bytes,
    pos: int,
    crlf: bool,
    limit: int,
    max_line: int,
    last_id: str,
    out: list[Any],
    cls: Callable[[Any, str, str], Any],
    raw: bool = False,
    dataless: int = 0,
    /,
) -> tuple[int, int, str]:
    """Append ``cls(data, event, id)`` to ``out`` for each *simple* SSE event of ``chunk`` from ``pos`` on (only
    ``data:``/``event:``/``id:`` lines with one space, LF or CRLF as ``crlf`` says, data within ``limit`` bytes
    and lines within ``max_line``), stopping at the first piece that is not simple. Returns ``(pos, stop,
    last_id)``: where it stopped, the end of that piece with its separator (-1: no whole piece left, ``chunk[pos:]``
    is the rest) and the last event id. ``raw``: each event's data is its UTF-8 bytes (validated), not str.
    ``dataless``: flags for a piece with no data line: 1, taken (no event; its last id kept) when it holds only
    comment, ``id`` and ``event`` lines (a piece with a ``retry`` line is never simple: it sets the decoder's
    ``retry``); 2, unknown fields too; 4, the provider decoder's rules (not
    taken with ``event: error``, an ``error`` field or a line starting with ``{`` or ``[`` after any blanks). The
    caller reads every piece it stops at with the line parser. Caller:
    :meth:`agentmsg._wire.sse.SSEDecoder._simple_events`."""

@final
class SSEScanner:
    """:func:`sse_scan` from a chunk's start with the arguments that do not change within a stream given once (a
    stream parser scans each chunk of a live stream: sse_scan's ten arguments were loaded and converted at each
    call). ``SSEScanner(limit, max_line, cls, raw)``; then ``scanner(chunk, last_id, out, dataless)`` is
    ``sse_scan(chunk, 0, b"\\r" in chunk, limit, max_line, last_id, out, cls, raw, dataless)``: the same events
    appended to ``out``, the same ``(pos, stop, last_id)`` returned (the line ends told from the chunk: a CR in it,
    CRLF ones). ``chunk`` not ``bytes`` (exactly), ``last_id`` not ``str``, ``out`` not a ``list``, ``dataless``
    not an ``int``, or a keyword argument: TypeError; to the constructor, ``limit`` or ``max_line`` not an ``int``
    or ``cls`` not callable: TypeError. Each call returns a new tuple. Caller: :meth:`agentmsg._wire.sse.SSEDecoder.idle_scanner`, for
    :class:`agentmsg.providers._response.parser.StreamParser`.

    ``route`` (a raw scanner's; a :attr:`PayloadReader.route <agentmsg.providers._response.reader.PayloadReader.route>`:
    ``(head, tail, _, event, after, ...)``, or None): each event named ``event`` whose data
    :func:`json_string_between` ``(data, head, tail, after)`` reads is appended as ``(its value, data)``, not as an
    event, up to the first event that is not so (its reading may change the caller's route): that one and those
    after it are events, as without a route. The result is the same. Another ``route``, or one given to a scanner
    that is not raw: TypeError."""

    def __new__(
        cls, limit: int, max_line: int, event_cls: Callable[[Any, str, str], Any], raw: bool, /
    ) -> SSEScanner: ...
    def __call__(
        self, chunk: bytes, last_id: str, out: list[Any], dataless: int, route: tuple[Any, ...] | None = None, /
    ) -> tuple[int, int, str]: ...
    @property
    def limit(self) -> int:
        """The bytes a simple event's data line may hold."""
    @property
    def max_line(self) -> int:
        """The bytes any other line may hold."""
    @property
    def cls(self) -> Callable[[Any, str, str], Any]:
        """What each event is made with: ``cls(data, event, id)``."""
    @property
    def raw(self) -> bool:
        """Each event's data is its UTF-8 bytes (checked), not ``str``."""

def json_string_between(data: bytes, head: bytes, tail: bytes, after: tuple[bytes, ...] = (), /) -> str | None:
    """The value of the JSON string when ``data`` is exactly ``head`` + one JSON string + ``tail``, as orjson
    reads it. With ``after``: when ``data`` goes on after ``tail`` with a hole then the piece, for each piece of
    ``after``; a hole is a JSON string or an integer of at most 18 digits (``-?(0|[1-9][0-9]*)``), checked as
    orjson reads it (a string as the text is), its value not read: a field that changes from one payload to the
    next and that the caller does not read from it (OpenAI's ``obfuscation``, Gemini's usage counts, which are
    read from the last payload at the end). None when ``data`` is not so, or a string holds what this does not
    read exactly as orjson does (a ``\\u`` escape of a surrogate, a raw control character, an escape JSON does
    not have, invalid UTF-8): the caller then reads the payload with orjson. Caller: the text route of
    :class:`agentmsg.providers._response.parser.StreamParser` (:meth:`PayloadReader.route_text`)."""
