"""Context that fits: counting a conversation's tokens for a provider, and marking what the provider should cache.

    from agentmsg.context import count_tokens
    n = count_tokens(messages, provider="anthropic", model="claude-sonnet-4-5", tools=tools)
    n.total, n.messages, n.tools, n.overhead  # per message, in order; they sum to the total
    n.method, n.error  # "tokenizer:o200k_base" (exact) or "estimate" with its stated relative error

    from agentmsg.context import trim
    cut = trim(messages, 8_000, provider="anthropic")  # whole units removed oldest first, each one reported
    cut.messages, cut.removed, cut.tokens, cut.diagnostics

The providers' own counting endpoints (Anthropic, Gemini, DashScope) are reached through the clients:
``Client(provider).count_tokens(messages, tools=...)`` gives a :class:`ProviderCount`.
:func:`place_cache_markers` puts prompt-cache markers where they pay.

docs/context.md says how each provider is counted, how close the estimates are, how trimming cuts and how
markers are sent.
"""

from __future__ import annotations

from agentmsg.context.cache import CacheMarker, CachePlacement, place_cache_markers
from agentmsg.context.count import ProviderCount, TokenCount, count_tokens
from agentmsg.context.trim import TRIM_RULES, TrimBudgetError, Trimmed, atrim, trim

__all__ = [
    "TRIM_RULES",
    "CacheMarker",
    "CachePlacement",
    "ProviderCount",
    "TokenCount",
    "TrimBudgetError",
    "Trimmed",
    "atrim",
    "count_tokens",
    "place_cache_markers",
    "trim",
]
