"""The request the clients build from a provider's spec, without HTTP (``clients/_config.py``): the URL, the
headers and how the API key is sent."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs
import httpx
import pytest

from agentmsg import ValidationError, providers
from agentmsg.clients import (
    AuthenticationError,
    BadRequestError,
)
from agentmsg.clients._config import URLS_KEPT, request_headers, request_url
from agentmsg.errors import WrongTypeError
from agentmsg.providers import FormattedRequest

pytestmark = pytest.mark.no_kernel  # reaches none of the C kernels (tests/README.md, Runs)

# ---- the request built from the spec ------------------------------------------------------------------------


def test_the_url_joins_the_base_url_and_the_path() -> None:
    request = FormattedRequest(body={}, path="/v1beta/models/{model}:streamGenerateContent?alt=sse", model="g-1")
    assert request_url("https://h", request, None) == "https://h/v1beta/models/g-1:streamGenerateContent?alt=sse"
    assert (
        request_url("https://h/?v=2", request, None) == "https://h/v1beta/models/g-1:streamGenerateContent?v=2&alt=sse"
    )
    plain = FormattedRequest(body={}, path="/chat/completions")
    assert (
        request_url("https://h/openai/d?api-version=1", plain, None)
        == "https://h/openai/d/chat/completions?api-version=1"
    )
    assert request_url("https://h", FormattedRequest(body={}, path="/m/{model}"), "m-2") == "https://h/m/m-2"
    # a model filled in is one path segment: '/' and '..' in its name cannot lead out of the path (the key goes along)
    counting = FormattedRequest(body={}, path="/v1beta/models/{model}:countTokens", model="../../admin/x")
    url = request_url("https://h/api", counting, None)
    assert url == "https://h/api/v1beta/models/..%2F..%2Fadmin%2Fx:countTokens"
    assert httpx.URL(url).path.startswith("/api/v1beta/models/")


@pytest.mark.parametrize("name", providers.NAMES)
def test_the_headers_send_the_key_as_the_spec_says(name: str) -> None:
    spec = providers.get(name).spec
    headers = request_headers(spec, "sk-1", FormattedRequest(body={}, stream=True), {})
    key = {"bearer": ("authorization", "Bearer sk-1")}.get(spec.auth, (spec.auth, "sk-1"))
    assert headers[key[0]] == key[1]
    assert headers["accept"] == "text/event-stream" and headers["content-type"] == "application/json"
    for k, v in spec.headers.items():
        assert headers[k.lower()] == v
    assert request_headers(spec, "k", FormattedRequest(body={}, stream=False), {})["accept"] == "application/json"


def test_each_layer_of_headers_replaces_the_one_before_whatever_its_case() -> None:
    spec = providers.Spec(
        name="p", title="P", base_url="https://h", env=("P_KEY",), auth="x-api-key", default_model="m",
        families=("p",), headers={"P-Version": "1"},
    )  # fmt: skip
    request = FormattedRequest(body={}, headers={"p-version": "2", "X-Extra": "r"})
    headers = request_headers(spec, "k", request, {"X-API-KEY": "other", "Content-Type": "application/json; x=1"})
    assert headers == {
        "content-type": "application/json; x=1",
        "accept": "application/json",
        "accept-encoding": "gzip, deflate",
        "p-version": "2",
        "x-extra": "r",
        "x-api-key": "other",
    }


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (None, "no API key: pass api_key= or set P_KEY or P_OTHER"),
        ("", "no API key"),
        ("sk-secret\xa0", "cannot carry"),
        ("sk-secret\nX: 1", "cannot carry"),
        (" sk-secret", "leading or trailing whitespace"),
    ],
)
def test_a_key_no_header_can_carry_is_refused_without_it(key: str | None, says: str) -> None:
    spec = providers.Spec(
        name="p", title="P", base_url="https://h", env=("P_KEY", "P_OTHER"), auth="bearer", default_model="m",
        families=("p",),
    )  # fmt: skip
    with pytest.raises(AuthenticationError, match=says) as info:
        request_headers(spec, key, FormattedRequest(body={}), {})
    assert "secret" not in str(info.value) and info.value.provider == "p"
    with pytest.raises(BadRequestError, match="'X-Token'") as binfo:
        request_headers(spec, "k", FormattedRequest(body={}), {"X-Token": "tok-secret "})
    assert "secret" not in str(binfo.value)


@pytest.mark.parametrize(
    ("provider", "headers", "refused"),
    [
        ("openai", {}, True),  # the key goes in Authorization: Bearer
        ("anthropic", {}, False),  # in x-api-key: Basic for the gateway beside it
        ("anthropic", {"Authorization": "Token t-1"}, True),  # the caller's own Authorization
    ],
)
def test_a_base_url_user_password_never_replaces_the_authorization_sent(
    provider: str, headers: dict[str, str], refused: bool
) -> None:
    """httpx sends a URL's ``user:password@`` as ``Authorization: Basic``, replacing the header the client set: an
    OpenAI key was never sent (the server saw only Basic), silently. Now a request whose Authorization would be
    replaced is refused before anything is sent; one whose key goes in another header is sent with both."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return httpx.Response(401, json={"error": {"message": "no"}})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    url = "http://alice:pw@gateway.test/v1"
    client = Client(provider, base_url=url, api_key="sk-key-1", model="m", headers=headers, http_client=http)
    if refused:
        with pytest.raises(BadRequestError, match="base_url has a user:password@") as info:
            client.call([UserMessage("hi")])
        assert not seen and "pw" not in str(info.value)
    else:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage("hi")])
        assert seen[0]["authorization"] == "Basic YWxpY2U6cHc=" and seen[0]["x-api-key"] == "sk-key-1"


