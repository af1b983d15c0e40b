"""agentmsg.ui.agui: AgentEvents -> AG-UI -> AgentEvents gives back the very events (and so the same messages) for
every reducer vector; AG-UI's own Python package (ag-ui-protocol) accepts every event written, and its encoder's
SSE reads back; AG-UI streams from elsewhere (chunks, the 0.0.x THINKING_* events, errors, pauses) reduce to the
message they describe; bad AG-UI input is a note with pointer and rule, or the error of strict mode."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given, settings

from agentmsg import AssistantMessage, Reducer, ValidationError, emit_events, reduce_events
from agentmsg._wire.sse import SSEDecoder
from agentmsg.blocks import TextBlock, ThinkingBlock, ToolUseBlock
from agentmsg.ui import agui, get
from tests._support.budget import examples
from tests._support.events import CASES, base_streams, events_of, load, writable
from tests._support.mutators import garble_events, reordered
from tests._support.uistreams import AGUI_CONTRADICTED, AGUI_INPUTS, agui_streams

AT = "2026-01-01T00:00:00Z"


def encode(events: list[Any]) -> tuple[list[dict[str, Any]], agui.AGUIEncoder]:
    enc = agui.AGUIEncoder()
    out: list[dict[str, Any]] = []
    for e in events:
        out += enc.feed(e)
    out += enc.close()
    return out, enc


def unrepeated(events: list[Any]) -> list[Any]:
    """``events`` without the repeats the reducer ignores (an id already seen, in its own stream): what the encoder
    sends, since an AG-UI client would show a repeat twice."""
    seen: set[str] = set()
    out = []
    for e in events:
        event_id = e.get("id") if isinstance(e, dict) else None
        if isinstance(event_id, str) and e.get("source") is None:
            if event_id in seen:
                continue
            seen.add(event_id)
        out.append(e)
    return out


def decode(events: list[Any], strict: bool = False) -> tuple[list[dict[str, Any]], agui.AGUIDecoder]:
    dec = agui.AGUIDecoder(strict=strict, clock=lambda: AT)
    out: list[dict[str, Any]] = []
    for e in events:
        out += dec.feed(e)
    out += dec.close()
    return out, dec


def messages(events: list[Any]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in reduce_events(events)]


def reduced(events: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    r = Reducer()
    for e in events:
        r.feed(e)
    return [m.to_dict() for m in r.finish()], [f"{p.pointer} [{p.rule}]" for p in r.problems]


@pytest.mark.parametrize("name", CASES)
def test_every_reducer_vector_round_trips_event_for_event(name: str) -> None:
    """AgentEvents -> AG-UI (through JSON text where the events can be written) -> AgentEvents: the same events
    (less the repeats the reducer ignores), so the one Reducer gives the same messages and the same problems."""
    events = events_of(load(name))
    written, _ = encode(events)
    if writable(events):
        written = [orjson.loads(orjson.dumps(e)) for e in written]
    back, dec = decode(written, strict=True)
    assert back == unrepeated(events)
    assert dec.notes == []
    assert reduced(back) == reduced(events)


@pytest.mark.oracle
@pytest.mark.parametrize("name", [n for n in CASES if writable(events_of(load(n)))])
def test_ag_ui_protocol_accepts_every_event_written_and_its_encoder_reads_back(name: str) -> None:
    """AG-UI's Python types (pydantic, generated from its 1.0 JSON schema) validate each event the encoder writes;
    the package's EventEncoder writes it as SSE, and that SSE, read by agentmsg's SSE decoder and the AG-UI
    decoder, gives the same AgentEvents as the events themselves."""
    core = pytest.importorskip("ag_ui.core")
    encoder_mod = pytest.importorskip("ag_ui.encoder")
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(core.Event)
    events = events_of(load(name))
    written, _ = encode(events)
    sse = ""
    for event in written:
        model = adapter.validate_python(event)
        sse += encoder_mod.EventEncoder().encode(model)
    read = [e.json() for e in SSEDecoder().feed(sse.encode())]
    assert len(read) == len(written)
    back, _ = decode(read, strict=True)
    assert back == unrepeated(events)


def test_a_replayed_event_is_sent_once_as_the_reducer_reads_it_once() -> None:
    """A stream that repeats events (a replay after a reconnect: the reducer vector duplicate-events-ignored) was
    written to AG-UI twice over: an AG-UI client, which has no duplicate rule, showed "abcdabcdef" for "abcdef". A
    subagent's events (``source``) are not the reducer's and are carried as they come."""
    events = events_of(load("duplicate-events-ignored"))
    written, _ = encode(events)
    text = "".join(e["delta"] for e in written if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "abcdef" == reduce_events(events)[0].text_content
    sub = [{**e, "source": "helper"} for e in events]
    assert len(encode(sub)[0]) == len(encode(events + sub)[0]) - len(written)


def test_events_without_an_ag_ui_event_are_wrapped_and_said_once_per_type() -> None:
    msg = AssistantMessage([TextBlock(text="hi")], name="Friday")
    events = emit_events(msg, id_factory=iter(f"e{i}" for i in range(99)).__next__, clock=lambda: AT)
    written, enc = encode(events)
    types = [e["type"] for e in written]
    assert types == [
        "RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
        "STEP_FINISHED", "CUSTOM", "RUN_FINISHED",
    ]  # fmt: skip
    assert written[6]["name"] == agui.WRAPPED and written[6]["value"]["type"] == "AGENT_RESULT"
    result, delta = events[-2], events[3]
    assert result["type"] == "AGENT_RESULT" and delta["type"] == "TEXT_BLOCK_DELTA"
    assert written[-1]["result"] == result["result"]  # the AG-UI client's run result: the message
    assert [(p.pointer, p.rule) for p in enc.notes] == [("/6", "ui-wrapped")]
    # what AG-UI has no field for travels in metadata; the createdAt in whole seconds is the timestamp
    assert written[3]["timestamp"] == 1767225600000
    assert written[3]["metadata"] == {"agentmsg": {"id": "e3", "replyId": delta["replyId"]}}


def test_a_tool_call_without_deltas_sends_its_input_and_a_stream_ends_in_a_closed_run() -> None:
    msg = AssistantMessage(
        [
            ThinkingBlock(thinking="hmm"),
            TextBlock(text="Let me check."),
            ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"}),
        ]
    )
    written, _ = encode(emit_events(msg)[:-2])  # cut before AGENT_RESULT and AGENT_END
    by_type = [e["type"] for e in written if not e.get("metadata", {}).get("agentmsg.implicit")]
    assert "REASONING_MESSAGE_CONTENT" in by_type and "TOOL_CALL_START" in by_type
    args = [e for e in written if e["type"] == "TOOL_CALL_ARGS"]
    assert [orjson.loads(a["delta"]) for a in args] == [{"city": "Paris"}]
    start = next(e for e in written if e["type"] == "TOOL_CALL_START")
    assert start["parentMessageId"] == next(e for e in written if e["type"] == "TEXT_MESSAGE_START")["messageId"]
    assert written[-1]["type"] == "RUN_FINISHED" and written[-1]["metadata"] == {"agentmsg.implicit": True}


def test_a_failing_source_ends_in_run_error() -> None:
    enc = get("ag-ui").encoder()
    assert enc.fail("boom") == [
        {"type": "RUN_STARTED", "threadId": "run", "runId": "run", "metadata": {"agentmsg.implicit": True}},
        {"type": "RUN_ERROR", "message": "boom"},
    ]
    assert enc.feed({"type": "AGENT_START", "id": "x", "createdAt": AT, "replyId": "r"}) == []
    assert [p.rule for p in enc.notes] == ["order"]


# ---- AG-UI streams from elsewhere -----------------------------------------------------------------------------

REFERENCE = [  # the reply of shared/reference/agui-and-ui-streams.md 1.4, as @ag-ui/client accepts it
    {"type": "RUN_STARTED", "threadId": "th1", "runId": "r1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Let me check."},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "get_weather", "parentMessageId": "m1"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": '{"city":"Paris"}'},
    {"type": "TOOL_CALL_END", "toolCallId": "call_1"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "call_1", "content": "18C"},
    {"type": "RUN_FINISHED", "threadId": "th1", "runId": "r1"},
]


def test_an_ag_ui_reply_reduces_to_its_message() -> None:
    events, dec = decode(REFERENCE, strict=False)
    msgs, problems = reduced(events)
    assert problems == []
    assert [(p.pointer, p.rule) for p in dec.notes] == [("/4", "ui-not-kept")]  # parentMessageId
    (msg,) = msgs
    assert msg["id"] == "r1" and msg["role"] == "ASSISTANT"
    assert msg["content"][0] == {"type": "text", "text": "Let me check."}
    assert msg["content"][1]["name"] == "get_weather" and msg["content"][1]["input"] == {"city": "Paris"}
    assert msg["content"][2]["id"] == "call_1" and msg["content"][2]["output"] == [{"type": "text", "text": "18C"}]
    assert events[0]["sessionId"] == "th1"


@pytest.mark.parametrize(
    ("created", "stamp"),
    [
        ("2016-12-31T23:59:60Z", 1483228800000),  # the next minute's first instant, as Msg.created_at reads it
        ("2016-12-31T23:59:60.5Z", 1483228800500),
        ("2016-12-31T18:59:60-05:00", 1483228800000),  # (23:59 UTC at its offset)
        ("2016-12-31T23:58:60Z", None),  # (second 60 of another minute: no time at all)
    ],
)
def test_a_leap_second_has_a_timestamp_and_comes_back_as_it_was(created: str, stamp: int | None) -> None:
    """A createdAt of 23:59:60 (valid for the event schema, read by Java's Instant.parse) gave no AG-UI
    timestamp: the events had no time for an AG-UI client, where the comment on the encoder's reading of times
    said a leap second was read (inexactly). Now it has the time of the next minute's first instant, the SDK's
    one reading of a leap second (agentmsg._codec.timestamps.parse_timestamp), and, having no millisecond of its
    own, the createdAt travels in metadata: the round trip gives back the very events."""
    msg = AssistantMessage([TextBlock(text="hi")], name="Friday")
    events = emit_events(msg, id_factory=iter(f"e{i}" for i in range(99)).__next__, clock=lambda: created)
    written, _ = encode(events)
    stamps = [e.get("timestamp") for e in written if e["type"] != "CUSTOM"]  # (an event sent whole has its own)
    assert stamps == [stamp] * len(stamps) and len(stamps) == 7
    assert written[0]["metadata"]["agentmsg"]["createdAt"] == created
    back, dec = decode([orjson.loads(orjson.dumps(e)) for e in written], strict=True)
    assert back == events and dec.notes == []


def test_chunks_are_expanded_as_the_client_expands_them() -> None:
    stream = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1767225600123},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "th", "delta": "hm"},
        {"type": "REASONING_MESSAGE_CHUNK", "delta": "m"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "a", "role": "assistant", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "f", "delta": '{"x":'},
        {"type": "TOOL_CALL_CHUNK", "delta": "1}"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": 5, "outputTokens": 2}]},
    ]
    events, dec = decode(stream, strict=True)
    msgs, problems = reduced(events)
    assert problems == [] and dec.notes == []
    (msg,) = msgs
    assert [b["type"] for b in msg["content"]] == ["thinking", "text", "tool_use"]
    assert msg["content"][0]["thinking"] == "hmm" and msg["content"][1]["text"] == "Hello"
    assert msg["content"][2]["input"] == {"x": 1}
    assert msg["usage"] == {"inputTokens": 5, "outputTokens": 2}
    assert events[0]["createdAt"] == "2026-01-01T00:00:00.123Z" and msg["timestamp"] is not None


def test_legacy_thinking_events_are_read_as_reasoning() -> None:
    stream = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "why"},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    events, dec = decode(stream)
    (msg,), problems = reduced(events)
    assert problems == [] and msg["content"] == [{"type": "thinking", "thinking": "why", "metadata": None}]
    assert [(p.pointer, p.rule) for p in dec.notes] == [("/1", "ui-legacy")]


def test_signatures_pauses_errors_and_events_without_a_counterpart() -> None:
    stream = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"step": 1}},
        {"type": "REASONING_START", "messageId": "x"},
        {"type": "REASONING_MESSAGE_START", "messageId": "x", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "x", "delta": "plan"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "x", "encryptedValue": "sig"},
        {"type": "REASONING_MESSAGE_END", "messageId": "x"},
        {"type": "REASONING_END", "messageId": "x"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c", "encryptedValue": "ts"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "rm"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"p":"/"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "CUSTOM", "name": "progress", "value": {"done": 0.5}},
        {"type": "CUSTOM", "name": "tick", "value": 3},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "toolCallId": "c"}]},
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "par"},
        {"type": "RUN_ERROR", "message": "quota", "code": "429"},
    ]
    events, _ = decode(stream, strict=True)
    assert events[1]["type"] == "CUSTOM" and events[1]["name"] == "ag-ui.STATE_SNAPSHOT"
    assert events[1]["value"]["snapshot"] == {"step": 1}
    customs = [(e["name"], e["value"]) for e in events if e["type"] == "CUSTOM"][1:3]
    assert customs == [("progress", {"done": 0.5}), ("ag-ui.CUSTOM", {"type": "CUSTOM", "name": "tick", "value": 3})]
    (first, second), problems = reduced(events)
    assert problems == ["/13 [incomplete_stream]"]  # RUN_ERROR ended the run inside its reply (from RUN_STARTED r2)
    assert first["content"][0]["metadata"] == {"signature": "sig"}
    call = first["content"][1]
    assert call["metadata"] == {"thoughtSignature": "ts"} and call["state"] == "asking"
    assert first["metadata"]["agentscope_generate_reason"] == "PERMISSION_ASKING"
    assert second["content"] == [{"type": "text", "text": "par"}]
    assert second["metadata"]["agentmsg_errors"] == [{"type": "429", "message": "quota"}]
    assert second["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


@pytest.mark.parametrize(
    ("event", "pointer", "rule"),
    [
        ("nope", "/1", "type"),
        ({"threadId": "t"}, "/1/type", "required"),
        ({"type": "TEXT_MESSAGE_BEGIN"}, "/1/type", "enum"),
        ({"type": "TEXT_MESSAGE_START"}, "/1/messageId", "required"),
        ({"type": "TEXT_MESSAGE_START", "messageId": 5}, "/1/messageId", "type"),
        ({"type": "TEXT_MESSAGE_START", "messageId": "m", "name": None}, "/1/name", "type"),
        ({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "timestamp": 1.5}, "/1/timestamp", "type"),
        ({"type": "TEXT_MESSAGE_END", "messageId": "never"}, "/1/messageId", "order"),
        ({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{"}, "/1/toolCallId", "order"),
        ({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "x", "entityId": "e", "encryptedValue": "v"}, "/1/subtype", "enum"),
    ],
)  # fmt: skip
def test_bad_ag_ui_input_is_a_note_or_the_strict_error(event: Any, pointer: str, rule: str) -> None:
    stream = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, event]
    _, dec = decode(stream)
    assert [(p.pointer, p.rule) for p in dec.notes] == [(pointer, rule)]
    with pytest.raises(ValidationError) as info:
        decode(stream, strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    assert "AG-UI event" in str(info.value)


def test_emitted_replies_round_trip_in_chunks() -> None:
    msg = AssistantMessage(
        [
            ThinkingBlock(thinking="a" * 50),
            TextBlock(text="b" * 70),
            ToolUseBlock(id="c1", name="f", input={"k": "v" * 30}),
        ],
        name="N",
    )
    events = emit_events(msg, chunk_size=7)
    written, _ = encode(events)
    back, _ = decode([orjson.loads(orjson.dumps(e)) for e in written], strict=True)
    assert back == events and messages(back) == [msg.to_dict()] == messages(events)


def test_events_outside_a_run_are_read_and_said_once_per_stretch() -> None:
    text = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    ]
    stream: list[dict[str, Any]] = [*text, {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    stream += [{"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}, {"type": "CUSTOM", "name": "n", "value": {}}]
    events, dec = decode(stream)
    assert [(p.pointer, p.rule) for p in dec.notes] == [("/0/type", "order"), ("/5/type", "order")]
    assert reduced(events)[0][0]["content"] == [{"type": "text", "text": "x"}]
    with pytest.raises(ValidationError, match="outside a run"):
        decode(stream, strict=True)


def test_a_subagents_result_is_not_the_runs() -> None:
    sub = {"type": "AGENT_RESULT", "id": "s", "createdAt": AT, "source": "main/helper", "result": {"id": "x"}}
    start = {"type": "AGENT_START", "id": "a", "createdAt": AT, "replyId": "r"}
    end = {"type": "AGENT_END", "id": "b", "createdAt": AT, "replyId": "r"}
    written, _ = encode([start, sub, end])
    assert written[1] == {"type": "CUSTOM", "name": agui.WRAPPED, "value": sub}
    assert "result" not in written[-1]


def test_a_pause_naming_no_tool_call_gives_no_empty_interrupt_outcome() -> None:
    """REQUIRE_USER_CONFIRM may name no tool call (its schema sets no minimum): AG-UI's interrupt outcome names one
    at least (@ag-ui/core's schema refuses ``interrupts: []``), so RUN_FINISHED then has none; the event itself is
    carried whole and round trips."""

    def event(n: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{n}", "createdAt": AT, "replyId": "r", **keys}

    events = [event(0, "AGENT_START"), event(1, "REQUIRE_USER_CONFIRM", toolCalls=[]), event(2, "AGENT_END")]
    written, _ = encode(events)
    (done,) = [e for e in written if e["type"] == "RUN_FINISHED"]
    assert "outcome" not in done
    back, _ = decode(written, strict=True)
    assert back == events
    confirm = {"type": "tool_use", "id": "c", "name": "rm", "input": {}}
    events[1]["toolCalls"] = [confirm]
    (done,) = [e for e in encode(events)[0] if e["type"] == "RUN_FINISHED"]
    assert done["outcome"]["interrupts"] == [{"id": "c", "reason": "tool_call_confirmation", "toolCallId": "c"}]


@pytest.mark.parametrize(
    ("kind", "calls", "named", "said"),
    [
        ("REQUIRE_USER_CONFIRM", 5, [], ["/1/toolCalls"]),
        ("REQUIRE_EXTERNAL_EXECUTION", 1.5, [], ["/1/toolCalls"]),
        ("REQUIRE_USER_CONFIRM", "ab", [], ["/1/toolCalls"]),
        ("REQUIRE_EXTERNAL_EXECUTION", [{"id": "c"}, 3, {"id": ""}], ["c"], ["/1/toolCalls/1", "/1/toolCalls/2"]),
    ],
)
def test_a_pause_whose_tool_calls_are_no_list_of_calls_is_said_not_raised(
    kind: str, calls: Any, named: list[str], said: list[str]
) -> None:
    """An encoder takes any event: a HITL pause's ``toolCalls`` that was a number raised TypeError ("'int' object
    is not iterable"), and a string or a call without an id named nothing in RUN_FINISHED's outcome, unsaid. Each
    is now a note (rule ``type``) at the key, and the event is still sent whole."""
    events = [
        {"type": "AGENT_START", "id": "e0", "createdAt": AT, "replyId": "r"},
        {"type": kind, "id": "e1", "createdAt": AT, "replyId": "r", "toolCalls": calls},
        {"type": "AGENT_END", "id": "e2", "createdAt": AT, "replyId": "r"},
    ]
    written, enc = encode(events)
    assert [n.pointer for n in enc.notes if n.rule == "type"] == said
    assert any(e["type"] == "CUSTOM" and e["value"] == events[1] for e in written)
    (done,) = [e for e in written if e["type"] == "RUN_FINISHED"]
    if kind == "REQUIRE_EXTERNAL_EXECUTION":
        assert done["outcome"]["pendingToolCallIds"] == named
    else:
        assert "outcome" not in done


def test_long_tool_arguments_are_joined_in_linear_work() -> None:
    """The decoder joins a tool call's TOOL_CALL_ARGS deltas once, at its end, not one ``+`` at a time: 4,000
    deltas of 9 characters copied 72 million characters before (quadratic: 2.4 s for 40,000 of 100)."""
    from tests.ui.test_ai_sdk import Counted

    n, piece = 4000, '"123456",'
    stream: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"a":['},
        *({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": Counted(piece)} for _ in range(n)),
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "0]}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "success", "pendingToolCallIds": ["c"]},
        },
    ]
    Counted.copied = 0
    events, _ = decode(stream, strict=True)
    assert Counted.copied <= 2 * n * len(piece)
    (pending,) = [e for e in events if e["type"] == "REQUIRE_EXTERNAL_EXECUTION"]
    assert pending["toolCalls"][0]["input"] == {"a": ["123456"] * n + [0]}


def test_a_call_interrupted_before_its_end_has_no_key_of_the_decoder_s_own() -> None:
    """RUN_FINISHED interrupting a call whose arguments streamed and that never ended: the REQUIRE_USER_CONFIRM
    names the call as a tool_use block, without the argument text the decoder gathers (it had a ``_text`` key),
    and with the input those arguments say, as the reduced message has it (the run's end ends the call: it was
    ``{}``, the arguments read only at a TOOL_CALL_END of its own). What was handed out stays as it was."""
    stream: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "k1", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "k1", "delta": '{"a":1}'},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "toolCallId": "k1"}]},
        },
    ]
    events, decoder = decode(stream)
    (confirm,) = [e for e in events if e["type"] == "REQUIRE_USER_CONFIRM"]
    assert confirm["toolCalls"] == [{"type": "tool_use", "id": "k1", "name": "f", "input": {"a": 1}}]
    ((call,),) = [m["content"] for m in messages(events)]
    assert (call["input"], call["state"]) == ({"a": 1}, "asking")
    handed = copy.deepcopy(events)
    decoder.feed({"type": "TOOL_CALL_END", "toolCallId": "k1"})  # (late: not open, ignored)
    decoder.feed({"type": "RUN_STARTED", "threadId": "t", "runId": "r2"})
    assert events == handed


@pytest.mark.parametrize(
    ("deltas", "block_input"),
    [
        (['{"n": 123456789012345678901234567890}'], {}),  # past 64 bits: the reducer refuses it (integer-range)
        (['{"s": "\ud83d', '\ude00"}'], {"s": "\U0001f600"}),  # a pair split across two deltas: one character
    ],
)
def test_a_paused_call_s_input_is_the_one_its_message_has(deltas: list[str], block_input: dict[str, Any]) -> None:
    """RUN_FINISHED interrupting a call: REQUIRE_USER_CONFIRM names it with the input its arguments say, read by
    orjson, where the reducer reads them by the codec's rules. An integer past 64 bits came out as an inexact float
    (1.2345678901234568e+29, what the user was asked to confirm) where the message has ``{}`` and an
    argumentsError; a surrogate pair split across deltas gave ``{}`` where the message has the character. The
    input is now the message's, both ways."""
    stream: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "k1", "toolCallName": "f"},
        *({"type": "TOOL_CALL_ARGS", "toolCallId": "k1", "delta": d} for d in deltas),
        {"type": "TOOL_CALL_END", "toolCallId": "k1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {"type": "interrupt", "interrupts": [{"toolCallId": "k1"}]},
        },
    ]
    events, _ = decode(stream, strict=True)
    (confirm,) = [e for e in events if e["type"] == "REQUIRE_USER_CONFIRM"]
    ((call,),) = [m["content"] for m in messages(events)]
    assert call["input"] == block_input
    assert confirm["toolCalls"] == [{"type": "tool_use", "id": "k1", "name": "f", "input": block_input}]


