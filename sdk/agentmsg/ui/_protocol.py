"""The one contract every UI protocol follows (:mod:`agentmsg.ui` documents it), and what the protocols share:
the SSE framing of one JSON event, the negotiation of a protocol for a request."""

from __future__ import annotations

import decimal
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import orjson

from agentmsg._codec.jsontext import deep_json_text
from agentmsg._wire.sse import encode_event, field_digits
from agentmsg.errors import AgentmsgError, Problem, ValidationError, wrong_type
from agentmsg.events.reducer import DEFAULT_MAX_PROBLEMS

__all__ = [
    "MAX_NOTES",
    "SAFE_INTEGER",
    "Decoder",
    "Encoder",
    "NotAcceptable",
    "Notes",
    "UIProtocol",
    "json_text",
    "negotiate",
    "quoted",
    "sse_frame",
]

#: Notes a codec keeps at most (the reducer's default ``max_problems``): a stream of ever new bad events (a hostile
#: server's, for a decoder) held one note each for the stream's life (50,000 bogus events: 12-18 MB)
MAX_NOTES = DEFAULT_MAX_PROBLEMS

#: The largest count a protocol's JavaScript reader holds exactly (``Number.MAX_SAFE_INTEGER``): a summed usage count
#: beyond it is left out, with a note (rule ``maximum``), by every encoder
SAFE_INTEGER = 2**53 - 1


class Notes(list[Problem]):
    """A codec's ``notes``: the list the contract names, holding at most :data:`MAX_NOTES` notes; beyond them one
    last note (rule ``max-problems``, the reducer's) counts those not kept."""

    def __init__(self) -> None:
        super().__init__()
        self.omitted = 0

    def append(self, problem: Problem, /) -> None:
        if len(self) < MAX_NOTES:
            super().append(problem)
            return
        self.omitted += 1
        count = Problem("", "max-problems", f"{self.omitted:,} more notes were not kept (a stream keeps {MAX_NOTES:,})")
        if self.omitted == 1:
            super().append(count)
        else:
            self[-1] = count

    @staticmethod
    def room(notes: list[Problem]) -> bool:
        """Whether ``notes`` keeps another note: a codec's said-once keys are held only then (past it, a note is
        counted, its key not held either)."""
        return len(notes) < MAX_NOTES

    def extend(self, problems: Iterable[Problem], /) -> None:
        for problem in problems:
            self.append(problem)

    def __iadd__(self, problems: Iterable[Problem], /) -> Notes:  # type: ignore[override,misc]
        self.extend(problems)
        return self

    def __reduce__(self) -> tuple[Any, tuple[list[Problem], int]]:
        # (a list subclass is unpickled and copied by appending its items again: past the cap that would count the
        # count note itself, before ``omitted`` is restored)
        return _notes, (list(self), self.omitted)


def _notes(items: list[Problem], omitted: int) -> Notes:
    notes = Notes()
    list.extend(notes, items)
    notes.omitted = omitted
    return notes


@runtime_checkable
class Encoder(Protocol):
    """AgentEvents (dicts) to a protocol's events (dicts), one stream: stateful, one per stream.

    ``feed`` takes one AgentEvent and returns the protocol events it gives (none, one or several, in order);
    ``close`` the events that end the stream when its source ended normally (what is still open is closed),
    ``fail`` those that end it when the source raised (``message`` says why). After ``close`` or ``fail`` the
    encoder takes nothing more. ``notes`` collects what had no counterpart in the protocol, one
    :class:`~agentmsg.Problem` per rule and place (pointer ``/<event index>/<key>``, a rule of
    ``agentmsg.cli._rules``): what is left out is said by rule, never dropped silently; a stream keeps
    :data:`MAX_NOTES` (10,000) of them, and one last note (rule ``max-problems``) counts the rest. An encoder never
    raises on bad events: what it cannot use is a note."""

    notes: list[Problem]

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]: ...

    def close(self) -> list[dict[str, Any]]: ...

    def fail(self, message: str) -> list[dict[str, Any]]: ...


