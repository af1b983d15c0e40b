"""agentmsg's event stream spoken as the protocols front ends read: one module per protocol, one contract.

Protocols (:data:`PROTOCOLS`, :func:`get`, :func:`names`):

* ``agentscope`` (:mod:`agentmsg.ui.agentscope`): agentmsg's own AgentEvents as they are, the default;
* ``ag-ui`` (:mod:`agentmsg.ui.agui`): AG-UI 1.0 (CopilotKit and most agent UIs), docs/ag-ui.md.
* ``ai-sdk`` (:mod:`agentmsg.ui.ai_sdk`): the Vercel AI SDK's UI message stream (``useChat``), docs/ai-sdk.md.

The contract (:mod:`agentmsg.ui._protocol`), which every protocol module follows:

* the module defines ``PROTOCOL``, a :class:`UIProtocol`, and has one line in :data:`PROTOCOLS` below;
* ``UIProtocol``: ``name`` (the registry name, what ``?protocol=`` and ``agentmsg serve --protocol`` take),
  ``media_type`` (what an ``Accept`` header selects it by; the response is ``text/event-stream`` whatever the
  protocol, and ``text/event-stream`` selects any protocol, after a protocol's own media type),
  ``response_headers`` (added to the endpoint's content type and cache control), ``resumable`` (``Last-Event-ID``
  resume: its frames carry ``id:``), ``encoder()`` and ``decoder(strict=False)`` (a fresh, stateful translator per
  stream), ``frame(event, position)`` (one SSE frame of one protocol event, the ``position``-th of the translated
  stream, 1, 2, ...) and ``trailer(error)`` (the bytes after the last frame: an end marker, or nothing);
* ``Encoder``: ``feed(agent_event) -> [protocol events]``, ``close() -> [...]`` (the source ended: what is open
  is closed), ``fail(message) -> [...]`` (the source raised), ``notes`` (a list of :class:`~agentmsg.Problem`:
  what had no counterpart in the protocol, by rule and JSON pointer ``/<event index>/<key>``; never dropped
  silently, and never an exception: an encoder takes any event);
* ``Decoder``: ``feed(protocol_event) -> [AgentEvents]``, ``close() -> [...]`` (the stream ended: what is open is
  closed as a cut stream's is), ``notes`` likewise; with ``strict=True`` the first event that breaks the protocol
  raises :class:`~agentmsg.ValidationError` (pointer + rule) instead of becoming a note.

The inbound direction, what a front end POSTs, is read by its protocol's module: :func:`agentmsg.ui.ai_sdk.read_request`
(``useChat``'s ``{id, messages, trigger, ...}``) and :func:`agentmsg.ui.agui.read_input` (AG-UI's ``RunAgentInput``)
give the posted conversation as agentmsg messages, what no block holds kept in their metadata with a note (rule
``ui-mapped``), and refuse a bad body with :class:`~agentmsg.ValidationError` (pointer + rule).

Events are dicts both ways (JSON objects as the wire has them: AG-UI's camelCase keys, agentmsg's). The round trip
``AgentEvents -> encoder -> decoder`` reduces (:class:`agentmsg.Reducer`) to the same message, up to what a
protocol has no place for, each such thing a note with its rule. :class:`agentmsg.web.EventEndpoint` serves any
of them (``protocols=``), picking one per request with :func:`negotiate`.
"""

from __future__ import annotations

from agentmsg.errors import UnknownNameError
from agentmsg.ui import agentscope, agui, ai_sdk
from agentmsg.ui._protocol import Decoder, Encoder, NotAcceptable, UIProtocol, negotiate

__all__ = ["PROTOCOLS", "Decoder", "Encoder", "NotAcceptable", "UIProtocol", "detect", "get", "names", "negotiate"]

#: every protocol by name, the default first (one entry per protocol module)
PROTOCOLS: dict[str, UIProtocol] = {
    protocol.name: protocol
    for protocol in (
        agentscope.PROTOCOL,
        agui.PROTOCOL,
        ai_sdk.PROTOCOL,
    )
}  # fmt: skip


def names() -> tuple[str, ...]:
    """The names of the protocols, the default (``agentscope``) first."""
    return tuple(PROTOCOLS)


def get(name: str) -> UIProtocol:
    """The protocol of that name; an unknown name raises :class:`~agentmsg.errors.UnknownNameError` (a
    ``KeyError`` too) naming the known ones."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise UnknownNameError(f"no UI protocol {name!r}: one of {', '.join(PROTOCOLS)}") from None


def detect(event: object) -> str | None:
    """The protocol a stream is in, from its first event: ``ag-ui`` for a ``type`` only AG-UI has (RUN_STARTED,
    TEXT_MESSAGE_START, ...), ``ai-sdk`` for a UI message chunk type (``start``, ``data-agentmsg``, ...), None for anything else (agentmsg's own AgentEvents, or not an event)."""
    kind = event.get("type") if isinstance(event, dict) else None
    if isinstance(kind, str) and kind in agui.TYPES:
        return agui.PROTOCOL.name
    if isinstance(kind, str) and kind in ai_sdk.TYPES:
        return ai_sdk.PROTOCOL.name
    return None
