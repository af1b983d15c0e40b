"""An ASGI endpoint that serves agent events as ``text/event-stream``, with resume.

:class:`EventEndpoint` is a plain ASGI application (no framework needed): mount it in Starlette or
FastAPI, or run it with any ASGI server. It reads its source (any iterable or async iterable of
AgentEvents, as dicts) once, on demand, and shares it between connections:

* each event is sent as one SSE event: ``id`` = its position in the stream (1, 2, ...), ``event`` = its
  type, ``data`` = its JSON (the events are sent as they are; clients reduce them);
* the last ``replay`` events are kept (and of those at most ``replay_bytes`` bytes of frames, 64 MiB by
  default), so a client that reconnects with ``Last-Event-ID: N`` gets
  exactly the events after the N-th, then the live ones (nothing lost, nothing repeated). A resume
  from an event no longer in the buffer (or never sent) is refused with HTTP 409 rather than served
  with a gap; an id that is no position as written here (``0``, ``007``, ``-1``, blanks, non-ASCII
  digits) with HTTP 400;
* a comment line is sent after ``keepalive`` seconds without an event, so proxies keep the connection;
* when the source is exhausted each connection gets an ``end`` event (``data: {}``) and is closed;
  if the source raises, an ``error`` event (``data: {"message": ...}``) instead.
  ``@agentmsg/client`` (``streamSSE``) ends at ``end``, fails at ``error`` and reconnects otherwise;
* :meth:`EventEndpoint.close` (a server shutting down) ends the stream where it is: each open connection gets
  what was read and its end, as if the source had ended there, and a request after it gets HTTP 503.

The source advances only while some client reads (backpressure): a slow or absent client pauses an
async generator instead of filling memory. A synchronous iterable is read in the event loop, so it
must not block (a list, a file, a generator over data in memory); wrap blocking producers in an async
generator. ``drop_every`` (for testing resume) closes each connection after that many events.

Protocols (:mod:`agentmsg.ui`): each request gets the stream in one UI protocol, picked by ``?protocol=NAME`` or
the ``Accept`` header (:func:`agentmsg.ui.negotiate`; default the first of ``protocols``, ``agentscope``: the
bytes above); one not served gets HTTP 406 with a one-line reason, an empty ``?protocol=`` 400. Each protocol
other than agentscope has its own buffer of translated frames (its own positions, its own replay bound), made when
first asked for from the events still kept and fed every event after, so that a protocol that is ``resumable``
resumes exactly as above; its stream ends with its encoder's closing events and its ``trailer``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import urllib.parse
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from typing import Any

import orjson

from agentmsg import ui as ui_protocols
from agentmsg._wire.sse import field_digits
from agentmsg._wire.token import HEADER_NAME
from agentmsg.errors import ValidationError, require_count, require_seconds, wrong_type
from agentmsg.ui import NotAcceptable, negotiate
from agentmsg.ui._protocol import Encoder, UIProtocol
from agentmsg.ui.agentscope import AgentScope

__all__ = ["EventEndpoint"]

# The ASGI types as the ASGI spec, Starlette and FastAPI spell them (scope and messages are MutableMappings): with a
# plainer Mapping an endpoint's ``send`` would take less than theirs, and mypy would refuse it as their ASGIApp.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SYNC_BATCH = 256  # events pulled at once from a synchronous source
_SEND_BYTES = 1 << 16  # frames coalesced into one send while catching up; a longer frame is sent in pieces of it

#: The default bound in bytes of the frames an :class:`EventEndpoint` keeps for resuming (each protocol's buffer)
REPLAY_BYTES = 64 << 20


#: a Last-Event-ID this endpoint can have sent: a position, 1, 2, ... ([0-9]: ASCII digits only, not \d)
_POSITION = re.compile(r"[1-9][0-9]*")


def _shown(text: str, limit: int = 40) -> str:
    """A header value (read as latin-1) as a refusal shows it: its UTF-8 text (as the SSE spec sends it; bytes that
    are not UTF-8 as ``\\xNN``) quoted, cut to ``limit`` characters with its length after."""
    text = text.encode("latin-1").decode("utf-8", "backslashreplace")
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Buffer:
    """One protocol's frames of the stream: the frames of its events after the first ``dropped``, a list read by
    index (a deque's index is linear in its distance from an end: a client reading the whole of an unbounded
    buffer from its start, a reloaded page, took time quadratic in the stream). Events before :meth:`oldest` are
    dropped in runs. ``encoder`` (None for the base buffer, which holds the AgentEvents themselves) translates
    each AgentEvent into the protocol's events."""

    def __init__(
        self, protocol: UIProtocol, replay: int | None, translate: bool, replay_bytes: int | None = None
    ) -> None:
        self.protocol = protocol
        self.encoder: Encoder | None = protocol.encoder() if translate else None
        self.replay = replay
        self.replay_bytes = replay_bytes
        self.frames: list[bytes] = []
        self.dropped = 0  # events whose slots are gone from ``frames`` (frames[0] is event dropped + 1)
        self.first = 0  # events before the oldest one kept (their frames let go, their slots maybe not yet)
        self.kept = 0  # bytes of the frames kept (the events after ``first``)
        self.pushed = 0  # bytes of every frame so far
        self.count = 0  # events of this protocol so far
        # While a synchronous source's batch is read: the events after this many are kept whatever their bytes
        # (the client that asked for the batch waits for its first; one larger event would push it out)
        self.hold: int | None = None

    def add(self, event: Mapping[str, Any]) -> None:
        """One AgentEvent: its frame (base buffer) or the frames of what it translates to."""
        if self.encoder is None:
            self.push(event)
        else:
            for out in self.encoder.feed(event):
                self.push(out)

    def finish(self, error: str | None) -> None:
        """The source ended (``error``: it raised): the protocol's closing events."""
        if self.encoder is not None:
            for out in self.encoder.fail(error) if error is not None else self.encoder.close():
                self.push(out)

    def push(self, event: Mapping[str, Any]) -> None:
        frame = self.protocol.frame(event, self.count + 1)  # (raises for an event that is not JSON: not counted)
        self.count += 1
        self.frames.append(frame)
        self.kept += len(frame)
        self.pushed += len(frame)
        replay, most = self.replay, self.replay_bytes
        # The frames that left the last ``replay`` events or the last ``replay_bytes`` bytes (the newest event is
        # always kept): no longer read, their bytes let go now (a few huge events were held 64 more than
        # ``replay`` allowed); their slots go in runs below
        while (replay is not None and self.count - self.first > replay) or (
            most is not None
            and self.kept > most
            and self.count - self.first > 1
            and (self.hold is None or self.first < self.hold)
        ):
            at = self.first - self.dropped
            self.kept -= len(self.frames[at])
            self.frames[at] = b""
            self.first += 1
        gone = self.first - self.dropped
        if gone >= 64 and gone >= (self.count - self.first) // 8:  # (in runs: constant time per event, amortized)
            del self.frames[:gone]
            self.dropped = self.first

    def oldest(self) -> int:
        """The number of events before the oldest one kept for resuming (the last ``replay`` events, and of
        those the last ``replay_bytes`` bytes of frames)."""
        return self.first


