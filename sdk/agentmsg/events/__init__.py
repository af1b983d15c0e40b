"""Agent events: the event → message reducer, the message → events emitter, JSONL and SSE transport;
``agentmsg.events.types`` has the TypedDicts of every event type. :data:`ERROR_EVENT`, :data:`PROBLEM_EVENT`
and :data:`NOT_KEPT_EVENT` name the CUSTOM events agentmsg's provider parsers and clients send;
:data:`DEFAULT_MAX_PROBLEMS` is how many problems a reducer keeps (then counts), as a provider reply and a report do;
:data:`CUT_RULE` is the rule of the problem a reducer records for a reply the stream cut short."""

from agentmsg._wire.sse import SSEDecoder, SSEEvent
from agentmsg.events._handlers import ERROR_EVENT, NOT_KEPT_EVENT, PROBLEM_EVENT
from agentmsg.events.emitter import emit_events
from agentmsg.events.reducer import CUT_RULE, DEFAULT_MAX_PROBLEMS, Reducer, reduce_events
from agentmsg.events.sse import encode_sse
from agentmsg.events.stream import iter_jsonl, iter_sse_events, read_events, reduce_stream, sniff_format
from agentmsg.events.types import AgentEventDict

__all__ = [
    "CUT_RULE",
    "DEFAULT_MAX_PROBLEMS",
    "ERROR_EVENT",
    "NOT_KEPT_EVENT",
    "PROBLEM_EVENT",
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
    "sniff_format",
]