@runtime_checkable
class Decoder(Protocol):
    """A protocol's events (dicts, as its JSON gives them) to AgentEvents (dicts), one stream: stateful, one per
    stream. ``feed`` / ``close`` / ``notes`` as :class:`Encoder`'s (``close``: the protocol stream ended, what is
    still open is closed as a cut stream is). A decoder made with ``strict=True`` raises
    :class:`~agentmsg.ValidationError` (JSON pointer ``/<event index>/<key>`` + rule) at the first event that
    breaks the protocol; otherwise that event is a note (same pointer and rule) and skipped or read as far as
    it can be."""

    notes: list[Problem]

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]: ...

    def close(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class UIProtocol(Protocol):
    """One way of speaking agentmsg's event stream to a front end (see :mod:`agentmsg.ui`)."""

    #: the registry name: ``agentscope``, ``ag-ui``, ``ai-sdk``; what ``?protocol=`` and ``--protocol`` take
    name: str
    #: the media type an ``Accept`` header selects the protocol with (the response itself is always
    #: ``text/event-stream``, which every protocol also accepts, at a lower precedence than its own type)
    media_type: str
    #: response headers the protocol adds to the endpoint's own (content type, cache control)
    response_headers: tuple[tuple[str, str], ...]
    #: whether a client may resume with ``Last-Event-ID`` (the frames then carry ``id:`` = the position)
    resumable: bool

    def encoder(self) -> Encoder: ...

    def decoder(self, *, strict: bool = False) -> Decoder: ...

    def frame(self, event: Mapping[str, Any], position: int) -> bytes:
        """One SSE frame (ending with its blank line) of one protocol event, the ``position``-th (1, 2, ...) of the
        stream."""
        ...

    def trailer(self, error: str | None) -> bytes:
        """What each connection gets after the last frame (``error``: the source raised, and ``fail``'s events
        are sent already): agentscope's ``end`` / ``error`` event, the AI SDK's ``data: [DONE]``, or nothing."""
        ...


#: a key or scalar as ``json.dumps`` writes it here (a lone surrogate as its escape; NaN, an object: an error)
_ESCAPED = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode


def json_text(event: Any) -> str:
    """The compact JSON text of an event. A string holding a lone UTF-16 surrogate (half of a character split
    across two deltas, in events given as Python objects) has no UTF-8 form, but JSON text carries it as a ``\\u``
    escape, as a browser's ``JSON.parse`` reads it. Anything else that is not JSON raises
    ``orjson.JSONEncodeError``."""
    try:
        return orjson.dumps(event).decode()
    except orjson.JSONEncodeError:
        try:
            try:
                return _ESCAPED(event)
            except RecursionError:  # (deeper than orjson's 255 levels and Python's stack: a JSON value all the same)
                return deep_json_text(event, _ESCAPED)
        except (TypeError, ValueError):
            raise orjson.JSONEncodeError("the event is not JSON") from None


def value_text(value: Any) -> str:
    """A value a protocol carries as text (a tool's input or output, a part with no part of its own): its
    :func:`json_text` (a lone surrogate as its escape, an integer beyond 64 bits in digits, as JSON.stringify writes
    them), or Python's repr of what is no JSON (an object), so that carrying it never raises."""
    try:
        return json_text(value)
    except orjson.JSONEncodeError:
        try:
            return repr(value)
        except RecursionError:  # (an object that is no JSON, nested beyond Python's stack)
            return f"<{type(value).__name__} that is no JSON, nested too deep to show>"


#: characters of a value a decoder's note quotes at most (:func:`quoted`)
QUOTED_CHARS = 200
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: an object key JavaScript takes for an array index (0 to 2**32 - 2 in canonical digits): JSON.stringify writes
#: those first, ascending, then the other keys in the order read
_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}")


def _js_number(x: float) -> str:
    """A number as ``JSON.stringify`` writes the double ``JSON.parse`` read it as (ECMAScript's Number::toString:
    the shortest digits that read back, as Python's repr; plain from 1e-6 up to 1e21, else ``1e+21``, ``1e-7``;
    ``-0`` as ``0``; Infinity as ``null``)."""
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digits, exponent = decimal.Decimal(repr(abs(x))).normalize().as_tuple()
    s = "".join(map(str, digits))
    k = len(s)
    n = int(exponent) + k  # the value is 0.<s> times 10**n
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + s
    return sign + s[0] + ("." + s[1:] if k > 1 else "") + f"e{n - 1:+d}"


