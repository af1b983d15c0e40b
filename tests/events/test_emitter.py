"""The emitter is the reducer's inverse: reduce(emit(m)) == m for every valid assistant message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentmsg
from agentmsg import (
    AssistantMessage,
    Msg,
    UserMessage,
    ValidationError,
    emit_events,
    encode_sse,
    reduce_events,
    reduce_stream,
)
from agentmsg.blocks import TextBlock, ToolUseBlock
from agentmsg.events.emitter import iter_events
from tests._support.budget import examples
from tests._support.valid import assistant_messages


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(assistant_messages(), st.none() | st.integers(1, 5))
def test_reduce_emit_is_identity(m: Msg, chunk: int | None) -> None:
    events = emit_events(m, chunk_size=chunk)
    for event in events:
        agentmsg.validate(event, "event")
    (back,) = reduce_events(events)
    assert back == m
    assert isinstance(back, AssistantMessage)


@pytest.mark.fuzz
@settings(max_examples=examples(50), deadline=None)
@given(assistant_messages())
def test_reduce_emit_through_sse_bytes(m: Msg) -> None:
    (back,) = reduce_stream(encode_sse(emit_events(m, chunk_size=3)).encode())
    assert back == m


def test_emitted_shape_follows_java() -> None:
    m = AssistantMessage(["hi"], name="Friday", id="m1")
    events = emit_events(m, id_factory=iter(f"e{i}" for i in range(100)).__next__, clock=lambda: "2025-01-01T00:00:00Z")
    assert [e["type"] for e in events] == [
        "AGENT_START",
        "MODEL_CALL_START",
        "TEXT_BLOCK_START",
        "TEXT_BLOCK_DELTA",
        "TEXT_BLOCK_END",
        "MODEL_CALL_END",
        "AGENT_RESULT",
        "AGENT_END",
    ]
    assert events[0] == {
        "type": "AGENT_START",
        "id": "e0",
        "createdAt": "2025-01-01T00:00:00Z",
        "replyId": "m1",
        "name": "Friday",
        "role": "assistant",
    }
    delta = events[3]
    assert delta["type"] == "TEXT_BLOCK_DELTA" and delta["blockId"] == "text" and delta["delta"] == "hi"


def test_two_calls_with_one_id_go_to_two_model_calls() -> None:
    """Within one model call a repeated toolCallId continues its call (Java's lifecycle), so the emitter
    puts a second call with the same id into a new model call, and the round trip keeps both."""
    call = {
        "type": "tool_use",
        "id": "c",
        "name": "f",
        "input": {},
        "content": "{}",
        "metadata": {},
        "state": "pending",
    }
    m = Msg.from_dict({"id": "m1", "role": "ASSISTANT", "content": [call, {**call, "name": "g"}], "metadata": {}})
    events = emit_events(m)
    assert [(e["type"], e.get("replyId")) for e in events if e["type"].startswith("MODEL_CALL")] == [
        ("MODEL_CALL_START", "m1"),
        ("MODEL_CALL_END", "m1"),
        ("MODEL_CALL_START", "m1-1"),
        ("MODEL_CALL_END", "m1-1"),
    ]
    assert reduce_events(events) == [m]


def test_only_assistant_messages_have_an_event_stream() -> None:
    """reduce_events(emit_events(UserMessage("hi"))) used to come back as an ASSISTANT message."""
    import pytest

    from agentmsg import SystemMessage, ValidationError

    for msg in (UserMessage("hi"), SystemMessage("be brief")):
        with pytest.raises(ValidationError) as info:
            emit_events(msg)
        ((pointer, rule),) = [(p.pointer, p.rule) for p in info.value.problems]
        assert (pointer, rule) == ("/role", "role") and "ASSISTANT" in str(info.value)


def test_every_block_type_has_an_emitter() -> None:
    from agentmsg.events.emitter import EMITTERS

    block_types = agentmsg.schema_documents()["content-block.schema.json"]["properties"]["type"]["enum"]
    assert set(EMITTERS) == set(block_types)


def test_emitted_events_type_check_as_typed_dicts() -> None:
    """The TypedDicts are generated from the schema: every key they declare is in it, and back."""
    from typing import get_type_hints

    from agentmsg.events import types

    schema = agentmsg.schema_documents()["agent-event.schema.json"]["$defs"]
    for name, node in schema.items():
        if name.endswith("Event"):
            hints = get_type_hints(getattr(types, f"{name}Dict"))
            assert set(hints) == set(node["properties"]), name
    events = emit_events(AssistantMessage(["hi"], id="m"))
    assert all(isinstance(e, dict) for e in events)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        # (each given what its type refuses, on purpose: what it says at run time is the test)
        (
            lambda: emit_events([AssistantMessage("hi")]),  # type: ignore[arg-type]
            "got list: one message at a time",
        ),
        (
            lambda: emit_events({"role": "ASSISTANT", "content": []}),  # type: ignore[arg-type]
            "got dict: Msg.from_dict reads one",
        ),
        (
            lambda: encode_sse(AssistantMessage("hi")),  # type: ignore[arg-type]
            "got AssistantMessage: a message's events are emit_events",
        ),
        (
            lambda: encode_sse(emit_events(AssistantMessage("hi"))[0]),  # type: ignore[arg-type]
            "got dict: one event: encode_sse_event",
        ),
    ],
)
def test_emitting_the_wrong_thing_says_what_to_call(call: Any, says: str) -> None:
    """Bare AttributeError / TypeError before (and a dict given to encode_sse: one problem per key)."""
    with pytest.raises(ValidationError) as info:
        call()
    (problem,) = info.value.problems
    assert (problem.pointer, problem.rule) == ("", "type") and says in problem.message


@pytest.mark.parametrize("chunk", [0, -1, -3, 2.5, True])
def test_a_chunk_size_below_one_or_not_whole_is_refused(chunk: Any) -> None:
    """``chunk_size`` is a whole number of at least 1, or None (one delta per block), as ``agentmsg events
    --chunk-size`` takes it. A negative one emitted no delta at all, every text silently lost (a stream that
    reduced to a message of empty blocks); 0 and True passed as None and 1, and 2.5 raised a bare TypeError."""
    m = AssistantMessage(id="m", content=[TextBlock(text="hello"), ToolUseBlock(id="c", name="f", input={"a": 1})])
    with pytest.raises(ValueError, match="chunk_size must be"):
        emit_events(m, chunk_size=chunk)
    with pytest.raises(ValueError, match="chunk_size must be"):
        iter_events(m, chunk_size=chunk)
    (back,) = reduce_events(emit_events(m, chunk_size=1))
    assert back == m


@pytest.mark.parametrize(("chunk", "rule"), [(0, "minimum"), (-1, "minimum"), (2.5, "type"), (True, "type")])
def test_a_chunk_size_out_of_range_is_a_validation_error(chunk: Any, rule: str) -> None:
    """A chunk_size out of range raised a bare ValueError: now the SDK's error at /chunk_size, still a ValueError."""
    with pytest.raises(agentmsg.ValidationError) as info:
        emit_events(AssistantMessage("hello"), chunk_size=chunk)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/chunk_size", rule)]


def test_a_message_whose_agent_result_would_nest_too_deep_is_refused_before_any_event(tmp_path: Any) -> None:
    """AGENT_RESULT holds the message one level deeper: a message at limits.max_depth (metadata 252 arrays deep)
    made an event every reader skips, its metadata and timestamp lost, and `agentmsg events` wrote three events and
    died of orjson's TypeError. It is refused before the first event (SizeLimitError, max-depth); one level less
    comes back whole."""
    from tests._support.cli import run

    def message(depth: int) -> dict[str, Any]:
        value: Any = 1
        for _ in range(depth):
            value = [value]
        return {"id": "m", "role": "ASSISTANT", "content": [], "metadata": {"k": value}, "timestamp": None}

    with pytest.raises(agentmsg.SizeLimitError) as refused:
        iter_events(Msg.from_dict(message(252)))
    assert [p.rule for p in refused.value.problems] == ["max-depth"]
    assert refused.value.problems[0].pointer.startswith("/metadata/k/0/0")
    kept = Msg.from_dict(message(251))
    assert reduce_events(emit_events(kept)) == [kept]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(message(252)), "utf-8")
    r = run("events", str(path))
    assert r.returncode == 1 and r.stdout == "" and "Traceback" not in r.stderr and "[max-depth]" in r.stderr


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ({"type": "tool_use", "id": "", "name": "f"}, "toolCallId"),
        ({"type": "tool_result", "id": "", "name": "f", "output": []}, "toolCallId"),
        ({"type": "hint", "id": "", "hint": "x"}, "blockId"),
    ],
)
def test_a_block_of_an_empty_id_is_refused_its_events_naming_it(block: dict[str, Any], key: str) -> None:
    """The message schema takes an empty tool or hint id; the event schema asks the toolCallId or blockId that names
    the block's events to be at least 1 character: emit_events made events it refuses (a strict reducer raised).
    The message is refused, at the id (rule minLength); a one-character id is emitted and comes back."""
    with pytest.raises(ValidationError) as refused:
        emit_events(Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [block]}))
    assert [(p.pointer, p.rule) for p in refused.value.problems] == [("/content/0/id", "minLength")]
    assert key in refused.value.problems[0].message
    kept = Msg.from_dict({"id": "m", "role": "ASSISTANT", "content": [{**block, "id": "c"}]})
    events = emit_events(kept)
    for event in events:
        agentmsg.validate(event, "event")
    assert reduce_events(events, strict=True) == [kept]
