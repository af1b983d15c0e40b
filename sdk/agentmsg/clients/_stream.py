"""The state of a streamed reply, shared by the sync and async streams (which only do the IO around it): the
reducer fed with the parser's events, the snapshot while it runs, the closing events of a stream that broke or
was cancelled, and the :class:`~agentmsg.clients.BrokenStreamError` of a stream that broke."""

from __future__ import annotations

import copy
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from operator import length_hint
from typing import TYPE_CHECKING, Any, Final, cast

import httpx

from agentmsg import GenerateReason, Msg, Problem, Reducer
from agentmsg.clients._errors import (
    BrokenStreamError,
    ReplyTooLargeError,
    client_closed,
    closed_while_read,
    reason,
    request_id,
)
from agentmsg.errors import AgentmsgError, with_article
from agentmsg.message import METADATA_GENERATE_REASON
from agentmsg.providers import FormattedRequest

if TYPE_CHECKING:
    from agentmsg.clients._config import BaseClient
    from agentmsg.providers._response.parser import StreamParser

__all__ = [
    "StreamState",
    "abody_chunks",
    "araw_chunks",
    "body_chunks",
    "past_limit",
    "raw_chunks",
    "with_request",
]

_BODY_HEAD = 120  # bytes of a body that was no stream shown in the error

#: Bytes of JSON one event may add to the message beyond the bytes of the body it came from, at most (a tool
#: call's block with its minted id from a Gemini part of 80 bytes: about 180): with the bytes read, a bound on
#: the message's growth, measured exactly only when that bound could reach the limit (see ``_room``)
EVENT_ROOM = 160


#: Bytes a compressed body is inflated by at a time: a gzip bomb (64 KiB inflating to 64 MiB in one network
#: read) is never held whole, only as far as the reader reads it (:func:`body_chunks`)
INFLATE_PIECE = 1 << 16

#: Content codings inflated here in bounded pieces (zlib's window bits). A body of another compression (``br``,
#: ``zstd``) is refused (:func:`_decoder`): httpx's decoders inflate each network read whole
_INFLATED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}

#: Content codings of one body inflated, at most (a server applies one; each holds a zlib state and window)
MOST_CODINGS = 4
#: Compressions not inflated here (nothing here inflates them in bounded pieces: httpx inflated ``br`` and ``zstd``,
#: their packages installed, a network read whole): a body so coded is refused. A coding nothing knows (a proxy's
#: ``utf-8``) is read as none, as httpx reads it: there is nothing to inflate
_REFUSED_CODINGS = frozenset({"br", "zstd", "compress", "x-compress"})