#: Events a protocol's new buffer translates before it lets the loop run (EventEndpoint._buffer): about 10 ms
_TRANSLATE_SLICE = 1_000

#: 19 digits in a row: perhaps an integer beyond 64 bits, which orjson reads as a float (rounded)
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _event_of(frame: bytes) -> Any:
    """The AgentEvent a base frame (``id``, ``event``, one ``data`` line: JSON text has no raw line end) holds. An
    integer beyond 64 bits (written in full) is read back as that integer, as the event had it: orjson would read
    it as a float, and a protocol asked for late would send ``1e+30`` where one asked for early sent the digits."""
    data = frame[frame.index(b"\ndata: ") + 7 : -2]
    if _LONG_DIGITS.search(data) is not None:  # (in a string too, maybe: json reads it the same, only slower)
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:  # a lone surrogate escape (json_text), which orjson does not read
        return json.loads(data)


class EventEndpoint:
    """ASGI app: ``events`` as text/event-stream (see the module docstring). (Formerly
    ``agentmsg.web.EventStream``, a name that remains, deprecated: ``agentmsg.clients.ReplyStream`` is a client's
    stream of a reply.)

    ``replay``: events kept for resuming (default 10,000; None keeps every event, for finite sources
    such as files: then any client can start from the beginning at any time). ``replay_bytes``: with a
    ``replay`` bound, the frames of the events kept are at most this many bytes too (default 64 MiB; the
    newest event is always kept; None: no bound in bytes), so that a few huge events
    (tool results of megabytes) cannot hold ``replay`` times their size; each translated protocol's buffer has
    the same bounds. ``keepalive``: seconds of silence before a
    comment line (default 15; math.inf: none). ``retry``: reconnect delay (ms) sent to clients as ``retry:`` (default:
    none, clients use their own). ``end_event``: the SSE event type sent when the source is exhausted
    (None: just close). ``drop_every``: close each connection after that many events (testing).
    ``headers``: extra response headers, a mapping or (name, value) pairs, as strings; one the endpoint sets too
    (``Cache-Control``, ``X-Accel-Buffering``) replaces it, a ``Vary`` adds to its ``accept``, and the stream's framing
    (``Content-Type``, ``Content-Length``, ``Transfer-Encoding``, ``Connection``) is refused. ``protocols``: the UI protocols served
    (names of :mod:`agentmsg.ui` or protocol objects; default every registered one), the first the default of a
    request that asks for none (``?protocol=NAME`` or an ``Accept`` header; see :func:`agentmsg.ui.negotiate`);
    a request for one not served gets 406.

    It answers GET, HEAD and POST alike (another method: 405). AG-UI's ``HttpAgent`` POSTs its RunAgentInput, the AI
    SDK's transport its chat, to the stream they read: a POST's body is read to its end (the client's leaving is
    read after it) and not used, the stream being its source's, the same for every request. A chat endpoint that
    runs a reply from what was posted reads the body first (:func:`agentmsg.ui.agui.read_input`,
    :func:`agentmsg.ui.ai_sdk.read_request`) and makes an endpoint per request (docs/web.md).
    """

    def __init__(
        self,
        events: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
        *,
        replay: int | None = 10_000,
        replay_bytes: int | None = REPLAY_BYTES,
        keepalive: float = 15.0,
        retry: int | None = None,
        end_event: str | None = "end",
        drop_every: int | None = None,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        protocols: Iterable[str | UIProtocol] | None = None,
    ) -> None:
        # Each setting refused is a ValidationError at /<name> (a ValueError, as it was; rule type a TypeError too).
        # (a float was taken, and every stream then failed with a TypeError said as the source's)
        if replay is not None:
            require_count(replay, "replay", 1, "replay must be an int of at least 1 (or None: keep every event)")
        if replay_bytes is not None:
            require_count(replay_bytes, "replay_bytes", 1, "replay_bytes must be an int of at least 1 (or None)")
        if drop_every is not None:
            require_count(drop_every, "drop_every", 1, "drop_every must be an int of at least 1")
        # (0 or less, or NaN, waited for nothing: a connection waiting for an event got keep-alive comments in a
        # loop as fast as it could read them, the CPU spent on them, forever)
        require_seconds(
            keepalive, "keepalive", "keepalive must be a number of seconds above 0 (math.inf: none)", infinite=True
        )
        # (SSE reads a retry field of ASCII digits only: "retry: 1.5" or "retry: -1" was sent and ignored by every
        # client, the setting silently doing nothing; one of more digits than Python writes was taken, and every
        # stream then failed at its first write with a bare ValueError)
        if retry is not None:
            retry = require_count(
                retry, "retry", 0, "retry must be an int of milliseconds, 0 or more (or None: none sent)"
            )
            field_digits(retry, "retry")
        self._source = events
        self._sync: Iterator[Mapping[str, Any]] | None = None
        self._async: AsyncIterator[Mapping[str, Any]] | None = None
        self._replay = replay
        self._replay_bytes = replay_bytes if replay is not None else None  # (replay None keeps every event)
        self._agentscope = AgentScope(_end_event(end_event))
        # The AgentEvents' own frames: what the agentscope protocol sends, and what another protocol's buffer
        # is translated from when it is first asked for (the events before it are read back from these).
        self._base = _Buffer(self._agentscope, replay, translate=False, replay_bytes=self._replay_bytes)
        self._translated: dict[str, _Buffer] = {}
        self._building: dict[str, asyncio.Future[None]] = {}  # a protocol's buffer being made (see _buffer)
        self._done = False
        self._error: str | None = None
        self._pull: asyncio.Task[None] | None = None
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop serving the endpoint (close() from elsewhere)
        self._open = 0  # streams open now
        self._drained: list[asyncio.Future[None]] = []  # aclose()s waiting for the open streams to end
        self.keepalive = keepalive
        self.retry = retry
        self.drop_every = drop_every
        self._offered = self._protocols(protocols)
        self._headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store")]
        self._headers += [(b"x-accel-buffering", b"no")]
        if len(self._offered) > 1:
            self._headers += [(b"vary", b"accept")]
        pairs = headers.items() if isinstance(headers, Mapping) else headers  # ({"X-Run": "r1"}, as httpx takes them)
        self._extra = [_header(i, pair) for i, pair in enumerate(pairs)]
        for i, (name, _) in enumerate(self._extra):
            if name in _FRAMING:
                raise ValidationError.single(
                    f"/headers/{i}",
                    "header",
                    f"{name.decode()} is the event stream's own (its framing): it cannot be set",
                )
        self._by_protocol: dict[str, list[tuple[bytes, bytes]]] = {}
        #: the extra headers allow another origin: a CORS preflight (OPTIONS) is answered (:meth:`_preflight`)
        self._cors = any(name == b"access-control-allow-origin" for name, _ in self._extra)

    def _protocols(self, protocols: Iterable[str | UIProtocol] | None) -> list[UIProtocol]:
        offered: list[UIProtocol] = []
        for i, item in enumerate(ui_protocols.names() if protocols is None else protocols):
            if not isinstance(item, (str, UIProtocol)):
                raise wrong_type(f"/protocols/{i}", "a protocol is a name of agentmsg.ui or a UIProtocol", item)
            protocol = ui_protocols.get(item) if isinstance(item, str) else item
            if protocol.name == self._agentscope.name:
                protocol = self._agentscope  # (with this endpoint's end_event)
            if any(p.name == protocol.name for p in offered):
                raise ValidationError.single(
                    f"/protocols/{i}", "duplicate", f"protocol {protocol.name!r} is given twice"
                )
            offered.append(protocol)
        if not offered:
            raise ValidationError.single("/protocols", "minItems", "protocols must name at least one protocol")
        return offered

    @property
    def protocols(self) -> tuple[str, ...]:
        """The names of the protocols served, the default first."""
        return tuple(p.name for p in self._offered)

    @property
    def end_event(self) -> str | None:
        return self._agentscope.end_event

    @end_event.setter
    def end_event(self, value: str | None) -> None:
        self._agentscope.end_event = _end_event(value)

    @property
    def _frames(self) -> list[bytes]:
        return self._base.frames

    @_frames.setter
    def _frames(self, frames: list[bytes]) -> None:
        self._base.frames = frames

    @property
    def _count(self) -> int:
        return self._base.count

    @property
    def count(self) -> int:
        """Events read from the source so far."""
        return self._base.count

    @property
    def done(self) -> bool:
        """Whether the source is exhausted (or raised), or the endpoint closed."""
        return self._done

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` (or :meth:`aclose`) was called."""
        return self._closed

    # ---- shutting down ---------------------------------------------------------------------------

    def close(self) -> None:
        """End the stream where it is, for a server shutting down: every open connection gets the events read
        so far that it has not yet been sent, then the protocol's end (``end``, AG-UI's ``RUN_FINISHED``, the AI
        SDK's finish and ``[DONE]``: as if the source had ended there), and its response ends; the source is not
        read further (a read in progress is cancelled: an async generator's ``finally`` runs). A request that
        comes after gets HTTP 503 (``text/plain``, one line; ``@agentmsg/client`` retries a 5xx, as it would the
        server going away). Call it before the server waits for its connections to end (uvicorn's graceful
        shutdown; a FastAPI/Starlette lifespan's shutdown runs only after that wait): it returns at once, and may
        be called from any thread; again, it does nothing. :meth:`aclose` waits for the streams to end too."""
        self._closed = True
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or loop is running or loop.is_closed():
            self._close_now()
        else:  # (the endpoint's state is the loop's: changed there)
            loop.call_soon_threadsafe(self._close_now)

    async def aclose(self) -> None:
        """:meth:`close`, then wait until every stream open at that point has sent its end (or its client has
        left). Await it in the event loop that serves the endpoint."""
        running = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not running:
            raise RuntimeError("aclose() must be awaited in the event loop serving the endpoint (close() is not)")
        self.close()
        if self._open:
            drained = running.create_future()
            self._drained.append(drained)
            await drained

    def _close_now(self) -> None:
        """In the endpoint's loop: the end of the source, now, and every connection waiting for it woken."""
        self._finish(None)  # (nothing when the source ended already)
        pull = self._pull
        if pull is not None and not pull.done():
            pull.cancel()  # (the connections waiting on it wake, find the stream done, and end)

    # ---- the source, read once -----------------------------------------------------------------

    def _add(self, event: Mapping[str, Any]) -> None:
        if self._done:  # (an event read as the endpoint closed: after the end, sent to none)
            return
        if isinstance(event, Mapping) and not isinstance(event, dict):
            event = dict(event)  # (a MappingProxyType, a custom Mapping: JSON writes dicts)
        self._base.add(event)
        for buffer in self._translated.values():
            buffer.add(event)

    def _finish(self, error: str | None) -> None:
        if self._done:  # (closed, then the read the close cancelled says so on Python 3.10)
            return
        self._done = True
        self._error = error
        for buffer in self._translated.values():
            buffer.finish(error)

    async def _buffer(self, protocol: UIProtocol) -> _Buffer:
        """The buffer of ``protocol``'s frames, made (and fed every AgentEvent still kept) when first asked for: in
        slices of :data:`_TRANSLATE_SLICE` events, the loop let run between two (the first AG-UI client after
        100,000 events held every other client about a second), the events that come meanwhile translated too; a
        second request for the protocol meanwhile waits for that buffer."""
        if protocol is self._agentscope:
            return self._base
        while True:
            buffer = self._translated.get(protocol.name)
            if buffer is not None:
                return buffer
            building = self._building.get(protocol.name)
            if building is None:
                break
            await asyncio.shield(building)  # (made, or its maker left: then made here)
        done = self._building[protocol.name] = asyncio.get_running_loop().create_future()
        try:
            buffer = _Buffer(protocol, self._replay, translate=True, replay_bytes=self._replay_bytes)
            base = self._base
            at = base.oldest()  # (events before ``at`` are translated, or were dropped from the base)
            while at < base.count:
                if at < base.oldest():  # (dropped meanwhile, a huge event past replay_bytes: begun again from there,
                    # the encoder's state of events gone left behind with them, as a buffer made now would be)
                    buffer = _Buffer(protocol, self._replay, translate=True, replay_bytes=self._replay_bytes)
                    at = base.oldest()
                stop = min(base.count, at + _TRANSLATE_SLICE)
                for frame in base.frames[at - base.dropped : stop - base.dropped]:
                    buffer.add(_event_of(frame))
                at = stop
                if at < base.count:
                    await asyncio.sleep(0)
            # (no await from the last look at base.count: every later event is added to it by _add)
            if self._done:
                buffer.finish(self._error)
            self._translated[protocol.name] = buffer
            return buffer
        finally:
            del self._building[protocol.name]
            done.set_result(None)

    async def _read_more(self) -> None:
        """Read the next event(s) from the source into the buffer (one task at a time)."""
        try:
            if self._sync is None and self._async is None:
                if isinstance(self._source, AsyncIterable):
                    self._async = aiter(self._source)
                else:
                    self._sync = iter(self._source)
            if self._async is not None:
                try:
                    event = await anext(self._async)
                except StopAsyncIteration:
                    self._finish(None)
                else:
                    # The event's frames are held whatever their bytes, as a synchronous batch's are (below): one
                    # event a protocol gives several large frames of (the AI SDK's tool output and its event) pushed
                    # its first out before the client waiting for them read them, which then "fell behind"
                    if self._replay_bytes is not None:
                        for buffer in (self._base, *self._translated.values()):
                            buffer.hold = buffer.count
                    self._add(event)
            else:
                assert self._sync is not None
                # Never more than a buffer holds: the client that asked must still find them. A translated buffer
                # gets one or more frames of each event, so the batch also ends before the frames of one more event
                # (as many as the most one has given in the batch) would push its first frames out of the last
                # ``replay`` events. In bytes, the batch's frames are held while it is read (``_Buffer.hold``: an
                # event larger than those before it is seen only once added), and the batch ends once one more
                # event like its largest would pass ``replay_bytes``: at most about one event over the bound.
                replay, most_bytes = self._replay, self._replay_bytes
                buffers = [self._base, *self._translated.values()] if replay or most_bytes else []
                start = [(b.count, b.pushed) for b in buffers]
                last = list(start)
                most = [(0, 0)] * len(buffers)
                if most_bytes is not None:  # (the byte check below sees an event's bytes only once it is added)
                    for buffer in buffers:
                        buffer.hold = buffer.count
                for _ in range(min(_SYNC_BATCH, replay or _SYNC_BATCH)):
                    try:
                        event = next(self._sync)
                    except StopIteration:
                        self._finish(None)
                        break
                    self._add(event)
                    full = False
                    for i, buffer in enumerate(buffers):
                        count, pushed = buffer.count, buffer.pushed
                        most[i] = (max(most[i][0], count - last[i][0]), max(most[i][1], pushed - last[i][1]))
                        last[i] = (count, pushed)
                        full = (
                            full
                            or (replay is not None and count - start[i][0] + most[i][0] > replay)
                            or (most_bytes is not None and pushed - start[i][1] + most[i][1] > most_bytes)
                        )
                    if full:
                        break
        except Exception as exc:  # the source failed: every client is told, none hangs
            self._finish(f"{type(exc).__name__}: {exc}")
        except asyncio.CancelledError as exc:
            # Raised by the source itself (something it awaited was cancelled: a cancelled LLM call) it is the
            # source's failure, said as any other; it ended the source, whose next read would be a normal end. A
            # cancellation of this task (the event loop shutting down) is not: it goes on. (A synchronous source's
            # next() cannot be cancelled from outside; Python 3.10 has no Task.cancelling() to tell the two apart,
            # so there the stream is failed too, and the cancellation goes on.)
            task = asyncio.current_task()
            cancelling = getattr(task, "cancelling", None)
            if cancelling is not None and cancelling():
                raise
            self._finish(f"CancelledError: {exc}" if str(exc) else "CancelledError: the source was cancelled")
            if cancelling is None and self._async is not None:
                raise
        finally:
            for buffer in (self._base, *self._translated.values()):
                buffer.hold = None

    def _reading(self) -> asyncio.Task[None]:
        if self._pull is None or self._pull.done():
            self._pull = asyncio.ensure_future(self._read_more())
        return self._pull

    # ---- ASGI ------------------------------------------------------------------------------------
    async def _plain(
        self, send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        """A refusal, with the caller's extra headers as the stream has them: a client on another origin reads it
        only with them (CORS), and a 409 is what tells it to start over."""
        await _plain(send, status, text, _merged(headers or [], self._extra))

    async def _preflight(self, scope: Scope, send: Send) -> None:
        """A CORS preflight (``OPTIONS``), answered when the extra headers allow another origin
        (``Access-Control-Allow-Origin``): a GET that resumes (``Last-Event-ID``) or a POST of JSON (AG-UI's
        ``HttpAgent``) is preflighted, and a 405 failed them. It allows the endpoint's methods and the request headers
        the browser asks for (tokens), unless the extra headers say which."""
        own = [(b"access-control-allow-methods", b"GET, HEAD, POST")]
        asked = _list_header(scope, b"access-control-request-headers")
        names = [n.strip() for n in (asked or "").split(",") if n.strip()]
        if names and all(HEADER_NAME.fullmatch(n) for n in names):
            own.append((b"access-control-allow-headers", ", ".join(names).encode("latin-1")))
        own.append((b"access-control-max-age", b"600"))
        await send({"type": "http.response.start", "status": 204, "headers": _merged(own, self._extra)})
        await send({"type": "http.response.body", "body": b""})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] == "websocket":  # refused quietly: the server answers the handshake with 403
            if (await receive())["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 1008, "reason": "EventEndpoint serves HTTP only"})
            return
        if scope["type"] != "http":
            raise RuntimeError(f"EventEndpoint serves HTTP, not {scope['type']!r}")
        try:
            await self._serve(scope, receive, _guarded(send))
        except _Gone:  # the client is gone: nothing more to send it
            return

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """An HTTP request: its response, the stream or a refusal."""
        if scope["method"] == "OPTIONS" and self._cors:
            await self._preflight(scope, send)
            return
        if scope["method"] not in ("GET", "HEAD", "POST"):
            await self._plain(send, 405, "method not allowed: use GET (or POST)\n", [(b"allow", b"GET, HEAD, POST")])
            return
        if self._closed:
            await self._plain(send, 503, "the event stream is closed: the server is shutting down\n")
            return
        self._loop = asyncio.get_running_loop()  # (the latest: an endpoint served again in another loop)
        try:
            protocol = negotiate(self._offered, _query_protocol(scope, self._offered), _list_header(scope, b"accept"))
        except NotAcceptable as exc:
            await self._plain(send, 406, f"{exc}\n")
            return
        except _Refused as exc:
            await self._plain(send, exc.status, f"{exc}\n")
            return
        buffer = await self._buffer(protocol)
        try:
            last_event_id = _last_event_id(scope)
            position = self._resume_position(buffer, last_event_id)
        except _Refused as exc:
            await self._plain(send, exc.status, f"{exc}\n")
            return
        headers = self._by_protocol.get(protocol.name)
        if headers is None:
            own = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in protocol.response_headers]
            headers = self._by_protocol[protocol.name] = _merged(self._headers + own, self._extra)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        if scope["method"] == "HEAD":
            await send({"type": "http.response.body", "body": b""})
            return
        disconnected = asyncio.Event()
        watcher = asyncio.ensure_future(_watch_disconnect(receive, disconnected))
        self._open += 1
        try:
            await self._stream(buffer, position, send, disconnected, resumed=bool(last_event_id))
            await send({"type": "http.response.body", "body": b""})
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            self._open -= 1
            if not self._open:
                drained, self._drained = self._drained, []
                for future in drained:
                    if not future.done():
                        future.set_result(None)

    def _resume_position(self, buffer: _Buffer, last_event_id: str | None) -> int:
        """The number of events the client already has. An id is the decimal position this stream sent it
        with (1, 2, ...: ASCII digits, no sign, no leading zero, no blanks), or the request is refused with
        400 (an id this stream never writes, so a client's or a proxy's mistake, not a gap to start over
        from); an id of that form that the stream cannot serve (past what it has sent, or before the events
        it still holds) gets 409, after which ``@agentmsg/client`` starts over without ``Last-Event-ID``. A
        protocol that does not resume (its frames have no ids) refuses any id with 400."""
        oldest = buffer.oldest()  # events before this one are no longer buffered
        if not last_event_id:
            return oldest  # a new client: from the start (or the oldest event still buffered)
        if not buffer.protocol.resumable:
            raise _Refused(
                400,
                f"the {buffer.protocol.name} protocol does not resume (its events have no ids): reconnect without "
                "Last-Event-ID to start over",
            )
        if _POSITION.fullmatch(last_event_id) is None:
            raise _Refused(
                400,
                f"Last-Event-ID {_shown(last_event_id)} is not an event id of this stream: the ids are 1, 2, ... "
                "(ASCII digits, no sign, no leading zero, no blanks); reconnect without Last-Event-ID to start over",
            )
        # More digits than any count has: past the end (int() of over 4,300 digits would raise ValueError).
        digits = last_event_id
        count = buffer.count
        position = int(digits) if len(digits) <= len(str(count)) else count + 1
        if position > count:
            shown = digits if len(digits) <= 40 else f"{digits[:20]}... ({len(digits)} digits)"
            raise _Refused(409, f"cannot resume after event {shown}: this stream has sent {count} events")
        if position < oldest:
            raise _Refused(
                409, f"cannot resume after event {position}: only events after {oldest} are still in the replay buffer"
            )
        return position

    async def _stream(
        self, buffer: _Buffer, position: int, send: Send, disconnected: asyncio.Event, *, resumed: bool = False
    ) -> None:
        if self.retry is not None:
            await _body(send, f"retry: {self.retry}\n\n".encode())
        sent = 0
        while not disconnected.is_set():
            if position < buffer.count:
                if position < buffer.oldest():
                    # This client fell behind the replay buffer (it read slowly while others read on, or one event
                    # gave more frames than it holds). One that holds an id of the stream reconnects with it and
                    # is told (409); any other would take the cut stream for a whole one: it gets the protocol's
                    # error and end.
                    if not (buffer.protocol.resumable and (resumed or sent > 0)):
                        await _body(send, self._fell_behind(buffer, position))
                    return
                frames: list[bytes] = []
                size = 0
                while position < buffer.count and size < _SEND_BYTES:
                    frame = buffer.frames[position - buffer.dropped]
                    if frames and len(frame) > _SEND_BYTES:  # (sent alone, next: joined, each client held a copy)
                        break
                    frames.append(frame)
                    size += len(frame)
                    position += 1
                    sent += 1
                    if self.drop_every is not None and sent % self.drop_every == 0:
                        await _body(send, b"".join(frames))
                        return  # close here; the client resumes after `position`
                await _body(send, b"".join(frames))  # (one frame: the frame itself, not a copy)
                continue
            if self._done:
                trailer = buffer.protocol.trailer(self._error)
                if trailer:
                    await _body(send, trailer)
                return
            reading = self._reading()  # shared by every connection waiting for the next event
            gone = asyncio.ensure_future(disconnected.wait())
            try:
                await asyncio.wait({reading, gone}, timeout=self.keepalive, return_when=asyncio.FIRST_COMPLETED)
            finally:
                gone.cancel()
            if not disconnected.is_set() and not reading.done():
                await _body(send, b": keep-alive\n\n")
        # disconnected: nothing more to send

    def _fell_behind(self, buffer: _Buffer, position: int) -> bytes:
        """The end of a connection that fell behind ``buffer`` at ``position``: the protocol's error event (the last
        of what its encoder's ``fail`` gives: ``RUN_ERROR``, the AI SDK's ``error`` chunk), with no ``id`` (it is no
        event of the stream), then its trailer."""
        first, last = position + 1, buffer.oldest()
        gone = f"events {first} to {last} are" if last > first else f"event {first} is"
        bound = f"replay {self._replay}" + (f", replay_bytes {self._replay_bytes}" if self._replay_bytes else "")
        message = f"this connection fell behind the stream: its {gone} no longer kept ({bound})"
        out = b""
        for event in buffer.protocol.encoder().fail(message)[-1:]:
            frame = buffer.protocol.frame(event, position + 1)
            if frame.startswith(b"id:"):
                frame = frame[frame.index(b"\n") + 1 :]
            out += frame
        return out + buffer.protocol.trailer(message)


#: a header value (RFC 9110 5.5: visible characters, spaces and tabs, obs-text); a name is a token (HEADER_NAME)
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


#: the headers that frame the event stream: the endpoint's alone (a second content type, or a length, broke it)
_FRAMING = frozenset({b"content-type", b"content-length", b"transfer-encoding", b"connection"})


def _merged(headers: list[tuple[bytes, bytes]], extra: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The endpoint's (and its protocol's) headers with the caller's extra ones: an extra header replaces one of
    the same name (it was sent twice: ``Cache-Control: no-store`` and the caller's), ``Vary`` adds to the
    endpoint's ``accept``, and repeating a name among the extra ones sends each value, as given."""
    mine = {name for name, _ in extra}
    out = [(k, v) for k, v in headers if k not in mine or k == b"vary"]
    vary = next((i for i, (k, _) in enumerate(out) if k == b"vary"), None)
    for name, value in extra:
        if name == b"vary" and vary is not None:
            out[vary] = (b"vary", out[vary][1] + b", " + value)
        else:
            out.append((name, value))
    return out


def _header(index: int, pair: object) -> tuple[bytes, bytes]:
    """The ``index``-th extra response header checked when given: a name that is no token or a value holding a line
    break or a control character was refused by the server on every request (a traceback, the connection closed
    with no response), or, with a server that does not check, split into headers of the caller's making. A
    ValidationError at ``/headers/<index>`` (a ValueError, as it was), rule ``header`` (``type``: no pair)."""
    at = f"/headers/{index}"
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise wrong_type(at, "a header is a (name, value) pair of strings", pair)
    name, value = pair
    if not isinstance(name, str) or HEADER_NAME.fullmatch(name) is None:
        raise ValidationError.single(
            at, "header", f"{name!r:.80} is not a header name (letters, digits and !#$%&'*+-.^_`|~)"
        )
    if not isinstance(value, str) or _FIELD_VALUE.fullmatch(value) is None:
        raise ValidationError.single(
            at, "header", f"the value of {name} must be Latin-1 text without line breaks or controls"
        )
    return name.lower().encode("latin-1"), value.encode("latin-1")


