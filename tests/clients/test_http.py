"""Provider clients over real HTTP: a replay server on loopback (agentmsg.testing) serves the recorded
responses, with faults injected (429 then success, 500, 401, disconnect mid-stream, malformed SSE lines,
a stall past the read timeout, a provider error mid-stream, cancellation). Nothing received before a
fault is lost."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import agentmsg
import agentmsg.clients
from agentmsg import Msg, UserMessage, reduce_events
from agentmsg.clients import (
    APIConnectionError,
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    Client,
    RateLimitError,
    ServerError,
)
from agentmsg.providers import FormattedRequest
from agentmsg.providers import anthropic as anthropic_mod
from agentmsg.providers import dashscope as dashscope_mod
from agentmsg.providers import gemini as gemini_mod
from agentmsg.providers import openai as openai_mod
from agentmsg.testing import ReplayServer, Reply, malformed
from tests.conftest import ROOT

FIX = ROOT / "tests" / "fixtures" / "providers"
TEXT_SSE = (FIX / "openai/stream_text_include_usage.sse").read_bytes()
TOOLS_SSE = (FIX / "openai/stream_parallel_tool_calls.sse").read_bytes()
CONVO = [UserMessage("What's the weather in San Francisco?")]


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        yield s


def client(server: ReplayServer, **kw: Any) -> Any:
    kw.setdefault("max_retries", 2)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    return Client("openai", base_url=server.url, api_key="sk-test", model="gpt-4o", **kw)


def content(msg: agentmsg.Msg) -> Any:
    return [{k: v for k, v in b.items() if k != "content"} for b in msg.to_dict()["content"]]


async def streamed(http_client: httpx.AsyncClient) -> agentmsg.Msg | None:
    """The message an OpenAI AsyncClient over ``http_client`` streams for CONVO, every event read."""
    ac = AsyncClient("openai", api_key="k", model="m", http_client=http_client)
    async with ac.stream(CONVO) as astream:
        async for _ in astream:
            pass
    return astream.message


def expected(body: bytes, mod: Any = openai_mod) -> agentmsg.Msg:
    return reduce_events(list(mod.parse_stream(body)))[0]


def test_stream_over_http_yields_events_and_message(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(body=TOOLS_SSE, sse=True, chunk_size=97))
    c = client(server)
    tools = [{"name": "GetWeatherArgs", "description": "weather", "parameters": {"type": "object", "properties": {}}}]
    with c.stream(CONVO, tools=tools) as stream:
        events = list(stream)
    for e in events:
        agentmsg.validate(e, "event")
    assert events[0]["type"] == "AGENT_START" and events[-1]["type"] == "AGENT_END"
    assert stream.message is not None
    assert content(stream.message) == content(expected(TOOLS_SSE))
    assert stream.message.usage is not None and stream.message.usage.time is not None
    sent = server.requests[-1]
    assert sent.path == "/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.json() == stream.request.body  # the formatter's body, byte for byte equal as JSON
    assert sent.json()["stream"] is True and sent.json()["tools"][0]["function"]["name"] == "GetWeatherArgs"
    assert stream.diagnostics == stream.request.diagnostics


def test_requests_accept_only_the_encodings_inflated_in_bounded_pieces(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx asks for br and zstd too where their packages are installed, and decodes each network read of them
    whole: a compressed bomb would be held at once, past limits.max_bytes. The clients ask for gzip and deflate,
    which they inflate 64 KiB at a time, whatever httpx would ask for (its own default made to ask for br here);
    a caller's ``headers=`` still decides."""
    import httpx._client

    monkeypatch.setattr(httpx._client, "ACCEPT_ENCODING", "gzip, deflate, br, zstd")  # (brotli, zstandard installed)
    assert "br" in httpx.Client().headers["accept-encoding"]
    server.add("/chat/completions", Reply(body=TOOLS_SSE, sse=True))
    with client(server).stream(CONVO) as stream:
        list(stream)
    assert server.requests[-1].headers["accept-encoding"] == "gzip, deflate"
    server.add("/chat/completions", Reply(body=TOOLS_SSE, sse=True))
    own = Client("openai", base_url=server.url, api_key="k", model="m", headers={"Accept-Encoding": "identity"})
    own.stream(CONVO).until_done()
    assert server.requests[-1].headers["accept-encoding"] == "identity"


def test_call_returns_message(server: ReplayServer) -> None:
    body = (FIX / "openai/chat_completion_parallel_tool_calls.json").read_bytes()
    server.add("/chat/completions", Reply(body=body))
    msg = client(server).call(CONVO)
    assert content(msg) == content(openai_mod.parse_response(body))
    assert server.requests[-1].json().get("stream") is None


def test_the_whole_reply_and_the_streams_message_keep_what_the_reader_left_out(server: ReplayServer) -> None:
    """A usage count the reader cannot read (``1e400``) is said and left out: ``call`` and the stream's message keep
    the saying in metadata ``agentmsg_notes`` (it was lost: the reply's message held no trace of it)."""
    usage = b'"usage": {"prompt_tokens": 1e400, "completion_tokens": 2, "total_tokens": 3}'
    choice = b'{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}'
    server.add("/chat/completions", Reply(body=b'{"id": "c1", "choices": [' + choice + b"], " + usage + b"}"))
    note = {"rule": "type", "message": "usage.prompt_tokens is no token count (1e400): not kept"}
    msg = client(server).call(CONVO)
    assert msg.text_content == "hi" and msg.metadata["agentmsg_notes"] == [note]
    delta = b'{"id": "c1", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}'
    last = b'{"id": "c1", "choices": [], ' + usage + b"}"
    server.add(
        "/chat/completions", Reply(body=b"data: " + delta + b"\n\ndata: " + last + b"\n\ndata: [DONE]\n\n", sse=True)
    )
    with client(server).stream(CONVO) as stream:
        list(stream)
    assert stream.message is not None and stream.message.metadata["agentmsg_notes"] == [note]


def waits_of(c: Client | AsyncClient) -> list[float]:
    """The waits ``c`` takes between attempts, recorded in place of being slept (the wait itself is
    ``time.sleep``, the stop event's wait or ``asyncio.sleep`` of that many seconds)."""
    waits: list[float] = []
    if isinstance(c, AsyncClient):

        async def record_async(delay: float) -> None:
            waits.append(delay)

        c._sleep = record_async  # type: ignore[method-assign]
    else:
        c._sleep = lambda delay, stream: waits.append(delay)  # type: ignore[method-assign]
    return waits


