"""The async client against the sync one, and what only asyncio does to it.

* Parity: the same fault scenarios (retries, refusals, a disconnect, a stall past the read timeout, a provider
  error mid-stream, a body that is no stream, malformed lines, a redirect, a caller that leaves) over the replay
  server through ``Client`` and ``AsyncClient``: the same events (ids and times aside), the same message, the same
  error (type, text, status, request id, body, partial message), the same stream state, the same requests sent.
* asyncio: cancellation at each point (before the request, waiting for headers, mid-stream, in a retry's sleep),
  ``asyncio.timeout`` / ``wait_for`` around a call, ``aclose()`` from another task, concurrent streams, closing
  the client while streams run; each keeps what arrived, propagates the cancellation and closes the connection.
"""

from __future__ import annotations

import asyncio
import errno
import operator
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from types import CodeType
from typing import Any

import httpx
import pytest

import agentmsg
from agentmsg import UserMessage
from agentmsg.clients import AsyncClient, AsyncReplyStream, Client, ProviderError, ReplyStream, _async
from agentmsg.clients._stream import araw_chunks, raw_chunks
from agentmsg.providers import FormattedRequest
from agentmsg.testing import ReplayServer, Reply, malformed
from tests._support.raw_server import RawServer, chunk
from tests.conftest import ROOT

FIX = ROOT / "tests" / "fixtures" / "providers"
TEXT_SSE = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
TOOLS_SSE = (FIX / "openai/stream_parallel_tool_calls.sse").read_bytes()
CONVO = [UserMessage("What's the weather in San Francisco?")]
VOLATILE = {"id", "createdAt", "timestamp", "created_at", "time", "replyId"}  # (usage.time: seconds taken)


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        yield s


def stable(value: Any) -> Any:
    """A value without what differs from call to call (ids, times)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def msg_dict(msg: agentmsg.Msg | None) -> Any:
    return None if msg is None else stable(msg.to_dict())


def error_dict(exc: BaseException | None) -> Any:
    if exc is None:
        return None
    out: dict[str, Any] = {"type": type(exc).__name__, "text": str(exc)}
    if isinstance(exc, ProviderError):
        out.update(
            message=exc.message, provider=exc.provider, status_code=exc.status_code, body=exc.body,
            request_id=exc.request_id, partial=msg_dict(getattr(exc, "partial", None)),
        )  # fmt: skip
    return out


# Each scenario: (path, replies, client options, how it is run: stream | stop-after-N-deltas | call)
OPENAI = "/chat/completions"
CUT = TEXT_SSE[: TEXT_SSE.index(b"\n\n", 1500) + 2]
SCENARIOS: dict[str, tuple[str, str, list[Reply], dict[str, Any], str]] = {
    "whole": ("openai", OPENAI, [Reply(body=TOOLS_SSE, sse=True, chunk_size=37)], {}, "stream"),
    "429-then-ok": (
        "openai",
        OPENAI,
        [Reply.json({"error": {"message": "busy"}}, 429, headers={"Retry-After": "0"}), Reply(body=TEXT_SSE, sse=True)],
        {},
        "stream",
    ),
    "500-exhausted": (
        "openai",
        OPENAI,
        [Reply.json({"error": {"message": "down"}}, 500, headers={"x-request-id": "r-500"})],
        {},
        "stream",
    ),
    "401": ("openai", OPENAI, [Reply.json({"error": {"message": "bad key"}}, 401)], {}, "stream"),
    "redirect": ("openai", OPENAI, [Reply(302, headers={"Location": "http://elsewhere/"})], {}, "stream"),
    "disconnect": (
        "openai",
        OPENAI,
        [Reply(body=TOOLS_SSE, sse=True, chunk_size=50, disconnect_after=2500, headers={"x-request-id": "r-1"})],
        {},
        "stream",
    ),
    "stall-past-read-timeout": (
        "openai",
        OPENAI,
        [Reply(body=TEXT_SSE, sse=True, stall_after=3000, stall=3.0)],
        {"timeout": 0.4},
        "stream",
    ),
    "provider-error-mid-stream": (
        "openai",
        OPENAI,
        [Reply(body=CUT + b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n', sse=True)],
        {},
        "stream",
    ),
    "html-page": (
        "openai",
        OPENAI,
        [Reply(body=b"<html>502 Bad Gateway</html>", headers={"content-type": "text/html"})],
        {},
        "stream",
    ),
    "cut-short": ("openai", OPENAI, [Reply(body=CUT, sse=True)], {}, "stream"),
    "malformed-lines-kept-going": (
        "openai",
        OPENAI,
        [Reply(body=malformed(TEXT_SSE), sse=True, chunk_size=33)],
        {"raise_on_error": False},
        "stream",
    ),
    "disconnect-not-raised": (
        "openai",
        OPENAI,
        [Reply(body=TOOLS_SSE, sse=True, chunk_size=50, disconnect_after=2500)],
        {"raise_on_error": False},
        "stream",
    ),
    "gemini-whole": (
        "gemini",
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        [Reply(body=(FIX / "gemini/stream_text.sse").read_bytes(), sse=True, chunk_size=41)],
        {},
        "stream",
    ),
    "anthropic-error-event": (
        "anthropic",
        "/v1/messages",
        [
            Reply(
                body=(FIX / "anthropic/stream_sdk_tool_use.sse").read_bytes().split(b"event: content_block_stop")[0]
                + b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message":'
                b' "Overloaded"}, "request_id": "req_1"}\n\n',
                sse=True,
            )
        ],
        {},
        "stream",
    ),
    "caller-leaves-mid-stream": ("openai", OPENAI, [Reply(body=TEXT_SSE, sse=True)], {}, "leave:5"),
    "caller-leaves-on-model-call-end": (
        "gemini",
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        [Reply(body=(FIX / "gemini/stream_text.sse").read_bytes(), sse=True)],
        {},
        "leave:MODEL_CALL_END",
    ),
    "call-whole": (
        "openai",
        OPENAI,
        [Reply(body=(FIX / "openai/chat_completion_parallel_tool_calls.json").read_bytes())],
        {},
        "call",
    ),
    "call-429-exhausted": (
        "openai",
        OPENAI,
        [Reply.json({"error": {"message": "slow"}}, 429, headers={"Retry-After": "0", "x-request-id": "r-9"})],
        {},
        "call",
    ),
    "call-body-stalls": (
        "openai",
        OPENAI,
        [Reply(body=(FIX / "openai/chat_completion_text.json").read_bytes(), chunk_size=40, stall_after=40, stall=3.0)],
        {"timeout": 0.4},
        "call",
    ),
    "call-on-a-stream": ("openai", OPENAI, [Reply(body=CUT, sse=True)], {}, "call"),
}


def request_for(provider: str, path: str, how: str) -> FormattedRequest:
    return FormattedRequest(body={"model": "m"}, path=path, stream=how != "call", model="g")


def run_sync(provider: str, path: str, opts: dict[str, Any], how: str) -> dict[str, Any]:
    raise_on_error = opts.pop("raise_on_error", True)
    client = Client(provider, api_key="k", backoff=0.01, **opts)
    events: list[Any] = []
    out: dict[str, Any] = {"error": None}
    request = request_for(provider, path, how)
    try:
        if how == "call":
            out["message"] = msg_dict(client.send(request))
        else:
            with client.send_stream(request, raise_on_error=raise_on_error) as stream:
                for e in stream:
                    events.append(e)
                    if leave(how, events):
                        break
    except Exception as exc:
        out["error"] = error_dict(exc)
    finally:
        client.close()
    if how != "call":
        out.update(state(stream))
    out["events"] = stable(events)
    return out


def run_async(provider: str, path: str, opts: dict[str, Any], how: str) -> dict[str, Any]:
    raise_on_error = opts.pop("raise_on_error", True)

    async def main() -> dict[str, Any]:
        client = AsyncClient(provider, api_key="k", backoff=0.01, **opts)
        events: list[Any] = []
        out: dict[str, Any] = {"error": None}
        request = request_for(provider, path, how)
        try:
            if how == "call":
                out["message"] = msg_dict(await client.send(request))
            else:
                async with client.send_stream(request, raise_on_error=raise_on_error) as stream:
                    async for e in stream:
                        events.append(e)
                        if leave(how, events):
                            break
        except Exception as exc:
            out["error"] = error_dict(exc)
        finally:
            await client.aclose()
        if how != "call":
            out.update(state(stream))
        out["events"] = stable(events)
        return out

    return asyncio.run(main())


def leave(how: str, events: Sequence[Mapping[str, object]]) -> bool:
    if not how.startswith("leave:"):
        return False
    at = how.split(":", 1)[1]
    if at.isdigit():
        return sum(e["type"] == "TEXT_BLOCK_DELTA" for e in events) == int(at)
    return events[-1]["type"] == at


def assert_cut_short(stream: ReplyStream | AsyncReplyStream) -> None:
    """The stream is done, cut short: its message INTERRUPTED, with the text it had received."""
    assert stream.done and stream.message is not None
    assert stream.message.generate_reason == "INTERRUPTED" and stream.message.text_content


def state(stream: Any) -> dict[str, Any]:
    return {
        "message": msg_dict(stream.message),
        "done": stream.done,
        "stream_error": stream.error,
        "status_code": stream.status_code,
        "request_id": stream.request_id,
        "closing": stable(stream._closing),
    }


@pytest.mark.differential
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_sync_and_async_clients_behave_the_same(server: ReplayServer, name: str) -> None:
    provider, path, replies, opts, how = SCENARIOS[name]
    results = []
    for run in (run_sync, run_async):
        server.add(path, *replies)
        server.requests.clear()
        result = run(provider, path, {**opts, "base_url": server.url}, how)
        result["requests"] = [(r.method, r.path, r.body) for r in server.requests]
        results.append(result)
    sync, async_ = results
    assert sync["requests"], name
    for key in sync:
        assert async_[key] == sync[key], key


@pytest.mark.no_kernel
@pytest.mark.differential
def test_no_response_within_the_timeout_is_said_the_same_sync_and_async() -> None:
    """A server that takes the connection and never answers: APITimeoutError with the same text sync and async,
    naming the timeout and its seconds (the async one ended 'no response within the timeout: ', an empty
    reason: the async backend's timeouts have no text; a stall mid-stream said '(ReadTimeout)' against
    '(timed out)')."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)  # (the kernel completes the handshakes; nothing is ever read or answered)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        request = FormattedRequest(body={}, path="/chat/completions", stream=True)
        errors = []
        with pytest.raises(agentmsg.clients.APITimeoutError) as info:
            list(Client("openai", base_url=url, api_key="k", max_retries=0, timeout=0.3).send_stream(request))
        errors.append(error_dict(info.value))

        async def main() -> None:
            async with AsyncClient("openai", base_url=url, api_key="k", max_retries=0, timeout=0.3) as c:
                async for _ in c.send_stream(request):
                    pass

        with pytest.raises(agentmsg.clients.APITimeoutError) as info:
            asyncio.run(main())
        errors.append(error_dict(info.value))
    assert errors[0] == errors[1]
    assert errors[0]["message"] == "no response: no data within the read timeout (0.3 s)"


