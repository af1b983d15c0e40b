"""Hypothesis strategies for the UI protocols' streams as another producer may write them (AI SDK UI message chunks,
AG-UI events): every chunk or event type with its fields mostly of the right JSON type, sometimes of another, the
optional keys agentmsg reads or says, keys of no schema, bogus types and non-objects. Ids come from a small pool so
that calls, messages and results meet. What the decoders of both languages must read alike (tests/jsclient).

The values are JSON a JS number holds as Python does: integers within 2^53 and no floats (Python writes ``1.0``
where JavaScript writes ``1``, a value the two read alike but print apart), strings without lone surrogates (a
pair of them is one character to JavaScript and two to Python), object keys that are no array index (a JS object
lists those first)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agentmsg.ui import agui, ai_sdk

_chars = st.characters(exclude_categories=["Cs"])
#: text, short or past the 200 characters a note quotes
text = st.text(_chars, max_size=12) | st.text(_chars, min_size=195, max_size=230)
ids = st.sampled_from(["a", "b", "c", "call_1", "m1"]) | st.text(_chars, min_size=1, max_size=45)
scalars = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | text
#: object keys: no array index (``"0"``), which a JS object puts before its other keys whatever the JSON's order
keys = ids.filter(lambda k: not (k.isascii() and k.isdigit()))
json_value = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=8
)
objects = st.dictionaries(keys, json_value, max_size=3)


def _typed(kind: Any) -> st.SearchStrategy[Any]:
    """A value of JSON type ``kind`` (a Python type or an AG-UI type name), now and then one of any type."""
    good: st.SearchStrategy[Any] = {
        str: ids,
        "string": ids,
        bool: st.booleans(),
        dict: objects,
        "object": objects,
        list: st.lists(json_value, max_size=3),
        "array": st.lists(json_value, max_size=3),
    }.get(kind, json_value)
    return st.one_of(good, good, good, good, json_value)


# ---- AI SDK UI message chunks --------------------------------------------------------------------------------

_AI_SDK_OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "messageId": _typed(str),
    "messageMetadata": json_value,
    "finishReason": st.sampled_from([*sorted(ai_sdk._FINISH_REASONS), "done"]) | json_value,
    "providerMetadata": st.just({"p": {"k": 1}}) | json_value,
    "providerExecuted": _typed(bool),
    "preliminary": _typed(bool),
    "dynamic": _typed(bool),
    "title": _typed(str) | text,
    "toolMetadata": objects | json_value,
    "inputEncoding": st.sampled_from(["json", "text", "yaml"]),
    "reason": _typed(str) | text,
    "signature": _typed(str),
    "approvalDescriptor": json_value,
    "inputSchemaInput": json_value,
    "isAutomatic": _typed(bool),
    "citations": json_value,
    "errorText": _typed(str),
    "transient": _typed(bool),
    "id": _typed(str),
    "x-other": json_value,
}


@st.composite
def ai_sdk_chunk(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from([*ai_sdk._REQUIRED, "data-x", "bogus"]) | st.just(ai_sdk.CARRIER))
    if kind == ai_sdk.CARRIER:
        data = draw(
            st.fixed_dictionaries({"uiOnly": st.just(True)}, optional={"opener": ids})
            | st.fixed_dictionaries({"rest": st.sampled_from(["AGENT_START", "TOOL_CALL_END", "DATA_BLOCK"])}).map(
                lambda d: {**d, "fields": {"metadata": {"k": 1}}}
            )
            | st.fixed_dictionaries({"event": st.fixed_dictionaries({"type": st.sampled_from(["USAGE", "CUSTOM"])})})
            | json_value
        )
        return {"type": kind, "data": data, "transient": True}
    chunk: dict[str, Any] = {"type": kind}
    required = ai_sdk._REQUIRED.get(kind, {"data": object} if kind.startswith("data-") else {})
    for key, want in required.items():
        if draw(st.integers(0, 19)):  # (now and then left out)
            chunk[key] = draw(_typed(want))
    chunk.update(draw(st.fixed_dictionaries({}, optional=_AI_SDK_OPTIONAL)))
    return draw(st.just(chunk) | st.just(chunk) | st.just(chunk) | st.just(chunk) | json_value)


ai_sdk_streams = st.lists(ai_sdk_chunk(), max_size=20)


# ---- AG-UI events ----------------------------------------------------------------------------------------------

_AGUI_OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    **{key: _typed(want) for key, want in agui._OPTIONAL.items()},
    "timestamp": st.integers(0, 2**41) | json_value,
    "parentRunId": ids,
    "outcome": st.fixed_dictionaries({"type": st.sampled_from(["success", "interrupt", "cancelled"])}) | json_value,
    "x-other": json_value,
}


@st.composite
def agui_event(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from([*agui._REQUIRED, "BOGUS"]) | ids)
    event: dict[str, Any] = {"type": kind}
    for key, want in agui._REQUIRED.get(kind, {}).items():
        if draw(st.integers(0, 19)):
            event[key] = draw(_typed(want))
    event.update(draw(st.fixed_dictionaries({}, optional=_AGUI_OPTIONAL)))
    return draw(st.just(event) | st.just(event) | st.just(event) | st.just(event) | json_value)


agui_streams = st.lists(agui_event(), max_size=20)


#: an AG-UI stream whose carriers (``metadata.agentmsg``, ``agentmsg.absent``) contradict what the events say
AGUI_CONTRADICTED: list[Any] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "metadata": {"agentmsg": {"replyId": "other"}}},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"agentmsg": {"blockId": "elsewhere"}}},
    {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m",
        "delta": "hi",
        "metadata": {"agentmsg": {"type": "TOOL_CALL_DELTA", "delta": "rm -rf", "id": "e1", "extra": 1}},
    },
    {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"agentmsg.absent": ["blockId", "id"]}},
    {
        "type": "TOOL_CALL_START",
        "toolCallId": "c",
        "toolCallName": "f",
        "metadata": {"agentmsg": {"toolCallName": "g"}},
    },
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}", "metadata": {"agentmsg": {"toolCallId": "d"}}},
    {"type": "TOOL_CALL_END", "toolCallId": "c"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def _rest(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "data-agentmsg", "data": {"rest": kind, "fields": fields}, "transient": True}


#: a UI message stream whose carriers (``data-agentmsg`` rest) contradict what the chunks after them say, and some
#: that only add or set what the decoder mints, takes from its context or the chunk holds only in part
AISDK_CONTRADICTED: list[Any] = [
    _rest("AGENT_START", {"replyId": "other", "sessionId": "s"}),
    {"type": "start", "messageId": "r"},
    _rest("MODEL_CALL_START", {"replyId": "step", "type": "AGENT_END"}),
    {"type": "start-step"},
    _rest("TEXT_BLOCK_DELTA", {"type": "TOOL_CALL_DELTA", "delta": "rm -rf", "blockId": "t2", "id": "e1", "x": 1}),
    {"type": "text-start", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": "hi"},
    _rest("TOOL_CALL_END", {"toolCallName": "g", "input": {"path": "/"}}),
    {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": {"a": 1}},
    _rest("CUSTOM", {"value": {"message": "other"}}),
    {"type": "error", "errorText": "boom"},
    _rest("CUSTOM", {"value": {"message": "boom", "code": 5}}),
    {"type": "error", "errorText": "boom"},
    _rest("CUSTOM", {"value": {"message": "boom"}, "name": "agentmsg.error"}),
    {"type": "error", "errorText": "boom"},
]


def _end(call: str, carried: Any) -> dict[str, Any]:
    return {"type": "TOOL_CALL_END", "toolCallId": call, "metadata": {"agentmsg": {"input": carried}}}


def _args(call: str, delta: str, **meta: Any) -> dict[str, Any]:
    return {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": delta, **({"metadata": meta} if meta else {})}


#: an AG-UI stream whose TOOL_CALL_ENDs carry an ``input`` (``metadata.agentmsg``): one other than the arguments the
#: TOOL_CALL_ARGS showed, and ones that are them (the same JSON value, the text the encoder wrote of it where the
#: reducer's reader refuses that text, a call's arguments gone on after its end in the same step, no object)
AGUI_INPUTS: list[Any] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "STEP_STARTED", "stepName": "s"},
    {"type": "TOOL_CALL_START", "toolCallId": "a", "toolCallName": "f"},
    _args("a", '{"path": '),
    _args("a", '"/tmp"}'),
    _end("a", {"path": "/"}),
    {"type": "TOOL_CALL_START", "toolCallId": "b", "toolCallName": "f"},
    _args("b", '{"n": 1.0, "m": [true]}'),
    _end("b", {"m": [True], "n": 1}),
    {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
    _args("c", '{"s":"\\ud800"}', **{"agentmsg.implicit": True}),
    _end("c", {"s": "\ud800"}),
    {"type": "TOOL_CALL_START", "toolCallId": "d", "toolCallName": "f"},
    _args("d", '{"k": '),
    {"type": "TOOL_CALL_END", "toolCallId": "d"},
    {"type": "TOOL_CALL_START", "toolCallId": "d", "toolCallName": "f", "metadata": {"agentmsg.implicit": True}},
    _args("d", "2}"),
    _end("d", {"k": 2}),
    {"type": "TOOL_CALL_START", "toolCallId": "e", "toolCallName": "f"},
    _args("e", "not json"),
    _end("e", {"fixed": True}),
    {"type": "TOOL_CALL_START", "toolCallId": "g", "toolCallName": "f"},
    _end("g", "oops"),
    {"type": "STEP_FINISHED", "stepName": "s"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
