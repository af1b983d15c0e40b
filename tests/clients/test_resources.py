"""Resources of the clients: connections of streams left without ``with`` or ``close()``."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterable, Iterator
from typing import Any

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


class _BothLook(list[Any]):
    """The abandoned streams' list of a client, whose first look from each of two threads waits until the other
    has looked too: both see it as it was before either takes from it (an interleaving a shared client may meet)."""

    def __init__(self, items: Iterable[Any]) -> None:
        super().__init__(items)
        self.barrier = threading.Barrier(2)
        self.looked: set[int] = set()

    def __len__(self) -> int:
        size = super().__len__()
        me = threading.get_ident()
        if len(self.looked) < 2 and me not in self.looked:
            self.looked.add(me)
            with contextlib.suppress(threading.BrokenBarrierError):
                self.barrier.wait(30)
        return size


def test_a_client_shared_by_two_threads_closes_a_left_stream_once(server: ReplayServer) -> None:
    """Two threads sharing a client, each starting a call as the other does, both find the stream left behind
    (collected since) that the next call closes: one took it, the other's take failed on a bare IndexError (a
    check, then a pop) and its call with it. Now each call takes what is left, if anything, and gets its reply;
    the left stream's response is closed once."""
    with Client("openai", base_url=server.url, api_key="sk-test", model="m", max_retries=0, timeout=5.0) as c:
        stream = c.stream([UserMessage("hi")])
        for event in stream:
            if event["type"] == "TEXT_BLOCK_DELTA":
                break
        del stream, event
        gc.collect()
        assert len(c._abandoned) == 1
        left = c._abandoned[0][0]
        c._abandoned = _BothLook(c._abandoned)
        got: list[object] = []

        def run() -> None:
            try:
                got.append(c.stream([UserMessage("hi")]).until_done().content[0].text)  # type: ignore[union-attr]
            except Exception as exc:
                got.append(exc)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert got == ["hello " * 20] * 2
        assert list.__len__(c._abandoned) == 0 and left.is_closed
