"""``Client(..., think_tags=...)``: ``<think>`` text in a compatible server's replies read as reasoning, streamed and
whole, sync and async (the parser option of docs/streams.md, passed by the client to every reply it reads)."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from agentmsg import Msg, ThinkingBlock, UserMessage
from agentmsg.clients import AsyncClient, Client
from agentmsg.testing import ReplayServer, Reply
from tests._support.providers import FIX, chunk, sse

WHOLE = (FIX / "openai" / "compat_think_qwen3.json").read_bytes()
TEXT = orjson.loads(WHOLE)["choices"][0]["message"]["content"]
STREAM = sse(*(chunk({"content": TEXT[i : i + 3]}) for i in range(0, len(TEXT), 3)), chunk({}, "stop"))


def kinds(msg: Msg) -> list[str]:
    return [b.type for b in msg.content]


def test_the_client_reads_the_tags_of_streams_and_whole_replies() -> None:
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=STREAM, sse=True), Reply(body=WHOLE))
        client = Client("openai", api_key="k", base_url=server.url, think_tags=True)
        with client.stream([UserMessage("你好，你是谁？")]) as stream:
            events = list(stream)
        whole = client.call([UserMessage("你好，你是谁？")])
        client.close()
    assert stream.message is not None
    assert kinds(stream.message) == kinds(whole) == ["thinking", "text"]
    texts = [
        [getattr(b, "thinking", None) or getattr(b, "text", None) for b in m.content] for m in (stream.message, whole)
    ]
    assert texts[0] == texts[1]  # (the stream's chunks name another model: the provenance differs, not the text)
    assert isinstance(whole.content[0], ThinkingBlock) and whole.content[0].thinking.startswith("好的")
    assert any(e["type"] == "THINKING_BLOCK_DELTA" for e in events)


def test_the_async_client_too_and_the_default_reads_text() -> None:
    async def run(url: str) -> tuple[Msg, Msg]:
        on = AsyncClient("openai", api_key="k", base_url=url, think_tags="open")
        off = AsyncClient("openai", api_key="k", base_url=url)
        try:
            return await on.call([UserMessage("hi")]), await off.call([UserMessage("hi")])
        finally:
            await on.aclose()
            await off.aclose()

    qwq = (FIX / "openai" / "compat_think_open_qwq.json").read_bytes()
    with ReplayServer() as server:
        server.add("/chat/completions", Reply(body=qwq), Reply(body=qwq))
        on, off = asyncio.run(run(server.url))
    assert kinds(on) == ["thinking", "text"] and kinds(off) == ["text"]


def test_an_unknown_mode_is_refused_when_the_client_is_made() -> None:
    with pytest.raises(ValueError, match="think_tags"):
        Client("openai", api_key="k", think_tags="yes")
    assert Client("openai", api_key="k").think_tags is False