def test_a_tool_result_part_s_keys_no_block_keeps_are_said() -> None:
    """A TOOL_CALL_RESULT content part's ``id`` and ``metadata`` and a file source's ``provider`` (AG-UI 1.0 has
    them, and its parts are loose objects) have no place in a tool result's block: said once per key (rule
    ``ui-not-kept``, pointer at the key), where they were left out without a word."""
    core = pytest.importorskip("ag_ui.core")
    from pydantic import TypeAdapter

    image = {"type": "file", "value": "file-1", "provider": "openai", "mimeType": "image/png"}
    stream: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "c",
            "content": [
                {"type": "text", "text": "see", "id": "p1"},
                {"type": "image", "id": "p2", "metadata": {"alt": "cat"}, "source": image},
            ],
        },
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    adapter: TypeAdapter[Any] = TypeAdapter(core.Event)
    for event in stream:
        adapter.validate_python(event)
    events, dec = decode(stream, strict=True)
    ((_, result),) = [m["content"] for m in messages(events)]
    assert result["output"] == [
        {"type": "text", "text": "see"},
        {"type": "image", "source": {"type": "url", "url": "file-1", "mime_type": "image/png"}},
    ]
    assert [(p.pointer, p.rule) for p in dec.notes] == [
        ("/3/content/0/id", "ui-not-kept"),
        ("/3/content/1/metadata", "ui-not-kept"),
        ("/3/content/1/source/provider", "ui-not-kept"),
    ]


