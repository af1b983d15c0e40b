"""Context that fits: prompt-cache markers placed where they pay (:func:`place_cache_markers`; docs/context.md)."""

from __future__ import annotations

from agentmsg.context.cache import CacheMarker, CachePlacement, place_cache_markers

__all__ = ["CacheMarker", "CachePlacement", "place_cache_markers"]
