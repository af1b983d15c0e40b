"""A compressed body is inflated in bounded pieces whatever its ``Content-Encoding``, over real loopback HTTP, sync
and async, streamed, whole and as an error body: several codings (``gzip, gzip``; the header given twice) are
each inflated in turn, a coding that cannot be so inflated is refused (the SDK's error, never httpx's decoder,
which inflates a network read whole: 3.5 KB of ``gzip, gzip`` held 2 GiB at once)."""

from __future__ import annotations

import asyncio
import functools
import gzip
import socket
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import agentmsg
from agentmsg import UserMessage
from agentmsg.clients import (
    APIConnectionError,
    AsyncClient,
    BadRequestError,
    BrokenStreamError,
    Client,
    ReplyTooLargeError,
)
from tests._support.providers import FIX

CONVO = [UserMessage("hi")]
SSE = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
WHOLE = (FIX / "openai/chat_completion_text.json").read_bytes()
CAP = 1 << 20
#: Bytes a bomb may make the client hold, at most, for a reply of CAP bytes (httpx's decoder held all 64 MiB)
PEAK = 32 << 20

Handler = Callable[[socket.socket], None]


def encode(data: bytes, codings: Sequence[bytes]) -> bytes:
    """``data`` with each coding applied in the order listed (RFC 9110 8.4)."""
    for coding in codings:
        data = gzip.compress(data, 9, mtime=0) if coding == b"gzip" else zlib.compress(data, 9)
    return data


def respond(status: int, ctype: bytes, codings: Sequence[bytes], body: bytes) -> Handler:
    """One response: its ``Content-Encoding`` lines as given (a line may list several codings)."""
    head = b"HTTP/1.1 %d X\r\nContent-Type: %s\r\n" % (status, ctype)
    head += b"".join(b"Content-Encoding: " + c + b"\r\n" for c in codings)
    head += b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)

    def handler(conn: socket.socket) -> None:
        conn.sendall(head + body)

    return handler


def sync_client(url: str) -> Client:
    return Client("openai", base_url=url, api_key="k", model="m", max_retries=0, timeout=30.0)


def async_client(url: str) -> AsyncClient:
    return AsyncClient("openai", base_url=url, api_key="k", model="m", max_retries=0, timeout=30.0)


def outcome(url: str, shell: str, how: str) -> Any:
    """A stream's message or a call's (or the exception raised)."""
    if shell == "sync":
        try:
            with sync_client(url) as c:
                return c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO)
        except Exception as exc:  # (the test decides)
            return exc

    async def run() -> Any:
        try:
            async with async_client(url) as c:
                return await (c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO))
        except Exception as exc:  # (the test decides)
            return exc

    return asyncio.run(run())