def test_429_then_success_honours_retry_after(server: ReplayServer) -> None:
    """The waits taken are the server's: Retry-After 0 (none), then retry-after-ms 10 (10 ms), not the backoff
    (0.01 s here, times a jitter: 0.0075 to 0.01)."""
    server.add(
        "/chat/completions",
        Reply.json({"error": {"message": "Rate limit reached"}}, status=429, headers={"Retry-After": "0"}),
        Reply.json({"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after-ms": "10"}),
        Reply(body=TEXT_SSE, sse=True),
    )
    c = client(server)
    waits = waits_of(c)
    msg = c.stream(CONVO).until_done()
    assert len(server.requests) == 3 and waits == [0.0, 0.01]
    assert content(msg) == content(expected(TEXT_SSE))


@pytest.mark.parametrize("shell", ["sync", "async"])
def test_the_wait_taken_is_retry_after_up_to_max_retry_after_else_the_capped_backoff(
    server: ReplayServer, shell: str
) -> None:
    """Each wait between attempts, sync and async, streamed and whole: the server's Retry-After (7 s, 1.5 s:
    recorded, not slept) while it is at most max_retry_after; beyond it (120 s, or garbage) the backoff
    (1 s doubling: 4 s at the third attempt, jittered by 0.75 to 1) capped at 8 s."""
    busy = Reply.json({"error": {"message": "busy"}}, status=429, headers={"Retry-After": "7"})
    replies = [
        busy,
        Reply.json({"error": {"message": "busy"}}, status=503, headers={"retry-after-ms": "1500"}),
        Reply.json({"error": {"message": "busy"}}, status=429, headers={"Retry-After": "120"}),
        Reply.json({"error": {"message": "busy"}}, status=500, headers={"Retry-After": "soon"}),
        Reply.json({"error": {"message": "busy"}}, status=500),
    ]
    options: dict[str, Any] = {"base_url": server.url, "api_key": "k", "model": "m", "max_retries": 5}
    options.update(backoff=1.0, max_retry_after=60.0)
    for how in ("stream", "call"):
        server.add("/chat/completions", *replies, Reply(body=TEXT_SSE, sse=True))
        server.requests.clear()
        if shell == "sync":
            c = Client("openai", **options)
            waits = waits_of(c)
            msg = c.stream(CONVO).until_done() if how == "stream" else c.call(CONVO)
        else:

            async def run(how: str) -> tuple[agentmsg.Msg, list[float]]:
                async with AsyncClient("openai", **options) as ac:
                    waits = waits_of(ac)
                    return (await ac.stream(CONVO).until_done() if how == "stream" else await ac.call(CONVO)), waits

            msg, waits = asyncio.run(run(how))
        assert msg.text_content == expected(TEXT_SSE).text_content and len(server.requests) == 6
        assert waits[:2] == [7.0, 1.5], how
        assert 3.0 <= waits[2] <= 4.0 and 6.0 <= waits[3] <= 8.0 and 6.0 <= waits[4] <= 8.0, waits  # (16 s capped)
    server.add("/chat/completions", busy)
    c = Client("openai", **{**options, "max_retries": 2, "max_retry_after": 5.0})
    waits = waits_of(c)
    with pytest.raises(RateLimitError):
        c.call(CONVO)
    assert 0.75 <= waits[0] <= 1.0 and 1.5 <= waits[1] <= 2.0 and len(waits) == 2  # Retry-After 7 > 5: the backoff


def test_429_exhausted_raises_rate_limit_with_provider_message(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply.json({"error": {"message": "Rate limit reached for gpt-4o"}}, status=429))
    with pytest.raises(RateLimitError) as info:
        client(server, max_retries=1).call(CONVO)
    assert info.value.message == "Rate limit reached for gpt-4o" and info.value.status_code == 429
    assert len(server.requests) == 2


def test_500_retried_then_server_error(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply.json({"error": {"message": "The server had an error"}}, status=500))
    with pytest.raises(ServerError, match="The server had an error"):
        list(client(server).stream(CONVO))
    assert len(server.requests) == 3


def test_500_then_success(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(status=502, body=b"Bad Gateway"), Reply(body=TEXT_SSE, sse=True))
    assert content(client(server).stream(CONVO).until_done()) == content(expected(TEXT_SSE))


def test_auth_and_bad_request_not_retried(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply.json({"error": {"message": "Incorrect API key provided"}}, status=401))
    with pytest.raises(AuthenticationError, match="Incorrect API key"):
        client(server).call(CONVO)
    server.add("/chat/completions", Reply.json({"error": {"message": "Unrecognized request argument"}}, status=400))
    with pytest.raises(BadRequestError):
        client(server).call(CONVO)
    assert len(server.requests) == 2


@pytest.mark.parametrize("read_first", [False, True])
def test_a_callers_raise_for_status_hook_is_judged_by_the_status(server: ReplayServer, read_first: bool) -> None:
    """An ``http_client`` whose response hook calls ``raise_for_status()`` (a common httpx set-up): its
    HTTPStatusError was taken for a failed connection, so a 401 was retried twice and raised APIConnectionError
    ("connection failed: Client error '401 Unauthorized'"). Now the status is judged as without the hook: a 401
    is not retried, a 429 or a 500 is, and the error carries the body when the hook read it (httpx closes the
    response when a hook raises), or says that it was closed unread."""
    import httpx

    def hook(response: httpx.Response) -> None:
        if read_first:
            response.read()
        response.raise_for_status()

    async def ahook(response: httpx.Response) -> None:
        if read_first:
            await response.aread()
        response.raise_for_status()

    def ours(**kw: Any) -> Any:
        return httpx.Client(event_hooks={"response": [hook]}, **kw)

    refused = Reply.json({"error": {"message": "Incorrect API key provided"}}, status=401)
    busy = Reply.json({"error": {"message": "Rate limit reached"}}, status=429)
    said = "Incorrect API key provided" if read_first else "the http_client's response hook closed it unread"
    for how in ("call", "stream", "async"):
        server.requests.clear()
        server.add("/chat/completions", refused)
        with pytest.raises(AuthenticationError, match=said) as info:
            if how == "call":
                client(server, http_client=ours()).call(CONVO)
            elif how == "stream":
                with client(server, http_client=ours()).stream(CONVO) as stream:
                    list(stream)
            else:

                async def run() -> None:
                    http = httpx.AsyncClient(event_hooks={"response": [ahook]})
                    async with AsyncClient(
                        "openai",
                        base_url=server.url,
                        api_key="sk-test",
                        model="gpt-4o",
                        max_retries=2,
                        backoff=0.01,
                        timeout=5.0,
                        http_client=http,
                    ) as c:
                        await c.call(CONVO)

                asyncio.run(run())
        assert info.value.status_code == 401, how
        assert len(server.requests) == 1, how  # (not retried)
    server.requests.clear()
    server.add("/chat/completions", busy, Reply(body=TEXT_SSE, sse=True))  # a 429 is retried, as always
    with client(server, http_client=ours()).stream(CONVO) as stream:
        list(stream)
    assert stream.message is not None and content(stream.message) == content(expected(TEXT_SSE))
    assert len(server.requests) == 2


