"""httpx clients for the providers, sync and async: the formatter builds the request, the provider's
stream parser turns the body into AgentEvents as it arrives, the one Reducer folds them into the Msg."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import email.utils
import inspect
import os
import random
import re
import socket
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import httpx
import orjson

from agentmsg import GenerateReason, Msg, Problem, Reducer, ValidationError, limits, providers
from agentmsg._wire.sse import SSEDecoder
from agentmsg.clients._errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agentmsg.message import METADATA_GENERATE_REASON
from agentmsg.providers import FormatOptions, FormattedRequest, Spec

__all__ = ["AsyncClient", "AsyncEventStream", "Client", "EventStream", "ProviderSpec"]


#: Deprecated: the spec of each provider is ``agentmsg.providers.get(name).spec``
ProviderSpec = Spec


def _specs() -> dict[str, Spec]:
    return {p.name: p.spec for p in providers.providers()}


_RETRY_STATUS = frozenset({408, 409, 429})
#: Bytes of an error response's body read: enough for any provider's error; the rest is not read (a
#: hostile or broken server's endless error page cannot fill the memory).
ERROR_BODY_MAX = 1 << 20
#: Seconds, for the client's own http_client: 10 to connect, 600 for the rest, as the providers' own SDKs
#: (a reasoning model's first byte, streamed or not, often comes after more than a minute: with 60 s the
#: call timed out, was retried and billed again, and failed).
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


def _provider_message(body: bytes) -> tuple[str, Any, str | None]:
    """(message, parsed body, request id) of an error response, in any provider's shape."""
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = _sse_error(body)
        if parsed is None:
            text = body.decode("utf-8", "replace").strip()
            return (text[:500] or "(empty body)"), text, None
    message: Any = None
    request_id = None
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        parsed = parsed[0]  # Gemini wraps some errors in a list
    if isinstance(parsed, dict):
        err = parsed.get("error")
        if isinstance(err, dict):
            message = err.get("message") or err.get("status") or err.get("type")
        elif isinstance(err, str):
            message = err
        if message is None:
            message = parsed.get("message") or parsed.get("msg")
        rid = parsed.get("request_id") or parsed.get("requestId")
        request_id = rid if isinstance(rid, str) else None
    return (str(message) if message else body.decode("utf-8", "replace")[:500]), parsed, request_id


def _sse_error(body: bytes) -> Any:
    """The JSON of an error sent as an SSE event (DashScope answers a streaming request it refuses so, with
    the 4xx: ``id:1 / event:error / :HTTP_STATUS/400 / data:{"code", "message", "request_id"}``); None when
    the body's first event with data is none."""
    decoder = SSEDecoder()  # (the body is whole: its last event ends with it, blank line or not)
    for event in decoder.feed(body + b"\n\n"):
        if event.data:
            try:
                parsed = orjson.loads(event.data)
            except orjson.JSONDecodeError:
                return None
            return parsed if isinstance(parsed, (dict, list)) else None
    return None


def _request_id(headers: httpx.Headers) -> str | None:
    """The provider's request id from response headers (OpenAI, Anthropic, DashScope name it so)."""
    value = headers.get("x-request-id") or headers.get("request-id") or headers.get("x-dashscope-request-id")
    return str(value) if value else None


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``Retry-After`` seconds or HTTP date); None
    when it asks nothing readable (a negative number, nan, garbage: the client's own backoff then)."""
    ms = _seconds(headers.get("retry-after-ms"))
    if ms is not None:
        return ms / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT (parsedate_to_datetime leaves "-0000" and no zone naive)
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - time.time())


_SECONDS = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*")


def _seconds(value: str | None) -> float | None:
    """A non-negative decimal number of a header (``float()`` also reads nan, inf, -5, 1_0, 0x...: not)."""
    match = _SECONDS.fullmatch(value) if value is not None else None
    return float(match[1]) if match else None