def test_an_at_sign_in_the_base_urls_query_is_no_user_password() -> None:
    """Only the URL's own ``user:password@`` is refused: an ``@`` in its query (no path before it) was taken for one."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    seen: list[httpx.Headers] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers)
        return httpx.Response(401, json={"error": {"message": "no"}})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    client = Client("openai", base_url="http://gateway.test?owner=a@b", api_key="sk-key-1", model="m", http_client=http)
    with pytest.raises(AuthenticationError):
        client.call([UserMessage("hi")])
    assert seen[0]["authorization"] == "Bearer sk-key-1"


def test_the_headers_made_once_per_settings_are_those_of_each_request() -> None:
    """A client makes the headers of a request with none of its own once for its settings and the request's kind
    (streamed or not): each request still gets what :func:`request_headers` makes for the settings now, whichever
    changed between calls (the key, ``headers=`` changed in place, the base URL), streamed and whole requests
    mixed, a request with headers of its own; a copy, which the caller may change."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    client = Client("openai", api_key="sk-1", model="m", headers={"X-A": "1"})
    convo = [UserMessage("hi")]
    streamed, whole = client.format(convo, stream=True), client.format(convo, stream=False)
    own = FormattedRequest(body={}, path="/chat/completions", stream=True, headers={"x-own": "o"})

    def check(*requests: FormattedRequest) -> None:
        for request in requests:
            sent = client._outgoing(request).headers
            assert sent == request_headers(client.spec, client.api_key, request, client.extra_headers)
            sent["x-changed"] = "by the caller"  # (never in a later request's)

    check(streamed, whole, streamed, own, whole, streamed)
    assert client._outgoing(streamed).headers["accept"] == "text/event-stream"
    assert client._outgoing(whole).headers["accept"] == "application/json"
    client.api_key = "sk-2"
    check(streamed, whole)
    client.extra_headers["X-A"] = "2"
    client.extra_headers["x-b"] = "3"
    check(whole, streamed, own)
    del client.extra_headers["x-b"]
    check(streamed, whole)
    client.extra_headers["bad name"] = "v"
    with pytest.raises(BadRequestError, match="no HTTP header name"):
        client._outgoing(streamed)
    del client.extra_headers["bad name"]
    check(streamed)
    client.api_key = None
    with pytest.raises(AuthenticationError, match="no API key"):
        client._outgoing(streamed)
    client.api_key = "sk-3"
    check(streamed)
    client.base_url = "http://alice:pw@gateway.test/v1"
    with pytest.raises(BadRequestError, match="base_url has a user:password@"):
        client._outgoing(streamed)
    client.base_url = "http://gateway.test/v1"
    check(streamed, whole)
    spec_headers: dict[str, str] = {"x-version": "1"}
    client.spec = attrs.evolve(client.spec, headers=spec_headers)  # (its own dict: the registry's untouched)
    check(streamed, whole)
    spec_headers["x-version"] = "2"  # in place: the spec still equals the one the headers were made for
    check(streamed, whole)
    assert client._outgoing(streamed).headers["x-version"] == "2"