@pytest.fixture
def cap(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(agentmsg.limits, "max_bytes", CAP)
    return CAP


# ---- several content codings ----------------------------------------------------------------------------------

#: ``Content-Encoding`` lines as sent, and the codings applied (in that order)
STACKED = {
    "gzip, gzip": ([b"gzip, gzip"], [b"gzip", b"gzip"]),
    "gzip,gzip": ([b"gzip,gzip"], [b"gzip", b"gzip"]),
    "deflate, gzip": ([b"deflate, gzip"], [b"deflate", b"gzip"]),
    "gzip, deflate": ([b"GZip , Deflate"], [b"gzip", b"deflate"]),
    "the header twice": ([b"gzip", b"gzip"], [b"gzip", b"gzip"]),
    "with identity": ([b"identity, gzip", b"identity"], [b"gzip"]),
    # a coding nothing knows (a proxy's utf-8: no compression) is read as none, as httpx reads it
    "unknown": ([b"utf-8"], []),
    "gzip and unknown": ([b"gzip, x-nonsense"], [b"gzip"]),
}


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("stacked", sorted(STACKED))
def test_a_body_of_several_codings_is_inflated_coding_by_coding(raw: Any, stacked: str, shell: str) -> None:
    """Each coding is undone, the last applied first: the reply is the one sent, streamed and whole."""
    lines, applied = STACKED[stacked]
    want = {}
    for how, body, ctype in (("stream", SSE, b"text/event-stream"), ("call", WHOLE, b"application/json")):
        plain = raw(respond(200, ctype, [], body))
        want[how] = outcome(plain.url, "sync", how)
        server = raw(respond(200, ctype, lines, encode(body, applied)))
        got = outcome(server.url, shell, how)
        assert not isinstance(got, BaseException), got
        assert got.text_content == want[how].text_content != "", how
        assert got.generate_reason == want[how].generate_reason == "MODEL_STOP", how


@functools.cache
def bomb(applied: tuple[bytes, ...]) -> bytes:
    """64 MiB of stream events, gzipped, then each coding of ``applied`` on that (a few KB in all)."""
    event = (
        b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":'
        b'{"content":"' + b"x" * 4000 + b'"},"finish_reason":null}]}\n\n'
    )
    block = event * ((1 << 20) // len(event))
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    inner = b"".join(z.compress(block) for _ in range(64)) + z.flush()
    return encode(inner, applied)


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("how", ["stream", "call", "error"])
@pytest.mark.parametrize("stacked", ["gzip, gzip", "the header twice", "deflate, gzip"])
def test_a_bomb_of_several_codings_is_inflated_in_bounded_pieces(
    raw: Any, cap: int, stacked: str, how: str, shell: str
) -> None:
    """A body of several codings inflating to 64 MiB went to httpx's decoder, which inflated each network read
    whole: all 64 MiB held at once (2 GiB from 3.5 KB), the error body's 1 MiB cap included. Now each coding is
    inflated a piece at a time and the read stops at the limit: a stream or call ends in ReplyTooLargeError, an
    error status in its error, the memory held far below what the body inflates to."""
    lines, applied = STACKED[stacked]
    body = bomb(tuple(applied))
    assert len(body) < 64 << 10
    status, ctype = (400, b"text/event-stream") if how == "error" else (200, b"text/event-stream")
    server = raw(respond(status, ctype, [b"gzip, " + lines[0], *lines[1:]], body))
    tracemalloc.start()
    try:
        got = outcome(server.url, shell, "call" if how == "call" else "stream")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    if how == "error":
        assert isinstance(got, BadRequestError) and got.status_code == 400, got
        assert got.message.startswith('data: {"id":"c1"')
    else:
        assert isinstance(got, ReplyTooLargeError) and got.limit == cap, got
    assert peak < PEAK, peak


#: ``Content-Encoding`` lines no body is inflated for: a compression not inflated in bounded pieces here (``br``,
#: even with brotli installed; ``zstd``), alone or among others, or more codings than are inflated
REFUSED = {
    "br": ([b"br"], []),
    "zstd": ([b"zstd"], []),
    "gzip then br": ([b"gzip", b"br"], [b"gzip"]),
    "five codings": ([b"gzip, gzip, gzip, gzip, gzip"], [b"gzip"] * 5),
}


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("refused", sorted(REFUSED))
def test_a_coding_not_inflated_in_bounded_pieces_is_refused(raw: Any, refused: str, shell: str) -> None:
    """httpx decoded br and zstd (their packages installed) a network read whole, and read a coding it does not
    know as none: now the body is not decoded, and the SDK says so (a broken stream, a broken body)."""
    lines, applied = REFUSED[refused]
    for how, body, ctype in (("stream", SSE, b"text/event-stream"), ("call", WHOLE, b"application/json")):
        server = raw(respond(200, ctype, lines, encode(body, applied)))
        got = outcome(server.url, shell, how)
        assert isinstance(got, BrokenStreamError if how == "stream" else APIConnectionError), got
        said = "5 content codings" if refused == "five codings" else "is not inflated here"
        assert said in str(got) and "not decoded" in str(got), got


# ---- a gzip body of several members ----------------------------------------------------------------------------


def in_chunks(status: int, ctype: bytes, coding: bytes, body: bytes, size: int = 7) -> Handler:
    """One chunked response of ``size``-byte chunks: a gzip member's end and the next one's start come in
    different network reads."""
    head = b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Encoding: %s\r\n" % (status, ctype, coding)
    framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[i : i + size] for i in range(0, len(body), size)))

    def handler(conn: socket.socket) -> None:
        conn.sendall(head + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + framed + b"0\r\n\r\n")

    return handler


def members(data: bytes, *, padding: bytes = b"") -> bytes:
    """``data`` as three gzip members, the middle one empty (each followed by ``padding``)."""
    half = len(data) // 2
    return b"".join(gzip.compress(part, 9, mtime=0) + padding for part in (data[:half], b"", data[half:]))