def _reset(conn: socket.socket) -> None:
    """End the connection with a reset (RST, as a crashed proxy or a dropped NAT entry does), not an orderly close."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.differential
@pytest.mark.parametrize("when", ["before-headers", "mid-stream"])
def test_a_connection_reset_is_said_the_same_sync_and_async(raw: Any, when: str) -> None:
    """A connection the server resets: the sync client said '[Errno 104] Connection reset by peer', the async one
    only 'ReadError' (the async backend's error has no text of its own; the OS's is in the exceptions it was
    raised from), before any response and mid-stream alike. Now both say the OS's words."""
    # The first two events whole, which the client yields events of before the reset. (The first alone, the role
    # with empty content, yields none until more comes: the server waited out its 30 s, twice, then reset.)
    first = TEXT_SSE[: TEXT_SSE.index(b"\n\n", TEXT_SSE.index(b"\n\n") + 2) + 2]
    read = threading.Event()  # the client has an event: the next read meets the reset
    handshakes: list[bool] = []  # per connection mid-stream: whether the client had an event before the reset

    def handler(conn: socket.socket) -> None:
        if when == "mid-stream":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            conn.sendall(chunk(first))
            handshakes.append(read.wait(30))
        _reset(conn)

    server = raw(handler)
    request = FormattedRequest(body={}, path="/chat/completions", stream=True)
    errors = []
    client = Client("openai", base_url=server.url, api_key="k", max_retries=0)
    with pytest.raises(ProviderError) as info, client.send_stream(request) as stream:
        for _ in stream:
            read.set()
    errors.append(error_dict(info.value))
    read.clear()

    async def main() -> None:
        async with AsyncClient("openai", base_url=server.url, api_key="k", max_retries=0) as c:
            async for _ in c.send_stream(request):
                read.set()

    with pytest.raises(ProviderError) as info:
        asyncio.run(main())
    errors.append(error_dict(info.value))
    assert errors[0] == errors[1]
    assert handshakes == ([True, True] if when == "mid-stream" else [])  # (the reset came mid-stream, both times)
    said = errors[0]["text"]
    assert "reset" in said.lower() and "ReadError" not in said, said
    assert said.startswith(
        "openai: connection failed: " if when == "before-headers" else "openai 200: the connection broke: "
    )


@pytest.mark.differential
@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_a_refused_connection_is_said_the_same_sync_and_async(host: str) -> None:
    """A port nothing listens on: the sync client said '[Errno 111] Connection refused', the async one 'All
    connection attempts failed' (the async backend's own words over the OS's error, which it was raised from,
    itself worded "Connect call failed ('127.0.0.1', PORT)"). Now both say the OS's words."""
    family = socket.AF_INET6 if host.startswith("[") else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:  # pragma: no cover (no IPv6 here)
        pytest.skip("no IPv6")
    with sock:
        try:
            sock.bind((host.strip("[]"), 0))
        except OSError:  # pragma: no cover (no IPv6 loopback here)
            pytest.skip("no IPv6 loopback")
        url = f"http://{host}:{sock.getsockname()[1]}"  # (bound, never listening: each connection refused)
        request = FormattedRequest(body={}, path="/chat/completions", stream=False)
        errors = []
        with pytest.raises(ProviderError) as info:
            Client("openai", base_url=url, api_key="k", max_retries=0).send(request)
        errors.append(error_dict(info.value))

        async def main() -> None:
            async with AsyncClient("openai", base_url=url, api_key="k", max_retries=0) as c:
                await c.send(request)

        with pytest.raises(ProviderError) as info:
            asyncio.run(main())
        errors.append(error_dict(info.value))
    assert errors[0] == errors[1]
    refused = errno.ECONNREFUSED
    assert errors[0]["message"] == f"connection failed: [Errno {refused}] {os.strerror(refused)}"


# ---- asyncio: cancellation ----------------------------------------------------------------------------------


class Silent(RawServer):
    """A loopback server that takes each connection, reads the request and never answers: each connection is held
    open until the server is closed."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        super().__init__(self._hold)

    def _hold(self, conn: object) -> None:
        self.closed.wait()

    def close(self) -> None:
        super().close()
        self.closed.set()


@pytest.mark.parametrize("phase", ["waiting-for-headers", "mid-stream"])
def test_a_task_cancelled_twice_gives_its_connection_back(server: ReplayServer, phase: str) -> None:
    """A stream's task cancelled twice in a row (a TaskGroup's cancel and a timeout's, a user's twice) while it
    waited for the response or read the body: httpcore's cleanup of the first cancellation was cut by the second
    (its shield is anyio's, which asyncio's own cancellation goes through) and the connection stayed taken until
    the client was closed; with max_connections=1, the next request waited out the pool timeout. Now each
    cancelled stream is done, INTERRUPTED with what arrived (mid-stream), the CancelledError goes on, and the
    pool's one connection is free again."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.02))
    silent = Silent()

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        url = silent.url if phase == "waiting-for-headers" else server.url
        c = AsyncClient("openai", base_url=url, api_key="k", model="m", max_retries=0, http_client=http)
        for _ in range(7):
            stream = c.stream(CONVO)
            seen = asyncio.Event()

            async def consume(stream: Any = stream, seen: asyncio.Event = seen) -> None:
                try:
                    async for e in stream:
                        if e["type"] == "TEXT_BLOCK_DELTA":
                            seen.set()
                finally:
                    seen.set()  # (no connection: the pool timeout's error)

            task = asyncio.create_task(consume())
            if phase == "waiting-for-headers":
                assert await asyncio.to_thread(silent.requests.acquire, timeout=5)
            else:
                await seen.wait()
            for _ in range(7):
                task.cancel()
                await asyncio.sleep(0)
            with pytest.raises(asyncio.CancelledError):
                await task
            assert stream.done
            if phase == "mid-stream":
                assert stream.message is not None
                assert stream.message.generate_reason == "INTERRUPTED" and stream.message.text_content
            else:
                assert stream.message is None
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))  # (the check of the pool needs no slow reply)
        other = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        msg = await other.stream(CONVO).until_done()
        assert msg.generate_reason == "MODEL_STOP"
        await http.aclose()

    try:
        asyncio.run(main())
    finally:
        silent.close()


def test_a_task_cancelled_while_its_stream_closes_gives_the_connection_back(server: ReplayServer) -> None:
    """A caller that leaves the loop inside ``async with`` (the stream closes its response on the way out) and is
    cancelled while the response closes: the close was cut halfway and the connection stayed taken until the
    client was closed. Now the close ends first; the message is INTERRUPTED with what arrived; the cancellation
    goes on."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.02))

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        for _ in range(7):
            stream = c.stream(CONVO)
            left = asyncio.Event()

            async def consume(stream: Any = stream, left: asyncio.Event = left) -> None:
                try:
                    async with stream:
                        async for e in stream:
                            if e["type"] == "TEXT_BLOCK_DELTA":
                                left.set()
                                break
                finally:
                    left.set()  # (no connection: the pool timeout's error)
                await asyncio.sleep(10)

            task = asyncio.create_task(consume())
            await left.wait()  # (the consumer is closing the response now)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert_cut_short(stream)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))  # (the check of the pool needs no slow reply)
        assert (await c.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"
        await http.aclose()

    asyncio.run(main())


def test_a_stream_read_whole_makes_no_task_to_close_its_response(server: ReplayServer) -> None:
    """The body's reading task closes the response once the body is read whole (the connection back in the
    pool), and the stream's end has nothing left to close: two tasks a stream (the request's, the body's), no
    third to close the response (a task and its wait were about 1% of a recorded reply's instructions)."""
    made: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        create_task = loop.create_task

        def counted(coro: Any, **kw: Any) -> asyncio.Task[Any]:
            made.append(coro.__qualname__)
            return create_task(coro, **kw)

        async with AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0) as c:
            for _ in range(2):
                server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
                loop.create_task = counted  # type: ignore[method-assign]
                try:
                    stream = c.stream(CONVO)
                    assert (await stream.until_done()).generate_reason == "MODEL_STOP"
                finally:
                    loop.create_task = create_task  # type: ignore[method-assign]
                assert stream.done

    asyncio.run(main())
    assert made.count("AsyncClient.send") == made.count("_Body._read") == 2
    assert "_close" not in made