def test_the_headers_go_to_httpx_encoded_once() -> None:
    """The headers kept for the client's settings are held as httpx holds them (``httpx.Headers``, each name and
    value encoded once), each request given a copy httpx takes as it is: the same names, values and order as the
    dict :func:`request_headers` makes. A value httpx cannot encode (a spec's non-ASCII header) goes as that dict,
    for httpx to refuse when the request is built, as before."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    client = Client("anthropic", api_key="sk-1", model="m", headers={"X-A": "1"})
    request = client.format([UserMessage("hi")], stream=True)
    made = request_headers(client.spec, client.api_key, request, client.extra_headers)
    first, second = client._outgoing(request).headers, client._outgoing(request).headers
    assert isinstance(first, httpx.Headers) and isinstance(second, httpx.Headers) and first is not second
    assert first.raw == second.raw == httpx.Headers(made).raw
    built = client.http.build_request("POST", "http://h/v1/messages", headers=first)
    assert built.headers.raw[-len(made) :] == httpx.Headers(made).raw  # (after the http client's own)
    client.spec = attrs.evolve(client.spec, headers={"x-version": "1\u00e9"})
    out = client._outgoing(request)
    assert type(out.headers) is dict and out.headers["x-version"] == "1\u00e9"
    with pytest.raises(UnicodeEncodeError):
        client.http.build_request("POST", out.url, headers=out.headers)
    client.close()


def test_the_headers_kept_go_to_httpx_uncopied_and_unchanged() -> None:
    """The client's own sending gives httpx the headers it keeps (``copy=False``), not a copy per request (httpx
    copies them as it builds the request): the same object for every request of the same headers, never changed
    by the requests sent with it, and a copy still for anyone else."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "no"}})

    client = Client(
        "openai", api_key="sk-1", model="m", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    request = client.format([UserMessage("hi")], stream=False)
    kept = client._outgoing(request, copy=False).headers
    assert isinstance(kept, httpx.Headers) and client._outgoing(request, copy=False).headers is kept
    copied = client._outgoing(request).headers
    assert isinstance(copied, httpx.Headers) and copied is not kept and copied.raw == kept.raw
    made = list(kept.raw)
    for text in ("hi", "a longer question", "hi"):
        with pytest.raises(AuthenticationError):
            client.call([UserMessage(text)])
    assert client._outgoing(request, copy=False).headers is kept and kept.raw == made


def test_the_headers_of_requests_with_their_own_are_made_once_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A formatter's own headers (Anthropic's version, on every request) do not make each request's headers again:
    made and checked once for the same own headers, again when they differ; each request gets what
    :func:`request_headers` makes for it, a copy."""
    from agentmsg import UserMessage
    from agentmsg.clients import Client, _config

    made: list[FormattedRequest] = []

    def counted(spec: Any, api_key: Any, request: FormattedRequest, extra: Any) -> dict[str, str]:
        made.append(request)
        return request_headers(spec, api_key, request, extra)

    monkeypatch.setattr(_config, "request_headers", counted)
    client = Client("anthropic", api_key="sk-1", model="m")
    first, second = (client.format([UserMessage(text)], stream=True) for text in ("hi", "there"))
    assert first.headers and first.headers == second.headers  # (the formatter's own: the API version)
    for request in (first, second, first):
        sent = client._outgoing(request).headers
        assert sent == request_headers(client.spec, client.api_key, request, client.extra_headers)
        assert sent["anthropic-version"] == first.headers["anthropic-version"]
        sent["x-changed"] = "by the caller"  # (never in a later request's)
    assert made == [first]
    beta = attrs.evolve(second, headers={**second.headers, "anthropic-beta": "b-1"})
    for request in (beta, beta, first):
        sent = client._outgoing(request).headers
        assert sent == request_headers(client.spec, client.api_key, request, client.extra_headers)
    assert sent.get("anthropic-beta") is None
    assert made == [first, beta, first]


def test_the_url_sent_again_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client parses the URL of its requests once for the URLs it sent lately (httpx parsed the string again
    for each request it built: about 100,000 instructions of a streamed reply), sync and async: each request still
    goes to the URL its string names, another one (a Gemini model, in the path; a base URL changed) is parsed
    when first sent, and a URL httpx refuses is still refused."""
    import asyncio

    from httpx._urlparse import urlparse

    from agentmsg import UserMessage
    from agentmsg.clients import AsyncClient, Client

    parsed: list[str] = []

    def counted(url: str = "", **kwargs: Any) -> Any:
        if url.startswith("http://gateway"):
            parsed.append(url)
        return urlparse(url, **kwargs)

    monkeypatch.setattr("httpx._urls.urlparse", counted)  # (what httpx.URL parses a string with)
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(401, json={"error": {"message": "no"}})

    convo = [UserMessage("hi")]
    client = Client(
        "gemini",
        base_url="http://gateway.test/v1",
        api_key="k",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    parsed.clear()  # (the base URL, checked as the client is made)
    for model in ("g-1", "g-1", "g-2", "g-2", "g-1"):
        with pytest.raises(AuthenticationError):
            client.call(convo, model=model)
    with pytest.raises(AuthenticationError):
        list(client.stream(convo, model="g-1", raise_on_error=False))
    client.base_url = "http://gateway.test/v2"
    with pytest.raises(AuthenticationError):
        client.call(convo, model="g-1")
    one, two = (
        "http://gateway.test/v1/v1beta/models/g-1:generateContent",
        "http://gateway.test/v1/v1beta/models/g-2:generateContent",
    )
    streamed = "http://gateway.test/v1/v1beta/models/g-1:streamGenerateContent?alt=sse"
    other = "http://gateway.test/v2/v1beta/models/g-1:generateContent"
    assert seen == [one, one, two, two, one, streamed, other]
    assert parsed == [one, two, streamed, other]
    client.base_url = "http://gateway.test/v1"
    for n in range(URLS_KEPT + 1):  # (past URLS_KEPT, the client starts again from none)
        with pytest.raises(AuthenticationError):
            client.call(convo, model=f"g-{n}")
    parsed.clear()
    with pytest.raises(AuthenticationError):
        client.call(convo, model="g-1")
    assert parsed == [one]
    client.base_url = "http://gateway.test/v\x01"
    with pytest.raises(httpx.InvalidURL, match="non-printable"):
        client.call(convo, model="g-1")

    async def main() -> None:
        aclient = AsyncClient(
            "openai",
            base_url="http://gateway.test/v1",
            api_key="k",
            model="m",
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        )
        parsed.clear()
        for _ in range(3):
            with pytest.raises(AuthenticationError):
                await aclient.call(convo)

    seen.clear()
    asyncio.run(main())
    assert seen == ["http://gateway.test/v1/chat/completions"] * 3
    assert parsed == ["http://gateway.test/v1/chat/completions"]


def _merges_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[object], list[httpx.Request], Callable[[httpx.Request], httpx.Response]]:
    """The http clients httpx merged headers for (each time), the requests sent, and a handler that keeps them and
    refuses each (401)."""
    merged: list[object] = []
    merge = httpx._client.BaseClient._merge_headers

    def counted(self: Any, headers: Any = None) -> Any:
        merged.append(self)
        return merge(self, headers)

    monkeypatch.setattr(httpx._client.BaseClient, "_merge_headers", counted)
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(401, json={"error": {"message": "no"}})

    return merged, sent, handler


