"""The clients' exceptions, and which one a failure is (no IO: statuses, headers and bytes in, an exception out).

One small hierarchy under :class:`ProviderError` (an :class:`~agentmsg.AgentmsgError`), each carrying the
provider's own message and request id, read from any provider's error body: a JSON object (``error.message``,
``message``, ``msg``; a list around it), or an SSE error event, which some providers send with the status when
they refuse a streaming request.
"""

from __future__ import annotations

import base64
import codecs
import http
import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

import httpx
import orjson

from agentmsg._codec.jsontext import loads_bounded
from agentmsg._wire.sse import SSEDecoder
from agentmsg.clients._retry import header
from agentmsg.errors import AgentmsgError, one_line

__all__ = [
    "ERROR_BODY_MAX",
    "REDACTED",
    "APIConnectionError",
    "APITimeoutError",
    "AgentmsgError",
    "AuthenticationError",
    "BadRequestError",
    "BrokenStreamError",
    "ClientClosedError",
    "ProviderError",
    "RateLimitError",
    "Redactor",
    "ReplyTooLargeError",
    "ServerError",
    "client_closed",
    "closed_while_read",
    "credentials",
    "error_for_status",
    "json_bytes",
    "not_http",
    "provider_message",
    "reason",
    "request_id",
]

#: Bytes of an error response's body read: enough for any provider's error; the rest is not read (a hostile or
#: broken server's endless error page cannot fill the memory).
ERROR_BODY_MAX = 1 << 20


#: Characters of the provider's message an error's text shows (a traceback, a log line); ``.message`` keeps it whole.
MESSAGE_SHOWN = 2000


