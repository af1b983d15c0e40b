"""The provider clients against a hostile or broken server, over real HTTP on loopback: a raw socket
server (the standard library) that answers whatever bytes a test scripts, and what the client must do
then (each was a bug)."""

from __future__ import annotations

import asyncio
import codecs
import gzip
import json
import random
import socket
import sys
import threading
import zlib
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

import agentmsg
from agentmsg import UserMessage, reduce_events
from agentmsg.clients import (
    APIConnectionError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    Client,
    ProviderError,
    RateLimitError,
    ServerError,
)
from agentmsg.clients._errors import ERROR_BODY_MAX
from agentmsg.providers import FormattedRequest
from agentmsg.providers import anthropic as anthropic_mod
from agentmsg.providers import dashscope as dashscope_mod
from agentmsg.providers import gemini as gemini_mod
from agentmsg.providers import openai as openai_mod
from agentmsg.testing import ReplayServer, Reply
from tests._support.budget import SEED, rounds
from tests._support.mutators import garble_bytes, hostile_json_text, hostile_payloads, random_cuts
from tests._support.raw_server import RawServer, chunk
from tests.conftest import ROOT

FIX = ROOT / "tests" / "fixtures" / "providers"
CONVO = [UserMessage("hi")]


def endless(status: int, content_type: bytes, first: bytes, total: int = 48 << 20) -> Callable[[socket.socket], None]:
    """A chunked body of ``total`` bytes (far beyond what the kernel's socket buffers hold)."""

    def handler(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nTransfer-Encoding: chunked\r\n\r\n" % (status, content_type)
            + chunk(first)
        )
        piece = chunk(b"a" * 65536)
        for _ in range(total // 65536):
            conn.sendall(piece)
        conn.sendall(b"0\r\n\r\n")

    return handler


def client(url: str, **kw: Any) -> Any:
    kw.setdefault("max_retries", 0)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    return Client("openai", base_url=url, api_key="sk-test", model="m", **kw)


# ---- bodies without end: read no further than a limit ----------------------------------------------------


def test_an_endless_error_body_is_not_read_whole(raw: Any) -> None:
    """A 500 whose HTML page never ends was read whole into memory (gigabytes in seconds from a hostile
    server) before the error was raised: now the first ERROR_BODY_MAX bytes, sync and async."""
    server = raw(endless(500, b"text/html", b"<html>"))
    with pytest.raises(ServerError) as info:
        client(server.url).call(CONVO)
    assert isinstance(info.value.body, str) and info.value.body.startswith("<html>aaa")
    assert len(info.value.body) <= ERROR_BODY_MAX
    assert server.broken.wait(60) and not server.finished.is_set()

    async def run() -> None:
        async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
            with pytest.raises(ServerError):
                async for _ in c.stream(CONVO):
                    pass

    server.broken.clear()
    asyncio.run(run())
    assert server.broken.wait(60) and not server.finished.is_set()


def _broken_off(head: bytes, sent: bytes) -> Callable[[socket.socket], None]:
    def handler(conn: socket.socket) -> None:
        conn.sendall(head + sent)  # (then the connection closes, the body unfinished)

    return handler


def _gzip_start(data: bytes) -> bytes:
    """``data`` gzipped and flushed, the gzip stream left unfinished (what a compressing proxy sent before it died)."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)


#: An error status with an empty body: its status line, the body sent, and the error's text
_EMPTY_BODIES = {
    "431": (
        b"HTTP/1.1 431 Request Header Fields Too Large",
        b"",
        "openai 431: Request Header Fields Too Large (empty body)",
    ),
    "the server's own words": (b"HTTP/1.1 418 Brewing", b"", "openai 418: Brewing (empty body)"),
    "no reason phrase": (b"HTTP/1.1 400 ", b"", "openai 400: Bad Request (empty body)"),
    "whitespace": (b"HTTP/1.1 502 Bad Gateway", b" \r\n ", "openai 502: Bad Gateway (empty body)"),
    "an unknown status": (b"HTTP/1.1 599 ", b"", "openai 599: (empty body)"),
}


@pytest.mark.parametrize("how", ["stream", "call"])
@pytest.mark.parametrize("case", list(_EMPTY_BODIES))
def test_an_error_status_with_an_empty_body_says_its_reason_phrase(raw: Any, case: str, how: str) -> None:
    """A 431 with an empty body (a proxy refusing the request's headers) was said as 'openai 431: (empty body)':
    the status line's reason phrase was dropped. Now the message is the response's own phrase, else the status's
    standard one."""
    line, body, said = _EMPTY_BODIES[case]
    head = line + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
    server = raw(lambda conn: conn.sendall(head + body))
    with pytest.raises(ProviderError) as info:
        c = client(server.url)
        c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO)
    assert str(info.value) == said and info.value.message == said.partition(": ")[2]


_WORDS = "Überlastet: bitte später"
#: An error body in another encoding than UTF-8, or with control characters: its Content-Type (None: none), its
#: bytes, the error's message and its parsed body
_ENCODED_BODIES: dict[str, tuple[bytes | None, bytes, str, Any]] = {
    "UTF-16 with its BOM": (b"text/plain", _WORDS.encode("utf-16"), _WORDS, _WORDS),
    "UTF-16-BE with its BOM, said UTF-8": (
        b"text/plain; charset=utf-8",
        codecs.BOM_UTF16_BE + _WORDS.encode("utf-16-be"),
        _WORDS,
        _WORDS,
    ),
    "UTF-16-LE, no BOM nor charset": (None, _WORDS.encode("utf-16-le"), _WORDS, _WORDS),
    "UTF-16-BE, no BOM nor charset": (b"text/plain", _WORDS.encode("utf-16-be"), _WORDS, _WORDS),
    "UTF-16-LE by its charset": (b"text/plain; charset=UTF-16LE", _WORDS.encode("utf-16-le"), _WORDS, _WORDS),
    "UTF-16 by its charset, no BOM": (b'text/plain; charset="utf-16"', _WORDS.encode("utf-16-be"), _WORDS, _WORDS),
    "UTF-32-LE, no BOM nor charset": (None, _WORDS.encode("utf-32-le"), _WORDS, _WORDS),
    "Latin-1 by its charset": (b"text/html; charset=ISO-8859-1", _WORDS.encode("latin-1"), _WORDS, _WORDS),
    "windows-1252 by its charset": (
        b"text/plain;charset=cp1252",
        "€ 5 – zu viel".encode("cp1252"),
        "€ 5 – zu viel",
        "€ 5 – zu viel",
    ),
    "JSON in UTF-16 by its charset": (
        b"application/json; charset=utf-16",
        codecs.BOM_UTF16_LE + json.dumps({"error": {"message": _WORDS}}).encode("utf-16-le"),
        _WORDS,
        {"error": {"message": _WORDS}},
    ),
    "JSON in UTF-16-LE, no BOM nor charset": (
        b"application/json",
        json.dumps({"error": {"message": _WORDS}}, ensure_ascii=False).encode("utf-16-le"),
        _WORDS,
        {"error": {"message": _WORDS}},
    ),
    "a charset Python does not know": (b"text/plain; charset=klingon", "später".encode(), "später", "später"),
    "a charset that is no text encoding": (b"text/plain; charset=base64", b"c3BhdGVy", "c3BhdGVy", "c3BhdGVy"),
    "a binary body": (
        b"application/x-protobuf",
        b"\x08\x00\x12\x04down",
        "\\x08\\x00\\x12\\x04down",
        "\x08\x00\x12\x04down",
    ),
    "control characters": (
        b"text/plain",
        b"bad\x1b[31m red\x00 nul\r\n\xc2\x85line 2\x7f",
        "bad\\x1b[31m red\\x00 nul\\r\\n\\x85line 2\\x7f",
        "bad\x1b[31m red\x00 nul\r\n\x85line 2\x7f",
    ),
    "control characters in a JSON message": (
        b"application/json",
        b'{"error": {"message": "bad\\u001b[2J\\nline 2\\u0000"}}',
        "bad\\x1b[2J\\nline 2\\x00",
        {"error": {"message": "bad\x1b[2J\nline 2\x00"}},
    ),
}


@pytest.mark.parametrize("how", ["stream", "call", "async call"])
@pytest.mark.parametrize("case", list(_ENCODED_BODIES))
def test_an_error_body_is_read_in_its_encoding_and_said_without_control_characters(
    raw: Any, case: str, how: str
) -> None:
    """An error body in UTF-16 (with a BOM or none) or Latin-1 (its charset said) was read as UTF-8: its message
    was mangled text full of NULs ('\\x00b\\x00e\\x00r...'), and a JSON error in UTF-16 lost its message. Control
    characters (ESC, NUL, line breaks) went raw into the message, to a log line or a terminal. Now the body is read
    by its BOM, else its declared charset, else the NULs of UTF-16 or UTF-32 text, else as UTF-8; the message
    escapes its control characters as a repr does, and the parsed body keeps them."""
    content_type, body, message, parsed = _ENCODED_BODIES[case]
    ct = b"Content-Type: %s\r\n" % content_type if content_type is not None else b""
    head = b"HTTP/1.1 400 X\r\n" + ct + b"Content-Length: %d\r\n\r\n" % len(body)
    server = raw(lambda conn: conn.sendall(head + body))

    async def run() -> None:
        async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
            await c.call(CONVO)

    with pytest.raises(BadRequestError) as info:
        if how == "async call":
            asyncio.run(run())
        else:
            c = client(server.url)
            c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO)
    assert info.value.message == message and str(info.value) == f"openai 400: {message}"
    assert info.value.body == parsed


def _answer(server_url: str, how: str) -> Any:
    """What a call (``how``: call, async call, count) of the server at ``server_url`` returns."""
    if how == "count":
        with Client("anthropic", base_url=server_url, api_key="k", model="m", max_retries=0, timeout=5.0) as c:
            return c.count_tokens(CONVO)

    async def run() -> Any:
        async with AsyncClient("openai", base_url=server_url, api_key="k", model="m", max_retries=0) as c:
            return await c.call(CONVO)

    return asyncio.run(run()) if how == "async call" else client(server_url).call(CONVO)


@pytest.mark.parametrize("how", ["call", "async call", "count"])
@pytest.mark.parametrize("case", list(_ENCODED_BODIES))
def test_a_2xx_body_that_is_no_reply_is_read_in_its_encoding_as_an_error_body_is(raw: Any, case: str, how: str) -> None:
    """A 200 whose body is not the reply (a proxy's page, a count endpoint's error) is raised as
    BrokenStreamError with its body. That body was read by its BOM or the NULs of UTF-16 text only, never by
    the charset its Content-Type declares, as an error body is: a Latin-1 or windows-1252 page was quoted as
    replacement characters ('\ufffdberlastet: bitte sp\ufffdter'). Now it is read by the same rule as an error
    body (its BOM, else its charset, else its NULs, else UTF-8), for call(), the async call() and
    count_tokens() alike."""
    content_type, body, _message, parsed = _ENCODED_BODIES[case]
    ct = b"Content-Type: %s\r\n" % content_type if content_type is not None else b""
    head = b"HTTP/1.1 200 OK\r\n" + ct + b"Content-Length: %d\r\n\r\n" % len(body)
    server = raw(lambda conn: conn.sendall(head + body))
    with pytest.raises(BrokenStreamError) as info:
        _answer(server.url, how)
    assert info.value.status_code == 200 and info.value.body == parsed


_REPLY = {
    "id": "c",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": _WORDS}, "finish_reason": "stop"}],
}
#: A 2xx JSON reply (the call's, the count's) in another encoding than UTF-8: its Content-Type and how it is encoded
_ENCODED_REPLIES: dict[str, tuple[bytes, Callable[[str], bytes]]] = {
    "UTF-16 with its BOM": (b"application/json; charset=utf-16", lambda text: text.encode("utf-16")),
    "UTF-16-LE, no BOM, its charset UTF-16": (b"application/json; charset=utf-16", lambda t: t.encode("utf-16-le")),
    "UTF-16-BE, no BOM nor charset": (b"application/json", lambda text: text.encode("utf-16-be")),
    "UTF-32-LE with its BOM": (b"application/json; charset=utf-32", lambda text: text.encode("utf-32")),
    "UTF-8 with its BOM": (b"application/json", lambda text: codecs.BOM_UTF8 + text.encode()),
    "UTF-8, said Latin-1 (no charset for JSON)": (b"application/json; charset=iso-8859-1", str.encode),
}


@pytest.mark.parametrize("how", ["call", "async call", "count"])
@pytest.mark.parametrize("case", list(_ENCODED_REPLIES))
def test_a_2xx_json_reply_in_utf16_or_utf32_is_read_as_httpx_reads_it(raw: Any, case: str, how: str) -> None:
    """A JSON reply in UTF-16 or UTF-32 (its BOM or none: its charset said or not), or in UTF-8 after a BOM, was
    no reply ('the response is not openai's reply: ... not JSON'): it was parsed as UTF-8 bytes. httpx's
    ``response.json()``, which the openai and anthropic SDKs read a reply with, reads it (Python's json sniffs
    the BOM and the NULs). Now the clients read it so (call(), the async call(), count_tokens()); a charset that
    says another encoding is not read, as httpx does not (RFC 8259 11: JSON has none, and is UTF-8)."""
    content_type, encode = _ENCODED_REPLIES[case]
    reply = _REPLY if how != "count" else {"input_tokens": 7, "note": _WORDS}
    body = encode(json.dumps(reply, ensure_ascii=False))
    assert httpx.Response(200, content=body).json() == reply  # (as httpx reads it)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (content_type, len(body))
    server = raw(lambda conn: conn.sendall(head + body))
    got = _answer(server.url, how)
    if how == "count":
        assert got.total == 7 and got.reply == reply
    else:
        assert got.text_content == _WORDS and got.generate_reason == "MODEL_STOP"


def test_a_2xx_body_its_encoding_cannot_decode_is_no_reply(raw: Any) -> None:
    """A body whose BOM says UTF-16 but whose text is cut inside a character is no reply (its bytes not
    replaced): said so, its body quoted as an error body is."""
    body = json.dumps(_REPLY).encode("utf-16")[:-1]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    server = raw(lambda conn: conn.sendall(head + body))
    with pytest.raises(
        BrokenStreamError, match=r"not openai's reply: it is no utf-16-le text \(truncated data at byte"
    ):
        client(server.url).call(CONVO)


#: An error response whose body breaks off: its head, the bytes sent, the class, and what the message starts with
_BROKEN_OFF = {
    "length": (b"HTTP/1.1 400 X\r\nContent-Length: 1000\r\n\r\n", b'{"error"', BadRequestError, '{"error" ('),
    "chunked": (
        b"HTTP/1.1 503 X\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        chunk(b'{"error": {"message": "overloaded"}}'),  # (no last chunk)
        ServerError,
        "overloaded (",
    ),
    "gzip": (
        b"HTTP/1.1 429 X\r\nContent-Encoding: gzip\r\nContent-Length: 1000\r\n\r\n",
        _gzip_start(b"<html>slow down, the rest never comes"),
        RateLimitError,
        "<html>slow down, the rest never comes (",
    ),
}


@pytest.mark.parametrize("how", ["stream", "call"])
@pytest.mark.parametrize("broken", sorted(_BROKEN_OFF))
def test_an_error_body_that_breaks_off_keeps_what_arrived(raw: Any, broken: str, how: str) -> None:
    """An error response whose body broke off mid-read (Content-Length 1000, 8 bytes sent, then the connection
    closed) was said as 'openai 400: (empty body)': the bytes that arrived were dropped. Now they are the
    error's body and message, which says the body broke off and why, sync and async."""
    head, sent, cls, starts = _BROKEN_OFF[broken]
    server = raw(_broken_off(head, sent))

    def check(err: Any) -> None:
        assert type(err) is cls, err
        assert err.message.startswith(starts) and "(empty body)" not in err.message, err.message
        assert "the error body broke off after" in err.message, err.message

    with pytest.raises(cls) as info:
        c = client(server.url)
        c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO)
    check(info.value)

    async def run() -> None:
        async with AsyncClient("openai", base_url=server.url, api_key="sk-test", model="m", max_retries=0) as c:
            await (c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO))

    with pytest.raises(cls) as ainfo:
        asyncio.run(run())
    check(ainfo.value)
    assert ainfo.value.message == info.value.message


def test_a_whole_reply_longer_than_the_limit_is_not_read_whole(raw: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """call() read the whole body before the JSON reader refused it as beyond limits.max_bytes: an endless
    body filled the memory. Now reading stops past the limit, sync and async."""
    monkeypatch.setattr(agentmsg.limits, "max_bytes", 1 << 20)
    server = raw(endless(200, b"application/json", b'{"choices":[{"message":{"content":"'))
    with pytest.raises(BrokenStreamError, match=r"exceeds limits.max_bytes \(1048576 bytes\): not read further"):
        client(server.url).call(CONVO)
    assert server.broken.wait(60) and not server.finished.is_set()

    async def run() -> None:
        async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
            await c.call(CONVO)

    server.broken.clear()
    with pytest.raises(BrokenStreamError, match=r"exceeds limits\.max_bytes"):
        asyncio.run(run())
    assert server.broken.wait(60) and not server.finished.is_set()


# ---- the API key is never in a message --------------------------------------------------------------------


def test_a_key_with_whitespace_is_said_without_the_key_and_not_retried() -> None:
    """A key with trailing whitespace (a pasted line, an .env file) made h11 refuse the header with an error
    quoting it ('Illegal header value b"Bearer sk-..."'), retried as a connection failure and raised as
    APIConnectionError with the key in its message. Now an AuthenticationError before anything is sent; a
    headers= value HTTP cannot carry is a BadRequestError that does not quote it, not retried."""
    with ReplayServer() as server:
        server.add("/chat/completions", Reply.json({"error": {"message": "x"}}, status=400))
        for key in ("sk-secret-1234 ", " sk-secret-1234"):
            with pytest.raises(AuthenticationError, match="leading or trailing whitespace") as info:
                Client("openai", base_url=server.url, api_key=key, model="m", max_retries=2, backoff=0.01).call(CONVO)
            assert "secret" not in str(info.value) and "secret" not in repr(info.value.__cause__)
        c = Client(
            "openai",
            base_url=server.url,
            api_key="k",
            model="m",
            max_retries=2,
            backoff=0.01,
            headers={"X-Token": "tok-secret "},
        )
        with pytest.raises(BadRequestError, match="no HTTP header value") as binfo:
            c.call(CONVO)
        assert "secret" not in str(binfo.value) and binfo.value.__cause__ is None
        assert server.requests == []


@pytest.mark.parametrize("value", ["Bearer sk-secret\xa0", "Caf\xe9 secret", "a\r\nX-Injected: secret", "secret\t"])
def test_a_header_value_http_cannot_carry_is_said_without_it(value: str) -> None:
    """headers= with a non-ASCII value raised a bare UnicodeEncodeError whose repr quotes the value (a key
    passed as Authorization, say), not a ProviderError; a line break or tab reached h11, whose error quotes
    it too. Now a BadRequestError naming the header, not its value; nothing is sent, nothing retried."""
    with ReplayServer() as server:
        server.add("/chat/completions", Reply.json({"error": {"message": "x"}}, status=400))
        c = Client(
            "openai", base_url=server.url, api_key="k", model="m", max_retries=2, headers={"Authorization": value}
        )
        with pytest.raises(BadRequestError, match="'Authorization'") as info:
            c.call(CONVO)
        assert "secret" not in str(info.value) and "secret" not in repr(info.value)
        assert info.value.__cause__ is None and info.value.__context__ is None
        assert server.requests == []


@pytest.mark.parametrize("name", ["Cl\xe9", "X Token", "X-A\r\nX-Injected", ""])
def test_a_header_name_http_cannot_carry_is_a_bad_request(name: Any) -> None:
    """headers= with a non-ASCII name raised a bare UnicodeEncodeError (sync and async), and a name with a space
    or a line break reached h11, refused as a bad header value: none said which header was wrong. Now a
    BadRequestError saying the name is none; nothing sent. (A name that is no string: refused when the client is
    made, test_config.)"""
    with ReplayServer() as server:
        server.add("/chat/completions", Reply.json({"error": {"message": "x"}}, status=400))
        kw: dict[str, Any] = {"base_url": server.url, "api_key": "k", "model": "m", "headers": {name: "v"}}
        with pytest.raises(BadRequestError, match="no HTTP header name") as info:
            Client("openai", **kw).call(CONVO)
        assert info.value.__cause__ is None and info.value.__context__ is None

        async def run() -> None:
            await AsyncClient("openai", **kw).call(CONVO)

        with pytest.raises(BadRequestError, match="no HTTP header name"):
            asyncio.run(run())
        assert server.requests == []


# ---- redirects are not followed -----------------------------------------------------------------------------


def test_a_redirect_is_said_not_followed() -> None:
    """A 3xx was taken for the reply: a stream broke as 'the body is not an openai stream', call() as 'not
    openai's reply'. An http_client made with follow_redirects=True followed it, sending the x-api-key (httpx
    drops only Authorization on another host) wherever the server said, and a 301-303 as a GET. Now a
    BadRequestError naming the location, never followed, never retried; sync and async."""
    with ReplayServer() as elsewhere, ReplayServer() as server:
        target = elsewhere.url + "/v1/messages"
        server.add("/v1/messages", Reply(307, b"", headers={"location": target}))
        request = FormattedRequest(body={}, path="/v1/messages", stream=True)
        for http in (None, httpx.Client(follow_redirects=True)):
            c = Client("anthropic", base_url=server.url, api_key="sk-ant-secret", max_retries=2, http_client=http)
            with pytest.raises(BadRequestError, match=f"redirects to {target}: not followed") as info:
                list(c.send_stream(request))
            assert info.value.status_code == 307
        server.add("/v1/messages", Reply(301, b"Moved", headers={"location": target, "content-type": "text/html"}))

        async def run() -> None:
            async with AsyncClient(
                "anthropic", base_url=server.url, api_key="k", http_client=httpx.AsyncClient(follow_redirects=True)
            ) as ac:
                await ac.send(FormattedRequest(body={}, path="/v1/messages", stream=False))

        with pytest.raises(BadRequestError, match="redirects") as info:
            asyncio.run(run())
        assert (info.value.status_code, info.value.body) == (301, "Moved")
        assert elsewhere.requests == [] and len(server.requests) == 3


# ---- a response that is no valid HTTP: the server's protocol error, not retried ----------------------------------

#: A response head h11 refuses, and what the error says of it
_NOT_HTTP = {
    "101": (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "the server answered 101 Switching Protocols",
    ),
    "head-too-long": (
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n",
        "the response's headers are longer than the HTTP library reads",
    ),
    "status-line": (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "the response is not valid HTTP (illegal status line"),
    "content-length": (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "not valid HTTP (bad Content-Length)"),
}


def _ask(how: str, kw: dict[str, Any]) -> None:
    """One request with the client settings ``kw``, made as ``how`` says: ``call`` or ``stream`` (read to its end) of
    the sync client, ``async call`` or ``async stream`` of the async one."""

    async def run() -> None:
        async with AsyncClient("openai", **kw) as c:
            if how == "async call":
                await c.call(CONVO)
            else:
                async for _ in c.stream(CONVO):
                    pass

    if how == "call":
        Client("openai", **kw).call(CONVO)
    elif how == "stream":
        list(Client("openai", **kw).stream(CONVO))
    else:
        asyncio.run(run())


@pytest.mark.parametrize("how", ["call", "stream", "async call", "async stream"])
@pytest.mark.parametrize("case", list(_NOT_HTTP))
def test_a_response_that_is_no_valid_http_is_raised_at_once(raw: Any, case: str, how: str) -> None:
    """A 101 Switching Protocols (a websocket endpoint), a response head longer than h11 reads (its 'headers too
    large', 431), a status line that is none (an SSH port) came out as 'connection failed' with h11's words, after
    every retry: the server's protocol error, which each retry met again. Now an APIConnectionError naming what
    happened, at the first attempt, sync and async, call and stream."""
    head, said = _NOT_HTTP[case]
    server = raw(lambda conn: conn.sendall(head))
    kw: dict[str, Any] = {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 2, "backoff": 0.01}

    with pytest.raises(APIConnectionError) as info:
        _ask(how, kw)
    assert said in str(info.value) and "not retried; check base_url" in str(info.value)
    assert server.connections == 1


def test_a_server_that_closes_before_any_response_is_still_retried(raw: Any) -> None:
    """A connection the server closed before any response (a kept-alive one it dropped) is a network failure:
    retried, then 'connection failed' (not a response that is no valid HTTP)."""
    server = raw(lambda conn: None)
    with pytest.raises(APIConnectionError, match="connection failed: Server disconnected"):
        client(server.url, max_retries=2).call(CONVO)
    assert server.connections == 3


@pytest.mark.parametrize("how", ["call", "stream", "async call", "async stream"])
@pytest.mark.parametrize("status", [600, 777, 999])
def test_a_status_past_599_is_a_server_error_that_says_it_is_no_http_status(raw: Any, status: int, how: str) -> None:
    """A status of 600 to 999 (h11 reads three digits; 000 to 099 and four digits are no valid HTTP, above) is no
    HTTP status. RFC 9110 15 has a client take it as a 5xx, and the openai and anthropic SDKs do (their
    InternalServerError, retried): a ServerError, retried as a 5xx is. It was said as 'openai 600: boom', which
    did not say why a 600 is a server error; the message now says so, the provider's words kept before it."""
    body = b'{"error": {"message": "boom"}}'
    # (Connection: close: a server thread slow to close its end, under load, let the client send a retry on the
    # kept-alive connection, which the server never reads: that retry failed as a dropped connection, not a 600)
    head = b"HTTP/1.1 %d Weird\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % (
        status,
        len(body),
    )
    server = raw(lambda conn: conn.sendall(head + body))
    kw: dict[str, Any] = {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 2, "backoff": 0.01}

    with pytest.raises(ServerError) as info:
        _ask(how, kw)
    err = info.value
    assert err.status_code == status and err.body == {"error": {"message": "boom"}}
    assert err.message == (
        f"boom (status {status} is no HTTP status, which are 100 to 599: taken as a server error, as RFC 9110 15 asks)"
    )
    assert str(err) == f"openai {status}: {err.message}"
    assert server.connections == 3  # (retried twice, as a 5xx)


# ---- call() on a server that streams anyway --------------------------------------------------------------------

STREAMS = [
    ("openai", openai_mod, "openai/stream_parallel_tool_calls.sse"),
    ("anthropic", anthropic_mod, "anthropic/stream_sdk_tool_use.sse"),
    ("gemini", gemini_mod, "gemini/stream_function_call.sse"),
    ("dashscope", dashscope_mod, "dashscope/native_stream_thinking_docs.sse"),
]


@pytest.mark.parametrize(("provider", "mod", "fixture"), STREAMS, ids=[s[0] for s in STREAMS])
def test_call_on_a_server_that_streams_reads_the_stream(provider: str, mod: Any, fixture: str) -> None:
    """call() on a server that streams whatever it is asked (a proxy, a local server ignoring stream: false)
    raised 'not valid JSON' and lost the reply: a text/event-stream body is now read as the stream it is,
    sync and async; one cut short raises BrokenStreamError with what arrived."""
    body = (FIX / fixture).read_bytes()
    want = reduce_events(list(mod.parse_stream(body)))[0]
    request = FormattedRequest(body={}, path="/x", stream=False, model="m")
    with ReplayServer() as server:
        server.add("/x", Reply(body=body, sse=True, chunk_size=37))
        msg = Client(provider, base_url=server.url, api_key="k").send(request)
        assert msg.to_dict()["content"] == want.to_dict()["content"] and msg.generate_reason == want.generate_reason

        async def run() -> agentmsg.Msg:
            async with AsyncClient(provider, base_url=server.url, api_key="k") as ac:
                return await ac.send(request)

        assert asyncio.run(run()).to_dict()["content"] == want.to_dict()["content"]
        whole = {
            "openai": "openai/chat_completion_parallel_tool_calls.json",
            "anthropic": "anthropic/message_text.json",
            "gemini": "gemini/generate_content_text.json",
            "dashscope": "dashscope/native_multimodal_response_docs.json",
        }[provider]
        reply = (FIX / whole).read_bytes()
        server.add("/x", Reply(body=reply, headers={"Content-Type": "text/event-stream"}))  # a JSON reply mislabelled
        assert (
            Client(provider, base_url=server.url, api_key="k").send(request).to_dict()["content"]
            == (mod.parse_response(reply).to_dict()["content"])
        )
        if provider in ("openai", "anthropic"):  # the others have no end signal: a cut there reads whole
            server.add("/x", Reply(body=body[: len(body) // 2], sse=True))
            with pytest.raises(BrokenStreamError, match="ended before") as info:
                Client(provider, base_url=server.url, api_key="k").send(request)
            assert info.value.partial is not None and info.value.partial.generate_reason == "INTERRUPTED"


# ---- a provider error mid-stream --------------------------------------------------------------------------

MID_STREAM_ERRORS = [
    (
        "anthropic",
        "anthropic/stream_sdk_tool_use.sse",
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},'
        b' "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}\n\n',
        "req_011CSHoEeqs5C35K2UUqR7Fy",
    ),
    (
        "dashscope",
        "dashscope/native_stream_text_docs.sse",
        b'id:2\nevent:error\n:HTTP_STATUS/400\ndata:{"code":"DataInspectionFailed","message":"Output data may'
        b' contain inappropriate content.","request_id":"2a7a6a9c-0d16-9b3e-a8b2-1c0e4c5b0a11"}\n\n',
        "2a7a6a9c-0d16-9b3e-a8b2-1c0e4c5b0a11",
    ),
]


@pytest.mark.parametrize(("provider", "fixture", "error", "rid"), MID_STREAM_ERRORS, ids=["anthropic", "dashscope"])
def test_a_provider_error_mid_stream_carries_its_request_id(
    provider: str, fixture: str, error: bytes, rid: str
) -> None:
    """The request id a provider puts in its error event (what its support asks for) was kept in the error
    event but not on the BrokenStreamError raised (request_id None: only a response header was read)."""
    body = (FIX / fixture).read_bytes()
    body = body[: body.index(b"\n\n", body.index(b"data:")) + 2] + error
    with ReplayServer() as server:
        server.add("/x", Reply(body=body, sse=True))
        stream = Client(provider, base_url=server.url, api_key="k").send_stream(
            FormattedRequest(body={}, path="/x", stream=True)
        )
        with pytest.raises(BrokenStreamError) as info:
            list(stream)
        assert info.value.request_id == rid and stream.request_id == rid
        assert info.value.partial is not None and info.value.partial.generate_reason == "INTERRUPTED"
        server.add("/x", Reply(body=body, sse=True, headers={"x-request-id": "from-header"}))
        with pytest.raises(BrokenStreamError) as info:
            list(Client(provider, base_url=server.url, api_key="k").send_stream(FormattedRequest(body={}, path="/x")))
        assert info.value.request_id == "from-header"


# ---- the errors travel -------------------------------------------------------------------------------------


def test_errors_pickle_and_copy() -> None:
    """A ProviderError could not be pickled nor copied (Exception's reduce calls cls(*args), and provider is
    keyword-only): a process pool or a task queue lost it in a TypeError. A BrokenStreamError keeps its
    partial message, over real HTTP."""
    import copy
    import pickle

    err = RateLimitError("slow down", provider="openai", status_code=429, body={"error": {}}, request_id="r1")
    with ReplayServer() as server:
        body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
        server.add("/chat/completions", Reply(body=body, sse=True, disconnect_after=1500))
        with pytest.raises(BrokenStreamError) as info:
            list(client(server.url).stream(CONVO))
    for original in (err, info.value):
        for again in (pickle.loads(pickle.dumps(original)), copy.copy(original), copy.deepcopy(original)):
            assert type(again) is type(original) and str(again) == str(original)
            assert vars(again).keys() == vars(original).keys()
            for k in ("message", "provider", "status_code", "body", "request_id"):
                assert getattr(again, k) == getattr(original, k)
    again = pickle.loads(pickle.dumps(info.value))
    assert again.partial.to_dict() == info.value.partial.to_dict() and again.partial.text_content


def test_the_default_timeout_waits_for_a_reasoning_model() -> None:
    """The default read timeout was 60 s: a reasoning model whose first byte comes after a minute or more
    (streamed or not) timed out, was retried (billed again) and failed. Now the providers' SDKs' default:
    600 s, 10 s to connect; a timeout given is used as given."""
    for c in (Client("openai", api_key="k"), AsyncClient("anthropic", api_key="k")):
        assert (c.http.timeout.read, c.http.timeout.connect, c.http.timeout.write) == (600.0, 10.0, 600.0)
    assert Client("gemini", api_key="k", timeout=2.5).http.timeout == httpx.Timeout(2.5)


def test_a_stream_ended_before_any_reply_is_done(raw: Any) -> None:
    """A stream cancelled while it waited for the response headers (or refused: a 500 after the retries)
    kept done False, which says it may still go on (done: 'ended: read whole, broken or cancelled'). Now
    done, with no message; the connection is closed. (The task is cancelled once the server has read the whole
    request: cancelled as soon as the connection was taken, under load it was cut while it sent its request,
    and the server, which had not read one, never saw the connection close.)"""
    closed = threading.Event()

    def silent(conn: socket.socket) -> None:
        conn.settimeout(60)
        if conn.recv(1) == b"":
            closed.set()

    server = raw(silent)

    async def run() -> Any:
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m")
        stream = c.stream(CONVO)

        async def consume() -> None:
            async for _ in stream:
                pass

        task = asyncio.create_task(consume())
        assert await asyncio.to_thread(server.requests.acquire, timeout=60)  # sent: it waits for the headers
        assert not task.done() and not stream.done
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await c.aclose()
        return stream

    stream = asyncio.run(run())
    assert stream.done and stream.message is None
    assert closed.wait(60)
    with ReplayServer() as replay:
        replay.add("/chat/completions", Reply.json({"error": {"message": "down"}}, status=500))
        sync = client(replay.url).stream(CONVO)
        with pytest.raises(ServerError):
            list(sync)
        assert sync.done and sync.message is None


def _request_read(conn: socket.socket) -> None:
    """Read one request off a kept-alive connection (its headers, then its Content-Length bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            raise OSError("the client closed the connection")
        data += got
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(int(line[15:]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(rest) < length:
        rest += conn.recv(65536)


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_close_from_another_thread_cuts_an_error_body_read_on_a_kept_alive_connection(raw: Any, shell: str) -> None:
    """A 429 (Retry-After: 0) kept its connection alive; the retry went out on it and was answered with a 500
    whose page trickled in. ``close()`` from another thread, which cuts an error body's read on a new connection
    (the socket shut down), could not here: nothing told the stream which network stream it read, so close()
    waited its ``wait`` out and returned with the stream still running, read to the page's end. Now the
    response's network stream is the one shut, wherever it came from; ``aclose()`` from another task cuts it too."""
    trickling, over = threading.Event(), threading.Event()

    def handler(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 429 X\r\nRetry-After: 0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        )
        _request_read(conn)  # (the retry, on the same connection)
        conn.sendall(b"HTTP/1.1 500 X\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
        trickling.set()
        while not over.wait(0.05):
            conn.sendall(chunk(b"<p>busy</p>"))

    server = raw(handler)
    options: dict[str, Any] = {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 2}
    try:
        if shell == "sync":
            stream = Client("openai", **options, timeout=60.0).stream(CONVO)
            outcome: list[Any] = []

            def consume() -> None:
                try:
                    outcome.append(list(stream))
                except BaseException as exc:  # (what the consuming thread raised)
                    outcome.append(exc)

            reader = threading.Thread(target=consume, daemon=True)
            reader.start()
            assert trickling.wait(60)
            stream.close(wait=60)  # (from this thread, not the reader's)
            reader.join(60)
            assert stream.done and outcome == [[]]
        else:

            async def run() -> Any:
                async with AsyncClient("openai", **options, timeout=60.0) as c:
                    stream = c.stream(CONVO)
                    task = asyncio.create_task(stream.until_done())
                    assert await asyncio.to_thread(trickling.wait, 60)
                    await asyncio.wait_for(stream.aclose(), 60)
                    with pytest.raises(agentmsg.clients.APIConnectionError, match="closed before any reply"):
                        await asyncio.wait_for(task, 60)
                    return stream

            if sys.version_info < (3, 11):  # (aclose()'s cancellation cannot be told from another there)
                return
            stream = asyncio.run(run())
        assert stream.message is None and server.connections == 1
    finally:
        over.set()


@pytest.mark.no_kernel
def test_api_keys_from_each_providers_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each provider's usual variable; Gemini's two as google-genai reads them: GOOGLE_API_KEY wins when
    both are set (GEMINI_API_KEY won: another key than the provider's SDK used, another project billed); an
    empty variable is no key; a key given (even empty) is not replaced by the environment."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "DASHSCOPE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for provider, variable in [
        ("openai", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("dashscope", "DASHSCOPE_API_KEY"),
        ("dashscope-compatible", "DASHSCOPE_API_KEY"),
    ]:
        with pytest.raises(AuthenticationError, match=rf"set {variable}$"):
            Client(provider, base_url="http://127.0.0.1:9", model="m").call(CONVO)
        monkeypatch.setenv(variable, f"{variable}-value")
        assert Client(provider).api_key == f"{variable}-value"
        monkeypatch.delenv(variable)
    with pytest.raises(AuthenticationError, match=r"set GOOGLE_API_KEY or GEMINI_API_KEY$"):
        Client("gemini", base_url="http://127.0.0.1:9", model="m").call(CONVO)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini")
    assert Client("gemini").api_key == "gemini"
    monkeypatch.setenv("GOOGLE_API_KEY", "google")
    assert Client("gemini").api_key == "google"
    monkeypatch.setenv("GOOGLE_API_KEY", "")
    assert Client("gemini").api_key == "gemini"
    assert Client("gemini", api_key="").api_key == ""


def test_an_error_status_with_an_sse_body_says_the_providers_message() -> None:
    """DashScope refuses a streaming request with a 4xx whose body is an SSE error event (id:1 / event:error
    / :HTTP_STATUS/400 / data:{code, message, request_id}): the error's message was that whole text and
    its request id was lost. Now the event's message, its body parsed, its request id."""
    body = (
        b'id:1\nevent:error\n:HTTP_STATUS/400\ndata:{"request_id":"req-1","code":"Arrearage","message":"Access'
        b' denied, please make sure your account is in good standing."}\n\n'
    )
    with ReplayServer() as server:
        server.add("/services/aigc/text-generation/generation", Reply(400, body, sse=True))
        c = Client("dashscope", base_url=server.url, api_key="sk-test", model="qwen-plus")  # (a one-letter key
        # is redacted wherever the letter occurs: "ma[redacted]e sure")
        with pytest.raises(BadRequestError) as info:
            list(c.stream(CONVO))
        assert info.value.message == "Access denied, please make sure your account is in good standing."
        assert info.value.request_id == "req-1" and info.value.body["code"] == "Arrearage"
        server.add("/chat/completions", Reply(429, b'data: {"error": {"message": "slow down"}}\r\n\r\n', sse=True))
        with pytest.raises(RateLimitError, match=r"slow down$"):
            client(server.url).call(CONVO)
        server.add(
            "/chat/completions", Reply(400, b'event:error\r\ndata:{"message":"no blank line at its end"}', sse=True)
        )
        with pytest.raises(BadRequestError, match=r"no blank line at its end$"):  # (the body is whole)
            client(server.url, max_retries=0).call(CONVO)
        server.add("/chat/completions", Reply(500, b"data: not json\n\n", sse=True))
        with pytest.raises(ServerError, match=r"data: not json$"):
            client(server.url).call(CONVO)


def test_x_should_retry_is_obeyed() -> None:
    """OpenAI's and Anthropic's APIs may say whether to retry (x-should-retry), and their SDKs obey it: a 429
    that says false was retried anyway (pointless waits and requests), a 400 that says true was not."""
    with ReplayServer() as server:
        server.add(
            "/chat/completions", Reply.json({"error": {"message": "quota"}}, 429, headers={"x-should-retry": "false"})
        )
        with pytest.raises(RateLimitError, match="quota"):
            client(server.url, max_retries=2).call(CONVO)
        assert len(server.requests) == 1
        body = (FIX / "openai/chat_completion_parallel_tool_calls.json").read_bytes()
        server.add(
            "/chat/completions",
            Reply.json({"error": {"message": "x"}}, 400, headers={"X-Should-Retry": "True"}),
            Reply(body=body),
        )
        assert client(server.url, max_retries=2).call(CONVO).generate_reason == "TOOL_CALLS"
        assert len(server.requests) == 3
        server.add(
            "/chat/completions", Reply.json({"error": {"message": "down"}}, 503, headers={"x-should-retry": "maybe"})
        )
        with pytest.raises(ServerError):
            client(server.url, max_retries=1).call(CONVO)
        assert len(server.requests) == 5


WHOLE = [
    ("openai", openai_mod, "openai/chat_completion_parallel_tool_calls.json"),
    ("anthropic", anthropic_mod, "anthropic/message_thinking_signature.json"),
    ("gemini", gemini_mod, "gemini/generate_content_function_call.json"),
    ("dashscope", dashscope_mod, "dashscope/native_multimodal_response_docs.json"),
]


@pytest.mark.parametrize(("provider", "mod", "fixture"), WHOLE, ids=[w[0] for w in WHOLE])
def test_stream_on_a_server_that_answers_whole_gives_the_whole_reply(provider: str, mod: Any, fixture: str) -> None:
    """stream() on a server that ignores stream: true and answers one whole JSON reply (application/json) gives
    the message parse_response makes of it, sync and async, as a whole reply: not interrupted, no error
    (Anthropic's stream parser took a whole Messages response for no Anthropic stream: no message)."""
    reply = (FIX / fixture).read_bytes()
    want = mod.parse_response(reply)
    request = FormattedRequest(body={}, path="/x", stream=True, model="m")
    with ReplayServer() as server:
        server.add("/x", Reply(body=reply, chunk_size=29))
        with Client(provider, base_url=server.url, api_key="k").send_stream(request) as stream:
            events = list(stream)
        assert events and stream.done
        msg = stream.message
        assert msg is not None
        assert msg.to_dict()["content"] == want.to_dict()["content"]
        assert msg.generate_reason == want.generate_reason != "INTERRUPTED"

        async def run() -> agentmsg.Msg:
            async with AsyncClient(provider, base_url=server.url, api_key="k") as ac:
                s = ac.send_stream(request)
                return await s.until_done()

        assert asyncio.run(run()).to_dict()["content"] == want.to_dict()["content"]


def test_base_url_with_a_query_keeps_it_after_the_path() -> None:
    """A base URL with a query (Azure OpenAI's ?api-version=...) gets the path before its query, and a path's own
    query (Gemini's ?alt=sse) joins it: the path was written after the query ('?api-version=1/chat/completions')."""
    body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    with ReplayServer() as server:
        server.add("/openai/deployments/d/chat/completions", Reply(body=body, sse=True))
        client = Client("openai", base_url=f"{server.url}/openai/deployments/d?api-version=2024-10-21", api_key="k")
        assert client.stream(CONVO, model="m").until_done().content
        assert server.requests[-1].path == "/openai/deployments/d/chat/completions?api-version=2024-10-21"
        gem = (FIX / "gemini/stream_text.sse").read_bytes()
        server.add("/v1beta/models/g:streamGenerateContent", Reply(body=gem, sse=True))
        client = Client("gemini", base_url=f"{server.url}/?key-version=2", api_key="k")
        assert client.stream(CONVO, model="g").until_done().content
        assert server.requests[-1].path == "/v1beta/models/g:streamGenerateContent?key-version=2&alt=sse"


def test_a_long_provider_message_is_cut_in_the_error_text_and_whole_in_message() -> None:
    """A provider's message of megabytes (a proxy's error page in its message) went whole into the error's text,
    each traceback and log line: the text shows its first MESSAGE_SHOWN characters and says so; .message keeps it."""
    from agentmsg.clients._errors import MESSAGE_SHOWN

    long = "x" * 100_000
    with ReplayServer() as server:
        server.add("/chat/completions", Reply.json({"error": {"message": long}}, status=400))
        with pytest.raises(BadRequestError) as info:
            Client("openai", base_url=server.url, api_key="k", max_retries=0).call(CONVO, model="m")
    assert info.value.message == long
    text = str(info.value)
    assert len(text) < MESSAGE_SHOWN + 100 and text.startswith("openai 400: xxx") and "100,000 characters" in text
    short = BadRequestError("short", provider="openai", status_code=400)
    assert str(short) == "openai 400: short"


def test_replay_server_content_type_given_in_any_case_is_sent_once() -> None:
    """A Reply's content-type given in lower case was sent beside the server's own Content-Type (two headers)."""
    with ReplayServer() as server:
        server.add("/x", Reply(body=b"{}", headers={"content-type": "application/x-ndjson"}))
        response = httpx.post(f"{server.url}/x", content=b"{}")
    assert response.headers.get_list("content-type") == ["application/x-ndjson"]


# ---- limits at their edge (issue 28, class 9) --------------------------------------------------------------


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("chunk_size", [None, 7], ids=["one-piece", "pieces"])
def test_a_whole_reply_of_exactly_max_bytes_is_read_and_one_byte_more_is_refused(
    shell: str, chunk_size: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap of a whole reply is ``limits.max_bytes`` bytes included: a body of exactly that many is the reply,
    one byte more is refused (a check by ``>=``, or a cap read one byte short, would pass neither)."""
    reply = {"id": "c", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
    body = json.dumps(reply).encode()

    def call(server: ReplayServer) -> Any:
        if shell == "sync":
            return Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0).call(CONVO)

        async def run() -> Any:
            async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
                return await c.call(CONVO)

        return asyncio.run(run())

    with ReplayServer() as server:
        monkeypatch.setattr(agentmsg.limits, "max_bytes", len(body) + 10)
        for pad in (10, 0):  # under the cap, then exactly at it: read
            server.add("/chat/completions", Reply(body=body + b" " * pad, chunk_size=chunk_size))
            assert call(server).text_content == "ok"
        server.add("/chat/completions", Reply(body=body + b" " * 11, chunk_size=chunk_size))  # one over
        with pytest.raises(BrokenStreamError, match=rf"exceeds limits\.max_bytes \({len(body) + 10} bytes\)"):
            call(server)


@pytest.mark.no_kernel
@pytest.mark.parametrize("status", [300, 301, 302, 303, 307, 308])
def test_no_redirect_is_followed_not_even_one(status: int) -> None:
    """The clients' redirect limit is zero: the first 3xx is the error (a limit of one would follow it, sending
    the key to the other server), stream and whole, sync and async; nothing reaches the target."""
    with ReplayServer() as elsewhere, ReplayServer() as server:
        elsewhere.add("/chat/completions", Reply.json({"choices": []}))
        target = elsewhere.url + "/chat/completions"
        for how in ("stream", "call", "astream", "acall"):
            server.add("/chat/completions", Reply(status, b"", headers={"location": target}))
            c = Client("openai", base_url=server.url, api_key="sk-secret", model="m", max_retries=3)
            with pytest.raises(BadRequestError, match="not followed") as info:
                if how == "stream":
                    c.stream(CONVO).until_done()
                elif how == "call":
                    c.call(CONVO)
                else:

                    async def run(how: str) -> None:
                        async with AsyncClient("openai", base_url=server.url, api_key="k", model="m") as ac:
                            if how == "astream":
                                await ac.stream(CONVO).until_done()
                            else:
                                await ac.call(CONVO)

                    asyncio.run(run(how))
            assert info.value.status_code == status, how
        assert elsewhere.requests == [] and len(server.requests) == 4


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_a_whole_reply_one_byte_over_the_cap_in_a_last_piece_of_its_own_is_refused(
    shell: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reading stops only past the cap: a body whose pieces reach the cap exactly and then bring one byte
    more is refused (a reading that stopped at the cap would have taken its first ``cap`` bytes for the reply,
    here a JSON reply followed by spaces, valid when cut)."""
    reply = {"id": "c", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
    body = json.dumps(reply).encode() + b" " * 20
    monkeypatch.setattr(agentmsg.limits, "max_bytes", len(body))
    pieces = [body[:10], body[10:], b" "]

    def sync_handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=iter(pieces))

    async def chunks() -> Any:
        for p in pieces:
            yield p

    def async_handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json"}, content=chunks())

    with pytest.raises(BrokenStreamError, match=r"exceeds limits\.max_bytes"):
        if shell == "sync":
            http = httpx.Client(transport=httpx.MockTransport(sync_handler))
            Client("openai", base_url="http://x", api_key="k", model="m", max_retries=0, http_client=http).call(CONVO)
        else:

            async def run() -> None:
                http = httpx.AsyncClient(transport=httpx.MockTransport(async_handler))
                async with AsyncClient(
                    "openai", base_url="http://x", api_key="k", model="m", max_retries=0, http_client=http
                ) as c:
                    await c.call(CONVO)

            asyncio.run(run())


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("index", [1, 5, -1])
def test_a_whole_reply_without_a_first_choice_is_the_sdks_error(shell: str, index: int) -> None:
    """Found by the client-server fuzzer: call() on a reply whose only choice is not the first (its index 1, -1)
    raised a bare IndexError (the reducer gave no message and read_whole took the first); now the
    BrokenStreamError of a body that is not the provider's reply, as parse_response says (no choice 0). (An index
    past 64 bits is no choice number: read as the first, said, as a stream reads it: the test below.)"""
    reply = {"id": "c", "model": "m", "choices": [{"index": index, "message": {"role": "assistant", "content": "hi"}}]}
    body = json.dumps(reply).encode()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body))
        with pytest.raises(BrokenStreamError, match=r"no first choice \(index 0\)"):
            if shell == "sync":
                client(server.url).call(CONVO)
            else:

                async def run() -> None:
                    async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
                        await c.call(CONVO)

                asyncio.run(run())


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_a_whole_reply_whose_choice_index_is_past_64_bits_is_its_first_choice(shell: str) -> None:
    """A choice index past 64 bits is no choice number: call() reads the choice as the first, as parse_response and
    a stream read it (StreamBuilder.index), where it raised "no first choice" and a stream gave the reply."""
    reply = {
        "id": "c",
        "model": "m",
        "choices": [{"index": 10**400, "message": {"role": "assistant", "content": "hi"}}],
    }
    body = json.dumps(reply).encode()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body))
        if shell == "sync":
            msg = client(server.url).call(CONVO)
        else:

            async def run() -> Any:
                async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
                    return await c.call(CONVO)

            msg = asyncio.run(run())
    assert msg.text_content == "hi"


# ---- the client-server fuzzer (issue 28, deliver 6) ------------------------------------------------------------

FUZZ_ROUNDS = 12
# Recorded replies the fuzzed server starts from, per provider: a stream and a whole body.
_FUZZ_BODIES = {
    "openai": ("openai/stream_parallel_tool_calls.sse", "openai/chat_completion_single_tool_call.json"),
    "anthropic": ("anthropic/stream_sdk_tool_use.sse", "anthropic/message_tool_use_no_args.json"),
    "gemini": ("gemini/stream_function_call_partial_args.sse", "gemini/generate_content_google_search_grounding.json"),
    "dashscope": ("dashscope/native_stream_thinking_docs.sse", "dashscope/native_response_search_info_docs.json"),
}
_STATUSES = [200] * 8 + [201, 203, 204, 299, 300, 302, 304, 400, 401, 403, 404, 408, 409, 413, 429, 500, 503, 599, 999]
_TYPES = [b"text/event-stream", b"application/json", b"application/x-ndjson", b"text/html", b"", b"\xff/\xfe"]


def _fuzz_body(rng: random.Random, provider: str, stream: bool) -> bytes:
    raw = (FIX / _FUZZ_BODIES[provider][0 if stream else 1]).read_bytes()
    how = rng.randrange(5)
    if how == 0:
        return raw
    if how == 1:
        return garble_bytes(rng, raw)
    if how == 2:
        return raw[: rng.randrange(len(raw) + 1)]
    if how == 3 and stream:
        return hostile_payloads(raw, True, rng)
    if how == 3:
        return hostile_json_text(json.loads(raw), rng)
    return rng.choice([b"", b"\x00" * 50, b"<html>busy</html>", b'{"error": {"message": "no"}}', b"data: [DONE]\n\n"])


def _fuzz_response(rng: random.Random, provider: str, stream: bool) -> bytes:
    """A whole HTTP/1.1 response as a hostile or broken server sends it: any status (also none HTTP knows), any
    content type, a gzip or deflate body (broken, or cut) or an encoding nothing decodes, a Content-Length too short
    or too long, chunks cut anywhere, odd Retry-After and x-should-retry values; the connection closed after it."""
    body = _fuzz_body(rng, provider, stream)
    status = rng.choice(_STATUSES)
    head = [b"HTTP/1.1 %d %s" % (status, rng.choice([b"OK", b"", b"\xff\xfe"]))]
    ctype = rng.choice(_TYPES)
    if ctype or rng.random() < 0.5:
        head.append(b"Content-Type: " + ctype)
    encoding = rng.choice([None, None, None, b"gzip", b"deflate", b"br", b"gzip, gzip", b"x-nonsense"])
    if encoding is not None:
        head.append(b"Content-Encoding: " + encoding)
        if encoding.startswith(b"gzip"):
            body = gzip.compress(body)
        elif encoding == b"deflate":
            body = zlib.compress(body)
        if rng.random() < 0.5:
            body = garble_bytes(rng, body) if rng.random() < 0.5 else body[: rng.randrange(len(body) + 1)]
    for name, values in (
        (b"Retry-After", [b"0", b"-1", b"nan", b"1e999", b"Wed, 21 Oct 2015 07:28:00 GMT", b"\xff"]),
        (b"retry-after-ms", [b"0", b"abc", b"-5"]),
        (b"x-should-retry", [b"true", b"false", b"maybe"]),
        (b"Location", [b"http://127.0.0.1:9/x", b"", b"http://[::1"]),
        (b"request-id", [b"req\xff", b"r" * 3000]),
    ):
        if rng.random() < 0.15:
            head.append(name + b": " + rng.choice(values))
    framing = rng.randrange(4)
    if framing == 0:  # chunked, cut anywhere (and maybe without its last chunk)
        pieces = random_cuts(body, rng, most=12) if len(body) > 1 else [body]
        data = b"".join(b"%x\r\n" % len(p) + p + b"\r\n" for p in pieces if p)
        data += b"0\r\n\r\n" if rng.random() < 0.8 else b""
        head.append(b"Transfer-Encoding: chunked")
    elif framing == 1:  # a length that is right, short or long
        head.append(b"Content-Length: %d" % max(0, len(body) + rng.choice([0, 0, -3, 5, 10_000])))
        data = body
    else:  # no length: the body ends when the connection closes
        data = body
    head.append(b"Connection: close")
    return b"\r\n".join(head) + b"\r\n\r\n" + data


def _fuzz_check(got: Any, label: str) -> None:
    """A call's outcome under the contract: a message that validates and round-trips, or the SDK's own error."""
    if isinstance(got, BaseException):
        if not isinstance(got, agentmsg.AgentmsgError):
            raise AssertionError(f"{label}: {type(got).__name__} escaped the client: {got!r:.300}") from got
        return
    agentmsg.validate(orjson.loads(got.to_json_bytes()), "msg")
    assert agentmsg.Msg.from_json(got.to_json_bytes()).to_json_bytes() == got.to_json_bytes(), label


@pytest.mark.fuzz
@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("provider", sorted(_FUZZ_BODIES))
def test_the_clients_hold_their_contract_against_a_fuzzed_server(shell: str, provider: str) -> None:
    """A loopback server answers each request with a response a hostile or broken server might send (see
    ``_fuzz_response``): Client and AsyncClient, streamed and whole, end in a message that validates and round-trips
    or in the SDK's own error (an AgentmsgError); never another exception, never a hang (each response ends with the
    connection). A failure names its seed and round (AGENTMSG_FUZZ_SEED=<seed> replays it)."""
    rng = random.Random(f"{SEED}/server/{provider}/{shell}")
    responses: list[bytes] = []

    def handler(conn: socket.socket) -> None:
        conn.sendall(responses.pop(0))

    server = RawServer(handler)
    options: dict[str, Any] = {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 0}
    # (a generator: in make fuzz each round is taken while the time box allows one more)
    cases = ((round_, stream) for round_ in rounds(FUZZ_ROUNDS, share=1 / 8) for stream in (True, False))

    def label(round_: int, stream: bool, response: bytes) -> str:
        how = "stream" if stream else "call"
        return f"{provider} {shell} {how} (AGENTMSG_FUZZ_SEED={SEED}, round {round_ + 1})\n{response[:600]!r}"

    try:
        if shell == "sync":
            with Client(provider, **options, timeout=10.0) as c:
                for round_, stream in cases:
                    responses[:] = [response := _fuzz_response(rng, provider, stream)]
                    got: Any
                    try:
                        got = c.stream(CONVO).until_done() if stream else c.call(CONVO)
                    except Exception as exc:  # (the contract decides)
                        got = exc
                    _fuzz_check(got, label(round_, stream, response))
        else:

            async def run() -> None:
                async with AsyncClient(provider, **options, timeout=10.0) as ac:
                    for round_, stream in cases:
                        responses[:] = [response := _fuzz_response(rng, provider, stream)]
                        got: Any
                        try:
                            got = await (ac.stream(CONVO).until_done() if stream else ac.call(CONVO))
                        except Exception as exc:  # (the contract decides)
                            got = exc
                        _fuzz_check(got, label(round_, stream, response))

            asyncio.run(run())
    finally:
        server.close()
