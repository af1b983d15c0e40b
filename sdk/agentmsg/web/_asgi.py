"""An ASGI endpoint that serves agent events as ``text/event-stream``, with resume.

:class:`EventEndpoint` is a plain ASGI application (no framework needed): mount it in Starlette or
FastAPI, or run it with any ASGI server. It reads its source (any iterable or async iterable of
AgentEvents, as dicts) once, on demand, and shares it between connections:

* each event is sent as one SSE event: ``id`` = its position in the stream (1, 2, ...), ``event`` = its
  type, ``data`` = its JSON (the events are sent as they are; clients reduce them);
* the last ``replay`` events are kept, so a client that reconnects with ``Last-Event-ID: N`` gets
  exactly the events after the N-th, then the live ones (nothing lost, nothing repeated). A resume
  from an event no longer in the buffer (or never sent) is refused with HTTP 409 rather than served
  with a gap; an id that is no position as written here (``0``, ``007``, ``-1``, blanks, non-ASCII
  digits) with HTTP 400;
* a comment line is sent after ``keepalive`` seconds without an event, so proxies keep the connection;
* when the source is exhausted each connection gets an ``end`` event (``data: {}``) and is closed;
  if the source raises, an ``error`` event (``data: {"message": ...}``) instead.
  ``@agentmsg/client`` (``streamSSE``) ends at ``end``, fails at ``error`` and reconnects otherwise.

The source advances only while some client reads (backpressure): a slow or absent client pauses an
async generator instead of filling memory. A synchronous iterable is read in the event loop, so it
must not block (a list, a file, a generator over data in memory); wrap blocking producers in an async
generator. ``drop_every`` (for testing resume) closes each connection after that many events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from agentmsg._wire.sse import encode_event

__all__ = ["EventEndpoint"]

Scope = Mapping[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_SYNC_BATCH = 256  # events pulled at once from a synchronous source
_SEND_BYTES = 1 << 16  # frames coalesced into one send while catching up


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


class EventEndpoint:
    """ASGI app: ``events`` as text/event-stream (see the module docstring). (Formerly
    ``agentmsg.web.EventStream``, a name that remains, deprecated: ``agentmsg.clients.ReplyStream`` is a client's
    stream of a reply.)

    ``replay``: events kept for resuming (default 10,000; None keeps every event, for finite sources
    such as files: then any client can start from the beginning at any time). ``keepalive``: seconds of silence before a
    comment line (default 15). ``retry``: reconnect delay (ms) sent to clients as ``retry:`` (default:
    none, clients use their own). ``end_event``: the SSE event type sent when the source is exhausted
    (None: just close). ``drop_every``: close each connection after that many events (testing).
    ``headers``: extra response headers (name, value) as strings.
    """

    def __init__(
        self,
        events: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
        *,
        replay: int | None = 10_000,
        keepalive: float = 15.0,
        retry: int | None = None,
        end_event: str | None = "end",
        drop_every: int | None = None,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        if replay is not None and replay < 1:
            raise ValueError("replay must be at least 1 (or None: keep every event)")
        if drop_every is not None and drop_every < 1:
            raise ValueError("drop_every must be at least 1")
        self._source = events
        self._sync: Iterator[Mapping[str, Any]] | None = None
        self._async: AsyncIterator[Mapping[str, Any]] | None = None
        # The frames of the events after the first `_dropped`: a list, read by index (a deque's index is
        # linear in its distance from an end: a client reading the whole of an unbounded buffer from its start,
        # a reloaded page, took time quadratic in the stream). Events before `_oldest()` are dropped in runs.
        self._replay = replay
        self._frames: list[bytes] = []
        self._dropped = 0
        self._count = 0  # events read from the source so far
        self._done = False
        self._error: str | None = None
        self._pull: asyncio.Task[None] | None = None
        self.keepalive = keepalive
        self.retry = retry
        self.end_event = end_event
        self.drop_every = drop_every
        self._headers = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store")]
        self._headers += [(b"x-accel-buffering", b"no")]
        self._headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]

    @property
    def count(self) -> int:
        """Events read from the source so far."""
        return self._count

    @property
    def done(self) -> bool:
        """Whether the source is exhausted (or raised)."""
        return self._done

    # ---- the source, read once -----------------------------------------------------------------

    def _frame(self, event: Mapping[str, Any]) -> bytes:
        kind = event.get("type") if isinstance(event, Mapping) else None
        if not isinstance(kind, str) or kind in (self.end_event, "error") or not kind.isprintable():
            kind = None  # never mistaken for the stream's own end/error events
        try:
            data = orjson.dumps(event).decode()
        except orjson.JSONEncodeError:
            # A string holding a lone UTF-16 surrogate (events given as Python objects: half of a character
            # split across two deltas) has no UTF-8 form, but JSON text carries it as a \u escape, as the
            # browser's JSON.parse reads it; the reducers join the pair. Anything else still fails here.
            try:
                data = json.dumps(event, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
            except (TypeError, ValueError):
                raise orjson.JSONEncodeError(f"event {self._count} is not JSON") from None
        return encode_event(data, id=str(self._count), event=kind).encode()

    def _add(self, event: Mapping[str, Any]) -> None:
        self._count += 1
        self._frames.append(self._frame(event))
        if self._replay is not None and len(self._frames) >= self._replay + max(64, self._replay // 8):
            cut = len(self._frames) - self._replay  # (in runs: constant time per event, amortized)
            del self._frames[:cut]
            self._dropped += cut

    def _oldest(self) -> int:
        """The number of events before the oldest one kept for resuming (the last ``replay`` events)."""
        return self._count - min(self._count, self._replay) if self._replay is not None else 0

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
                    self._done = True
                else:
                    self._add(event)
            else:
                assert self._sync is not None
                # Never more than the buffer holds: the client that asked must still find them.
                for _ in range(min(_SYNC_BATCH, self._replay or _SYNC_BATCH)):
                    try:
                        event = next(self._sync)
                    except StopIteration:
                        self._done = True
                        break
                    self._add(event)
        except Exception as exc:  # the source failed: every client is told, none hangs
            self._done = True
            self._error = f"{type(exc).__name__}: {exc}"

    def _reading(self) -> asyncio.Task[None]:
        if self._pull is None or self._pull.done():
            self._pull = asyncio.ensure_future(self._read_more())
        return self._pull

    # ---- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise RuntimeError(f"EventEndpoint serves HTTP, not {scope['type']!r}")
        if scope["method"] not in ("GET", "HEAD", "POST"):
            await _plain(send, 405, "method not allowed: use GET (or POST)\n", [(b"allow", b"GET, HEAD, POST")])
            return
        try:
            position = self._resume_position(_header(scope, b"last-event-id"))
        except _Refused as exc:
            await _plain(send, exc.status, f"{exc}\n")
            return
        await send({"type": "http.response.start", "status": 200, "headers": self._headers})
        if scope["method"] == "HEAD":
            await send({"type": "http.response.body", "body": b""})
            return
        disconnected = asyncio.Event()
        watcher = asyncio.ensure_future(_watch_disconnect(receive, disconnected))
        try:
            await self._stream(position, send, disconnected)
            await send({"type": "http.response.body", "body": b""})
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    def _resume_position(self, last_event_id: str | None) -> int:
        """The number of events the client already has. An id is the decimal position this stream sent it
        with (1, 2, ...: ASCII digits, no sign, no leading zero, no blanks), or the request is refused with
        400 (an id this stream never writes, so a client's or a proxy's mistake, not a gap to start over
        from); an id of that form that the stream cannot serve (past what it has sent, or before the events
        it still holds) gets 409, after which ``@agentmsg/client`` starts over without ``Last-Event-ID``."""
        oldest = self._oldest()  # events before this one are no longer buffered
        if not last_event_id:
            return oldest  # a new client: from the start (or the oldest event still buffered)
        if _POSITION.fullmatch(last_event_id) is None:
            raise _Refused(
                400,
                f"Last-Event-ID {_shown(last_event_id)} is not an event id of this stream: the ids are 1, 2, ... "
                "(ASCII digits, no sign, no leading zero, no blanks); reconnect without Last-Event-ID to start over",
            )
        # More digits than any count has: past the end (int() of over 4,300 digits would raise ValueError).
        digits = last_event_id
        position = int(digits) if len(digits) <= len(str(self._count)) else self._count + 1
        if position > self._count:
            shown = digits if len(digits) <= 40 else f"{digits[:20]}... ({len(digits)} digits)"
            raise _Refused(409, f"cannot resume after event {shown}: this stream has sent {self._count} events")
        if position < oldest:
            raise _Refused(
                409, f"cannot resume after event {position}: only events after {oldest} are still in the replay buffer"
            )
        return position

    async def _stream(self, position: int, send: Send, disconnected: asyncio.Event) -> None:
        if self.retry is not None:
            await _body(send, f"retry: {self.retry}\n\n".encode())
        sent = 0
        while not disconnected.is_set():
            if position < self._count:
                if position < self._oldest():
                    return  # this client fell behind the replay buffer: it reconnects and is told (409)
                frames: list[bytes] = []
                size = 0
                while position < self._count and size < _SEND_BYTES:
                    frame = self._frames[position - self._dropped]
                    frames.append(frame)
                    size += len(frame)
                    position += 1
                    sent += 1
                    if self.drop_every is not None and sent % self.drop_every == 0:
                        await _body(send, b"".join(frames))
                        return  # close here; the client resumes after `position`
                await _body(send, b"".join(frames))
                continue
            if self._done:
                if self._error is not None:
                    await _body(
                        send, encode_event(orjson.dumps({"message": self._error}).decode(), event="error").encode()
                    )
                elif self.end_event is not None:
                    await _body(send, encode_event("{}", event=self.end_event).encode())
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


async def _body(send: Send, data: bytes) -> None:
    await send({"type": "http.response.body", "body": data, "more_body": True})


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


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


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