class _Inflater:
    """A gzip or deflate body inflated in pieces of at most :data:`INFLATE_PIECE` bytes (httpx's own decoder
    inflates each network read whole: about 1,000 times its size for a bomb). A deflate body without its zlib
    header (raw deflate, which some servers send) is read as such, as httpx reads it. A gzip body may hold
    several members (RFC 1952 2.2), inflated one after the other as ``gzip.decompress`` reads them (zero bytes
    after a member skipped, as it skips them); bytes after the end of a deflate body, or after a gzip member that
    are no gzip member, are a decoding error (httpx's decoder dropped them unsaid: the reply read cut short)."""

    __slots__ = ("_first", "_kind", "_members", "_raw", "_wbits", "_z")

    def __init__(self, wbits: int) -> None:
        self._wbits = wbits
        self._z: Any = zlib.decompressobj(wbits)  # None once its data has ended (a gzip member: until the next)
        self._kind = "deflate" if wbits == zlib.MAX_WBITS else "gzip"
        self._raw = self._kind == "deflate"  # raw deflate may yet be tried (on the first data)
        self._first = True
        self._members = 0  # gzip members inflated whole (deflate: 1 once its data has ended)

    def pieces(self, data: bytes) -> Iterator[bytes]:
        while True:
            z = self._z
            if z is None:  # the data ended: a gzip body's next member, or bytes where none may be
                data = self._next(data)
                if not data:
                    return
                z = self._z = zlib.decompressobj(self._wbits)
            try:
                out = z.decompress(data, INFLATE_PIECE)
            except zlib.error as exc:
                if self._first and self._raw:
                    self._z, self._raw = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                raise httpx.DecodingError(self._not_data(str(exc))) from None
            self._first = False
            if out:
                yield out
            if z.eof:  # (all its output given: zlib ends a stream only then)
                self._z = None
                self._members += 1
                data = z.unused_data
                if not data:
                    return
                continue
            data = z.unconsumed_tail
            if not data and len(out) < INFLATE_PIECE:  # (a full piece may leave output inside zlib)
                return

    def _next(self, data: bytes) -> bytes:
        """The bytes after the end of the data: a gzip member's start, zero padding skipped (none left: b"")."""
        if self._kind == "deflate":
            if data:
                raise httpx.DecodingError(f"{len(data)} bytes follow the end of the body's deflate data")
            return data
        return data.lstrip(b"\0")

    def _not_data(self, why: str) -> str:
        if self._members:
            return f"the bytes after the body's gzip member {self._members} are no gzip member: {why}"
        return f"the body is not {self._kind} data: {why}"

    def flush(self) -> bytes:
        if self._z is None:
            return b""
        try:
            rest = self._z.flush()
        except zlib.error as exc:
            raise httpx.DecodingError(f"the compressed body is cut: {exc}") from None
        if self._members and not self._z.eof:  # (the first member cut is the parser's to say, as before)
            raise httpx.DecodingError(self._not_data("the body ends inside one"))
        return bytes(rest)

    def end(self) -> Iterator[bytes]:
        """What zlib still holds once the body has ended."""
        rest = self.flush()
        if rest:
            yield rest


class _Chain:
    """A body of several content codings (``gzip, gzip``; the header given twice): one :class:`_Inflater` per
    coding, the last applied first (RFC 9110 8.4: codings are listed in the order they were applied), each
    piece one inflates fed to the next as it comes, so no stage holds more than a piece at once (httpx's
    MultiDecoder inflated each network read whole, through every coding: 3.5 KB of ``gzip, gzip`` to 2 GiB)."""

    __slots__ = ("_stages",)

    def __init__(self, stages: list[_Inflater]) -> None:
        self._stages = stages

    def pieces(self, data: bytes, at: int = 0) -> Iterator[bytes]:
        stage, last = self._stages[at], at + 1 == len(self._stages)
        for piece in stage.pieces(data):
            if last:
                yield piece
            else:
                yield from self.pieces(piece, at + 1)

    def end(self) -> Iterator[bytes]:
        """What the stages still hold once the body has ended, each stage's flushed through those after it."""
        for at, stage in enumerate(self._stages):
            rest = stage.flush()
            if rest:
                yield from self.pieces(rest, at + 1) if at + 1 < len(self._stages) else (rest,)


def _refused(why: str) -> Iterator[bytes]:
    raise httpx.DecodingError(why)
    yield b""  # (a generator: raised as the body is read, as a broken body's error is)


def _decoder(response: httpx.Response) -> _Inflater | _Chain | Iterator[bytes] | None:
    """What inflates the response's body: None when it has no content coding (``identity`` only), an
    :class:`_Inflater` for one, a :class:`_Chain` for several, or (a compression not inflated here, or too many)
    an iterator that raises ``httpx.DecodingError`` when read. A coding nothing knows is passed over."""
    listed = [c.strip().lower() for c in response.headers.get_list("content-encoding", split_commas=True)]
    codings = [c for c in listed if c in _INFLATED or c in _REFUSED_CODINGS]  # (identity, unknown: nothing to do)
    if not codings:
        return None
    other = [c for c in codings if c not in _INFLATED]
    if other:
        return _refused(
            f"the body's content coding {other[0][:40]!r} is not inflated here (only gzip and deflate, in bounded"
            " pieces): not decoded"
        )
    if len(codings) > MOST_CODINGS:
        return _refused(
            f"the body has {len(codings)} content codings (at most {MOST_CODINGS} are inflated): not decoded"
        )
    stages = [_Inflater(_INFLATED[c]) for c in reversed(codings)]
    return stages[0] if len(stages) == 1 else _Chain(stages)


