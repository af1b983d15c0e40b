"""Agent events: the event → message reducer, the message → events emitter, JSONL and SSE transport;
``agentmsg.events.types`` has the TypedDicts of every event type."""

from .._sse import SSEDecoder, SSEEvent
from .emitter import emit_events
from .reducer import Reducer, reduce_events
from .sse import encode_sse
from .stream import iter_jsonl, iter_sse_events, read_events, reduce_stream
from .types import AgentEventDict

__all__ = [
    "AgentEventDict",
    "Reducer",
    "SSEDecoder",
    "SSEEvent",
    "emit_events",
    "encode_sse",
    "iter_jsonl",
    "iter_sse_events",
    "read_events",
    "reduce_events",
    "reduce_stream",
]
