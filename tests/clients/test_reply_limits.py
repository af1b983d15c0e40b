"""A reply is read no further than ``limits.max_bytes``, streamed or whole, sync and async, plain or compressed
(issue 28, class 4): a server sending an endless stream grew the client to 3.8 GB and built a 498 MB message.
Each test counts the bytes the client read (a counting transport), never the time it took."""

from __future__ import annotations

import asyncio
import gzip
import socket
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest

import agentmsg
from agentmsg import UserMessage
from agentmsg.clients import AsyncClient, BrokenStreamError, Client, ReplyTooLargeError, ServerError
from agentmsg.testing import ReplayServer, Reply
from tests._support.providers import FIX, run_cli
from tests._support.raw_server import chunk

CONVO = [UserMessage("hi")]
CAP = 1 << 20
#: Bytes the client may read past the limit: what one network read of the HTTP library holds, and the chunked
#: framing around it
SLACK = 1 << 17
#: Bytes a gzip bomb may make the client hold, at most, for a reply of CAP bytes (measured: 11 MB for a stream,
#: its events and message included; 88 MB when httpx inflated each network read whole)
PEAK = 32 << 20


def delta(text: bytes) -> bytes:
    return (
        b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"'
        + text
        + b'"},"finish_reason":null}]}\n\n'
    )


EVENT = delta(b"x" * 4000)