def test_a_task_cancelled_while_its_read_body_closes_gives_the_connection_back(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The body's reading task closes the response once it has read the body whole; the stream's task cancelled
    (twice) meanwhile waits for that close to end and does not cancel it (a close cut halfway kept the
    connection taken: the next request waited out the pool timeout)."""
    gate: list[asyncio.Event] = []
    closed: list[bool] = []
    bound = httpx._client.BoundAsyncStream
    close = bound.aclose

    async def slow_close(self: Any) -> None:
        gate[0].set()  # (closing now)
        await gate[1].wait()
        await close(self)
        closed.append(True)  # (the close ran to its end: not cancelled halfway)

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        for _ in range(3):
            server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
            gate[:] = [asyncio.Event(), asyncio.Event()]
            stream = c.stream(CONVO)
            task = asyncio.create_task(stream.until_done())
            with monkeypatch.context() as m:
                m.setattr(bound, "aclose", slow_close)
                await gate[0].wait()
                for _ in range(3):
                    task.cancel()
                    await asyncio.sleep(0)
                gate[1].set()
                with pytest.raises(asyncio.CancelledError):
                    await task
            assert stream.done and stream.message is not None
        assert closed == [True] * 3
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert (await c.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"
        await http.aclose()

    asyncio.run(main())


def entering_the_wait(c: AsyncClient) -> asyncio.Event:
    """An event set when ``c`` begins a retry's wait (then it waits as usual)."""
    entered = asyncio.Event()
    sleep = c._sleep

    async def wait(delay: float) -> None:
        entered.set()
        await sleep(delay)

    c._sleep = wait  # type: ignore[method-assign]
    return entered


def entering_the_wait_sync(c: Client) -> threading.Event:
    """An event set when ``c`` begins a retry's wait (then it waits as usual)."""
    entered = threading.Event()
    sleep = c._sleep

    def wait(delay: float, stream: Any) -> None:
        entered.set()
        sleep(delay, stream)

    c._sleep = wait  # type: ignore[method-assign]
    return entered


def _stop_setup(server: ReplayServer, phase: str) -> Silent:
    silent = Silent()
    if phase == "retry-wait":
        server.add(OPENAI, Reply.json({"error": {"message": "busy"}}, 429, headers={"Retry-After": "30"}))
    else:
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.05))
    return silent


async def _consume(stream: Any, seen: list[Any], reading: asyncio.Event) -> str:
    """Read ``stream`` to its end into ``seen``, ``reading`` set at its first text delta."""
    async for e in stream:
        seen.append(e)
        if e["type"] == "TEXT_BLOCK_DELTA":
            reading.set()
    return "ended"


async def _aclosed_in(
    phase: str, silent: Silent, server: ReplayServer
) -> tuple[httpx.AsyncClient, Any, asyncio.Task[str], list[Any]]:
    """A stream (of an AsyncClient on a pool of one connection) read by a task of its own and closed with
    ``aclose()`` from this task in ``phase`` (as :func:`_stop_setup` made the servers for it); the client's
    ``http``, the stream, the reading task and the events it saw."""
    http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    url = silent.url if phase == "waiting-for-headers" else server.url
    c = AsyncClient("openai", base_url=url, api_key="k", model="m", http_client=http, max_retry_after=60)
    waiting = entering_the_wait(c)
    stream = c.stream(CONVO)
    seen: list[Any] = []
    reading = asyncio.Event()
    task = asyncio.create_task(_consume(stream, seen, reading))
    if phase == "waiting-for-headers":
        assert await asyncio.to_thread(silent.requests.acquire, timeout=5)
    elif phase == "retry-wait":
        await waiting.wait()
    else:
        await reading.wait()
    await asyncio.wait_for(stream.aclose(), 5)
    return http, stream, task, seen


@pytest.mark.parametrize("phase", ["waiting-for-headers", "retry-wait", "mid-stream"])
def test_aclose_from_another_task_stops_the_stream(server: ReplayServer, phase: str) -> None:
    """``aclose()`` called from another task (a stop button's handler) while the stream's loop waited for the
    network raised RuntimeError ('aclose(): asynchronous generator is already running') and the stream went on
    to its end. Now the loop ends there without error, the message INTERRUPTED with what arrived (none before
    any reply: ``until_done`` says so), the connection given back; a cancellation of the loop's own task still
    goes on."""
    silent = _stop_setup(server, phase)

    async def main() -> None:
        http, stream, task, seen = await _aclosed_in(phase, silent, server)
        if sys.version_info < (3, 11):  # (no Task.uncancel: aclose's cancellation cannot be told from another)
            with pytest.raises(asyncio.CancelledError):
                await task
            return
        assert stream.done and await asyncio.wait_for(task, 5) == "ended"
        if phase == "mid-stream":
            msg = stream.message
            assert msg.generate_reason == "INTERRUPTED" and msg.text_content
            assert stream.error == "cancelled by the caller"
        else:
            assert stream.message is None and not seen
            with pytest.raises(agentmsg.clients.APIConnectionError, match="closed before any reply"):
                await stream.until_done()
        other = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert (await other.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"
        # the loop's own task cancelled as aclose() stops it: the CancelledError goes on
        stream = other.stream(CONVO)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.05))
        reading = asyncio.Event()
        task = asyncio.create_task(_consume(stream, [], reading))
        await reading.wait()
        task.cancel()
        await stream.aclose()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert stream.done and stream.message is not None and stream.message.generate_reason == "INTERRUPTED"
        await http.aclose()

    try:
        asyncio.run(main())
    finally:
        silent.close()


def _stop_outcome(stream: Any, seen: list[Any], until_done: BaseException | None) -> dict[str, Any]:
    msg = stream.message
    return {
        "done": stream.done,
        "reason": None if msg is None else msg.generate_reason,
        "text": bool(msg is not None and msg.text_content),
        "error": stream.error,
        "seen": bool(seen),
        "until_done": error_dict(until_done),
    }


@pytest.mark.differential
@pytest.mark.parametrize("phase", ["waiting-for-headers", "retry-wait", "mid-stream"])
def test_close_from_another_thread_stops_the_stream_as_aclose_from_another_task(
    server: ReplayServer, phase: str
) -> None:
    """``ReplyStream.close()`` called from another thread (a GUI's stop button, a watchdog) while the consuming
    thread iterated raised ValueError ('generator already executing') and the stream went on to its end (a retry's
    30 s wait slept out). Now, as ``aclose()`` from another task does: ``close()`` returns once the stream has
    ended, the loop ends without error, the message INTERRUPTED with what arrived (none before any reply:
    ``until_done`` says so), the connection given back (the pool's one connection serves the next call); the
    sync and async outcomes are the same."""
    silent = _stop_setup(server, phase)
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    try:
        url = silent.url if phase == "waiting-for-headers" else server.url
        c = Client("openai", base_url=url, api_key="k", model="m", http_client=http, max_retry_after=60)
        waiting = entering_the_wait_sync(c)
        stream = c.stream(CONVO)
        seen: list[Any] = []
        reading = threading.Event()
        outcome: list[Any] = []

        def consume() -> None:
            try:
                for e in stream:
                    seen.append(e)
                    if e["type"] == "TEXT_BLOCK_DELTA":
                        reading.set()
                outcome.append("ended")
            except BaseException as exc:  # (what the consuming thread raised)
                outcome.append(exc)

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        if phase == "waiting-for-headers":
            assert silent.requests.acquire(timeout=5)
        elif phase == "retry-wait":
            assert waiting.wait(60)
        else:
            assert reading.wait(5)
        stream.close()  # (from this thread, not the reader's)
        assert stream.done
        reader.join(5)
        assert not reader.is_alive() and outcome == ["ended"]
        until_done: BaseException | None = None
        try:
            stream.until_done()
        except agentmsg.clients.APIConnectionError as exc:
            until_done = exc
        sync = _stop_outcome(stream, seen, until_done)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        other = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        assert other.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    finally:
        http.close()
        silent.close()
    if phase == "mid-stream":
        assert sync["reason"] == "INTERRUPTED" and sync["text"] and sync["error"] == "cancelled by the caller"
        assert sync["until_done"] is None
    else:
        assert sync["reason"] is None and not sync["seen"]
        assert sync["until_done"]["message"] == "the stream was closed before any reply came"
    if sys.version_info < (3, 11):  # (the async side's aclose() cannot end the loop quietly there)
        return

    server.requests.clear()
    silent = _stop_setup(server, phase)

    async def main() -> dict[str, Any]:
        http, stream, task, seen = await _aclosed_in(phase, silent, server)
        assert await asyncio.wait_for(task, 5) == "ended"
        until_done: BaseException | None = None
        try:
            await stream.until_done()
        except agentmsg.clients.APIConnectionError as exc:
            until_done = exc
        await http.aclose()
        return _stop_outcome(stream, seen, until_done)

    try:
        assert asyncio.run(main()) == sync
    finally:
        silent.close()


