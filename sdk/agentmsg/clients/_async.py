"""The async client and its stream: the IO (httpx.AsyncClient) around the shared state and decisions.

Cancellation. httpcore cleans up a cancelled request or read (closes the connection, gives its pool slot back)
under anyio's shield, which asyncio's own ``Task.cancel()`` goes through: a task cancelled twice while httpcore
waited (a TaskGroup's cancel and a timeout's, a user's twice) had that cleanup cut halfway, and the connection
stayed taken until the client was closed (the pool's last one taken: every later request waited out the pool
timeout). So every await that reaches into httpcore runs in a task the caller's cancellations reach once, and
the caller waits for it to finish before its cancellation goes on:

* sending a request and reading a whole body: one task each (:func:`_once`);
* a stream's body: one reading task per stream (:class:`_Body`), which reads ahead of the caller (at most
  :data:`READ_AHEAD` bytes) while the caller takes the chunks it has read, and closes the response itself once
  it has read the body whole. When the caller leaves or is cancelled before that, or the read failed, that
  task is cancelled once (never while it closes the response) and the response closed, in a task of their
  own that the caller waits for (:func:`_release`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from agentmsg import Msg, limits
from agentmsg.clients._config import DEFAULT_TIMEOUT, BaseClient, HeadersGiven, own_http
from agentmsg.clients._count import counting_request, read_count
from agentmsg.clients._errors import (
    ERROR_BODY_MAX,
    APIConnectionError,
    ProviderError,
    body_broke,
    client_closed,
    reason,
    too_big,
    unsendable,
)
from agentmsg.clients._stream import EVENT_ROOM, StreamState, abody_chunks, araw_chunks, past_limit, with_request
from agentmsg.clients._whole import cut_stream, read_whole
from agentmsg.context import ProviderCount
from agentmsg.providers import FormatOptions, FormattedRequest
from agentmsg.providers._request.context import as_options

__all__ = ["READ_AHEAD", "AsyncClient", "AsyncReplyStream"]

#: Bytes a stream's reading task reads ahead of the caller, at most (then it waits for the caller to take them)
READ_AHEAD = 1 << 16

_T = TypeVar("_T")

#: The streams' reading tasks, held until they end (the event loop holds its tasks only weakly)
_READING: set[asyncio.Task[None]] = set()


class _Body:
    """A stream's response body, read in a task of its own into ``chunks``, which the caller takes in order as they
    come (a ``for`` over the list: what the reading task appends meanwhile comes in the same loop, with no take or
    count a chunk), and clears once it has taken every one, then waits (:meth:`waiter`) for more; ``ended`` once
    the body is read whole or its read failed (``error``). The reading task holds at most :data:`READ_AHEAD` bytes
    and a chunk in ``chunks``, taken or not (it then waits for the caller to clear them). The task holds no
    reference to the stream, which is collected as usual when left unfinished.

    The stream takes it (``owned``) as its first step once it holds it, before any await: the task, which runs only
    once the stream awaits, reads nothing of a body its stream never took (a Ctrl-C handled as the task was made,
    or as the body was handed to the stream, left the task running unseen, reading the response while the stream
    closed it: the task is cancelled before it closes the response, never beside it, as the module says)."""

    __slots__ = ("__weakref__", "_loop", "_room", "_waiter", "chunks", "ended", "error", "net", "owned", "task")

    def __init__(self, response: httpx.Response, encoded: bool) -> None:
        self.net: Any = response.extensions.get("network_stream")  # what the client's aclose() closes under a read
        self.chunks: list[bytes] = []
        self.ended = False
        self.error: Exception | None = None
        self.owned = False  # the stream holds it (set by the stream: see the class docstring)
        self._waiter: asyncio.Future[None] | None = None  # the caller, waiting for a chunk
        self._room: asyncio.Future[None] | None = None  # the reading task, waiting for the caller to clear the chunks
        self._loop = asyncio.get_running_loop()
        self.task = self._loop.create_task(self._read(response, encoded))
        _READING.add(self.task)
        self.task.add_done_callback(_READING.discard)

    async def _read(self, response: httpx.Response, encoded: bool) -> None:
        if not self.owned:  # (no stream took it: the one that made it closes the response)
            return
        try:
            try:
                chunks, held = self.chunks, 0  # held: bytes in chunks, at most (counted anew at READ_AHEAD)
                append = chunks.append
                async for chunk in araw_chunks(response, encoded):  # content-decoded (a gzipped stream)
                    append(chunk)
                    if self._waiter is not None:
                        self._wake()
                    held += len(chunk)
                    if held >= READ_AHEAD:
                        held = sum(map(len, chunks))  # (the caller may have cleared them since)
                        while held >= READ_AHEAD:  # (until the caller has taken every chunk and cleared them)
                            room = self._room = self._loop.create_future()
                            await room
                            held = sum(map(len, chunks))
            except Exception as exc:  # (httpx's errors, a read timeout: the caller raises it after the chunks before)
                with_request(exc, response)
                self.error = exc
                return
            # Read whole: the response is closed here (its connection back in the pool), and the caller's
            # :func:`_release` has nothing left to do (no task of its own). From here the task is not cancelled
            # (``response.is_closed`` tells :func:`_close`); an error closing it is raised by :func:`_release`.
            await response.aclose()
        finally:
            self.ended = True
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def waiter(self) -> asyncio.Future[None]:
        """What the caller, which has taken every chunk, cleared them and saw the body not ended, awaits: done once a
        chunk is read or the body has ended (the future itself: no coroutine made and stepped for it at each wait).
        The reading task, waiting for room, reads on."""
        waiter = self._waiter = self._loop.create_future()
        if self._room is not None:
            self._read_on()
        return waiter

    def _read_on(self) -> None:
        room = self._room
        self._room = None
        if room is not None and not room.done():
            room.set_result(None)


async def _once(step: Coroutine[Any, Any, _T], lost: Callable[[_T], Coroutine[Any, Any, None]] | None = None) -> _T:
    """``await step`` (httpx sending a request, reading a whole body) in a task of its own, which the caller's
    cancellation reaches once however many times the caller is cancelled, and which ends before the
    cancellation goes on (see the module docstring). ``lost``: what to do with a result that came as the caller
    was cancelled (a response: close it)."""
    inner = asyncio.ensure_future(step)
    try:
        return await asyncio.shield(inner)
    except asyncio.CancelledError:
        inner.cancel()
        while not inner.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((inner,))
        if not inner.cancelled() and inner.exception() is None and lost is not None:
            await lost(inner.result())
        raise


async def _release(response: httpx.Response, reading: asyncio.Task[None] | None = None) -> None:
    """Close a response (its connection closed or back in the pool), after its ``reading`` task is cancelled once
    and has ended, in a task of its own, which ends even when the caller is cancelled again while it runs (a
    second ``Task.cancel()``: a TaskGroup's and a timeout's, a user's twice; see the module docstring). The
    caller's cancellation is raised once the response is closed. Nothing is left to do (no task made) when the
    response is closed and its reading task has ended: a stream's body read whole (:meth:`_Body._read`)."""
    if response.is_closed and (reading is None or reading.done()):
        if reading is not None and not reading.cancelled():
            reading.result()  # (an error closing the response)
        return
    closing = asyncio.ensure_future(_close(response, reading))
    cancelled: asyncio.CancelledError | None = None
    while not closing.done():
        try:
            await asyncio.wait((closing,))
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    closing.result()


async def _close(response: httpx.Response, reading: asyncio.Task[None] | None) -> None:
    if reading is not None:
        if not reading.done():
            if not response.is_closed:  # (else the task, having read the body whole, is closing it: not cut)
                reading.cancel()
            await asyncio.wait((reading,))
        if not reading.cancelled():
            reading.result()  # (an error closing the response)
    await response.aclose()


async def _collect(response: httpx.Response, cap: int, into: bytearray | None) -> bytes:
    body = bytearray() if into is None else into
    async for chunk in abody_chunks(response):
        body += chunk
        if past_limit(response, len(body), cap):
            break
    return bytes(body)


async def read_body(response: httpx.Response, cap: int, into: bytearray | None = None) -> bytes:
    """The body (content-decoded), read no further than ``cap`` bytes and one chunk, decoded or received: longer
    is :func:`~agentmsg.clients._stream.past_limit`. ``into``: where the bytes go as they come (what arrived stays
    there when the read fails)."""
    return await _once(_collect(response, cap, into))


def _reads_media(options: Any) -> bool:
    """Whether formatting with ``options`` (a FormatOptions, a mapping of its fields, None) may read local files or
    download (its media policy allows either); options that are neither are the formatter's to refuse."""
    if isinstance(options, Mapping):
        if options.get("media") is None:
            return False
        options = as_options(options)
    media = options.media if isinstance(options, FormatOptions) else None
    return media is not None and (bool(media.allowed_roots) or media.allow_download)


class AsyncReplyStream(StreamState):
    """The async :class:`ReplyStream`: ``async for event in stream``; cancelling the task (or leaving
    the loop) marks the message INTERRUPTED and keeps what arrived. ``aclose()`` from another task while
    the loop waits for the network stops it there: the loop ends (no error), the message INTERRUPTED. A reply
    longer than ``limits.max_bytes`` ends as :class:`ReplyStream`'s: :class:`ReplyTooLargeError`.
    (Formerly ``AsyncEventStream``, a name that remains, deprecated.)"""

    def __init__(
        self,
        client: AsyncClient,
        request: FormattedRequest | None,
        raise_on_error: bool = True,
        *,
        formatting: Callable[[], FormattedRequest] | None = None,
    ) -> None:
        super().__init__(client, request, raise_on_error)
        self._client = client
        #: what formats the request in a worker thread as the stream starts (``request`` None); see AsyncClient.stream
        self._formatting = formatting
        self._gen: AsyncGenerator[dict[str, Any], None] | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task waiting inside the stream for the network
        self._stopping = False  # aclose() from another task cancelled the reader
        self._ended: asyncio.Event | None = None  # set when the stream ends, for that aclose()
        self._thread: int | None = None  # the thread of the loop's event loop, once it runs (see _peek)

    def __aiter__(self) -> AsyncGenerator[dict[str, Any], None]:
        if self._gen is None:
            self._gen = self._run()
        return self._gen

    async def __aenter__(self) -> AsyncReplyStream:
        if self._formatting is not None:
            try:
                await self._format()
            except BaseException:  # not formatted (refused, cancelled): the stream ends, nothing sent
                if self._gen is None:
                    self._gen, self._done = _nothing(), True
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _format(self) -> None:
        """The request formatted in a worker thread, once (see AsyncClient.stream)."""
        formatting, self._formatting = self._formatting, None
        if formatting is not None:
            self._request = await asyncio.to_thread(formatting)

    async def aclose(self) -> None:
        """Cancel (or finish) the call; the message is final afterwards. Called from another task while the
        stream's loop waits for the network (the headers, the next bytes, a retry's wait), it stops the loop
        there (an async generator cannot be closed while it runs: that raised RuntimeError and the stream went
        on): the loop ends without error, the message INTERRUPTED with what arrived."""
        if self._gen is None:
            self._gen = _nothing()  # never started: nothing was sent
            self._done = True
            return
        reader = self._reader
        if reader is not None and reader is not asyncio.current_task() and not reader.done():
            self._stopping = True
            self._ended = self._ended or asyncio.Event()
            reader.cancel()
            await self._ended.wait()
            return
        while (
            getattr(self._gen, "ag_running", False) and self._reader is None
        ):  # another task's loop closes its response (cancelled)
            await asyncio.sleep(0)
        if self._reader is not None:  # (it went on to the network meanwhile)
            await self.aclose()
            return
        await self._gen.aclose()

    async def until_done(self) -> Msg:
        """Read the stream to its end: the final message."""
        async for _ in self:
            pass
        if self._message is None:  # closed before it started, or from another task before any reply
            raise APIConnectionError("the stream was closed before any reply came", provider=self.client.provider)
        return self._message

    def _peek(self) -> None:
        """``message`` read while events are yielded: the reducer takes those yielded so far, in the event loop's
        thread, where the loop cannot run meanwhile (read from another thread, the snapshot is what it took)."""
        gen = self._gen
        if threading.get_ident() == self._thread and not getattr(gen, "ag_running", False):
            self._catch_up(False)

    def _stopped(self, exc: BaseException) -> bool:
        """Whether a cancellation is the one :meth:`aclose` made from another task, and no other (the loop then
        ends quietly; another cancellation goes on). Python 3.10 cannot tell them apart (no ``Task.uncancel``):
        the cancellation goes on there, never swallowed."""
        if not (self._stopping and isinstance(exc, asyncio.CancelledError)):
            return False
        uncancel = getattr(asyncio.current_task(), "uncancel", None)  # (Python 3.11+)
        return uncancel is not None and uncancel() == 0

    async def _run(self) -> AsyncGenerator[dict[str, Any], None]:
        self._thread = threading.get_ident()
        try:
            self._reader = asyncio.current_task()
            try:
                if self._formatting is not None:  # (read without async with: formatted at its first event)
                    await self._format()
                started = time.monotonic()  # (the call's time counts from the request sent, not a format's downloads)
                response = await self._client._send(self.request)
            except BaseException as exc:  # refused, failed or cancelled before any reply: ended, no message
                self._done = True
                if self._stopped(exc):
                    return
                raise
            finally:
                self._reader = None
            # No await comes between the response and the ``try`` that reads its body (a cancellation is not
            # delivered here), but a Ctrl-C handled as a call here begins or returns may be: it closes the response.
            try:
                self._responded(response)
                parser = self._parser = self.client.parser(self.request, started)
                encoded = self._encoded  # (else the bytes received are the bytes read)
                feed, fold = parser.feed, self.reducer._trusted_feed()
                cap, size, over, grown = limits.max_bytes, 0, False, False
                room = cap  # bytes the message may grow by before it is measured
                closing: list[dict[str, Any]] = []
                body = _Body(response, encoded)  # (last: its reading task is the response's from here)
            except BaseException:
                self._done = True
                await _release(response)
                raise
            try:
                try:
                    body.owned = True  # (before any call or await: see _Body)
                    self._client._bodies.add(body)
                    chunks = body.chunks
                    while not over:
                        for chunk in chunks:  # (those the reading task appends meanwhile come in this loop)
                            size += len(chunk)
                            if size > cap or (encoded and response.num_bytes_downloaded > cap):
                                over = True  # the bytes up to the limit are read, no further
                                chunk = chunk[: len(chunk) - max(0, size - cap)]
                            events = feed(chunk)
                            if self._heading:
                                self._head_of(chunk)
                            if events:
                                self._parsed = True
                                # The parser's events, valid by construction, yielded, then to the reducer (those
                                # yielded so far taken by ``message`` when it is read meanwhile: _catch_up)
                                lagging = self._lagging(events, fold)
                                for e in lagging:
                                    yield e
                                # (at most what the message grew by: the read's bytes and EVENT_ROOM an event)
                                room = self._read_taken(events, fold, len(chunk) + EVENT_ROOM * len(events), room, cap)
                                if room < 0:
                                    over = grown = True  # the message built is past the limit: read no further
                            if over:
                                break
                        else:  # every chunk read taken: cleared (the reading task reads on), and more waited for
                            chunks.clear()
                            if body.ended:
                                if body.error is not None:
                                    raise body.error
                                break
                            self._reader = asyncio.current_task()
                            try:
                                await body.waiter()
                            finally:
                                self._reader = None
                    closing = self._too_large(parser, cap, grown) if over else parser.close()
                except httpx.HTTPError as exc:
                    closing = self._read_failed(parser, exc)
            except (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt) as exc:
                self._cancelled(parser)
                if self._stopped(exc):
                    return
                raise
            finally:
                self._client._bodies.discard(body)
                await _release(response, body.task)
            lagging = self._closing_events(closing)
            try:
                for e in lagging:
                    yield e
            except (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt):  # left during the closing events
                self._end(parser)
                raise
            self._closed(parser)
        except ProviderError as exc:  # (the client's credentials, echoed by a server, redacted)
            self.client._scrub(exc)
            raise
        finally:
            if self._ended is not None:  # (aclose() from another task waits for it)
                self._ended.set()


async def _nothing() -> AsyncGenerator[dict[str, Any], None]:
    return
    yield  # (an async generator that yields nothing)


class AsyncClient(BaseClient):
    """The async :class:`Client` (``httpx.AsyncClient``): ``stream()`` gives an
    :class:`AsyncReplyStream`, ``await call()`` the message."""

    http: httpx.AsyncClient

    def __init__(
        self,
        provider: str | None = None,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_retry_after: float = 60.0,
        name: str | None = None,
        headers: HeadersGiven | None = None,
        format_options: FormatOptions | Mapping[str, Any] | None = None,
        think_tags: bool | str = False,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            provider,
            model=model,
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_retry_after=max_retry_after,
            name=name,
            headers=headers,
            format_options=format_options,
            think_tags=think_tags,
        )
        self._own = http_client is None
        self.http = http_client or own_http(httpx.AsyncClient, self.timeout or DEFAULT_TIMEOUT)
        self._loop: asyncio.AbstractEventLoop | None = None  # the event loop the client's own pool runs on
        # the bodies its streams read now, which aclose() cuts (held weakly: a stream left unfinished is collected)
        self._bodies: weakref.WeakSet[_Body] = weakref.WeakSet()

    def _pool(self) -> httpx.AsyncClient:
        """The http client, for the running event loop. The client's own pool keeps connections alive, each
        bound to the loop it was opened on: an AsyncClient used again under a new loop (``asyncio.run()`` called
        twice, a notebook cell each) took a connection of the closed one and failed on a bare RuntimeError
        ('Event loop is closed'). Its own pool is then made anew (the old one's connections cannot be closed
        from another loop; they go with it); an ``http_client`` given is the caller's to manage."""
        loop = asyncio.get_running_loop()
        if self._own and self._loop is not None and self._loop is not loop and self._loop.is_closed():
            self.http = own_http(httpx.AsyncClient, self.timeout or DEFAULT_TIMEOUT)
        self._loop = loop
        return self.http

    async def aclose(self) -> None:
        """Close the client: its own connection pool (an ``http_client`` given is the caller's to close). A call
        after it raises :class:`ClientClosedError`; a stream of this client read meanwhile (by another task),
        whichever pool it reads from, breaks, saying the client was closed (its connection closed)."""
        self._client_closed = True
        for body in tuple(self._bodies):
            if not body.ended and body.net is not None:
                with contextlib.suppress(Exception):
                    await body.net.aclose()
        if self._own:
            await self._pool().aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aformat(
        self,
        messages: Sequence[Msg],
        *,
        stream: bool,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> FormattedRequest:
        """:meth:`format` without holding up the event loop: in a worker thread when the media policy (the client's
        ``format_options`` or the call's ``options``) lets the formatter read local files or download
        (``allowed_roots``, ``allow_download``), each read or download a blocking call of up to its ``timeout``;
        else at once (formatting alone is CPU work, which a thread would only make dearer). :meth:`call` and
        :meth:`count_tokens` format so."""
        if _reads_media(params.get("options", self.format_options)):
            return await asyncio.to_thread(
                self.format, messages, stream=stream, tools=tools, tool_choice=tool_choice, **params
            )
        return self.format(messages, stream=stream, tools=tools, tool_choice=tool_choice, **params)

    def stream(
        self,
        messages: Sequence[Msg],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        raise_on_error: bool = True,
        **params: Any,
    ) -> AsyncReplyStream:
        """Stream the reply (an :class:`AsyncReplyStream`: ``async with`` / ``async for``), as :meth:`Client.stream`.
        The request is formatted here, at once (its ``request`` and ``diagnostics`` are the stream's from the
        start), unless the media policy (the client's ``format_options`` or the call's ``options``) reads local
        files or downloads: then, as :meth:`aformat` does, in a worker thread as the stream starts (``async with``,
        or its first event), which keeps the event loop free meanwhile; a formatting error is raised there, and the
        messages are read then, as they are (a change made to them before is sent)."""
        if _reads_media(params.get("options", self.format_options)):
            formatting = functools.partial(
                self.format, messages, stream=True, tools=tools, tool_choice=tool_choice, **params
            )
            return AsyncReplyStream(self, None, raise_on_error, formatting=formatting)
        request = self.format(messages, stream=True, tools=tools, tool_choice=tool_choice, **params)
        return AsyncReplyStream(self, request, raise_on_error)

    def send_stream(self, request: FormattedRequest, *, raise_on_error: bool = True) -> AsyncReplyStream:
        """Stream the reply to an already formatted request (a ``FormattedRequest``)."""
        return AsyncReplyStream(self, request, raise_on_error)

    async def call(
        self,
        messages: Sequence[Msg],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Msg:
        """The reply, non-streaming, as :meth:`Client.call`."""
        return await self.send(
            await self.aformat(messages, stream=False, tools=tools, tool_choice=tool_choice, **params)
        )

    async def count_tokens(
        self,
        messages: Sequence[Msg],
        *,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> ProviderCount:
        """The provider's own count of the input tokens, as :meth:`Client.count_tokens`."""
        if model is not None:
            params["model"] = model
        formatted = await self.aformat(messages, stream=False, tools=tools, **params)
        self._refuse_if_closed()  # (before the endpoint: a closed client says so whatever the call, as _send does)
        request = counting_request(self.spec, formatted)
        try:
            response, body = await self._reply(request)
            return read_count(self.spec, request.model, body, response.status_code, response.headers)
        except ProviderError as exc:  # (the client's credentials, echoed by a server, redacted)
            self._scrub(exc)
            raise

    async def send(self, request: FormattedRequest) -> Msg:
        """The reply to an already formatted non-streaming request."""
        try:
            return await self._whole(request)
        except ProviderError as exc:  # (the client's credentials, echoed by a server, redacted)
            self._scrub(exc)
            raise

    async def _whole(self, request: FormattedRequest) -> Msg:
        started = time.monotonic()
        response, body = await self._reply(request, started)
        return read_whole(self, request, body, started, response)

    async def _reply(self, request: FormattedRequest, whole: float | None = None) -> tuple[httpx.Response, bytes]:
        """The 2xx response to ``request`` and its whole body, the response closed, as :meth:`Client._reply` (no call
        between the response and the ``try`` that closes it: a Ctrl-C handled at one left it open)."""
        cap = limits.max_bytes
        response = await self._send(request)
        arrived = bytearray()
        try:
            body = await read_body(response, cap, arrived)
        except httpx.HTTPError as exc:
            cut = None if whole is None else cut_stream(self, request, bytes(arrived), whole, response, exc)
            raise (cut or body_broke(self.provider, exc, response.status_code, response.headers)) from exc
        finally:
            await _release(response)
        if past_limit(response, len(body), cap):
            raise too_big(self.provider, cap, response.status_code, response.headers)
        return response, body

    async def _send(self, request: FormattedRequest) -> httpx.Response:
        """The response (2xx) after retries."""
        if self._client_closed:  # (before its own pool is made anew under another event loop)
            raise client_closed(self.provider, True)
        http = self._pool()
        if http.is_closed:
            raise client_closed(self.provider, False)
        out = self._outgoing(request, copy=False)  # (the headers kept: httpx copies them)
        policy = self._retry_policy()
        attempt = 0
        while True:
            try:
                response = await _once(
                    http.send(
                        self._built(http, out),
                        stream=True,
                        follow_redirects=False,  # the key would go along, to any host (httpx drops only Authorization)
                    ),
                    _release,
                )
            except httpx.LocalProtocolError:
                raise unsendable(self.provider) from None
            except RuntimeError:
                if http.is_closed:  # (closed since the look above: by another task)
                    raise client_closed(self.provider, self._client_closed) from None
                raise
            except httpx.HTTPError as exc:
                await self._sleep(self._failed(policy, attempt, exc))
                attempt += 1
                continue
            if response.status_code < 300:
                return response
            arrived, broke = bytearray(), None
            try:
                await read_body(response, ERROR_BODY_MAX, arrived)
            except httpx.HTTPError as exc:  # (the bytes that arrived kept, the error saying the body broke off)
                broke = reason(exc)
            finally:
                await _release(response)
            body = bytes(arrived[:ERROR_BODY_MAX])
            await self._sleep(self._refused(policy, attempt, response, body, broke))
            attempt += 1

    async def _sleep(self, delay: float) -> None:
        """A retry's wait (cancelled with the caller)."""
        await asyncio.sleep(delay)