def forever(head: bytes, piece: bytes, total: int = 1 << 30, status: int = 200) -> Callable[[socket.socket], None]:
    """A chunked body (status 200 unless told): ``piece`` again and again, up to ``total`` bytes (far beyond any
    limit here: a client that does not stop makes the test fail, not hang)."""

    def handler(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 %d X\r\n" % status + head + b"Transfer-Encoding: chunked\r\n\r\n")
        framed = chunk(piece)
        for _ in range(total // len(piece)):
            conn.sendall(framed)
        conn.sendall(b"0\r\n\r\n")

    return handler


def sse_forever() -> Callable[[socket.socket], None]:
    return forever(b"Content-Type: text/event-stream\r\n", EVENT * 16)


def gzip_bomb(first: bytes, filler: bytes) -> Callable[[socket.socket], None]:
    """A gzip body of ``first`` then ``filler`` for ever: each ~1 KiB sent inflates to 1 MiB (after a full
    flush the compressor starts afresh, so one compressed block may be sent again and again)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    start = z.compress(first) + z.flush(zlib.Z_FULL_FLUSH)
    block = z.compress(filler) + z.flush(zlib.Z_FULL_FLUSH)
    assert block == z.compress(filler) + z.flush(zlib.Z_FULL_FLUSH)
    head = b"Content-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"

    def handler(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n" + head + b"Transfer-Encoding: chunked\r\n\r\n" + chunk(start))
        framed = chunk(block * 64)
        for _ in range(1 << 14):  # 64 GiB inflated
            conn.sendall(framed)
        conn.sendall(b"0\r\n\r\n")

    return handler


class Counting(httpx.HTTPTransport):
    """The bytes of the response bodies the client read off the connection (before any decoding)."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        inner, counter = response.stream, self

        class Counted(httpx.SyncByteStream):
            def __iter__(self) -> Iterator[bytes]:
                for data in inner:  # type: ignore[union-attr]
                    counter.read += len(data)
                    yield data

            def close(self) -> None:
                inner.close()  # type: ignore[union-attr]

        response.stream = Counted()
        return response


class AsyncCounting(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.read = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        inner, counter = response.stream, self

        class Counted(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for data in inner:  # type: ignore[union-attr]
                    counter.read += len(data)
                    yield data

            async def aclose(self) -> None:
                await inner.aclose()  # type: ignore[union-attr]

        response.stream = Counted()
        return response


def sync_client(url: str, transport: httpx.BaseTransport | None = None, provider: str = "openai") -> Client:
    http = httpx.Client(transport=transport, timeout=30.0)
    return Client(provider, base_url=url, api_key="k", model="m", max_retries=0, http_client=http)


def async_client(url: str, transport: httpx.AsyncBaseTransport | None = None) -> AsyncClient:
    http = httpx.AsyncClient(transport=transport, timeout=30.0)
    return AsyncClient("openai", base_url=url, api_key="k", model="m", max_retries=0, http_client=http)


def assert_cut(err: ReplyTooLargeError, events: list[dict[str, Any]], cap: int) -> None:
    """The reply stopped at ``cap`` with what arrived kept: the events yielded, the partial message of them,
    the reason recorded (its error: type too_large, rule max-bytes, the limit)."""
    assert err.limit == cap and err.rule == "max-bytes" and isinstance(err, BrokenStreamError)
    assert f"exceeds limits.max_bytes ({cap} bytes)" in str(err)
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_BLOCK_DELTA")
    msg = err.partial
    assert msg is not None and msg.generate_reason == "INTERRUPTED"
    assert msg.text_content == text and cap // 2 < len(text) <= cap
    assert len(msg.to_json()) <= cap + 4096
    (error,) = msg.metadata["agentmsg_errors"]
    assert (error["type"], error["rule"], error["limit"]) == ("too_large", "max-bytes", cap)
    assert [e["value"]["type"] for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.error"] == [
        "too_large"
    ]


@pytest.fixture
def cap(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(agentmsg.limits, "max_bytes", CAP)
    return CAP


def test_an_endless_stream_stops_at_the_limit_sync(raw: Any, cap: int) -> None:
    """An endless stream was read for ever (3.8 GB in 25 s, a 498 MB message): now the bytes up to
    limits.max_bytes are read, their events yielded, then ReplyTooLargeError with the message of them."""
    server = raw(sse_forever())
    counting = Counting()
    stream = sync_client(server.url, counting).stream(CONVO)
    events: list[dict[str, Any]] = []
    with pytest.raises(ReplyTooLargeError) as info:
        for e in stream:
            events.append(e)
    assert_cut(info.value, events, cap)
    assert cap < counting.read <= cap + SLACK
    assert stream.done and stream.message is not None and stream.message.text_content == info.value.partial.text_content
    assert server.broken.wait(60) and not server.finished.is_set()


def test_an_endless_stream_stops_at_the_limit_without_raising(raw: Any, cap: int) -> None:
    """raise_on_error=False: the stream ends, ``error`` says why, the message keeps what arrived."""
    server = raw(sse_forever())
    stream = sync_client(server.url).stream(CONVO, raise_on_error=False)
    events = list(stream)
    assert stream.error is not None and "exceeds limits.max_bytes" in stream.error
    msg = stream.message
    assert msg is not None and msg.metadata["agentmsg_errors"][0]["rule"] == "max-bytes"
    assert 0 < len(msg.text_content) <= cap and events[-1]["type"] == "AGENT_END"


def test_an_endless_stream_stops_at_the_limit_async(raw: Any, cap: int) -> None:
    server = raw(sse_forever())
    counting = AsyncCounting()

    async def run() -> tuple[Any, list[dict[str, Any]]]:
        async with async_client(server.url, counting) as c:
            events: list[dict[str, Any]] = []
            with pytest.raises(ReplyTooLargeError) as info:
                async for e in c.stream(CONVO):
                    events.append(e)
            await c.http.aclose()
            return info.value, events

    err, events = asyncio.run(run())
    assert_cut(err, events, cap)
    assert cap < counting.read <= cap + SLACK + (1 << 16)  # (+ what its reading task read ahead)
    assert server.broken.wait(60) and not server.finished.is_set()


def test_a_gzip_bomb_stream_stops_at_the_limit_in_bounded_memory(raw: Any, cap: int) -> None:
    """A gzip stream where each KiB sent inflates to a MiB: the limit is on the bytes inflated, and the
    inflating itself is bounded (httpx inflates a whole network read at once: 64 KiB read, 64 MiB held)."""
    server = raw(gzip_bomb(delta(b"start"), EVENT * 256))
    counting = Counting()
    stream = sync_client(server.url, counting).stream(CONVO)
    events: list[dict[str, Any]] = []
    tracemalloc.start()
    try:
        with pytest.raises(ReplyTooLargeError) as info:
            for e in stream:
                events.append(e)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_cut(info.value, events, cap)
    assert counting.read <= SLACK  # (one network read of what was sent compressed)
    assert peak < PEAK, peak

    server = raw(gzip_bomb(delta(b"start"), EVENT * 256))

    async def run() -> ReplyTooLargeError:
        async with async_client(server.url) as c:
            with pytest.raises(ReplyTooLargeError) as ainfo:
                await c.stream(CONVO).until_done()
            await c.http.aclose()
            return ainfo.value

    assert asyncio.run(run()).partial.text_content.startswith("startxxx")


def test_a_gzip_bomb_whole_reply_stops_at_the_limit(raw: Any, cap: int) -> None:
    """call() read a gzip body through httpx's decoder, a whole network read inflated at once: now the same
    bounded inflating as a stream's, and ReplyTooLargeError past the limit."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    start = z.compress(b'{"choices":[{"message":{"content":"') + z.flush(zlib.Z_FULL_FLUSH)
    block = z.compress(b"x" * (1 << 20)) + z.flush(zlib.Z_FULL_FLUSH)

    def handler(conn: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        conn.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n" + chunk(start))
        for _ in range(1 << 14):
            conn.sendall(chunk(block * 64))

    server = raw(handler)
    tracemalloc.start()
    try:
        with pytest.raises(ReplyTooLargeError, match=r"exceeds limits\.max_bytes \(1048576 bytes\)") as info:
            sync_client(server.url).call(CONVO)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.limit == cap and info.value.partial is None
    assert peak < PEAK, peak


@pytest.mark.parametrize("filler", ["empty-members", "zero-padding"])
@pytest.mark.parametrize("how", ["stream", "call", "error"])
@pytest.mark.parametrize("shell", ["sync", "async"])
def test_a_compressed_body_that_inflates_to_nothing_stops_at_the_limit(
    raw: Any, cap: int, shell: str, how: str, filler: str
) -> None:
    """A gzip body of empty members, or of one member then zero bytes (which gzip readers skip), sent without
    end: each network read inflates to nothing, so the limit on the bytes inflated was never checked, and the
    client read all the server sent, streamed, whole or as an error body (64 MiB under a limit of 1 MiB; a
    server that never stops kept it reading for ever). Now the bytes received count too, as for a stream's
    gzip bomb: read no further than the limit (the error body's, as large), ReplyTooLargeError for a reply."""
    empty = gzip.compress(b"")
    piece = empty * 2048 if filler == "empty-members" else empty + bytes(1 << 16)
    status = 500 if how == "error" else 200
    head = b"Content-Type: %s\r\nContent-Encoding: gzip\r\n" % (
        b"text/event-stream" if how == "stream" else b"application/json"
    )
    server = raw(forever(head, piece, total=64 << 20, status=status))
    counting: Counting | AsyncCounting
    if shell == "sync":
        counting = Counting()
        c = sync_client(server.url, counting)
        try:
            got: Any = c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO)
        except agentmsg.AgentmsgError as exc:
            got = exc
    else:
        counting = AsyncCounting()

        async def run() -> Any:
            async with async_client(server.url, counting) as c:
                try:
                    return await (c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO))
                except agentmsg.AgentmsgError as exc:
                    return exc
                finally:
                    await c.http.aclose()

        got = asyncio.run(run())
    if how == "error":
        assert isinstance(got, ServerError) and got.status_code == 500 and got.message == "X (empty body)", got
    else:
        assert isinstance(got, ReplyTooLargeError) and got.limit == cap, got
        assert f"exceeds limits.max_bytes ({cap} bytes)" in str(got)
    assert cap < counting.read <= cap + SLACK + (1 << 16)  # (+ what an async stream's reading task read ahead)
    assert server.broken.wait(60) and not server.finished.is_set()


# ---- the limit at exactly N and N + 1 bytes ------------------------------------------------------------------


def test_a_stream_of_exactly_the_limit_is_read_whole_and_one_byte_more_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream of N bytes under max_bytes N is the reply, whole; under N - 1 it stops one byte short of its
    end (ReplyTooLargeError), sync and async, plain and gzipped (the limit is on the bytes inflated)."""
    body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    n = len(body)
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    gzipped = gz.compress(body) + gz.flush()
    with ReplayServer() as server:
        for content, headers in ((body, {}), (gzipped, {"Content-Encoding": "gzip"})):
            server.add("/chat/completions", Reply(body=content, sse=True, chunk_size=97, headers=headers))
            monkeypatch.setattr(agentmsg.limits, "max_bytes", n)
            whole = sync_client(server.url).stream(CONVO).until_done()
            assert whole.generate_reason == "MODEL_STOP" and "agentmsg_errors" not in whole.metadata

            async def run() -> Any:
                async with async_client(server.url) as c:
                    msg = await c.stream(CONVO).until_done()
                    await c.http.aclose()
                    return msg

            assert asyncio.run(run()).text_content == whole.text_content

            monkeypatch.setattr(agentmsg.limits, "max_bytes", n - 1)
            with pytest.raises(ReplyTooLargeError) as info:
                sync_client(server.url).stream(CONVO).until_done()
            # (the provider had finished the reply: only the body's last byte, of its [DONE] line, is not read)
            assert info.value.limit == n - 1 and info.value.partial.text_content == whole.text_content
            with pytest.raises(ReplyTooLargeError):
                asyncio.run(run())


def test_a_whole_reply_of_exactly_the_limit_is_read_and_one_byte_more_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    body = (FIX / "openai/chat_completion_parallel_tool_calls.json").read_bytes()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body))
        monkeypatch.setattr(agentmsg.limits, "max_bytes", len(body))
        assert sync_client(server.url).call(CONVO).generate_reason == "TOOL_CALLS"
        monkeypatch.setattr(agentmsg.limits, "max_bytes", len(body) - 1)
        with pytest.raises(ReplyTooLargeError, match=rf"\({len(body) - 1} bytes\)"):
            sync_client(server.url).call(CONVO)

        async def run() -> Any:
            async with async_client(server.url) as c:
                return await c.call(CONVO)

        with pytest.raises(ReplyTooLargeError):
            asyncio.run(run())
        monkeypatch.setattr(agentmsg.limits, "max_bytes", len(body))
        assert asyncio.run(run()).generate_reason == "TOOL_CALLS"


# ---- agentmsg chat ---------------------------------------------------------------------------------------------


def test_chat_on_an_endless_stream_stops_at_the_limit(
    raw: Any, cap: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agentmsg chat`` printed an endless reply for ever: now what arrived up to the limit, then a line on
    stderr saying why (after the parser's word on the event cut in two), exit 1."""
    server = raw(sse_forever())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, out = run_cli("chat", "--provider", "openai", "--base-url", server.url, "--model", "m", "hi")
    err = capsys.readouterr().err
    assert code == 1
    assert cap // 2 < out.count("x") <= cap
    *said, last = err.splitlines()
    assert last == "agentmsg: openai 200: the streamed reply exceeds limits.max_bytes (1048576 bytes): not read further"
    assert all("[incomplete]" in line for line in said)  # (the event the limit cut in two, said as such)
    assert "Traceback" not in err


def test_deflate_raw_deflate_and_broken_gzip_bodies() -> None:
    """The inflating done here reads what httpx's decoder read: deflate with its zlib header, raw deflate (some
    servers send it so), gzip; a body that is no such data breaks the stream (BrokenStreamError), what arrived
    kept."""
    body = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=body, sse=True))
        want = sync_client(server.url).stream(CONVO).until_done().text_content
        raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        for content, encoding in (
            (zlib.compress(body), "deflate"),
            (raw_deflate.compress(body) + raw_deflate.flush(), "deflate"),
            (gzip.compress(body, 6, mtime=0), "GZip"),  # (zlib.compress takes wbits from 3.11)
        ):
            server.add(
                "/chat/completions",
                Reply(body=content, sse=True, chunk_size=61, headers={"Content-Encoding": encoding}),
            )
            assert sync_client(server.url).stream(CONVO).until_done().text_content == want
        server.add("/chat/completions", Reply(body=b"not gzip at all", sse=True, headers={"Content-Encoding": "gzip"}))
        with pytest.raises(BrokenStreamError, match="the body is not gzip data"):
            sync_client(server.url).stream(CONVO).until_done()


def test_a_message_built_larger_than_its_body_stops_at_the_limit(
    raw: Any, cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message may be larger than the body it came from (a Gemini function call part of 90 bytes is a tool
    call block with a minted id: twice that): the message built is held to the limit too, measured only when
    it could have reached it (a few times a reply, not once a chunk)."""
    from agentmsg.clients._stream import StreamState

    measured: list[int] = []
    room = StreamState._room

    def counted(self: StreamState, limit: int) -> int:
        measured.append(limit)
        return room(self, limit)

    monkeypatch.setattr(StreamState, "_room", counted)
    part = b'{"functionCall":{"name":"f","args":{}}}'
    event = b'data: {"candidates":[{"content":{"role":"model","parts":[' + b",".join([part] * 50) + b"]}}]}\n\n"
    server = raw(forever(b"Content-Type: text/event-stream\r\n", event * 16))
    events: list[dict[str, Any]] = []
    with pytest.raises(ReplyTooLargeError, match=r"\(the message built from it would\)") as info:
        for e in sync_client(server.url, provider="gemini").stream(CONVO):
            events.append(e)
    msg = info.value.partial
    size = len(msg.to_json_bytes())
    assert cap < size <= cap + (1 << 18)  # (past it by what one network read made, at most)
    assert sum(e["type"] == "TOOL_CALL_START" for e in events) == len(msg.content) > 1000
    assert 1 < len(measured) <= 8
    measured.clear()
    server = raw(sse_forever())
    with pytest.raises(ReplyTooLargeError):
        sync_client(server.url).stream(CONVO).until_done()
    assert len(measured) <= 2  # (a text stream: its message is smaller than its body)