def test_a_stream_read_in_one_thread_and_closed_in_another_between_events(server: ReplayServer) -> None:
    """A stream read in a worker thread that left the loop (or is busy with an event) and closed from another: the
    stream is closed at once there (no wait for a reader that does not come back), INTERRUPTED with what arrived,
    its connection given back; a later ``next()`` in the worker ends the loop quietly."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.02))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)
    got: list[Any] = []

    def worker() -> None:
        for e in stream:
            if e["type"] == "TEXT_BLOCK_DELTA":
                got.append(e)
                return

    reader = threading.Thread(target=worker)
    reader.start()
    reader.join(5)
    assert got and not reader.is_alive()
    stream.close(wait=30)
    assert_cut_short(stream)
    rest: list[Any] = []
    reader = threading.Thread(target=lambda: rest.extend(stream))
    reader.start()
    reader.join(5)
    assert not reader.is_alive() and rest == []
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    http.close()


def test_a_close_beside_another_waits_for_its_outcome_within_its_own_wait(server: ReplayServer) -> None:
    """``close()`` from several threads ran one at a time: a second one waited for the first to return (up to the
    first's whole ``wait``), then ran its own (its own ``wait`` more). Now it waits for the first's outcome, its
    own ``wait`` at most: beside a first that has not ended the stream yet (held here as it ends it), a
    ``close(wait=0)`` returns at once, the stream not ended; a ``close(wait=30)`` returns once the first has
    ended it, the stream done, INTERRUPTED with what arrived."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)
    events = iter(stream)
    assert any(e["type"] == "TEXT_BLOCK_DELTA" for e in events)  # (left at the first text)
    ending, go_on = threading.Event(), threading.Event()
    close_here = stream._close_here

    def held_as_it_ends_the_stream() -> None:  # (the first close(), which took the stream between two events)
        ending.set()
        assert go_on.wait(10)
        close_here()

    stream._close_here = held_as_it_ends_the_stream  # type: ignore[method-assign]
    first = threading.Thread(target=stream.close)
    first.start()
    assert ending.wait(5)
    try:
        at_once = threading.Thread(target=stream.close, kwargs={"wait": 0})
        at_once.start()
        at_once.join(5)
        assert not at_once.is_alive() and not stream.done
        waiting = threading.Thread(target=stream.close, kwargs={"wait": 30})
        waiting.start()
    finally:
        go_on.set()
    for thread in (first, waiting):
        thread.join(5)
        assert not thread.is_alive()
    assert_cut_short(stream)
    assert list(events) == []
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    http.close()


def test_timeouts_around_a_call_and_a_retry_wait_cancel_it(server: ReplayServer) -> None:
    """asyncio.timeout / wait_for around a stream: mid-stream the message is INTERRUPTED with what arrived; in a
    Retry-After wait of 30 s the wait is cut (one request sent, no message); the caller gets TimeoutError. (The
    mid-stream timeouts start once a text piece has arrived, and the reply then stalls until the server stops, so
    the cut comes from the timeout however loaded the machine: it can be short.)"""

    async def first_text(stream: Any) -> None:
        async for e in stream:
            if e["type"] == "TEXT_BLOCK_DELTA":
                return

    async def main() -> None:
        async with AsyncClient("openai", base_url=server.url, api_key="k", model="m") as c:
            server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, stall_after=len(CUT), stall=600))
            stream = c.stream(CONVO)
            await first_text(stream)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(stream.until_done(), 0.05)
            assert_cut_short(stream)
            if sys.version_info >= (3, 11):
                stream = c.stream(CONVO)
                await first_text(stream)
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.05), stream:
                        async for _ in stream:
                            pass
                assert_cut_short(stream)
            server.add(OPENAI, Reply.json({"error": {"message": "busy"}}, 429, headers={"Retry-After": "30"}))
            server.requests.clear()
            stream = c.stream(CONVO)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(stream.until_done(), 0.5)
            assert stream.done and stream.message is None and len(server.requests) == 1
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(c.call(CONVO), 0.5)

    asyncio.run(main())


def test_concurrent_streams_on_one_client_and_closing_it_under_them(server: ReplayServer) -> None:
    """Twenty streams on one AsyncClient (a pool of five connections) beside one that stalls: the twenty end whole
    while the stalled one waits; closing the client under the stalled one breaks it (BrokenStreamError, what
    arrived kept), no CancelledError nor a bare httpcore/anyio error."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, chunk_size=97))
    server.add("/slow" + OPENAI, Reply(body=TEXT_SSE, sse=True, stall_after=1500, stall=30))

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=5))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", http_client=http)
        slow_client = AsyncClient("openai", base_url=server.url + "/slow", api_key="k", model="m", http_client=http)
        slow = slow_client.stream(CONVO)
        slow_task = asyncio.create_task(slow.until_done())
        msgs = await asyncio.gather(*(c.stream(CONVO).until_done() for _ in range(20)))
        assert all(m.generate_reason == "MODEL_STOP" and m.text_content for m in msgs)
        assert not slow_task.done()
        await http.aclose()
        with pytest.raises(agentmsg.clients.BrokenStreamError) as info:
            await slow_task
        assert info.value.partial.generate_reason == "INTERRUPTED" and info.value.partial.text_content

    asyncio.run(main())


def long_stream(size: int) -> bytes:
    """TEXT_SSE with its text deltas repeated to ``size`` bytes or more."""
    events = TEXT_SSE.split(b"\n\n")
    deltas = [e for e in events if b'"content":"' in e and b'"content":""' not in e]
    middle = deltas * (size // len(b"\n\n".join(deltas)) + 1)
    return b"\n\n".join([events[0], *middle, *events[-4:]])


@pytest.mark.parametrize("pauses", [0, 1, 3])
def test_a_stream_reads_at_most_read_ahead_beyond_its_caller_and_gives_every_chunk_once(pauses: int) -> None:
    """The body's reading task reads ahead of the caller while the caller's loop yields to the event loop
    (``pauses`` times an event: the reading task then appends chunks as the caller takes them), never more than
    READ_AHEAD bytes and a chunk beyond the chunk that gave the caller's event; and the caller gets each chunk's
    events once, in order: the message and events are the sync stream's."""
    from agentmsg.clients._async import READ_AHEAD

    body = long_stream(8 * READ_AHEAD)
    pieces = [p + b"\n\n" for p in body.split(b"\n\n") if p]
    ends = [sum(map(len, pieces[: i + 1])) for i in range(len(pieces))]  # bytes read once piece i is
    deltas = [i for i, p in enumerate(pieces) if b'"content":"' in p and b'"content":""' not in p]
    sent = [0]

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for p in pieces:
                sent[0] += len(p)
                yield p

    class SyncBody(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from pieces

    head = {"content-type": "text/event-stream"}
    ahead: list[int] = []

    async def main() -> tuple[list[dict[str, Any]], agentmsg.Msg]:
        http = httpx.AsyncClient(
            transport=httpx.MockTransport(lambda r: httpx.Response(200, headers=head, stream=Body()))
        )
        events: list[dict[str, Any]] = []
        async with AsyncClient("openai", base_url="http://x", api_key="k", model="m", http_client=http) as c:
            stream = c.stream(CONVO)
            async for e in stream:
                events.append(e)
                if e["type"] == "TEXT_BLOCK_DELTA":  # (from the chunk deltas[k], k the deltas before)
                    ahead.append(sent[0] - ends[deltas[sum(x["type"] == "TEXT_BLOCK_DELTA" for x in events) - 1]])
                for _ in range(pauses):
                    await asyncio.sleep(0)
            assert stream.message is not None
            return events, stream.message

    events, message = asyncio.run(main())
    http = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, headers=head, stream=SyncBody())))
    with Client("openai", base_url="http://x", api_key="k", model="m", http_client=http) as c:
        stream = c.stream(CONVO)
        sync_events = list(stream)
        assert stream.message is not None
    assert stable(events) == stable(sync_events) and msg_dict(message) == msg_dict(stream.message)
    assert len(ahead) == len(deltas) and sent[0] == len(body)
    assert min(ahead) >= 0 and max(ahead) <= READ_AHEAD + max(map(len, pieces))
    if pauses:  # (the reading task did read ahead while the caller's loop yielded)
        assert max(ahead) >= READ_AHEAD // 2


@pytest.mark.parametrize("body", ["short", "beyond-read-ahead"])
def test_a_stream_left_unfinished_and_collected_warns_nothing_and_frees_its_connection(
    server: ReplayServer, body: str
) -> None:
    """A loop left early without ``async with`` and the stream dropped: asyncio closes the generator when it is
    collected; no ResourceWarning, no 'never awaited', no unraisable error, nothing said to the event loop's
    exception handler (a task destroyed while pending, an exception never retrieved), and the pool's one
    connection serves the next stream. Also when the stream's reading task waits for its caller, having read
    READ_AHEAD bytes ahead of it (a long body arriving at once)."""
    import gc
    import warnings

    from agentmsg.clients._async import READ_AHEAD

    if body == "short":
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.01))
    else:
        server.add(OPENAI, Reply(body=long_stream(8 * READ_AHEAD), sse=True, chunk_size=4096))
    unraisable: list[Any] = []
    said: list[dict[str, Any]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: said.append(context))
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        for _ in range(7):
            stream = c.stream(CONVO)
            async for e in stream:
                if e["type"] == "TEXT_BLOCK_DELTA":
                    break
            never_started = c.stream(CONVO)
            del stream, never_started
            gc.collect()
            await asyncio.sleep(0.05)  # (the loop runs the generator's aclose)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert (await c.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"
        await http.aclose()

    hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    gc.collect()
    gc.freeze()  # (what the worker holds already is not walked again by each collection: 8 of them here)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            asyncio.run(main())
            gc.collect()
    finally:
        gc.unfreeze()
        sys.unraisablehook = hook
    assert not unraisable and not said
    assert not [w for w in caught if issubclass(w.category, (ResourceWarning, RuntimeWarning))]