def test_requests_are_built_as_httpx_builds_them_its_merges_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client's requests through httpx's own client are what ``build_request`` makes of them (the same URL,
    headers in the same order, content and extensions), httpx's merge of the client's headers with the request's
    made once for the same headers (it merged and encoded them again for every request: about 8 us of a streamed
    reply's request), sync and async, called or streamed: again when the http client's headers change in place,
    and for every request of an http client with cookies or of a subclass of httpx's, or given a header httpx puts in
    itself (``Host``)."""
    import asyncio

    from agentmsg import UserMessage
    from agentmsg.clients import AsyncClient, Client

    merged, sent, handler = _merges_counted(monkeypatch)

    def expected(client: Any, http: Any, text: str, stream: bool) -> httpx.Request:
        out = client._outgoing(client.format([UserMessage(text)], stream=stream))
        made: httpx.Request = http.build_request("POST", out.url, headers=out.headers, content=out.content)
        return made

    def check(client: Any, http: Any, texts: list[str], streams: list[bool]) -> None:
        assert len(sent) == len(texts)
        before = len(merged)
        for request, text, stream in zip(sent, texts, streams, strict=True):
            made = expected(client, http, text, stream)
            assert request.url == made.url and request.method == "POST" and request.content == made.content
            assert request.headers.raw == made.headers.raw
            trace = request.extensions.pop("trace", None)  # (the sync client's stream's: httpcore's trace)
            assert (trace is not None) == (stream and isinstance(client, Client))
            assert request.extensions == made.extensions
        del merged[before:]
        sent.clear()

    class Own(httpx.Client):
        pass

    texts = ["hi", "a longer question", "hi", "there"]
    http = httpx.Client(transport=httpx.MockTransport(handler), headers={"x-pool": "1"})
    client = Client("openai", base_url="http://gateway.test/v1", api_key="k", model="m", http_client=http)
    for text in texts[:3]:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage(text)])
    with pytest.raises(AuthenticationError):
        list(client.stream([UserMessage(texts[3])], raise_on_error=False))
    assert merged == [http, http]  # (a call's, then a stream's: their accept differs)
    check(client, http, texts, [False, False, False, True])
    merged.clear()
    http.headers["x-pool"] = "2"  # (in place: merged again, once)
    for text in texts[:2]:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage(text)])
    assert merged == [http] and [r.headers["x-pool"] for r in sent] == ["2", "2"]
    check(client, http, texts[:2], [False, False])
    merged.clear()
    http.cookies.set("session", "s-1", domain="gateway.test")  # (httpx's Cookie header: merged every time)
    for text in texts[:2]:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage(text)])
    assert merged == [http, http] and [r.headers["cookie"] for r in sent] == ["session=s-1"] * 2
    check(client, http, texts[:2], [False, False])
    merged.clear()
    own = Own(transport=httpx.MockTransport(handler))
    client = Client("openai", base_url="http://gateway.test/v1", api_key="k", model="m", http_client=own)
    for text in texts[:3]:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage(text)])
    assert merged == [own] * 3
    check(client, own, texts[:3], [False] * 3)
    merged.clear()
    http = httpx.Client(transport=httpx.MockTransport(handler))
    given = {"Host": "proxy.test"}  # (a header httpx puts in itself, given: httpx builds each request)
    client = Client(
        "openai", base_url="http://gateway.test/v1", api_key="k", model="m", headers=given, http_client=http
    )
    for text in texts[:2]:
        with pytest.raises(AuthenticationError):
            client.call([UserMessage(text)])
    assert merged == [http, http] and [r.headers["host"] for r in sent] == ["proxy.test"] * 2
    check(client, http, texts[:2], [False] * 2)
    merged.clear()

    async def main() -> tuple[Any, Any]:
        http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        aclient = AsyncClient("openai", base_url="http://gateway.test/v1", api_key="k", model="m", http_client=http)
        for text in texts[:3]:
            with pytest.raises(AuthenticationError):
                await aclient.call([UserMessage(text)])
        return aclient, http

    aclient, ahttp = asyncio.run(main())
    assert merged == [ahttp]
    check(aclient, ahttp, texts[:3], [False] * 3)


def test_the_merges_are_kept_for_each_url_a_gemini_client_calling_models_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client calling a few Gemini models in turn (each in the URL's path) merges httpx's headers once for each
    URL, not again for every request (one was kept, for the last URL: each model's request found another's, and
    httpx merged and built it, then it was built again from its headers), sync and async, each request what
    ``build_request`` makes of it; past URLS_KEPT URLs the client starts again from none."""
    import asyncio

    from agentmsg import UserMessage
    from agentmsg.clients import AsyncClient, Client

    merged, sent, handler = _merges_counted(monkeypatch)

    convo = [UserMessage("hi")]
    models = ["g-1", "g-2", "g-3", "g-1", "g-2", "g-3", "g-1"]
    http = httpx.Client(transport=httpx.MockTransport(handler))
    client = Client("gemini", base_url="http://gateway.test/v1", api_key="k", http_client=http)
    for model in models:
        with pytest.raises(AuthenticationError):
            list(client.stream(convo, model=model))
    assert merged == [http] * 3
    assert [str(r.url).split("/")[-1] for r in sent] == [f"{m}:streamGenerateContent?alt=sse" for m in models]
    for request, model in zip(sent, models, strict=True):
        out = client._outgoing(client.format(convo, stream=True, model=model))
        made = http.build_request("POST", out.url, headers=out.headers, content=out.content)
        assert request.url == made.url and request.content == made.content
        assert request.headers.raw == made.headers.raw
    merged.clear()
    for n in range(URLS_KEPT + 1):  # (past URLS_KEPT, the client starts again from none)
        with pytest.raises(AuthenticationError):
            client.call(convo, model=f"m-{n}")
    assert merged == [http] * (URLS_KEPT + 1)
    merged.clear()
    with pytest.raises(AuthenticationError):
        client.call(convo, model="m-0")
    assert merged == [http]

    async def main() -> Any:
        ahttp = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        aclient = AsyncClient("gemini", base_url="http://gateway.test/v1", api_key="k", http_client=ahttp)
        for model in models:
            with pytest.raises(AuthenticationError):
                await aclient.call(convo, model=model)
        return ahttp

    merged.clear()
    ahttp = asyncio.run(main())
    assert merged == [ahttp] * 3


# ---- the numeric settings, checked whenever set ------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize(
    ("setting", "value", "pointer", "rule"),
    [
        ("backoff", -1, "/backoff", "minimum"),  # (time.sleep of it: a bare ValueError at the first retry)
        ("backoff", NAN, "/backoff", "type"),
        ("backoff", INF, "/backoff", "maximum"),
        ("backoff", "1", "/backoff", "type"),  # (a bare TypeError at the first retry)
        ("max_retry_after", -0.5, "/max_retry_after", "minimum"),
        ("max_retry_after", NAN, "/max_retry_after", "type"),
        ("max_retries", -1, "/max_retries", "minimum"),
        ("max_retries", 1.5, "/max_retries", "type"),
        ("max_retries", True, "/max_retries", "type"),
        ("timeout", -1, "/timeout", "exclusiveMinimum"),  # (the socket's bare ValueError, taken for no connection)
        ("timeout", 0, "/timeout", "exclusiveMinimum"),
        ("timeout", NAN, "/timeout", "type"),
        ("timeout", INF, "/timeout", "maximum"),  # (the socket's bare OverflowError)
        ("timeout", 10**10, "/timeout", "maximum"),  # (past threading.TIMEOUT_MAX: the sync socket's OverflowError)
        ("timeout", httpx.Timeout(5.0, connect=1e300), "/timeout/connect", "maximum"),
        ("timeout", httpx.Timeout(5.0, pool=1e10), "/timeout/pool", "maximum"),  # (the sync pool's Event.wait)
        ("timeout", httpx.Timeout(5.0, read=-1.0), "/timeout/read", "exclusiveMinimum"),
        ("timeout", httpx.Timeout(5.0, pool=NAN), "/timeout/pool", "type"),
    ],
)
def test_a_bad_numeric_setting_is_refused_at_construction_naming_it(
    cls: str, setting: str, value: object, pointer: str, rule: str
) -> None:
    """A negative, nan or infinite backoff, max_retry_after, max_retries or timeout was taken as given: the call
    then failed on a bare ValueError (time.sleep of a negative), a socket's, or retried for nothing. The
    constructor refuses it, sync and async alike, with a ValidationError naming the setting and the rule."""
    import agentmsg.clients

    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(ValidationError) as info:
        client_class("openai", api_key="k", **{setting: value})
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == (pointer, rule)
    assert info.value.kind == "client settings" and pointer[1:].replace("/", ".") + " is " in str(info.value)
    client = client_class("openai", api_key="k")
    before = getattr(client, setting)
    with pytest.raises(ValidationError, match=pointer):  # set after: refused alike, the setting kept
        setattr(client, setting, value)
    assert getattr(client, setting) is before


