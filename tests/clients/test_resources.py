"""Resources of the clients: connections of streams left without ``with`` or ``close()``."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agentmsg import UserMessage
from agentmsg.clients import Client
from agentmsg.testing import ReplayServer, Reply

HEAD = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
)
DELTA = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hello "},"finish_reason":null}]}\n\n'
)
SSE = HEAD + DELTA * 20 + b"data: [DONE]\n\n"
LEFT = 60


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        s.add("/chat/completions", *[Reply(body=SSE, sse=True) for _ in range(LEFT + 1)])
        yield s


def test_streams_left_mid_loop_give_their_connections_back(server: ReplayServer) -> None:
    """A loop left with ``break`` and its stream dropped: once collected, its connection is closed by the client's
    next call (it was held by the pool through the request's trace callback, so never collected: one open socket
    per stream left until the client was closed). Collection runs wherever the collector does, inside httpcore's
    pool lock too: nothing is closed there (it waited for that lock for ever)."""
    with Client("openai", base_url=server.url, api_key="sk-test", model="m", max_retries=0, timeout=5.0) as c:
        pool = c.http._transport._pool  # type: ignore[attr-defined]
        for i in range(LEFT):
            stream = c.stream([UserMessage("hi")])
            for event in stream:
                if event["type"] == "TEXT_BLOCK_DELTA":
                    break
            del stream, event
            if i % 20 == 0:
                gc.collect()
        gc.collect()
        msg = c.stream([UserMessage("hi")]).until_done()
        assert msg.content[0].text == "hello " * 20  # type: ignore[union-attr]
        assert len(pool.connections) <= 1
        assert c._held == {} and c._abandoned == []