@pytest.mark.differential
def test_a_stream_closed_before_it_started_is_done_sync_and_async(server: ReplayServer) -> None:
    """close() / aclose() before the first iteration sends nothing and ends the stream: ``done`` stayed False (a
    stream that may still go on) and ``until_done()`` failed on a bare AssertionError. Now done, no message,
    nothing yielded, and until_done() says it was closed before any reply; the same sync and async."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    sync = Client("openai", base_url=server.url, api_key="k", model="m").stream(CONVO)
    sync.close()
    with pytest.raises(agentmsg.clients.APIConnectionError) as info:
        sync.until_done()
    got = [(sync.done, sync.message, list(sync), error_dict(info.value))]

    async def main() -> Any:
        stream = AsyncClient("openai", base_url=server.url, api_key="k", model="m").stream(CONVO)
        await stream.aclose()
        with pytest.raises(agentmsg.clients.APIConnectionError) as info:
            await stream.until_done()
        return (stream.done, stream.message, [e async for e in stream], error_dict(info.value))

    got.append(asyncio.run(main()))
    assert got[0] == got[1] and got[0][:3] == (True, None, [])
    assert got[0][3]["message"] == "the stream was closed before any reply came"
    assert server.requests == []


@pytest.mark.differential
@pytest.mark.parametrize("how", ["closed", "closed-with-its-http-client", "its-http-client-closed"])
def test_a_closed_client_says_so_sync_and_async(server: ReplayServer, how: str) -> None:
    """A client called after ``close()`` / ``aclose()`` (a call, a stream, one made before the close, a count)
    raised httpx's bare RuntimeError ('Cannot send a request, as the client has been closed'); an AsyncClient's
    own pool was even made anew under another event loop, the closed client sending again. Now each says it
    is closed, a ClientClosedError (a ProviderError, a RuntimeError too), the same sync and async; so does a
    client whose ``http_client`` its caller closed. Nothing is sent."""
    said = {
        "closed": "the client is closed: it sends nothing more (make a new one)",
        "closed-with-its-http-client": "the client is closed: it sends nothing more (make a new one)",
        "its-http-client-closed": "the client's http_client is closed: it sends nothing more",
    }[how]
    http = httpx.Client() if how != "closed" else None
    c = Client("anthropic", base_url=server.url, api_key="k", model="m", http_client=http)
    made = c.stream(CONVO)
    c.close() if http is None or how == "closed-with-its-http-client" else http.close()
    calls: dict[str, Callable[[], object]] = {
        "call": lambda: c.call(CONVO),
        "stream": lambda: list(c.stream(CONVO)),
        "made before": lambda: list(made),
        "count_tokens": lambda: c.count_tokens(CONVO),
    }
    got: list[dict[str, Any]] = [{}, {}]
    for name, run in calls.items():
        with pytest.raises(agentmsg.clients.ClientClosedError) as info:
            run()
        got[0][name] = error_dict(info.value)
        assert isinstance(info.value, RuntimeError) and isinstance(info.value, ProviderError)

    async def main() -> None:
        http = httpx.AsyncClient() if how != "closed" else None
        c = AsyncClient("anthropic", base_url=server.url, api_key="k", model="m", http_client=http)
        made = c.stream(CONVO)
        await (c.aclose() if http is None or how == "closed-with-its-http-client" else http.aclose())
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "call": lambda: c.call(CONVO),
            "stream": lambda: c.stream(CONVO).until_done(),
            "made before": lambda: made.until_done(),
            "count_tokens": lambda: c.count_tokens(CONVO),
        }
        for name, run in calls.items():
            with pytest.raises(agentmsg.clients.ClientClosedError) as info:
                await run()
            got[1][name] = error_dict(info.value)

    asyncio.run(main())
    if how == "closed":  # (its own pool, under another event loop: still closed)
        with pytest.raises(agentmsg.clients.ClientClosedError):
            closed = AsyncClient("anthropic", base_url=server.url, api_key="k", model="m")
            asyncio.run(closed.aclose())
            asyncio.run(closed.call(CONVO))
    assert got[0] == got[1]
    assert {e["message"] for e in got[0].values()} == {said} and {e["provider"] for e in got[0].values()} == {
        "anthropic"
    }
    assert server.requests == []


@pytest.mark.differential
@pytest.mark.parametrize("how", ["closed", "its-http-client-closed"])
def test_a_count_on_a_closed_client_says_it_is_closed_first_sync_and_async(server: ReplayServer, how: str) -> None:
    """``count_tokens`` on a closed client of a provider with no counting endpoint (OpenAI) said the provider has
    none (BadRequestError), where every other call on it says the client is closed. Nothing is sent either way;
    now the closed client comes first, as for each call: the input is formatted (checked) first, then whether
    the client can send at all, then what it would send (a header HTTP cannot carry, an endpoint there is none
    of). The same sync and async; an open client still says the provider has no endpoint."""
    said = {
        "closed": "the client is closed: it sends nothing more (make a new one)",
        "its-http-client-closed": "the client's http_client is closed: it sends nothing more",
    }[how]
    http = httpx.Client() if how != "closed" else None
    c = Client("openai", base_url=server.url, api_key="k", model="m", http_client=http)
    with pytest.raises(agentmsg.clients.BadRequestError, match="no token-counting endpoint"):
        c.count_tokens(CONVO)
    c.close() if http is None else http.close()
    got = []
    with pytest.raises(agentmsg.clients.ClientClosedError) as info:
        c.count_tokens(CONVO)
    got.append(error_dict(info.value))

    async def main() -> None:
        http = httpx.AsyncClient() if how != "closed" else None
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", http_client=http)
        with pytest.raises(agentmsg.clients.BadRequestError, match="no token-counting endpoint"):
            await c.count_tokens(CONVO)
        await (c.aclose() if http is None else http.aclose())
        with pytest.raises(agentmsg.clients.ClientClosedError) as info:
            await c.count_tokens(CONVO)
        got.append(error_dict(info.value))

    asyncio.run(main())
    assert got[0] == got[1] and got[0]["message"] == said
    assert server.requests == []


@pytest.mark.differential
def test_a_client_closed_during_a_retrys_wait_says_so_sync_and_async(server: ReplayServer) -> None:
    """A client closed while a call waited to retry (from another thread or task): the retry raised httpx's bare
    RuntimeError. Now a ClientClosedError, the same sync and async; the retry is not sent."""
    server.add(OPENAI, *[Reply(status=429, body=b'{"error": {"message": "slow down"}}') for _ in range(2)])
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=1, backoff=0.0)
    c._sleep = lambda delay, stream: c.close()  # type: ignore[method-assign]  # (closed as it waits)
    got = []
    with pytest.raises(agentmsg.clients.ClientClosedError) as info:
        c.call(CONVO)
    got.append(error_dict(info.value))

    async def main() -> None:
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=1, backoff=0.0)

        async def closing(delay: float) -> None:
            await c.aclose()

        c._sleep = closing  # type: ignore[method-assign]
        await c.call(CONVO)

    with pytest.raises(agentmsg.clients.ClientClosedError) as info:
        asyncio.run(main())
    got.append(error_dict(info.value))
    assert got[0] == got[1] and got[0]["message"] == "the client is closed: it sends nothing more (make a new one)"
    assert len(server.requests) == 2  # (one each: no retry sent)


#: What a thread waits in, in the kernel, for a socket to be readable (Linux's names: /proc/.../wchan)
_READ_WAITS = ("poll_schedule_timeout", "do_select", "do_sys_poll", "wait_woken", "sk_wait_data")


def _wait_until_blocked_in_a_read(native_id: int) -> None:
    """Until the thread ``native_id`` waits in the kernel for a socket to be readable (not for the GIL, nor
    running): the state a read of a silent server is in. Where the kernel does not say (no /proc), at once."""
    try:
        with open(f"/proc/self/task/{native_id}/wchan") as f:
            f.read()
    except OSError:
        return
    deadline = time.monotonic() + 30
    while True:
        with open(f"/proc/self/task/{native_id}/wchan") as f:
            if f.read().startswith(_READ_WAITS):
                return
        assert time.monotonic() < deadline, "the reader never blocked in its read"
        time.sleep(0)  # (lets the reader run: no wait for time to pass)


def _causes(exc: BaseException) -> list[type[BaseException]]:
    """The types of the errors ``exc`` was raised from (``__cause__``), in turn."""
    out: list[type[BaseException]] = []
    cause = exc.__cause__
    while cause is not None:
        out.append(type(cause))
        cause = cause.__cause__
    return out


#: The text deltas of CUT (its last event is one): a stream has read all of CUT once it has yielded them
CUT_DELTAS = CUT.count(b'"content":"') - CUT.count(b'"content":""')


@pytest.mark.differential
@pytest.mark.parametrize(
    ("how", "when"),
    [("closed", "in-a-read"), ("closed", "between-events"), ("its-http-client-closed", "between-events")],
)
def test_a_client_closed_under_its_stream_says_so_sync_and_async(server: ReplayServer, how: str, when: str) -> None:
    """A client closed (``close()`` from another thread, ``aclose()`` from another task) while its stream was
    read broke the stream with the backend's words: '[Errno 9] Bad file descriptor' sync, 'pop from an empty
    deque' async (anyio's empty read queue), the error with no cause; and a sync read blocked as the client
    closed was not cut: it waited for the server's next bytes. Now the stream says the client was closed while it
    was read (or that its caller closed the client's http_client), what arrived kept (``partial``, INTERRUPTED,
    an error event of type ``client_closed``); the error is raised from a ClientClosedError, itself from the
    read's error. The same sync and async. (The caller's own httpx client closed under a blocked sync read does not
    cut it: only between events here; test_the_callers_http_client_closed_under_a_read_breaks_it_when_the_read_ends.)"""
    said = {
        "closed": "the client was closed while the stream was read",
        "its-http-client-closed": "the client's http_client was closed while the stream was read",
    }[how]
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, stall_after=len(CUT), stall=60))
    http = httpx.Client() if how != "closed" else None
    c = Client("openai", base_url=server.url, api_key="k", model="m", http_client=http)
    stream = c.stream(CONVO)
    last, closed = threading.Event(), threading.Event()
    native: list[int] = []
    outcome: list[BaseException | str] = []

    def consume() -> None:
        native.append(threading.get_native_id())
        try:
            deltas = 0
            for e in stream:
                deltas += e["type"] == "TEXT_BLOCK_DELTA"
                if deltas == CUT_DELTAS and not last.is_set():
                    last.set()
                    if when == "between-events":
                        assert closed.wait(30)
            outcome.append("ended")
        except BaseException as exc:  # (what the consuming thread raised)
            outcome.append(exc)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    assert last.wait(30)
    if when == "in-a-read":  # (the read after CUT's last delta, which blocks: the server is silent)
        _wait_until_blocked_in_a_read(native[0])
    c.close() if http is None else http.close()
    closed.set()
    reader.join(30)
    assert not reader.is_alive() and len(outcome) == 1 and isinstance(outcome[0], agentmsg.clients.BrokenStreamError)
    sync_error = outcome[0]
    got = [(error_dict(sync_error), state(stream))]
    causes = [_causes(sync_error)]

    async def main() -> None:
        http = httpx.AsyncClient() if how != "closed" else None
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", http_client=http)
        stream = c.stream(CONVO)
        last, closed = asyncio.Event(), asyncio.Event()

        async def consume() -> None:
            deltas = 0
            async for e in stream:
                deltas += e["type"] == "TEXT_BLOCK_DELTA"
                if deltas == CUT_DELTAS and not last.is_set():
                    last.set()
                    if when == "between-events":
                        await closed.wait()

        task = asyncio.create_task(consume())
        await last.wait()  # (in-a-read: the task has gone on to wait for the body's next bytes)
        await (c.aclose() if http is None else http.aclose())
        closed.set()
        with pytest.raises(agentmsg.clients.BrokenStreamError) as info:
            await asyncio.wait_for(task, 30)
        got.append((error_dict(info.value), state(stream)))
        causes.append(_causes(info.value))

    asyncio.run(main())
    assert got[0] == got[1]
    error, ended = got[0]
    assert error["type"] == "BrokenStreamError" and error["message"] == said and error["status_code"] == 200
    assert (
        error["partial"] == ended["message"]
        and ended["message"]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"
    )
    assert ended["stream_error"] == said and ended["done"]
    assert [e["value"]["type"] for e in ended["closing"] if e["type"] == "CUSTOM"] == ["client_closed"]
    for chain in causes:  # (the read's error: httpx's, from the backend's)
        assert chain[0] is agentmsg.clients.ClientClosedError and issubclass(chain[1], httpx.HTTPError)


def _blocked_in_a_read(server: ReplayServer, http: httpx.Client) -> tuple[ReplyStream, threading.Thread, list[Any]]:
    """A stream of a Client on the caller's ``http``, read in a thread of its own until it has read CUT and waits in
    the kernel for more (the server is silent for a minute): the stream, the thread, and what the thread's loop
    ended with once it has ended ("ended", or what it raised)."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, stall_after=len(CUT), stall=60))
    c = Client("openai", base_url=server.url, api_key="k", model="m", http_client=http)
    stream = c.stream(CONVO)
    last = threading.Event()
    native: list[int] = []
    outcome: list[Any] = []

    def consume() -> None:
        native.append(threading.get_native_id())
        try:
            deltas = 0
            for e in stream:
                deltas += e["type"] == "TEXT_BLOCK_DELTA"
                if deltas == CUT_DELTAS:
                    last.set()
            outcome.append("ended")
        except BaseException as exc:  # (what the consuming thread raised)
            outcome.append(exc)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    assert last.wait(30)
    _wait_until_blocked_in_a_read(native[0])
    return stream, reader, outcome