class _Base:
    """What the sync and async clients share: configuration, request building, error mapping, retry policy."""

    #: the provider of a class made for one (``AnthropicClient``: ``anthropic``), else None
    _pinned_provider: ClassVar[str | None] = None

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
        headers: Mapping[str, str] | None = None,
        format_options: FormatOptions | Mapping[str, Any] | None = None,
    ) -> None:
        pinned = type(self)._pinned_provider
        if provider is None:
            provider = pinned
        elif pinned is not None and provider != pinned:
            raise ValueError(f"{type(self).__name__} is for {pinned}, got provider {provider!r}")
        if provider is None:
            raise ValueError(f"a provider is required: one of {', '.join(providers.NAMES)}")
        if provider not in providers.NAMES:
            raise ValueError(f"unknown provider {provider!r}; known: {', '.join(providers.NAMES)}")
        self.provider = provider
        self.entry = providers.get(provider)  # the formatter and parsers, for this provider's variant
        self.spec = self.entry.spec
        self.model = model
        self.api_key = (
            api_key if api_key is not None else next((os.environ[e] for e in self.spec.env if os.environ.get(e)), None)
        )
        self.base_url = (base_url or self.spec.base_url).rstrip("/")
        try:
            url = httpx.URL(self.base_url)
        except httpx.InvalidURL as exc:
            raise ValueError(f"base_url {base_url!r} is not a URL: {exc}") from None
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url {base_url!r} is not an http:// or https:// URL")
        #: None: the http_client's own timeout (DEFAULT_TIMEOUT for the client's own http_client)
        self.timeout: httpx.Timeout | None = (
            timeout if isinstance(timeout, httpx.Timeout) or timeout is None else httpx.Timeout(timeout)
        )
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.name = name
        self.extra_headers = dict(headers or {})
        self.format_options = format_options

    def format(
        self,
        messages: Sequence[Msg],
        *,
        stream: bool,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Any:
        """The formatter's request (``.body``, ``.diagnostics``, ``.path``, ...) for these messages."""
        kwargs: dict[str, Any] = dict(params)
        if self.format_options is not None:
            kwargs.setdefault("options", self.format_options)
        return self.entry.format_request(
            messages,
            model=kwargs.pop("model", self.model),
            tools=tools,
            tool_choice=tool_choice,
            stream=stream,
            **kwargs,
        )

    @property
    def _timeout(self) -> Any:
        return self.timeout if self.timeout is not None else httpx.USE_CLIENT_DEFAULT

    def _url(self, request: Any) -> str:
        path = str(request.path or "")
        if "{model}" in path:
            path = path.replace("{model}", str(request.model or self.model or ""))
        if "?" not in self.base_url:
            return self.base_url + path
        # A base URL with a query (Azure's ?api-version=...): the path goes before it, the queries are joined.
        base, _, base_query = self.base_url.partition("?")
        path, _, path_query = path.partition("?")
        return f"{base.rstrip('/')}{path}?{'&'.join(q for q in (base_query, path_query) if q)}"

    def _headers(self, request: Any) -> dict[str, str]:
        if not self.api_key:
            raise AuthenticationError(
                f"no API key: pass api_key= or set {' or '.join(self.spec.env)}", provider=self.provider
            )
        if not (self.api_key.isascii() and self.api_key.isprintable()):
            raise AuthenticationError(
                "the API key holds a character an HTTP header cannot carry (a non-breaking space, a line"
                " break?): check api_key= or the environment variable",
                provider=self.provider,
            )
        if self.api_key != self.api_key.strip():
            # h11 refuses the header, and its error quotes the value: the key would be in the message.
            raise AuthenticationError(
                "the API key has leading or trailing whitespace: check api_key= or the environment variable",
                provider=self.provider,
            )
        # Header names are case-insensitive: each layer replaces a header of the one before, whatever its case.
        h = {
            "content-type": "application/json",
            "accept": "text/event-stream" if request.stream else "application/json",
        }
        h.update((k.lower(), v) for k, v in self.spec.headers.items())
        h.update((k.lower(), v) for k, v in (request.headers or {}).items())
        if self.spec.auth == "bearer":
            h["authorization"] = f"Bearer {self.api_key}"
        else:
            h[self.spec.auth.lower()] = self.api_key
        for name, value in self.extra_headers.items():
            if not (isinstance(value, str) and value.isascii() and value.isprintable() and value == value.strip()):
                # httpx would raise UnicodeEncodeError (its repr quotes the value: a key, maybe) or h11 refuse it.
                raise BadRequestError(
                    f"headers={{{name!r}: ...}}: the value is no HTTP header value (non-ASCII, a control character"
                    " or line break, leading or trailing whitespace): nothing was sent",
                    provider=self.provider,
                )
            h[name.lower()] = value
        return h

    def _options(self, started_at: float) -> dict[str, Any]:
        opts: dict[str, Any] = {"started_at": started_at}
        if self.name is not None:
            opts["name"] = self.name
        return opts

    def parser(self, request: Any, started_at: float) -> Any:
        """The provider's StreamParser for a request (DashScope: incremental or cumulative as asked)."""
        opts = self._options(started_at)
        opts.update(self.entry.parser_options(request))
        return self.entry.stream_parser(**opts)

    def _error(self, status: int, body: bytes, headers: httpx.Headers) -> ProviderError:
        message, parsed, request_id = _provider_message(body)
        request_id = request_id or _request_id(headers)
        cls: type[ProviderError]
        if status in (401, 403):
            cls = AuthenticationError
        elif status == 429:
            cls = RateLimitError
        elif status >= 500:
            cls = ServerError
        else:
            cls = BadRequestError
        return cls(message, provider=self.provider, status_code=status, body=parsed, request_id=request_id)

    def _failed(self, attempt: int, exc: httpx.HTTPError) -> float:
        """Seconds to wait before retrying a request that got no response (connection failure or
        timeout); raises when no retry is left."""
        if attempt < self.max_retries:
            return self._delay(attempt, None)
        if isinstance(exc, httpx.TimeoutException):
            raise APITimeoutError(f"no response: {_reason(exc)}", provider=self.provider) from exc
        raise APIConnectionError(f"connection failed: {_reason(exc)}", provider=self.provider) from exc

    def _unsendable(self) -> BadRequestError:
        """The request is no valid HTTP (a header value with leading or trailing whitespace): never retried,
        and said without httpx's message, which quotes the value (it may hold a key)."""
        return BadRequestError(
            "the request could not be sent: a header value is not valid HTTP (leading or trailing whitespace,"
            " a control character?): check headers=",
            provider=self.provider,
        )

    def _refused(self, attempt: int, response: httpx.Response, body: bytes) -> float:
        """Seconds to wait before retrying a request answered with an error status that is worth
        retrying; raises the provider's error otherwise."""
        if response.status_code < 400:
            raise self._redirected(response, body)
        if self._retryable(response.status_code, response.headers) and attempt < self.max_retries:
            return self._delay(attempt, response.headers)
        raise self._error(response.status_code, body, response.headers)

    def _redirected(self, response: httpx.Response, body: bytes) -> BadRequestError:
        """A 3xx: not followed (the API key would go along, and httpx makes a 301-303 POST a GET)."""
        location = response.headers.get("location")
        where = f" to {location}" if location else ""
        _message, parsed, body_id = _provider_message(body) if body else ("", None, None)
        return BadRequestError(
            f"the server redirects{where}: not followed (the API key would go along); set base_url to where the API is",
            provider=self.provider,
            status_code=response.status_code,
            body=parsed,
            request_id=body_id or _request_id(response.headers),
        )

    def _delay(self, attempt: int, headers: httpx.Headers | None) -> float:
        if headers is not None:
            wait = _retry_after(headers)
            if wait is not None and wait <= self.max_retry_after:
                return wait
        return float(min(8.0, self.backoff * (2**attempt)) * random.uniform(0.75, 1.0))

    @staticmethod
    def _retryable(status: int, headers: httpx.Headers | None = None) -> bool:
        """Whether a status is worth retrying: the server's ``x-should-retry: true|false`` first (OpenAI's and
        Anthropic's APIs may send it and their SDKs obey it), else 408, 409, 429, 5xx."""
        should = headers.get("x-should-retry", "").strip().lower() if headers is not None else ""
        if should in ("true", "false"):
            return should == "true"
        return status in _RETRY_STATUS or status >= 500

    def _body_broke(self, exc: httpx.HTTPError, response: httpx.Response) -> APIConnectionError:
        """A non-streaming reply whose body broke while read (a stall is a timeout)."""
        cls = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
        return cls(
            f"the response body broke: {_reason(exc)}",
            provider=self.provider,
            status_code=response.status_code,
            request_id=_request_id(response.headers),
        )

    def _too_big(self, response: httpx.Response, cap: int) -> BrokenStreamError:
        """A non-streaming reply longer than ``limits.max_bytes``: not read further."""
        return BrokenStreamError(
            f"the response body exceeds limits.max_bytes ({cap} bytes): not read further",
            provider=self.provider,
            status_code=response.status_code,
            request_id=_request_id(response.headers),
        )

    def _broken(self, message: str, stream: Any) -> BrokenStreamError:
        return BrokenStreamError(
            message,
            provider=self.provider,
            partial=stream.message,
            status_code=stream.status_code,
            request_id=stream.request_id,
        )


# ---- the event streams -------------------------------------------------------------------------------

_BODY_HEAD = 120  # bytes of a body that was no stream shown in the error


class _StreamState:
    def __init__(self, client: _Base, request: Any, raise_on_error: bool) -> None:
        self.client = client
        self.request = request
        self._raise = raise_on_error
        self.reducer = Reducer(name=client.name)
        self._message: Msg | None = None
        self._done = False
        self.error: str | None = None
        self._closing: list[dict[str, Any]] = []
        self.status_code: int | None = None  # the response's, once it came
        self.request_id: str | None = None  # the provider's request id (response header), once it came
        self._content_type: str | None = None
        self._body_head = b""  # the body's first bytes, to say what came when it was no stream at all
        self._parsed = False  # whether the parser made anything of the body before its closing events

    def _responded(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.request_id = _request_id(response.headers)
        self._content_type = response.headers.get("content-type")

    def _read(self, chunk: bytes, events: list[dict[str, Any]]) -> None:
        """A chunk of the body and the events the parser made of it."""
        if events:
            self._parsed = True
        if len(self._body_head) < _BODY_HEAD:
            self._body_head += chunk[: _BODY_HEAD - len(self._body_head)]

    @property
    def diagnostics(self) -> tuple[Problem, ...]:
        """The formatter's diagnostics for the request sent."""
        return tuple(self.request.diagnostics)

    @property
    def done(self) -> bool:
        """Whether the stream has ended (read whole, broken or cancelled): ``message`` is then final."""
        return self._done

    @property
    def message(self) -> Msg | None:
        """The reduced message once the stream has ended (INTERRUPTED when it was cut or cancelled).
        While it runs, a snapshot of the message so far (None before the reply began), which is the reply
        as it would stand were the stream cut there: its generate reason is INTERRUPTED (a missing one
        would read MODEL_STOP, a normal end that has not happened) unless an event already gave one.
        ``done`` tells a snapshot from the final message."""
        if self._done:
            return self._message
        snapshot = self.reducer.snapshot()
        if snapshot is not None:
            # A fresh message built for this call: setting a valid enum value needs no re-validation.
            snapshot.metadata.setdefault(METADATA_GENERATE_REASON, GenerateReason.INTERRUPTED.value)
        return snapshot

    def _feed(self, events: list[dict[str, Any]]) -> None:
        if events:
            self.reducer.feed_many(events, trusted=True)  # the stream parser's events: valid by construction

    def _end(self, parser: Any) -> None:
        msgs = self.reducer.finish()
        self._message = msgs[-1] if msgs else None
        self._done = True
        errors = parser.builder.errors
        if errors and self.error is None:
            self.error = str(errors[0].get("message"))
            rid = errors[0].get("request_id")  # a provider error's own (Anthropic, DashScope), when no header gave one
            if self.request_id is None and isinstance(rid, str) and rid:
                self.request_id = rid
            if not self._parsed and errors[0].get("type") == "incomplete_stream":
                # Nothing of the body was the provider's stream (a proxy's HTML page, nothing): say what came.
                shown = f"content-type {self._content_type}" if self._content_type else "no content-type"
                what = f"it starts {self._body_head!r}" if self._body_head else "it was empty"
                provider = self.client.provider
                article = "an" if provider[:1] in "aeiou" else "a"
                self.error += f" (the body is not {article} {provider} stream: {shown}, {what})"

    @staticmethod
    def _read_failed(parser: Any, exc: httpx.HTTPError) -> list[dict[str, Any]]:
        """The closing events of a stream whose body broke (read timeout or disconnect)."""
        if isinstance(exc, httpx.TimeoutException):
            return parser.error(_reason(exc), kind="timeout")  # type: ignore[no-any-return]
        return parser.error(f"the connection broke: {_reason(exc)}", kind="disconnect")  # type: ignore[no-any-return]

    def _cancelled(self, parser: Any) -> None:
        """The caller left (or cancelled) the stream: the message ends INTERRUPTED with what arrived."""
        self._closing = parser.error("cancelled by the caller", kind="cancelled")
        self._feed(self._closing)
        self._end(parser)

    def _closed(self, parser: Any) -> None:
        """After the closing events: the message is final; a broken stream raises (unless asked not to)."""
        self._end(parser)
        if self.error is not None and self._raise:
            raise self.client._broken(self.error, self)


class _Stop(Exception):
    """:meth:`EventStream.close` from another thread: the stream's loop ends quietly where it is."""


#: Seconds :meth:`EventStream.close` called from another thread waits, at most, for the reading thread to end
#: the stream.
CLOSE_WAIT = 10.0


class EventStream(_StreamState):
    """A streaming call: iterate it for AgentEvents as they arrive; ``message`` is the reduced Msg,
    ``request`` / ``diagnostics`` what the formatter built. Leaving early inside ``with`` (or calling
    ``close()``) cancels the call: the message keeps what arrived and is marked INTERRUPTED (a loop left
    without either keeps the connection until the stream is collected). ``close()`` from another thread (a
    GUI's stop button, a watchdog) while the loop runs stops it: the loop ends without error, the message
    INTERRUPTED with what arrived. A stream that breaks
    (disconnect, read timeout, provider error mid-stream) yields its closing events, then raises
    :class:`BrokenStreamError` whose ``partial`` is that message (``raise_on_error=False``: no raise)."""

    def __init__(self, client: Client, request: Any, raise_on_error: bool = True) -> None:
        super().__init__(client, request, raise_on_error)
        self._client = client
        self._gen: Generator[dict[str, Any], None, None] | None = None
        self._inner: Generator[dict[str, Any], None, None] | None = None  # _run(), each step taken under _running
        self._running = threading.Lock()  # held while a thread runs the stream (between two events it is free)
        self._stop = threading.Event()  # close() from another thread asked the loop to end
        self._lock = threading.Lock()
        self._net: Any = None  # the network stream being read (the headers, the body), for that close() to shut

    def __iter__(self) -> Generator[dict[str, Any], None, None]:
        if self._gen is None:
            self._inner = self._run()
            self._gen = self._guarded(self._inner)
        return self._gen

    def _guarded(self, inner: Generator[dict[str, Any], None, None]) -> Generator[dict[str, Any], None, None]:
        """The stream's events, each step taken under ``_running``: ``close()`` from another thread closes the
        stream itself between two events, and stops it while it runs."""
        try:
            while True:
                with self._running:
                    try:
                        event = next(inner)
                    except StopIteration:
                        return
                yield event
        finally:
            with self._running:
                inner.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, wait: float = CLOSE_WAIT) -> None:
        """Cancel (or finish) the call; the message is final afterwards. Called from another thread than the
        one iterating the stream (a GUI's stop button, a watchdog; a generator cannot be closed while it runs:
        that raised ValueError 'generator already executing' and the stream went on), it stops the loop where
        it is: the headers' wait (on a new connection), the body's read (the connection's socket shut down, the
        connection not reused) or a retry's wait is cut; between two events the stream is closed at once. The
        loop ends without error, the message INTERRUPTED with what arrived (none before any reply:
        ``until_done()`` says so). That ``close()`` returns once the stream has ended, or after ``wait`` seconds
        when the read cannot be cut (the headers awaited on a reused keep-alive connection: the loop then ends
        when they come); ``done`` tells."""
        if self._gen is None:
            self._gen = self._inner = _nothing_sync()  # never started: nothing was sent
            self._done = True
            return
        if self._running.acquire(blocking=False):  # not running (this thread's loop, or another's between events)
            self._close_here()
            return
        # another thread runs the stream: stop it there, and wait for it to end. Its step may have been yielding
        # an event as the stop came (past its last check) and its thread gone on without another step: once the
        # step is over, the stream is closed here as between two events.
        self._stop.set()
        with self._lock:
            _shut(self._net)
        if self._running.acquire(timeout=wait):
            self._close_here()

    def _close_here(self) -> None:
        """Close the stream in this thread, ``_running`` held (released here)."""
        assert self._inner is not None
        try:
            if inspect.getgeneratorstate(self._inner) == inspect.GEN_CREATED:  # never started: nothing was sent
                self._done = True
            self._inner.close()
        finally:
            self._running.release()

    def until_done(self) -> Msg:
        for _ in self:
            pass
        if self._message is None:  # closed before it started, or from another thread before any reply
            raise APIConnectionError("the stream was closed before any reply came", provider=self.client.provider)
        return self._message

    def _reading(self, net: Any) -> None:
        """The network stream now read (None: none), for close() from another thread to shut."""
        with self._lock:
            self._net = net
        if net is not None and self._stop.is_set():
            _shut(net)

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace: a new connection's network stream, while the request waits for its headers."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self._reading(info.get("return_value"))

    def _run(self) -> Generator[dict[str, Any], None, None]:
        started = time.monotonic()
        try:
            response = self._client._send(self.request, self)
        except _Stop:  # close() from another thread before any reply: ended quietly, no message
            self._done = True
            return
        except BaseException:  # refused, failed or cancelled before any reply: ended, no message
            self._done = True
            raise
        self._responded(response)
        parser = self.client.parser(self.request, started)
        closing: list[dict[str, Any]] = []
        try:
            try:
                self._reading(response.extensions.get("network_stream"))
                for chunk in response.iter_bytes():  # content-decoded (a gzipped stream)
                    events = parser.feed(chunk)
                    self._read(chunk, events)
                    if events:
                        self._feed(events)
                        for e in events:
                            self._check()
                            yield e
                self._check()  # (a socket shut down may read as the body's end)
                closing = parser.close()
            except httpx.HTTPError as exc:
                self._check()
                closing = self._read_failed(parser, exc)
        except (GeneratorExit, KeyboardInterrupt, _Stop) as exc:
            self._cancelled(parser)
            if isinstance(exc, _Stop):
                return
            raise
        finally:
            self._reading(None)
            response.close()
        self._closing = closing
        self._feed(closing)
        try:
            for e in closing:
                self._check()
                yield e
        except (GeneratorExit, KeyboardInterrupt, _Stop) as exc:  # left during the closing events: all arrived
            self._end(parser)
            if isinstance(exc, _Stop):
                return
            raise
        self._closed(parser)

    def _check(self) -> None:
        if self._stop.is_set():
            raise _Stop


def _nothing_sync() -> Generator[dict[str, Any], None, None]:
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


class AsyncEventStream(_StreamState):
    """The async :class:`EventStream`: ``async for event in stream``; cancelling the task (or leaving
    the loop) marks the message INTERRUPTED and keeps what arrived. ``aclose()`` from another task while
    the loop waits for the network stops it there: the loop ends (no error), the message INTERRUPTED."""

    def __init__(self, client: AsyncClient, request: Any, raise_on_error: bool = True) -> None:
        super().__init__(client, request, raise_on_error)
        self._client = client
        self._gen: AsyncGenerator[dict[str, Any], None] | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task waiting inside the stream for the network
        self._stopping = False  # aclose() from another task cancelled the reader
        self._ended: asyncio.Event | None = None  # set when the stream ends, for that aclose()

    def __aiter__(self) -> AsyncGenerator[dict[str, Any], None]:
        if self._gen is None:
            self._gen = self._run()
        return self._gen

    async def __aenter__(self) -> AsyncEventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

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
        async for _ in self:
            pass
        if self._message is None:  # closed before it started, or from another task before any reply
            raise APIConnectionError("the stream was closed before any reply came", provider=self.client.provider)
        return self._message

    def _stopped(self, exc: BaseException) -> bool:
        """Whether a cancellation is the one :meth:`aclose` made from another task, and no other (the loop then
        ends quietly; another cancellation goes on). Python 3.10 cannot tell them apart (no ``Task.uncancel``):
        the cancellation goes on there, never swallowed."""
        if not (self._stopping and isinstance(exc, asyncio.CancelledError)):
            return False
        uncancel = getattr(asyncio.current_task(), "uncancel", None)  # (Python 3.11+)
        return uncancel is not None and uncancel() == 0

    async def _run(self) -> AsyncGenerator[dict[str, Any], None]:
        try:
            started = time.monotonic()
            self._reader = asyncio.current_task()
            try:
                response = await self._client._send(self.request)
            except BaseException as exc:  # refused, failed or cancelled before any reply: ended, no message
                self._done = True
                if self._stopped(exc):
                    return
                raise
            finally:
                self._reader = None
            self._responded(response)
            parser = self.client.parser(self.request, started)
            closing: list[dict[str, Any]] = []
            try:
                try:
                    chunks = response.aiter_bytes()  # content-decoded (a gzipped stream)
                    while True:
                        self._reader = asyncio.current_task()
                        try:
                            chunk = await _once(_next(chunks))
                        finally:
                            self._reader = None
                        if chunk is None:
                            break
                        events = parser.feed(chunk)
                        self._read(chunk, events)
                        if events:
                            self._feed(events)
                            for e in events:
                                yield e
                    closing = parser.close()
                except httpx.HTTPError as exc:
                    closing = self._read_failed(parser, exc)
            except (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt) as exc:
                self._cancelled(parser)
                if self._stopped(exc):
                    return
                raise
            finally:
                await _release(response)
            self._closing = closing
            self._feed(closing)
            try:
                for e in closing:
                    yield e
            except (GeneratorExit, asyncio.CancelledError, KeyboardInterrupt):  # left during the closing events
                self._end(parser)
                raise
            self._closed(parser)

        finally:
            if self._ended is not None:  # (aclose() from another task waits for it)
                self._ended.set()


async def _nothing() -> AsyncGenerator[dict[str, Any], None]:
    return
    yield  # (an async generator that yields nothing)


# ---- clients ---------------------------------------------------------------------------------------


class Client(_Base):
    """A provider client over httpx (sync). ``provider`` is a registry name (``openai``, ``deepseek``,
    ``dashscope-compatible``, ``anthropic``, ``gemini``, ``dashscope``).

    ``api_key`` (default: the provider's usual environment variable), ``base_url`` (e.g. a proxy or a
    local server), ``model``, ``timeout`` (seconds or an ``httpx.Timeout``, default 600 s, 10 s to connect, or your
    ``http_client``'s own; a stream silent for longer breaks), ``max_retries`` (429, 408, 409, 5xx and connection failures before the stream starts, with
    exponential ``backoff`` honouring Retry-After up to ``max_retry_after`` seconds), ``name`` (the
    replies' agent name), ``http_client`` (your own ``httpx.Client``, e.g. with a mock transport)."""

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
        headers: Mapping[str, str] | None = None,
        format_options: FormatOptions | Mapping[str, Any] | None = None,
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
        )
        self._own = http_client is None
        self.http = http_client or httpx.Client(timeout=self.timeout or DEFAULT_TIMEOUT)

    def close(self) -> None:
        if self._own:
            self.http.close()

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
    ) -> EventStream:
        """Stream a reply: an :class:`EventStream` of AgentEvents (the request is sent when iterated)."""
        request = self.format(messages, stream=True, tools=tools, tool_choice=tool_choice, **params)
        return EventStream(self, request, raise_on_error)

    def send_stream(self, request: FormattedRequest, *, raise_on_error: bool = True) -> EventStream:
        """Stream the reply to an already formatted request (a ``FormattedRequest``)."""
        return EventStream(self, request, raise_on_error)

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

    def send(self, request: FormattedRequest) -> Msg:
        """The reply to an already formatted non-streaming request."""
        started = time.monotonic()
        response = self._send(request)
        cap = limits.max_bytes
        try:
            body = _read_sync(response, cap)
        except httpx.HTTPError as exc:
            raise self._body_broke(exc, response) from exc
        finally:
            response.close()
        if len(body) > cap:
            raise self._too_big(response, cap)
        return _parse_whole(self, request, body, started, response)

    def _send(self, request: Any, stream: EventStream | None = None) -> httpx.Response:
        """The response (2xx) after retries. For a ``stream``, its ``close()`` from another thread cuts the
        wait for the headers (a new connection's), an error body's read and a retry's wait: ``_Stop``."""
        url, headers, content = self._url(request), self._headers(request), request.body_bytes()
        extensions = {"trace": stream._trace} if stream is not None else None
        attempt = 0
        while True:
            if stream is not None:
                stream._check()
            try:
                response = self.http.send(
                    self.http.build_request(
                        "POST", url, headers=headers, content=content, timeout=self._timeout, extensions=extensions
                    ),
                    stream=True,
                    follow_redirects=False,  # the key would go along, to any host (httpx drops only Authorization)
                )
            except httpx.LocalProtocolError:
                raise self._unsendable() from None
            except httpx.HTTPError as exc:
                if stream is not None:
                    stream._reading(None)
                    stream._check()
                self._pause(self._failed(attempt, exc), stream)
                attempt += 1
                continue
            if response.status_code < 300:
                if stream is not None:
                    stream._reading(None)
                return response
            try:
                body = _read_sync(response, ERROR_BODY_MAX)[:ERROR_BODY_MAX]
            except httpx.HTTPError:
                body = b""
            finally:
                if stream is not None:
                    stream._reading(None)
                response.close()
            if stream is not None:
                stream._check()
            self._pause(self._refused(attempt, response, body), stream)
            attempt += 1

    @staticmethod
    def _pause(delay: float, stream: EventStream | None) -> None:
        """A retry's wait, cut by the stream's ``close()`` from another thread."""
        if stream is None:
            time.sleep(delay)
        elif stream._stop.wait(delay):
            raise _Stop