def _read(inflater: _Inflater | _Chain, data: bytes) -> Iterator[bytes]:
    """The pieces inflated from one network read; an empty one for a read that inflates to nothing (empty gzip
    members, zero padding): its reader sees each read, and may stop at a limit on the bytes received
    (:func:`past_limit`), where a body that inflated to nothing was read for as long as the server sent it."""
    made = False
    for piece in inflater.pieces(data):
        made = True
        yield piece
    if not made:
        yield b""


def _inflated(raw: Iterator[bytes], inflater: _Inflater | _Chain) -> Iterator[bytes]:
    for data in raw:
        yield from _read(inflater, data)
    yield from inflater.end()


async def _ainflated(raw: AsyncIterator[bytes], inflater: _Inflater | _Chain) -> AsyncIterator[bytes]:
    async for data in raw:
        for piece in _read(inflater, data):
            yield piece
    for piece in inflater.end():
        yield piece


def past_limit(response: httpx.Response, size: int, cap: int) -> bool:
    """Whether a body read through :func:`body_chunks` (``size`` bytes of it so far, content-decoded) is past
    ``cap`` bytes: the bytes decoded, or the bytes received (a compressed body that inflates to little or
    nothing is bounded by what came over the wire, as a stream's is)."""
    return size > cap or response.num_bytes_downloaded > cap


async def _arefused(refused: Iterator[bytes]) -> AsyncIterator[bytes]:
    for piece in refused:
        yield piece