def test_api_key_from_environment(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    Client("openai", base_url=server.url, model="gpt-4o").stream(CONVO).until_done()
    assert server.requests[-1].headers["authorization"] == "Bearer sk-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        Client("openai", base_url=server.url).call(CONVO)


@pytest.mark.parametrize("cut", [600, 2500, 5000])
def test_disconnect_mid_stream_keeps_everything(server: ReplayServer, cut: int) -> None:
    server.add("/chat/completions", Reply(body=TOOLS_SSE, sse=True, chunk_size=50, disconnect_after=cut))
    stream = client(server).stream(CONVO)
    events: list[dict[str, Any]] = []
    with pytest.raises(BrokenStreamError) as info:
        for e in stream:
            events.append(e)
    assert len(server.requests) == 1  # never retried once the stream started
    partial = info.value.partial
    assert partial is stream.message and partial.generate_reason == agentmsg.GenerateReason.INTERRUPTED
    # everything the complete prefix of the body carried is in the message
    received = TOOLS_SSE[:cut]
    prefix = received[: received.rfind(b"\n\n") + 2]
    kept = reduce_events(list(openai_mod.parse_stream(prefix)))[0]
    assert [c.content for c in partial.blocks("tool_use")] == [c.content for c in kept.blocks("tool_use")]
    assert any(e["type"] == "CUSTOM" and e["value"].get("type") == "disconnect" for e in events)
    assert events[-1]["type"] == "AGENT_END"
    assert reduce_events(events)[0].to_dict()["content"] == partial.to_dict()["content"]


def test_malformed_sse_lines_are_skipped_and_reported(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(body=malformed(TEXT_SSE), sse=True, chunk_size=33))
    stream = client(server).stream(CONVO, raise_on_error=False)
    events = list(stream)
    assert stream.message is not None and content(stream.message) == content(expected(TEXT_SSE))
    problems = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "agentmsg.problem"]
    rules = [p["value"]["rule"] for p in problems]
    # each data line that is no JSON; the garbage lines of no SSE field, once (they were skipped unsaid)
    assert rules.count("sse") == 1 and rules.count("json") == len(rules) - 1 >= 1
    assert stream.error is None


def test_stall_past_read_timeout_breaks_and_keeps(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, stall_after=3000, stall=3.0))
    stream = client(server, timeout=0.5).stream(CONVO)
    with pytest.raises(BrokenStreamError, match="timeout") as info:
        list(stream)
    # the read error names its timeout's seconds: the body is read from httpx's byte stream itself, whose errors
    # carry no request (iter_raw() gave them one), so the client gives them theirs (with_request)
    assert "no data within the read timeout (0.5 s)" in str(info.value)
    text = info.value.partial.text_content
    full = expected(TEXT_SSE).text_content
    assert text and full.startswith(text) and text != full


