"""Message → events: the stream an agent would emit for a message (the reducer's inverse).

``reduce_events(emit_events(m)) == [m]`` for every valid assistant message (property-tested). Events
describe an agent's *reply*, so only ASSISTANT messages have an event stream: any other role raises
:class:`~agentmsg.ValidationError` (rule ``role``) instead of coming back as an assistant message.
The events follow AgentScope Java's shapes (one ``type`` key, camelCase, nulls omitted, fixed block ids
``text``/``thinking`` reopened per block). What Java's vocabulary cannot carry rides on agentmsg's
declared extensions: a whole media block on DATA_BLOCK_START ``block``, a tool call's parsed ``input``
and ``state`` on TOOL_CALL_END, block metadata on the END events' ``metadata``.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from agentmsg._codec.jsontext import deep_value_pointer, deeper_than
from agentmsg._codec.limits import limits
from agentmsg._codec.timestamps import event_now
from agentmsg.errors import Problem, SizeLimitError, ValidationError, require_count
from agentmsg.events.types import AgentEventDict
from agentmsg.message import Msg


class _Emit:
    """What the per-kind emitters share: the event factory, chunking and the current model call."""

    __slots__ = ("calls", "chunk_size", "model_calls", "new_id", "now", "reply", "root")

    def __init__(self, msg: Msg, chunk_size: int | None, new_id: Callable[[], str], now: Callable[[], str]) -> None:
        self.root = self.reply = msg.id
        self.chunk_size = chunk_size
        self.new_id = new_id
        self.now = now
        self.calls: set[str] = set()  # tool call ids of the current model call
        self.model_calls = 1

    def event(self, type_: str, **fields: Any) -> AgentEventDict:
        out: dict[str, Any] = {"type": type_, "id": self.new_id(), "createdAt": self.now()}
        out.update((k, v) for k, v in fields.items() if v is not None)
        return out  # type: ignore[return-value]

    def pieces(self, text: str) -> list[str]:
        size = self.chunk_size
        if not size or len(text) <= size:
            return [text]
        return [text[i : i + size] for i in range(0, len(text), size)]


Emitter = Callable[[_Emit, dict[str, Any], int], Iterator[AgentEventDict]]


def _text_or_thinking(x: _Emit, data: dict[str, Any], index: int) -> Iterator[AgentEventDict]:
    kind = data["type"]
    upper = kind.upper()
    yield x.event(f"{upper}_BLOCK_START", replyId=x.reply, blockId=kind)
    if data[kind]:
        for piece in x.pieces(data[kind]):
            yield x.event(f"{upper}_BLOCK_DELTA", replyId=x.reply, blockId=kind, delta=piece)
    end = x.event(f"{upper}_BLOCK_END", replyId=x.reply, blockId=kind)
    if kind == "thinking" and data.get("metadata") is not None:
        end["metadata"] = data["metadata"]
    yield end


def _media(x: _Emit, data: dict[str, Any], index: int) -> Iterator[AgentEventDict]:
    block_id = f"{data['type']}-{index}"
    yield x.event("DATA_BLOCK_START", replyId=x.reply, blockId=block_id, block=data)
    yield x.event("DATA_BLOCK_END", replyId=x.reply, blockId=block_id)


def _tool_use(x: _Emit, data: dict[str, Any], index: int) -> Iterator[AgentEventDict]:
    if data["id"] in x.calls:
        # Within one model call a tool call id names one call (the reducer continues a call whose id
        # comes back, as Java's lifecycle needs): a second call with the same id is another model call.
        yield x.event("MODEL_CALL_END", replyId=x.reply)
        x.reply = f"{x.root}-{x.model_calls}"
        x.model_calls += 1
        x.calls.clear()
        yield x.event("MODEL_CALL_START", replyId=x.reply)
    x.calls.add(data["id"])
    call = {"replyId": x.reply, "toolCallId": data["id"], "toolCallName": data["name"]}
    yield x.event("TOOL_CALL_START", **call)
    if data["content"] is not None:
        for piece in x.pieces(data["content"]):
            yield x.event("TOOL_CALL_DELTA", **call, delta=piece)
    end = x.event("TOOL_CALL_END", **call, input=data["input"], state=data["state"])
    end["metadata"] = data["metadata"]
    yield end


def _tool_result(x: _Emit, data: dict[str, Any], index: int) -> Iterator[AgentEventDict]:
    res = {"replyId": x.reply, "toolCallId": data["id"], "toolCallName": data["name"]}
    yield x.event("TOOL_RESULT_START", **res)
    previous_text = False
    for out in data["output"]:
        if out["type"] == "text" and not previous_text:
            yield x.event("TOOL_RESULT_TEXT_DELTA", **res, delta=out["text"])
            previous_text = True
        else:  # a whole block; adjacent text blocks stay separate this way
            yield x.event("TOOL_RESULT_DATA_DELTA", **res, data=out)
            previous_text = False
    end = x.event("TOOL_RESULT_END", **res, state=data["state"])
    if data["metadata"]:
        end["metadata"] = data["metadata"]
    yield end


def _hint(x: _Emit, data: dict[str, Any], index: int) -> Iterator[AgentEventDict]:
    yield x.event(
        "HINT_BLOCK", replyId=x.reply, blockId=data.get("id"), hintSource=data.get("source"), hint=data["hint"]
    )


#: Block type -> the events that carry it. A block type without an entry cannot be emitted.
#: (Hand-written, as the event vocabulary is: tests/project/test_schema_drift.py fails, naming what to update, when a
#: block type of the schema has no entry or a block field is missing from :data:`CARRIED`.)
EMITTERS: dict[str, Emitter] = {
    "text": _text_or_thinking,
    "thinking": _text_or_thinking,
    "image": _media,
    "audio": _media,
    "video": _media,
    "data": _media,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
    "hint": _hint,
}

_MEDIA_KEYS = None  # the whole block rides on DATA_BLOCK_START ``block``: every key is carried

#: Block type -> the block's JSON keys its events carry (and the reducer puts back), or None for every key.
#: A field the schema declares beyond these would be lost between emit_events and the reducer: emitting a
#: block with such a field set raises instead (rule ``no-event-carrier``).
CARRIED: dict[str, frozenset[str] | None] = {
    "text": frozenset({"type", "text"}),
    "thinking": frozenset({"type", "thinking", "metadata"}),
    "image": _MEDIA_KEYS,
    "audio": _MEDIA_KEYS,
    "video": _MEDIA_KEYS,
    "data": _MEDIA_KEYS,
    "tool_use": frozenset({"type", "id", "name", "input", "content", "metadata", "state"}),
    "tool_result": frozenset({"type", "id", "name", "output", "metadata", "state"}),
    "hint": frozenset({"type", "id", "hint", "source"}),
}


@functools.cache
def _uncarried(cls: type) -> tuple[str, tuple[tuple[str, str, Any], ...]]:
    """The block type of block class ``cls``, and (attribute, wire key, default) of its declared fields that
    no event carries."""
    fields = [a for a in attrs.fields(cls) if "wire" in a.metadata]
    tag = next(a.default for a in fields if a.metadata["wire"] == "type")
    carried = CARRIED.get(tag, frozenset())
    if carried is None:
        return tag, ()
    return tag, tuple((a.name, a.metadata["wire"], _default(a)) for a in fields if a.metadata["wire"] not in carried)


def _default(a: attrs.Attribute[Any]) -> Any:
    d: Any = a.default
    factory = getattr(d, "factory", None)  # attrs.Factory: the value a new block holds
    return factory() if callable(factory) and not getattr(d, "takes_self", False) else d


#: the blocks whose events are named by the block's id, and the event key that names them
_NAMED_BY_ID = {"tool_use": "toolCallId", "tool_result": "toolCallId", "hint": "blockId"}


def _check_carried(block: Any, index: int) -> None:
    """Raise rather than drop: a block type without events, or a declared field set that no event carries."""
    cls: Any = type(block)
    tag, uncarried = _uncarried(cls)
    if tag not in EMITTERS:
        raise ValidationError.single(
            f"/content/{index}/type",
            "no-event-carrier",
            f"no agent event carries a {tag!r} block: emit_events would drop it (a new block type needs an entry"
            " in agentmsg.events.emitter.EMITTERS and the reducers: README, 'Changing a schema')",
            "msg",
        )
    if tag in _NAMED_BY_ID and getattr(block, "id", None) == "":
        # (the message schema takes an empty id; the event schema's toolCallId and blockId are at least 1 character:
        # its events broke the event schema, and a strict reducer refused them)
        raise ValidationError.single(
            f"/content/{index}/id",
            "minLength",
            f"a {tag} block of an empty id: its events name it ({_NAMED_BY_ID[tag]}), which the event schema asks to"
            " be at least 1 character",
            "msg",
        )
    for name, wire, default in uncarried:
        value = getattr(block, name)
        if value is not None and value != default:
            raise ValidationError.single(
                f"/content/{index}/{wire}",
                "no-event-carrier",
                f"{type(block).__name__}.{name} is set but no agent event carries it: emit_events would drop it"
                " (after a schema change the emitter, both reducers and the event schema need it: README,"
                " 'Changing a schema')",
                "msg",
            )


def emit_events(
    msg: Msg,
    *,
    chunk_size: int | None = None,
    id_factory: Callable[[], str] | None = None,
    clock: Callable[[], str] | None = None,
) -> list[AgentEventDict]:
    """The event sequence for one assistant message: AGENT_START, MODEL_CALL_START, the blocks'
    events, MODEL_CALL_END (with the usage), AGENT_RESULT (the message), AGENT_END. (A tool call whose
    id repeats an earlier call's is put in a new model call, replyId ``<msg id>-<n>``.)

    ``chunk_size`` splits text, thinking and argument deltas into pieces of that many characters
    (default: one delta per block; anything but a whole number of at least 1 raises :class:`ValueError`). ``id_factory`` and ``clock`` make ids and createdAt deterministic.
    Raises :class:`~agentmsg.ValidationError` (rule ``role``, pointer ``/role``) for a message that is
    not ASSISTANT: events carry agent replies only."""
    return list(iter_events(msg, chunk_size=chunk_size, id_factory=id_factory, clock=clock))


def iter_events(
    msg: Msg,
    *,
    chunk_size: int | None = None,
    id_factory: Callable[[], str] | None = None,
    clock: Callable[[], str] | None = None,
) -> Iterator[AgentEventDict]:
    """:func:`emit_events` one event at a time (the role is checked before the first one)."""
    if not isinstance(msg, Msg):
        hint = (
            ": one message at a time (emit_events(m) for each)"
            if isinstance(msg, (list, tuple))
            else ": Msg.from_dict reads one"
            if isinstance(msg, Mapping)
            else ""
        )
        raise ValidationError.single("", "type", f"expected an AssistantMessage, got {type(msg).__name__}{hint}", "msg")
    if chunk_size is not None:
        # (a negative size made no piece at all: every text was lost; 0 and True passed as None and 1)
        require_count(
            chunk_size,
            "chunk_size",
            1,
            "chunk_size must be a whole number of at least 1 (or None: one delta per block)",
        )
    role = getattr(msg.role, "value", msg.role)
    if role != "ASSISTANT":
        raise ValidationError.single(
            "/role",
            "role",
            f"only ASSISTANT messages have an event stream (events carry an agent's reply), got {role}",
            "msg",
        )
    # The message as it will be written, checked as to_json checks it (a field set after construction to what
    # its schema does not allow, NaN in metadata) before the first event: no stream of a message it would refuse.
    whole = msg.to_dict()
    for index, block in enumerate(msg.content):
        _check_carried(block, index)
    # The AGENT_RESULT event holds the message one level deeper: a message at limits.max_depth made an event every
    # reader skips (its metadata and timestamp lost), and orjson could not write it (a TypeError out of the CLI).
    if deeper_than(whole, limits.max_depth - 1):
        raise SizeLimitError(
            [
                Problem(
                    deep_value_pointer(whole, limits.max_depth - 1),
                    "max-depth",
                    f"the message nests {limits.max_depth} levels deep: its AGENT_RESULT event, which holds it one "
                    f"level deeper, would pass limits.max_depth ({limits.max_depth})",
                )
            ],
            "msg",
        )
    return _iter_events(
        _Emit(msg, chunk_size, id_factory or (lambda: uuid.uuid4().hex), clock or event_now), msg, whole
    )


def _iter_events(x: _Emit, msg: Msg, whole: dict[str, Any]) -> Iterator[AgentEventDict]:
    yield x.event("AGENT_START", replyId=msg.id, name=msg.name, role="assistant")
    yield x.event("MODEL_CALL_START", replyId=x.reply)
    for index, data in enumerate(whole["content"]):
        yield from EMITTERS[data["type"]](x, data, index)
    yield x.event("MODEL_CALL_END", replyId=x.reply, usage=whole["usage"])
    yield x.event("AGENT_RESULT", result=whole)
    yield x.event("AGENT_END", replyId=msg.id)