def test_a_bad_numeric_setting_says_what_it_is_and_what_it_got() -> None:
    """The settings' checks are the SDK's shared ones (require_seconds, require_count): the message says what the
    setting is and what it got, a NaN said as nan (not as its type, float)."""
    from agentmsg.clients import Client

    with pytest.raises(ValidationError, match=r"backoff is finite seconds, 0 or more, not nan \[type\]"):
        Client("openai", api_key="k", backoff=NAN)
    with pytest.raises(ValidationError, match=r"timeout\.read is None or finite seconds above 0, not -1\.0 "):
        Client("openai", api_key="k", timeout=httpx.Timeout(5.0, read=-1.0))


def test_the_edges_of_each_numeric_setting_are_taken() -> None:
    """0 retries, 0 backoff (retry at once), 0 or inf max_retry_after (inf: no cap), a timeout in seconds (made an
    httpx.Timeout) or None (the http_client's own), an httpx.Timeout with None parts (no limit), a timeout of
    threading.TIMEOUT_MAX seconds: all taken."""
    from agentmsg.clients import Client

    c = Client("openai", api_key="k", max_retries=0, backoff=0, max_retry_after=INF, timeout=2)
    assert (c.max_retries, c.backoff, c.max_retry_after, c.timeout) == (0, 0.0, INF, httpx.Timeout(2.0))
    c.max_retry_after, c.timeout = 0, None
    assert (c.max_retry_after, c.timeout, c._timeout) == (0.0, None, httpx.USE_CLIENT_DEFAULT)
    c.timeout = httpx.Timeout(None, connect=3.0)
    assert c.timeout == httpx.Timeout(None, connect=3.0)
    c.timeout = threading.TIMEOUT_MAX  # (the longest a sync socket or pool can wait)
    assert c.timeout == httpx.Timeout(threading.TIMEOUT_MAX)
    assert c._retry_policy().max_retry_after == 0.0


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize(
    ("options", "pointer", "rule"),
    [
        ({"provider": "nope"}, "/provider", "enum"),
        ({"provider": 1}, "/provider", "type"),
        ({"provider": None}, "/provider", "required"),
        ({"base_url": "ftp://h"}, "/base_url", "format"),
        ({"base_url": "http://[::1"}, "/base_url", "format"),
        ({"base_url": b"http://h"}, "/base_url", "type"),
        ({"think_tags": "closed"}, "/think_tags", "enum"),
        ({"think_tags": 1}, "/think_tags", "enum"),  # (== True: it was taken as True)
        ({"backoff": "1"}, "/backoff", "type"),
        ({"max_retries": 1.5}, "/max_retries", "type"),
    ],
)
def test_a_bad_client_option_is_a_validation_error_naming_it(
    cls: str, options: dict[str, object], pointer: str, rule: str
) -> None:
    """An unknown provider, a base_url that is no http(s) URL and a think_tags that is no mode raised a bare
    ValueError (a base_url of bytes an AttributeError; think_tags=1 was taken as True); a setting of the wrong type
    was a ValidationError but no TypeError. Each is now a ValidationError (a ValueError still) of kind client
    settings at the option, a TypeError too for a value of the wrong type."""
    import agentmsg.clients

    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(ValidationError) as info:
        client_class(**{"provider": "openai", "api_key": "k", **options})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    assert info.value.kind == "client settings"
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError) == (rule == "type")


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize("past", [1 << 16, 1 << 32, 10**21])
def test_a_base_url_whose_port_is_past_65535_is_refused_not_sent_to_another_port(raw: Any, cls: str, past: int) -> None:
    """A base_url's port past 65535 was taken: httpx connects to it modulo 65536, so the request (and its key)
    went to another port (a loopback server's port plus 65,536 reached that server, and the call was answered);
    the async client raised a bare ExceptionGroup at the call, and a port past a C long a bare OverflowError.
    It is refused where given now, at /base_url (rule format), and nothing is sent."""
    import agentmsg.clients

    def answer(conn: Any) -> None:
        body = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}'
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )

    server = raw(answer)
    port = int(server.url.rsplit(":", 1)[1])
    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(ValidationError) as info:
        client_class("openai", base_url=f"http://127.0.0.1:{port + past}/v1", api_key="k", model="m", max_retries=0)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/base_url", "format")]
    assert "port" in str(info.value) and "65535" in str(info.value)
    assert server.connections == 0
    client_class("openai", base_url=f"http://127.0.0.1:{port}/v1", api_key="k")  # (its own port: taken)


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize("fragment", ["#", "#x", "#/v1", "?a=1#x"])
def test_a_base_url_with_a_fragment_is_refused_not_sent_without_its_path(raw: Any, cls: str, fragment: str) -> None:
    """A base_url with a fragment (``#...``) was taken, and the request's path went into the fragment, which is
    never sent: every call was POSTed to the base URL itself (``/v1``, not ``/v1/chat/completions``), or, after a
    query, with the path's own query (Gemini's ``alt=sse``) lost in it. It is refused where given now, at
    /base_url (rule format), and nothing is sent."""
    import agentmsg.clients

    def answer(conn: Any) -> None:
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    server = raw(answer)
    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(ValidationError) as info:
        client_class("openai", base_url=f"{server.url}/v1{fragment}", api_key="k", model="m", max_retries=0)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/base_url", "format")]
    assert "fragment" in str(info.value)
    assert server.connections == 0


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (" ", ""),
        ("", " "),
        ("", "  "),
        ("", " /"),
        ("", "/ /"),
        ("\t", ""),
        ("", "\n"),
        ("", "\u00a0"),
        ("\u3000", ""),
        (" ", " "),
    ],
)
def test_a_base_url_with_whitespace_at_an_end_is_refused_whichever_end(
    raw: Any, cls: str, before: str, after: str
) -> None:
    """A base_url with a space at its start was refused ('is not an http:// or https:// URL'), and one with a space
    at its end was taken: httpx percent-encodes it, and every call was POSTed to ``/v1%20/chat/completions`` (the
    server's 404 the only sign; a non-breaking space the same, ``/v1%C2%A0``). Both ends are refused alike now, as
    the client is made: at /base_url, rule format, saying the whitespace; nothing is sent. (A tab or a line break
    was refused by httpx already, in its own words: the same refusal now.)"""
    import agentmsg.clients

    def answer(conn: Any) -> None:
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    server = raw(answer)
    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(ValidationError) as info:
        client_class("openai", base_url=f"{before}{server.url}/v1{after}", api_key="k", model="m", max_retries=0)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/base_url", "format")]
    assert info.value.kind == "client settings"
    assert "whitespace at its start or end" in str(info.value)
    assert server.connections == 0
    client_class("openai", base_url=f"{server.url}/v1/", api_key="k")  # (a trailing slash: taken, as before)