class AnswersEverySecondRequest:
    """A loopback server that reads each request and answers only every second one (the TEXT_SSE stream): the
    others get no headers, ever (the connection held open)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
        answer = head + b"Content-Length: %d\r\n\r\n" % len(TEXT_SSE) + TEXT_SSE
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while b"\r\n\r\n" not in data and (got := conn.recv(65536)):
                data += got
            self.requests += 1
            if self.requests % 2:
                self.held.append(conn)
            else:
                conn.sendall(answer)
                conn.close()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_stall_before_headers_is_retried() -> None:
    """A server that takes the request and sends no headers within the read timeout: the attempt fails as a
    timeout before the reply began and is retried (after the backoff, on a new connection), sync and async;
    the retry gets the reply. (This test served a 500 then the reply: no stall at all.)"""
    server = AnswersEverySecondRequest()
    try:
        c = Client("openai", base_url=server.url, api_key="k", model="m", timeout=0.3, max_retries=1, backoff=0.5)
        waits = waits_of(c)
        assert c.stream(CONVO).until_done().text_content == expected(TEXT_SSE).text_content
        assert server.requests == 2 and len(waits) == 1 and 0.375 <= waits[0] <= 0.5

        async def run() -> tuple[agentmsg.Msg, list[float]]:
            async with AsyncClient(
                "openai", base_url=server.url, api_key="k", model="m", timeout=0.3, max_retries=1, backoff=0.5
            ) as ac:
                waits = waits_of(ac)
                return await ac.stream(CONVO).until_done(), waits

        msg, waits = asyncio.run(run())
        assert msg.text_content == expected(TEXT_SSE).text_content
        assert server.requests == 4 and len(waits) == 1 and 0.375 <= waits[0] <= 0.5
        with pytest.raises(agentmsg.clients.APITimeoutError, match="no data within the read timeout"):
            Client("openai", base_url=server.url, api_key="k", model="m", timeout=0.3, max_retries=0).call(CONVO)
    finally:
        server.close()


def test_provider_error_mid_stream(server: ReplayServer) -> None:
    body = (
        TEXT_SSE[: TEXT_SSE.find(b"\n\n", 1500) + 2]
        + b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
    )
    server.add("/chat/completions", Reply(body=body, sse=True))
    stream = client(server).stream(CONVO)
    with pytest.raises(BrokenStreamError, match="overloaded") as info:
        list(stream)
    assert info.value.partial.text_content and info.value.partial.generate_reason.value == "INTERRUPTED"


def test_cancel_marks_interrupted_and_keeps(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, delay=0.001))
    stream = client(server).stream(CONVO)
    deltas = 0
    for e in stream:
        if e["type"] == "TEXT_BLOCK_DELTA":
            deltas += 1
            if deltas == 5:
                break
    stream.close()
    msg = stream.message
    assert msg is not None and msg.generate_reason.value == "INTERRUPTED"
    assert expected(TEXT_SSE).text_content.startswith(msg.text_content) and msg.text_content


def test_mid_stream_snapshot_does_not_claim_a_normal_end(server: ReplayServer) -> None:
    """A snapshot read while the reply streams says INTERRUPTED (the reply as it would stand were the stream
    cut there), not MODEL_STOP (a missing reason reads as one: a normal end that has not happened);
    ``done`` tells it from the final message, which has the reason the stream gave."""
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True))
    stream = client(server).stream(CONVO)
    assert stream.message is None and not stream.done
    snapshots: list[Msg] = []
    for e in stream:
        if e["type"] == "TEXT_BLOCK_DELTA":
            assert not stream.done and stream.message is not None
            snapshots.append(stream.message)
    assert snapshots
    for m in snapshots:
        assert m.metadata["agentscope_generate_reason"] == "INTERRUPTED"
        assert m.generate_reason == agentmsg.GenerateReason.INTERRUPTED
    assert snapshots[-1].text_content == expected(TEXT_SSE).text_content
    final = stream.message
    assert stream.done and final is not None and final is stream.message
    assert "agentscope_generate_reason" not in final.metadata  # MODEL_STOP, as the reducer gives it
    assert final.generate_reason == agentmsg.GenerateReason.MODEL_STOP
    # the usage holds reasoningTokens (beyond Java's ChatUsage), so metadata keeps a copy of the whole usage; the
    # client's usage has the call's wall-clock time, which the offline parse has not
    assert final.usage is not None and final.metadata["_chat_usage"] == final.to_dict()["usage"]
    untimed = {**final.metadata, "_chat_usage": {k: v for k, v in final.metadata["_chat_usage"].items() if k != "time"}}
    assert untimed == expected(TEXT_SSE).metadata and content(final) == content(expected(TEXT_SSE))


def _seen(events: list[Any]) -> Msg:
    """The message of the events a caller has seen so far, as a snapshot says it (INTERRUPTED until an end)."""
    return reduce_events(events)[0]


@pytest.mark.parametrize("pieces", [1, 2, 7], ids=["whole", "halves", "sevenths"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_snapshot_holds_the_events_yielded_so_far_however_the_body_comes(
    server: ReplayServer, mode: str, pieces: int
) -> None:
    """``stream.message`` read after each event is the message of the events yielded so far, however many events
    one read of the body holds. The client folded a read's events before yielding the first: the snapshot ran ahead
    of what the caller had seen (text not yet yielded), and was None for every event after the one read that held
    the reply's end, which the caller had not reached (a UI that shows it lost the reply's text)."""
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, chunk_size=-(-len(TEXT_SSE) // pieces)))
    seen: list[Any] = []
    checked: list[tuple[Msg | None, Msg]] = []

    def look(stream: Any, event: Any) -> None:
        seen.append(event)
        checked.append((stream.message, _seen(seen)))

    if mode == "sync":
        with client(server).stream(CONVO) as stream:
            for e in stream:
                look(stream, e)
    else:

        async def run() -> None:
            ac = AsyncClient("openai", base_url=server.url, api_key="sk-test", model="gpt-4o", timeout=5.0)
            async with ac.stream(CONVO) as astream:
                async for e in astream:
                    look(astream, e)
            await ac.aclose()

        asyncio.run(run())
    assert len(checked) > 20
    for got, want in checked:
        assert got is not None
        assert got.text_content == want.text_content
        assert got.generate_reason == want.generate_reason


def test_a_snapshot_read_from_another_thread_while_the_loop_runs_takes_nothing_twice(server: ReplayServer) -> None:
    """A thread that reads ``stream.message`` over and over (a GUI's timer) while another iterates: the reducer
    takes each event once whoever asks, never in two threads at once (the reader takes the events yielded only
    while the loop is not running: its feed made slow here, the loop waits for it), each snapshot a prefix of the
    reply, the final message the reply's."""
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, chunk_size=97))
    want = expected(TEXT_SSE).text_content
    stream = client(server).stream(CONVO)
    texts: list[str] = []
    stop = threading.Event()
    feeding: list[str] = []
    overlaps: list[str] = []
    trusted = stream.reducer._trusted_feed

    def watched() -> Any:
        feed = trusted()

        def fold(events: Any) -> None:
            if feeding:
                overlaps.append(threading.current_thread().name)
            feeding.append(threading.current_thread().name)
            try:
                if threading.current_thread() is poller:
                    time.sleep(0.01)  # (the loop, were it not kept out, would fold meanwhile)
                feed(events)
            finally:
                feeding.pop()

        return fold

    stream.reducer._trusted_feed = watched

    def poll() -> None:
        while not stop.is_set():
            m = stream.message
            if m is not None:
                texts.append(m.text_content)

    poller = threading.Thread(target=poll, name="poller")
    poller.start()
    try:
        with stream:
            for e in stream:
                if e["type"] == "TEXT_BLOCK_DELTA":
                    time.sleep(0)  # (the poller gets the GIL between events)
    finally:
        stop.set()
        poller.join(5)
    assert stream.done and stream.message is not None and stream.message.text_content == want
    assert texts and all(want.startswith(t) for t in texts) and overlaps == []


def _left_at(server: ReplayServer, provider: str, mode: str, kind: str) -> tuple[Msg | None, list[Any]]:
    """A ``provider`` stream (``mode``: sync or async) left, inside ``with``, at its first event of type ``kind``: its
    final message and the events yielded."""
    seen: list[Any] = []
    kw: dict[str, Any] = {"base_url": server.url, "api_key": "sk-test", "model": "m", "timeout": 5.0}
    if mode == "sync":
        with Client(provider, **kw).stream(CONVO) as stream:
            for e in stream:
                seen.append(e)
                if e["type"] == kind:
                    break
        return stream.message, seen

    async def run() -> Msg | None:
        ac = AsyncClient(provider, **kw)
        async with ac.stream(CONVO) as astream:
            async for e in astream:
                seen.append(e)
                if e["type"] == kind:
                    break
        await ac.aclose()
        return astream.message

    return asyncio.run(run()), seen