def test_a_tool_call_signature_the_decoder_cannot_place_is_said() -> None:
    """REASONING_ENCRYPTED_VALUE ``tool-call`` becomes the call's ``thoughtSignature`` when it comes before the
    call's start. One after the call ended, or for a call that never starts in the run, was kept nowhere and said
    nowhere; now each is said once (rule ``ui-not-kept``, the pointer of the encrypted value), and the one before
    its call still reaches the call."""

    def sig(entity: str) -> dict[str, Any]:
        return {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": entity, "encryptedValue": "s"}

    stream: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        sig("c"),
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        sig("c"),
        sig("never"),
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        sig("cut"),
    ]
    events, dec = decode(stream, strict=True)
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert start["thoughtSignature"] == "s"
    assert [(p.pointer, p.rule) for p in dec.notes] == [("/4", "ui-not-kept"), ("/5", "ui-not-kept")]
    assert "already started" in dec.notes[0].message and "never started" in dec.notes[1].message
    _, dec = decode(stream[-2:])  # (the stream ends before the call: said at its close)
    assert [(p.pointer, p.rule) for p in dec.notes] == [("/1", "ui-not-kept")]


def test_what_a_run_s_end_names_and_no_event_keeps_is_said() -> None:
    """A RUN_FINISHED from elsewhere: its usage becomes a model call's, its outcome a pause. What of them no
    AgentEvent keeps (a usage entry's ``provider``, the model when the entries name several, an interrupt's ``id``
    and ``message``, pending ids of no call this run made, an outcome of no AG-UI shape) was left out without a
    word; now each is said once (rule ``ui-not-kept``, pointer at it). ag-ui-protocol takes the first two runs."""
    core = pytest.importorskip("ag_ui.core")
    from pydantic import TypeAdapter

    usage = [
        {"provider": "openai", "model": "a", "inputTokens": 3},
        {"provider": "anthropic", "model": "b", "inputTokens": 2, "outputTokens": 1},
    ]
    interrupt = {"id": "i1", "reason": "tool_call_confirmation", "toolCallId": "c", "message": "Allow rm?"}
    stream: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "rm"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "usage": usage,
            "outcome": {"type": "interrupt", "interrupts": [interrupt]},
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r2",
            "outcome": {"type": "success", "pendingToolCallIds": ["c"]},
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r3"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r3", "outcome": {"type": "interrupt", "interrupts": {}}},
    ]
    adapter: TypeAdapter[Any] = TypeAdapter(core.Event)
    for event in stream[:6]:
        adapter.validate_python(event)
    events, dec = decode(stream)
    (end,) = [e for e in events if e["type"] == "MODEL_CALL_END"]
    assert (end["usage"], end.get("metadata")) == ({"inputTokens": 5, "outputTokens": 1}, None)
    (confirm,) = [e for e in events if e["type"] == "REQUIRE_USER_CONFIRM"]
    assert [c["id"] for c in confirm["toolCalls"]] == ["c"]
    assert not [e for e in events if e["type"] == "REQUIRE_EXTERNAL_EXECUTION"]  # (c was the first run's)
    assert [(p.pointer, p.rule) for p in dec.notes] == [
        ("/3/usage/0/provider", "ui-not-kept"),
        ("/3/usage", "ui-not-kept"),  # several models
        ("/3/outcome/interrupts/0/id", "ui-not-kept"),
        ("/3/outcome/interrupts/0/message", "ui-not-kept"),
        ("/5/outcome/pendingToolCallIds", "ui-not-kept"),
        ("/7/outcome", "ui-not-kept"),
    ]


