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

from functools import partialmethod
from typing import Any

from ._client import SPECS, AsyncClient, AsyncEventStream, Client, EventStream, ProviderSpec
from ._errors import (
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
    "SPECS",
    "APIConnectionError",
    "APITimeoutError",
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


def _bind(base: type[Any], provider: str, name: str) -> Any:
    cls = type(
        name,
        (base,),
        {"__init__": partialmethod(base.__init__, provider), "__doc__": f"{base.__name__} for {provider}."},
    )
    cls.__module__ = __name__
    return cls


OpenAIClient: Any = _bind(Client, "openai", "OpenAIClient")
DeepSeekClient: Any = _bind(Client, "deepseek", "DeepSeekClient")
DashScopeCompatibleClient: Any = _bind(Client, "dashscope-compatible", "DashScopeCompatibleClient")
AnthropicClient: Any = _bind(Client, "anthropic", "AnthropicClient")
GeminiClient: Any = _bind(Client, "gemini", "GeminiClient")
DashScopeClient: Any = _bind(Client, "dashscope", "DashScopeClient")
AsyncOpenAIClient: Any = _bind(AsyncClient, "openai", "AsyncOpenAIClient")
AsyncDeepSeekClient: Any = _bind(AsyncClient, "deepseek", "AsyncDeepSeekClient")
AsyncDashScopeCompatibleClient: Any = _bind(AsyncClient, "dashscope-compatible", "AsyncDashScopeCompatibleClient")
AsyncAnthropicClient: Any = _bind(AsyncClient, "anthropic", "AsyncAnthropicClient")
AsyncGeminiClient: Any = _bind(AsyncClient, "gemini", "AsyncGeminiClient")
AsyncDashScopeClient: Any = _bind(AsyncClient, "dashscope", "AsyncDashScopeClient")
