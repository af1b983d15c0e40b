"""Static types of the agent events: one TypedDict per event type (``TextBlockDeltaEventDict``, ...) and
``AgentEventDict``, their union, generated from ``schemas/agent-event.schema.json``. Events stay plain
dicts at run time (the reducer's speed depends on it); these only tell a type checker their keys::

    from agentmsg.events.types import AgentEventDict, TextBlockDeltaEventDict

    delta: TextBlockDeltaEventDict = {"type": "TEXT_BLOCK_DELTA", "id": "e3", "createdAt": "...",
                                      "replyId": "r", "blockId": "text", "delta": "Hel"}
"""

from agentmsg_models.agent_event_dicts import *  # noqa: F403
from agentmsg_models.agent_event_dicts import __all__ as __all__