@pytest.mark.parametrize("pieces", [1, 2], ids=["whole", "halves"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_leaving_at_the_first_delta_keeps_what_was_yielded(server: ReplayServer, mode: str, pieces: int) -> None:
    """A caller that leaves the loop at the first text delta (a stop button) gets the message of what it saw,
    INTERRUPTED. A body that came in one read gave the whole reply and MODEL_STOP, in two the first half's text."""
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, chunk_size=-(-len(TEXT_SSE) // pieces)))
    final, seen = _left_at(server, "openai", mode, "TEXT_BLOCK_DELTA")
    assert final is not None and final.generate_reason == agentmsg.GenerateReason.INTERRUPTED
    assert final.text_content == _seen(seen).text_content == seen[-1]["delta"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_leaving_before_a_read_is_yielded_whole_keeps_its_unseen_part_out(server: ReplayServer, mode: str) -> None:
    """The body in one read: the parser has read the whole reply (its calls, its end) when the caller leaves after
    a few events. The parser's closing events closed what the reducer never took: calls the caller never saw became
    tool_use blocks with no arguments, and a reply the parser saw end ended TOOL_CALLS with a call of arguments
    ``{}``, which an agent loop would run. Now only their notes and the model call's end (the reply's usage) go to
    the reducer, which ends the reply as cut: INTERRUPTED, with what was yielded (a call cut in its arguments keeps
    their text, not an input)."""
    body = (FIX / "anthropic/stream_sdk_tool_use.sse").read_bytes()
    server.add("/v1/messages", Reply(body=body, sse=True, chunk_size=len(body)))
    final, seen = _left_at(server, "anthropic", mode, "TOOL_CALL_DELTA")
    assert final is not None and final.generate_reason == agentmsg.GenerateReason.INTERRUPTED
    (call,) = [b for b in final.content if b.type == "tool_use"]
    assert call.input == {} and call.content == seen[-1]["delta"]  # (the text of its arguments so far)
    assert final.text_content == _seen(seen).text_content
    # (the reply's usage, which came in the read, kept: the closing events' model call end carried it)
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (377, 65)
    server.add("/v1/messages", Reply(body=body, sse=True, chunk_size=len(body)))
    c = Client("anthropic", base_url=server.url, api_key="k", model="m", timeout=5.0)
    with c.stream(CONVO) as stream:
        for e in stream:
            if e["type"] == "MODEL_CALL_START":
                break
    assert stream.message is not None and stream.message.content == []  # (no call it never saw)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_leaving_before_a_call_the_parser_holds_back_keeps_no_such_call(server: ReplayServer, mode: str) -> None:
    """OpenAI's parser holds a tool call back until its first arguments come (its start is not yet an event): a
    caller that left then, every event of its reads yielded, got a tool_use it never saw (no input, pending) from
    the parser's closing events. Those of a block or call whose start was not yielded are not fed now."""
    body = (FIX / "openai/stream_single_tool_call.sse").read_bytes()
    server.add("/chat/completions", Reply(body=body, sse=True, chunk_size=13))
    final, seen = _left_at(server, "openai", mode, "MODEL_CALL_START")
    assert [e["type"] for e in seen] == ["AGENT_START", "MODEL_CALL_START"]
    assert final is not None and final.content == [] and final.generate_reason == agentmsg.GenerateReason.INTERRUPTED


def test_close_from_another_thread_as_a_read_is_parsed_keeps_only_the_events_yielded(server: ReplayServer) -> None:
    """``close()`` from another thread while the loop parses a read: the loop took the read's first event off its
    list, saw the stop, and left; that event counted as yielded, and the final message held text the caller never
    saw. The stop is now looked at before an event is taken."""
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, chunk_size=400))
    c = client(server)
    stream = c.stream(CONVO)
    make = c.parser
    reads = [0]

    def parser(*a: Any, **k: Any) -> Any:
        p = make(*a, **k)
        feed = p.feed

        def feed_and_close(chunk: bytes) -> Any:
            events = feed(chunk)
            reads[0] += 1
            if reads[0] == 3:  # (a GUI's stop lands while this read is parsed)
                closing = threading.Thread(target=stream.close, daemon=True)
                closing.start()
                while not stream._stopped:
                    time.sleep(0.001)
            return events

        p.feed = feed_and_close
        return p

    c.parser = parser
    seen = list(stream)
    assert stream.done and stream.message is not None
    assert stream.message.generate_reason == agentmsg.GenerateReason.INTERRUPTED
    assert stream.message.text_content == _seen(seen).text_content


def test_a_ctrl_c_as_a_snapshot_takes_the_turn_leaves_the_stream_closable(server: ReplayServer) -> None:
    """A KeyboardInterrupt handled as ``message`` (read between two events) has just taken the stream's turn left it
    taken for good: ``close()`` then spun for ever. The turn is now taken inside the ``try`` that gives it back."""
    import signal

    from agentmsg.clients import _sync

    class Turn(dict[str, object]):
        fired = False

        def setdefault(self, key: str, value: object = None) -> object:
            got = dict.setdefault(self, key, value)
            if value is _sync._PEEK and got is _sync._PEEK and not Turn.fired:
                Turn.fired = True
                signal.raise_signal(signal.SIGINT)  # (a Ctrl-C handled as the call returns)
            return got

    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True))
    stream = client(server).stream(CONVO)
    stream._turn = Turn()
    with pytest.raises(KeyboardInterrupt):
        for n, _ in enumerate(stream, 1):
            if n == 3:
                _ = stream.message
    assert Turn.fired and stream._turn.get("turn") is not _sync._PEEK
    closing = threading.Thread(target=stream.close, daemon=True)
    closing.start()
    closing.join(5)
    assert not closing.is_alive() and stream.done


