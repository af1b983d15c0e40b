"""Client.count_tokens and AsyncClient.count_tokens against the providers' counting endpoints, on loopback: the
path and body each spec's ``counting`` gives, the count read from recorded (and documented-shape) replies, an
error reply raised as the provider's error, and a provider without an endpoint refused before anything is sent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import agentmsg
from agentmsg import Msg, TextBlock, UserMessage
from agentmsg.clients import (
    AsyncClient,
    BadRequestError,
    BrokenStreamError,
    Client,
    ProviderError,
    ReplyTooLargeError,
)
from agentmsg.context import ProviderCount
from agentmsg.providers import NAMES, get
from agentmsg.testing import ReplayServer, Reply

REPLIES = Path(__file__).resolve().parents[1] / "fixtures" / "context" / "replies"
CONVO = [
    Msg(role="SYSTEM", content=[TextBlock(text="You are terse.")]),
    Msg(role="USER", content=[TextBlock(text="你好？")]),
]
TOOLS = [{"name": "get_time", "description": "The time now", "parameters": {"type": "object", "properties": {}}}]

#: provider -> (model, the path the request goes to, the reply, its count)
CASES = {
    "anthropic": ("claude-sonnet-4-5", "/v1/messages/count_tokens", "anthropic_count_tokens.json", 1114),
    "gemini": (
        "gemini-2.5-flash",
        "/v1beta/models/gemini-2.5-flash:countTokens",
        "gemini_count_tokens_vertex.json",
        13,
    ),
    "dashscope": ("qwen-plus", "/tokenizer", "dashscope_tokenizer.json", 2),
}


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        yield s


def _client(server: ReplayServer, provider: str, **kw: Any) -> Client:
    return Client(provider, base_url=server.url, api_key="k-test", model=CASES[provider][0], max_retries=0, **kw)


def test_the_providers_with_an_endpoint_are_the_ones_the_reference_names() -> None:
    assert {n for n in NAMES if get(n).spec.counting is not None} == set(CASES)


@pytest.mark.parametrize("provider", sorted(CASES))
def test_count_tokens_sends_the_formatted_body_reshaped_and_reads_the_count(
    server: ReplayServer, provider: str
) -> None:
    model, path, reply, expected = CASES[provider]
    server.add(path, Reply(body=(REPLIES / reply).read_bytes()))
    with _client(server, provider) as client:
        count = client.count_tokens(CONVO, tools=TOOLS, temperature=0.5)
    assert isinstance(count, ProviderCount)
    assert (count.total, count.provider, count.model) == (expected, provider, model)
    (sent,) = server.requests
    assert sent.path == path
    body = sent.json()
    formatted = get(provider).format_request(CONVO, model=model, tools=TOOLS, temperature=0.5).body
    if provider == "anthropic":
        # the fields count_tokens takes, no more: the messages, the system prompt, the tools (no max_tokens)
        assert body == {k: formatted[k] for k in ("messages", "model", "system", "tools")}
        assert sent.headers["x-api-key"] == "k-test" and sent.headers["anthropic-version"]
    elif provider == "gemini":
        # the whole generateContent body under generateContentRequest: the system instruction and tools count too
        assert body == {"generateContentRequest": {"model": f"models/{model}", **formatted}}
    else:
        assert body == {k: formatted[k] for k in ("model", "input", "parameters")}


def test_the_async_client_counts_the_same(server: ReplayServer) -> None:
    model, path, reply, expected = CASES["gemini"]
    server.add(path, Reply(body=(REPLIES / reply).read_bytes()))

    async def run() -> ProviderCount:
        async with AsyncClient("gemini", base_url=server.url, api_key="k", model=model, max_retries=0) as client:
            return await client.count_tokens(CONVO, model=model)

    count = asyncio.run(run())
    assert count.total == expected and count.reply["totalBillableCharacters"] == 47


@pytest.mark.parametrize(
    ("provider", "reply", "status"),
    [
        ("anthropic", "anthropic_count_tokens_error_404.json", 404),
        ("gemini", "gemini_count_tokens_error_400.json", 400),
    ],
)
def test_an_error_reply_is_the_providers_error(server: ReplayServer, provider: str, reply: str, status: int) -> None:
    server.add(CASES[provider][1], Reply(status=status, body=(REPLIES / reply).read_bytes()))
    with _client(server, provider) as client, pytest.raises(ProviderError) as caught:
        client.count_tokens(CONVO)
    assert caught.value.status_code == status
    assert ("claude-does-not-exist" if provider == "anthropic" else "contents is not specified") in str(caught.value)


def test_a_reply_without_a_count_is_said(server: ReplayServer) -> None:
    server.add("/v1/messages/count_tokens", Reply.json({"tokens": 3}))
    with _client(server, "anthropic") as client, pytest.raises(BrokenStreamError, match="no count at input_tokens"):
        client.count_tokens(CONVO)


def test_a_count_reply_longer_than_max_bytes_is_refused(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """count_tokens read its reply as call() does, but never checked the limit: a reply past limits.max_bytes that
    came in one read was parsed whole and its count returned (one read past it, cut: "no count at ...", as if
    the provider had sent none). Now ReplyTooLargeError, as call() raises; sync and async."""
    reply = {"input_tokens": 7, "padding": "x" * 4000}
    monkeypatch.setattr(agentmsg.limits, "max_bytes", 1000)
    server.add("/v1/messages/count_tokens", Reply.json(reply))
    with _client(server, "anthropic") as client, pytest.raises(ReplyTooLargeError, match=r"\(1000 bytes\)"):
        client.count_tokens(CONVO)

    async def run() -> ProviderCount:
        async with AsyncClient("anthropic", base_url=server.url, api_key="k", model="m", max_retries=0) as client:
            return await client.count_tokens(CONVO)

    server.add("/v1/messages/count_tokens", Reply.json(reply))
    with pytest.raises(ReplyTooLargeError):
        asyncio.run(run())
    monkeypatch.setattr(agentmsg.limits, "max_bytes", 1 << 20)
    server.add("/v1/messages/count_tokens", Reply.json(reply))
    assert asyncio.run(run()).total == 7


@pytest.mark.parametrize("provider", ["openai", "deepseek", "dashscope-compatible"])
def test_a_provider_without_an_endpoint_is_refused_before_sending(server: ReplayServer, provider: str) -> None:
    with Client(provider, base_url=server.url, api_key="k") as client, pytest.raises(BadRequestError, match="offline"):
        client.count_tokens(CONVO)
    assert server.requests == []


def test_the_async_client_raises_the_error_reply_and_refuses_without_an_endpoint(server: ReplayServer) -> None:
    server.add(
        CASES["anthropic"][1], Reply(status=404, body=(REPLIES / "anthropic_count_tokens_error_404.json").read_bytes())
    )

    async def run(provider: str) -> None:
        async with AsyncClient(provider, base_url=server.url, api_key="k", max_retries=0) as client:
            await client.count_tokens(CONVO)

    with pytest.raises(ProviderError, match="claude-does-not-exist") as caught:
        asyncio.run(run("anthropic"))
    assert caught.value.status_code == 404
    with pytest.raises(BadRequestError, match="offline"):
        asyncio.run(run("openai"))
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("model", "path", "named"),
    [
        ("tunedModels/my-model-7", "/v1beta/tunedModels/my-model-7:countTokens", "tunedModels/my-model-7"),
        ("models/gemini-2.5-flash", "/v1beta/models/gemini-2.5-flash:countTokens", "models/gemini-2.5-flash"),
        ("tunedModels/../../admin", "/v1beta/tunedModels/..%2F..%2Fadmin:countTokens", "tunedModels/../../admin"),
        ("../tunedModels/x", "/v1beta/models/..%2FtunedModels%2Fx:countTokens", "models/../tunedModels/x"),
    ],
)
def test_gemini_counts_a_tuned_model_at_its_own_resource(
    server: ReplayServer, model: str, path: str, named: str
) -> None:
    """A tuned model (tunedModels/NAME) was counted at /v1beta/models/tunedModels%2FNAME:countTokens, a model
    that does not exist, and named models/tunedModels/NAME in the body. It is counted where it is generated from
    (tunedModels/NAME:countTokens, as google-genai sends it), NAME still one quoted path segment."""
    server.add(path, Reply(body=(REPLIES / CASES["gemini"][2]).read_bytes()))
    with _client(server, "gemini") as client:
        assert client.count_tokens(CONVO, model=model).total == CASES["gemini"][3]
    (sent,) = server.requests
    assert sent.path == path
    assert sent.json()["generateContentRequest"]["model"] == named


def test_a_count_endpoint_with_the_old_model_prefix_still_names_the_model_and_says_it_is_deprecated() -> None:
    from agentmsg.clients._count import counting_request
    from agentmsg.providers.spec import CountEndpoint

    with pytest.warns(DeprecationWarning, match="collections"):
        endpoint = CountEndpoint(path="/v1/{model}:count", reply=("n",), wrap="req", model_prefix="models/")
    spec = attrs.evolve(get("gemini").spec, counting=endpoint)
    request = get("gemini").format_request([UserMessage("hi")], model="gemini-x")
    counted = counting_request(spec, request)
    assert counted.body["req"]["model"] == "models/gemini-x" and counted.path == "/v1/{model}:count"
