"""The SDK never shows the credentials it holds (issue 28, class 7): a server that echoes the request's headers
back in its error (a 401's body, a 500's page, a stream's error event, a redirect's location) put the API key in
the exception's text and attributes and in ``agentmsg chat``'s output. Over real HTTP on loopback: a server
that echoes what it was sent, as sent, URL-encoded or JSON-escaped. A key of FREE_TEXT_MIN characters or more is
hidden wherever it is echoed; a shorter one (a local server's "EMPTY") where the text names it as a credential."""

from __future__ import annotations

import asyncio
import base64
import http.server
import io
import json
import threading
import traceback
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from agentmsg import Msg, UserMessage
from agentmsg.cli.chat import _Redacting
from agentmsg.clients import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    Client,
    ProviderError,
    ServerError,
)
from agentmsg.clients._config import Outgoing
from agentmsg.clients._errors import (
    CREDENTIAL_HEADERS,
    CREDENTIAL_QUERY,
    FREE_TEXT_MIN,
    REDACTED,
    Redactor,
    credentials,
)
from agentmsg.providers import FormattedRequest
from tests._support.providers import run_cli

CONVO = [UserMessage("hi")]

KEYS = {
    "long": "sk-proj-Abc123Def456Ghi789",
    "short": "Zq7",
    "url-and-json-special": 'ab/cd+ef=="x\\y z',
}


def echoes(key: str) -> list[str]:
    """The forms of ``key`` none of which may be shown: as sent, URL-encoded, JSON-escaped."""
    return [
        key,
        urllib.parse.quote(key, safe=""),
        urllib.parse.quote_plus(key),
        json.dumps(key)[1:-1],
        json.dumps(key)[1:-1].replace("/", "\\/"),
    ]


#: How the server echoes the request: (status, content-type, body of the request's headers and path)
Echo = Callable[[dict[str, str], str], tuple[int, str, bytes, dict[str, str]]]


def as_json(status: int) -> Echo:
    def echo(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
        body = {
            "error": {"message": f"invalid credentials: you sent {headers} to {path}", "headers": headers},
            "request_id": headers.get("x-api-key") or headers.get("authorization", ""),
            headers.get("authorization", "k"): "the header as a key",
        }
        return status, "application/json", json.dumps(body).encode(), {}

    return echo


def as_text(status: int) -> Echo:
    def echo(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
        lines = [f"{k}: {v}" for k, v in headers.items()]
        encoded = [f"{k}={urllib.parse.quote(v, safe='')}" for k, v in headers.items()]
        text = "<html>denied\n" + "\n".join(lines + encoded) + f"\n{path}</html>"
        return status, "text/html", text.encode(), {}

    return echo


def as_stream_error(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
    """A 200 stream that starts, then an error event quoting the headers (Anthropic's shape)."""
    start = {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {}},
    }
    error = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"bad key {json.dumps(headers)}"},
        "request_id": headers.get("x-api-key", ""),
    }
    body = f"event: message_start\ndata: {json.dumps(start)}\n\nevent: error\ndata: {json.dumps(error)}\n\n"
    return 200, "text/event-stream", body.encode(), {}


def as_not_a_stream(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
    """A 200 that is no stream: an HTML page starting with the key (the error shows the body's first bytes)."""
    name = next(n for n in ("x-api-key", "x-goog-api-key", "authorization") if n in headers)
    return 200, "text/html", f"{name}: {headers[name]} {headers[name]}".encode(), {}


def as_redirect(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
    key = headers.get("x-api-key") or headers.get("x-goog-api-key") or headers.get("authorization", "")
    return 307, "text/plain", key.encode(), {"Location": f"http://elsewhere.invalid/{path}?key={key}"}


class EchoServer:
    """A loopback HTTP server answering each request with ``echo(its headers, its path)``."""

    def __init__(self, echo: Echo) -> None:
        self.echo = echo
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, content_type, body, extra = owner.echo(
                    {k.lower(): v for k, v in self.headers.items()}, self.path
                )
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Echo], EchoServer]]:
    servers: list[EchoServer] = []

    def make(echo: Echo) -> EchoServer:
        servers.append(EchoServer(echo))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def shown(exc: BaseException) -> str:
    """All an exception shows: its text, repr, args, traceback (causes included) and attributes (the
    partial message's JSON too)."""
    parts = [str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))]
    if isinstance(exc, ProviderError):
        parts += [exc.message, repr(exc.body), repr(exc.request_id), json.dumps(exc.body)]
    partial = getattr(exc, "partial", None)
    if partial is not None:
        parts.append(partial.to_json())
    return "\n".join(parts)