def _end_event(value: str | None) -> str | None:
    """``end_event`` checked: an SSE event type cannot hold a line break, and one given was refused only when the
    end was written, after the whole stream (each connection then failed there with a traceback, its client
    reconnected after the last event and failed again, without end)."""
    said = "end_event must be a string without a line break (or None: no end event)"
    if value is not None and not isinstance(value, str):
        raise wrong_type("/end_event", said, value)
    if value is not None and ("\r" in value or "\n" in value):
        raise ValidationError.single("/end_event", "pattern", f"{said}, not {value!r:.80}")
    return value


def _query_protocol(scope: Scope, offered: list[UIProtocol]) -> str | None:
    """The ``protocol`` of the query string, if any (given twice with different values: refused, 400). One given
    empty (``?protocol=``, ``?protocol``) is refused too, 400, naming the protocols ``offered``: it was served the
    default (parse_qs drops a blank value), a protocol the client never asked for."""
    raw = scope.get("query_string") or b""
    if b"protocol" not in raw and b"%" not in raw:  # (a key may be percent-encoded: %70rotocol)
        return None
    query = urllib.parse.parse_qs(bytes(raw).decode("latin-1"), keep_blank_values=True)
    values = set(query.get("protocol", ()))
    if len(values) > 1:
        raise _Refused(400, "the query names more than one protocol: ask for one")
    if values == {""}:
        names = ", ".join(p.name for p in offered)
        raise _Refused(400, f"the query's protocol is empty: name one of {names} (or leave it out: {offered[0].name})")
    return values.pop() if values else None