def _js_string(text: str) -> str:
    """A string as ``JSON.stringify`` writes it: non-ASCII as it is, a lone surrogate as its ``\\udxxx`` escape."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _js_pieces(value: Any) -> Iterator[str]:
    """The pieces of the JSON text ``JSON.stringify`` writes for a value read from JSON (what ``JSON.parse`` read the
    same text as): compact, a string's non-ASCII as it is and a lone surrogate as its ``\\udxxx`` escape, numbers
    as :func:`_js_number`, an object's array-index keys first. TypeError for what is no JSON."""
    if isinstance(value, str):
        yield _js_string(value)
    elif value is True or value is False or value is None:
        yield "true" if value is True else "false" if value is False else "null"
    elif isinstance(value, int):
        if -(2**53) <= value <= 2**53:
            yield str(value)
        else:
            try:
                yield _js_number(float(value))  # (the double JSON.parse reads it as)
            except OverflowError:
                yield "null"  # (Infinity)
    elif isinstance(value, float):
        yield _js_number(value)
    elif isinstance(value, (list, tuple)):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ","
            yield from _js_pieces(item)
        yield "]"
    elif isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("an object key that is no string")
        index = sorted((k for k in value if _INDEX_KEY.fullmatch(k) and int(k) < 2**32 - 1), key=int)
        taken = set(index)
        yield "{"
        for i, key in enumerate([*index, *(k for k in value if k not in taken)]):
            yield ("," if i else "") + _js_string(key) + ":"
            yield from _js_pieces(value[key])
        yield "}"
    else:
        raise TypeError(f"{type(value).__name__} is no JSON")


def _js_json(value: Any, limit: int) -> str:
    """The JSON text ``JSON.stringify`` writes for a value read from JSON (:func:`_js_pieces`), written only as far
    as its first ``limit`` characters and one more (all a note shows of it, and that it goes on: a value of megabytes
    is not written whole); what is no JSON as :func:`value_text`."""
    out: list[str] = []
    size = 0
    try:
        for piece in _js_pieces(value):
            out.append(piece)
            size += len(piece)
            if size > limit:
                break
    except (TypeError, RecursionError):
        return value_text(value)
    return "".join(out)


def quoted(value: Any, limit: int = QUOTED_CHARS) -> str:
    """A value of the input as a decoder's note quotes it: a string as the JSON text of its first ``limit``
    characters (code points), another value as its JSON text cut there, ``...`` after a cut saying it. What the
    TypeScript decoders' ``quoted`` (sdk/typescript/src/notes.ts) writes, so that the notes of both are the same."""
    if isinstance(value, str):
        return _js_string(value[:limit]) + ("..." if len(value) > limit else "")
    text = _js_json(value, limit)
    return text[:limit] + ("..." if len(text) > limit else "")


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same, as the TypeScript decoders' ``sameJson`` (sdk/typescript/src/state.ts)
    compares them: a number by its value (``1`` is ``1.0``), never a boolean; an object's keys in any order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    return type(a) is type(b) and a == b


def sse_frame(event: Mapping[str, Any], position: int | None, kind: str | None = None) -> bytes:
    """``data: <JSON>`` as one SSE event, with ``id: <position>`` when given and ``event: <kind>`` when given.

    The common frame (no kind, an ``int`` position or none, an event orjson writes) is put together from orjson's
    bytes as they are: compact JSON holds no line end (a CR or LF in a string is an escape) and an integer's
    digits none either, so :func:`~agentmsg._wire.sse.encode_event` would write the very same bytes, after decoding
    the JSON to text, splitting it at line ends, checking the id and encoding it all again (two thirds of the
    frame's time).

    A position of more digits than Python writes (4,300: ``str`` raised a bare ValueError) is
    :class:`~agentmsg.ValidationError`, rule ``integer-range``, pointer ``/position``
    (:func:`~agentmsg._wire.sse.field_digits`), before the event is looked at; a position that is no int (a bool, a
    float, a text: ``id: True`` was written) is one too, rule ``type``."""
    if kind is None and (position is None or type(position) is int):
        try:
            data = orjson.dumps(event)
        except orjson.JSONEncodeError:
            pass  # (a lone surrogate, a number past 64 bits, ...: json_text's way below)
        else:
            if position is None:
                return b"data: %b\n\n" % data
            try:
                return b"id: %d\ndata: %b\n\n" % (position, data)
            except ValueError:
                pass  # (more digits than Python writes: field_digits says so below)
    if position is not None and (isinstance(position, bool) or not isinstance(position, int)):
        raise wrong_type("/position", "a frame's position is an int (or None: no id)", position)
    said = None if position is None else field_digits(int(position), "position")
    return encode_event(json_text(event), id=said, event=kind).encode()


