"""Provider clients over httpx, sync and async.

    from agentmsg.clients import Client
    client = Client("anthropic", model="claude-sonnet-4-5")        # key from ANTHROPIC_API_KEY
    with client.stream(messages, tools=tools) as stream:
        for event in stream:                                      # AgentEvents as they arrive
            ...
    stream.message                                                # the reduced Msg (mid-stream: a snapshot, INTERRUPTED)
    msg = client.call(messages)                                   # one non-streaming call

One ``Client`` / ``AsyncClient`` class takes any registry name (``openai``, ``deepseek``,
``dashscope-compatible``, ``anthropic``, ``gemini``, ``dashscope``); ``OpenAIClient`` etc. are the same
with the provider filled in. Errors: :class:`ProviderError` and its subclasses, each carrying the
provider's own message.
"""

from __future__ import annotations

from agentmsg.clients._client import AsyncClient, AsyncEventStream, Client, EventStream, ProviderSpec, _specs
from agentmsg.clients._errors import (
    AgentmsgError,
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    ProviderError,
    RateLimitError,
    ServerError,
)

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AgentmsgError",
    "AnthropicClient",
    "AsyncAnthropicClient",
    "AsyncClient",
    "AsyncDashScopeClient",
    "AsyncDashScopeCompatibleClient",
    "AsyncDeepSeekClient",
    "AsyncEventStream",
    "AsyncGeminiClient",
    "AsyncOpenAIClient",
    "AuthenticationError",
    "BadRequestError",
    "BrokenStreamError",
    "Client",
    "DashScopeClient",
    "DashScopeCompatibleClient",
    "DeepSeekClient",
    "EventStream",
    "GeminiClient",
    "OpenAIClient",
    "ProviderError",
    "ProviderSpec",
    "RateLimitError",
    "ServerError",
]


class OpenAIClient(Client):
    """:class:`Client` for ``openai`` (no provider argument needed)."""

    _pinned_provider = "openai"


class DeepSeekClient(Client):
    """:class:`Client` for ``deepseek`` (no provider argument needed)."""

    _pinned_provider = "deepseek"


class DashScopeCompatibleClient(Client):
    """:class:`Client` for ``dashscope-compatible`` (no provider argument needed)."""

    _pinned_provider = "dashscope-compatible"


class AnthropicClient(Client):
    """:class:`Client` for ``anthropic`` (no provider argument needed)."""

    _pinned_provider = "anthropic"


class GeminiClient(Client):
    """:class:`Client` for ``gemini`` (no provider argument needed)."""

    _pinned_provider = "gemini"


class DashScopeClient(Client):
    """:class:`Client` for ``dashscope`` (no provider argument needed)."""

    _pinned_provider = "dashscope"


class AsyncOpenAIClient(AsyncClient):
    """:class:`AsyncClient` for ``openai`` (no provider argument needed)."""

    _pinned_provider = "openai"


class AsyncDeepSeekClient(AsyncClient):
    """:class:`AsyncClient` for ``deepseek`` (no provider argument needed)."""

    _pinned_provider = "deepseek"


class AsyncDashScopeCompatibleClient(AsyncClient):
    """:class:`AsyncClient` for ``dashscope-compatible`` (no provider argument needed)."""

    _pinned_provider = "dashscope-compatible"


class AsyncAnthropicClient(AsyncClient):
    """:class:`AsyncClient` for ``anthropic`` (no provider argument needed)."""

    _pinned_provider = "anthropic"


class AsyncGeminiClient(AsyncClient):
    """:class:`AsyncClient` for ``gemini`` (no provider argument needed)."""

    _pinned_provider = "gemini"


class AsyncDashScopeClient(AsyncClient):
    """:class:`AsyncClient` for ``dashscope`` (no provider argument needed)."""

    _pinned_provider = "dashscope"


def __getattr__(attr: str) -> object:
    if attr == "SPECS":  # deprecated: the registry's specs (agentmsg.providers.get(name).spec)
        import warnings

        warnings.warn(
            "agentmsg.clients.SPECS is deprecated: use agentmsg.providers.get(name).spec",
            DeprecationWarning,
            stacklevel=2,
        )
        return _specs()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
