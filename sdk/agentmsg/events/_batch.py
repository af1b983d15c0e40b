"""Events made whole before any is handed out: an iterator over a list that :func:`~agentmsg.reduce_events`
can read at once.

A provider's whole-body fast path (``agentmsg._speedups``, see ``providers/_stream.py``: :func:`parse_body`)
reads a stream body to the end before it hands out an event, so that it can give up to the Python parser
without having handed out anything. What it returns is an :class:`EventList`: an iterator, as the Python
parser's generator is, over the list of its events, which the reducer may take whole while nothing of it was
read yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["EventList"]


class EventList(Iterator[dict[str, Any]]):
    """An iterator over ``events`` (a list, never changed); :meth:`untouched` is the list while no event was
    read from the iterator, else None."""

    __slots__ = ("_events", "_it", "_read")

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self._events = events
        self._it = iter(events)
        self._read = False

    def __iter__(self) -> EventList:
        return self

    def __next__(self) -> dict[str, Any]:
        self._read = True
        return next(self._it)

    def untouched(self) -> list[dict[str, Any]] | None:
        """The whole list, when no event was read from this iterator (then it counts as read), else None."""
        if self._read:
            return None
        self._read = True
        self._it = iter(())
        return self._events
