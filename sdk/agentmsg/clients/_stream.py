"""The state of a streamed reply, shared by the sync and async streams (which only do the IO around it): the
reducer fed with the parser's events, the snapshot while it runs, the closing events of a stream that broke or
was cancelled, and the :class:`~agentmsg.clients.BrokenStreamError` of a stream that broke."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import httpx

from agentmsg import GenerateReason, Msg, Problem, Reducer
from agentmsg.clients._errors import BrokenStreamError, reason, request_id
from agentmsg.message import METADATA_GENERATE_REASON
from agentmsg.providers import FormattedRequest

if TYPE_CHECKING:
    from agentmsg.clients._config import BaseClient
    from agentmsg.providers._response.parser import StreamParser

__all__ = ["StreamState", "abody_chunks", "body_chunks"]

_BODY_HEAD = 120  # bytes of a body that was no stream shown in the error


def body_chunks(response: httpx.Response) -> Iterator[bytes]:
    """The chunks of a response's body, content-decoded, as ``iter_bytes()`` gives them: ``iter_raw()`` when the
    response has no content encoding (and was not read already), which gives the same chunks without passing each
    through an identity decoder and a chunker of no size (0.28 -> 0.13 µs a chunk)."""
    if response.is_stream_consumed or "content-encoding" in response.headers:
        return response.iter_bytes()
    return response.iter_raw()


def abody_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """:func:`body_chunks` of an async response (``aiter_raw()`` or ``aiter_bytes()``)."""
    if response.is_stream_consumed or "content-encoding" in response.headers:
        return response.aiter_bytes()
    return response.aiter_raw()


class StreamState:
    """What a stream knows of its reply; :class:`~agentmsg.clients.ReplyStream` and
    :class:`~agentmsg.clients.AsyncReplyStream` read the body into it."""

    def __init__(self, client: BaseClient, request: FormattedRequest, raise_on_error: bool) -> None:
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
        self._heading = True  # _body_head holds fewer than _BODY_HEAD bytes
        self._parsed = False  # whether the parser made anything of the body before its closing events

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

    # ---- what the shells call, in this order -------------------------------------------------------------

    def _responded(self, response: httpx.Response) -> None:
        """The response came (a 2xx): its status, request id and content type."""
        self.status_code = response.status_code
        self.request_id = request_id(response.headers)
        self._content_type = response.headers.get("content-type")

    def _head_of(self, chunk: bytes) -> None:
        """Keep the body's first bytes (:data:`_BODY_HEAD`), to say what came when it was no stream at all. (The
        shells' loops feed each chunk's events to the reducer themselves and call this only while ``_heading``:
        a call per chunk cost about as much as what it did.)"""
        self._body_head += chunk[: _BODY_HEAD - len(self._body_head)]
        self._heading = len(self._body_head) < _BODY_HEAD

    def _read_failed(self, parser: StreamParser, exc: httpx.HTTPError) -> list[dict[str, Any]]:
        """The closing events of a stream whose body broke (read timeout or disconnect)."""
        if isinstance(exc, httpx.TimeoutException):
            return parser.error(reason(exc), kind="timeout")
        return parser.error(f"the connection broke: {reason(exc)}", kind="disconnect")

    def _closing_events(self, closing: list[dict[str, Any]]) -> None:
        """The closing events (the parser's end, or a broken stream's), fed before they are yielded."""
        self._closing = closing
        if closing:
            self.reducer.feed_many(closing, trusted=True)

    def _cancelled(self, parser: StreamParser) -> None:
        """The caller left (or cancelled) the stream: the message ends INTERRUPTED with what arrived."""
        self._closing_events(parser.error("cancelled by the caller", kind="cancelled"))
        self._end(parser)

    def _closed(self, parser: StreamParser) -> None:
        """After the closing events: the message is final; a broken stream raises (unless asked not to)."""
        self._end(parser)
        if self.error is not None and self._raise:
            raise self._broken(self.error)

    def _end(self, parser: StreamParser) -> None:
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
                shown = f"content-type {self._content_type}" if self._content_type else "no content-type"
                what = f"it starts {self._body_head!r}" if self._body_head else "it was empty"
                provider = self.client.provider
                article = "an" if provider[:1] in "aeiou" else "a"
                self.error += f" (the body is not {article} {provider} stream: {shown}, {what})"

    def _broken(self, message: str) -> BrokenStreamError:
        return BrokenStreamError(
            message,
            provider=self.client.provider,
            partial=self.message,
            status_code=self.status_code,
            request_id=self.request_id,
        )