MEMBERS = {
    "members": lambda data: members(data),
    "zero padding": lambda data: members(data, padding=b"\0" * 9),
    "members, then gzip": lambda data: gzip.compress(members(data), 9, mtime=0),
}


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("form", sorted(MEMBERS))
def test_a_gzip_body_of_several_members_is_read_whole(raw: Any, form: str, chunked: bool, shell: str) -> None:
    """A gzip body of several members (RFC 1952 2.2; gzip.decompress reads them all) lost everything after its
    first member unsaid, and the SDK then blamed the provider (the stream ended before the provider finished, the
    reply not valid JSON): now each member is inflated in turn, streamed and whole."""
    for how, body, ctype in (("stream", SSE, b"text/event-stream"), ("call", WHOLE, b"application/json")):
        plain = raw(respond(200, ctype, [], body))
        want = outcome(plain.url, "sync", how)
        content = MEMBERS[form](body)
        assert zlib.decompress(content, 31) != body  # (zlib alone reads the first member)
        coding = b"gzip, gzip" if form == "members, then gzip" else b"gzip"
        server = raw(in_chunks(200, ctype, coding, content) if chunked else respond(200, ctype, [coding], content))
        got = outcome(server.url, shell, how)
        assert not isinstance(got, BaseException), got
        assert got.text_content == want.text_content != "" and got.generate_reason == want.generate_reason, how


#: Bodies whose compressed data ends before the body does: what follows, and what the SDK says of it
TRAILING = {
    "gzip, then garbage": (b"gzip", b"garbage!", "the bytes after the body's gzip member 1 are no gzip member"),
    "gzip, then a byte": (b"gzip", b"x", "the bytes after the body's gzip member 1 are no gzip member"),
    "gzip, then a cut member": (b"gzip", b"\x1f\x8b\x08", "are no gzip member: the body ends inside one"),
    "deflate, then bytes": (b"deflate", b"more", "4 bytes follow the end of the body's deflate data"),
    "raw deflate, then bytes": (b"raw", b"\0", "1 bytes follow the end of the body's deflate data"),
}


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("trailing", sorted(TRAILING))
def test_bytes_after_the_compressed_data_are_a_decoding_error(raw: Any, trailing: str, shell: str) -> None:
    """Bytes after a gzip member that are no member, or after the end of deflate data, were dropped unsaid (the
    reply read cut short there, the provider blamed): now a call raises, and a stream whose reply they cut short
    breaks, saying what came (its events before them yielded). (A stream whose reply was whole before them ends
    as after any break past the reply's end: whole.)"""
    coding, after, said = TRAILING[trailing]
    cut = SSE.find(b"\n\n", len(SSE) // 2) + 2
    for how, body, ctype in (("stream", SSE[:cut], b"text/event-stream"), ("call", WHOLE, b"application/json")):
        if coding == b"raw":
            z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
            content, sent = z.compress(body) + z.flush(), b"deflate"
        else:
            content, sent = (gzip.compress(body, 9, mtime=0) if coding == b"gzip" else zlib.compress(body, 9)), coding
        server = raw(respond(200, ctype, [sent], content + after))
        got = outcome(server.url, shell, how)
        assert isinstance(got, BrokenStreamError if how == "stream" else APIConnectionError), got
        assert said in str(got), got
        if how == "stream":
            assert isinstance(got, BrokenStreamError)
            assert got.partial is not None and got.partial.text_content != ""


# ---- a streamed body that cannot be decoded ----------------------------------------------------------------------

#: Streamed bodies the client cannot decode: their ``Content-Encoding`` lines, and their bytes
UNDECODABLE = {
    "br": ([b"br"], SSE),  # (a coding not inflated here: a caller's headers= asked for it, say)
    "not gzip": ([b"gzip"], SSE),
    "gzip, its check corrupt": ([b"gzip"], gzip.compress(SSE, 9, mtime=0)[:-8] + bytes(8)),
}


@pytest.mark.parametrize("shell", ["sync", "async"])
@pytest.mark.parametrize("case", sorted(UNDECODABLE))
def test_a_stream_whose_body_cannot_be_decoded_says_so_not_a_broken_connection(raw: Any, case: str, shell: str) -> None:
    """A streamed body the client cannot decode broke the stream as 'the connection broke: the body is not gzip
    data: ...', an error (and stop reason) of type ``disconnect``: the connection was whole, and a retry gets the
    same body. Now the stream says the body could not be decoded, type ``decoding``, sync and async."""
    lines, body = UNDECODABLE[case]
    server = raw(respond(200, b"text/event-stream", lines, body))
    got = outcome(server.url, shell, "stream")
    assert isinstance(got, BrokenStreamError), got
    assert got.message.startswith("the body could not be decoded: ") and "connection" not in got.message, got
    assert got.partial is not None and got.partial.generate_reason == "INTERRUPTED"
    errors = got.partial.metadata["agentmsg_errors"]
    assert [e["type"] for e in errors] == ["decoding"] and errors[0]["message"] == got.message
    assert got.partial.metadata["agentmsg_stop_reason"] == "decoding"