# ---- the settings of text and the headers, checked where given ---------------------------------------------------


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize(
    ("headers", "pointer"),
    [
        ([("X-A", "1"), ("X-A", "2")], "/headers/X-A"),
        ({"X-A": "1", "x-a": "2"}, "/headers/x-a"),
        ([("Authorization", "Bearer a"), (b"authorization", b"Bearer b")], "/headers/authorization"),
    ],
)
def test_a_header_given_twice_is_refused_not_sent_with_one_value_lost(
    raw: Any, cls: str, headers: Any, pointer: str
) -> None:
    """headers= naming one header twice (pairs, or names that differ only in case) was taken, and the last value
    alone was sent, the others dropped unsaid (httpx sends each value of repeated pairs). It is refused where
    given now: a ValidationError of kind client settings at the second name, rule duplicate, nothing sent; an
    httpx.Headers of repeated values (one list, as httpx joins it) is taken as before."""
    import agentmsg.clients

    def answer(conn: Any) -> None:
        conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")

    server = raw(answer)
    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(ValidationError) as info:
        client_class("openai", base_url=server.url, api_key="k", model="m", max_retries=0, headers=headers)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "duplicate")]
    assert info.value.kind == "client settings"
    assert server.connections == 0
    joined = client_class("openai", api_key="k", headers=httpx.Headers([("X-A", "1"), ("X-A", "2")]))
    assert joined.extra_headers == {"x-a": "1, 2"}