def test_close_cuts_a_read_on_the_callers_http_client(server: ReplayServer) -> None:
    """``Client.close()`` from another thread while its stream waits in a read, on an ``http_client`` the caller
    gave: only the client's own pool had its streams' sockets shut down, so the read went on waiting for the
    server (here a minute), and the stream then ended whole, as if nothing was closed. Now the read is cut as on
    the client's own pool: the stream breaks at once, saying the client was closed, what arrived kept; the
    caller's http_client stays open. (No read timeout: the read ends only when it is cut.)"""
    http = httpx.Client(timeout=None)
    stream, reader, outcome = _blocked_in_a_read(server, http)
    stream._client.close()
    reader.join(30)
    assert not reader.is_alive() and len(outcome) == 1
    error = outcome[0]
    assert isinstance(error, agentmsg.clients.BrokenStreamError), error
    assert error.message == "the client was closed while the stream was read"
    assert error.partial is not None and error.partial.generate_reason.value == "INTERRUPTED"
    assert error.partial.text_content and not http.is_closed
    http.close()


@pytest.mark.parametrize("wait", [float("inf"), None, pytest.param(10**400, id="10**400"), 1e300])
def test_close_with_no_end_to_its_wait_stops_a_read_from_another_thread(server: ReplayServer, wait: Any) -> None:
    """``close(wait=inf)`` from another thread while the loop waits in a read (Python's own waits take inf and None
    for ever) raised a bare OverflowError from the wait for the loop, after the read was cut; an int past a float's
    range raised OverflowError as the deadline was counted, and 1e300 OverflowError from the wait. Now each waits
    as long as the loop takes to end (for ever, at most: the wait is cut at ``threading.TIMEOUT_MAX``): the read is
    cut, the loop ends without error, the message INTERRUPTED with what arrived. (No read timeout: the read ends
    only when it is cut.)"""
    http = httpx.Client(timeout=None)
    stream, reader, outcome = _blocked_in_a_read(server, http)
    stream.close(wait=wait)
    reader.join(30)
    assert not reader.is_alive() and outcome == ["ended"]
    assert stream.done and stream.message is not None and stream.message.generate_reason == "INTERRUPTED"
    assert stream.message.text_content
    http.close()


@pytest.mark.parametrize(
    ("wait", "rule"),
    [
        (float("nan"), "type"),
        (-1, "minimum"),
        (-0.5, "minimum"),
        pytest.param(-(10**400), "minimum", id="-10**400-minimum"),
        (True, "type"),
        ("1", "type"),
    ],
)
def test_close_refuses_a_wait_that_is_no_seconds_leaving_the_stream_as_it_is(
    server: ReplayServer, wait: Any, rule: str
) -> None:
    """``close(wait=...)`` with nan or a negative wait took it for 0 (the stream left running if the read could not
    be cut at once); True for 1 s; a text raised a bare TypeError from inside. Now each is refused with a
    ValidationError at ``/wait`` naming the rule, before anything is done: the stream goes on, and a ``close()``
    after ends it as usual."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    for started in (False, True):
        stream = c.stream(CONVO)
        events = iter(stream)
        if started:
            assert any(e["type"] == "TEXT_BLOCK_DELTA" for e in events)
        with pytest.raises(agentmsg.ValidationError) as info:
            stream.close(wait=wait)
        (problem,) = info.value.problems
        assert (problem.pointer, problem.rule) == ("/wait", rule)
        assert "wait is seconds, 0 or more (inf or None: for ever)" in str(info.value)
        assert not stream.done
        if started:
            assert any(e["type"] == "TEXT_BLOCK_DELTA" for e in events)  # (the stream went on)
        stream.close(wait=0)
        assert stream.done and list(stream) == []
        if started:
            assert stream.message is not None and stream.message.generate_reason == "INTERRUPTED"
    assert len(server.requests) == 1  # (the stream closed before it started sent nothing)
    http.close()


def test_aclose_cuts_a_read_on_the_callers_http_client(server: ReplayServer) -> None:
    """``AsyncClient.aclose()`` from another task while its stream waits for the body, on an ``http_client`` the
    caller gave: only the client's own pool was closed, so the read went on waiting for the server (here a
    minute), and the stream then ended whole. Now the connections its streams read are closed: the stream breaks
    at once, saying the client was closed, as with the client's own pool (and the sync ``close()``)."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, stall_after=len(CUT), stall=60))

    async def main() -> tuple[BaseException, bool]:
        http = httpx.AsyncClient(timeout=None)  # (no read timeout: the read ends only when it is cut)
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", http_client=http)
        stream = c.stream(CONVO)
        last = asyncio.Event()

        async def consume() -> None:
            deltas = 0
            async for e in stream:
                deltas += e["type"] == "TEXT_BLOCK_DELTA"
                if deltas == CUT_DELTAS:
                    last.set()

        task = asyncio.create_task(consume())
        await last.wait()  # (the task has gone on to wait for the body's next bytes)
        await c.aclose()
        with pytest.raises(agentmsg.clients.BrokenStreamError) as info:
            await asyncio.wait_for(task, 30)
        still_open = not http.is_closed
        await http.aclose()
        return info.value, still_open

    error, still_open = asyncio.run(main())
    assert isinstance(error, agentmsg.clients.BrokenStreamError)
    assert error.message == "the client was closed while the stream was read" and still_open
    assert error.partial is not None and error.partial.generate_reason.value == "INTERRUPTED"
    assert error.partial.text_content


def test_the_callers_http_client_closed_under_a_read_breaks_it_when_the_read_ends(server: ReplayServer) -> None:
    """The caller closes its own ``httpx.Client`` while a stream of it waits in a read: httpx closes the socket,
    which does not wake the read (httpx's own streams and the openai SDK's wait alike; the Client's doc says to
    call the stream's or the client's ``close()`` instead). When the read ends (here at the read timeout, the
    server silent) the stream breaks saying the http_client was closed, not that the server was slow; what
    arrived is kept."""
    http = httpx.Client(timeout=httpx.Timeout(30, read=0.5))
    stream, reader, outcome = _blocked_in_a_read(server, http)
    http.close()
    reader.join(30)
    assert not reader.is_alive() and len(outcome) == 1
    error = outcome[0]
    assert isinstance(error, agentmsg.clients.BrokenStreamError), error
    assert error.message == "the client's http_client was closed while the stream was read"
    assert error.partial is not None and error.partial.generate_reason.value == "INTERRUPTED"
    assert [e["value"]["type"] for e in stream._closing if e["type"] == "CUSTOM"] == ["client_closed"]