class ProviderError(AgentmsgError):
    """A provider call failed (an :class:`~agentmsg.AgentmsgError`). ``message`` is the provider's own message (from its error body when it
    sent one), ``status_code`` the HTTP status (None before any response), ``provider`` the registry
    name, ``body`` the parsed error body (or its text), ``request_id`` the provider's request id. The error's
    text (``str(error)``) shows the message's first :data:`MESSAGE_SHOWN` characters."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status_code: int | None = None,
        body: Any = None,
        request_id: str | None = None,
    ) -> None:
        self.message = message
        self.provider = provider
        self.status_code = status_code
        self.body = body
        self.request_id = request_id
        where = f"{provider} {status_code}" if status_code is not None else provider
        shown = (
            message if len(message) <= MESSAGE_SHOWN else f"{message[:MESSAGE_SHOWN]}... ({len(message):,} characters:"
        )
        if shown is not message:
            shown += " the whole in .message)"
        super().__init__(f"{where}: {shown}")

    def __reduce__(self) -> Any:
        # Exception's own reduce calls cls(*args), which lacks the keyword-only provider: a ProviderError
        # could not be pickled (a process pool, a task queue) nor copied.
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[ProviderError], args: tuple[Any, ...], state: dict[str, Any]) -> ProviderError:
    err = Exception.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class AuthenticationError(ProviderError):
    """401 / 403: the API key is missing, wrong or not allowed."""


class RateLimitError(ProviderError):
    """429 after the retries: too many requests or tokens."""


class BadRequestError(ProviderError):
    """400, 404, 409, 413, 422 ...: the provider refused the request itself (retrying will not help)."""


class ServerError(ProviderError):
    """5xx after the retries (a provider's own 5xx too, such as 529 overloaded), and a status of 600 to 999, no
    HTTP status, which RFC 9110 15 has a client take as a 5xx (its message says so)."""


class APIConnectionError(ProviderError):
    """No response: the connection failed (after the retries)."""


class APITimeoutError(APIConnectionError):
    """No response within the timeout (after the retries)."""


class ClientClosedError(ProviderError, RuntimeError):
    """The client is closed (``close()``, ``aclose()``), or the ``http_client`` given to it is: nothing is sent.
    A :class:`RuntimeError` too, as httpx's own error was."""


class BrokenStreamError(ProviderError):
    """The stream started, then broke: a disconnect, a read timeout, a provider error mid-stream, or an
    unreadable body. Nothing received is lost: ``partial`` is the message reduced from everything that
    arrived (generate reason INTERRUPTED), ``events`` the closing events that mark it."""

    def __init__(self, message: str, *, partial: Any = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.partial = partial


class ReplyTooLargeError(BrokenStreamError):
    """A reply longer than ``limits.max_bytes`` (``limit``, in bytes): not read further. A streamed reply
    keeps what arrived up to the limit: its events were yielded, ``partial`` is their message (INTERRUPTED,
    its ``agentmsg_errors`` holding an error of type ``too_large``, rule ``max-bytes``); a whole reply's
    ``partial`` is None (no part of a JSON body is a reply)."""

    #: the rule of the limit, as a :class:`~agentmsg.SizeLimitError` names it
    rule = "max-bytes"

    def __init__(self, message: str, *, limit: int, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.limit = limit


# ---- classification: which error a failure is -----------------------------------------------------------------


def status_class(status: int) -> type[ProviderError]:
    """The exception of an error status: 401 and 403 :class:`AuthenticationError`, 429 :class:`RateLimitError`,
    5xx :class:`ServerError` (and 600 to 999, no HTTP status: RFC 9110 15 has a client take it as a 5xx, as the
    openai and anthropic SDKs do), any other :class:`BadRequestError`."""
    if status in (401, 403):
        return AuthenticationError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ServerError
    return BadRequestError


#: The last HTTP status (RFC 9110 15: 100 to 599); a client takes one past it, 600 to 999, as a 5xx
_LAST_STATUS: Final = 599

#: Characters of a status line's reason phrase an error quotes, at most (the server's own words)
_PHRASE_SHOWN = 200


def status_phrase(status: int, given: str = "") -> str:
    """The reason phrase of a status: the response's own (``given``, its first :data:`_PHRASE_SHOWN` characters),
    else the standard one (HTTP/2 and a status line without one send none), else ``""`` (an unknown status)."""
    given = given.strip()
    if given:
        return given[:_PHRASE_SHOWN]
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def error_for_status(
    provider: str,
    status: int,
    body: bytes,
    headers: Mapping[str, str],
    broke: str | None = None,
    phrase: str = "",
) -> ProviderError:
    """The error of a response with an error status: its class from the status, the provider's message, the
    parsed body and the request id from the body or the headers. ``broke``: why the body's read failed (a
    disconnect, a body that could not be decoded), ``body`` what arrived before: the message says so. An empty
    body's message is the status's reason phrase (:func:`status_phrase` of ``phrase``, the response's own). A status
    past 599 (h11 reads any three digits) is no HTTP status: a :class:`ServerError`, its message saying why."""
    said = status_phrase(status, phrase)
    message, parsed, body_id = provider_message(
        body, empty=f"{said} {EMPTY_BODY}" if said else EMPTY_BODY, content_type=header(headers, "content-type")
    )
    if broke is not None:
        message += f" (the error body broke off after {len(body):,} bytes: {broke})"
    if status > _LAST_STATUS:
        message += (
            f" (status {status} is no HTTP status, which are 100 to {_LAST_STATUS}: taken as a server error, as"
            " RFC 9110 15 asks)"
        )
    return status_class(status)(
        message, provider=provider, status_code=status, body=parsed, request_id=body_id or request_id(headers)
    )


#: The statuses that redirect a request (RFC 9110 15.4): others of 3xx (304 say) are no redirect
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})


def redirected(provider: str, status: int, body: bytes, headers: Mapping[str, str]) -> BadRequestError:
    """A 3xx, which the clients never follow (the API key would go along, to any host; httpx makes a 301-303
    POST a GET)."""
    location = header(headers, "location")
    content_type = header(headers, "content-type")
    _message, parsed, body_id = provider_message(body, content_type=content_type) if body else ("", None, None)
    if location or status in _REDIRECTS:
        where = f" to {location}" if location else ""
        said = (
            f"the server redirects{where}: not followed (the API key would go along); set base_url to where the API is"
        )
    else:  # (304 Not Modified, 300 Multiple Choices without a location, ...: no reply, and nowhere to go)
        said = f"the server answered {status}, neither the reply nor a redirect: check base_url"
    return BadRequestError(
        said,
        provider=provider,
        status_code=status,
        body=parsed,
        request_id=body_id or request_id(headers),
    )


def unsendable(provider: str) -> BadRequestError:
    """A request that is no valid HTTP (a header value with leading or trailing whitespace): never retried, and
    said without the HTTP library's message, which quotes the value (it may hold a key)."""
    return BadRequestError(
        "the request could not be sent: a header value is not valid HTTP (leading or trailing whitespace,"
        " a control character?): check headers=",
        provider=provider,
    )


def client_closed(provider: str, by_client: bool) -> ClientClosedError:
    """A call on a closed client: ``by_client``, the client was closed; else its HTTP client (``http_client``)."""
    if by_client:
        return ClientClosedError("the client is closed: it sends nothing more (make a new one)", provider=provider)
    return ClientClosedError("the client's http_client is closed: it sends nothing more", provider=provider)


def closed_while_read(by_client: bool) -> str:
    """What a stream broken by its client's close says (the backend's words say only that the read failed: '[Errno
    9] Bad file descriptor'): ``by_client``, the client was closed; else its HTTP client (``http_client``)."""
    closed = "client" if by_client else "client's http_client"
    return f"the {closed} was closed while the stream was read"


def no_response(provider: str, exc: Exception) -> APIConnectionError:
    """A request that got no response after the retries: :class:`APITimeoutError` for a timeout."""
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"no response: {reason(exc)}", provider=provider)
    return APIConnectionError(f"connection failed: {reason(exc)}", provider=provider)


#: Characters of the HTTP parser's message an error of a response that is no valid HTTP quotes, at most
_NOT_HTTP_SHOWN = 200
#: The packages whose error says a response is no valid HTTP (httpcore's HTTP/1.1 and HTTP/2 parsers)
_HTTP_PARSERS = frozenset({"h11", "h2"})