def test_an_id_or_type_in_a_note_is_quoted_as_json_cut_by_characters() -> None:
    """A note quoted a message or call id (at most 40 characters) and an unknown type (60) as Python writes them
    (``'t1'``) where the TypeScript decoder writes JSON (``"t1"``), and cut them silently, the TypeScript decoder
    by UTF-16 units (half an emoji). Both now quote JSON of the first characters (code points), ``...`` saying the
    cut (tests/jsclient/test_agui.py compares the notes of both word for word)."""
    smile = "\U0001f600"
    stream: list[Any] = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_END", "messageId": "it's"},
        {"type": "TOOL_CALL_END", "toolCallId": smile * 41},
        {"type": "X" * 61},
    ]
    _, dec = decode(stream)
    assert [(p.pointer, p.message) for p in dec.notes] == [
        ("/1/messageId", 'TEXT_MESSAGE_END of "it\'s", not open: ignored'),
        ("/2/toolCallId", f'TOOL_CALL_END of "{smile * 40}"..., not open: ignored'),
        ("/3/type", '"' + "X" * 60 + '"... is not an AG-UI 1.0 event type'),
    ]


def test_a_carrier_adds_what_the_ag_ui_event_lacks_and_never_contradicts_it() -> None:
    """``metadata.agentmsg`` set any key of the decoded event, ``type`` and ``delta`` included: a TEXT_MESSAGE_CONTENT
    an AG-UI client shows as the text "hi" decoded to a TOOL_CALL_DELTA "rm -rf". A carrier now adds keys, and sets
    only what the decoder mints or takes from its context (``id``, ``createdAt``, a block's ``replyId``); a key that
    contradicts the event (its type, text, block, run, call or tool name) is not applied and said."""
    events, dec = decode(AGUI_CONTRADICTED)
    assert [(e["type"], e.get("blockId") or e.get("toolCallId"), e.get("delta")) for e in events] == [
        ("AGENT_START", None, None),
        ("TEXT_BLOCK_START", "m", None),
        ("TEXT_BLOCK_DELTA", "m", "hi"),
        ("TEXT_BLOCK_END", "m", None),
        ("TOOL_CALL_START", "c", None),
        ("TOOL_CALL_DELTA", "c", "{}"),
        ("TOOL_CALL_END", "c", None),
        ("AGENT_END", None, None),
    ]
    assert events[0]["replyId"] == "r"
    assert (events[2]["id"], events[2]["extra"]) == ("e1", 1)  # (what the decoder mints, what it lacks: set)
    assert "id" not in events[3]
    assert events[4]["toolCallName"] == "f"
    assert [(p.pointer, p.rule, p.message) for p in dec.notes] == [
        ("/0/metadata", "ui-carrier-conflict", 'agentmsg "replyId" "other" contradicts AGENT_START "r": not applied'),
        (
            "/1/metadata",
            "ui-carrier-conflict",
            'agentmsg "blockId" "elsewhere" contradicts TEXT_BLOCK_START "m": not applied',
        ),
        (
            "/2/metadata",
            "ui-carrier-conflict",
            'agentmsg "type" "TOOL_CALL_DELTA" contradicts TEXT_BLOCK_DELTA "TEXT_BLOCK_DELTA": not applied',
        ),
        (
            "/2/metadata",
            "ui-carrier-conflict",
            'agentmsg "delta" "rm -rf" contradicts TEXT_BLOCK_DELTA "hi": not applied',
        ),
        ("/3", "ui-not-kept", "TEXT_MESSAGE_END metadata: no AgentEvent keeps it (left out)"),  # (no carrier: not ours)
        ("/3/metadata", "ui-carrier-conflict", 'agentmsg.absent "blockId" contradicts TEXT_BLOCK_END "m": not applied'),
        (
            "/4/metadata",
            "ui-carrier-conflict",
            'agentmsg "toolCallName" "g" contradicts TOOL_CALL_START "f": not applied',
        ),
        (
            "/5/metadata",
            "ui-carrier-conflict",
            'agentmsg "toolCallId" "d" contradicts TOOL_CALL_DELTA "c": not applied',
        ),
    ]
    with pytest.raises(ValidationError) as raised:
        decode(AGUI_CONTRADICTED, strict=True)
    assert [(p.pointer, p.rule) for p in raised.value.problems] == [("/0/metadata", "ui-carrier-conflict")]


