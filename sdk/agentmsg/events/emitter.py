"""Message → events: the stream an agent would emit for a message (the reducer's inverse).

``reduce_events(emit_events(m)) == [m]`` for every valid assistant message (property-tested).
The events follow AgentScope Java's shapes (one ``type`` key, camelCase, nulls omitted, fixed block ids
``text``/``thinking`` reopened per block). What Java's vocabulary cannot carry rides on agentmsg's
declared extensions: a whole media block on DATA_BLOCK_START ``block``, a tool call's parsed ``input``
and ``state`` on TOOL_CALL_END, block metadata on the END events' ``metadata``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from ..blocks import block_to_dict
from ..message import Msg


def _now() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond:06d}Z"


def emit_events(
    msg: Msg,
    *,
    chunk_size: int | None = None,
    id_factory: Callable[[], str] | None = None,
    clock: Callable[[], str] | None = None,
) -> list[dict[str, Any]]:
    """The event sequence for one message: AGENT_START, MODEL_CALL_START, the blocks' events,
    MODEL_CALL_END (with the usage), AGENT_RESULT (the message), AGENT_END. (A tool call whose id
    repeats an earlier call's is put in a new model call, replyId ``<msg id>-<n>``.)

    ``chunk_size`` splits text, thinking and argument deltas into pieces of that many characters
    (default: one delta per block). ``id_factory`` and ``clock`` make ids and createdAt deterministic."""
    return list(iter_events(msg, chunk_size=chunk_size, id_factory=id_factory, clock=clock))


def iter_events(
    msg: Msg,
    *,
    chunk_size: int | None = None,
    id_factory: Callable[[], str] | None = None,
    clock: Callable[[], str] | None = None,
) -> Iterator[dict[str, Any]]:
    new_id = id_factory or (lambda: uuid.uuid4().hex)
    now = clock or _now
    reply = msg.id

    def ev(type_: str, **fields: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": type_, "id": new_id(), "createdAt": now()}
        out.update((k, v) for k, v in fields.items() if v is not None)
        return out

    def pieces(text: str) -> list[str]:
        if not chunk_size or len(text) <= chunk_size:
            return [text]
        return [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]

    yield ev("AGENT_START", replyId=reply, name=msg.name, role="assistant")
    agent_reply = reply
    yield ev("MODEL_CALL_START", replyId=reply)
    calls: set[str] = set()  # tool call ids of the current model call
    model_calls = 1
    for index, block in enumerate(msg.content):
        data = block_to_dict(block)
        kind = data["type"]
        if kind == "tool_use" and data["id"] in calls:
            # Within one model call a tool call id names one call (the reducer continues a call whose id
            # comes back, as Java's lifecycle needs): a second call with the same id is another model call.
            yield ev("MODEL_CALL_END", replyId=reply)
            reply = f"{agent_reply}-{model_calls}"
            model_calls += 1
            calls.clear()
            yield ev("MODEL_CALL_START", replyId=reply)
        if kind == "tool_use":
            calls.add(data["id"])
        if kind in ("text", "thinking"):
            upper = kind.upper()
            yield ev(f"{upper}_BLOCK_START", replyId=reply, blockId=kind)
            text = data[kind]
            if text:
                for piece in pieces(text):
                    yield ev(f"{upper}_BLOCK_DELTA", replyId=reply, blockId=kind, delta=piece)
            end = ev(f"{upper}_BLOCK_END", replyId=reply, blockId=kind)
            if kind == "thinking" and data.get("metadata") is not None:
                end["metadata"] = data["metadata"]
            yield end
        elif kind in ("image", "audio", "video", "data"):
            block_id = f"{kind}-{index}"
            yield ev("DATA_BLOCK_START", replyId=reply, blockId=block_id, block=data)
            yield ev("DATA_BLOCK_END", replyId=reply, blockId=block_id)
        elif kind == "tool_use":
            call = {"replyId": reply, "toolCallId": data["id"], "toolCallName": data["name"]}
            yield ev("TOOL_CALL_START", **call)
            if data["content"] is not None:
                for piece in pieces(data["content"]):
                    yield ev("TOOL_CALL_DELTA", **call, delta=piece)
            end = ev("TOOL_CALL_END", **call, input=data["input"], state=data["state"])
            end["metadata"] = data["metadata"]
            yield end
        elif kind == "tool_result":
            res = {"replyId": reply, "toolCallId": data["id"], "toolCallName": data["name"]}
            yield ev("TOOL_RESULT_START", **res)
            previous_text = False
            for out in data["output"]:
                if out["type"] == "text" and not previous_text:
                    yield ev("TOOL_RESULT_TEXT_DELTA", **res, delta=out["text"])
                    previous_text = True
                else:  # a whole block; adjacent text blocks stay separate this way
                    yield ev("TOOL_RESULT_DATA_DELTA", **res, data=out)
                    previous_text = False
            end = ev("TOOL_RESULT_END", **res, state=data["state"])
            if data["metadata"]:
                end["metadata"] = data["metadata"]
            yield end
        elif kind == "hint":
            yield ev(
                "HINT_BLOCK", replyId=reply, blockId=data.get("id"), hintSource=data.get("source"), hint=data["hint"]
            )
    usage = msg.to_dict()["usage"]
    yield ev("MODEL_CALL_END", replyId=reply, usage=usage)
    yield ev("AGENT_RESULT", result=msg.to_dict())
    yield ev("AGENT_END", replyId=agent_reply)