def not_http(provider: str, exc: Exception) -> APIConnectionError | None:
    """The error of a response that is no valid HTTP: the HTTP parser's own error (h11's) behind httpx's
    RemoteProtocolError, such as a 101 Switching Protocols no request asked for, a head longer than the parser
    reads, a status line that is none, a bad Content-Length. That is the server's protocol error, not a network
    failure: a retry meets it again, so it is raised at once, saying what happened. None for any other failure
    (httpcore's own "Server disconnected without sending a response": a kept-alive connection the server closed,
    retried)."""
    if not isinstance(exc, httpx.RemoteProtocolError):
        return None
    # The parser's error, behind httpcore's (its pool re-raises that ``from None``: the context, not the cause)
    root: BaseException | None = exc
    while root is not None and type(root).__module__.partition(".")[0] not in _HTTP_PARSERS:
        root = root.__cause__ or root.__context__
    if root is None:
        return None
    text = str(root)[:_NOT_HTTP_SHOWN]
    if "_SWITCH_UPGRADE" in text:  # (h11's words for a 101 no request proposed)
        said = "the server answered 101 Switching Protocols (to a websocket, say), which the request did not ask for"
    elif getattr(root, "error_status_hint", None) == 431:  # (h11: "Receive buffer too long")
        said = f"the response's headers are longer than the HTTP library reads ({text})"
    else:
        said = f"the response is not valid HTTP ({text})"
    return APIConnectionError(f"{said}: not retried; check base_url", provider=provider)


def body_broke(provider: str, exc: Exception, status: int, headers: Mapping[str, str]) -> APIConnectionError:
    """A non-streaming reply whose body broke while it was read (a stall is a timeout)."""
    cls = APITimeoutError if isinstance(exc, httpx.TimeoutException) else APIConnectionError
    return cls(
        f"the response body broke: {reason(exc)}", provider=provider, status_code=status, request_id=request_id(headers)
    )


def too_big(provider: str, cap: int, status: int, headers: Mapping[str, str]) -> ReplyTooLargeError:
    """A non-streaming reply longer than ``limits.max_bytes``: not read further."""
    return ReplyTooLargeError(
        f"the response body exceeds limits.max_bytes ({cap} bytes): not read further",
        limit=cap,
        provider=provider,
        status_code=status,
        request_id=request_id(headers),
    )


#: The message of an error body with nothing in it but whitespace
EMPTY_BODY = "(empty body)"


#: A body's byte order marks and their encodings (UTF-32's before UTF-16's, whose mark begins UTF-32 LE's)
_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


#: Bytes of a body's start read for the NULs of UTF-16 or UTF-32 text without a byte order mark
_SNIFFED: Final = 16