class _Gone(Exception):
    """The client is gone: the server's ``send()`` raised an OSError, as the ASGI spec lets a server do on a closed
    connection (hypercorn, daphne; uvicorn sends ``http.disconnect`` instead)."""


def _guarded(send: Send) -> Send:
    """``send``, its OSError (the client gone) raised as :class:`_Gone`: an OSError from anything else is no
    client gone."""

    async def guarded(message: Message) -> None:
        try:
            await send(message)
        except OSError as exc:
            raise _Gone from exc

    return guarded


async def _body(send: Send, data: bytes) -> None:
    """``data`` sent in pieces of at most :data:`_SEND_BYTES`: a server waits for the socket to drain before each
    (uvicorn), so a client that reads nothing holds one piece beyond what the socket holds, not a whole event (a
    20 MB tool result took 15 MB a connection until the write timeout)."""
    if len(data) <= _SEND_BYTES:
        await send({"type": "http.response.body", "body": data, "more_body": True})
        return
    for start in range(0, len(data), _SEND_BYTES):
        await send({"type": "http.response.body", "body": data[start : start + _SEND_BYTES], "more_body": True})


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": body})


def _list_header(scope: Scope, name: bytes) -> str | None:
    """The value of list header ``name``, its lines joined with ", " as RFC 9110 reads them (None: none)."""
    values = [bytes(value).decode("latin-1") for key, value in scope.get("headers") or () if key.lower() == name]
    return ", ".join(values) if values else None


def _last_event_id(scope: Scope) -> str | None:
    """The ``Last-Event-ID`` the client sent (None: none). It is one id, not a list: two header lines that differ
    (a proxy adding its own, a client's mistake) leave unknown which events the client holds, and resuming from
    either may repeat or lose events, so they are refused with 400 (RFC 9110 5.3: a recipient may treat a field
    that is no list, sent twice, as an error); the same id twice says one thing and is read as one line."""
    values = {bytes(v) for k, v in scope.get("headers") or () if k.lower() == b"last-event-id"}
    if len(values) > 1:
        raise _Refused(400, f"{len(values)} Last-Event-ID header lines with different ids: send one")
    return values.pop().decode("latin-1") if values else None


async def _watch_disconnect(receive: Receive, disconnected: asyncio.Event) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            disconnected.set()
            return


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