class NotAcceptable(AgentmsgError):
    """No protocol the endpoint offers fits the request (HTTP 406); the message is the one-line reason. An
    :class:`~agentmsg.errors.AgentmsgError` (an ``Exception`` as before)."""


#: specificity of an Accept range that selects a protocol: its own media type, SSE, text/*, */*
_OWN, _SSE, _TYPE, _ANY = 3, 2, 1, 0


#: A weight's value as RFC 9110 (12.4.2) writes it: 0 to 1, at most three decimals (not ``float``'s syntax, which
#: reads ``0.0_1``, ``5e-1``, ``nan``, `` 1 ``)
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")


def _ranges(accept: str) -> list[tuple[str, float]]:
    """The media ranges of an Accept header with their q values; what is not a media range is left out (a header
    of no range at all reads as no header: any protocol will do). A ``q`` that is no RFC 9110 qvalue (``q=2``,
    ``q=0.5e0``, ``q=0.0001``) is the default weight, 1, as Django reads one: the client named the range, and
    leaving it out read ``Accept: text/html;q=2`` as no header at all (the default protocol, not 406)."""
    out: list[tuple[str, float]] = []
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        media = media.lower()
        kind, slash, sub = media.partition("/")
        if not slash or not kind or not sub or not media.isascii() or not media.isprintable() or " " in media:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                value = value.strip()
                q = float(value) if _QVALUE.fullmatch(value) else 1.0
        out.append((media, q))
    return out


def _fit(protocol: UIProtocol, ranges: list[tuple[str, float]]) -> tuple[float, int]:
    """(q, specificity) of ``protocol`` under the most specific range that matches it ((0, -1): none does)."""
    own = protocol.media_type.lower()
    best = (0.0, -1)
    for media, q in ranges:
        if media == own:
            spec = _OWN
        elif media == "text/event-stream":
            spec = _SSE
        elif media in ("text/*", own.split("/")[0] + "/*"):
            spec = _TYPE
        elif media == "*/*":
            spec = _ANY
        else:
            continue
        if spec > best[1]:
            best = (q, spec)
    return best


def negotiate(offered: Sequence[UIProtocol], query: str | None, accept: str | None) -> UIProtocol:
    """The protocol a request asks for among ``offered`` (the first is the default): ``?protocol=NAME`` when given
    (a name not offered raises :class:`NotAcceptable`), else the ``Accept`` header's choice (highest q, then the
    most specific range: a protocol's own media type before ``text/event-stream`` before wildcards, then the order
    of ``offered``), else the default. An Accept header naming ranges none of them fits raises
    :class:`NotAcceptable`; a ``query`` or an ``accept`` that is neither a string nor None, an ``offered`` that is
    no sequence of protocols, a ValidationError (rule ``type``, pointer ``/query``, ``/accept``, ``/offered`` or
    ``/offered/N``; an empty one: rule ``minItems``)."""
    if not isinstance(offered, Sequence) or isinstance(offered, str):
        raise wrong_type("/offered", "offered is a sequence of UI protocols", offered)
    if not offered:
        raise ValidationError.single("/offered", "minItems", "offered holds at least one protocol (the default)")
    for i, one in enumerate(offered):
        if not isinstance(one, UIProtocol):
            raise wrong_type(f"/offered/{i}", "an offered protocol is a UIProtocol (agentmsg.ui.get(name))", one)
    if query is not None and not isinstance(query, str):
        raise wrong_type("/query", "query is the protocol's name (a string) or None", query)
    if accept is not None and not isinstance(accept, str):
        raise wrong_type("/accept", "accept is an Accept header's value (a string) or None", accept)
    if query is not None:
        for protocol in offered:
            if protocol.name == query:
                return protocol
        names = ", ".join(p.name for p in offered)
        raise NotAcceptable(f"protocol {query[:60]!r} is not served here: ask for one of {names}")
    ranges = _ranges(accept) if accept else []
    if not ranges:
        return offered[0]
    best: UIProtocol | None = None
    best_fit = (0.0, -1)
    for protocol in offered:
        fit = _fit(protocol, ranges)
        if fit[0] > 0.0 and fit > best_fit:
            best, best_fit = protocol, fit
    if best is None:
        types = ", ".join(p.media_type for p in offered)
        shown = (accept or "")[:80]
        raise NotAcceptable(f"no protocol served here fits Accept: {shown!r}: text/event-stream or one of {types}")
    return best