def _sniffed(body: bytes) -> str:
    """The encoding the NULs of a body's first :data:`_SNIFFED` bytes show, with no byte order mark nor charset to
    say it: UTF-32 or UTF-16 of Latin-1 characters (each code unit's high bytes NUL, its low byte not: LE or BE by
    where they are; ``{"`` is ``{\\x00"\\x00`` in UTF-16-LE), else UTF-8 (JSON's, RFC 8259). A binary body's
    bytes (a protobuf's) or CJK text hold no such run: read as UTF-8, as before."""
    head = body[: min(_SNIFFED, len(body)) // 4 * 4]
    if len(head) < 4 or b"\x00" not in head:
        return "utf-8"
    units = [head[i : i + 4] for i in range(0, len(head), 4)]
    if all(u[1:] == b"\x00\x00\x00" and u[0] for u in units):
        return "utf-32-le"
    if all(u[:3] == b"\x00\x00\x00" and u[3] for u in units):
        return "utf-32-be"
    pairs = [head[i : i + 2] for i in range(0, len(head), 2)]
    if all(p[1] == 0 and p[0] for p in pairs):
        return "utf-16-le"
    if all(p[0] == 0 and p[1] for p in pairs):
        return "utf-16-be"
    return "utf-8"


def body_encoding(body: bytes, content_type: str | None) -> str:
    """The encoding of a body's text: its byte order mark's (which wins over any charset, as browsers read it),
    else the ``charset`` its Content-Type declares (one Python knows as a text encoding; UTF-16 or UTF-32 of no
    byte order told: the order of the NULs around its first characters, else big-endian, RFC 2781), else the one
    the NULs of its first bytes show (:func:`_sniffed`), else UTF-8."""
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return encoding
    sniffed = _sniffed(body)
    for param in (content_type or "").split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() != "charset":
            continue
        try:
            declared = codecs.lookup(value.strip().strip('"').strip())
        except LookupError:
            break  # (a charset Python does not know: as if none were declared)
        if not getattr(declared, "_is_text_encoding", True):
            break  # (base64, rot13, zlib: no text encoding)
        if declared.name in ("utf-16", "utf-32"):
            return sniffed if sniffed.startswith(declared.name + "-") else declared.name + "-be"
        return declared.name
    return sniffed


def json_bytes(body: bytes) -> bytes:
    """A 2xx body as the UTF-8 a JSON reader takes (a reply, a count): UTF-16 or UTF-32 when its byte order mark or
    the NULs of its first characters say so, a UTF-8 byte order mark dropped (:func:`body_encoding`, its
    Content-Type not read), as httpx's ``response.json()`` reads a body (Python's ``json`` sniffs it so), and so
    the openai and anthropic SDKs. A charset is not read: RFC 8259 11 defines none for JSON ("adding one really
    has no effect on compliant recipients"), and its text is UTF-8 (8.1). The body itself when it is UTF-8 (no
    copy); a body its encoding cannot decode raises :class:`UnicodeDecodeError` (nothing replaced)."""
    encoding = body_encoding(body, None)
    return body if encoding == "utf-8" else body.decode(encoding).encode()


def provider_message(
    body: bytes, *, empty: str = EMPTY_BODY, content_type: str | None = None
) -> tuple[str, Any, str | None]:
    """(message, parsed body, request id) of an error body, in any provider's shape: the parsed body is the
    JSON (or the SSE error event's JSON), else the body's text; ``empty`` the message of a body of nothing but
    whitespace. The body is read in its encoding (:func:`body_encoding`: its byte order mark, else the charset of
    ``content_type``, the response's Content-Type, else UTF-8); the message holds no control character raw
    (:func:`~agentmsg.errors.one_line`), the parsed body keeps them."""
    encoding = body_encoding(body, content_type)
    if encoding != "utf-8":  # (read as UTF-8 below: JSON, SSE and text alike)
        body = body.decode(encoding, "replace").encode("utf-8", "surrogatepass")
    try:
        parsed: Any = loads_bounded(body)
    except orjson.JSONDecodeError:
        parsed = _sse_error(body)
        if parsed is None:
            text = body.decode("utf-8", "replace").strip()
            return (one_line(text[:500]) or empty), text, None
    message: Any = None
    rid = None
    if isinstance(parsed, list) and parsed and isinstance(parsed[0], dict):
        parsed = parsed[0]  # (an error wrapped in a list)
    if isinstance(parsed, dict):
        err = parsed.get("error")
        if isinstance(err, dict):
            message = err.get("message") or err.get("status") or err.get("type")
        elif isinstance(err, str):
            message = err
        if message is None:
            message = parsed.get("message") or parsed.get("msg")
        value = parsed.get("request_id") or parsed.get("requestId")
        rid = value if isinstance(value, str) else None
    return one_line(str(message) if message else body.decode("utf-8", "replace")[:500]), parsed, rid


def _sse_error(body: bytes) -> Any:
    """The JSON of an error sent as an SSE event (``id:1 / event:error / :HTTP_STATUS/400 / data:{"code",
    "message", "request_id"}``, the status with it); None when the body's first event with data is none."""
    decoder = SSEDecoder()  # (the body is whole: its last event ends with it, blank line or not)
    for event in decoder.feed(body + b"\n\n"):
        if event.data:
            try:
                parsed = loads_bounded(event.data)
            except orjson.JSONDecodeError:
                return None
            return parsed if isinstance(parsed, (dict, list)) else None
    return None


#: Response headers that carry the provider's request id, before any other ``*-request-id``
_REQUEST_ID_HEADERS = ("x-request-id", "request-id")


def request_id(headers: Mapping[str, str]) -> str | None:
    """The provider's request id from response headers: ``x-request-id`` or ``request-id``, else the first header
    named ``*-request-id`` (a provider's own prefix)."""
    if type(headers) is httpx.Headers:
        # Each name every one of them ends with looked for in one pass over the raw headers first: most responses
        # carry none (httpx's two lookups and its items() cost about 10 us a response, on the path to a stream's
        # first event). Else httpx's own lookup, which ignores the case (a name it lacks not looked for again).
        if not any(name.lower().endswith(b"request-id") for name, _ in headers.raw):
            return None
        for name in _REQUEST_ID_HEADERS:
            value = headers.get(name)
            if value:
                return str(value)
    else:
        for name in _REQUEST_ID_HEADERS:
            value = header(headers, name)
            if value:
                return str(value)
    for name, value in headers.items():
        if value and name.lower().endswith("-request-id"):
            return str(value)
    return None


_TIMEOUTS = (
    (httpx.ConnectTimeout, "connect", "no connection within the connect timeout"),
    (httpx.ReadTimeout, "read", "no data within the read timeout"),
    (httpx.WriteTimeout, "write", "the request not sent within the write timeout"),
    (httpx.PoolTimeout, "pool", "no connection free in the pool within the pool timeout"),
)


def reason(exc: Exception) -> str:
    """An httpx error's text, the same sync and async: a timeout says which one and its seconds (the async
    backend's timeouts have no text, the sync one's is the OS's: 'timed out', 'The read operation timed
    out'), another error its text, else the first text of the errors it was raised from (the async backend's
    read error has none: '[Errno 104] Connection reset by peer' is the OS's error behind it, which the sync
    one says), else its kind. A text that is the network backend's own error (httpx's and httpcore's quote it)
    says the OS's words when an error of the OS is behind it (:func:`_os_words`). Behind a context its raiser
    hid (``raise ... from None``, which a traceback does not show) only an error of the OS is said: httpcore's
    pool hides the backend's error so, and anyio its own control flow (the IndexError of an empty read queue,
    under the ClosedResourceError of a stream closed as it was read: 'pop from an empty deque')."""
    if isinstance(exc, httpx.TimeoutException):
        for cls, key, text in _TIMEOUTS:
            if isinstance(exc, cls):
                try:
                    seconds = exc.request.extensions.get("timeout", {}).get(key)
                except RuntimeError:  # (an error raised without its request)
                    seconds = None
                return f"{text} ({seconds:g} s)" if isinstance(seconds, (int, float)) else text
        return "timed out"
    seen: set[int] = set()
    cause: BaseException | None = exc
    text = ""
    hidden = False  # (behind a context its raiser hid)
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if not hidden or isinstance(cause, OSError):
            text = text or _text_of(cause)
        if text and isinstance(cause, OSError) and type(cause).__module__ == "builtins":  # (the backend's error)
            return (_os_words(cause) if str(cause) == text else None) or text
        hidden = hidden or (cause.__cause__ is None and cause.__suppress_context__)
        cause = cause.__cause__ or cause.__context__
    return text or type(exc).__name__


def _text_of(exc: BaseException) -> str:
    """``str(exc)``, but for an OS error of no number (0: what an ``OSError(0, "")`` a backend raised says,
    ``[Errno 0] ``, no words at all): its text and file names without the number, else its kind
    (``ConnectionResetError``). An OS error of a number and no text (``[Errno 104] ``) is told by the OS's words for
    its number (:func:`_os_words`)."""
    if isinstance(exc, OSError) and len(exc.args) >= 2 and not exc.errno:
        if not (isinstance(exc.strerror, str) and exc.strerror.strip()):
            return type(exc).__name__
        return str(exc).removeprefix(f"[Errno {exc.errno}] ")
    return str(exc)


def _os_words(exc: OSError) -> str | None:
    """The OS's words for the first error of the OS from ``exc`` down the errors it was raised from (a group's
    first: the first address tried, the error the sync backend raises): ``[Errno N]`` and the OS's text of
    that number, as the sync backend says it. The async backend says 'All connection attempts failed' over
    it, and its own words in it ("[Errno 111] Connect call failed ('127.0.0.1', 8000)"): the sync one said
    '[Errno 111] Connection refused'. None when no such error is there (a name not resolved is
    ``socket.gaierror``'s, whose numbers are no OS error's: its text is said as it is)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        number = cause.errno if isinstance(cause, OSError) and type(cause).__module__ == "builtins" else None
        if isinstance(number, int) and number > 0:
            return f"[Errno {number}] {os.strerror(number)}"
        group = getattr(cause, "exceptions", None)  # (an exception group: its first)
        if isinstance(group, tuple) and group and isinstance(group[0], BaseException):
            cause = group[0]
        else:
            cause = cause.__cause__ or cause.__context__
    return None


# ---- the credentials a client holds: never in what it raises or says ------------------------------------------

#: What a credential is replaced by in an error's text and attributes
REDACTED = "[redacted]"

#: Request headers whose values are credentials (the API key as each provider sends it, and the caller's own
#: ``headers=`` of these names: a proxy's token, say)
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"}
)

#: Query parameters of a base URL whose values are credentials (``?key=`` as Google's APIs take the key)
CREDENTIAL_QUERY = frozenset({"key", "api_key", "api-key", "apikey", "access_token", "token"})

_CREDENTIAL_NAMES = CREDENTIAL_HEADERS | CREDENTIAL_QUERY

_PERCENT = re.compile(r"%[0-9A-F]{2}")

#: Characters a secret (its token, after a ``Bearer`` scheme) has at least for it to be redacted wherever it
#: occurs in a text. A provider's key has 30 or more; a shorter one is a local server's placeholder
#: (``api_key="EMPTY"``, ``"ollama"``, ``"x"``, ``"sk-1"``), whose letters are everywhere in a reply: replaced
#: anywhere, "What a nice day" would read "Wh[redacted]t [redacted] nice d[redacted]y" for the key ``a``. A
#: shorter secret is still redacted where a text names it as a credential (:class:`Redactor`), and where it is the
#: password or the user of a URL's userinfo (``https://user:KEY@host``).
FREE_TEXT_MIN = 8

#: A character a key may go on with: a secret found where one is named counts only when none follows it
#: (``x-api-key: EMPTY-2`` is another key, not ``EMPTY``)
_KEY_CHAR = r"[A-Za-z0-9_\-+/=~%]"


class _Piece(NamedTuple):
    """A regular expression (``full``) with one matching every start of what it matches (``starts``: the empty
    text included), the length of the longest text it matches and the characters it begins with (None: not
    known): what :meth:`Redactor.split` needs to know whether the end of a text may begin a credential. ``bare``
    is ``full`` without its named groups (None: it has none), what :attr:`starts` is made of (a group's name
    may be given once in a pattern; the starts repeat what comes before each piece)."""

    full: str
    starts: str
    longest: int
    first: frozenset[str] | None = None
    bare: str | None = None

    @property
    def plain(self) -> str:
        """:attr:`full` without its named groups."""
        return self.full if self.bare is None else self.bare

    def ahead(self) -> str:
        """A lookahead for :attr:`first` (the regex engine tries the rest only where one is: many times faster)."""
        return "" if self.first is None else f"(?=[{''.join(map(re.escape, sorted(self.first)))}])"

    @staticmethod
    def words(words: Iterable[str], *, ignore_case: bool = False) -> _Piece:
        """One of ``words``, literally."""
        ordered = sorted(set(words), key=len, reverse=True)
        heads = sorted({w[:k] for w in ordered for k in range(1, len(w) + 1)}, key=len, reverse=True)
        flags = "i:" if ignore_case else ":"
        first = {w[0] for w in ordered if w}
        return _Piece(
            f"(?{flags}{'|'.join(map(re.escape, ordered))})",
            f"(?{flags}{'|'.join(map(re.escape, heads))})?",
            max(map(len, ordered), default=0),
            frozenset(first | {c.swapcase() for c in first} if ignore_case else first),
        )

    @staticmethod
    def chars(cls: str, low: int, high: int) -> _Piece:
        """``low`` to ``high`` characters of the class ``cls``."""
        return _Piece(f"{cls}{{{low},{high}}}", f"{cls}{{0,{high}}}", high)

    @staticmethod
    def _made(full: str, starts: str, longest: int, first: frozenset[str] | None, bare: str) -> _Piece:
        return _Piece(full, starts, longest, first, None if bare == full else bare)

    @staticmethod
    def seq(*pieces: _Piece) -> _Piece:
        starts = "|".join("".join(p.plain for p in pieces[:i]) + pieces[i].starts for i in range(len(pieces)))
        return _Piece._made(
            "".join(p.full for p in pieces),
            f"(?:{starts})",
            sum(p.longest for p in pieces),
            pieces[0].first,
            "".join(p.plain for p in pieces),
        )

    @staticmethod
    def either(*pieces: _Piece) -> _Piece:
        return _Piece._made(
            f"(?:{'|'.join(p.full for p in pieces)})",
            f"(?:{'|'.join(p.starts for p in pieces)})",
            max(p.longest for p in pieces),
            None if any(p.first is None for p in pieces) else frozenset().union(*(p.first or () for p in pieces)),
            f"(?:{'|'.join(p.plain for p in pieces)})",
        )

    def optional(self) -> _Piece:
        return _Piece._made(f"(?:{self.full})?", self.starts, self.longest, None, f"(?:{self.plain})?")

    def named(self, name: str) -> _Piece:
        """This piece as the group ``name`` of a match."""
        return _Piece(f"(?P<{name}>{self.full})", self.starts, self.longest, self.first, f"(?:{self.plain})")

    def followed(self) -> _Piece:
        """This piece as a lookahead: what follows a match, not in it (its end still waited for in a stream)."""
        return _Piece._made(f"(?={self.full})", self.starts, self.longest, self.first, f"(?={self.plain})")

    @staticmethod
    def unless(cls: str) -> _Piece:
        """A negative lookahead for a character of the class ``cls``: none follows (in a stream, the end of what
        comes before it waited for, as its :attr:`starts` are; nothing more)."""
        return _Piece(f"(?!{cls})", "", 0)


_SPACE = _Piece.chars("[ \\t]", 0, 3)
_QUOTE = _Piece.seq(_Piece.chars(r"\\", 0, 3), _Piece.words(["'", '"']))  # (quoted, JSON-escaped once or more)
_SCHEME_GAP = _Piece.either(_Piece.chars("[ \\t]", 1, 3), _Piece.words(["%20", "+"]))
#: Where a text names what follows as a credential, the key then following: a credential header's value (``x-api-key:
#: KEY``, ``Authorization: Bearer KEY``, ``'x-goog-api-key': 'KEY'`` as a dict's repr shows it, ``"api-key": "KEY"``
#: in JSON, ``('cookie', 'KEY')`` in httpx's repr of repeated headers, ``x-api-key=KEY`` URL-encoded), a credential
#: query parameter's (``?key=KEY``, ``&api_key=KEY``), a ``Bearer`` or ``Basic`` token
_NAMED = _Piece.either(
    _Piece.seq(
        _Piece.words(CREDENTIAL_HEADERS, ignore_case=True),
        _Piece.either(
            _Piece.seq(_QUOTE, _SPACE, _Piece.words([":", "=", ","]), _SPACE, _QUOTE.optional()),
            _Piece.seq(_SPACE, _Piece.words([":", "="]), _SPACE, _QUOTE.optional()),
        ),
        _Piece.seq(_Piece.words(["bearer", "basic"], ignore_case=True), _SCHEME_GAP).optional(),
    ),
    _Piece.seq(_Piece.words("?&;"), _Piece.words(CREDENTIAL_QUERY, ignore_case=True), _Piece.words("=")),
    _Piece.seq(_Piece.words(["Bearer", "Basic"]), _SCHEME_GAP),
)
#: Where a URL's userinfo begins (``//``, JSON-escaped ``\/\/``), and the characters of its user and its password
#: (RFC 3986: unreserved, percent-encoded, sub-delims; ``:`` in the password), up to 64 each
_AUTHORITY = _Piece.words(["//", "\\/\\/"])
_USER = _Piece.chars(r"[A-Za-z0-9\-._~%!$&'()*+,;=]", 0, 64)
_PASSWORD = _Piece.chars(r"[A-Za-z0-9\-._~%!$&'()*+,;=:]", 0, 64)
_COLON, _AT = _Piece.words(":"), _Piece.words("@")


def _named_key(key: _Piece) -> _Piece:
    """``key`` where a text names it as a credential (:data:`_NAMED` before it, the group ``named``; the group
    ``key``), when no key character follows it (``x-api-key: EMPTY-2`` is another key, not ``EMPTY``)."""
    return _Piece.seq(_NAMED.named("named"), key.named("key"), _Piece.unless(_KEY_CHAR))


def _userinfo(key: _Piece) -> _Piece:
    """A URL's userinfo with ``key`` in it, up to its ``@`` (not in the match): ``key`` as its password (the group
    ``user`` before it; :meth:`Redactor._replace` redacts that too when a credential), else as its user (any
    password after it, redacted in its turn); the group ``authority`` the ``//`` before."""
    return _Piece.seq(
        _AUTHORITY.named("authority"),
        _Piece.either(
            _Piece.seq(_USER.named("user"), _COLON, key, _AT.followed()),
            _Piece.seq(key, _Piece.seq(_Piece.seq(_COLON, _PASSWORD).optional(), _AT).followed()),
        ),
    )


