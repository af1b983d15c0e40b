"""Provider clients over httpx, sync and async.

    from agentmsg.clients import Client
    client = Client("anthropic", model="claude-sonnet-4-5")        # key from the provider's variable
    with client.stream(messages, tools=tools) as stream:          # a ReplyStream
        for event in stream:                                      # AgentEvents as they arrive
            ...
    stream.message                                                # the reduced Msg (mid-stream: a snapshot, INTERRUPTED)
    msg = client.call(messages)                                   # one non-streaming call

One ``Client`` / ``AsyncClient`` class takes any registry name (``agentmsg.providers.NAMES``); everything about
the provider (base URL, key variables, auth and version headers) comes from the registry's spec. Errors:
:class:`ProviderError` and its subclasses, each carrying the provider's own message, all
:class:`AgentmsgError`.

The package, one concern a module: ``_config`` (the settings and the request to send, from the spec),
``_retry`` (the retry policy), ``_errors`` (the exceptions, and which one a failure is), ``_stream`` (a
streamed reply's state), ``_whole`` (a whole reply's message): none does IO; ``_sync`` and ``_async`` do it.

Deprecated names, which still work and warn: ``EventStream`` / ``AsyncEventStream`` (now :class:`ReplyStream` /
:class:`AsyncReplyStream`: ``agentmsg.web.EventEndpoint`` is the server side), ``ProviderSpec`` and ``SPECS``
(``agentmsg.providers.get(name).spec``), and the classes pinned to one provider, ``OpenAIClient``,
``AsyncAnthropicClient``, ... (``Client("openai")``, ``AsyncClient("anthropic")``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, cast

from agentmsg.clients._async import AsyncClient, AsyncReplyStream
from agentmsg.clients._config import BaseClient
from agentmsg.clients._errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BrokenStreamError,
    ClientClosedError,
    ProviderError,
    RateLimitError,
    ReplyTooLargeError,
    ServerError,
)
from agentmsg.clients._sync import Client, ReplyStream
from agentmsg.errors import AgentmsgError

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AgentmsgError",
    "AsyncClient",
    "AsyncReplyStream",
    "AuthenticationError",
    "BadRequestError",
    "BrokenStreamError",
    "Client",
    "ClientClosedError",
    "ProviderError",
    "RateLimitError",
    "ReplyStream",
    "ReplyTooLargeError",
    "ServerError",
]

if TYPE_CHECKING:  # the deprecated names, as a type checker sees them
    from typing_extensions import deprecated

    from agentmsg.providers import Spec

    EventStream = ReplyStream
    AsyncEventStream = AsyncReplyStream
    ProviderSpec = Spec
    SPECS: dict[str, Spec]

    @deprecated('use Client("openai")')
    class OpenAIClient(Client): ...

    @deprecated('use Client("deepseek")')
    class DeepSeekClient(Client): ...

    @deprecated('use Client("dashscope-compatible")')
    class DashScopeCompatibleClient(Client): ...

    @deprecated('use Client("anthropic")')
    class AnthropicClient(Client): ...

    @deprecated('use Client("gemini")')
    class GeminiClient(Client): ...

    @deprecated('use Client("dashscope")')
    class DashScopeClient(Client): ...

    @deprecated('use AsyncClient("openai")')
    class AsyncOpenAIClient(AsyncClient): ...

    @deprecated('use AsyncClient("deepseek")')
    class AsyncDeepSeekClient(AsyncClient): ...

    @deprecated('use AsyncClient("dashscope-compatible")')
    class AsyncDashScopeCompatibleClient(AsyncClient): ...

    @deprecated('use AsyncClient("anthropic")')
    class AsyncAnthropicClient(AsyncClient): ...

    @deprecated('use AsyncClient("gemini")')
    class AsyncGeminiClient(AsyncClient): ...

    @deprecated('use AsyncClient("dashscope")')
    class AsyncDashScopeClient(AsyncClient): ...


_RENAMED = {"EventStream": ReplyStream, "AsyncEventStream": AsyncReplyStream}


class _PinnedClient(type):
    """The type of a deprecated class pinned to one provider (``OpenAIClient``): ``isinstance`` holds for its own
    instances and for any client of its kind and provider (``Client("openai")``), which the deprecation asks for."""

    def __instancecheck__(cls, obj: object) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        pinned = cls.__dict__.get("_pinned_provider")
        if "_generated" not in cls.__dict__ or pinned is None:  # (a caller's subclass of one)
            return False
        return isinstance(obj, cls.__mro__[1]) and getattr(obj, "provider", None) == pinned


_pinned: dict[str, type[BaseClient]] = {}


def _pinned_class(attr: str) -> type[BaseClient] | None:
    """The deprecated class pinned to one provider named ``attr`` (the spec's ``client_class``, or ``Async`` and
    it), made once from the registry."""
    if attr in _pinned:
        return _pinned[attr]
    from agentmsg import providers

    for entry in providers.providers():
        name = entry.spec.client_class
        for shell in (Client, AsyncClient):
            if name and attr == ("Async" if shell is AsyncClient else "") + name:
                namespace = {
                    "__module__": __name__,
                    "__qualname__": attr,
                    "__doc__": f":class:`{shell.__name__}` for ``{entry.name}`` (deprecated: use"
                    f' ``{shell.__name__}("{entry.name}")``).',
                    "_pinned_provider": entry.name,
                    "_generated": True,
                }
                cls = cast("type[BaseClient]", _PinnedClient(attr, (shell,), namespace))
                _pinned[attr] = cls
                return cls
    return None


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
    if attr in ("SPECS", "ProviderSpec"):
        from agentmsg import providers

        warnings.warn(
            f"agentmsg.clients.{attr} is deprecated: use agentmsg.providers.get(name).spec"
            + (" (a Spec)" if attr == "ProviderSpec" else ""),
            DeprecationWarning,
            stacklevel=2,
        )
        return {p.name: p.spec for p in providers.providers()} if attr == "SPECS" else providers.Spec
    pinned = _pinned_class(attr)
    if pinned is not None:
        shell = pinned.__mro__[1].__name__
        warnings.warn(
            f'agentmsg.clients.{attr} is deprecated: use {shell}("{pinned._pinned_provider}")',
            DeprecationWarning,
            stacklevel=2,
        )
        return pinned
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