class AsyncClient(_Base):
    """The async :class:`Client` (``httpx.AsyncClient``): ``stream()`` gives an
    :class:`AsyncEventStream`, ``await call()`` the message."""

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
        headers: Mapping[str, str] | None = None,
        format_options: FormatOptions | Mapping[str, Any] | None = None,
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
        )
        self._own = http_client is None
        self.http = http_client or httpx.AsyncClient(timeout=self.timeout or DEFAULT_TIMEOUT)
        self._loop: asyncio.AbstractEventLoop | None = None  # the event loop the client's own pool runs on

    def _pool(self) -> httpx.AsyncClient:
        """The http client, for the running event loop. The client's own pool keeps connections alive, each
        bound to the loop it was opened on: an AsyncClient used again under a new loop (``asyncio.run()`` called
        twice, a notebook cell each) took a connection of the closed one and failed on a bare RuntimeError
        ('Event loop is closed'). Its own pool is then made anew (the old one's connections cannot be closed
        from another loop; they go with it); an ``http_client`` given is the caller's to manage."""
        loop = asyncio.get_running_loop()
        if self._own and self._loop is not None and self._loop is not loop and self._loop.is_closed():
            self.http = httpx.AsyncClient(timeout=self.timeout or DEFAULT_TIMEOUT)
        self._loop = loop
        return self.http

    async def aclose(self) -> None:
        if self._own:
            await self._pool().aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def stream(
        self,
        messages: Sequence[Msg],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        raise_on_error: bool = True,
        **params: Any,
    ) -> AsyncEventStream:
        """Stream the reply (an :class:`AsyncEventStream`: ``async with`` / ``async for``), as :meth:`Client.stream`."""
        request = self.format(messages, stream=True, tools=tools, tool_choice=tool_choice, **params)
        return AsyncEventStream(self, request, raise_on_error)

    def send_stream(self, request: FormattedRequest, *, raise_on_error: bool = True) -> AsyncEventStream:
        """Stream the reply to an already formatted request (a ``FormattedRequest``)."""
        return AsyncEventStream(self, request, raise_on_error)

    async def call(
        self,
        messages: Sequence[Msg],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Msg:
        """The reply, non-streaming, as :meth:`Client.call`."""
        return await self.send(self.format(messages, stream=False, tools=tools, tool_choice=tool_choice, **params))

    async def send(self, request: FormattedRequest) -> Msg:
        """The reply to an already formatted non-streaming request."""
        started = time.monotonic()
        response = await self._send(request)
        cap = limits.max_bytes
        try:
            body = await _read_async(response, cap)
        except httpx.HTTPError as exc:
            raise self._body_broke(exc, response) from exc
        finally:
            await _release(response)
        if len(body) > cap:
            raise self._too_big(response, cap)
        return _parse_whole(self, request, body, started, response)

    async def _send(self, request: Any) -> httpx.Response:
        url, headers, content = self._url(request), self._headers(request), request.body_bytes()
        http = self._pool()
        attempt = 0
        while True:
            try:
                response = await _once(
                    http.send(
                        http.build_request("POST", url, headers=headers, content=content, timeout=self._timeout),
                        stream=True,
                        follow_redirects=False,  # the key would go along, to any host (httpx drops only Authorization)
                    ),
                    _release,
                )
            except httpx.LocalProtocolError:
                raise self._unsendable() from None
            except httpx.HTTPError as exc:
                await asyncio.sleep(self._failed(attempt, exc))
                attempt += 1
                continue
            if response.status_code < 300:
                return response
            try:
                body = (await _read_async(response, ERROR_BODY_MAX))[:ERROR_BODY_MAX]
            except httpx.HTTPError:
                body = b""
            finally:
                await _release(response)
            await asyncio.sleep(self._refused(attempt, response, body))
            attempt += 1


_T = TypeVar("_T")


async def _once(step: Coroutine[Any, Any, _T], lost: Callable[[_T], Coroutine[Any, Any, None]] | None = None) -> _T:
    """``await step`` (httpx sending a request, or reading the body's next chunk) in a task of its own, which the
    caller's cancellation reaches once however many times the caller is cancelled, and which ends before the
    cancellation goes on. httpcore cleans up a cancelled request or read (closes the connection, gives its pool
    slot back) under anyio's shield, which asyncio's own ``Task.cancel()`` goes through: cancelled twice (a
    TaskGroup's and a timeout's, a user's twice), its cleanup was cut halfway and the connection stayed taken
    until the client was closed (the pool's last one taken: every later request waited out the pool timeout).
    ``lost``: what to do with a result that came as the caller was cancelled (a response: close it)."""
    inner = asyncio.ensure_future(step)
    try:
        return await asyncio.shield(inner)
    except asyncio.CancelledError:
        inner.cancel()
        while not inner.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(inner)
        if not inner.cancelled() and inner.exception() is None and lost is not None:
            await lost(inner.result())
        raise


async def _next(chunks: AsyncIterator[bytes]) -> bytes | None:
    """The next chunk of a body, None at its end."""
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        return None


async def _release(response: httpx.Response) -> None:
    """Close a response (its connection closed or back in the pool) even when the task is cancelled again
    while it closes (a second ``Task.cancel()``: a TaskGroup's and a timeout's, a user's twice): httpcore
    shields its close with anyio's shield, which asyncio's own cancellation goes through, and a close cut
    halfway kept the connection, its pool slot taken until the client was closed (the pool's last one
    taken: every later request waited out the pool timeout). The cancellation is raised once it is closed."""
    closing = asyncio.ensure_future(response.aclose())
    cancelled: asyncio.CancelledError | None = None
    while not closing.done():
        try:
            await asyncio.shield(closing)
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    closing.result()


def _read_sync(response: httpx.Response, cap: int) -> bytes:
    """The body (content-decoded), read no further than ``cap`` bytes and one chunk: longer is ``cap + 1``
    bytes or more."""
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > cap:
            break
    return bytes(body)


async def _read_async(response: httpx.Response, cap: int) -> bytes:
    """The async :func:`_read_sync`."""
    body = bytearray()
    chunks = response.aiter_bytes()
    while (chunk := await _once(_next(chunks))) is not None:
        body += chunk
        if len(body) > cap:
            break
    return bytes(body)


def _parse_whole(client: _Base, request: Any, body: bytes, started: float, response: httpx.Response) -> Msg:
    """A non-streaming reply: the message. A server that streams anyway (content-type text/event-stream: a
    proxy or a local server that ignores ``stream: false``) is read as the stream it is. A body that is a
    provider error, or that is not the provider's reply at all (an HTML page, nothing), raises
    :class:`BrokenStreamError` with the status, the request id and the body (its text when it is not JSON)."""
    where = {"provider": client.provider, "status_code": response.status_code}
    request_id = _request_id(response.headers)
    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    try:
        if content_type == "text/event-stream" and body.lstrip()[:1] not in (b"{", b"["):  # (a JSON reply: read as one)
            parser = client.parser(request, started)
            events = parser.feed(body) + parser.close()
        else:
            events = client.entry.response_events(body, **client._options(started))
    except ValidationError as exc:
        _message, parsed, body_id = _provider_message(body)
        raise BrokenStreamError(
            f"the response is not {client.provider}'s reply: {exc}",
            **where,
            body=parsed,
            request_id=body_id or request_id,
        ) from exc
    errors = [e["value"] for e in events if e["type"] == "CUSTOM" and e.get("name") == "agentmsg.error"]
    reducer = Reducer(name=client.name)
    reducer.feed_many(events, trusted=True)
    msg = reducer.finish()[0]
    if errors:
        _message, parsed, body_id = _provider_message(body)
        raise BrokenStreamError(
            str(errors[0].get("message")), **where, partial=msg, body=parsed, request_id=body_id or request_id
        )
    return msg


_TIMEOUTS = (
    (httpx.ConnectTimeout, "connect", "no connection within the connect timeout"),
    (httpx.ReadTimeout, "read", "no data within the read timeout"),
    (httpx.WriteTimeout, "write", "the request not sent within the write timeout"),
    (httpx.PoolTimeout, "pool", "no connection free in the pool within the pool timeout"),
)


def _reason(exc: Exception) -> str:
    """An httpx error's text, the same sync and async: a timeout says which one and its seconds (the async
    backend's timeouts have no text, the sync one's is the OS's: 'timed out', 'The read operation timed
    out'), another error its text, or its kind when it has none."""
    if isinstance(exc, httpx.TimeoutException):
        for cls, key, text in _TIMEOUTS:
            if isinstance(exc, cls):
                try:
                    seconds = exc.request.extensions.get("timeout", {}).get(key)
                except RuntimeError:  # (an error raised without its request)
                    seconds = None
                return f"{text} ({seconds:g} s)" if isinstance(seconds, (int, float)) else text
        return "timed out"
    return str(exc) or type(exc).__name__