#: The marker put in a credential's place (a text redacted again keeps it as it is)
_MARKER = _Piece.words([REDACTED])
#: Where the marker, a named place or a userinfo may begin: one test before the three (where none may, as in most of
#: a text, the one test)
_PLACES_AHEAD = _Piece.either(_MARKER, _NAMED, _AUTHORITY).ahead()
#: A body's value under a credential's name: the key, after a scheme or not
_SCHEME = _Piece.seq(_Piece.words(["bearer", "basic"], ignore_case=True), _SCHEME_GAP).optional()


def _tail(place: _Piece) -> tuple[re.Pattern[str], int]:
    """The end of a streamed text from where ``place`` may begin, or its match still change (a longer form, the
    character after it): a pattern (its first character known, so never the empty end), and the characters from
    the end within which it may match."""
    return re.compile(f"{place.ahead()}{place.starts}\\Z"), place.longest + 1


#: The tails of a text when no key is short (replaced only where named): a marker, or the name before a credential
_TAILS: tuple[tuple[re.Pattern[str], int], ...] = (_tail(_Piece.either(_MARKER, _NAMED)),)
#: The marker's tail, apart from the name's when a short key's tail has its name before it (not searched twice)
_MARKER_TAIL = _tail(_MARKER)


def credentials(api_key: str | None, headers: Mapping[str, str], url: str) -> list[str]:
    """The credentials a client sends: its API key, the values of its ``headers`` named in
    :data:`CREDENTIAL_HEADERS` (and the token after a scheme, ``Bearer ...``), the password of its base URL's
    userinfo (and the basic auth token httpx makes of it), the values of its base URL's query parameters named
    in :data:`CREDENTIAL_QUERY`."""
    found = [api_key] if api_key else []
    for name, value in headers.items():
        if isinstance(name, str) and name.lower() in CREDENTIAL_HEADERS and isinstance(value, str) and value.strip():
            found.append(value.strip())
            scheme, _, token = value.strip().partition(" ")
            if token.strip() and scheme.isalpha():
                found.append(token.strip())
    try:
        parts = urllib.parse.urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:  # (a URL urllib cannot split: no userinfo read)
        user = password = None
    if password:  # (httpx sends the userinfo as basic auth: the password, unquoted, and the token)
        plain = urllib.parse.unquote(password)
        found += [password, plain]
        found.append(base64.b64encode(f"{urllib.parse.unquote(user or '')}:{plain}".encode()).decode())
    _, _, query = url.partition("?")
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=False):
        if name.lower() in CREDENTIAL_QUERY and value:
            found.append(value)
    return found


