"""``agentscope``: agentmsg's own events as they are (AgentScope's AgentEvents), the identity protocol and the
default. A frame is ``id: <position>``, ``event: <type>``, ``data: <JSON>``; the stream ends with an ``end`` event
(``data: {}``), or an ``error`` event (``data: {"message": ...}``) when the source raised. An event whose type would
read as one of these (or is not a printable string) is sent without its ``event:`` field. These are the bytes
:class:`agentmsg.web.EventEndpoint` has always written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from agentmsg._wire.sse import encode_event
from agentmsg.errors import Problem, ValidationError
from agentmsg.ui._protocol import Decoder, Encoder, Notes, sse_frame

__all__ = ["PROTOCOL", "AgentScope"]


class _Identity:
    """Each event as it is (a copy of the mapping); nothing ever lacks a counterpart."""

    def __init__(self) -> None:
        self.notes: list[Problem] = Notes()

    def feed(self, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [dict(event)] if isinstance(event, Mapping) else [event]

    def close(self) -> list[dict[str, Any]]:
        return []

    def fail(self, message: str) -> list[dict[str, Any]]:
        return []  # the trailer's error event says it


class AgentScope:
    """The identity protocol. ``end_event``: the SSE event type of the end of the stream (None: none is sent)."""

    name = "agentscope"
    media_type = "application/vnd.agentscope.event+json"
    response_headers: tuple[tuple[str, str], ...] = ()
    resumable = True

    def __init__(self, end_event: str | None = "end") -> None:
        self.end_event = end_event

    def encoder(self) -> Encoder:
        return _Identity()

    def decoder(self, *, strict: bool = False) -> Decoder:
        return _Identity()

    def frame(self, event: Mapping[str, Any], position: int) -> bytes:
        kind = event.get("type") if isinstance(event, Mapping) else None
        if not isinstance(kind, str) or kind in (self.end_event, "error") or not kind.isprintable():
            kind = None  # never mistaken for the stream's own end/error events
        try:
            return sse_frame(event, position, kind)
        except ValidationError:  # (a position that is no int: a TypeError too, as orjson's error is)
            raise
        except orjson.JSONEncodeError:
            raise orjson.JSONEncodeError(f"event {position} is not JSON") from None

    def trailer(self, error: str | None) -> bytes:
        if error is not None:
            return encode_event(orjson.dumps({"message": error}).decode(), event="error").encode()
        if self.end_event is not None:
            return encode_event("{}", event=self.end_event).encode()
        return b""


PROTOCOL = AgentScope()
