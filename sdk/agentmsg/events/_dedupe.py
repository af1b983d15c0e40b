"""The duplicate-event window: which event ids the reducer still remembers.

Two generations of ids: new ids go into ``current``; when it holds ``size`` ids it becomes ``previous``
and a new ``current`` starts. So the last ``size`` ids are always remembered, never more than ``2 *
size``, and memory is bounded. Every path (``feed``, ``feed_many``, ``reduce_events``, the JSONL fast
path) goes through :meth:`seen` or :meth:`add_fresh`, which rotate at exactly the same events, so a
replay is ignored or not regardless of how the stream was fed. ``size=None`` remembers every id.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Final

from agentmsg.errors import require_count

#: the window the reducer keeps by default, and the UI encoders, which drop what it would ignore
DEFAULT_DEDUPE_WINDOW: Final = 4096


class DedupeWindow:
    __slots__ = ("current", "previous", "size")

    def __init__(self, size: int | None) -> None:
        if size is not None and not (type(size) is int and size >= 1):  # (the common size, an int, at once)
            if not isinstance(size, bool) and hasattr(type(size), "__index__"):
                size = operator.index(size)  # (a NumPy integer, as the window took it before the check: its int)
            require_count(size, "dedupe_window", 1, "dedupe_window must be a whole number of at least 1 (or None)")
        self.size = size
        self.current: set[str] = set()
        self.previous: set[str] = set()

    def seen(self, event_id: str) -> bool:
        """True for an id in the window; otherwise the id is remembered and False returned."""
        if event_id in self.current or event_id in self.previous:
            return True
        current = self.current
        current.add(event_id)
        if self.size is not None and len(current) >= self.size:
            self.previous, self.current = current, set()
        return False

    def add_fresh(self, ids: Sequence[str]) -> bool:
        """For a batch of events: when the ids are distinct and none is in the window, remember them
        (rotating exactly where :meth:`seen` one by one would) and return True; otherwise change
        nothing and return False (the caller then feeds the batch one event at a time)."""
        fresh: set[str | None] = set(ids)
        if (
            len(fresh) != len(ids)
            or None in fresh
            or not fresh.isdisjoint(self.current)
            or not fresh.isdisjoint(self.previous)
        ):
            return False
        size = self.size
        if size is None:
            self.current.update(ids)
            return True
        at = 0
        while at < len(ids):
            room = size - len(self.current)
            self.current.update(ids[at : at + room])
            at += room
            if len(self.current) >= size:
                self.previous, self.current = self.current, set()
        return True
