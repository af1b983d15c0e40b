"""Provider formatters and parsers, one module per provider, behind one registry.

Providers (registry names): ``openai`` (OpenAI Chat Completions), ``deepseek`` and ``dashscope-compatible``
(variants of it), ``anthropic``, ``gemini``, ``dashscope`` (native) and ``openai-responses`` (the OpenAI Responses
API). Each is a :class:`Provider`::

    from agentmsg.providers import get
    provider = get("anthropic")
    request = provider.format_request(messages, model="claude-sonnet-4-5", tools=tools)
    request.body          # the exact JSON body
    request.diagnostics   # every rewriting or lossy step (agentmsg.Problem), see RULES
    provider.format_request(messages, structured_output=schema)  # a JSON reply: msg.structured_output()
    msg = provider.parse_response(body)          # a non-streaming reply -> the assistant message
    events = provider.parse_stream(sse_body)     # a stream (whole, or chunks as they arrive) -> AgentEvents
    provider.spec         # how to reach it: base_url, env (API-key variables), auth, headers, default_model

``system_prompt(base, tools=..., long_term_memory=...)`` builds the system message a formatter context builds (the
base prompt, the tools available, a long-term memory section). The provider modules (``agentmsg.providers.openai``
...) have the same functions at module level. A provider is
one module in this package and one line in the registry's table, ``_SERVES`` (``docs/adding-a-provider.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from agentmsg._wire.framing import is_sse_body, without_http_heads
from agentmsg.errors import UnknownNameError, ValidationError
from agentmsg.providers._request.context import ERROR, INFO, LOSSY, REWRITE, RULES, FormatOptions, FormattedRequest
from agentmsg.providers._request.media import MediaPolicy
from agentmsg.providers._request.prompt import system_prompt
from agentmsg.providers._request.structured import StructuredOutput
from agentmsg.providers._response.parser import decode_body
from agentmsg.providers.base import Provider, Spec, StreamFlag

if TYPE_CHECKING:
    from agentmsg.providers.base import Entry

__all__ = [
    "ERROR",
    "INFO",
    "LOSSY",
    "MODULES",
    "NAMES",
    "REWRITE",
    "RULES",
    "FormatOptions",
    "FormattedRequest",
    "MediaPolicy",
    "Provider",
    "Spec",
    "StreamFlag",
    "StructuredOutput",
    "decode_body",
    "get",
    "is_sse_body",
    "providers",
    "system_prompt",
    "without_http_heads",
]

#: The provider modules, in the order the registry lists their providers, each with the registry names it serves:
#: its ``PROVIDERS`` holds one entry per name, in this order. The names are known without importing a module, so
#: that the CLI's ``--provider`` choices cost none; ``get(name)`` imports the one module serving the name; listing the
#: registry (``providers()``) imports them all.
_SERVES: Final = {
    "openai": ("openai", "deepseek", "dashscope-compatible"),
    "anthropic": ("anthropic",),
    "gemini": ("gemini",),
    "dashscope": ("dashscope",),
    "openai_responses": ("openai-responses",),
}
MODULES: Final = tuple(_SERVES)
_NAMES: Final = tuple(name for names in _SERVES.values() for name in names)

#: the registry, once loaded whole (every module of the table, then what is registered at run time)
_registry: dict[str, Entry] = {}
#: the entries of the modules get() imported one by one before the registry was loaded whole
_served: dict[str, Entry] = {}


def _entries(module: str, names: tuple[str, ...]) -> tuple[Entry, ...]:
    """The providers of one module of the table (imported now if it was not), refused unless they are its names."""
    entries: tuple[Entry, ...] = tuple(importlib.import_module(f"{__name__}.{module}").PROVIDERS)
    served = tuple(entry.spec.name for entry in entries)
    if served != names:
        raise RuntimeError(f"{__name__}.{module} serves {served}, the registry's table says {names}")
    return entries


def _load() -> Mapping[str, Entry]:
    if not _registry:
        found: dict[str, Entry] = {}
        for module, names in _SERVES.items():
            found.update((entry.spec.name, entry) for entry in _entries(module, names))
        if len(found) != len(_NAMES):
            raise RuntimeError(f"two providers share a name: {_NAMES}")
        _registry.update(found)
    return _registry


def _one(name: str) -> Entry | None:
    """The provider of a name of the table, importing the one module that serves it (not the registry's others:
    ``agentmsg format --provider openai`` pays for no other vendor's module); None for a name not in it."""
    if name not in _served:
        owners = [(module, names) for module, names in _SERVES.items() if name in names]
        if not owners:
            return None
        if len(owners) > 1:
            raise RuntimeError(f"two providers share a name: {name!r} ({', '.join(m for m, _ in owners)})")
        _served.update((entry.spec.name, entry) for entry in _entries(*owners[0]))
    return _served[name]


def providers() -> tuple[Provider, ...]:
    """Every registered provider, in registry order."""
    return tuple(_load().values())


def get(name: str | Provider) -> Provider:
    """The provider of a registry name (``openai``, ``deepseek``, ``anthropic``, ``gemini``, ``dashscope``,
    ``dashscope-compatible``, ``openai-responses``); a Provider is returned as it is (what the functions that take
    either call). Raises :class:`~agentmsg.errors.UnknownNameError` (a KeyError too) for an unknown name, listing
    the known ones, and a ValidationError (pointer
    ``/provider``, rule ``type``) for anything else: neither a name nor a Provider."""
    if not isinstance(name, str):
        if getattr(name, "spec", None) is None or not callable(getattr(name, "format_request", None)):
            raise ValidationError.single(
                "/provider", "type", f"provider is a registry name or a Provider, not {type(name).__name__}"
            )
        return name
    # the registry once it is loaded whole (it may have been given a provider since), else the table's module
    entry = _registry.get(name) if _registry else _one(name)
    if entry is None:
        raise UnknownNameError(f"unknown provider {name!r}; known: {', '.join(_registry or _NAMES)}")
    return entry


def __getattr__(attr: str) -> Any:
    if attr == "NAMES":  # the registry's names, as the CLI takes them: its table's until it is loaded (no module
        return tuple(_registry) if _registry else _NAMES  # imported to list them), then its entries' (the same)
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


if TYPE_CHECKING:
    #: the registry's names, as the CLI takes them
    NAMES: tuple[str, ...]
