"""openai-responses through the registry's clients and CLI, against a loopback server replaying the recorded streams:
``Client``, ``AsyncClient``, ``agentmsg chat / parse / format`` take it by its registry name (no vendor code in
clients/ or cli/), a stream cut mid-way ends interrupted with what came, and a 429 with Retry-After is retried."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentmsg import Msg, UserMessage, reduce_events
from agentmsg.clients import AsyncClient, Client
from agentmsg.providers import get
from agentmsg.testing import ReplayServer, Reply
from tests._support.providers import FIXTURES, reduce_checked, run_cli

DIR = FIXTURES / "openai-responses"
TEXT = (DIR / "stream_text_after_tool_output.sse").read_bytes()
CALL = (DIR / "stream_reasoning_commentary_function_call.sse").read_bytes()
P = get("openai-responses")


def _expected(body: bytes) -> dict[str, Any]:
    return reduce_checked(list(P.parse_stream(body))).to_dict()


def _same(msg: Msg | None, body: bytes) -> None:
    assert msg is not None
    got, want = msg.to_dict(), _expected(body)
    for d in (got, want):
        d.pop("timestamp", None)
        (d.get("usage") or {}).pop("time", None)
        (d["metadata"].get("_chat_usage") or {}).pop("time", None)
    assert got == want


def test_the_client_streams_and_sends_the_formatted_request() -> None:
    with ReplayServer() as server:
        server.add("/responses", Reply(body=CALL, sse=True))
        with Client("openai-responses", api_key="k", base_url=server.url, model="gpt-5.5") as client:
            stream = client.stream([UserMessage("What is the capital of PotatoLand?")])
            events = list(stream)
        (request,) = server.requests
    assert stream.done and events
    _same(stream.message, CALL)
    body = request.json()
    assert request.path == "/responses" and request.headers["authorization"] == "Bearer k"
    assert body["model"] == "gpt-5.5" and body["stream"] is True and body["store"] is False
    assert body["input"] == [{"role": "user", "content": "What is the capital of PotatoLand?"}]


def test_the_async_client_reads_the_same_reply_whole_and_streamed() -> None:
    whole = (DIR / "response_reasoning_summary_encrypted.json").read_bytes()

    async def run() -> tuple[Msg | None, Msg]:
        with ReplayServer() as server:
            server.add("/responses", Reply(body=TEXT, sse=True), Reply(body=whole))
            async with AsyncClient("openai-responses", api_key="k", base_url=server.url) as client:
                stream = client.stream([UserMessage("Hi")])
                async for _ in stream:
                    pass
                msg = await client.call([UserMessage("Hi")])
            return stream.message, msg

    streamed, msg = asyncio.run(run())
    _same(streamed, TEXT)
    assert msg.to_dict()["content"] == P.parse_response(whole).to_dict()["content"]


def test_a_cut_stream_ends_interrupted_with_what_came() -> None:
    cut = CALL.index(b"response.function_call_arguments.delta")
    with ReplayServer() as server:
        server.add("/responses", Reply(body=CALL, sse=True, disconnect_after=cut))
        with Client("openai-responses", api_key="k", base_url=server.url) as client:
            stream = client.stream([UserMessage("q")], raise_on_error=False)
            list(stream)
    msg = stream.message
    assert msg is not None
    meta = msg.to_dict()["metadata"]
    assert meta["agentscope_generate_reason"] == "INTERRUPTED"
    # the reasoning item came whole before the cut: kept with its id and encrypted content, and the text
    (thinking,) = [b for b in msg.blocks("thinking") if "providerBlock" not in (b.metadata or {})]  # (not the phase's)
    assert thinking.metadata is not None
    assert thinking.metadata["itemId"].startswith("rs_") and thinking.metadata["signature"].startswith("gAAAA")
    assert msg.blocks("text")


def test_a_429_with_retry_after_is_retried() -> None:
    limited = Reply.json(
        {"error": {"message": "Rate limit reached", "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
        status=429,
        headers={"Retry-After": "0"},
    )
    with ReplayServer() as server:
        server.add("/responses", limited, Reply(body=TEXT, sse=True))
        with Client("openai-responses", api_key="k", base_url=server.url, backoff=0) as client:
            stream = client.stream([UserMessage("q")])
            list(stream)
        assert len(server.requests) == 2
    _same(stream.message, TEXT)


def test_the_cli_formats_parses_and_chats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    convo = tmp_path / "convo.json"
    convo.write_text(json.dumps([UserMessage("Hi").to_dict()]))
    code, out = run_cli("format", "--provider", "openai-responses", "--model", "gpt-5", str(convo))
    assert code == 0, out
    assert json.loads(out) == P.format_request([UserMessage("Hi")], model="gpt-5").body
    stream = tmp_path / "body.sse"
    stream.write_bytes(TEXT)
    code, out = run_cli("parse", "--provider", "openai-responses", "--stream", str(stream))
    assert code == 0 and "Potato City" in out
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ReplayServer() as server:
        server.add("/responses", Reply(body=TEXT, sse=True))
        code, out = run_cli("chat", "--provider", "openai-responses", "--base-url", server.url, "Hi")
        assert code == 0 and "Potato City" in out
        assert server.requests[0].headers["authorization"] == "Bearer test-key"


def test_the_parsed_events_reduce_alike_through_the_registry() -> None:
    (msg,) = reduce_events(list(get("openai-responses").parse_stream(TEXT)))
    assert msg.text_content == "The capital of PotatoLand is **Potato City**."