def test_an_async_client_used_again_under_a_new_event_loop() -> None:
    """An AsyncClient used under one ``asyncio.run()`` then another (a script's two calls, a notebook cell
    each): its own pool kept the first loop's connection alive and handed it to the second call, which failed on
    a bare RuntimeError ('Event loop is closed'). Now its own pool is made anew under a new loop; every call
    gets the reply. (A keep-alive server: the replay server closes each connection.)"""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = (FIX / "openai/chat_completion_text.json").read_bytes()

    class KeepAlive(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    try:
        c = AsyncClient("openai", base_url=f"http://127.0.0.1:{httpd.server_address[1]}", api_key="k", model="m")
        for _ in range(7):
            assert asyncio.run(c.call(CONVO)).generate_reason == "MODEL_STOP"

        async def closing() -> None:
            await c.aclose()

        asyncio.run(closing())
    finally:
        httpd.shutdown()
        httpd.server_close()


def _yielding(stream: Any) -> Any:
    """The event a sync stream's loop takes off the read's events as it lets its turn go to yield it (else None)."""
    lag = stream._lag
    return None if lag is None else lag[len(lag) - operator.length_hint(stream._lag_it) - 1]


def test_close_from_another_thread_as_the_reader_takes_an_event_and_leaves(server: ReplayServer) -> None:
    """``close()`` from another thread that came while the reading thread's step was yielding an event (past its
    last check of the stop) and the reader then left the loop (``break``) without another step: ``close()`` waited
    its whole ``wait`` for a loop that did not come back and left the stream open (done False, the connection
    taken). Now, once the step is over, ``close()`` closes the stream itself: INTERRUPTED with what arrived, the
    connection given back."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.02))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)
    checked = threading.Event()

    class CheckedThenWaitForTheStop(dict[str, object]):  # the step's last check passed; the stop comes before its yield
        def __delitem__(self, key: str) -> None:
            if _yielding(stream) is not None and not checked.is_set():
                checked.set()
                assert stream._stop.wait(5)
            super().__delitem__(key)

    stream._turn = CheckedThenWaitForTheStop()
    got: list[Any] = []

    def worker() -> None:
        for e in stream:
            got.append(e)
            return

    reader = threading.Thread(target=worker)
    reader.start()
    assert checked.wait(5)
    stream.close(wait=2)
    reader.join(5)
    assert got and not reader.is_alive()
    assert stream.done and stream.message is not None and stream.message.generate_reason == "INTERRUPTED"
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    http.close()


@pytest.mark.parametrize("where", ["thrown-at-an-event", "as-the-step-lets-go", "thrown-at-a-closing-event"])
def test_a_keyboard_interrupt_at_an_events_yield_goes_on_and_ends_the_stream(server: ReplayServer, where: str) -> None:
    """A KeyboardInterrupt raised in the stream's loop where it yields an event, its lock let go (a signal handled
    as the step lets the lock go or as the loop resumes, or ``throw()`` on the loop's iterator) became RuntimeError
    ('release unlocked lock'): the loop's end released the lock again. Now the KeyboardInterrupt goes on, the
    stream ended where it stood (INTERRUPTED with what arrived; a reply cut short has closing events), its lock
    free and its connection given back."""
    server.add(OPENAI, Reply(body=CUT if where == "thrown-at-a-closing-event" else TEXT_SSE, sse=True))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)

    class InterruptedAsItLetsGo(dict[str, object]):  # (the signal handled as the step lets go, at the first text)
        def __delitem__(self, key: str) -> None:
            super().__delitem__(key)
            if (e := _yielding(stream)) is not None and e["type"] == "TEXT_BLOCK_DELTA":
                raise KeyboardInterrupt

    if where == "as-the-step-lets-go":
        stream._turn = InterruptedAsItLetsGo()
    events = iter(stream)
    with pytest.raises(KeyboardInterrupt):
        for e in events:
            if where == "thrown-at-an-event" and e["type"] == "TEXT_BLOCK_DELTA":
                events.throw(KeyboardInterrupt())
            if where == "thrown-at-a-closing-event" and any(e is closing for closing in stream._closing):
                events.throw(KeyboardInterrupt())
    assert stream.done and stream.message is not None and not stream._turn and not c._held
    assert stream.message.generate_reason == "INTERRUPTED" and stream.message.text_content
    assert list(stream) == []
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    http.close()


def _interrupted_at(
    event: str, code: CodeType | None = None, *, after: CodeType | None = None
) -> Callable[[Any, str, Any], None]:
    """A profile function: Ctrl-C handled at the first ``event`` of a frame running ``code`` (any, None), once a
    frame running ``after`` has returned (if given). A signal is handled as a call begins or as a builtin returns:
    ``call`` (the frame the function called), ``c_call`` / ``c_return`` (the frame calling the builtin). (A
    coroutine's frame returns at each await too, yielding a future or None: its end is a return of anything else.)"""
    returned = after is None

    def profile(frame: Any, seen: str, arg: Any) -> None:
        nonlocal returned
        if not returned:
            returned = seen == "return" and frame.f_code is after and not isinstance(arg, (asyncio.Future, type(None)))
        elif seen == event and (code is None or frame.f_code is code):
            sys.setprofile(None)
            raise KeyboardInterrupt

    return profile


#: Ctrl-C handled as the first builtin call in the stream's loop returns (the loop taking the stream for its first step)
_first_builtin_return_in_the_loop_interrupts = _interrupted_at("c_return", ReplyStream._run.__code__)


def test_a_keyboard_interrupt_as_the_loop_takes_its_first_step_leaves_the_stream_closable(
    server: ReplayServer,
) -> None:
    """A KeyboardInterrupt handled just as the stream's loop had taken the stream for its first step (its lock's
    ``acquire()`` returned, before the ``try`` that lets it go) left the stream taken: a later ``close()`` took it
    for a loop still running and waited its whole ``wait`` (10 s by default), then returned with the stream not
    ended (``done`` False). Now the loop lets the stream go whatever stops it there: ``close()`` ends it at once
    (``wait=0`` here), nothing sent."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)
    events = iter(stream)
    sys.setprofile(_first_builtin_return_in_the_loop_interrupts)
    try:
        with pytest.raises(KeyboardInterrupt):
            next(events)
    finally:
        sys.setprofile(None)
    stream.close(wait=0)
    assert stream.done and stream.message is None and not c._held and server.requests == []
    assert list(stream) == []
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    http.close()


#: Where a Ctrl-C is handled between ``_send``'s 2xx response and the ``try`` that owns its body: a profile function
_AS_THE_BODY_IS_TAKEN: dict[str, Callable[[Any, str, Any], None]] = {
    "_send gives the stream its network stream": _interrupted_at(
        "call", ReplyStream._reading.__code__, after=httpx.Client.send.__code__
    ),
    "the loop reads the response's status": _interrupted_at("call", after=Client._send.__code__),
    "the loop makes its parser": _interrupted_at("call", Client.parser.__code__, after=Client._send.__code__),
    "the loop takes the body's reader": _interrupted_at("call", raw_chunks.__code__, after=Client._send.__code__),
    "the loop holds the response": _interrupted_at("c_call", ReplyStream._run.__code__, after=Client._send.__code__),
}


@pytest.mark.parametrize("where", list(_AS_THE_BODY_IS_TAKEN))
def test_a_keyboard_interrupt_as_the_loop_takes_its_response_gives_the_connection_back(
    server: ReplayServer, where: str
) -> None:
    """A KeyboardInterrupt handled after ``_send`` had the 2xx response and before the ``try`` that reads its body
    (as a call there began or returned: ``_send`` handing the stream the network stream, the loop reading the
    status, making its parser, taking the body's reader, holding the response) left the response open: its
    connection stayed taken, and with one connection in the pool the next stream waited out the pool timeout
    (APITimeoutError). Now whatever stops the loop there closes the response: the KeyboardInterrupt goes on, the
    stream is done (no message: none of the reply was read), nothing held, the connection given back."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)
    events = iter(stream)
    sys.setprofile(_AS_THE_BODY_IS_TAKEN[where])
    try:
        with pytest.raises(KeyboardInterrupt):
            next(events)
    finally:
        sys.setprofile(None)
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"  # (the connection given back)
    assert stream.done and stream.message is None and stream.status_code in (None, 200)
    assert not c._held and len(server.requests) == 2 and list(stream) == []
    http.close()


@pytest.mark.parametrize("call", ["call", "count_tokens"])
def test_a_keyboard_interrupt_as_a_whole_reply_is_read_gives_the_connection_back(
    server: ReplayServer, call: str
) -> None:
    """A KeyboardInterrupt handled as the first call after ``_send`` returned a whole reply's response began (the
    call that read its body, before its ``try``) left the response open, its connection taken: with one in the
    pool the next call waited out the pool timeout. Now no call comes between the response and the ``try`` that
    closes it: the KeyboardInterrupt goes on and the connection is given back."""
    provider, path, reply = (
        ("openai", OPENAI, (FIX / "openai/chat_completion_single_tool_call.json").read_bytes())
        if call == "call"
        else ("anthropic", "/v1/messages/count_tokens", b'{"input_tokens": 7}')
    )
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client(provider, base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    ask = c.call if call == "call" else c.count_tokens
    for _ in range(2):
        server.add(path, Reply(body=reply))
    sys.setprofile(_interrupted_at("call", after=Client._send.__code__))
    try:
        with pytest.raises(KeyboardInterrupt):
            ask(CONVO)
    finally:
        sys.setprofile(None)
    assert len(server.requests) == 1
    assert ask(CONVO)
    http.close()


@pytest.mark.parametrize("where", ["the loop reads the response's status", "the loop makes its parser", "whole"])
def test_a_keyboard_interrupt_as_the_async_loop_takes_its_response_gives_the_connection_back(
    server: ReplayServer, where: str
) -> None:
    """The async shell: no cancellation comes between ``_send``'s response and the ``try`` that reads its body (no
    await there), but a KeyboardInterrupt handled there (as a call began: the loop reading the status, making its
    parser; ``call()`` reading the whole body) left the response open, its connection taken: with one in the pool
    the next stream waited out the pool timeout. Now it closes the response: the KeyboardInterrupt goes on, the
    connection is given back."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    profile = _interrupted_at("call", after=AsyncClient._send.__code__)
    if where == "the loop makes its parser":
        profile = _interrupted_at("call", AsyncClient.parser.__code__, after=AsyncClient._send.__code__)

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        stream = c.stream(CONVO)
        sys.setprofile(profile)
        try:
            with pytest.raises(KeyboardInterrupt):
                if where == "whole":
                    await c.call(CONVO)
                else:
                    await stream.__aiter__().__anext__()
        finally:
            sys.setprofile(None)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert (await c.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"  # (the connection given back)
        assert len(server.requests) == 2 and not c._bodies
        if where != "whole":
            assert stream.done and stream.message is None and [e async for e in stream] == []
        await http.aclose()

    asyncio.run(main())


#: Where a Ctrl-C is handled once the async stream's body reader has its reading task, before the stream holds it
_AS_THE_BODY_READER_IS_MADE: dict[str, Callable[[Any, str, Any], None]] = {
    "the reading task is made": _interrupted_at(
        "return", asyncio.BaseEventLoop.create_task.__code__, after=AsyncClient._send.__code__
    ),
    "the body reader is handed to the loop": _interrupted_at(
        "return", _async._Body.__init__.__code__, after=AsyncClient._send.__code__
    ),
}


@pytest.mark.parametrize("where", list(_AS_THE_BODY_READER_IS_MADE))
def test_a_keyboard_interrupt_as_the_async_body_reader_is_made_leaves_no_task_reading(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A KeyboardInterrupt handled once the body's reader had started its reading task and before the stream held
    the reader (as the task was made, or as the reader was handed back) left that task unseen: the stream closed
    the response, and the task, run meanwhile, read the same response beside that close (what the module's design
    never does: a reading task is cancelled before its response is closed). Now a reading task its stream never
    took reads nothing: the KeyboardInterrupt goes on, nothing reads the body, the connection is given back."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, stall_after=len(CUT), stall=60))
    read: list[httpx.Response] = []
    chunks = araw_chunks

    def reading(response: httpx.Response, encoded: bool) -> Any:
        read.append(response)
        return chunks(response, encoded)

    monkeypatch.setattr(_async, "araw_chunks", reading)

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        stream = c.stream(CONVO)
        sys.setprofile(_AS_THE_BODY_READER_IS_MADE[where])
        try:
            with pytest.raises(KeyboardInterrupt):
                await stream.__aiter__().__anext__()
        finally:
            sys.setprofile(None)
        for _ in range(10):  # (any task made and left runs its first steps)
            await asyncio.sleep(0)
        assert read == [] and not c._bodies
        assert stream.done and stream.message is None and [e async for e in stream] == []
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert (await c.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"  # (the connection given back)
        assert len(server.requests) == 2 and len(read) == 1
        await http.aclose()

    asyncio.run(main())


def test_a_keyboard_interrupt_as_the_reader_comes_back_while_another_thread_closes(server: ReplayServer) -> None:
    """``close()`` from another thread that found the loop between two events ends the stream itself, holding it;
    the reader coming back meanwhile waits to take it. A KeyboardInterrupt handled there (the reader's wait cut)
    let the loop's end release the stream's lock, which the closing thread held: that thread's ``close()`` then
    failed (RuntimeError 'release unlocked lock') and the reader might have ended the stream beside it. Now the
    interrupted reader leaves the stream to the thread that holds it: the KeyboardInterrupt goes on, that
    ``close()`` ends the stream (INTERRUPTED with what arrived, its connection given back) without error."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    http = httpx.Client(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
    stream = c.stream(CONVO)
    ending, interrupted = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def paused_as_it_ends_the_stream(frame: Any, event: str, arg: Any) -> None:  # (the closing thread's)
        if event == "call" and frame.f_code is ReplyStream._cancelled.__code__:
            ending.set()
            interrupted.wait(5)

    def interrupted_as_it_takes_the_stream_back(frame: Any, event: str, arg: Any) -> None:  # (the reader's)
        if event == "c_call" and frame.f_code is ReplyStream._run.__code__:
            sys.setprofile(None)
            raise KeyboardInterrupt

    def closer() -> None:
        sys.setprofile(paused_as_it_ends_the_stream)
        try:
            stream.close(wait=5)
        except BaseException as exc:
            errors.append(exc)
        finally:
            sys.setprofile(None)

    events = iter(stream)
    assert next(events)
    closing = threading.Thread(target=closer)
    closing.start()
    assert ending.wait(5)
    sys.setprofile(interrupted_as_it_takes_the_stream_back)
    try:
        with pytest.raises(KeyboardInterrupt):
            next(events)
    finally:
        sys.setprofile(None)
        interrupted.set()
    closing.join(5)
    assert not closing.is_alive() and errors == []
    assert stream.done and stream.message is not None and stream.message.generate_reason == "INTERRUPTED"
    assert not c._held and list(stream) == []
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
    assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
    http.close()


def test_the_trace_is_called_until_the_request_is_on_its_connection(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's request carries httpcore's ``trace``, which gives ``close()`` from another thread a new
    connection's network stream while the request waits for its headers. httpcore called it at the start and end
    of each step (about 10 calls a request, the body's reads and the response's close included), each a few µs
    for nothing once the connection was known. Now it is taken out of the request at the first event of the
    connection's protocol: a request calls it for its new connection's connect (whose network stream ``close()``
    shuts: the ``waiting-for-headers`` case above) and the first step on it, no more (a kept-alive connection's:
    that step only). (The replay server closes each connection: each request here opens one.)"""
    calls: list[str] = []
    trace = ReplyStream._trace

    def counted(stream: ReplyStream, event: str, info: dict[str, Any]) -> None:
        calls.append(event)
        trace(stream, event, info)

    monkeypatch.setattr(ReplyStream, "_trace", counted)
    c = Client("openai", base_url=server.url, api_key="k", model="m", max_retries=0)
    seen = []
    for _ in range(2):
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert c.stream(CONVO).until_done().generate_reason == "MODEL_STOP"
        seen.append(calls[:])
        calls.clear()
    c.close()
    connected = [
        "connection.connect_tcp.started",
        "connection.connect_tcp.complete",
        "http11.send_request_headers.started",
        "http11.send_request_headers.complete",
    ]
    assert seen == [connected, connected]


def test_aclose_from_another_task_as_the_cancelled_loop_closes_its_response(server: ReplayServer) -> None:
    """A stop button's handler that cancels the stream's task and then calls ``aclose()``: the loop was closing its
    response (the cancellation's cleanup) and ``aclose()`` raised RuntimeError ('aclose(): asynchronous generator is
    already running'). Now it waits for that cleanup; the stream is done, INTERRUPTED with what arrived, the
    cancellation goes on in the loop's task and the connection is given back."""
    server.add(OPENAI, Reply(body=TEXT_SSE, sse=True, delay=0.05))

    async def main() -> None:
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=httpx.Timeout(5.0, pool=1.0))
        c = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0, http_client=http)
        stream = c.stream(CONVO)
        reading = asyncio.Event()

        async def consume() -> None:
            async for e in stream:
                if e["type"] == "TEXT_BLOCK_DELTA":
                    reading.set()

        task = asyncio.create_task(consume())
        await reading.wait()
        task.cancel()
        while stream._reader is not None:  # (the loop's task, cancelled, now closes its response)
            await asyncio.sleep(0)
        await asyncio.wait_for(stream.aclose(), 5)
        with pytest.raises(asyncio.CancelledError):
            await task
        assert_cut_short(stream)
        server.add(OPENAI, Reply(body=TEXT_SSE, sse=True))
        assert (await c.stream(CONVO).until_done()).generate_reason == "MODEL_STOP"
        await http.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("mode", ["call", "stream", "stream-iterated"])
def test_a_download_of_the_media_policy_leaves_the_event_loop_free(mode: str) -> None:
    """``call`` and ``stream`` with a media policy that downloads format in a worker thread (``aformat``; a stream as
    it starts, with ``async with`` or at its first event): the download's server sends the file only once another
    task of the loop has run (it released it). Formatted on the loop, the call held it for the whole download, the
    task never ran, and the download failed at its timeout; ``stream`` formatted on the loop as it was called. Its
    request is not known before it starts."""
    import http.server

    from agentmsg import DataBlock, URLSource
    from agentmsg.errors import AgentmsgError
    from agentmsg.providers import MediaPolicy

    asked, released = threading.Event(), threading.Event()
    reply = (FIX / "openai" / "chat_completion_text.json").read_bytes()
    streamed = (FIX / "openai" / "stream_text_include_usage.sse").read_bytes()
    sent: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            asked.set()
            ok = released.wait(10)
            self._send(200 if ok else 503, "application/pdf", b"%PDF-1.4 tiny")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            sent.append(body)
            if b'"stream":true' in body:
                self._send(200, "text/event-stream", streamed)
            else:
                self._send(200, "application/json", reply)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    policy = MediaPolicy(allow_download=True, allow_private=True, timeout=5)
    messages = [UserMessage([DataBlock(source=URLSource(url=f"{url}/doc.pdf", mime_type="application/pdf"))])]

    async def main() -> agentmsg.Msg | None:
        async def release() -> None:
            while not asked.is_set():
                await asyncio.sleep(0.005)
            released.set()

        releasing = asyncio.create_task(release())
        msg: agentmsg.Msg | None = None
        async with AsyncClient("openai", base_url=f"{url}/v1", api_key="k", format_options={"media": policy}) as c:
            if mode == "call":  # (aformat, in a worker thread)
                msg = await c.call(messages)
            else:
                stream = c.stream(messages)
                assert not asked.is_set()  # nothing downloaded yet: formatted as the stream starts
                with pytest.raises(AgentmsgError, match="formatted as the stream starts"):
                    stream.diagnostics  # noqa: B018 (a property that raises)
                if mode == "stream":
                    async with stream:
                        assert stream.request.diagnostics == stream.diagnostics
                        msg = await stream.until_done()
                else:
                    msg = await stream.until_done()
        await releasing
        return msg

    try:
        msg = asyncio.run(asyncio.wait_for(main(), 30))
    finally:
        server.shutdown()
        server.server_close()
    assert released.is_set()
    assert sent and b"JVBERi0xLjQgdGlueQ" in sent[-1]  # the file's base64, in the request
    assert msg is not None and msg.text_content and msg.generate_reason != "INTERRUPTED"


def test_a_stream_whose_request_does_not_format_raises_as_it_starts() -> None:
    """A stream formatted as it starts (a media policy that reads files) raises a formatting error there, sends
    nothing, and ends: leaving it then is quiet, and its request stays unknown."""
    from agentmsg.errors import AgentmsgError
    from agentmsg.providers import MediaPolicy

    policy = MediaPolicy(allowed_roots=[str(FIX)])
    changed = UserMessage("hi")
    changed.content.append(5)  # type: ignore[arg-type]  # (a message changed after construction: refused)
    messages = [changed]

    async def main() -> None:
        c = AsyncClient("openai", base_url="http://127.0.0.1:9/v1", api_key="k", format_options={"media": policy})
        stream = c.stream(messages)
        with pytest.raises(agentmsg.ValidationError) as caught:
            async with stream:
                raise AssertionError("not reached")
        assert caught.value.problems[0].pointer == "/0/content/1", caught.value.problems
        assert stream.done
        await stream.aclose()
        with pytest.raises(AgentmsgError):
            stream.request  # noqa: B018
        await c.aclose()

    asyncio.run(main())
