"""Provider formatters (and, beside them, response and stream parsers).

One module per provider, each with the same public functions: ``openai`` (OpenAI Chat Completions
and the OpenAI-compatible family: ``deepseek``, ``dashscope-compatible``), ``anthropic``, ``gemini``
and ``dashscope`` (native). The registry maps the CLI names to them::

    from agentmsg.providers import get
    request = get("anthropic").format_request(messages, model="claude-sonnet-4-5", tools=tools)
    request.body          # the exact JSON body
    request.diagnostics   # every rewriting or lossy step (agentmsg.Problem), see RULES
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

import attrs

from agentmsg.message import Msg
from agentmsg.providers._request.context import ERROR, LOSSY, REWRITE, RULES, FormatOptions, FormattedRequest
from agentmsg.providers._request.media import MediaPolicy

if TYPE_CHECKING:  # (the provider modules and their stream machinery are imported on first use)
    from agentmsg.providers._response.parser import BaseStreamParser

__all__ = [
    "ERROR",
    "LOSSY",
    "NAMES",
    "REWRITE",
    "RULES",
    "FormatOptions",
    "FormattedRequest",
    "MediaPolicy",
    "Provider",
    "get",
]


@attrs.frozen
class Provider:
    """One registry entry: a provider module, for one variant of it. ``format_request``,
    ``parse_response``, ``response_events``, ``parse_stream`` and ``StreamParser`` (a factory of the
    module's parser) work for that variant (an explicit ``variant=`` wins); other attributes of the
    module are reached as attributes."""

    name: str
    module_name: str
    variant: str | None = None

    @property
    def module(self) -> ModuleType:
        module = _MODULES.get(self.module_name)
        if module is None:
            module = _MODULES[self.module_name] = importlib.import_module(f"{__name__}.{self.module_name}")
        return module

    def _for_variant(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.variant is not None:
            kwargs.setdefault("variant", self.variant)
        return kwargs

    def format_request(self, messages: Sequence[Msg], **kwargs: Any) -> FormattedRequest:
        """The provider's request for a conversation (a list of :class:`~agentmsg.Msg`): the module's
        ``format_request`` (keywords ``model``, ``tools``, ``tool_choice``, ``stream``, ``strict``,
        ``options``, generation parameters: see it with ``help(get(name).module.format_request)``).
        Without ``model`` the request names the provider's default model (``gpt-4o``, ``claude-sonnet-4-5``,
        ...: ``request.model`` says which; docs/formatters.md lists them)."""
        return self.module.format_request(messages, **self._for_variant(kwargs))  # type: ignore[no-any-return]

    def parse_response(self, body: bytes | str | Mapping[str, Any], **kwargs: Any) -> Msg:
        """A non-streaming response body (JSON text or parsed) -> the assistant message; raises
        :class:`~agentmsg.ValidationError` for a body that is not such a response."""
        return self.module.parse_response(body, **self._for_variant(kwargs))  # type: ignore[no-any-return]

    def response_events(self, body: bytes | str | Mapping[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
        """A non-streaming response body -> the agent events of the reply (what :meth:`parse_response`
        reduces)."""
        return self.module.response_events(body, **self._for_variant(kwargs))  # type: ignore[no-any-return]

    def parse_stream(self, chunks: Iterable[bytes | str] | bytes | str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """A streamed body (all of it, or its chunks as they arrive) -> agent events, as they complete;
        never raises for bad input (problems are ``CUSTOM agentmsg.problem`` events)."""
        return self.module.parse_stream(chunks, **self._for_variant(kwargs))  # type: ignore[no-any-return]

    def StreamParser(self, **kwargs: Any) -> BaseStreamParser:
        """The module's incremental stream parser for this variant: ``feed(chunk)`` and ``close()``
        return the events they complete; ``problems`` what it fixed or left out."""
        return self.module.StreamParser(**self._for_variant(kwargs))  # type: ignore[no-any-return]

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        module = self.module
        value = getattr(module, attr, None)
        if value is None:
            raise AttributeError(f"provider {self.name!r} ({module.__name__}) has no {attr!r}")
        return value


_MODULES: dict[str, ModuleType] = {}

_REGISTRY: Final[Mapping[str, Provider]] = {
    p.name: p
    for p in (
        Provider("openai", "openai", "openai"),
        Provider("deepseek", "openai", "deepseek"),
        Provider("dashscope-compatible", "openai", "dashscope-compatible"),
        Provider("anthropic", "anthropic"),
        Provider("gemini", "gemini"),
        Provider("dashscope", "dashscope"),
    )
}

#: the registry's names, as the CLI takes them
NAMES: Final[tuple[str, ...]] = tuple(_REGISTRY)


def get(name: str) -> Provider:
    """The registry entry for a provider name (``openai``, ``deepseek``, ``anthropic``, ``gemini``,
    ``dashscope``, ``dashscope-compatible``). Raises KeyError for an unknown name."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(NAMES)}") from None
