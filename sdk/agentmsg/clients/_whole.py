"""A non-streaming reply, read whole, into its message (no IO: the body's bytes and the response's status and
headers in, the message or the error out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from agentmsg import AssistantMessage, Msg, Reducer, ValidationError
from agentmsg.clients._errors import BrokenStreamError, json_bytes, provider_message, reason, request_id
from agentmsg.providers import FormattedRequest

if TYPE_CHECKING:
    from agentmsg.clients._config import BaseClient

__all__ = ["cut_stream", "read_whole"]


def read_whole(
    client: BaseClient, request: FormattedRequest, body: bytes, started: float, response: httpx.Response
) -> Msg:
    """The message of a non-streaming reply. A server that streams anyway (content-type text/event-stream: a
    proxy or a local server that ignores ``stream: false``) is read as the stream it is. A body that is a
    provider error, or that is not the provider's reply at all (an HTML page, nothing), raises
    :class:`BrokenStreamError` with the status, the request id and the body (its text when it is not JSON, read in
    its encoding as an error body is: :func:`~agentmsg.clients._errors.provider_message`). A JSON body in UTF-16 or
    UTF-32 is read as httpx's ``response.json()`` reads it (:func:`~agentmsg.clients._errors.json_bytes`)."""
    status = response.status_code
    header_id = request_id(response.headers)
    declared = response.headers.get("content-type")

    def not_a_reply(why: str) -> BrokenStreamError:
        _message, parsed, body_id = provider_message(body, content_type=declared)
        return BrokenStreamError(
            f"the response is not {client.provider}'s reply: {why}",
            provider=client.provider,
            status_code=status,
            body=parsed,
            request_id=body_id or header_id,
        )

    try:
        text = json_bytes(body)
    except UnicodeDecodeError as exc:
        raise not_a_reply(f"it is no {exc.encoding} text ({exc.reason} at byte {exc.start:,})") from exc
    try:
        if _streamed(response, text):
            parser = client.parser(request, started)
            events = parser.feed(text) + parser.close()
        else:
            # (with the options the request asks for: where its structured output is, say)
            options = {**client._options(started), **client.entry.parser_options(request)}
            events = client.entry.response_events(text, **options)
    except ValidationError as exc:
        raise not_a_reply(str(exc)) from exc
    errors = [e["value"] for e in events if e["type"] == "CUSTOM" and e.get("name") == "agentmsg.error"]
    messages = _reduced(client, events)
    if not messages:  # (a reply whose only choices are not the first: choices[0].index 1, say)
        raise not_a_reply("it has no first choice (index 0)")
    msg = messages[0]
    if errors:
        _message, parsed, body_id = provider_message(body, content_type=declared)
        raise BrokenStreamError(
            str(errors[0].get("message")),
            provider=client.provider,
            status_code=status,
            partial=msg,
            body=parsed,
            request_id=body_id or header_id,
        )
    return msg


def cut_stream(
    client: BaseClient, request: FormattedRequest, body: bytes, started: float, response: httpx.Response, exc: Exception
) -> BrokenStreamError | None:
    """A non-streaming reply the server streamed anyway (content-type text/event-stream, as :func:`read_whole` reads
    it: not a JSON reply so labelled) whose body broke off (``exc``) after ``body`` had arrived: the
    :class:`BrokenStreamError` a stream's break raises, its ``partial`` the message of what arrived (INTERRUPTED),
    closed as ``stream()`` closes a broken read (a timeout, a body that could not be decoded, a disconnect). None
    where no content came whole, and for any other body (a JSON reply cut short has no message): the caller raises
    what it raised."""
    from agentmsg.clients._stream import read_broke

    try:
        text = json_bytes(body)
    except UnicodeDecodeError:
        text = body  # (cut inside a character of UTF-16 or UTF-32: the stream reader says what it can)
    if not _streamed(response, text):
        return None
    parser = client.parser(request, started)
    messages = _reduced(client, parser.feed(text) + read_broke(parser, exc))
    if not messages or not messages[0].content:
        return None
    errors = parser.builder.errors
    return BrokenStreamError(
        str(errors[0].get("message")) if errors else f"the response body broke: {reason(exc)}",
        provider=client.provider,
        status_code=response.status_code,
        partial=messages[0],
        request_id=request_id(response.headers),
    )


def _streamed(response: httpx.Response, text: bytes) -> bool:
    """Whether a non-streaming reply's body is read as a stream: the server streamed anyway (content-type
    text/event-stream), and the body is no JSON reply so labelled (read as one)."""
    declared = response.headers.get("content-type") or ""
    return declared.split(";", 1)[0].strip().lower() == "text/event-stream" and text.lstrip()[:1] not in (b"{", b"[")


def _reduced(client: BaseClient, events: list[dict[str, Any]]) -> list[AssistantMessage]:
    """The messages of a reply's events (``Reducer(name=...)``, made as ``reduce_events`` makes it)."""
    reducer = Reducer._of(False, None, client.name)
    reducer.feed_many(events, trusted=True)
    return reducer.finish()