def test_a_carried_input_is_the_arguments_the_ag_ui_client_showed_or_not_applied() -> None:
    """AG-UI's TOOL_CALL_END has no ``input``: a carried one was taken as an addition, even one other than the
    arguments the TOOL_CALL_ARGS showed (``{"path": "/"}`` where the user saw ``{"path": "/tmp"}``), and the reducer
    keeps an END's input over its arguments. Now a carried input that is not those arguments (the same JSON value, by
    the reducer's reader; the text the encoder wrote of it; arguments gone on after an end in the same step) is not
    applied and said; the reducer keeps what was shown. No object is still taken (the reducer never takes it)."""
    events, dec = decode(AGUI_INPUTS)
    ends = [(e["toolCallId"], e.get("input", "-")) for e in events if e["type"] == "TOOL_CALL_END"]
    assert ends == [
        ("a", "-"),
        ("b", {"m": [True], "n": 1}),
        ("c", {"s": "\ud800"}),
        ("d", "-"),
        ("d", {"k": 2}),
        ("e", "-"),
        ("g", "oops"),
    ]
    assert [(p.pointer, p.rule, p.message) for p in dec.notes] == [
        (
            "/5/metadata",
            "ui-carrier-conflict",
            'agentmsg "input" {"path":"/"} contradicts TOOL_CALL_END {"path":"/tmp"}: not applied',
        ),
        (
            "/20/metadata",
            "ui-carrier-conflict",
            'agentmsg "input" {"fixed":true} contradicts TOOL_CALL_END {}: not applied',
        ),
    ]
    ((message,),) = [messages(events)]
    assert [(b["id"], b["input"]) for b in message["content"]] == [
        ("a", {"path": "/tmp"}),
        ("b", {"m": [True], "n": 1}),
        ("c", {"s": "\ufffd"}),
        ("d", {"k": 2}),
        ("e", {}),
        ("g", {}),
    ]
    with pytest.raises(ValidationError) as raised:
        decode(AGUI_INPUTS, strict=True)
    assert [(p.pointer, p.rule) for p in raised.value.problems] == [("/5/metadata", "ui-carrier-conflict")]