#: The texts a key follows where a text names it as a credential: a header line, a dict's repr, JSON (escaped once
#: too), httpx's repr of repeated headers, URL-encoded, a query parameter; with a scheme or without
NAMED = (
    [
        before + scheme
        for name in CREDENTIAL_HEADERS
        for before in (f"{name}: ", f"'{name}': '", f'"{name}": "', f'\\"{name}\\": \\"', f"('{name}', '", f"{name}=")
        for scheme in ("", "Bearer ", "Bearer%20", "Bearer+", "Basic ")
    ]
    + [f"{sep}{name}=" for name in CREDENTIAL_QUERY for sep in "?&"]
    + ["Bearer ", "Basic "]
)


def assert_hidden(key: str, *texts: str) -> None:
    """No form of ``key`` in ``texts``: anywhere for a key of FREE_TEXT_MIN characters or more, where a text names
    it as a credential for a shorter one."""
    for text in texts:
        for form in echoes(key):
            if len(key) >= FREE_TEXT_MIN:
                assert form not in text, (form, text[:2000])
            else:
                assert not any(f"{named}{form}" in text for named in NAMED), (form, text[:2000])


# (provider, path the request goes to): a bearer key, an x-api-key, an x-goog-api-key
PROVIDERS = ["openai", "anthropic", "gemini"]

ERRORS = [
    (as_json(401), AuthenticationError),
    (as_json(403), AuthenticationError),
    (as_text(401), AuthenticationError),
    (as_json(500), ServerError),
    (as_text(500), ServerError),
    (as_redirect, BadRequestError),
]


