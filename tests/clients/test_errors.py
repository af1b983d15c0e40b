"""The clients' errors without HTTP (``clients/_errors.py``): which class a failure is (status to class, no
response, a redirect), the provider's message and request id from each provider's error body, and the one root
of every exception the SDK defines."""

from __future__ import annotations

import builtins
import errno
import itertools
import os
import socket
from typing import Any

import anyio
import httpcore
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmsg.clients import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agentmsg.clients._errors import (
    error_for_status,
    no_response,
    provider_message,
    reason,
    redirected,
    request_id,
    status_class,
)
from tests._support.budget import examples

# ---- classification of a failure -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, BadRequestError),
        (409, BadRequestError),
        (413, BadRequestError),
        (422, BadRequestError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
        (529, ServerError),
    ],
)
def test_an_error_status_is_its_class(status: int, cls: type[ProviderError]) -> None:
    assert status_class(status) is cls
    err = error_for_status("openai", status, b'{"error": {"message": "no"}}', {})
    assert type(err) is cls and (err.status_code, err.message, err.provider) == (status, "no", "openai")


#: Error bodies as each provider sends them: (body, message, parsed body's key to check, request id)
ERROR_BODIES = {
    "openai": (
        b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": null}}',
        "Incorrect API key provided",
        None,
    ),
    "anthropic": (
        b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_01"}',
        "Overloaded",
        "req_01",
    ),
    "gemini (a list)": (
        b'[{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}]',
        "API key not valid.",
        None,
    ),
    "gemini (status only)": (b'{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}', "RESOURCE_EXHAUSTED", None),
    "dashscope": (
        b'{"code": "InvalidApiKey", "message": "Invalid API-key provided.", "request_id": "6f3c"}',
        "Invalid API-key provided.",
        "6f3c",
    ),
    "dashscope (SSE)": (
        b'id:1\nevent:error\n:HTTP_STATUS/400\ndata:{"request_id":"req-1","code":"Arrearage","message":"Access'
        b' denied."}\n\n',
        "Access denied.",
        "req-1",
    ),
    "SSE without its blank line": (b'event:error\r\ndata:{"message":"no blank line"}', "no blank line", None),
    "a string error": (b'{"error": "model not found"}', "model not found", None),
    "msg": (b'{"msg": "busy", "requestId": "r9"}', "busy", "r9"),
}


@pytest.mark.parametrize("name", list(ERROR_BODIES))
def test_the_providers_message_and_request_id_from_its_error_body(name: str) -> None:
    body, message, rid = ERROR_BODIES[name]
    got, parsed, body_id = provider_message(body)
    assert (got, body_id) == (message, rid)
    assert isinstance(parsed, dict)
    err = error_for_status("p", 400, body, httpx.Headers({"x-request-id": "from-header"}))
    assert err.message == message and err.request_id == (rid or "from-header") and err.body == parsed


@pytest.mark.parametrize(
    ("body", "message", "parsed"),
    [
        (b"<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"),
        (b"", "(empty body)", ""),
        (b"data: not json\n\n", "data: not json", "data: not json"),
        (b"x" * 5000, "x" * 500, "x" * 5000),
        (b'{"unexpected": 1}', '{"unexpected": 1}', {"unexpected": 1}),
    ],
)
def test_a_body_of_no_known_shape_is_said_as_its_text(body: bytes, message: str, parsed: object) -> None:
    assert provider_message(body) == (message, parsed, None)


@pytest.mark.parametrize(
    ("headers", "rid"),
    [
        ({"x-request-id": "a", "request-id": "b"}, "a"),
        ({"Request-Id": "b"}, "b"),
        ({"x-vendor-request-id": "c", "content-type": "x"}, "c"),
        ({"request-id": "b", "x-vendor-request-id": "c"}, "b"),
        ({"x-request-id": "", "x-vendor-request-id": "c"}, "c"),
        ({"content-type": "application/json"}, None),
    ],
)
def test_the_request_id_from_the_response_headers(headers: dict[str, str], rid: str | None) -> None:
    assert request_id(headers) == rid == request_id(httpx.Headers(headers))


def _request_id_the_long_way(headers: Any) -> str | None:
    """The request id as the client read it before one pass: each name looked for over every header."""
    for name in ("x-request-id", "request-id"):
        value = headers.get(name)
        if value is None:
            value = next((v for k, v in headers.items() if k.lower() == name), None)
        if value:
            return str(value)
    return next((str(v) for k, v in headers.items() if v and k.lower().endswith("-request-id")), None)


_NAMES = st.sampled_from(
    [
        "x-request-id",
        "X-Request-Id",
        "request-id",
        "Request-ID",
        "cf-request-id",
        "x-amzn-Request-Id",
        "date",
        "request-idx",
        "-request-id",
    ]
)