def test_the_encoder_says_a_call_s_input_its_arguments_do_not_show() -> None:
    """The reducer keeps a TOOL_CALL_END's ``input`` over its call's arguments; an AG-UI client shows the arguments,
    and so does the decoder, which does not apply a carried input they do not show (said at decode time). The
    encoder wrote such an END saying nothing: now it says it too (pointer ``/<index>/input``, the decoder's rule
    ``ui-carrier-conflict``), for each input the decoder will refuse, and for none it takes: the same JSON value,
    the text it wrote of an input with no deltas, arguments gone on after an end in the same model call."""

    def ev(i: int, kind: str, reply: str = "m", **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": reply, **keys}

    def call(i: int, call_id: str, deltas: list[str], given: Any, reply: str = "m") -> list[dict[str, Any]]:
        out = [ev(i, "TOOL_CALL_START", reply, toolCallId=call_id, toolCallName="f")]
        out += [ev(i + 1 + k, "TOOL_CALL_DELTA", reply, toolCallId=call_id, delta=d) for k, d in enumerate(deltas)]
        return [*out, ev(i + 9, "TOOL_CALL_END", reply, toolCallId=call_id, input=given)]

    events = [
        ev(0, "AGENT_START", "r"),
        ev(1, "MODEL_CALL_START"),
        *call(10, "a", ["garbage"], {"a": 1}),  # 2..4
        *call(20, "b", ['{"n": 1.0, ', '"m": [true]}'], {"m": [True], "n": 1}),  # 5..8
        *call(30, "c", ['{"b": 2}'], {"a": 1}),  # 9..11
        *call(40, "d", [], {"x": "\ud800"}),  # 12, 13
        ev(50, "TOOL_CALL_START", toolCallId="e", toolCallName="f"),  # 14
        ev(51, "TOOL_CALL_DELTA", toolCallId="e", delta='{"k": '),
        ev(52, "TOOL_CALL_END", toolCallId="e"),
        ev(53, "TOOL_CALL_DELTA", toolCallId="e", delta="2}"),
        ev(54, "TOOL_CALL_END", toolCallId="e", input={"k": 2}),  # 18
        *call(60, "g", ["[1]"], {"a": 1}),  # 19..21
        *call(70, "h", ['{"a": 1}'], "oops"),  # 22..24
        ev(80, "MODEL_CALL_END"),
        ev(81, "AGENT_END", "r"),
    ]
    written, enc = encode(events)
    said = [(p.pointer, p.rule, p.message) for p in enc.notes if p.rule != "ui-wrapped"]
    tail = ": carried in metadata.agentmsg, which the decoder does not apply (an AG-UI client shows the arguments)"
    assert said == [
        ("/4/input", "ui-carrier-conflict", f'TOOL_CALL_END input {{"a":1}} is not the arguments its TOOL_CALL_ARGS show "garbage"{tail}'),
        ("/11/input", "ui-carrier-conflict", f'TOOL_CALL_END input {{"a":1}} is not the arguments its TOOL_CALL_ARGS show "{{\\"b\\": 2}}"{tail}'),
        ("/21/input", "ui-carrier-conflict", f'TOOL_CALL_END input {{"a":1}} is not the arguments its TOOL_CALL_ARGS show "[1]"{tail}'),
    ]  # fmt: skip
    back, dec = decode(written)
    refused = [p.pointer for p in dec.notes if p.rule == "ui-carrier-conflict"]
    assert len(refused) == len(said) == 3
    inputs = {b["id"]: b["input"] for b in messages(back)[0]["content"]}
    assert inputs == {
        "a": {},
        "b": {"m": [True], "n": 1},
        "c": {"b": 2},
        "d": {"x": "\ufffd"},  # (a message writes a lone surrogate so)
        "e": {"k": 2},
        "g": {},
        "h": {"a": 1},
    }
    kept = {b["id"]: b["input"] for b in messages(events)[0]["content"]}
    assert [k for k in kept if kept[k] != inputs[k]] == ["a", "c", "g"]  # (what the notes said)


@pytest.mark.parametrize("seed", range(60))
def test_the_encoder_says_each_input_the_decoder_refuses(seed: int) -> None:
    """On garbled and reordered streams too (calls gone on, ended twice, in other model calls): the encoder's notes
    of an input its arguments do not show are the decoder's refusals, one for one."""
    rng = random.Random(seed)
    base = base_streams(rng)
    for events in (garble_events(rng, base), reordered(base, rng)):
        written, enc = encode(events)
        _, dec = decode(written)
        said = [p for p in enc.notes if p.rule == "ui-carrier-conflict"]
        refused = [p for p in dec.notes if p.rule == "ui-carrier-conflict" and '"input"' in p.message]
        assert len(said) == len(refused), (said, refused)


@pytest.mark.parametrize("ended", [True, False])
def test_a_call_id_given_again_in_the_next_model_call_is_a_new_call_whether_or_not_it_ended(ended: bool) -> None:
    """The reducer takes a call id given again in a later model call (another replyId) for a new call, whether the
    first model call's MODEL_CALL_END came or not (a second MODEL_CALL_START). The encoder forgot the calls ended in a
    model call only at its END: after a second START it sent the new call under the first one's AG-UI id (an AG-UI
    client showed one call whose arguments went on, ``{"a": 1}{"b": 2}``), and a placeholder-named START went on
    with the first call's name. Now both streams are written alike: the new call has an id of its own, the
    placeholder one is wrapped; the same replyId again still goes on with the call, as the reducer does."""

    def stream(second: str, name: str) -> list[dict[str, Any]]:
        def ev(i: int, kind: str, reply: str, **keys: Any) -> dict[str, Any]:
            return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": reply, **keys}

        return [
            ev(0, "AGENT_START", "r"),
            ev(1, "MODEL_CALL_START", "m1"),
            ev(2, "TOOL_CALL_START", "m1", toolCallId="c", toolCallName="f"),
            ev(3, "TOOL_CALL_DELTA", "m1", toolCallId="c", delta='{"a": 1}'),
            ev(4, "TOOL_CALL_END", "m1", toolCallId="c"),
            *([ev(5, "MODEL_CALL_END", "m1")] if ended else []),
            ev(6, "MODEL_CALL_START", second),
            ev(7, "TOOL_CALL_START", second, toolCallId="c", toolCallName=name),
            ev(8, "TOOL_CALL_DELTA", second, toolCallId="c", delta='{"b": 2}'),
            ev(9, "TOOL_CALL_END", second, toolCallId="c"),
            ev(10, "MODEL_CALL_END", second),
            ev(11, "AGENT_END", "r"),
        ]

    def calls(written: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [
            (w["type"], w["toolCallId"], w.get("toolCallName", w.get("delta", "")))
            for w in written
            if w["type"].startswith("TOOL_CALL")
        ]

    first = [("TOOL_CALL_START", "c", "f"), ("TOOL_CALL_ARGS", "c", '{"a": 1}'), ("TOOL_CALL_END", "c", "")]
    second = [("TOOL_CALL_START", "c~1", "g"), ("TOOL_CALL_ARGS", "c~1", '{"b": 2}'), ("TOOL_CALL_END", "c~1", "")]
    for events, want, blocks in (
        (stream("m2", "g"), first + second, [("c", "f", {"a": 1}), ("c", "g", {"b": 2})]),
        (stream("m2", "__fragment__"), first, [("c", "f", {"a": 1}), ("c", "__fragment__", {"b": 2})]),
    ):
        written, _ = encode(events)
        assert calls(written) == want
        back, dec = decode(written, strict=True)
        assert back == events and dec.notes == []
        content = messages(events)[0]["content"]
        assert [(b["id"], b["name"], b["input"]) for b in content] == blocks
    if not ended:  # (the same model call started again: the reducer goes on with the call, the encoder too)
        events = stream("m1", "f")
        written, _ = encode(events)
        assert [c[1] for c in calls(written)] == ["c"] * 6
        back, _ = decode(written, strict=True)
        assert back == events
        content = messages(events)[0]["content"]
        assert [b["id"] for b in content] == ["c"]  # (one call: its arguments went on)


def _calls_of(written: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The AG-UI tool-call events written: (type, toolCallId, its name or delta)."""
    return [
        (w["type"], w["toolCallId"], w.get("toolCallName", w.get("delta", "")))
        for w in written
        if w["type"].startswith("TOOL_CALL")
    ]


def _model_calls(*steps: tuple[str, str, str]) -> list[dict[str, Any]]:
    """An agent reply of one model call per step (its replyId, the call id it gives, the arguments' text), each ended
    (MODEL_CALL_END); a call's END gives its input when its text closes an object (``}``): the whole arguments'."""
    out: list[dict[str, Any]] = [{"type": "AGENT_START", "id": "e0", "createdAt": AT, "replyId": "r"}]

    def ev(kind: str, reply: str, **keys: Any) -> None:
        out.append({"type": kind, "id": f"e{len(out)}", "createdAt": AT, "replyId": reply, **keys})

    for reply, call, text in steps:
        ev("MODEL_CALL_START", reply)
        ev("TOOL_CALL_START", reply, toolCallId=call, toolCallName="f")
        ev("TOOL_CALL_DELTA", reply, toolCallId=call, delta=text)
        ev("TOOL_CALL_END", reply, toolCallId=call, **({"input": {"a": 1}} if text == "1}" else {}))
        ev("MODEL_CALL_END", reply)
    ev("AGENT_END", "r")
    return out


def test_a_call_id_given_again_under_the_same_reply_id_after_its_end_goes_on() -> None:
    """The reducer takes a tool call started again under the replyId its block was started with for that call (same
    replyId and toolCallId: one call), whether a MODEL_CALL_END came between or another model call did. The encoder
    forgot the calls ended at every MODEL_CALL_END (and at a MODEL_CALL_START of another replyId), and started such a
    call under a new AG-UI id: a client showed two calls, ``{"a": `` and ``1}``, where the agent keeps one. Now the
    encoder follows the reducer's rule (the same AG-UI id: the call goes on), and so do the decoders (the text of its
    arguments goes on across the other model call), so that the round trip stays event for event, without a note; a
    call id another model call gave in between is that call's, and the next one under the first replyId a third."""
    first = ("m1", "c", '{"a": ')
    for steps, ids, blocks in (
        ((first, ("m1", "c", "1}")), ["c"] * 6, [("c", {"a": 1})]),
        (
            (first, ("m2", "d", "{}"), ("m1", "c", "1}")),
            ["c"] * 3 + ["d"] * 3 + ["c"] * 3,
            [("c", {"a": 1}), ("d", {})],
        ),
        (
            (("m1", "c", "{}"), ("m2", "c", "{}"), ("m1", "c", "{}")),
            ["c"] * 3 + ["c~1"] * 3 + ["c~2"] * 3,
            [("c", {}), ("c", {}), ("c", {})],
        ),
    ):
        events = _model_calls(*steps)
        content = messages(events)[0]["content"]
        assert [(b["id"], b["input"]) for b in content] == blocks
        written, enc = encode(events)
        assert [c[1] for c in _calls_of(written)] == ids
        assert enc.notes == []
        back, dec = decode(written, strict=True)
        assert back == events and dec.notes == []


class _Text(str):
    pass


class _Event(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@pytest.mark.fuzz
@given(agui_streams)
@settings(max_examples=examples(100), deadline=None)
def test_the_decoder_reads_a_mapping_of_str_subclasses_as_the_dict_it_holds(stream: list[Any]) -> None:
    """The decoder's check of an event looks at a dict of exactly the JSON types first and walks AG-UI's rules
    only for the rest (a Mapping that is no dict, a str subclass): either way the same events and the same notes,
    in order, as for the plain dicts."""

    def odd(value: Any) -> Any:
        if isinstance(value, dict):
            return _Event({k: odd(v) for k, v in value.items()})
        return _Text(value) if type(value) is str else value

    plain, dec = decode(copy.deepcopy(stream))
    back, odd_dec = decode([odd(e) for e in copy.deepcopy(stream)])
    assert orjson.dumps(back, default=dict) == orjson.dumps(plain, default=dict)
    assert odd_dec.notes == dec.notes


@pytest.mark.parametrize(
    ("created", "stamp", "exact"),
    [
        ("2026-11-22T10:34:38Z", 1795343678000, True),
        ("2026-11-22T10:34:38.123Z", 1795343678123, True),
        ("2026-11-22T10:34:38.000Z", 1795343678000, False),
        ("2026-11-22T10:34:38.1Z", 1795343678100, False),
        ("2026-11-22T10:34:38.123456789Z", 1795343678123, False),
        ("2026-11-22t10:34:38z", 1795343678000, False),
        ("2026-11-22T11:34:38+01:00", 1795343678000, False),
        ("2026-11-22T10:34:38.Z", 1795343678000, False),  # (datetime's reading)
        ("2026-11-22T24:00:00Z", None, False),
        ("2026-13-22T10:34:38Z", None, False),
        ("2026-11-22T10:34:3\u0661Z", None, False),
        ("2026-11-22T10:34:38.\u0661Z", None, False),
        ("2026-11-22 10:34:38Z", 1795343678000, False),
    ],
)
def test_a_created_at_is_read_as_before_through_the_seconds_cache(created: str, stamp: int | None, exact: bool) -> None:
    """The encoder reads a createdAt's date and time to the second once per second (cached: a stream's events
    come many to a second), then its fraction: the same milliseconds, and the same verdict on whether the AG-UI
    timestamp writes it back, as the reading it replaced; twice in a row, so the second comes from the cache."""
    assert agui._ms(created) == (stamp, exact)
    assert agui._ms(created) == (stamp, exact)


@pytest.mark.parametrize("created", ["2026-11-22T10:34:38Z123Z", "2026-11-22T10:34:38Z1Z"])
def test_a_created_at_with_digits_after_its_z_comes_back_as_it_was(created: str) -> None:
    """A createdAt with digits after the seconds' Z (``...38Z123Z``: no RFC 3339 time) was read as if a ``.`` stood
    there (``...38.123Z``) and called exact, so the AG-UI timestamp alone stood for it and the round trip gave
    ``...38.123Z`` back, silently rewritten: its text now rides along and comes back as it was."""
    assert agui._ms(created)[1] is False
    event = {
        "type": "AGENT_START",
        "id": "e1",
        "createdAt": created,
        "replyId": "r1",
        "name": "bot",
        "role": "ASSISTANT",
    }
    decoder = agui.AGUIDecoder()
    back = [e for out in agui.AGUIEncoder().feed(event) for e in decoder.feed(out)]
    assert [e["createdAt"] for e in back] == [created]


@pytest.mark.parametrize("strict", [False, True])
def test_a_state_delta_goes_as_a_custom_event_as_the_docs_say(strict: bool) -> None:
    """STATE_DELTA requires its ``delta`` to be a list (a JSON Patch), and the optional fields' rule that ``delta``
    is a string (TEXT_MESSAGE_CONTENT's) refused every one: "delta is a JSON string" (raised, strict). It goes as
    CUSTOM ``ag-ui.STATE_DELTA`` with the event as value (docs/ag-ui.md); a delta that is no list is still refused."""
    patch = [{"op": "replace", "path": "/step", "value": 2}]
    stream = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_DELTA", "delta": patch},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    events, dec = decode(stream, strict=strict)
    custom = [e for e in events if e["type"] == "CUSTOM"]
    assert [(e["name"], e["value"]) for e in custom] == [("ag-ui.STATE_DELTA", {"type": "STATE_DELTA", "delta": patch})]
    assert not [n for n in dec.notes if n.rule == "type"]
    _, bad_dec = decode([{"type": "STATE_DELTA", "delta": "x"}])
    assert [(n.pointer, n.rule) for n in bad_dec.notes] == [("/0/delta", "type")]


@pytest.mark.parametrize(("run", "step"), [("r", ""), ("", None), ("", "")])
def test_an_empty_run_id_or_step_name_is_the_reply_of_what_it_holds(run: str, step: str | None) -> None:
    """An empty ``runId`` or ``stepName`` (AG-UI allows any string) names the reply of the events inside it, as it
    names the AGENT_START's and MODEL_CALL_START's: Python's decoder took the empty name for none and gave those
    events the run's id (or ``ag-ui``), a reply their start never opened; ``@agentmsg/client``'s kept the name (found
    by the differential fuzz: an empty step name)."""
    inner = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
    ]
    if step is not None:
        inner = [{"type": "STEP_STARTED", "stepName": step}, *inner, {"type": "STEP_FINISHED", "stepName": step}]
    run_started = {"type": "RUN_STARTED", "threadId": "t", "runId": run}
    events, dec = decode([run_started, *inner, {"type": "RUN_FINISHED", "threadId": "t", "runId": run}])
    assert dec.notes == []
    inside = [e["replyId"] for e in events if e["type"].startswith(("TEXT_", "TOOL_", "MODEL_"))]
    assert inside == [run if step is None else step] * len(inner)
    assert [events[0]["replyId"], events[-1]["replyId"]] == [run, run]
