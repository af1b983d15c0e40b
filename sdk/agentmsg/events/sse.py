"""Agent events over server-sent events: one SSE event per agent event (``id`` = the event id,
``event`` = its type, ``data`` = its JSON), and the server side of a reconnect."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from .._sse import encode_event

__all__ = ["encode_sse", "encode_sse_event", "events_after"]


def encode_sse_event(event: Mapping[str, Any]) -> str:
    """One agent event as an SSE event block (ends with a blank line)."""
    event_id, event_type = event.get("id"), event.get("type")
    return encode_event(
        orjson.dumps(event).decode(),
        id=event_id if isinstance(event_id, str) else None,
        event=event_type if isinstance(event_type, str) else None,
    )


def encode_sse(events: Iterable[Mapping[str, Any]]) -> str:
    """Agent events as a text/event-stream body."""
    return "".join(encode_sse_event(e) for e in events)


def events_after(events: Iterable[Mapping[str, Any]], last_event_id: str | None) -> Iterator[Mapping[str, Any]]:
    """Server side of a reconnect: the events that come after the one whose id is ``last_event_id``
    (all of them when it is None or unknown to this stream)."""
    buffered = list(events)
    if last_event_id:
        for index, event in enumerate(buffered):
            if event.get("id") == last_event_id:
                return iter(buffered[index + 1 :])
    return iter(buffered)
