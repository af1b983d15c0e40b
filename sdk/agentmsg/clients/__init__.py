"""Provider clients over httpx, sync and async.

    from agentmsg.clients import Client
    client = Client("anthropic", model="claude-sonnet-4-5")        # key from ANTHROPIC_API_KEY
    with client.stream(messages, tools=tools) as stream:          # a ReplyStream
        for event in stream:                                      # AgentEvents as they arrive
            ...
    stream.message                                                # the reduced Msg (mid-stream: a snapshot, INTERRUPTED)
    msg = client.call(messages)                                   # one non-streaming call

One ``Client`` / ``AsyncClient`` class takes any registry name (``agentmsg.providers.NAMES``); everything about
the provider (base URL, key variables, auth and version headers) comes from the registry's spec.
``OpenAIClient`` etc. are the same with the provider filled in. Errors: :class:`ProviderError` and its
subclasses, each carrying the provider's own message, all :class:`AgentmsgError`.

The package, one concern a module: ``_config`` (the settings and the request to send, from the spec),
``_retry`` (the retry policy), ``_errors`` (the exceptions, and which one a failure is), ``_stream`` (a
streamed reply's state), ``_whole`` (a whole reply's message): none does IO; ``_sync`` and ``_async`` do it.

Deprecated names, which still work and warn: ``EventStream`` / ``AsyncEventStream`` (now :class:`ReplyStream` /
:class:`AsyncReplyStream`: ``agentmsg.web.EventEndpoint`` is the server side).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from agentmsg.clients._async import AsyncClient, AsyncReplyStream
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
from agentmsg.clients._sync import Client, ReplyStream
from agentmsg.providers import Spec

#: Deprecated: the spec of each provider is ``agentmsg.providers.get(name).spec``
ProviderSpec = Spec

if TYPE_CHECKING:  # the deprecated names, as a type checker sees them
    EventStream = ReplyStream
    AsyncEventStream = AsyncReplyStream

_RENAMED = {"EventStream": ReplyStream, "AsyncEventStream": AsyncReplyStream}

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
    "AsyncGeminiClient",
    "AsyncOpenAIClient",
    "AsyncReplyStream",
    "AuthenticationError",
    "BadRequestError",
    "BrokenStreamError",
    "Client",
    "DashScopeClient",
    "DashScopeCompatibleClient",
    "DeepSeekClient",
    "GeminiClient",
    "OpenAIClient",
    "ProviderError",
    "ProviderSpec",
    "RateLimitError",
    "ReplyStream",
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


def __getattr__(attr: str) -> Any:
    if attr in _RENAMED:
        new = _RENAMED[attr]
        warnings.warn(
            f"agentmsg.clients.{attr} is deprecated: it is now agentmsg.clients.{new.__name__}"
            " (agentmsg.web.EventEndpoint is the server's endpoint)",
            DeprecationWarning,
            stacklevel=2,
        )
        return new
    if attr == "SPECS":  # deprecated: the registry's specs (agentmsg.providers.get(name).spec)
        warnings.warn(
            "agentmsg.clients.SPECS is deprecated: use agentmsg.providers.get(name).spec",
            DeprecationWarning,
            stacklevel=2,
        )
        from agentmsg import providers

        return {p.name: p.spec for p in providers.providers()}
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