@pytest.mark.parametrize("key", KEYS.values(), ids=list(KEYS))
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("echo", "cls"), ERRORS, ids=["401", "403", "401-text", "500", "500-text", "307"])
def test_an_echoed_key_is_in_no_error(
    serve: Callable[[Echo], EchoServer], key: str, provider: str, echo: Echo, cls: type[ProviderError]
) -> None:
    """call() and stream(), sync and async: the key the server echoes (as sent, URL-encoded, JSON-escaped) is in
    none of what the error shows; the server did echo it (the redaction is what hides it)."""
    server = serve(echo)
    seen: list[bytes] = []
    original = server.echo

    def spying(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
        status, content_type, body, extra = original(headers, path)
        seen.append(body + repr(extra).encode())
        return status, content_type, body, extra

    server.echo = spying
    client = Client(provider, base_url=server.url, api_key=key, model="m", max_retries=0)
    with pytest.raises(cls) as info:
        client.call(CONVO)
    assert_hidden(key, shown(info.value))
    assert any(form.encode() in seen[-1] for form in echoes(key))  # (the server did echo it)
    with pytest.raises(cls) as info:
        list(client.stream(CONVO))
    assert_hidden(key, shown(info.value))

    async def run() -> list[BaseException]:
        errors: list[BaseException] = []
        async with AsyncClient(provider, base_url=server.url, api_key=key, model="m", max_retries=0) as ac:
            calls: tuple[Callable[[], Awaitable[Msg]], ...] = (
                lambda: ac.call(CONVO),
                lambda: ac.stream(CONVO).until_done(),
            )
            for call in calls:
                try:
                    await call()
                except ProviderError as exc:
                    errors.append(exc)
        return errors

    errors = asyncio.run(run())
    assert [type(e) for e in errors] == [cls, cls]
    assert_hidden(key, *map(shown, errors))


@pytest.mark.parametrize("key", KEYS.values(), ids=list(KEYS))
def test_an_echoed_key_is_in_no_stream_error_event(serve: Callable[[Echo], EchoServer], key: str) -> None:
    """A stream's error event quoting the headers (message and request id): the events yielded, the message,
    the error and ``stream.error`` hold no key, sync and async, raising or not."""
    server = serve(as_stream_error)
    client = Client("anthropic", base_url=server.url, api_key=key, model="m", max_retries=0)
    stream = client.stream(CONVO)
    events: list[dict[str, Any]] = []
    with pytest.raises(BrokenStreamError) as info:
        for e in stream:
            events.append(e)
    assert "bad key" in info.value.message and "[redacted]" in info.value.message
    assert stream.message is not None
    assert_hidden(key, shown(info.value), json.dumps(events), stream.message.to_json())
    quiet = client.stream(CONVO, raise_on_error=False)
    events = list(quiet)
    assert quiet.error is not None and quiet.message is not None
    assert_hidden(key, quiet.error, json.dumps(events), quiet.message.to_json())

    async def run() -> BaseException:
        async with AsyncClient("anthropic", base_url=server.url, api_key=key, model="m") as ac:
            with pytest.raises(BrokenStreamError) as ainfo:
                await ac.stream(CONVO).until_done()
            return ainfo.value

    assert_hidden(key, shown(asyncio.run(run())))


@pytest.mark.parametrize("key", KEYS.values(), ids=list(KEYS))
@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_body_that_is_no_stream_shows_its_start_without_the_key(
    serve: Callable[[Echo], EchoServer], key: str, provider: str
) -> None:
    """A 200 that is no stream is said with its first bytes: there, the key the server echoed is redacted."""
    server = serve(as_not_a_stream)
    client = Client(provider, base_url=server.url, api_key=key, model="m")
    with pytest.raises(BrokenStreamError, match="it starts") as info:
        list(client.stream(CONVO))
    assert_hidden(key, shown(info.value))
    with pytest.raises(BrokenStreamError) as info:
        client.call(CONVO)
    assert_hidden(key, shown(info.value))


def test_a_key_in_headers_or_the_base_urls_query_is_redacted_too(serve: Callable[[Echo], EchoServer]) -> None:
    """A credential the caller sends itself (``headers={"Authorization": ...}`` to a proxy, ``?key=`` in the
    base URL) is redacted as the API key is; so in the client's repr and the request's."""
    server = serve(as_text(401))
    token, query_key = "proxy-token-998877", "AIzaQueryKey123"
    client = Client(
        "gemini",
        base_url=f"{server.url}/?key={query_key}",
        api_key="k-gemini-1",
        model="m",
        headers={"Authorization": f"Bearer {token}"},
    )
    with pytest.raises(AuthenticationError) as info:
        client.call(CONVO)
    text = shown(info.value)
    for secret in (token, query_key, "k-gemini-1"):
        assert_hidden(secret, text, repr(client))
    out = client._outgoing(client.format(CONVO, stream=False))
    assert_hidden("k-gemini-1", repr(out))
    assert_hidden(query_key, repr(out))
    assert_hidden(token, repr(out))
    with pytest.raises(ValueError, match="is not an http") as vinfo:
        Client("openai", base_url=f"ftp://h/?key={query_key}", api_key="k")
    assert_hidden(query_key, str(vinfo.value))


def test_a_password_in_the_base_urls_userinfo_is_redacted_too(serve: Callable[[Echo], EchoServer]) -> None:
    """A base URL with a user and password (a proxy's basic auth: httpx sends them as ``Authorization: Basic``)
    showed the password in the client's repr, the request's and the error of a server that echoes its
    headers or path; the basic token too. Now they are redacted as the API key is, sync and async."""
    server = serve(as_text(401))
    password = "pw/Secret+4242"  # (quoted in the URL, sent unquoted)
    basic = base64.b64encode(f"alice:{password}".encode()).decode()
    url = server.url.replace("http://", f"http://alice:{urllib.parse.quote(password, safe='')}@")
    client = Client("anthropic", base_url=url, api_key="k-anthropic-1", model="m")
    with pytest.raises(AuthenticationError) as info:
        client.call(CONVO)
    out = client._outgoing(client.format(CONVO, stream=False))
    texts = (shown(info.value), repr(client), repr(out))
    # the server did echo the Basic header (so that the checks below see it redacted, not absent)
    assert "authorization: Basic [redacted]" in info.value.body, info.value.body
    for secret in (password, basic, "k-anthropic-1"):
        assert_hidden(secret, *texts)
    assert "alice" in repr(client)

    async def run() -> BaseException:
        with pytest.raises(AuthenticationError) as ainfo:
            await AsyncClient("anthropic", base_url=url, api_key="k-anthropic-1", model="m").call(CONVO)
        return ainfo.value

    assert_hidden(password, shown(asyncio.run(run())))
    assert_hidden(basic, shown(asyncio.run(run())))


@pytest.mark.parametrize("key", KEYS.values(), ids=list(KEYS))
@pytest.mark.parametrize("echo", [as_json(401), as_text(500), as_stream_error], ids=["401", "500", "stream"])
def test_chat_never_prints_the_key(
    serve: Callable[[Echo], EchoServer],
    key: str,
    echo: Echo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``agentmsg chat`` printed the server's error, the key in it: now its stdout and stderr hold none. (The 500 is
    retried, as the command retries it; ``Retry-After: 0`` spares the test the backoff's 1.3 s of sleep.)"""

    def at_once(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
        status, kind, body, extra = echo(headers, path)
        return status, kind, body, {**extra, "Retry-After": "0"}

    server = serve(at_once)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    code, out = run_cli("chat", "--provider", "anthropic", "--base-url", server.url, "--model", "m", "hi")
    err = capsys.readouterr().err
    assert code == 1 and "[redacted]" in err, err
    assert_hidden(key, out, err)


def test_the_redactor() -> None:
    """One function every path uses: each form a key may be echoed in, the longest first; bodies nested 1,000
    deep; nothing to redact, the same object back."""
    headers = {"X-Api-Key": "other-secret", "Authorization": "Basic dXNlcg==", "Accept": "x"}
    r = Redactor(credentials("s/k+1/long", headers, ""))
    assert r("a s/k+1/long b s%2Fk%2B1%2Flong c s%2fk%2b1%2flong d s\\/k+1\\/long e other-secret f dXNlcg== g x") == (
        "a [redacted] b [redacted] c [redacted] d [redacted] e [redacted] f [redacted] g x"
    )
    deep: Any = "s/k+1/long"
    for _ in range(1000):
        deep = [deep]
    out = r.value({"s/k+1/long": deep})
    for _ in range(1001):
        out = out["[redacted]"] if isinstance(out, dict) else out[0]
    assert out == "[redacted]"
    body = {"a": ["b"]}
    assert Redactor([]).value(body) is body and not Redactor([]) and Redactor(["x"])
    assert credentials(None, {}, "http://h/v1?key=abc&alt=sse") == ["abc"]


def test_a_text_redacted_again_reads_the_same() -> None:
    """A key of one letter, `t`, redacted a text, then the error holding it again: each pass replaced the t of the
    markers before it, `[redac[redac[redacted]ed]ed]`. One pass now: a marker in the text is kept whole (a key
    that is part of the marker too)."""
    r = Redactor(["t"])
    once = r("x-api-key: t; the stream ended")
    assert once == "x-api-key: [redacted]; the stream ended"
    assert r(r(once)) == once and r.value({"t": [once]}) == {"t": [once]}
    r = Redactor(["[redacte", "cted] ok"])  # (the marker's own characters, keys too)
    assert r("[redacted] ok [redacte") == "[redacted] ok [redacted]"
    assert r("[redacted] ok [redacted]") == "[redacted] ok [redacted]"


def test_chat_with_a_one_letter_key_shows_the_error_as_it_is(
    serve: Callable[[Echo], EchoServer], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agentmsg chat` with OPENAI_API_KEY=t and a reply that is no stream printed
    `[redacted]he s[redacted]ream ended...`: every t of the message was taken for the key. A key that short is
    redacted only where a text names it (`Authorization: Bearer t`): the message now reads as it was written."""
    server = serve(lambda headers, path: (200, "text/html", b"<html>hi</html>", {}))
    monkeypatch.setenv("OPENAI_API_KEY", "t")
    code, _ = run_cli("chat", "--provider", "openai", "--base-url", server.url, "--timeout", "5", "hi")
    err = capsys.readouterr().err
    assert code == 1 and "the stream ended before the provider" in err and REDACTED not in err, err


@pytest.mark.parametrize("key", ["a", "EMPTY", "sk-1"])
def test_a_short_key_is_redacted_only_where_a_text_names_it(key: str) -> None:
    """A local server's key (`api_key="EMPTY"`, `"x"`) was replaced wherever its characters occurred: "What a nice
    day" read "Wh[redacted]t [redacted] nice d[redacted]y" for the key `a`. A key shorter than FREE_TEXT_MIN is
    now replaced only after a credential header's or query parameter's name, or a scheme, as the SDK's errors,
    a server's echo and httpx's reprs show it; when no key character follows (another key is not this one)."""
    assert len(key) < FREE_TEXT_MIN
    r = Redactor(credentials(key, {}, ""))
    prose = f"What a nice day: {key} is EMPTY, sk-1 too; the bearer {key}, x-api-key-{key}"
    assert r(prose) == prose and r.value({"message": prose, "id": key}) == {"message": prose, "id": key}
    for named in NAMED:
        for end in ("", "'", '"', " and more", "&alt=sse", ", ", "."):
            assert r(f"said {named}{key}{end}") == f"said {named}{REDACTED}{end}", (named, end)
            if named not in ("Bearer ", "Basic "):  # (a name in any case; a scheme alone as HTTP writes it)
                assert r(f"said {named.upper()}{key}{end}") == f"said {named.upper()}{REDACTED}{end}", (named, end)
        for other in ("-2", "X", "/v", "=", "%2F", "_1"):  # (a longer value that begins with the key: not it)
            assert r(f"{named}{key}{other}") == f"{named}{key}{other}", (named, other)
    body = {"headers": {"X-Api-Key": key, "authorization": f"Bearer {key}", "Accept": key}, "key": key, "id": key}
    assert r.value(body) == {
        "headers": {"X-Api-Key": REDACTED, "authorization": f"Bearer {REDACTED}", "Accept": key},
        "key": REDACTED,
        "id": key,
    }
    assert r(repr(httpx.Headers([("x-api-key", key), ("x-api-key", key)]))) == (
        f"Headers([('x-api-key', '{REDACTED}'), ('x-api-key', '{REDACTED}')])"
    )
    assert r(repr(httpx.URL(f"http://h/v1?alt=sse&key={key}"))) == f"URL('http://h/v1?alt=sse&key={REDACTED}')"


@pytest.mark.parametrize("key", ["a", "pw", "EMPTY", "p/w"])
def test_a_short_key_in_a_urls_userinfo_is_redacted(key: str) -> None:
    """A key shorter than FREE_TEXT_MIN as the password or the user of a URL's userinfo (`https://u:KEY@h`, as a
    connection error or a proxy's page quotes the base URL) was shown as it was: the URL did not name it. The
    userinfo is a named place now, in any form the key is echoed in (URL-encoded, a JSON-escaped `\\/\\/`),
    the user redacted too when a credential; a password or user that only begins or ends with the key, or the key
    before an `@` outside a userinfo, is not it."""
    r = Redactor(credentials(key, {"x-api-key": "long-user-secret"}, ""))
    form = urllib.parse.quote(key, safe="")
    said = {
        f"connect to https://u:{form}@h failed": f"connect to https://u:{REDACTED}@h failed",
        f"https://:{form}@h/v1": f"https://:{REDACTED}@h/v1",
        f"https://{form}@h": f"https://{REDACTED}@h",
        f"https://{form}:other@h": f"https://{REDACTED}:other@h",
        f"https://{form}:{form}@h": f"https://{REDACTED}:{REDACTED}@h",
        f"https://long-user-secret:{form}@h": f"https://{REDACTED}:{REDACTED}@h",
        f"https://{form}:long-user-secret@h": f"https://{REDACTED}:{REDACTED}@h",
        f'{{"url": "https:\\/\\/us.er%20:{form}@h"}}': f'{{"url": "https:\\/\\/us.er%20:{REDACTED}@h"}}',
    }
    for text, expected in said.items():
        assert r(text) == expected, text
        assert r(expected) == expected and r.split(text + " ") == (expected + " ", ""), text
    for text in (f"https://u:{form}x@h", f"https://u:x{form}@h", f"https://{form}x@h", f"a {form}@h", f"//h/{form}@h"):
        assert r(text) == text and r.split(text + " ") == (text + " ", ""), text
    base = Redactor(credentials(None, {}, f"https://u:{form}@h/v1"))  # (a base URL's password, a credential)
    assert base(f"connect to https://u:{form}@h/v1 failed") == f"connect to https://u:{REDACTED}@h/v1 failed"


def test_a_short_key_in_a_userinfo_an_error_body_quotes_is_redacted(serve: Callable[[Echo], EchoServer]) -> None:
    """A server's error page quoting a URL with the client's key `pw` as its password: the error's text, body and
    traceback showed `https://u:pw@h`."""

    def echo(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
        key = headers["authorization"].removeprefix("Bearer ")
        return 502, "text/plain", f"connect to https://u:{key}@upstream failed".encode(), {}

    server = serve(echo)
    with pytest.raises(ServerError) as info:
        Client("openai", base_url=server.url, api_key="pw").send(
            FormattedRequest(body={}, path="/chat/completions", stream=False)
        )
    text = shown(info.value)
    assert f"https://u:{REDACTED}@upstream" in text and ":pw@" not in text, text


def test_a_key_of_free_text_min_characters_is_redacted_anywhere() -> None:
    """From FREE_TEXT_MIN characters on (a token after a scheme counted alone), a key is replaced wherever it
    occurs; a shorter `Bearer` token is not, though the header value it came from is as long."""
    assert FREE_TEXT_MIN == 8
    assert Redactor(["12345678"])("a12345678b") == f"a{REDACTED}b"
    assert Redactor(["1234567"])("a1234567b") == "a1234567b"
    r = Redactor(credentials("k", {"Authorization": "Bearer tok"}, ""))
    assert r("Bearer tokens: Bearer tok") == f"Bearer tokens: Bearer {REDACTED}"


def test_a_request_without_secrets_in_it_is_shown_as_before() -> None:
    """The repr of a request to send names its headers, not their values."""
    out = Outgoing("http://h/x?alt=sse", {"authorization": "Bearer sk-1"}, b"{}")
    assert repr(out) == "Outgoing(url='http://h/x?alt=sse', headers={'authorization'}, content=<2 bytes>)"
    assert "sk-1" not in repr(Client("openai", api_key="sk-1"))


def test_formatted_request_sent_with_key_in_extra_headers_only(serve: Callable[[Echo], EchoServer]) -> None:
    """An x-api-key given in ``headers=`` (replacing the client's) is redacted like the client's own key."""
    server = serve(as_json(401))
    client = Client("anthropic", base_url=server.url, api_key="unused-k", headers={"x-api-key": "hdr-secret-55"})
    with pytest.raises(AuthenticationError) as info:
        client.send(FormattedRequest(body={}, path="/v1/messages", stream=False))
    assert_hidden("hdr-secret-55", shown(info.value))


def test_chat_redacts_a_key_the_reply_text_echoes_across_deltas(
    serve: Callable[[Echo], EchoServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that echoes the key in the reply's text, split across two deltas: ``agentmsg chat`` shows the
    text with the key redacted (the end of a delta that may begin it waits for the next); the rest as sent."""
    key = KEYS["long"]

    def reply(headers: dict[str, str], path: str) -> tuple[int, str, bytes, dict[str, str]]:
        sent = headers["authorization"].removeprefix("Bearer ")
        pieces = ["your key is ", sent[:6], sent[6:] + " and s", "o on"]
        body = "".join(
            f"data: {json.dumps({'id': 'c', 'model': 'm', 'choices': [{'index': 0, 'delta': {'content': p}}]})}\n\n"
            for p in pieces
        )
        done = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        return 200, "text/event-stream", (body + f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n").encode(), {}

    server = serve(reply)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    code, out = run_cli("chat", "--provider", "openai", "--base-url", server.url, "--model", "m", "hi")
    assert code == 0 and out.startswith("your key is [redacted] and so on\n"), out
    assert_hidden(key, out)


def test_redactor_split_holds_back_only_what_may_begin_a_key() -> None:
    r = Redactor(["sk-secret"])
    assert r.split("hello") == ("hello", "")
    assert r.split("say sk-se") == ("say ", "sk-se")
    assert r.split("say sk-secret and s") == ("say [redacted] and ", "s")
    assert Redactor([]).split("sk-") == ("sk-", "")
    short = Redactor(["EMPTY"])
    assert short.split("What a nice day") == ("What a nice day", "")
    assert short.split("EMPTY or x-api-key: EMP") == ("EMPTY or ", "x-api-key: EMP")
    assert short.split("x-api-key: EMPTY") == ("", "x-api-key: EMPTY")  # (EMPTY-2 would be another key)
    assert short.split("x-api-key: EMPTY and") == ("x-api-key: [redacted] and", "")


STREAMED = [
    ("EMPTY", "Authorization: Bearer ", " and so on", f"Authorization: Bearer {REDACTED} and so on"),
    ("EMPTY", "{'x-api-key': '", "'} EMPTY", f"{{'x-api-key': '{REDACTED}'}} EMPTY"),
    ("EMPTY", "GET /v1?alt=sse&key=", "&x=1", f"GET /v1?alt=sse&key={REDACTED}&x=1"),
    ("EMPTY", "x-api-key: ", "-2 is another", "x-api-key: EMPTY-2 is another"),
    ("a", "What a nice day, x-goog-api-key=", ".", f"What a nice day, x-goog-api-key={REDACTED}."),
    ("a", "Bearer ", "", f"Bearer {REDACTED}"),
    (KEYS["long"], "your key is ", " and so on", f"your key is {REDACTED} and so on"),
    (KEYS["long"], "'authorization': 'Bearer ", "'", f"'authorization': 'Bearer {REDACTED}'"),
    (KEYS["long"], "[redacted] x-api-key: ", "", f"[redacted] x-api-key: {REDACTED}"),
    ("pw", "connect to https://u:", "@h failed", f"connect to https://u:{REDACTED}@h failed"),
    ("pw", "connect to https://", "@h failed", f"connect to https://{REDACTED}@h failed"),
    ("pw", "https://", ":x@h and https://u:pwd@h", f"https://{REDACTED}:x@h and https://u:pwd@h"),
    ("pw", "https://pw:", "@h", f"https://{REDACTED}:{REDACTED}@h"),
    ("EMPTY", '"https:\\/\\/u:', '@h"', f'"https:\\/\\/u:{REDACTED}@h"'),
    ("EMPTY", '"https:\\/\\/', ':x@h"', f'"https:\\/\\/{REDACTED}:x@h"'),
    ("pw", "https://u:", "x@h and https://pw", "https://u:pwx@h and https://pw"),  # (no password, no user: no @)
]


@pytest.mark.parametrize(("key", "before", "after", "expected"), STREAMED)
def test_chat_redacts_a_named_key_split_at_any_position(key: str, before: str, after: str, expected: str) -> None:
    """`agentmsg chat` shows the reply's text as it streams, holding back the end of a piece from where a key may
    begin: the name before a short key too. The text cut in two and in three pieces at every position shows as the
    whole text does, the key never."""
    r = Redactor(credentials(key, {}, ""))
    text = f"{before}{key}{after}"
    assert r(text) == expected
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            out = io.StringIO()
            term = _Redacting(out, r)
            for piece in (text[:i], text[i:j], text[j:]):
                term.write(piece)
                assert expected.startswith(out.getvalue()), (i, j, out.getvalue())  # (no key, then or later)
            term.release()
            assert out.getvalue() == expected, (i, j)