@pytest.mark.no_kernel
@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(_NAMES, st.sampled_from(["", "a", "b", "c"])), max_size=6))
def test_the_request_id_is_read_in_one_pass_as_it_was(pairs: list[tuple[str, str]]) -> None:
    """One pass over the headers (about 11 us less a response that names no request id) finds what looking for
    each name over every header found: in a plain mapping and in httpx's, which joins repeated names."""
    plain = dict(pairs)
    assert request_id(plain) == _request_id_the_long_way(plain)
    headers = httpx.Headers(pairs)
    assert request_id(headers) == _request_id_the_long_way(headers)


def test_a_redirect_no_response_and_their_texts() -> None:
    err = redirected("p", 307, b"", httpx.Headers({"Location": "https://elsewhere/v1"}))
    assert isinstance(err, BadRequestError) and err.status_code == 307
    assert "redirects to https://elsewhere/v1: not followed (the API key would go along)" in err.message
    assert redirected("p", 301, b"Moved", {}).body == "Moved"
    # (a 304 was said to redirect, to nowhere)
    for status in (304, 300):
        other = redirected("p", status, b"", {})
        assert other.message == f"the server answered {status}, neither the reply nor a redirect: check base_url"
        assert isinstance(other, BadRequestError) and other.status_code == status
    assert "redirects: not followed" in redirected("p", 308, b"", {}).message
    request = httpx.Request("POST", "http://x", extensions={"timeout": {"read": 0.3, "connect": 2.0}})
    timeout = no_response("p", httpx.ReadTimeout("", request=request))
    assert type(timeout) is APITimeoutError
    assert timeout.message == "no response: no data within the read timeout (0.3 s)"
    assert reason(httpx.ConnectTimeout("timed out", request=request)) == (
        "no connection within the connect timeout (2 s)"
    )
    assert reason(httpx.PoolTimeout("")) == "no connection free in the pool within the pool timeout"
    refused = no_response("p", httpx.ConnectError("[Errno 111] Connection refused"))
    assert (
        type(refused) is APIConnectionError and refused.message == "connection failed: [Errno 111] Connection refused"
    )
    assert reason(httpx.RemoteProtocolError("")) == "RemoteProtocolError"


def _raised(*chain: BaseException) -> Exception:
    """The first of ``chain``, each raised from the next (as httpx's error from httpcore's from the backend's)."""
    for outer, inner in itertools.pairwise(chain):
        outer.__cause__ = inner
    assert isinstance(chain[0], Exception)
    return chain[0]


def test_a_network_error_says_the_oss_words_where_the_backends_error_has_them() -> None:
    """The async backend's connect error says 'All connection attempts failed' over the OS's error (the only
    address's, or a group of each address's), itself in asyncio's words; the sync backend's is the OS's own. The
    text said is '[Errno N]' and the OS's text of N where the backend's error has an OS error behind it; any
    other text is said as it is."""
    refused = errno.ECONNREFUSED
    words = f"[Errno {refused}] {os.strerror(refused)}"

    def connect_error(*behind: BaseException) -> Exception:
        text = str(behind[0])
        return _raised(httpx.ConnectError(text), httpcore.ConnectError(text), *behind)

    def all_failed(behind: BaseException) -> Exception:
        return connect_error(OSError("All connection attempts failed"), behind)

    assert reason(all_failed(OSError(refused, "Connect call failed ('127.0.0.1', 8000)"))) == words
    group = getattr(builtins, "ExceptionGroup", None)  # (Python 3.11+; anyio uses a backport before)
    if group is not None:  # (each address's error: the first one's said, as the sync backend raises it)
        tried = [OSError(refused, "Connect call failed ('::1', 8000, 0, 0)"), OSError(errno.ENETUNREACH, "...")]
        assert reason(all_failed(group("multiple connection attempts failed", tried))) == words
    assert reason(connect_error(ConnectionRefusedError(refused, os.strerror(refused)))) == words  # (the sync one)
    # the async backend's read error has no text: the OS's error behind it says what happened
    assert reason(_raised(httpx.ReadError(""), httpcore.ReadError(""), ConnectionResetError(104, "reset"))) == (
        f"[Errno 104] {os.strerror(104)}"
    )
    # no OS error behind, or one behind another text: that text, as it is
    assert reason(connect_error(OSError("All connection attempts failed"))) == "All connection attempts failed"
    unresolved = socket.gaierror(-2, "Name or service not known")
    assert reason(connect_error(unresolved)) == "[Errno -2] Name or service not known"
    gone = "Server disconnected without sending a response."
    assert reason(_raised(httpx.RemoteProtocolError(gone), BrokenPipeError(32, "Broken pipe"))) == gone
    assert reason(_raised(httpx.ReadError(""), OSError(), OSError(5, "said"))) == f"[Errno 5] {os.strerror(5)}"