@pytest.mark.parametrize("cls", ["Client", "AsyncClient"])
@pytest.mark.parametrize(
    ("options", "pointer"),
    [
        ({"model": 1}, "/model"),
        ({"model": b"gpt-4o"}, "/model"),
        ({"api_key": b"sk-1"}, "/api_key"),
        ({"api_key": 1}, "/api_key"),
        ({"name": 1}, "/name"),
        ({"headers": "X-A: 1"}, "/headers"),
        ({"headers": 1}, "/headers"),
        ({"headers": {1: "v"}}, "/headers"),
        ({"headers": {"X-A": 1}}, "/headers/X-A"),
        ({"headers": {"X/A": None}}, "/headers/X~1A"),
        ({"headers": [("X-A",)]}, "/headers/0"),
    ],
)
def test_a_text_setting_or_headers_of_the_wrong_type_is_refused_where_given(
    cls: str, options: dict[str, object], pointer: str
) -> None:
    """A model, api_key or name that is no string, and headers that are no mapping (or pairs) of str or bytes, were
    taken: the call then failed with a bare AttributeError (a key of bytes), a ValidationError of the formatter or
    a BadRequestError (a model, a header value of the wrong type), or never (a name of 1 was put in the replies);
    headers="X-A: 1" raised a bare ValueError from dict(). Each is now a WrongTypeError (a ValidationError and a
    TypeError) of kind client settings at the option, raised by the constructor; it says the type, never the
    value (an API key may be it)."""
    import agentmsg.clients

    client_class = getattr(agentmsg.clients, cls)
    with pytest.raises(WrongTypeError) as info:
        client_class(**{"provider": "openai", "api_key": "k", **options})
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, "type")]
    assert info.value.kind == "client settings" and isinstance(info.value, TypeError)
    assert "sk-1" not in str(info.value)