def _forms(secret: str) -> set[str]:
    """The ways a server may echo a secret back: as sent, URL-encoded (either case of hex digits, ``+`` or
    ``%20`` for a space), JSON-escaped (once or twice, ``\\/`` too), as Python shows it in a repr."""
    forms = {secret, urllib.parse.quote(secret), urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    for escaped in (json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
        forms.update((escaped, escaped.replace("/", "\\/"), json.dumps(escaped)[1:-1]))
    forms.update((repr(secret)[1:-1], repr(secret.encode())[2:-1]))
    forms.update([_PERCENT.sub(lambda m: m[0].lower(), f) for f in forms])
    return {f for f in forms if f}


class Redactor:
    """Replaces the credentials a client holds (any form a server may echo them in: see :func:`_forms`) with
    :data:`REDACTED`: in a text (``redactor(text)``), a parsed body (:meth:`value`), an exception and the ones
    it was raised from (:meth:`error`), a text shown as it streams (:meth:`split`).

    Where a text names a credential (:data:`_NAMED`: after a :data:`CREDENTIAL_HEADERS` name, ``x-api-key: KEY``,
    ``'authorization': 'Bearer KEY'``, ``"x-goog-api-key": "KEY"``, ``x-api-key=KEY``; after a
    :data:`CREDENTIAL_QUERY` name, ``?key=KEY``, ``&api_key=KEY``; after ``Bearer`` or ``Basic``), the key is
    replaced whatever its length, when no key character follows it (``x-api-key: [redacted]``); so in a parsed
    body, a string value of a key so named (``{"x-api-key": "[redacted]"}``); so the password or the user of a
    URL's userinfo, the ``@`` after it (``https://u:[redacted]@h``, ``https://[redacted]@h``,
    ``https://[redacted]:pw@h``). Anywhere else in a text, a secret is replaced only when it (its token, after a
    scheme) has :data:`FREE_TEXT_MIN` characters or more: the key ``a`` of a local server leaves "What a nice day"
    as it is.

    One pass: the marker, the named places and the free forms in one alternation (the longest form first), a
    :data:`REDACTED` already in the text kept as it is, so that a text redacted again (an error's message inside
    another's) reads the same, never ``[redac[redacted]ed]``."""

    __slots__ = ("_field", "_free", "_once", "_short", "_tails")

    def __init__(self, secrets: Iterable[str]) -> None:
        short: set[str] = set()
        free: set[str] = set()
        for secret in secrets:
            if secret:
                scheme, _, token = secret.partition(" ")
                long = len(token.strip() if scheme.isalpha() and token.strip() else secret) >= FREE_TEXT_MIN
                (free if long else short).update(_forms(secret))
        #: The forms of the secrets replaced anywhere, the longest first (they are replaced where named too)
        self._free = tuple(sorted(free, key=len, reverse=True))
        # (the marker first: where it begins, it is taken whole, and no form is looked for inside it)
        alternatives = [re.escape(REDACTED)]
        #: The end of a streamed text from where a match may begin, or end (the key's next character tells):
        #: a pattern, and the characters from the end within which it may match
        self._tails = _TAILS
        self._field: re.Pattern[str] | None = None
        #: The forms of the secrets replaced only where named (a URL's user is one when it is one of these whole)
        self._short = frozenset(short)
        if short:
            key = _Piece.words(short)
            named, userinfo = _named_key(key), _userinfo(key)
            alternatives = [f"{_PLACES_AHEAD}(?:{alternatives[0]}|{named.full}|{userinfo.full})"]
            self._tails = (_MARKER_TAIL, _tail(named), _tail(userinfo))
            self._field = re.compile(f"(?P<named>{_SCHEME.full})(?P<key>{key.full})")
        alternatives += map(re.escape, self._free)
        self._once = re.compile("|".join(alternatives)) if short or free else None

    def _replace(self, match: re.Match[str]) -> str:
        groups = match.groupdict()  # (no groups: no short key at all)
        named = groups.get("named")
        if named is not None:
            return named + REDACTED
        authority = groups.get("authority")
        if authority is None:  # (the marker, or a free form)
            return REDACTED
        user = groups["user"]
        if user is None:  # (the key as the user)
            return authority + REDACTED
        return f"{authority}{REDACTED if user in self._short else self(user)}:{REDACTED}"

    def split(self, text: str) -> tuple[str, str]:
        """``text`` as it may be shown now, redacted, and what must wait for the text after it (text shown as it
        streams: a key, or the name before it, split across two pieces): its end from where a credential may
        begin or a match may still change (a longer form, the character after a named key)."""
        pattern = self._once
        if pattern is None:
            return text, ""
        cut = len(text)
        for tail, reach in self._tails:
            start = tail.search(text, max(0, len(text) - reach))
            if start is not None:
                cut = min(cut, start.start())
        for form in self._free:  # (a secret's form begun at the end: its longest start, in plain string tests)
            for k in range(min(len(form) - 1, len(text)), len(text) - cut, -1):
                if text.endswith(form[:k]):
                    cut = len(text) - k
                    break
        out: list[str] = []
        pos = 0
        for match in pattern.finditer(text):  # (a match that begins before the cut is known whole: shown whole)
            if match.start() >= cut:
                break
            out += (text[pos : match.start()], self._replace(match))
            pos = match.end()
            cut = max(cut, pos)
        out.append(text[pos:cut])
        return "".join(out), text[cut:]

    def __bool__(self) -> bool:
        return self._once is not None

    def __call__(self, text: str) -> str:
        pattern = self._once
        return text if pattern is None else pattern.sub(self._replace, text)

    def value(self, value: Any) -> Any:
        """A parsed body (JSON values, nested at will) with its strings redacted, keys included; the same
        object when nothing in it is a credential."""
        if self._once is None:
            return value
        if isinstance(value, str):
            return self(value)
        if not isinstance(value, (dict, list)):
            return value
        root: Any = {} if isinstance(value, dict) else []
        stack: list[tuple[Any, Any]] = [(value, root)]  # (iterative: a body may be nested 1,000 deep)
        while stack:
            source, target = stack.pop()
            items = source.items() if isinstance(source, dict) else enumerate(source)
            for key, item in items:
                if isinstance(item, (dict, list)):
                    copy: Any = {} if isinstance(item, dict) else []
                    stack.append((item, copy))
                    item = copy
                elif isinstance(item, str):
                    item = self._named(key, item) if isinstance(target, dict) else self(item)
                if isinstance(target, dict):
                    target[self(key) if isinstance(key, str) else key] = item
                else:
                    target.append(item)
        return root

    def _named(self, name: Any, text: str) -> str:
        """A body's string ``text`` under the key ``name``: the key alone (after a scheme) when ``name`` names a
        credential (``{"x-api-key": KEY}``), whatever its length; otherwise as any text."""
        if self._field is not None and isinstance(name, str) and name.lower() in _CREDENTIAL_NAMES:
            whole = self._field.fullmatch(text)
            if whole is not None:
                return whole["named"] + REDACTED
        return self(text)

    def error(self, exc: BaseException) -> BaseException:
        """``exc`` with every credential redacted, in place: its text (``args``), and a
        :class:`ProviderError`'s ``message``, ``body`` and ``request_id``; so for the exceptions it was raised
        from (``__cause__``, ``__context__``), whose texts a traceback shows."""
        if self._once is None:
            return exc
        seen: set[int] = set()
        todo: BaseException | None = exc
        while todo is not None and id(todo) not in seen:
            seen.add(id(todo))
            todo.args = tuple(self.value(a) if isinstance(a, (str, dict, list)) else a for a in todo.args)
            if isinstance(todo, ProviderError):
                todo.message = self(todo.message)
                todo.body = self.value(todo.body)
                if todo.request_id is not None:
                    todo.request_id = self(todo.request_id)
            todo = todo.__cause__ or todo.__context__
        return exc