def body_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The chunks of a response's body, content-decoded, as ``iter_bytes()`` gives them: ``iter_raw()`` when the
    response has no content encoding (and was not read already), which gives the same chunks without passing each
    through an identity decoder and a chunker of no size (0.28 -> 0.13 µs a chunk); a gzip or deflate body (or
    one of several such codings) inflated here, :data:`INFLATE_PIECE` bytes at a time (a reader that stops at a
    limit holds no more); a body of another coding raises ``httpx.DecodingError`` when read (never inflated by
    httpx, a network read whole)."""
    if response.is_stream_consumed:
        return response.iter_bytes()
    if "content-encoding" not in response.headers:
        return response.iter_raw()
    decoder = _decoder(response)
    if decoder is None:
        return response.iter_raw()
    if isinstance(decoder, (_Inflater, _Chain)):
        return _inflated(response.iter_raw(), decoder)
    return decoder


def abody_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """:func:`body_chunks` of an async response (``aiter_raw()`` or ``aiter_bytes()``)."""
    if response.is_stream_consumed:
        return response.aiter_bytes()
    if "content-encoding" not in response.headers:
        return response.aiter_raw()
    decoder = _decoder(response)
    if decoder is None:
        return response.aiter_raw()
    if isinstance(decoder, (_Inflater, _Chain)):
        return _ainflated(response.aiter_raw(), decoder)
    return _arefused(decoder)


def raw_chunks(response: httpx.Response, encoded: bool | None = None) -> Iterator[bytes]:
    """:func:`body_chunks` for a live stream's loop: the response's own byte stream when the body has no content
    coding, without ``iter_raw()``'s generator around it (its chunker of no size and its byte count: about 0.5 µs
    of a live chunk's 13, its most common cost that is not httpx's own reading). A read error from it carries no
    request (``iter_raw()`` gives it one): the caller's ``except`` passes it through :func:`with_request`.
    ``encoded``: whether the response has a content coding, when the caller knows it (not looked up again)."""
    if encoded is None:
        encoded = "content-encoding" in response.headers
    if response.is_stream_consumed or encoded:
        return body_chunks(response)
    response.is_stream_consumed = True  # (as iter_raw() marks it: read again, it raises StreamConsumed)
    return iter(cast(httpx.SyncByteStream, _unbound(response.stream)))


def araw_chunks(response: httpx.Response, encoded: bool | None = None) -> AsyncIterator[bytes]:
    """:func:`raw_chunks` of an async response."""
    if encoded is None:
        encoded = "content-encoding" in response.headers
    if response.is_stream_consumed or encoded:
        return abody_chunks(response)
    response.is_stream_consumed = True
    return aiter(cast(httpx.AsyncByteStream, _unbound(response.stream)))


#: httpx's wrappers of a response's byte stream that only hand its chunks on (their ``close()`` / ``aclose()``,
#: which sets the response's ``elapsed``, is the response's own): the types themselves, where this httpx has them
_BOUND: Final = frozenset(
    t
    for t in (getattr(getattr(httpx, "_client", None), n, None) for n in ("BoundSyncStream", "BoundAsyncStream"))
    if t is not None
)


def _unbound(stream: Any) -> Any:
    """The byte stream a response's ``stream`` wraps when it is httpx's ``BoundSyncStream`` or ``BoundAsyncStream``
    (exactly; their ``_stream``), else ``stream``: their iterator is a generator that yields each chunk of the one
    inside, a generator step a chunk (about 800 instructions of a live chunk's 24,000, async) for nothing. Closing
    still goes through the response (:func:`raw_chunks`' callers close it), which closes the wrapper, which sets
    ``elapsed`` and closes the stream inside. An httpx without them, or whose wrapper holds no ``_stream``, is read
    through the wrapper."""
    if type(stream) in _BOUND:
        inner = getattr(stream, "_stream", None)
        if inner is not None:
            return inner
    return stream


def with_request(exc: BaseException, response: httpx.Response) -> None:
    """Give ``exc``, raised while reading ``response``'s body, the request it was raised for when it is an httpx
    error that has none (one raised by the byte stream itself: :func:`raw_chunks`), as ``iter_raw()`` does."""
    if isinstance(exc, httpx.HTTPError):
        try:
            exc.request  # noqa: B018 (a property that raises when the error has none)
        except RuntimeError:
            exc.request = response.request


#: The start events of a reply and of its model call (the others start a block, a call or a result)
_REPLY_STARTS: Final = frozenset({"AGENT_START", "MODEL_CALL_START"})


def _part(event: dict[str, Any]) -> Any:
    """The block, call or result an event is of (its ``toolCallId`` or ``blockId``; None: the reply's own)."""
    return event.get("toolCallId", event.get("blockId"))


def read_broke(parser: StreamParser, exc: Exception) -> list[dict[str, Any]]:
    """The closing events of a body whose read broke (``exc``): a read timeout, a body that could not be decoded (a
    content coding not inflated here, compressed data that is not: the connection was whole), else a disconnect."""
    if isinstance(exc, httpx.TimeoutException):
        return parser.error(reason(exc), kind="timeout")
    if isinstance(exc, httpx.DecodingError):
        return parser.error(f"the body could not be decoded: {reason(exc)}", kind="decoding")
    return parser.error(f"the connection broke: {reason(exc)}", kind="disconnect")


class StreamState:
    """What a stream knows of its reply; :class:`~agentmsg.clients.ReplyStream` and
    :class:`~agentmsg.clients.AsyncReplyStream` read the body into it."""

    def __init__(self, client: BaseClient, request: FormattedRequest | None, raise_on_error: bool) -> None:
        self.client = client
        self._request = request  # (None: formatted as the stream starts, see AsyncClient.stream)
        self._raise = raise_on_error
        self.reducer = Reducer._of(False, None, client.name)  # (Reducer(name=...): no keywords, no bounds to check)
        self._message: Msg | None = None
        self._done = False
        self.error: str | None = None
        self._closing: list[dict[str, Any]] = []
        self.status_code: int | None = None  # the response's, once it came
        self.request_id: str | None = None  # the provider's request id (response header), once it came
        self._headers: httpx.Headers | None = None  # the response's, once it came
        self._encoded = False  # the response has a content coding (else the bytes received are the bytes read)
        self._body_head = b""  # the body's first bytes, to say what came when it was no stream at all
        self._heading = True  # _body_head holds fewer than _BODY_HEAD bytes
        self._parsed = False  # whether the parser made anything of the body before its closing events
        self._over: int | None = None  # the limit (bytes) the reply went over: read no further
        self._cause: BaseException | None = None  # what broke the body's read: the error raised is raised from it
        #: The events being yielded that the reducer has not taken yet (see :meth:`_catch_up`): the list, the
        #: iterator the loop yields them from, how many of them were taken, and the reducer's feed for them. The
        #: loop takes a read's events once they are all yielded (a call a read, not one an event), and
        #: ``message`` the ones yielded so far: a snapshot holds what the caller has seen, no more.
        self._lag: list[dict[str, Any]] | None = None
        self._lag_it: Iterator[dict[str, Any]] = iter(())
        self._lag_at = 0
        self._lag_feed: Callable[[list[dict[str, Any]]], None] | None = None
        self._parser: StreamParser | None = None  # the body's parser, once the response came (see problems)

    @property
    def request(self) -> FormattedRequest:
        """The request sent (or to be sent). :meth:`AsyncClient.stream <agentmsg.clients.AsyncClient.stream>`
        with a media policy that reads local files or downloads formats it as the stream starts (``async with``,
        or its first event): before that it is not known, and reading it raises :class:`AgentmsgError`."""
        request = self._request
        if request is None:
            raise AgentmsgError(
                "the stream's request is formatted as the stream starts (async with, or its first event): its media"
                " policy reads files or downloads, which AsyncClient.stream does in a worker thread then"
            )
        return request

    @property
    def diagnostics(self) -> tuple[Problem, ...]:
        """The formatter's diagnostics for the request sent (known once :attr:`request` is)."""
        return tuple(self.request.diagnostics)

    @property
    def problems(self) -> tuple[Problem, ...]:
        """What the provider's parser found wrong in the body so far (a payload that is not JSON, an event out of
        order, ...): each is also a CUSTOM ``agentmsg.problem`` event of the stream and a note in the message's
        metadata (``agentmsg_notes``); empty for a clean body. :attr:`error` says only what broke the stream."""
        parser = self._parser
        return () if parser is None else tuple(parser.problems)

    @property
    def done(self) -> bool:
        """Whether the stream has ended (read whole, broken or cancelled): ``message`` is then final."""
        return self._done

    @property
    def message(self) -> Msg | None:
        """The reduced message once the stream has ended (INTERRUPTED when it was cut or cancelled).
        While it runs, a snapshot of the message of the events yielded so far (None before the reply began; those
        of a read not yet yielded not in it), which is the reply as it would stand were the stream cut there: its
        generate reason is INTERRUPTED (a missing one would read MODEL_STOP, a normal end that has not happened)
        unless an event already gave one; once the reply's AGENT_END is yielded, that reply's message.
        ``done`` tells a snapshot from the final message."""
        if self._done:
            return self._message
        if self._lag is not None:
            self._peek()
        snapshot = self.reducer.snapshot()
        if snapshot is not None:
            # A fresh message built for this call: setting a valid enum value needs no re-validation.
            snapshot.metadata.setdefault(METADATA_GENERATE_REASON, GenerateReason.INTERRUPTED.value)
            return snapshot
        done = self.reducer.messages()  # the reply ended (its AGENT_END yielded): that message, as it ended (a copy,
        return copy.deepcopy(done[-1]) if done else None  # as a snapshot is: the final message is not the caller's)

    def _peek(self) -> None:
        """``message`` read while events are yielded: the reducer takes those yielded so far, where the loop is not
        running (the shells say when: a thread or task reading it while the loop runs sees what was taken)."""
        self._catch_up(False)

    def _read_taken(
        self, events: list[dict[str, Any]], fold: Callable[[list[dict[str, Any]]], None], grew: int, room: int, cap: int
    ) -> int:
        """A read's events all yielded: the reducer takes those ``message`` did not take meanwhile. ``room``: the bytes
        the message could still grow by within ``cap`` before this read, which grew it by ``grew`` at most; returns
        what is left, measured (:meth:`_room`) when the read could have used it up: negative, past the limit."""
        taken, self._lag = self._lag_at, None
        if not taken:
            fold(events)
        elif taken < len(events):  # (``message`` read meanwhile took the others)
            fold(events[taken:])
        room -= grew
        return self._room(cap) if room < 0 else room

    def _lagging(self, events: list[dict[str, Any]], feed: Callable[[list[dict[str, Any]]], None]) -> Iterator[Any]:
        """Events about to be yielded, which ``feed`` gives the reducer as they are seen (:meth:`_catch_up`): the
        iterator to yield them from."""
        self._lag, self._lag_at, self._lag_feed = events, 0, feed
        it = self._lag_it = iter(events)
        return it

    def _catch_up(self, whole: bool) -> None:
        """The reducer takes the lagging events the loop yielded (``whole``: all of them: the loop went past them, or
        they all arrived), and, ``whole``, lets them go. (An event taken off the iterator counts as yielded: the
        loop stopped between taking it and yielding it only when closed from another thread, and it arrived.)"""
        lag = self._lag
        if lag is None:
            return
        at = self._lag_at
        end = len(lag) if whole else len(lag) - length_hint(self._lag_it)
        if whole:
            self._lag = None
        else:
            self._lag_at = end
        if end > at:
            feed = self._lag_feed
            assert feed is not None  # (set with the lag)
            feed(lag if at == 0 and end == len(lag) else lag[at:end])

    # ---- what the shells call, in this order -------------------------------------------------------------

    def _responded(self, response: httpx.Response) -> None:
        """The response came (a 2xx): its status, request id and content type."""
        self.status_code = response.status_code
        headers = self._headers = response.headers  # (its content-type read only to say what came, in _end)
        self.request_id = request_id(headers)
        self._encoded = "content-encoding" in headers

    def _head_of(self, chunk: bytes) -> None:
        """Keep the body's first bytes (:data:`_BODY_HEAD`), to say what came when it was no stream at all. (The
        shells' loops feed each chunk's events to the reducer themselves and call this only while ``_heading``:
        a call per chunk cost about as much as what it did.)"""
        self._body_head += chunk[: _BODY_HEAD - len(self._body_head)]
        self._heading = len(self._body_head) < _BODY_HEAD

    def _read_failed(self, parser: StreamParser, exc: httpx.HTTPError) -> list[dict[str, Any]]:
        """The closing events of a stream whose body broke: a read timeout, a disconnect, or a body that could not
        be decoded (a content coding not inflated here, compressed data that is not: the connection was whole); or
        the client closed under it (``close()`` from another thread, ``aclose()`` from another task, its
        ``http_client`` closed by its caller), said so (an error of type ``client_closed``), the error raised
        then raised from a :class:`ClientClosedError` (itself from ``exc``). The error raised is raised from
        ``exc``."""
        self._cause = exc
        by_client = self.client._closed_by()
        if by_client is not None:
            closed = client_closed(self.client.provider, by_client)
            closed.__cause__ = self._cause
            self._cause = closed
            return parser.error(closed_while_read(by_client), kind="client_closed")
        return read_broke(parser, exc)

    def _room(self, cap: int) -> int:
        """Bytes the message being built may still grow by within ``cap`` (its JSON's size measured now, a
        snapshot written): negative when it is past it. The shells call it only when the bytes read and the
        events made since the last call (:data:`EVENT_ROOM` each) could have used up the room it gave: a stream
        whose message is far from the limit is measured a few times at most."""
        snapshot = self.reducer.snapshot()
        return cap - (len(snapshot.to_json_bytes()) if snapshot is not None else 0)

    def _too_large(self, parser: StreamParser, cap: int, message: bool) -> list[dict[str, Any]]:
        """The closing events of a reply longer than ``cap`` bytes (``limits.max_bytes``), or whose message
        would be (``message``): read no further, what arrived up to the limit kept (an error of type
        ``too_large``, rule ``max-bytes``)."""
        self._over = cap
        return parser.error(
            f"the streamed reply exceeds limits.max_bytes ({cap} bytes): not read further"
            + (" (the message built from it would)" if message else ""),
            kind="too_large",
            rule="max-bytes",
            limit=cap,
        )

    def _closing_events(self, closing: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The closing events (the parser's end, or a broken stream's), fed as they are yielded: the iterator the loop
        yields them from."""
        self._closing = closing
        return self._lagging(closing, self._feed_closing)

    def _feed_closing(self, events: list[dict[str, Any]]) -> None:
        self.reducer.feed_many(events, trusted=True)

    def _cancelled(self, parser: StreamParser) -> None:
        """The caller left (or cancelled) the stream: the message ends INTERRUPTED with what arrived (the events
        yielded: those the loop had not reached are not kept). Where it left before some events of a read, the
        parser's closing events close what the reducer never took (a call the caller never saw, ended with no
        arguments; a reply the parser saw end, which the caller did not): only their notes and error are fed, and
        the model call's end that carries the reply's usage (the closing events', else the read's own), and the
        reducer's finish closes the reply as cut (INTERRUPTED), with what was yielded."""
        lag = self._lag
        unseen = lag[len(lag) - length_hint(self._lag_it) :] if lag is not None else []
        self._catch_up(False)
        self._lag = None
        self._closing = closing = parser.error("cancelled by the caller", kind="cancelled")
        if unseen:
            ends = [e for e in (*unseen, *closing) if e.get("type") == "MODEL_CALL_END"]
            closing = [e for e in closing if e.get("type") == "CUSTOM"] + ends[-1:]
        else:  # (a block or call the parser held back, its start not yet an event: the caller never saw it either)
            held = {
                _part(e)
                for e in closing
                if e.get("type") not in _REPLY_STARTS and str(e.get("type")).endswith("_START")
            }
            held.discard(None)
            if held:
                closing = [e for e in closing if _part(e) not in held]
        self.reducer.feed_many(closing, trusted=True)
        self._end(parser)

    def _closed(self, parser: StreamParser) -> None:
        """After the closing events: the message is final; a broken stream raises (unless asked not to), from
        what broke its read, if that did."""
        cause = self._cause
        self._end(parser)
        if self.error is not None and self._raise:
            raise self._broken(self.error) from cause

    def _end(self, parser: StreamParser) -> None:
        self._catch_up(True)  # (the closing events, all arrived: those the caller left before too)
        self._cause = None  # (not held by the stream: its traceback's frames hold the stream)
        msgs = self.reducer.finish()
        self._message = msgs[-1] if msgs else None
        self._done = True
        errors = parser.builder.errors
        if errors and self.error is None:
            self.error = str(errors[0].get("message"))
            rid = errors[0].get("request_id")  # a provider error event's own, when no header gave one
            if self.request_id is None and isinstance(rid, str) and rid:
                self.request_id = rid
            if not self._parsed and errors[0].get("type") == "incomplete_stream":
                # Nothing of the body was the provider's stream (a proxy's HTML page, nothing): say what came.
                content_type = self._headers.get("content-type") if self._headers is not None else None
                shown = f"content-type {content_type}" if content_type else "no content-type"
                what = f"it starts {self._body_head!r}" if self._body_head else "it was empty"
                self.error += f" (the body is not {with_article(self.client.provider)} stream: {shown}, {what})"
        if self.error is not None:
            self.error = self.client._redactor()(self.error)

    def _broken(self, message: str) -> BrokenStreamError:
        if self._over is not None:
            return ReplyTooLargeError(
                message,
                limit=self._over,
                provider=self.client.provider,
                partial=self.message,
                status_code=self.status_code,
                request_id=self.request_id,
            )
        return BrokenStreamError(
            message,
            provider=self.client.provider,
            partial=self.message,
            status_code=self.status_code,
            request_id=self.request_id,
        )