def test_a_text_setting_set_after_is_checked_too() -> None:
    """model, api_key and name are settings as the numeric ones are: set after construction, a wrong type is
    refused and the setting kept."""
    from agentmsg.clients import Client

    client = Client("openai", api_key="k", model="m", name="bot")
    for setting in ("model", "api_key", "name"):
        before = getattr(client, setting)
        with pytest.raises(WrongTypeError, match=f"/{setting}"):
            setattr(client, setting, 1)
        assert getattr(client, setting) == before
    client.model, client.name = None, None  # (None: the provider's default, no name)
    assert (client.model, client.name) == (None, None)


def test_headers_as_httpx_takes_them_are_sent() -> None:
    """httpx takes headers as a mapping or a sequence of pairs, each name and value str or bytes: all are still
    taken, and bytes go out as they are (a value of bytes was refused at the call as no HTTP header value)."""
    from agentmsg.clients import Client

    request = FormattedRequest(body={}, path="/chat/completions")
    headers: Any
    for headers in (
        {"X-A": b"1", b"X-B": "2"},
        [("X-A", "1"), (b"X-B", b"2")],
        httpx.Headers({"X-A": "1", "X-B": "2"}),
    ):
        sent = Client("openai", api_key="k", model="m", headers=headers)._outgoing(request).headers
        assert (sent["x-a"], sent["x-b"]) == ("1", "2"), headers
