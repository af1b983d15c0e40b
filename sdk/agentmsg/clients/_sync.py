"""The sync client and its stream: the IO (httpx.Client) around the shared state and decisions.

``ReplyStream.close()`` may come from another thread than the one iterating (a GUI's stop button, a watchdog):
it sets a stop flag the loop checks between steps, and shuts down the socket being read so that a blocked read
returns."""

from __future__ import annotations

import contextlib
import functools
import math
import socket
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

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
from agentmsg.clients._stream import EVENT_ROOM, StreamState, body_chunks, past_limit, raw_chunks, with_request
from agentmsg.clients._whole import cut_stream, read_whole
from agentmsg.context import ProviderCount
from agentmsg.errors import require_seconds
from agentmsg.providers import FormatOptions, FormattedRequest

if TYPE_CHECKING:
    from agentmsg.providers._response.parser import StreamParser

__all__ = ["CLOSE_WAIT", "Client", "ReplyStream"]

#: Seconds :meth:`ReplyStream.close` called from another thread waits, at most, for the reading thread to end
#: the stream.
CLOSE_WAIT = 10.0

#: What :meth:`ReplyStream.close`'s ``wait`` is (the rule of the error refusing another)
_WAIT_SAID = "wait is seconds, 0 or more (inf or None: for ever)"


class _Stop(Exception):
    """:meth:`ReplyStream.close` from another thread: the stream's loop ends quietly where it is."""