def test_call_with_strict_refuses_before_sending_what_the_formatter_would_change(server: ReplayServer) -> None:
    """A text in a TOOL message (the schema takes it; no provider sends it) after an unanswered call: ``call()``
    sends the request without them (its diagnostics say so); ``call(strict=True)`` refuses it, nothing sent,
    as docs/streams.md says."""
    from agentmsg import AssistantMessage, ToolResultMessage, ToolUseBlock, ValidationError

    convo = [
        UserMessage("weather?"),
        AssistantMessage([ToolUseBlock(id="c1", name="get_weather", input={})]),
        ToolResultMessage("Sunny"),
    ]
    with pytest.raises(ValidationError) as info:
        client(server).call(convo, strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [
        ("/2/content/0", "block-dropped"),
        ("/1/content/0", "tool-use-orphan"),
    ]
    assert server.requests == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_payload_that_cannot_be_read_is_among_the_streams_problems(server: ReplayServer, mode: str) -> None:
    """One payload of the body is no JSON: the reply goes on without it (its text lost), said as a CUSTOM event and
    a note of the message; ``stream.problems`` lists it (rule ``json``) where ``stream.error`` (what broke the
    stream) is None. A clean body has none."""
    events = TEXT_SSE.split(b"\n\n")
    events[5] = events[5].replace(b"data: {", b"data: {{", 1)
    for body, rules in ((TEXT_SSE, []), (b"\n\n".join(events), ["json"])):
        server.add("/chat/completions", Reply(body=body, sse=True))
        if mode == "sync":
            with client(server).stream(CONVO) as stream:
                for _ in stream:
                    pass
        else:

            async def run() -> Any:
                ac = AsyncClient("openai", base_url=server.url, api_key="sk-test", model="gpt-4o", timeout=5.0)
                async with ac.stream(CONVO) as astream:
                    async for _ in astream:
                        pass
                await ac.aclose()
                return astream

            stream = asyncio.run(run())
        assert [p.rule for p in stream.problems] == rules and stream.error is None
        assert stream.message is not None
        notes = stream.message.metadata.get("agentmsg_notes", [])
        assert [n["rule"] for n in notes if n["rule"] == "json"] == rules


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_call_on_a_stream_sent_anyway_that_breaks_keeps_what_arrived(server: ReplayServer, mode: str) -> None:
    """``call()`` on a server that streams anyway reads the stream; one that broke off raised APIConnectionError
    with nothing of what had arrived, where ``stream()`` keeps it. It now raises BrokenStreamError, its ``partial``
    the message of what arrived (INTERRUPTED), as a stream's. A JSON body cut short has no message: as before."""
    cut = TEXT_SSE.index(b"\n\n", len(TEXT_SSE) // 2) + 2
    expected_text = reduce_events(list(openai_mod.parse_stream(TEXT_SSE[:cut])))[0].text_content
    assert expected_text and expected_text != expected(TEXT_SSE).text_content

    def call() -> Any:
        if mode == "sync":
            return client(server, max_retries=0).call(CONVO)

        async def run() -> Any:
            ac = AsyncClient("openai", base_url=server.url, api_key="sk-test", model="gpt-4o", max_retries=0)
            try:
                return await ac.call(CONVO)
            finally:
                await ac.aclose()

        return asyncio.run(run())

    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, disconnect_after=cut))
    with pytest.raises(BrokenStreamError) as info:
        call()
    partial = info.value.partial
    assert "the connection broke" in str(info.value)
    assert partial is not None and partial.generate_reason == agentmsg.GenerateReason.INTERRUPTED
    assert partial.text_content == expected_text
    whole = b'{"id": "x", "object": "chat.completion", "choices": []}'
    for sse in (False, True):  # (a JSON reply labelled text/event-stream is read as one: cut, it has no message)
        server.add("/chat/completions", Reply(body=whole, sse=sse, disconnect_after=len(whole) // 2))
        with pytest.raises(APIConnectionError) as broke:
            call()
        assert not isinstance(broke.value, BrokenStreamError)


def test_a_200_that_is_no_stream_says_what_came(server: ReplayServer) -> None:
    """A proxy's HTML page (or an empty body) answered with 200 broke the stream as 'the stream ended before
    the provider finished the reply', nothing more: the error now says what the body was."""
    page = b"<html><body>502 Bad Gateway</body></html>"
    server.add("/chat/completions", Reply(body=page, headers={"content-type": "text/html"}))
    with pytest.raises(BrokenStreamError) as info:
        list(client(server).stream(CONVO))
    message = str(info.value)
    assert "the stream ended before the provider finished the reply" in message
    assert "the body is not an openai stream: content-type text/html" in message and "502 Bad Gateway" in message
    server.add("/chat/completions", Reply(body=b"", sse=True))
    with pytest.raises(BrokenStreamError, match=r"the body is not an openai stream: .*it was empty"):
        list(client(server).stream(CONVO))
    cut = TEXT_SSE[: TEXT_SSE.index(b"\n\n", 400) + 2]  # a real stream cut short: no note about the body
    server.add("/chat/completions", Reply(body=cut, sse=True))
    with pytest.raises(BrokenStreamError) as info:
        list(client(server).stream(CONVO))
    assert "the body is not" not in str(info.value)


# ---- the other providers, over HTTP, from a formatted request ---------------------------------------------

OTHERS = [
    (
        "anthropic",
        anthropic_mod,
        "/v1/messages",
        "anthropic/stream_sdk_tool_use.sse",
        {"x-api-key": "k", "anthropic-version": "2023-06-01"},
    ),
    (
        "gemini",
        gemini_mod,
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
        "gemini/stream_function_call_partial_args.sse",
        {"x-goog-api-key": "k"},
    ),
    (
        "dashscope",
        dashscope_mod,
        "/services/aigc/text-generation/generation",
        "dashscope/native_stream_thinking_docs.sse",
        {"authorization": "Bearer k", "x-dashscope-sse": "enable"},
    ),
]


@pytest.mark.parametrize(("provider", "mod", "path", "fixture", "headers"), OTHERS, ids=[o[0] for o in OTHERS])
def test_other_providers_stream_over_http(
    server: ReplayServer, provider: str, mod: Any, path: str, fixture: str, headers: dict[str, str]
) -> None:
    body = (FIX / fixture).read_bytes()
    server.add(path, Reply(body=body, sse=True, chunk_size=41))
    request = FormattedRequest(
        body={"stream": True, "parameters": {"incremental_output": True}},
        path=path,
        headers={"X-DashScope-SSE": "enable"} if provider == "dashscope" else {},
        stream=True,
        model="gemini-3-pro-preview",
    )
    c = Client(provider, base_url=server.url, api_key="k", backoff=0.01)
    stream = c.send_stream(request)
    list(stream)
    assert stream.message is not None
    assert content(stream.message) == content(expected(body, mod))
    got = {k.lower(): v for k, v in server.requests[-1].headers.items()}
    for k, v in headers.items():
        assert got[k] == v


def test_anthropic_error_event_mid_stream(server: ReplayServer) -> None:
    body = (FIX / "anthropic/stream_sdk_tool_use.sse").read_bytes()
    cut = body.find(b"event: content_block_stop")
    broken = (
        body[:cut]
        + b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    server.add("/v1/messages", Reply(body=broken, sse=True))
    c = Client("anthropic", base_url=server.url, api_key="k")
    with pytest.raises(BrokenStreamError, match="Overloaded") as info:
        list(c.send_stream(FormattedRequest(body={}, path="/v1/messages", stream=True)))
    assert info.value.partial.text_content.startswith("I'll check")


# ---- async ----------------------------------------------------------------------------------------------


def test_async_stream_call_and_retry(server: ReplayServer) -> None:
    server.add(
        "/chat/completions",
        Reply.json({"error": {"message": "busy"}}, status=429, headers={"Retry-After": "0"}),
        Reply(body=TOOLS_SSE, sse=True, chunk_size=64),
    )

    async def main() -> tuple[Any, Any, list[float]]:
        async with AsyncClient("openai", base_url=server.url, api_key="k", backoff=0.01) as c:
            waits = waits_of(c)
            async with c.stream(CONVO) as s:
                events = [e async for e in s]
            return events, s.message, waits

    events, msg, waits = asyncio.run(main())
    assert content(msg) == content(expected(TOOLS_SSE)) == content(reduce_events(events)[0])
    assert waits == [0.0] and len(server.requests) == 2  # Retry-After 0: retried at once


def test_async_cancel_task_marks_interrupted(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True, delay=0.02))

    async def main() -> Any:
        c = AsyncClient("openai", base_url=server.url, api_key="k")
        stream = c.stream(CONVO)
        seen = asyncio.Event()

        async def consume() -> None:
            async for e in stream:
                if e["type"] == "TEXT_BLOCK_DELTA":
                    seen.set()

        task = asyncio.create_task(consume())
        await seen.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await c.aclose()
        return stream.message

    msg = asyncio.run(main())
    assert msg.generate_reason.value == "INTERRUPTED" and msg.text_content


def test_async_disconnect(server: ReplayServer) -> None:
    server.add("/chat/completions", Reply(body=TOOLS_SSE, sse=True, chunk_size=80, disconnect_after=3000))

    async def main() -> Any:
        async with AsyncClient("openai", base_url=server.url, api_key="k") as c:
            with pytest.raises(BrokenStreamError) as info:
                async for _ in c.stream(CONVO):
                    pass
            return info.value.partial

    partial = asyncio.run(main())
    assert partial.generate_reason.value == "INTERRUPTED" and partial.blocks("tool_use")


# ---- what a demanding caller runs into (each was a bug) -------------------------------------------------


@pytest.mark.parametrize("stop_at", ["MODEL_CALL_END", "AGENT_END"])
def test_leaving_on_the_closing_events_keeps_the_whole_reply(server: ReplayServer, stop_at: str) -> None:
    """A caller that stops once it sees the reply end (Gemini and DashScope send no end signal: their
    closing events come after the body) gets the whole message, not None; sync and async."""
    body = (FIX / "gemini/stream_text.sse").read_bytes()
    server.add("/v1beta/models/g:streamGenerateContent", Reply(body=body, sse=True), Reply(body=body, sse=True))
    request = FormattedRequest(body={}, path="/v1beta/models/g:streamGenerateContent", stream=True, model="g")
    c = Client("gemini", base_url=server.url, api_key="k")
    with c.send_stream(request) as stream:
        for event in stream:
            if event["type"] == stop_at:
                break
    assert stream.message is not None and content(stream.message) == content(expected(body, gemini_mod))
    assert stream.message.generate_reason == "MODEL_STOP"

    async def run() -> agentmsg.Msg | None:
        async with AsyncClient("gemini", base_url=server.url, api_key="k") as ac:
            async with ac.send_stream(request) as astream:
                async for event in astream:
                    if event["type"] == stop_at:
                        break
            return astream.message

    msg = asyncio.run(run())
    assert msg is not None and content(msg) == content(expected(body, gemini_mod))


def test_a_gzipped_stream_and_a_mock_transport(server: ReplayServer) -> None:
    """The stream is read content-decoded (a gzipping proxy: it was fed compressed, and lost whole), and a
    body httpx has read already (a mock transport) streams too (it raised httpx.StreamConsumed)."""
    import gzip

    import httpx

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
        return httpx.Response(200, content=gzip.compress(TEXT_SSE), headers=headers)

    c = Client("openai", api_key="k", model="m", http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    with c.stream(CONVO) as stream:
        list(stream)
    assert stream.message is not None and content(stream.message) == content(expected(TEXT_SSE))

    msg = asyncio.run(streamed(httpx.AsyncClient(transport=httpx.MockTransport(handler))))
    assert msg is not None and content(msg) == content(expected(TEXT_SSE))


def test_a_streams_reducer_is_the_default_one_named_after_the_client() -> None:
    """A stream's reducer (made without keywords: ``Reducer._of``) has the settings ``Reducer(name=...)`` gives:
    tolerant, no source, the default dedupe window, open-block and problem bounds, the client's name."""
    from agentmsg import Reducer

    c, ac = Client("openai", api_key="k", name="bot"), AsyncClient("openai", api_key="k")
    for made, name in ((c.stream(CONVO).reducer, "bot"), (ac.stream(CONVO).reducer, None)):
        want = Reducer(name=name)._st
        got = made._st
        for slot in ("strict", "source", "default_name", "max_problems", "max_open"):
            assert getattr(got, slot) == getattr(want, slot), slot
        assert got.window.size == want.window.size and not got.trusted and got.reply is None
    c.close()


def test_headers_replace_whatever_their_case_and_big_integers_are_sent(server: ReplayServer) -> None:
    """headers= replaces a header the client sets, whatever the case of its name (it added a second one); a
    tool schema with an integer beyond 64 bits is sent as the formatter writes it (it raised TypeError)."""
    server.add("/chat/completions", Reply(body=TEXT_SSE, sse=True))
    c = client(server, headers={"Authorization": "Bearer other", "Content-Type": "application/json; x=1"})
    tool = {"name": "f", "parameters": {"type": "object", "properties": {"n": {"maximum": 2**70}}}}
    with c.stream(CONVO, tools=[tool]) as stream:
        list(stream)
    sent = server.requests[-1]
    names = [k.lower() for k in sent.headers]
    assert names.count("authorization") == 1 and names.count("content-type") == 1
    got = {k.lower(): v for k, v in sent.headers.items()}
    assert got["authorization"] == "Bearer other" and got["content-type"] == "application/json; x=1"
    assert str(2**70).encode() in sent.body


def test_a_2xx_body_that_is_not_the_reply_raises_a_provider_error(server: ReplayServer) -> None:
    """call() on a 200 that is an HTML page or empty raises BrokenStreamError (a ProviderError) with the
    status, the request id and the body, not a bare ValidationError; a 200 error body names the provider's
    message and request id; a broken stream carries the response's status and request id."""
    server.add("/chat/completions", Reply(200, b"<html>proxy</html>", headers={"x-request-id": "req-1"}))
    with pytest.raises(BrokenStreamError) as info:
        client(server).call(CONVO)
    assert (info.value.status_code, info.value.request_id, info.value.body) == (200, "req-1", "<html>proxy</html>")
    assert isinstance(info.value.__cause__, agentmsg.ValidationError)
    server.add("/chat/completions", Reply.json({"error": {"message": "quota"}, "request_id": "req-2"}))
    with pytest.raises(BrokenStreamError) as info:
        client(server).call(CONVO)
    assert (info.value.message, info.value.request_id) == ("quota", "req-2")
    server.add("/chat/completions", Reply(body=TEXT_SSE[:300], sse=True, headers={"x-request-id": "req-3"}))
    with pytest.raises(BrokenStreamError) as info:
        list(client(server).stream(CONVO))
    assert (info.value.status_code, info.value.request_id) == (200, "req-3") and info.value.partial is not None


def test_bad_configuration_is_said_before_anything_is_sent(server: ReplayServer) -> None:
    """An API key no HTTP header can carry (a non-breaking space pasted with it, a line break) is an
    AuthenticationError, not a UnicodeEncodeError or a retried connection failure; a base_url that is no
    http(s) URL is refused when the client is made; an async stream closed before it starts sends nothing."""
    for key in ("sk-abc\xa0", "sk-abc\nX: 1"):
        with pytest.raises(AuthenticationError, match="cannot carry"):
            Client("openai", base_url=server.url, api_key=key, model="m").call(CONVO)
    assert server.requests == []
    for url in ("localhost:9", "http://[::1", "ftp://example.com"):
        with pytest.raises(ValueError, match="base_url"):
            Client("openai", base_url=url, api_key="k")

    async def closed_first() -> list[Any]:
        stream = AsyncClient("openai", base_url=server.url, api_key="k", model="m").stream(CONVO)
        await stream.aclose()
        return [e async for e in stream]

    assert asyncio.run(closed_first()) == [] and server.requests == []


def test_a_live_stream_reads_the_byte_stream_inside_httpxs_wrapper() -> None:
    """A live stream reads the transport's byte stream that httpx's ``BoundSyncStream`` / ``BoundAsyncStream``
    wraps (a generator step a chunk fewer), and the response is still closed through the wrapper: its
    ``elapsed`` set, the stream inside closed, the same reply as ``reduce_events`` of the whole body."""
    from agentmsg.clients._stream import araw_chunks, raw_chunks

    pieces = [e + b"\n\n" for e in TEXT_SSE.split(b"\n\n") if e.strip()]
    closed: list[str] = []

    class Body(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from pieces

        def close(self) -> None:
            closed.append("sync")

    class ABody(httpx.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for p in pieces:
                yield p

        async def aclose(self) -> None:
            closed.append("async")

    head = {"content-type": "text/event-stream"}
    http = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200, headers=head, stream=Body())))
    with http.stream("POST", "http://127.0.0.1:1/") as response:
        chunks = raw_chunks(response, False)
        assert getattr(chunks, "gi_code", None) is Body.__iter__.__code__  # (the wrapper's generator skipped)
        assert list(chunks) == pieces
    assert response.elapsed.total_seconds() >= 0 and closed == ["sync"]

    c = Client("openai", api_key="k", model="m", http_client=http)
    with c.stream(CONVO) as stream:
        list(stream)
    assert stream.message is not None and content(stream.message) == content(expected(TEXT_SSE))
    assert closed == ["sync", "sync"]

    async def run() -> agentmsg.Msg | None:
        ahttp = httpx.AsyncClient(
            transport=httpx.MockTransport(lambda r: httpx.Response(200, headers=head, stream=ABody()))
        )
        async with ahttp.stream("POST", "http://127.0.0.1:1/") as response:
            chunks = araw_chunks(response, False)
            assert getattr(chunks, "ag_code", None) is ABody.__aiter__.__code__
            assert [c async for c in chunks] == pieces
        assert response.elapsed.total_seconds() >= 0 and closed[-1] == "async"
        return await streamed(ahttp)

    msg = asyncio.run(run())
    assert msg is not None and content(msg) == content(expected(TEXT_SSE))
    assert closed == ["sync", "sync", "async", "async"]


def test_the_own_http_clients_keep_the_cookies_set_and_look_only_at_responses_that_set_one(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client's own http client keeps the cookies a response sets (``Set-Cookie``, any case) and sends them
    back, sync and async, streamed and called, as httpx's does; httpx's extraction (each response wrapped for
    http.cookiejar) runs only for a response with a ``Set-Cookie`` header: the others set none."""
    extracted: list[int] = []
    original = httpx.Cookies.extract_cookies

    def counted(self: httpx.Cookies, response: httpx.Response) -> None:
        extracted.append(response.status_code)
        original(self, response)

    monkeypatch.setattr(httpx.Cookies, "extract_cookies", counted)
    setting = Reply(body=TEXT_SSE, sse=True, headers={"set-cookie": "session=s-1; Path=/"})
    plain = Reply(body=TEXT_SSE, sse=True)
    c = client(server)
    server.add("/chat/completions", plain, setting, plain)
    for _ in range(3):
        with c.stream(CONVO) as stream:
            list(stream)
        assert stream.message is not None and content(stream.message) == content(expected(TEXT_SSE))
    assert extracted == [200] and dict(c.http.cookies) == {"session": "s-1"}
    assert [r.headers.get("cookie") for r in server.requests] == [None, None, "session=s-1"]
    server.add(
        "/chat/completions", Reply(body=b'{"error": {"message": "no"}}', status=400, headers={"Set-Cookie": "a=2"})
    )
    with pytest.raises(BadRequestError):
        c.call(CONVO)
    assert extracted == [200, 400] and dict(c.http.cookies) == {"session": "s-1", "a": "2"}
    c.close()

    async def run() -> None:
        ac = AsyncClient("openai", base_url=server.url, api_key="k", model="m", max_retries=0)
        server.add("/chat/completions", plain, setting, plain)
        for _ in range(3):
            async with ac.stream(CONVO) as astream:
                async for _ in astream:
                    pass
        assert dict(ac.http.cookies) == {"session": "s-1"}
        await ac.aclose()

    server.requests.clear()
    asyncio.run(run())
    assert extracted == [200, 400, 200]
    assert [r.headers.get("cookie") for r in server.requests] == [None, None, "session=s-1"]
