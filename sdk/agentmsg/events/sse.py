"""Agent events over server-sent events: one SSE event per agent event (``id`` = the event id,
``event`` = its type, ``data`` = its JSON), and the server side of a reconnect."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from agentmsg._codec.jsontext import dumps
from agentmsg._wire.sse import encode_event
from agentmsg.errors import Problem, ValidationError

__all__ = ["encode_sse", "encode_sse_event", "events_after"]


def encode_sse_event(event: Mapping[str, Any]) -> str:
    """One agent event as an SSE event block (ends with a blank line). The event id and type also go
    into the ``id:`` and ``event:`` fields when they are printable strings (a line break there would
    end the field: such a value is in the data only). Raises :class:`ValidationError` for an event that
    is not an object or cannot be written as JSON."""
    if not isinstance(event, Mapping):
        raise ValidationError([Problem("", "type", f"an event is a JSON object, got {type(event).__name__}")], "event")
    event_id, event_type = event.get("id"), event.get("type")
    return encode_event(
        dumps(event if isinstance(event, dict) else dict(event)).decode(),
        id=event_id if isinstance(event_id, str) and event_id.isprintable() else None,
        event=event_type if isinstance(event_type, str) and event_type.isprintable() else None,
    )


def encode_sse(events: Iterable[Mapping[str, Any]]) -> str:
    """Agent events as a text/event-stream body. ``events`` given as one event or a message (not an iterable of
    events) raises :class:`ValidationError` (rule ``type``)."""
    if isinstance(events, (str, bytes, Mapping)) or not isinstance(events, Iterable):
        hint = (
            ": one event: encode_sse_event(event), or a list of them"
            if isinstance(events, Mapping)
            else ": a message's events are emit_events(msg)"
            if hasattr(events, "role") and hasattr(events, "content")
            else ""
        )
        raise ValidationError.single(
            "", "type", f"expected an iterable of events, got {type(events).__name__}{hint}", "event"
        )
    return "".join(encode_sse_event(e) for e in events)


def events_after(events: Iterable[Mapping[str, Any]], last_event_id: str | None) -> Iterator[Mapping[str, Any]]:
    """Server side of a reconnect: the events that come after the one whose id is ``last_event_id``
    (all of them when it is None or unknown to this stream). Clients send the header in UTF-8 (the SSE spec;
    browsers, @agentmsg/client) and servers often decode header bytes as Latin-1 (ASGI frameworks do): an id
    given so is the same id."""
    buffered = list(events)
    if last_event_id:
        ids = {last_event_id}
        with contextlib.suppress(UnicodeError):  # (not UTF-8 read as Latin-1: the id as given)
            ids.add(last_event_id.encode("latin-1").decode("utf-8"))
        for index, event in enumerate(buffered):
            if event.get("id") in ids:
                return iter(buffered[index + 1 :])
    return iter(buffered)