class ReplyStream(StreamState):
    """A streaming call: iterate it for AgentEvents as they arrive; ``message`` is the reduced Msg,
    ``request`` / ``diagnostics`` what the formatter built. Leaving early inside ``with`` (or calling
    ``close()``) cancels the call: the message keeps what arrived and is marked INTERRUPTED (a loop left
    without either keeps the connection until the stream is collected). ``close()`` from another thread (a
    GUI's stop button, a watchdog) while the loop runs stops it: the loop ends without error, the message
    INTERRUPTED with what arrived. A stream that breaks (disconnect, read timeout, provider error mid-stream)
    yields its closing events, then raises :class:`BrokenStreamError` whose ``partial`` is that message
    (``raise_on_error=False``: no raise). A reply longer than ``limits.max_bytes`` (the bytes received, or
    inflated from a gzip or deflate body) is read no further: the events of what arrived up to the limit are
    yielded, then an error event of type ``too_large`` (rule ``max-bytes``), then :class:`ReplyTooLargeError`
    (a :class:`BrokenStreamError`) whose ``partial`` is their message. (Formerly ``EventStream``, a name that
    remains, deprecated.)"""

    def __init__(self, client: Client, request: FormattedRequest, raise_on_error: bool = True) -> None:
        super().__init__(client, request, raise_on_error)
        self._client = client
        self._gen: Generator[dict[str, Any], None, None] | None = None  # _run(), the caller's iterator
        # Who runs the stream (its key :data:`_TURN`): the loop (:data:`_LOOP`) while it runs a step (between two
        # events it is free), or the close() that ended it (its token, kept). Taken with ``setdefault`` (one step,
        # under the GIL), so whoever took it is written where an interrupt cannot lose it (:meth:`_run`).
        self._turn: dict[str, object] = {}
        self._closer = threading.Lock()  # held by a close() while it runs (one at a time)
        # A close() runs now (it claimed the stream's closing), and what another close() waits for: set once it
        # returns (made by the first that waits)
        self._claimed = False
        self._running_close: threading.Event | None = None
        # What ends the stream where it stands, taken once by who holds ``_turn``: by the loop's own end, or by
        # close() between two events (the loop, back, then ends quietly). Its argument: the stream was collected.
        self._cut: Callable[[bool], None] | None = self._unsent
        self._stopping: threading.Event | None = None  # made when first waited on or set (:attr:`_stop`)
        self._given: threading.Event | None = None  # set when the loop lets ``_turn`` go once stopped (close())
        self._stopped = False  # close() from another thread asked the loop to end (read between events)
        self._lock = threading.Lock()
        self._net: Any = None  # the network stream being read (the headers, the body), for that close() to shut
        # The 2xx response ``_send`` gives the loop, until the body's read owns it: what stops the loop before (a
        # Ctrl-C as it sets out to read the body) closes it (:meth:`_drop_sent`), its connection given back.
        self._sent: httpx.Response | None = None
        self._traced: dict[str, Any] | None = None  # the extensions of the request sent now (its ``trace``)

    @property
    def _stop(self) -> threading.Event:
        """Set once close() from another thread asked the loop to end: what a retry's wait waits on. Made when
        first needed (a retry's wait, that close()): most streams never wait, and an Event (a Condition and its
        lock) cost about as much as the rest of the stream's setup."""
        with self._lock:
            if self._stopping is None:
                self._stopping = threading.Event()
                if self._stopped:
                    self._stopping.set()
            return self._stopping

    def __iter__(self) -> Generator[dict[str, Any], None, None]:
        if self._gen is None:
            self._gen = self._run()
        return self._gen

    def __enter__(self) -> ReplyStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, wait: float | None = CLOSE_WAIT) -> None:
        """Cancel (or finish) the call; the message is final afterwards. Called from another thread than the
        one iterating the stream (a GUI's stop button, a watchdog; a generator cannot be closed while it runs:
        that raised ValueError 'generator already executing' and the stream went on), it stops the loop where
        it is: the headers' wait (on a new connection), the body's read (the connection's socket shut down, the
        connection not reused) or a retry's wait is cut; between two events the stream is closed at once. The
        loop ends without error, the message INTERRUPTED with what arrived (none before any reply:
        ``until_done()`` says so). That ``close()`` returns once the stream has ended, or after ``wait`` seconds
        when the read cannot be cut (the headers awaited on a reused keep-alive connection: the loop then ends
        when they come); ``done`` tells.

        ``close()`` from several threads at once: one closes the stream, the others wait for its outcome, each its
        own ``wait`` at most (the first's wait is not added to theirs: a watchdog's ``close(wait=1)`` beside a
        GUI's ``close()`` returns within its second); one that is left time once the first gave up (the read not
        cut within the first's ``wait``) closes the stream in its turn.

        ``wait``: seconds, 0 or more; ``inf`` or None waits for ever (as Python's own waits). Anything else (nan,
        below 0, a bool, no number) is refused with a :class:`~agentmsg.ValidationError` at ``/wait``, the stream
        left as it is. (``inf`` raised OverflowError from the wait while the loop was mid-read, the stream not
        closed; nan and a negative wait were taken as 0.)"""
        seconds = math.inf if wait is None else require_seconds(wait, "wait", _WAIT_SAID, infinite=True, zero=True)
        if self._gen is None:
            self._gen = _nothing()  # never started: nothing was sent
            self._done = True
            return
        deadline = time.monotonic() + seconds
        while True:
            mine = False
            running: threading.Event | None = None
            try:
                with self._lock:  # (claimed and told in one step: a Ctrl-C cannot leave it claimed, untold)
                    if not self._claimed:
                        self._claimed = mine = True
                    else:  # (the Event made by the first close() that waits: most streams have one close())
                        running = self._running_close = self._running_close or threading.Event()
                if mine:
                    self._close_by(deadline)
                    return
            finally:
                if mine:
                    with self._lock:
                        self._claimed = False
                        running, self._running_close = self._running_close, None
                    if running is not None:
                        running.set()
            # another close() runs: its outcome waited for, until this one's deadline at most
            holder = self._turn.get(_TURN)
            if (holder is not None and holder is not _LOOP) or running is None or not running.wait(_left(deadline)):
                return  # (an earlier close() ended the stream, or this one's wait is over)

    def _close_by(self, deadline: float) -> None:
        """:meth:`close` by the one ``close()`` that runs now, by ``deadline`` (``time.monotonic()``) at most."""
        token = object()
        with self._closer:
            holder = self._take(token)
            if holder is token:  # not running (this thread's loop, or another's between events)
                self._close_here()
                return
            if holder is not _LOOP:  # an earlier close() ended it
                return
            # another thread runs the stream: stop it there, and wait for it to end. Its step may have been
            # yielding an event as the stop came (past its last check) and its thread gone on without another
            # step: once the step is over, the stream is closed here as between two events.
            with self._lock:
                given = self._given = self._given or threading.Event()
                self._stopped = True  # (after ``_given`` is made: the loop that sees it wakes this wait)
                if self._stopping is not None:
                    self._stopping.set()
                _shut(self._net)
            while True:
                given.clear()
                holder = self._take(token)
                if holder is token:
                    self._close_here()
                    return
                if holder is not _LOOP or not given.wait(_left(deadline)):
                    return

    def _close_here(self) -> None:
        """Close the stream in this thread, ``_turn`` taken (and kept: the stream is over): the loop is not
        running (nor will it run: it takes ``_turn`` for each step), so the stream is ended here, as it stands, and
        the loop, if its thread comes back, ends quietly. (The loop's generator is not closed here: another thread
        may be about to step it, and a generator cannot be closed while it runs, nor stepped while it is closed:
        'generator already executing'.)"""
        self._stopped = True
        cut, self._cut = self._cut, None
        if cut is not None:
            cut(False)

    def _unsent(self, collected: bool) -> None:
        """Ends a stream closed before its loop sent anything: nothing was sent."""
        self._done = True

    def until_done(self) -> Msg:
        """Read the stream to its end: the final message."""
        for _ in self:
            pass
        if self._message is None:  # closed before it started, or from another thread before any reply
            raise APIConnectionError("the stream was closed before any reply came", provider=self.client.provider)
        return self._message

    def _reading(self, net: Any) -> None:
        """The network stream now read (None: none), for close() from another thread to shut."""
        with self._lock:
            self._net = net
        if net is not None and self._stopped:
            _shut(net)

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace: a new connection's network stream, while the request waits for its headers. Once the
        request is on its connection (an event of the connection's protocol: ``http11.``, ``http2.``) no other
        connection comes for it, and the trace is taken out of the request's extensions: httpcore called it
        about 10 times a request (each a few µs), for nothing after the connection was known."""
        if event in _NEW_NETWORK:
            self._reading(info.get("return_value"))
        elif not event.startswith("connection.") and self._traced is not None:
            self._traced.pop("trace", None)

    def _check(self) -> None:
        if self._stopped:
            raise _Stop

    def _run(self) -> Generator[dict[str, Any], None, None]:
        """The stream's events. Each step runs with ``_turn`` taken (let go before each event is yielded, taken
        again when the loop comes back): ``close()`` from another thread stops it while it runs, and ends the
        stream itself between two events (:meth:`_close_here`); the loop, back, then ends quietly. One generator:
        a guard around it stepping it cost a second generator step an event, about 5% of a live chunk's CPU.

        Whoever holds ``_turn`` is read from it, never from a local set after the take: a KeyboardInterrupt (a
        signal is handled as a call returns, or as the loop resumes) may come between any two steps here, and the
        loop's end lets the turn go only when it is the loop's (a lock taken then left the stream taken for good,
        or let go another thread's ``close()``'s lock). A turn rather than a lock: a lock's ``acquire()`` parses
        its arguments, about 300 instructions an event."""
        turn = self._turn
        take = turn.setdefault  # (bound once, the stop read inline: a call to each cost about 1.5% of a chunk)
        try:
            if (take(_TURN, _LOOP) is not _LOOP and self._take() is not _LOOP) or self._stopped:  # closed first
                self._wait_closing()
                return
            started = time.monotonic()
            try:
                response = self._client._send(self.request, self)
                # The response is the loop's from here (``_sent``, which ``_send`` set): what stops the loop before
                # the body's ``try`` owns it (a Ctrl-C handled as a call below begins or returns) closes it.
                self._responded(response)
                parser = self._parser = self.client.parser(self.request, started)
                closing: list[dict[str, Any]] = []
                encoded = self._encoded  # (else the bytes received are the bytes read)
                chunks = raw_chunks(response, encoded)  # content-decoded (a gzipped stream)
                # The response and its body's reader, held by the client while they are open: a stream left and
                # collected (GeneratorExit here, from the garbage collector) must not close them where the
                # collector ran (inside httpcore's pool lock, say: closing waited for that lock for ever); the
                # client's next call does. (Held last: no call between that and the ``try`` that owns them.)
                held = (response, chunks)
                self._cut = functools.partial(self._cut_body, parser, held)
                self._client._held[id(held)] = held
            except _Stop:  # close() from another thread before any reply: ended quietly, no message
                self._cut, self._done = None, True
                self._drop_sent()
                return
            except BaseException:  # refused, failed or cancelled before any reply was read: ended, no message
                self._cut, self._done = None, True
                self._drop_sent()
                raise
            try:
                self._sent = None  # (the body's read owns the response: ``held``)
                try:
                    feed, fold = parser.feed, self.reducer._trusted_feed()
                    cap, size, over, grown = limits.max_bytes, 0, False, False
                    room = cap  # bytes the message may grow by before it is measured
                    for chunk in chunks:
                        size += len(chunk)
                        if size > cap or (encoded and response.num_bytes_downloaded > cap):
                            over = True  # the bytes up to the limit are read, no further
                            chunk = chunk[: len(chunk) - max(0, size - cap)]
                        events = feed(chunk)
                        if self._heading:
                            self._head_of(chunk)
                        if not events:
                            if over:
                                break
                            continue
                        self._parsed = True
                        # The parser's events, valid by construction, yielded, then to the reducer (those yielded
                        # so far taken by ``message`` when it is read meanwhile: _catch_up)
                        lagging = self._lagging(events, fold)
                        # (the stop looked at before an event is taken off ``lagging``, as after each yield below: an
                        # event taken off counts as yielded, _catch_up; one taken when close() came was kept unseen)
                        if self._stopped:
                            raise _Stop
                        for e in lagging:
                            try:
                                del turn[_TURN]
                                if self._stopped:  # (a close() from another thread came meanwhile: it waits)
                                    self._give()
                                yield e
                            except BaseException:  # (at the yield, let go: collected, closed, thrown in, a signal)
                                self._take_back()
                                raise
                            if (take(_TURN, _LOOP) is not _LOOP and self._take() is not _LOOP) or self._stopped:
                                raise _Stop  # (closed meanwhile)
                        # (at most what the message grew by: the read's bytes and EVENT_ROOM an event)
                        room = self._read_taken(events, fold, len(chunk) + EVENT_ROOM * len(events), room, cap)
                        if room < 0:
                            over = grown = True  # the message built is past the limit: read no further
                        if over:
                            break
                    self._check()  # (a socket shut down may read as the body's end)
                    closing = self._too_large(parser, cap, grown) if over else parser.close()
                except httpx.HTTPError as exc:
                    self._check()
                    with_request(exc, response)
                    closing = self._read_failed(parser, exc)
            except (GeneratorExit, KeyboardInterrupt, _Stop) as exc:
                if take(_TURN, _LOOP) is _LOOP or self._take() is _LOOP:  # (else close() ended it, or ends it)
                    cut, self._cut = self._cut, None
                    if cut is not None:
                        cut(isinstance(exc, GeneratorExit))
                if isinstance(exc, _Stop):
                    self._wait_closing()
                    return
                raise
            except BaseException:
                if take(_TURN, _LOOP) is _LOOP or self._take() is _LOOP:
                    self._cut = None
                    self._let_go(held, False)
                raise
            self._cut = None
            self._let_go(held, False)
            lagging = self._closing_events(closing)
            self._cut = functools.partial(self._cut_closing, parser)
            try:
                for e in lagging:
                    if self._stopped:
                        raise _Stop
                    try:
                        del turn[_TURN]
                        if self._stopped:
                            self._give()
                        yield e
                    except BaseException:
                        self._take_back()
                        raise
                    if (take(_TURN, _LOOP) is not _LOOP and self._take() is not _LOOP) or self._stopped:
                        raise _Stop
            except (GeneratorExit, KeyboardInterrupt, _Stop) as exc:  # left during the closing events: all arrived
                if take(_TURN, _LOOP) is _LOOP or self._take() is _LOOP:
                    cut, self._cut = self._cut, None
                    if cut is not None:
                        cut(False)
                if isinstance(exc, _Stop):
                    self._wait_closing()
                    return
                raise
            self._cut = None
            self._closed(parser)
        except ProviderError as exc:  # (the client's credentials, echoed by a server, redacted)
            self.client._scrub(exc)
            raise
        finally:
            if turn.get(_TURN) is _LOOP:
                del turn[_TURN]
                if self._stopped:
                    self._give()

    def _take(self, owner: object = None) -> object:
        """``_turn`` taken for ``owner`` (the loop's, by default) unless another holds it, as ``setdefault`` does, once
        a ``message`` read in another thread (:meth:`_peek`) has let it go: who holds it then."""
        owner = _LOOP if owner is None else owner
        turn = self._turn
        holder = turn.setdefault(_TURN, owner)
        while holder is _PEEK:
            with self._lock:  # (held by the peek while it holds the turn)
                pass
            holder = turn.setdefault(_TURN, owner)
        return holder

    def _peek(self) -> None:
        """``message`` read while events are yielded: the reducer takes those yielded so far, ``_turn`` held meanwhile
        (and ``_lock``: the loop, a ``close()`` waits for it). While the loop runs, in another thread, it holds the
        turn: the snapshot is then what the reducer took, the events of the read being yielded not yet."""
        turn = self._turn
        with self._lock:
            try:  # (the turn taken inside: a Ctrl-C as setdefault returns left it taken for good, close() spinning)
                if turn.setdefault(_TURN, _PEEK) is _PEEK:
                    self._catch_up(False)
            finally:
                if turn.get(_TURN) is _PEEK:
                    del turn[_TURN]

    def _give(self) -> None:
        """The loop let ``_turn`` go once stopped: a ``close()`` from another thread waiting for it takes it."""
        with self._lock:
            given = self._given
        if given is not None:
            given.set()

    def _take_back(self) -> None:
        """The loop, left at a yield (an exception thrown in, a signal), takes ``_turn`` back to end the stream,
        unless a ``close()`` took it meanwhile: that close() ends the stream, and is waited for."""
        if self._take() is not _LOOP:
            self._wait_closing()

    def _wait_closing(self) -> None:
        """The loop, which found ``_turn`` taken by a ``close()`` (or stopped), waits for that close() to end the
        stream: the loop's end comes after the stream's."""
        holder = self._turn.get(_TURN)
        if holder is not None and holder is not _LOOP:
            with self._closer:
                pass

    def _drop_sent(self) -> None:
        """Close the response ``_send`` gave the loop, if it did, which stopped before its body's read owned it."""
        sent, self._sent = self._sent, None
        if sent is not None:
            self._reading(None)
            sent.close()

    def _cut_body(self, parser: StreamParser, held: tuple[httpx.Response, Iterator[bytes]], collected: bool) -> None:
        """Ends a stream left (or cancelled, or stopped) while its body was read: the message INTERRUPTED with what
        arrived, the response let go."""
        try:
            self._cancelled(parser)
        finally:
            self._let_go(held, collected)

    def _let_go(self, held: tuple[httpx.Response, Iterator[bytes]], collected: bool) -> None:
        """The response read no further: closed, or (its stream ``collected``) left for the client's next call to
        close."""
        self._reading(None)
        try:
            if collected:
                self._client._abandoned.append(held)
            else:
                held[0].close()
        finally:
            del self._client._held[id(held)]

    def _cut_closing(self, parser: StreamParser, collected: bool) -> None:
        """Ends a stream left during its closing events: they all arrived."""
        self._end(parser)


#: The key of :attr:`ReplyStream._turn`, and its value while the stream's loop holds it
_TURN: Final = "turn"
_LOOP: Final = object()
#: ... and while ``message``, read between two events, has the reducer take those yielded (ReplyStream._peek)
_PEEK: Final = object()

#: httpcore's trace events that give a new connection's network stream (``return_value``)
_NEW_NETWORK = frozenset({"connection.connect_tcp.complete", "connection.start_tls.complete"})


def _tracer(stream: ReplyStream) -> Any:
    """httpcore's trace callback for ``stream``, holding it weakly: the request (and so the callback) stays in the
    client's connection pool while its response is open, and a stream held from there was never collected: a loop
    left without ``with`` or ``close()`` kept its connection (and socket) until the client was closed."""
    ref = weakref.ref(stream)

    def trace(event: str, info: dict[str, Any]) -> None:
        live = ref()
        if live is not None:
            live._trace(event, info)

    return trace


def _left(deadline: float) -> float | None:
    """The seconds a wait until ``deadline`` (``time.monotonic()``) waits: None (for ever) for an infinite one,
    else those left, 0 or more, at most ``threading.TIMEOUT_MAX`` (a longer wait raised OverflowError)."""
    if deadline == math.inf:
        return None
    return min(max(0.0, deadline - time.monotonic()), threading.TIMEOUT_MAX)


def _nothing() -> Generator[dict[str, Any], None, None]:
    return
    yield  # (a generator that yields nothing)


def _shut(net: Any) -> None:
    """Shut down a network stream's socket, from another thread than the one reading it: a blocked read
    returns (closing it would not wake the read; an SSL socket's own shutdown would drop its state under
    the reader)."""
    sock = net.get_extra_info("socket") if net is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def read_body(response: httpx.Response, cap: int, into: bytearray | None = None) -> bytes:
    """The body (content-decoded), read no further than ``cap`` bytes and one chunk (a compressed body's:
    :data:`~agentmsg.clients._stream.INFLATE_PIECE` bytes at most), decoded or received: longer is
    :func:`~agentmsg.clients._stream.past_limit`. ``into``: where the bytes go as they come (what arrived stays
    there when the read fails)."""
    body = bytearray() if into is None else into
    for chunk in body_chunks(response):
        body += chunk
        if past_limit(response, len(body), cap):
            break
    return bytes(body)


class Client(BaseClient):
    """A provider client over httpx (sync). ``provider`` is a registry name (``agentmsg.providers.NAMES``).

    ``api_key`` (default: the provider's usual environment variable), ``base_url`` (e.g. a proxy or a
    local server), ``model``, ``timeout`` (seconds or an ``httpx.Timeout``, default 600 s, 10 s to connect, or
    your ``http_client``'s own; a stream silent for longer breaks), ``max_retries`` (429, 408, 409, 5xx and connection
    failures before the stream starts, with exponential ``backoff`` honouring Retry-After up to ``max_retry_after``
    seconds; each numeric setting is checked whenever set, a bad one refused with a :class:`~agentmsg.ValidationError`
    naming it: ``max_retries`` a whole number, 0 or more; ``backoff`` finite seconds, 0 or more; ``max_retry_after``
    seconds, 0 or more, ``inf`` for no cap; ``timeout`` None or finite seconds above 0 and at most
    ``threading.TIMEOUT_MAX``, an ``httpx.Timeout``'s each None or so), ``name`` (the replies' agent name), ``headers``
    (each replaces the client's header of that name), ``think_tags`` (``True`` or ``"open"``: ``<think>`` text in
    the replies read as reasoning, docs/streams.md), ``http_client`` (your own ``httpx.Client``, e.g. with a mock
    transport; yours to close. Closing it while a stream is read does not cut a read already waiting for the
    server: httpx closes the socket, which does not wake that read (httpx's own streams and the openai SDK's wait
    too). The stream breaks at the read's end (the server's next bytes, or the read timeout), saying the
    http_client was closed; or ends whole if the rest of the reply came in that read. To stop a stream at once,
    from any thread, call its ``close()``, or this client's ``close()`` for all of its streams.)"""

    http: httpx.Client

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
        http_client: httpx.Client | None = None,
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
        self.http = http_client or own_http(httpx.Client, self.timeout or DEFAULT_TIMEOUT)
        # The open responses of streams (with their body's reader), and those of streams left without ``with`` or
        # close() and collected since, which the next call closes (their connections back to the pool)
        self._held: dict[int, tuple[httpx.Response, Iterator[bytes]]] = {}
        self._abandoned: list[tuple[httpx.Response, Iterator[bytes]]] = []

    def close(self) -> None:
        """Close the client: its own connection pool (an ``http_client`` given is the caller's to close). A call
        after it raises :class:`ClientClosedError`; a stream of this client read meanwhile (by another thread),
        whichever pool it reads from, breaks, saying the client was closed (its read cut: the socket it waits on is
        shut down, its connection not reused; closing it would not wake the read, which waited for the server's
        next bytes)."""
        self._client_closed = True
        self._close_abandoned()
        for response, _ in tuple(self._held.values()):  # (the streams' threads add and remove theirs)
            _shut(response.extensions.get("network_stream"))
        if self._own:
            self.http.close()

    def _close_abandoned(self) -> None:
        """Close the responses of the streams left without ``with`` or close() and collected since. Each is taken
        once, whatever the threads sharing the client: two calls that began together both saw the last one, and
        the second's take failed (a bare IndexError, its call with it)."""
        abandoned = self._abandoned
        while abandoned:  # (a look first: most calls find none, and a failed take costs more)
            try:
                response, chunks = abandoned.pop()
            except IndexError:  # (another thread took the last one since the look)
                return
            with contextlib.suppress(Exception):
                getattr(chunks, "close", _nothing)()
            with contextlib.suppress(Exception):
                response.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stream(
        self,
        messages: Sequence[Msg],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        raise_on_error: bool = True,
        **params: Any,
    ) -> ReplyStream:
        """Stream a reply: a :class:`ReplyStream` of AgentEvents (the request is sent when iterated)."""
        request = self.format(messages, stream=True, tools=tools, tool_choice=tool_choice, **params)
        return ReplyStream(self, request, raise_on_error)

    def send_stream(self, request: FormattedRequest, *, raise_on_error: bool = True) -> ReplyStream:
        """Stream the reply to an already formatted request (a ``FormattedRequest``)."""
        return ReplyStream(self, request, raise_on_error)

    def call(
        self,
        messages: Sequence[Msg],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Msg:
        """One non-streaming call: the assistant message."""
        return self.send(self.format(messages, stream=False, tools=tools, tool_choice=tool_choice, **params))

    def count_tokens(
        self,
        messages: Sequence[Msg],
        *,
        model: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> ProviderCount:
        """The provider's own count of the input tokens of ``messages`` (and ``tools``), from its counting endpoint
        (the spec's ``counting``: Anthropic's ``/v1/messages/count_tokens``, Gemini's ``:countTokens``, DashScope's
        ``/tokenizer``), for the request the formatter builds for them. Raises :class:`BadRequestError` for a
        provider with no such endpoint (nothing sent: count offline with ``agentmsg.context.count_tokens``) and
        the provider's error as :meth:`call` does; :class:`ClientClosedError` on a closed client, before either."""
        if model is not None:
            params["model"] = model
        formatted = self.format(messages, stream=False, tools=tools, **params)
        self._refuse_if_closed()  # (before the endpoint: a closed client says so whatever the call, as _send does)
        request = counting_request(self.spec, formatted)
        try:
            response, body = self._reply(request)
            return read_count(self.spec, request.model, body, response.status_code, response.headers)
        except ProviderError as exc:  # (the client's credentials, echoed by a server, redacted)
            self._scrub(exc)
            raise

    def send(self, request: FormattedRequest) -> Msg:
        """The reply to an already formatted non-streaming request."""
        try:
            return self._whole(request)
        except ProviderError as exc:  # (the client's credentials, echoed by a server, redacted)
            self._scrub(exc)
            raise

    def _whole(self, request: FormattedRequest) -> Msg:
        started = time.monotonic()
        response, body = self._reply(request, started)
        return read_whole(self, request, body, started, response)

    def _reply(self, request: FormattedRequest, whole: float | None = None) -> tuple[httpx.Response, bytes]:
        """The 2xx response to ``request`` (:meth:`_send`) and its whole body (a call's reply, a count), the response
        closed: raises :class:`ReplyTooLargeError` past ``limits.max_bytes`` (decoded or received),
        :class:`APIConnectionError` (:class:`APITimeoutError`) when it broke off, or with ``whole`` (a call's: the
        time it started), a body the server streamed anyway, :class:`BrokenStreamError` with what arrived
        (:func:`~agentmsg.clients._whole.cut_stream`). No call comes between the
        response and the ``try`` that closes it: a Ctrl-C handled at one (as the body's read began) left it open,
        its connection taken from the pool."""
        cap = limits.max_bytes
        response = self._send(request)
        arrived = bytearray()
        try:
            body = read_body(response, cap, arrived)
        except httpx.HTTPError as exc:
            cut = None if whole is None else cut_stream(self, request, bytes(arrived), whole, response, exc)
            raise (cut or body_broke(self.provider, exc, response.status_code, response.headers)) from exc
        finally:
            response.close()
        if past_limit(response, len(body), cap):
            raise too_big(self.provider, cap, response.status_code, response.headers)
        return response, body

    def _send(self, request: FormattedRequest, stream: ReplyStream | None = None) -> httpx.Response:
        """The response (2xx) after retries. For a ``stream``, its ``close()`` from another thread cuts the
        wait for the headers (a new connection's), an error body's read and a retry's wait: ``_Stop``."""
        self._refuse_if_closed()
        self._close_abandoned()
        out = self._outgoing(request, copy=False)  # (the headers kept: httpx copies them)
        policy = self._retry_policy()
        trace = _tracer(stream) if stream is not None else None
        attempt = 0
        while True:
            if stream is not None:
                stream._check()
            try:
                sent = self._built(self.http, out, trace)
                if stream is not None:
                    stream._traced = sent.extensions  # (this attempt's: its trace taken out once it is connected)
                response = self.http.send(
                    sent,
                    stream=True,
                    follow_redirects=False,  # the key would go along, to any host (httpx drops only Authorization)
                )
            except httpx.LocalProtocolError:
                raise unsendable(self.provider) from None
            except RuntimeError:
                if self.http.is_closed:  # (closed since the look above: from another thread)
                    raise client_closed(self.provider, self._client_closed) from None
                raise
            except httpx.HTTPError as exc:
                if stream is not None:
                    stream._reading(None)
                    stream._check()
                self._sleep(self._failed(policy, attempt, exc), stream)
                attempt += 1
                continue
            if response.status_code < 300:
                if stream is not None:  # (the body's network stream, which the stream's loop reads next)
                    stream._sent = response  # (the loop's from here, before any call: see ReplyStream._sent)
                    stream._reading(response.extensions.get("network_stream"))
                return response
            arrived, broke = bytearray(), None
            if stream is not None:  # (a kept-alive connection's: no trace event named it)
                stream._reading(response.extensions.get("network_stream"))
            try:
                read_body(response, ERROR_BODY_MAX, arrived)
            except httpx.HTTPError as exc:  # (the bytes that arrived kept, the error saying the body broke off)
                broke = reason(exc)
            finally:
                if stream is not None:
                    stream._reading(None)
                response.close()
            if stream is not None:
                stream._check()
            body = bytes(arrived[:ERROR_BODY_MAX])
            self._sleep(self._refused(policy, attempt, response, body, broke), stream)
            attempt += 1

    def _sleep(self, delay: float, stream: ReplyStream | None) -> None:
        """A retry's wait, cut by the stream's ``close()`` from another thread."""
        if stream is None:
            time.sleep(delay)
        elif stream._stop.wait(delay):
            raise _Stop