def test_an_os_error_of_no_number_and_no_words_is_said_by_its_kind() -> None:
    """An OS error of number 0 and no text (``OSError(0, "")``, as a backend may raise one) was said as
    '[Errno 0] ': 'the connection broke: [Errno 0] '. Its text is said when it has one, else its kind; an error
    of a number and no text is said in the OS's words for the number, as before."""
    assert reason(OSError(0, "")) == "OSError"
    assert reason(_raised(httpx.ReadError(""), httpcore.ReadError(""), ConnectionResetError(0, ""))) == (
        "ConnectionResetError"
    )
    assert reason(_raised(httpx.ReadError(""), ConnectionResetError(0, "reset by the proxy"))) == "reset by the proxy"
    assert reason(_raised(httpx.ReadError(""), OSError(0, " "))) == "OSError"
    assert reason(_raised(httpx.ReadError(""), OSError(0, "no route", "/run/proxy.sock"))) == (
        "no route: '/run/proxy.sock'"
    )
    assert reason(_raised(httpx.ReadError(""), OSError(5, ""))) == f"[Errno 5] {os.strerror(5)}"
    assert reason(OSError("plain words")) == "plain words" and reason(OSError()) == "OSError"


def _hid(outer: BaseException, inner: BaseException) -> BaseException:
    """``outer`` raised ``from None`` while ``inner`` was handled: ``inner`` its context, which its raiser hid."""
    outer.__context__ = inner
    outer.__suppress_context__ = True
    return outer


def test_a_network_error_says_nothing_its_raiser_hid() -> None:
    """anyio's read of a stream closed under it pops its empty read queue, and raises ClosedResourceError ``from
    None`` over the IndexError (its own control flow, which a traceback does not show); httpcore's pool re-raises
    its ReadError ``from None`` too. The text said was that hidden IndexError's: a stream read as its
    AsyncClient closed broke with 'the connection broke: pop from an empty deque'. A context its raiser hid is
    not quoted; an OS error behind one still gives the OS's words (the async backend's reset read)."""
    closed = _hid(anyio.ClosedResourceError(), IndexError("pop from an empty deque"))
    read = _raised(httpx.ReadError(""), _hid(httpcore.ReadError(""), closed))
    assert reason(read) == "ReadError"
    reset = _raised(anyio.BrokenResourceError(), ConnectionResetError(104, "reset"))
    assert reason(_raised(httpx.ReadError(""), _hid(httpcore.ReadError(""), reset))) == (
        f"[Errno 104] {os.strerror(104)}"
    )
    shown = ValueError("a context shown")  # (raised while it was handled, not hidden: its text said)
    shown_over = RuntimeError()
    shown_over.__context__ = shown
    assert reason(_raised(httpx.ReadError(""), shown_over)) == "a context shown"


# ---- the root of every exception ------------------------------------------------------------------------------


def test_every_exception_the_sdk_defines_is_an_agentmsg_error() -> None:
    """One root for everything the SDK raises of its own: bad input and failed provider calls alike are caught
    by ``except agentmsg.AgentmsgError``; ValidationError stays a ValueError, the client errors ProviderErrors."""
    import agentmsg.events
    import agentmsg.providers
    import agentmsg.web

    faces = (agentmsg, agentmsg.clients, agentmsg.providers, agentmsg.events, agentmsg.web)
    defined = {
        value
        for face in faces
        for name in face.__all__
        if isinstance(value := getattr(face, name), type) and issubclass(value, BaseException)
    }
    # Warnings are issued, not raised (a filter may turn one into an error): their root is Warning
    warned = {c for c in defined if issubclass(c, Warning)}
    assert warned == {agentmsg.LegacyKeyWarning}, "a new warning class: say here what it is for"
    defined -= warned
    assert {agentmsg.ValidationError, agentmsg.SizeLimitError, BrokenStreamError, RateLimitError} <= defined
    assert [c.__name__ for c in defined if not issubclass(c, agentmsg.AgentmsgError)] == []
    assert agentmsg.clients.AgentmsgError is agentmsg.AgentmsgError
    assert issubclass(agentmsg.ValidationError, ValueError) and issubclass(agentmsg.SizeLimitError, ValueError)
    with pytest.raises(agentmsg.AgentmsgError):
        agentmsg.UserMessage([agentmsg.ThinkingBlock(thinking="...")])
    assert isinstance(RateLimitError("slow", provider="openai"), agentmsg.AgentmsgError)
