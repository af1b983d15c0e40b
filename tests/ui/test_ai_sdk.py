"""agentmsg.ui.ai_sdk: AgentEvents -> AI SDK UI message chunks -> AgentEvents reduce to the same messages (every
conformance vector, random emitted streams), the chunks are what the AI SDK's schema takes, a UI stream of another
producer reduces to the message its parts say, and what has no counterpart is a note by rule."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import Reducer, ValidationError, ui
from agentmsg.cli._rules import RULES
from agentmsg.ui import ai_sdk
from agentmsg.ui._protocol import Decoder, Encoder, UIProtocol
from tests._support.events import CASES, base_streams, ev, events_of, load, read_jsonl
from tests._support.uistreams import AISDK_CONTRADICTED

AT = "2026-01-01T00:00:00Z"


def fallback_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Event ids are not carried (docs/ai-sdk.md): a reply nothing names, whose id the reducer makes of the id of
    the event that opened it (``msg-<id>``, docs/events.md rule 8), is named after the decoder's minted id."""
    return [{**m, "id": "msg-*"} if m["id"].startswith(("msg-", "ui-message-")) else m for m in messages]


def reduce(events: list[Any]) -> tuple[list[dict[str, Any]], Reducer]:
    r = Reducer()
    for e in events:
        r.feed(e)
    return [m.to_dict() for m in r.finish()], r


def round_trip(events: list[Any]) -> tuple[list[dict[str, Any]], ai_sdk.AiSdkEncoder, ai_sdk.AiSdkDecoder]:
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in events for c in enc.feed(e)] + enc.close()
    # through JSON text and the SSE framing, as a client gets them
    body = b"".join(ai_sdk.PROTOCOL.frame(c, i + 1) for i, c in enumerate(chunks)) + ai_sdk.PROTOCOL.trailer(None)
    read = list(ai_sdk.iter_chunks(body))
    assert read == chunks
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    back = [e for c in read for e in dec.feed(c)] + dec.close()
    return back, enc, dec


def check_chunk(chunk: dict[str, Any]) -> None:
    """What the AI SDK's reader needs of a chunk: a type it knows, its required keys (uiMessageChunkSchema)."""
    ai_sdk.AiSdkDecoder(strict=True)._check(chunk, 0)
    if chunk["type"].startswith("data-"):
        assert chunk["type"] != "data-", chunk


def _notes_of_valid(chunks: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The notes of a strict decoder fed ``chunks``, each first held to what the AI SDK's reader needs
    (:func:`check_chunk`): (pointer, rule, message) of each."""
    for chunk in chunks:
        check_chunk(chunk)
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    for chunk in chunks:
        dec.feed(chunk)
    return [(n.pointer, n.rule, n.message) for n in dec.notes]


@pytest.mark.parametrize("name", CASES)
def test_every_vector_round_trips_to_the_same_messages(name: str) -> None:
    events = [e for e in events_of(load(name)) if isinstance(e, dict)]
    expected, _ = reduce(events)
    back, enc, _ = round_trip(events)
    got, _ = reduce(back)
    if name == "fallback-message-id":
        assert got != expected  # the rule is needed
        got, expected = fallback_ids(got), fallback_ids(expected)
    assert got == expected
    for note in enc.notes:
        assert note.rule in RULES, note


JAVA = sorted((Path(__file__).resolve().parents[1] / "browser" / "streams").glob("java-react-*.jsonl"))


@pytest.mark.parametrize("path", JAVA, ids=lambda p: p.stem)
def test_recorded_java_streams_round_trip(path: Path) -> None:
    events = read_jsonl(path.read_bytes())
    expected, _ = reduce(events)
    assert reduce(round_trip(events)[0])[0] == expected


@pytest.mark.parametrize("seed", range(60))
def test_random_emitted_streams_round_trip(seed: int) -> None:
    events = base_streams(random.Random(seed))
    expected, _ = reduce(events)
    back, _, _ = round_trip(events)
    assert fallback_ids(reduce(back)[0]) == fallback_ids(expected)


def test_a_call_without_arguments_round_trips() -> None:
    """AgentScope Java's call that ends before its first fragment (tests/browser/streams, parallel calls): no
    arguments are ``{}`` to the reducer, with no raw text, and so they come back."""
    events = [
        {"type": "AGENT_START", "id": "1", "createdAt": AT, "replyId": "r"},
        {"type": "TOOL_CALL_START", "id": "2", "createdAt": AT, "replyId": "m", "toolCallId": "a", "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "id": "3", "createdAt": AT, "replyId": "m", "toolCallId": "a", "toolCallName": "f"},
        {"type": "AGENT_END", "id": "4", "createdAt": AT, "replyId": "r"},
    ]
    expected, _ = reduce(events)
    assert expected[0]["content"][0]["content"] is None
    assert reduce(round_trip(events)[0])[0] == expected
    assert {"type": "tool-input-available", "toolCallId": "a", "toolName": "f", "input": {}} in ai_sdk.encode(events)


def test_the_chunks_are_ui_message_chunks_and_parts_are_opened_before_use() -> None:
    for name in CASES:
        events = [e for e in events_of(load(name)) if isinstance(e, dict)]
        open_text: set[tuple[str, Any]] = set()
        open_calls: set[str] = set()
        for chunk in ai_sdk.encode(events):
            check_chunk(chunk)
            kind, key = chunk["type"], chunk.get("id")
            if kind in ("text-start", "reasoning-start"):
                assert (kind[:4], key) not in open_text, (name, chunk)
                open_text.add((kind[:4], key))
            elif kind.endswith(("-delta", "-end")) and kind.startswith(("text", "reasoning")):
                assert (kind[:4], key) in open_text, (name, chunk)
                if kind.endswith("-end"):
                    open_text.discard((kind[:4], key))
            elif kind == "finish-step":
                assert not open_text, (name, chunk)  # the AI SDK's reader forgets open parts at a step's end
            elif kind == "tool-input-start":
                open_calls.add(chunk["toolCallId"])
            elif kind.startswith("tool-output"):
                assert chunk["toolCallId"] in open_calls, (name, chunk)


def test_a_reply_as_the_ai_sdk_sees_it() -> None:
    events: list[dict[str, Any]] = [
        {"type": "AGENT_START", "id": "1", "createdAt": AT, "replyId": "r1", "name": "Friday"},
        {"type": "MODEL_CALL_START", "id": "2", "createdAt": AT, "replyId": "r1", "modelName": "m"},
        {"type": "THINKING_BLOCK_START", "id": "3", "createdAt": AT, "replyId": "r1", "blockId": "thinking"},
        {
            "type": "THINKING_BLOCK_DELTA",
            "id": "4",
            "createdAt": AT,
            "replyId": "r1",
            "blockId": "thinking",
            "delta": "hm",
        },
        {"type": "THINKING_BLOCK_END", "id": "5", "createdAt": AT, "replyId": "r1", "blockId": "thinking"},
        {"type": "TEXT_BLOCK_START", "id": "6", "createdAt": AT, "replyId": "r1", "blockId": "text"},
        {"type": "TEXT_BLOCK_DELTA", "id": "7", "createdAt": AT, "replyId": "r1", "blockId": "text", "delta": "Hi"},
        {"type": "TEXT_BLOCK_END", "id": "8", "createdAt": AT, "replyId": "r1", "blockId": "text"},
        {
            "type": "TOOL_CALL_START",
            "id": "9",
            "createdAt": AT,
            "replyId": "r1",
            "toolCallId": "c1",
            "toolCallName": "w",
        },
        {
            "type": "TOOL_CALL_DELTA",
            "id": "10",
            "createdAt": AT,
            "replyId": "r1",
            "toolCallId": "c1",
            "delta": '{"a":1}',
        },
        {"type": "TOOL_CALL_END", "id": "11", "createdAt": AT, "replyId": "r1", "toolCallId": "c1"},
        {
            "type": "MODEL_CALL_END",
            "id": "12",
            "createdAt": AT,
            "replyId": "r1",
            "usage": {"inputTokens": 3, "outputTokens": 4},
        },
        {
            "type": "TOOL_RESULT_START",
            "id": "13",
            "createdAt": AT,
            "replyId": "r1",
            "toolCallId": "c1",
            "toolCallName": "w",
        },
        {
            "type": "TOOL_RESULT_TEXT_DELTA",
            "id": "14",
            "createdAt": AT,
            "replyId": "r1",
            "toolCallId": "c1",
            "delta": "18C",
        },
        {
            "type": "TOOL_RESULT_END",
            "id": "15",
            "createdAt": AT,
            "replyId": "r1",
            "toolCallId": "c1",
            "state": "success",
        },
        {"type": "AGENT_END", "id": "16", "createdAt": AT, "replyId": "r1"},
    ]
    seen = [c for c in ai_sdk.encode(events) if c["type"] != ai_sdk.CARRIER]
    assert seen == [
        {"type": "start", "messageId": "r1"},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "thinking"},
        {"type": "reasoning-delta", "id": "thinking", "delta": "hm"},
        {"type": "reasoning-end", "id": "thinking"},
        {"type": "text-start", "id": "text"},
        {"type": "text-delta", "id": "text", "delta": "Hi"},
        {"type": "text-end", "id": "text"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "w"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":1}'},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "w", "input": {"a": 1}},
        {"type": "finish-step"},
        {"type": "tool-output-available", "toolCallId": "c1", "output": "18C"},
        {
            "type": "finish",
            "finishReason": "stop",
            "messageMetadata": {"usage": {"inputTokens": 3, "outputTokens": 4}, "model": "m"},
        },
    ]
    carried = [c for c in ai_sdk.encode(events) if c["type"] == ai_sdk.CARRIER]
    assert all(c["transient"] is True for c in carried)  # never part of a UIMessage


# the stream the reference note ran through `ai`'s readUIMessageStream, as another producer (no data-agentmsg) writes it
FOREIGN: list[dict[str, Any]] = [
    {"type": "start", "messageId": "msg-1"},
    {"type": "start-step"},
    {"type": "reasoning-start", "id": "r0"},
    {"type": "reasoning-delta", "id": "r0", "delta": "Think"},
    {"type": "reasoning-end", "id": "r0"},
    {"type": "text-start", "id": "t0"},
    {"type": "text-delta", "id": "t0", "delta": "Let me "},
    {"type": "text-delta", "id": "t0", "delta": "check."},
    {"type": "text-end", "id": "t0"},
    {"type": "tool-input-start", "toolCallId": "call_1", "toolName": "get_weather"},
    {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": '{"city":'},
    {"type": "tool-input-delta", "toolCallId": "call_1", "inputTextDelta": '"Paris"}'},
    {"type": "tool-input-available", "toolCallId": "call_1", "toolName": "get_weather", "input": {"city": "Paris"}},
    {"type": "tool-output-available", "toolCallId": "call_1", "output": {"temp": 18}},
    {"type": "source-url", "sourceId": "s1", "url": "https://example.com/w", "title": "W"},
    {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0KGgo="},
    {"type": "data-usage", "data": {"tokens": 5}},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "tool-calls", "messageMetadata": {"x": 1}},
]


def test_a_ui_stream_of_another_producer_reduces_to_its_parts() -> None:
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    events = [e for c in FOREIGN for e in dec.feed(c)] + dec.close()
    (msg,), r = reduce(events)
    assert r.problems == []
    assert msg["id"] == "msg-1"
    assert [b["type"] for b in msg["content"]] == ["thinking", "text", "tool_use", "tool_result", "image"]
    assert msg["content"][1]["text"] == "Let me check."
    assert msg["content"][2]["input"] == {"city": "Paris"}
    assert msg["content"][2]["content"] == '{"city":"Paris"}'
    assert msg["content"][3]["output"] == [{"type": "text", "text": '{"temp":18}'}]
    assert msg["content"][3]["name"] == "get_weather"
    assert msg["content"][4]["source"] == {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    assert msg["metadata"]["agentscope_generate_reason"] == "TOOL_CALLS"
    assert msg["metadata"]["agentmsg_grounding"] == {
        "provider": "ai-sdk",
        "sources": [{"sourceId": "s1", "url": "https://example.com/w", "title": "W"}],
    }
    custom = [e for e in events if e["type"] == "CUSTOM"]
    assert custom == [{**custom[0], "name": "usage", "value": {"tokens": 5}}]
    assert [(n.rule, n.pointer) for n in dec.notes] == [("ui-not-kept", "/18")]  # the messageMetadata
    assert len({e["id"] for e in events}) == len(events)  # minted ids: none dropped as a repeat


@pytest.mark.parametrize(
    ("chunk", "pointer", "rule"),
    [
        ({"type": "text-delta", "id": "t"}, "/1", "required"),
        ({"type": "text-delta", "id": "t", "delta": 5}, "/1/delta", "type"),
        ({"type": "text-bogus", "id": "t"}, "/1/type", "enum"),
        ({"id": "t"}, "/1", "required"),
        ({"type": 3}, "/1/type", "type"),
        ("text", "/1", "type"),
        ({"type": "finish", "finishReason": "done"}, "/1/finishReason", "enum"),
        ({"type": "tool-input-start", "toolCallId": "c"}, "/1", "required"),
        ({"type": "data-x"}, "/1", "required"),
        ({"type": "data-agentmsg", "data": 1}, "/1/data", "type"),
        (
            {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"deltas": True}}},
            "/1/data/fields/deltas",
            "type",
        ),
        (
            {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"deltas": [5]}}},
            "/1/data/fields/deltas",
            "type",
        ),
        (
            {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"end": 5}}},
            "/1/data/fields/end",
            "type",
        ),
        (
            {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"end": [1]}}},
            "/1/data/fields/end",
            "type",
        ),
    ],
)
def test_a_bad_chunk_is_a_note_or_in_strict_mode_an_error(chunk: Any, pointer: str, rule: str) -> None:
    stream = [{"type": "start", "messageId": "m"}, chunk, {"type": "finish"}]
    with pytest.raises(ValidationError) as info:
        ai_sdk.decode(stream, strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    dec = ai_sdk.AiSdkDecoder()
    events = [e for c in stream for e in dec.feed(c)]
    assert [(p.pointer, p.rule) for p in dec.notes] == [(pointer, rule)]
    assert [e["type"] for e in events] == ["AGENT_START", "AGENT_END"]


def test_the_encoder_takes_any_event_and_says_what_it_could_not_use() -> None:
    enc = ai_sdk.AiSdkEncoder()
    out = enc.feed("nope")  # type: ignore[arg-type]
    out += enc.feed({"type": "REPLY_START", "id": "x", "createdAt": AT})
    out += enc.feed({"type": "TEXT_BLOCK_DELTA", "id": "y", "createdAt": AT, "replyId": "r", "delta": "a"})
    # (the delta, which the reducer skips, opens no implicit reply: said as the reducer says it)
    assert [(p.pointer, p.rule) for p in enc.notes] == [
        ("/0", "type"),
        ("/1/type", "enum"),
        ("/2", "required"),
        ("/2", "ui-wrapped"),
    ]
    # what is an object is carried whole, so the reducer of the decoded stream reports it as it would have
    carried = [c["data"]["event"]["type"] for c in out if c["type"] == ai_sdk.CARRIER and "event" in c["data"]]
    assert carried == ["REPLY_START", "TEXT_BLOCK_DELTA"]
    assert [c["type"] for c in out] == [ai_sdk.CARRIER] * 2  # no UI message: no reply
    assert enc.close() == []
    assert enc.feed({"type": "AGENT_END", "id": "z", "createdAt": AT, "replyId": "r"}) == []
    assert enc.notes[-1].rule == "order"


def test_events_that_open_no_reply_get_no_ui_message() -> None:
    """Between replies, events the reducer opens no reply for (an END of a block not open, a TOOL_RESULT_END it
    skips for want of its state, after an AGENT_END a MODEL_CALL_END that would only open an empty reply) got an
    id-less ``start`` and a ``finish``, with the finish reason and usage of the reply before: the AI SDK's reader goes
    on with that message at such a start and took them again. They are carried whole, in no UI message, and said as
    the reducer says them; the decoded stream reduces to the same messages."""

    def ev(i: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, **keys}

    reply = [
        ev(0, "AGENT_START", replyId="r"),
        ev(1, "MODEL_CALL_START", replyId="r"),
        ev(2, "TEXT_BLOCK_DELTA", replyId="r", blockId="b", delta="hi"),
        ev(3, "MODEL_CALL_END", replyId="r", metadata={"finishReason": "length"}, usage={"inputTokens": 2}),
        ev(4, "AGENT_END", replyId="r"),
    ]
    stray = [
        ev(5, "TEXT_BLOCK_END", blockId="b"),
        ev(6, "TOOL_RESULT_END", toolCallId="c"),
        ev(7, "MODEL_CALL_END", usage={"inputTokens": 1}),
        ev(8, "THINKING_BLOCK_END", replyId="r", blockId="t"),
    ]
    finish = {"type": "finish", "finishReason": "length", "messageMetadata": {"usage": {"inputTokens": 2}}}
    for events, first in ((reply + stray, 5), (stray[:2] + stray[3:], 0)):  # (after a reply; at the stream's start)
        enc = ai_sdk.AiSdkEncoder()
        chunks = [c for e in events for c in enc.feed(e)] + enc.close()
        tail = chunks[chunks.index(finish) + 1 :] if first else chunks
        assert [c["data"]["event"] for c in tail if c["type"] == ai_sdk.CARRIER] == [
            {k: v for k, v in e.items() if k != "id"} for e in events[first:]
        ]
        assert [c["type"] for c in tail] == [ai_sdk.CARRIER] * len(events[first:])  # no start, no finish
        said = [(p.pointer, p.rule) for p in enc.notes if p.rule != "ui-wrapped"]
        assert said[-len(events[first:]) :] == [
            (f"/{first}/blockId", "order"),
            (f"/{first + 1}", "required"),
            (f"/{first + 2}", "after-end") if first else (f"/{first + 2}/blockId", "order"),
            *([(f"/{first + 3}/blockId", "order")] if first else []),
        ]
        expected, r = reduce(events)
        back, _, _ = round_trip(events)
        got, r2 = reduce(back)
        n = len(events[first:])  # (what the reducer says of them, it says of the decoded stream)
        assert got == expected and [p.rule for p in r2.problems][-n:] == [p.rule for p in r.problems][-n:]


def test_an_implicit_reply_s_finish_says_nothing_of_the_reply_before() -> None:
    """The finish reason, usage and model of a reply were kept past its AGENT_END (only an AGENT_START cleared
    them): the ``finish`` of an implicit reply after it said that reply's ``error``, usage and model, which the AI
    SDK's reader merges into the message it builds. An implicit reply starts afresh too."""

    def ev(i: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, **keys}

    events = [
        ev(0, "AGENT_START", replyId="r"),
        ev(1, "MODEL_CALL_START", replyId="r", modelName="m1"),
        ev(2, "MODEL_CALL_END", replyId="r", usage={"inputTokens": 2}),
        ev(3, "CUSTOM", replyId="r", name="agentmsg.error", value={"message": "x"}),
        ev(4, "AGENT_END", replyId="r"),
        ev(5, "TEXT_BLOCK_DELTA", blockId="b", delta="two"),
    ]
    finishes = [c for c in ai_sdk.encode(events) if c["type"] == "finish"]
    assert finishes == [
        {"type": "finish", "finishReason": "error", "messageMetadata": {"usage": {"inputTokens": 2}, "model": "m1"}},
        {"type": "finish", "finishReason": "stop"},
    ]
    expected, _ = reduce(events)
    assert [m["metadata"].get("agentmsg_errors") for m in expected] == [[{"message": "x"}], None]
    assert reduce(round_trip(events)[0])[0] == expected


#: an implicit reply whose model call has no replyId, after events that have one (docs/events.md rule 8: the reply is
#: named after its first event, no model call naming it); tests/jsclient/test_aisdk.py decodes it in TypeScript too
UNNAMED_MODEL_CALL: list[dict[str, Any]] = [
    {"type": "TOOL_CALL_START", "id": "e0", "createdAt": AT, "replyId": "m2", "toolCallId": "c", "toolCallName": "f"},
    {"type": "MODEL_CALL_START", "id": "e1", "createdAt": AT},
    {"type": "TEXT_BLOCK_DELTA", "id": "e2", "createdAt": AT, "replyId": "m2", "blockId": "b", "delta": "hi"},
    {"type": "MODEL_CALL_END", "id": "e3", "createdAt": AT},
]


def test_a_model_call_of_no_replyid_comes_back_without_one() -> None:
    """The decoder gives every event the replyId last carried; a MODEL_CALL_START of none, in an implicit reply
    whose events had one, came back with it and named the reply (``m2`` for ``msg-e0``). Its absence is carried
    (null, which the decoder drops, and which sticks: the next event's replyId is carried again)."""
    expected, _ = reduce(UNNAMED_MODEL_CALL)
    assert [m["id"] for m in expected] == ["msg-e0"]
    back, enc, _ = round_trip(UNNAMED_MODEL_CALL)
    assert [e.get("replyId", "-") for e in back if e["type"] == "MODEL_CALL_START"] == ["-"]
    assert [e["replyId"] for e in back if e["type"] == "TEXT_BLOCK_DELTA"] == ["m2"]
    assert reduce(back)[0] == expected
    assert ("/1", "ui-wrapped") in [(p.pointer, p.rule) for p in enc.notes]


def test_a_start_for_a_block_open_as_the_other_kind_is_ignored_as_the_reducer_ignores_it() -> None:
    """A TEXT_BLOCK_START for a block open as thinking (or the reverse): the reducer ignores it (that id is open,
    "started twice") and the thinking goes on. The encoder ended the reasoning part and opened a text part, which
    came back as an empty text block between two thinking blocks. It is carried as it came (rule order said), the
    reasoning part open as it is; a text delta of that id still ends it and starts a text part, as the reducer does."""

    events = [
        ev(0, "AGENT_START"),
        ev(1, "THINKING_BLOCK_START", blockId="b"),
        ev(2, "THINKING_BLOCK_DELTA", blockId="b", delta="one "),
        ev(3, "TEXT_BLOCK_START", blockId="b"),
        ev(4, "THINKING_BLOCK_DELTA", blockId="b", delta="two"),
        ev(5, "TEXT_BLOCK_DELTA", blockId="b", delta="text"),
        ev(6, "AGENT_END"),
    ]
    expected, _ = reduce(events)
    assert [b.get("thinking", b.get("text")) for b in expected[0]["content"]] == ["one two", "text"]
    back, enc, _ = round_trip(events)
    assert reduce(back)[0] == expected
    assert ("/3", "order") in [(p.pointer, p.rule) for p in enc.notes]
    parts = [(c["type"], c.get("id")) for c in ai_sdk.encode(events) if c["type"].startswith(("text", "reasoning"))]
    assert parts[:4] == [
        ("reasoning-start", "b"),
        ("reasoning-delta", "b"),
        ("reasoning-delta", "b"),
        ("reasoning-end", "b"),
    ]


def test_an_end_for_a_block_open_as_the_other_kind_ends_it_as_the_reducer_does() -> None:
    """A TEXT_BLOCK_END for a block open as thinking: the reducer ends that block (an END ends the block of its id),
    and a THINKING_BLOCK_START of that id then opens a new one. The encoder carried the END and left the reasoning
    part open, so that START was taken for a second one and sent nothing: the new block was lost. The END goes
    whole and the part ends for the UI only; the START opens a new part."""

    events = [
        ev(0, "AGENT_START"),
        ev(1, "THINKING_BLOCK_START", blockId="b"),
        ev(2, "THINKING_BLOCK_DELTA", blockId="b", delta="one"),
        ev(3, "TEXT_BLOCK_END", blockId="b", metadata={"k": 1}),
        ev(4, "THINKING_BLOCK_START", blockId="b"),
        ev(5, "THINKING_BLOCK_DELTA", blockId="b", delta="two"),
        ev(6, "AGENT_END"),
    ]
    expected, _ = reduce(events)
    assert [(b["thinking"], b["metadata"]) for b in expected[0]["content"]] == [("one", {"k": 1}), ("two", None)]
    back, enc, _ = round_trip(events)
    assert reduce(back)[0] == expected
    assert ("/3", "order") in [(p.pointer, p.rule) for p in enc.notes]
    parts = [c["type"] for c in ai_sdk.encode(events) if c["type"].startswith("reasoning")]
    assert parts == ["reasoning-start", "reasoning-delta", "reasoning-end"] * 2


def test_a_second_start_of_an_open_block_is_carried_so_the_reducer_says_it() -> None:
    """A second TEXT_BLOCK_START of an open block: the reducer ignores it and says so (rule order). The encoder
    dropped it, said nothing, and the reducer of the decoded stream had nothing to say. It is carried as it came
    (with its keys): the message is the same, and so is what the reducer says of it."""

    events = [
        ev(0, "AGENT_START"),
        ev(1, "TEXT_BLOCK_START", blockId="b"),
        ev(2, "TEXT_BLOCK_DELTA", blockId="b", delta="one"),
        ev(3, "TEXT_BLOCK_START", blockId="b", future=1),
        ev(4, "TEXT_BLOCK_END", blockId="b"),
        ev(5, "AGENT_END"),
    ]
    expected, r = reduce(events)
    got, r2 = reduce(round_trip(events)[0])
    assert got == expected
    said = [(p.rule, p.message) for p in r.problems]
    assert ("order", "text block 'b' started twice: the second START is ignored") in said
    assert [(p.rule, p.message) for p in r2.problems] == said


def test_a_custom_event_between_replies_gets_no_ui_message() -> None:
    """A CUSTOM event (no error) outside a reply: the reducer opens no reply for it. The encoder opened one for its
    ``data-<name>`` chunk, an id-less ``start`` and a ``finish`` the AI SDK's reader takes for the message before
    it. It goes whole, in no UI message, and comes back as the event it was."""
    events: list[dict[str, Any]] = [
        {"type": "AGENT_START", "id": "e0", "createdAt": AT, "replyId": "r"},
        {"type": "AGENT_END", "id": "e1", "createdAt": AT, "replyId": "r"},
        {"type": "CUSTOM", "id": "e2", "createdAt": AT, "replyId": "r", "name": "x", "value": {"k": 1}},
    ]
    chunks = ai_sdk.encode(events)
    assert [c["type"] for c in chunks] == [ai_sdk.CARRIER, "start", "finish", ai_sdk.CARRIER]
    back, _, _ = round_trip(events)
    assert [e for e in back if e["type"] == "CUSTOM"] == [{**events[2], "id": "ui-3"}]
    assert reduce(back)[0] == reduce(events)[0]


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", range(200))
def test_garbled_streams_never_break_the_encoder_or_the_ai_sdk_rules(seed: int) -> None:
    """The reducer differential's random streams (every event type, keys dropped, wrong values, replays, subagent
    events, Java's tool-call lifecycle and placeholders): the encoder never raises, every chunk is one the AI SDK's
    schema takes (the strict decoder reads them all), parts are opened before use, and the decoded events reduce."""
    from tests.jsclient.test_reducer import random_stream

    events = random_stream(random.Random(seed))
    chunks = ai_sdk.encode(events)
    for chunk in chunks:
        check_chunk(chunk)
    started: set[tuple[str, Any]] = set()
    calls: set[str] = set()
    for chunk in chunks:
        kind = chunk["type"]
        if kind.startswith(("text-", "reasoning-")):
            key = (kind.split("-")[0], chunk["id"])
            assert kind.endswith("-start") or key in started, (seed, chunk)
            (started.add if kind.endswith("-start") else started.discard)(key)
            if kind.endswith("-delta"):
                started.add(key)
        elif kind == "tool-input-start":
            calls.add(chunk["toolCallId"])
        elif kind.startswith("tool-output") or kind in ("tool-input-delta", "tool-input-available"):
            assert chunk["toolCallId"] in calls, (seed, chunk)
    assert reader_refusals(chunks) == [], seed  # (a ``start`` naming another message resets the AI SDK's reader)
    reduce(ai_sdk.decode(chunks, strict=True))


def test_a_failed_source_ends_with_an_error_chunk_and_done() -> None:
    enc = ai_sdk.AiSdkEncoder()
    enc.feed({"type": "AGENT_START", "id": "1", "createdAt": AT, "replyId": "r"})
    enc.feed({"type": "TEXT_BLOCK_DELTA", "id": "2", "createdAt": AT, "replyId": "r", "blockId": "t", "delta": "a"})
    tail = enc.fail("boom")
    assert tail[-1] == {"type": "error", "errorText": "boom"}
    assert ai_sdk.PROTOCOL.trailer("boom") == b"data: [DONE]\n\n"
    (msg,), _ = reduce(ai_sdk.decode([{"type": "start", "messageId": "r"}, *tail]))
    assert msg["metadata"]["agentmsg_errors"] == [{"message": "boom"}]
    assert msg["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


def test_agentmsg_reduce_reads_a_saved_ui_message_stream(tmp_path: Path) -> None:
    """``agentmsg reduce --protocol ai-sdk``: a saved body (SSE, [DONE] at its end, split anywhere) or its chunks
    as JSON lines reduce to what the AgentEvents reduce to; ``agentmsg.ui.detect`` names the protocol."""
    from tests._support.cli import run

    path = JAVA[0]
    events = read_jsonl(path.read_bytes())
    reduced = run("reduce", str(path))
    assert reduced.returncode == 0, reduced.stderr
    want = reduced.stdout
    sse, jsonl = tmp_path / "body.sse", tmp_path / "chunks.jsonl"
    sse.write_bytes(ai_sdk.encode_sse(events).replace(b"\n", b"\r\n"))
    jsonl.write_bytes(b"".join(orjson.dumps(c) + b"\n" for c in ai_sdk.encode(events)))
    for saved in (sse, jsonl):
        done = run("reduce", "--protocol", "ai-sdk", str(saved))
        assert (done.returncode, done.stdout, done.stderr) == (0, want, "")
    assert ui.detect(ai_sdk.encode(events)[0]) == "ai-sdk"
    assert ui.detect(FOREIGN[0]) == "ai-sdk" and ui.detect(events[0]) is None
    body = ai_sdk.encode_sse(events)
    for size in (1, 7, 64):
        pieces = [body[i : i + size] for i in range(0, len(body), size)]
        assert b"".join(ai_sdk.strip_done(pieces)) == body.replace(b"data: [DONE]", b"")


def test_finish_reasons() -> None:
    def finish_of(*events: dict[str, Any]) -> str:
        chunks = ai_sdk.encode(
            [
                {"type": "AGENT_START", "id": "a", "createdAt": AT, "replyId": "r"},
                *events,
                {"type": "AGENT_END", "id": "z", "createdAt": AT, "replyId": "r"},
            ]
        )
        return str(chunks[-1]["finishReason"])

    assert finish_of() == "stop"
    assert (
        finish_of({"type": "REQUEST_STOP", "id": "s", "createdAt": AT, "generateReason": "TOOL_CALLS"}) == "tool-calls"
    )
    assert (
        finish_of(
            {
                "type": "MODEL_CALL_END",
                "id": "m",
                "createdAt": AT,
                "replyId": "r",
                "metadata": {"finishReason": "length"},
            }
        )
        == "length"
    )
    assert finish_of({"type": "EXCEED_MAX_ITERS", "id": "x", "createdAt": AT}) == "other"
    assert (
        finish_of({"type": "CUSTOM", "id": "e", "createdAt": AT, "name": "agentmsg.error", "value": {"message": "x"}})
        == "error"
    )


def test_the_protocol_follows_the_contract_and_is_registered() -> None:
    protocol = ui.get("ai-sdk")
    assert protocol is ui.PROTOCOLS["ai-sdk"]
    assert protocol.name == ai_sdk.PROTOCOL.name
    assert isinstance(protocol, UIProtocol)
    assert isinstance(protocol.encoder(), Encoder)
    assert isinstance(protocol.decoder(), Decoder)
    assert ("x-vercel-ai-ui-message-stream", "v1") in protocol.response_headers
    assert protocol.resumable is False
    assert protocol.frame({"type": "start"}, 7) == b'data: {"type":"start"}\n\n'
    for rule in (ai_sdk.CARRIED_RULE, ai_sdk.NOT_KEPT_RULE):
        assert rule in RULES


def test_the_endpoint_speaks_it_over_http() -> None:
    """EventEndpoint ``?protocol=ai-sdk`` under uvicorn: the AI SDK's header, ``data:`` frames without ids, the
    chunks the encoder makes, ``[DONE]`` last; a source that raises ends with an ``error`` chunk, then ``[DONE]``;
    a ``Last-Event-ID`` is refused (400: the protocol does not resume by it)."""
    from collections.abc import AsyncIterator

    from agentmsg.web import EventEndpoint
    from tests.web._http import get, serving, starlette_app

    events = [
        {"type": "AGENT_START", "id": "1", "createdAt": AT, "replyId": "r"},
        {"type": "TEXT_BLOCK_DELTA", "id": "2", "createdAt": AT, "replyId": "r", "blockId": "t", "delta": "Hi"},
    ]

    async def failing() -> AsyncIterator[dict[str, Any]]:
        for e in events:
            yield e
        raise RuntimeError("model down")

    whole = [*events, {**events[0], "type": "AGENT_END", "id": "3"}]
    with serving(starlette_app(EventEndpoint(whole))) as port:
        ok = get(port, "/events?protocol=ai-sdk")
        resumed = get(port, "/events?protocol=ai-sdk", {"Last-Event-ID": "2"})
    assert ok.status == 200 and ok.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert ok.headers["content-type"].startswith("text/event-stream")
    assert ok.raw.endswith(b"\n\ndata: [DONE]\n\n") and b"\nid:" not in ok.raw and not ok.raw.startswith(b"id:")
    assert list(ai_sdk.iter_chunks(ok.raw)) == ai_sdk.encode(whole)
    assert resumed.status == 400
    with serving(starlette_app(EventEndpoint(failing()))) as port:
        failed = get(port, "/events?protocol=ai-sdk")
    chunks = list(ai_sdk.iter_chunks(failed.raw))
    assert chunks[-1]["type"] == "error" and "model down" in chunks[-1]["errorText"]
    assert failed.raw.endswith(b"data: [DONE]\n\n")
    (msg,), _ = reduce(ai_sdk.decode(chunks))
    assert msg["content"] == [{"type": "text", "text": "Hi"}]
    assert msg["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"


@pytest.mark.parametrize("strict", [False, True])
def test_a_value_orjson_cannot_write_is_sent_as_javascript_writes_it(strict: bool) -> None:
    """A tool's input or output given as a value is sent on as its JSON text: one holding a lone surrogate (which
    iter_chunks lets through, as JSON.parse does) or an integer beyond 64 bits raised orjson's TypeError from the
    decoder, tolerant or strict. Now written as JSON.stringify writes it (the surrogate as its escape)."""
    stream: list[dict[str, Any]] = [
        {"type": "start", "messageId": "m"},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": [2**70]},
        {"type": "tool-output-available", "toolCallId": "c", "output": {"text": "\ud83d", "n": 2**64}},
        {"type": "tool-output-denied", "toolCallId": "d", "errorText": None},
        {"type": "finish"},
    ]
    events = ai_sdk.decode(stream, strict=strict)
    deltas = [e["delta"] for e in events if e["type"] in ("TOOL_CALL_DELTA", "TOOL_RESULT_TEXT_DELTA")]
    assert deltas == [f"[{2**70}]", '{"text":"\\ud83d","n":18446744073709551616}']  # (a null errorText: no text)
    assert json.loads(deltas[1]) == {"text": "\ud83d", "n": 2**64}


def reader_refusals(chunks: list[dict[str, Any]]) -> list[str]:
    """What the AI SDK's ``readUIMessageStream`` refuses in ``chunks`` (its UIMessageStreamErrors): a ``start``
    naming another message than the one it builds starts a new one, which has none of the earlier parts; a text
    or reasoning chunk needs its part started in the message, a tool chunk its call."""
    refused: list[str] = []
    message_id = ""
    parts: set[tuple[str, str]] = set()
    calls: set[str] = set()
    partial: set[str] = set()
    for n, chunk in enumerate(chunks):
        kind = chunk["type"]
        if kind == "start":
            if chunk.get("messageId") is not None and chunk["messageId"] != message_id:
                message_id = chunk["messageId"]
                parts, calls, partial = set(), set(), set()
        elif kind.startswith(("text-", "reasoning-")):
            key = (kind.split("-")[0], chunk["id"])
            if kind.endswith("-start"):
                parts.add(key)
            elif key not in parts:
                refused.append(f"{n}: {kind} of {chunk['id']!r}, no such part")
            elif kind.endswith("-end"):
                parts.discard(key)
        elif kind == "tool-input-start":
            calls.add(chunk["toolCallId"])
            partial.add(chunk["toolCallId"])
        elif kind == "tool-input-delta" and chunk["toolCallId"] not in partial:
            refused.append(f"{n}: tool-input-delta of {chunk['toolCallId']!r}, no such call")
        elif kind in ("tool-input-available", "tool-input-error"):
            calls.add(chunk["toolCallId"])
            partial.discard(chunk["toolCallId"])
        elif kind.startswith("tool-output-") and chunk["toolCallId"] not in calls:
            refused.append(f"{n}: {kind} of {chunk['toolCallId']!r}, no such call")
    return refused


def test_a_reply_after_a_cut_one_or_a_pause_is_a_message_the_ai_sdk_reads() -> None:
    """A reply cut (no AGENT_END) and the next reply, with the same block and call ids, as a log of attempts has
    them; then a reply paused for a confirmation and the next one giving its call's result. The AI SDK's reader
    starts a new message at each ``start``: nothing of the earlier one is ended or continued after it (the cut
    reply's parts were ended after the next ``start``, and its call's output sent in a message without it), and
    the round trip keeps the messages."""

    def event(n: int, kind: str, reply: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"{reply}-{n}", "createdAt": AT, "replyId": reply, **keys}

    def attempt(reply: str, *, cut: bool) -> list[dict[str, Any]]:
        events = [
            event(0, "AGENT_START", reply),
            event(1, "MODEL_CALL_START", reply),
            event(2, "THINKING_BLOCK_START", reply, blockId="b0"),
            event(3, "THINKING_BLOCK_DELTA", reply, blockId="b0", delta="hm"),
            event(4, "TEXT_BLOCK_START", reply, blockId="b1"),
            event(5, "TEXT_BLOCK_DELTA", reply, blockId="b1", delta=f"hi {reply}"),
            event(6, "TOOL_CALL_START", reply, toolCallId="c1", toolCallName="f"),
            event(7, "TOOL_CALL_DELTA", reply, toolCallId="c1", delta='{"a"'),
        ]
        if cut:
            return events
        return [
            *events,
            event(8, "TOOL_CALL_DELTA", reply, toolCallId="c1", delta=":1}"),
            event(9, "TOOL_CALL_END", reply, toolCallId="c1"),
            event(10, "TEXT_BLOCK_END", reply, blockId="b1"),
            event(11, "THINKING_BLOCK_END", reply, blockId="b0"),
            event(12, "MODEL_CALL_END", reply),
            event(13, "REQUIRE_USER_CONFIRM", reply, toolCalls=[{"type": "tool_use", "id": "c1", "name": "f"}]),
            event(14, "AGENT_END", reply),
        ]

    resumed = [
        event(0, "AGENT_START", "r3"),
        event(1, "TOOL_RESULT_START", "r3", toolCallId="c1", toolCallName="f"),
        event(2, "TOOL_RESULT_TEXT_DELTA", "r3", toolCallId="c1", delta="ok"),
        event(3, "TOOL_RESULT_END", "r3", toolCallId="c1", state="success"),
        event(4, "AGENT_END", "r3"),
    ]
    events = [*attempt("r1", cut=True), *attempt("r2", cut=False), *resumed]
    chunks = ai_sdk.encode(events)
    for chunk in chunks:
        check_chunk(chunk)
    assert reader_refusals(chunks) == []
    r2 = chunks[[c.get("messageId") for c in chunks].index("r2") :]
    assert [c["type"] for c in r2 if c["type"] != ai_sdk.CARRIER][:4] == [
        "start", "start-step", "reasoning-start", "reasoning-delta",
    ]  # fmt: skip
    back, _, _ = round_trip(events)
    messages = reduce(events)[0]
    assert reduce(back)[0] == messages
    assert [(m["id"], m["metadata"].get("agentscope_generate_reason")) for m in messages] == [
        ("r1", "INTERRUPTED"), ("r2", "PERMISSION_ASKING"), ("r3", None),
    ]  # fmt: skip


class Counted(str):
    """A delta that counts the characters a ``+`` copies in front of it (``text + delta``): what joining deltas
    one concatenation at a time costs, n²/2 characters over n deltas, where joining them once copies none."""

    copied = 0

    def __radd__(self, left: str) -> str:
        Counted.copied += len(left)
        return str.__add__(left, self)


def test_long_tool_arguments_and_results_are_joined_in_linear_work() -> None:
    """A tool call's argument deltas and a tool result's text deltas are joined once, not one ``+`` at a time:
    4,000 deltas of 10 characters each copied 80 million characters before (quadratic: 2.3 s for 40,000 of 100)."""
    n, piece = 4000, "0123456789"

    def event(i: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": "r", **keys}

    call = {"toolCallId": "c", "toolCallName": "f"}
    events = [event(0, "AGENT_START"), event(1, "MODEL_CALL_START"), event(2, "TOOL_CALL_START", **call)]
    events += [event(3 + i, "TOOL_CALL_DELTA", **call, delta=Counted(piece)) for i in range(n)]
    events += [event(n + 3, "TOOL_CALL_END", **call), event(n + 4, "TOOL_RESULT_START", **call)]
    events += [event(n + 5 + i, "TOOL_RESULT_TEXT_DELTA", **call, delta=Counted(piece)) for i in range(n)]
    events += [event(2 * n + 5, "TOOL_RESULT_END", **call, state="success"), event(2 * n + 6, "AGENT_END")]
    Counted.copied = 0
    chunks = ai_sdk.encode(events)
    assert Counted.copied <= 2 * n * len(piece)
    (error,) = [c for c in chunks if c["type"] == "tool-input-error"]
    assert error["input"] == piece * n
    (output,) = [c for c in chunks if c["type"] == "tool-output-available"]
    assert output["output"] == piece * n


def test_what_only_opens_an_empty_reply_after_an_end_goes_in_no_message() -> None:
    """After AGENT_END, an event that brings a reply nothing (a late AGENT_RESULT, MODEL_CALL_END, REQUEST_STOP, an
    ``agentmsg.error``) opens no reply for the reducer (rule after-end): the encoder carries it whole, outside any
    UI message. It opened an implicit reply, so the next reply's message took its stop reason, usage and error
    (the vector after-end-opens-nothing failed the round trip)."""
    events: list[dict[str, Any]] = [
        {"type": "AGENT_START", "id": "1", "createdAt": AT, "replyId": "r1"},
        {"type": "AGENT_END", "id": "2", "createdAt": AT, "replyId": "r1"},
        {"type": "MODEL_CALL_END", "id": "3", "createdAt": AT, "replyId": "r1", "usage": {"inputTokens": 1}},
        {"type": "REQUEST_STOP", "id": "4", "createdAt": AT, "generateReason": "INTERRUPTED", "reason": "late"},
        {"type": "CUSTOM", "id": "5", "createdAt": AT, "name": "agentmsg.error", "value": {"message": "late"}},
        {"type": "TEXT_BLOCK_START", "id": "6", "createdAt": AT, "replyId": "r2", "blockId": "t"},
        {"type": "TEXT_BLOCK_DELTA", "id": "7", "createdAt": AT, "replyId": "r2", "blockId": "t", "delta": "x"},
        {"type": "TEXT_BLOCK_END", "id": "8", "createdAt": AT, "replyId": "r2", "blockId": "t"},
    ]
    chunks = ai_sdk.encode(events)
    after = chunks[[c["type"] for c in chunks].index("finish") + 1 :]
    assert [c["data"]["event"]["type"] for c in after[:3]] == ["MODEL_CALL_END", "REQUEST_STOP", "CUSTOM"]
    assert after[3:5] == [ai_sdk._UI_ONLY | {"data": {"uiOnly": True, "opener": "6"}}, {"type": "start"}]
    expected, r = reduce(events)
    assert [p.rule for p in r.problems].count("after-end") == 3
    back, _, _ = round_trip(events)
    assert fallback_ids(reduce(back)[0]) == fallback_ids(expected)
    assert reduce(back)[0][1]["metadata"] == {} and reduce(back)[0][1]["usage"] is None


def test_a_tool_chunk_s_keys_no_event_keeps_are_said() -> None:
    """The AI SDK's tool chunks may carry ``title``, ``toolMetadata``, ``dynamic`` and ``providerExecuted`` (ai 7's
    uiMessageChunkSchema). No AgentEvent keeps them: each is said once (rule ``ui-not-kept``) on whichever tool
    chunk brings it. Only ``providerExecuted`` on a ``tool-input-start`` was said; the rest went without a word."""
    chunks: list[dict[str, Any]] = [
        {"type": "start", "messageId": "m"},
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "title": "Weather"},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": {}, "toolMetadata": {"v": 1}},
        {"type": "tool-output-available", "toolCallId": "c", "output": "18C", "providerExecuted": True, "dynamic": True},
        {"type": "finish"},
    ]  # fmt: skip
    for chunk in chunks:
        check_chunk(chunk)
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    events = [e for c in chunks for e in dec.feed(c)] + dec.close()
    said = [(n.pointer, n.rule, n.message) for n in dec.notes]
    assert said == [
        ("/1", "ui-not-kept", 'title "Weather" of tool call "c": a tool call\'s display title'),
        ("/2", "ui-not-kept", 'toolMetadata {"v":1} of tool call "c": a tool\'s own data on a call'),
        ("/3", "ui-not-kept", "providerExecuted: a tool the provider ran, read as a call"),
        ("/3", "ui-not-kept", "dynamic: a tool the app did not declare, read as a call"),
    ]
    ((call, result),) = [m["content"] for m in reduce(events)[0]]
    assert (call["name"], result["output"]) == ("f", [{"type": "text", "text": "18C"}])


def test_a_tool_call_s_title_and_metadata_are_quoted_once_per_call_and_value() -> None:
    """A call's ``title`` and ``toolMetadata`` were said once per stream, without their value: the title of every
    call but the first, and the text of all of them, were lost without a word. Each is now quoted in its note (as
    JSON, at most 200 characters, ``...`` saying the cut) with its call's id, once per call and value; the same notes
    as the TypeScript decoder's (sdk/typescript/test/aisdk.test.mjs, tests/jsclient/test_aisdk.py)."""
    meta = {"doc": "x" * 300}
    chunks: list[dict[str, Any]] = [
        {"type": "start", "messageId": "m"},
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "title": "Weather"},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": {}, "title": "Weather"},
        {"type": "tool-input-start", "toolCallId": "d", "toolName": "f", "title": "Weather"},
        {"type": "tool-input-available", "toolCallId": "d", "toolName": "f", "input": {}, "title": "Forecast \"3 days\""},
        {"type": "tool-output-available", "toolCallId": "d", "output": 1, "toolMetadata": meta},
        {"type": "finish"},
    ]  # fmt: skip
    notes = _notes_of_valid(chunks)
    shown = ('{"doc":"' + "x" * 300)[:200]
    assert notes == [
        ("/1", "ui-not-kept", 'title "Weather" of tool call "c": a tool call\'s display title'),
        ("/3", "ui-not-kept", 'title "Weather" of tool call "d": a tool call\'s display title'),
        ("/4", "ui-not-kept", 'title "Forecast \\"3 days\\"" of tool call "d": a tool call\'s display title'),
        ("/5", "ui-not-kept", f'toolMetadata {shown}... of tool call "d": a tool\'s own data on a call'),
    ]


def test_an_approval_request_s_descriptor_schema_input_and_automatic_flag_are_quoted() -> None:
    """ai 7's ``tool-approval-request`` may carry ``approvalDescriptor`` and ``inputSchemaInput`` (any JSON) and
    ``isAutomatic`` (a boolean), which no AgentEvent keeps: they were left out without a word. They are now quoted
    in the chunk's note with its ``reason`` and ``signature``; an ``isAutomatic`` that is no boolean is refused, as
    uiMessageChunkSchema refuses it."""
    chunk = {
        "type": "tool-approval-request",
        "approvalId": "a",
        "toolCallId": "c",
        "approvalDescriptor": {"action": "rm", "paths": ["/tmp"]},
        "inputSchemaInput": "s",
        "isAutomatic": True,
    }
    check_chunk(chunk)
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    assert dec.feed(chunk) == []
    assert [(n.pointer, n.rule, n.message) for n in dec.notes] == [
        (
            "/0",
            "ui-not-kept",
            'tool-approval-request: an approval the UI asks for; approvalDescriptor {"action":"rm","paths":["/tmp"]},'
            ' inputSchemaInput "s", isAutomatic true',
        )
    ]
    with pytest.raises(ValidationError) as info:
        ai_sdk.decode([{**chunk, "isAutomatic": "yes"}], strict=True)
    assert [(p.pointer, p.rule, p.message) for p in info.value.problems] == [
        ("/0/isAutomatic", "type", "isAutomatic must be a boolean")
    ]


def test_a_chunk_s_values_in_a_refusal_are_quoted_as_json() -> None:
    """A refusal's message quoted the chunk's values as Python writes them (``'done'``, ``['content-filter', ...]``)
    and the TypeScript decoder as JSON (``"done"``): the same notes in two wordings. Both now quote as JSON, at most
    200 characters (a type of 10,000 characters was said whole)."""
    cases = [
        ({"type": "finish", "finishReason": "done"}, "/0/finishReason", "enum", 'finishReason "done" is not one of '
         '"content-filter", "error", "interrupted", "length", "other", "stop", "tool-calls"'),
        ({"type": "text-delta", "id": "t"}, "/0", "required", 'a text-delta chunk needs "delta"'),
        ({"type": "x" * 10_000}, "/0/type", "enum",
         '"' + "x" * 200 + '"... is no UI message chunk type (ai 7: uiMessageChunkSchema)'),
    ]  # fmt: skip
    for chunk, pointer, rule, message in cases:
        dec = ai_sdk.AiSdkDecoder()
        assert dec.feed(chunk) == []
        assert [(n.pointer, n.rule, n.message) for n in dec.notes] == [(pointer, rule, message)]
    dec = ai_sdk.AiSdkDecoder(clock=lambda: AT)
    dec.feed({"type": "start"})
    dec.feed({"type": "finish", "finishReason": "length"})
    assert [n.message for n in dec.notes] == ['finishReason "length": agentmsg\'s generate reasons have none for it']


def test_a_tool_output_nested_as_deep_as_json_text_allows_is_read() -> None:
    """A stream's JSON text may nest 1,024 levels (orjson's reader); a tool output that deep (no string, so the
    decoder writes it as JSON text) went past orjson's writer (255 levels) and then ``json.dumps``'s recursion: the
    decoder raised RecursionError. It is now written with a stack: the result holds the output's JSON text."""
    depth = 1000
    body = (
        b'data: {"type":"start","messageId":"m"}\n\n'
        + b'data: {"type":"tool-output-available","toolCallId":"c","output":'
        + b"[" * depth
        + b"1"
        + b"]" * depth
        + b"}\n\n"
        + b'data: {"type":"finish"}\n\ndata: [DONE]\n\n'
    )
    events = ai_sdk.decode(ai_sdk.iter_chunks(body), strict=True)
    ((result,),) = [m["content"] for m in reduce(events)[0]]
    assert result["output"] == [{"type": "text", "text": "[" * depth + "1" + "]" * depth}]
    nested: Any = 1
    for _ in range(5000):  # (deeper than any JSON text holds: events given as Python objects)
        nested = {"k": [nested]}
    frame = ai_sdk.PROTOCOL.frame({"type": "data-x", "data": nested}, 1).decode()
    assert frame == 'data: {"type":"data-x","data":' + '{"k":[' * 5000 + "1" + "]}" * 5000 + "}\n\n"


def test_a_usage_sum_a_javascript_number_cannot_hold_is_left_out_of_finish_with_a_note() -> None:
    """The finish chunk's usage is summed over the reply's model calls: three inputTokens of 2^63-1 summed past
    what JSON writes, and ``frame`` raised TypeError ("the event is not JSON") on the finish chunk, breaking the
    stream; a time summed to inf was written as null, and a count past 2^53-1 reached the page inexact, both unsaid.
    Each is now left out with a note (rule ``maximum``), as the AG-UI encoder does with its counts."""
    events: list[dict[str, Any]] = [{"type": "AGENT_START", "id": "e", "createdAt": AT, "replyId": "r"}]
    for i in range(3):
        events += [
            {"type": "MODEL_CALL_START", "id": f"s{i}", "createdAt": AT, "replyId": f"m{i}"},
            {
                "type": "MODEL_CALL_END",
                "id": f"e{i}",
                "createdAt": AT,
                "replyId": f"m{i}",
                "usage": {"inputTokens": 2**63 - 1, "outputTokens": 2, "time": 1e308, "cachedTokens": 2**52},
            },
        ]
    events.append({"type": "AGENT_END", "id": "z", "createdAt": AT, "replyId": "r"})
    protocol = ui.get("ai-sdk")
    encoder = protocol.encoder()
    chunks = [chunk for event in events for chunk in encoder.feed(event)] + encoder.close()
    frames = [protocol.frame(chunk, n) for n, chunk in enumerate(chunks, 1)]
    (finish,) = [c for c in chunks if c["type"] == "finish"]
    assert finish["messageMetadata"] == {"usage": {"outputTokens": 6}}
    assert b'"outputTokens":6' in frames[chunks.index(finish)]
    assert sorted(n.message.split()[1] for n in encoder.notes if n.rule == "maximum") == [
        "cachedTokens",
        "inputTokens",
        "time",
    ]
    assert all(n.pointer == "/7" for n in encoder.notes if n.rule == "maximum")


def test_a_media_block_in_a_reply_nothing_names_is_sent_as_a_file() -> None:
    """A DATA_BLOCK_START holding a whole media block, without a replyId, in a reply without one (an AGENT_START
    with no replyId, or none at all): the encoder raised KeyError ('replyId') and broke the stream, where it never
    raises. The block is now a ``file`` chunk, and the round trip gives the reducer's message."""
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    openings: list[list[dict[str, Any]]] = [[], [{"type": "AGENT_START", "id": "s", "createdAt": AT}]]
    for opening in openings:
        events: list[dict[str, Any]] = [
            *opening,
            {"type": "DATA_BLOCK_START", "id": "d", "createdAt": AT, "blockId": "b", "block": image},
            {"type": "DATA_BLOCK_END", "id": "e", "createdAt": AT, "blockId": "b"},
        ]
        back, _, _ = round_trip(events)
        chunks = ai_sdk.encode(events)
        assert [c["url"] for c in chunks if c["type"] == "file"] == ["https://example.com/a.png"]
        for chunk in chunks:
            check_chunk(chunk)
        assert fallback_ids(reduce(back)[0]) == fallback_ids(reduce(events)[0])


def test_the_text_of_an_abort_an_approval_and_a_text_encoded_call_is_quoted_in_a_note() -> None:
    """ai 7's chunks carry text no AgentEvent keeps: an ``abort``'s ``reason``, a ``tool-approval-request``'s
    ``reason`` and ``signature``, a ``tool-approval-response``'s ``reason``, and a ``tool-input-start``'s
    ``inputEncoding`` (``text``: the call's input deltas are plain text, not JSON). The first three were said by one
    note per chunk kind, without their text (a second abort with another reason: nothing); ``inputEncoding`` by
    none. Each is now quoted in its note (JSON text of its first 200 characters, ``...`` saying the cut), said once
    per value; ``json``, what the decoder reads deltas as, needs no note. sdk/typescript/test/aisdk.test.mjs
    expects the same notes of the TypeScript decoder."""
    long = "stop " * 50
    chunks: list[dict[str, Any]] = [
        {"type": "start", "messageId": "m"},
        {"type": "tool-input-start", "toolCallId": "c", "toolName": "shell", "inputEncoding": "text"},
        {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": "ls -l"},
        {"type": "tool-input-available", "toolCallId": "c", "toolName": "shell", "input": "ls -l"},
        {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c", "reason": "runs \"ls\"", "signature": "c2ln"},
        {"type": "tool-approval-response", "approvalId": "a", "approved": False, "reason": "not now"},
        {"type": "tool-input-start", "toolCallId": "d", "toolName": "f", "inputEncoding": "json"},
        {"type": "abort", "reason": "user stop"},
        {"type": "abort", "reason": long},
        {"type": "abort", "reason": "user stop"},
        {"type": "abort"},
        {"type": "abort", "reason": "\ud800" + "\U0001f600" * 250},  # (a lone surrogate, then astral characters)
    ]  # fmt: skip
    notes = _notes_of_valid(chunks)
    aborted = "abort: the stream was aborted (the reply stays cut: INTERRUPTED)"
    smiles = "\U0001f600" * 199
    assert notes == [
        (
            "/1",
            "ui-not-kept",
            'inputEncoding "text" of tool call "c": its input streamed as plain text, not JSON (no AgentEvent says'
            " so: the reducer reads the text as JSON arguments)",
        ),
        (
            "/4",
            "ui-not-kept",
            'tool-approval-request: an approval the UI asks for; reason "runs \\"ls\\"", signature "c2ln"',
        ),
        ("/5", "ui-not-kept", 'tool-approval-response: an approval the UI gave; reason "not now"'),
        ("/7", "ui-not-kept", f'{aborted}; reason "user stop"'),
        ("/8", "ui-not-kept", f'{aborted}; reason "{long[:200]}"...'),
        ("/10", "ui-not-kept", aborted),
        ("/11", "ui-not-kept", f'{aborted}; reason "\\ud800{smiles}"...'),
    ]


@pytest.mark.parametrize(
    ("chunk", "pointer", "rule"),
    [
        ({"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "inputEncoding": "yaml"}, "/0/inputEncoding", "enum"),
        ({"type": "abort", "reason": 5}, "/0/reason", "type"),
        ({"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c", "signature": {}}, "/0/signature", "type"),
        ({"type": "tool-approval-response", "approvalId": "a", "approved": True, "reason": ["x"]}, "/0/reason", "type"),
        # ai 7's toolMetadata is a record of JSON values: an object, on each tool chunk that has one
        ({"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "toolMetadata": "v"}, "/0/toolMetadata", "type"),
        ({"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": {}, "toolMetadata": [1]}, "/0/toolMetadata", "type"),
        ({"type": "tool-input-error", "toolCallId": "c", "toolName": "f", "input": "x", "errorText": "e", "toolMetadata": 1}, "/0/toolMetadata", "type"),
        ({"type": "tool-output-available", "toolCallId": "c", "output": 1, "toolMetadata": True}, "/0/toolMetadata", "type"),
        ({"type": "tool-output-error", "toolCallId": "c", "errorText": "e", "toolMetadata": "v"}, "/0/toolMetadata", "type"),
    ],
)  # fmt: skip
def test_a_reason_signature_or_input_encoding_the_ai_sdk_refuses_is_refused(
    chunk: dict[str, Any], pointer: str, rule: str
) -> None:
    """What uiMessageChunkSchema refuses of the keys now quoted (a reason or signature that is no string, an
    ``inputEncoding`` other than ``json`` and ``text``, a ``toolMetadata`` that is no object: it was quoted as a
    value no event keeps, the chunk read) is refused with pointer and rule, as the AI SDK's reader
    refuses the chunk; the tolerant decoder notes it and skips the chunk."""
    with pytest.raises(ValidationError) as info:
        ai_sdk.decode([chunk], strict=True)
    assert [(p.pointer, p.rule) for p in info.value.problems] == [(pointer, rule)]
    dec = ai_sdk.AiSdkDecoder()
    assert dec.feed(chunk) == []
    assert [(n.pointer, n.rule) for n in dec.notes] == [(pointer, rule)]


def test_a_carrier_adds_what_the_chunk_lacks_and_never_contradicts_it() -> None:
    """A ``data-agentmsg`` carrier's ``rest`` set any key of the next event of its type, ``type`` and ``delta``
    included: a ``text-delta`` the AI SDK's reader shows as "hi" decoded to a TOOL_CALL_DELTA "rm -rf". It now adds
    keys, and sets only what the decoder mints or takes from its context (``id``, ``createdAt``, ``replyId``) and
    what the chunk holds only in part (an error's value with the same message); what contradicts the chunk is not
    applied and said."""
    dec = ai_sdk.AiSdkDecoder(clock=lambda: AT)
    events = [e for c in AISDK_CONTRADICTED for e in dec.feed(c)]
    assert [(e["type"], e.get("replyId"), e.get("delta"), e.get("input"), e.get("value")) for e in events] == [
        ("AGENT_START", "r", None, None, None),
        ("MODEL_CALL_START", "step", None, None, None),
        ("TEXT_BLOCK_START", "step", None, None, None),
        ("TEXT_BLOCK_DELTA", "step", "hi", None, None),
        ("TOOL_CALL_START", "step", None, None, None),
        ("TOOL_CALL_END", "step", None, {"a": 1}, None),
        ("CUSTOM", None, None, None, {"message": "boom"}),
        ("CUSTOM", None, None, None, {"message": "boom", "code": 5}),
        ("CUSTOM", None, None, None, {"message": "boom"}),
    ]
    assert (events[0]["sessionId"], events[3]["id"], events[3]["x"], events[3]["blockId"]) == ("s", "e1", 1, "t")
    conflict = "ui-carrier-conflict"
    assert [(p.pointer, p.rule, p.message) for p in dec.notes] == [
        ("/1", conflict, 'data-agentmsg "replyId" "other" contradicts AGENT_START "r": not applied'),
        (
            "/3",
            conflict,
            'data-agentmsg "type" "AGENT_END" contradicts MODEL_CALL_START "MODEL_CALL_START": not applied',
        ),
        (
            "/6",
            conflict,
            'data-agentmsg "type" "TOOL_CALL_DELTA" contradicts TEXT_BLOCK_DELTA "TEXT_BLOCK_DELTA": not applied',
        ),
        ("/6", conflict, 'data-agentmsg "delta" "rm -rf" contradicts TEXT_BLOCK_DELTA "hi": not applied'),
        ("/6", conflict, 'data-agentmsg "blockId" "t2" contradicts TEXT_BLOCK_DELTA "t": not applied'),
        ("/8", conflict, 'data-agentmsg "toolCallName" "g" contradicts TOOL_CALL_END "f": not applied'),
        ("/8", conflict, 'data-agentmsg "input" {"path":"/"} contradicts TOOL_CALL_END {"a":1}: not applied'),
        (
            "/10",
            conflict,
            'data-agentmsg "value" {"message":"other"} contradicts CUSTOM {"message":"boom"}: not applied',
        ),
    ]
    strict = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    with pytest.raises(ValidationError) as raised:
        for c in AISDK_CONTRADICTED:
            strict.feed(c)
    assert [(p.pointer, p.rule) for p in raised.value.problems] == [("/1", conflict)]


def test_a_carried_tool_name_is_the_one_the_chunk_shows_or_not_applied() -> None:
    """A TOOL_CALL_END decoded from ``tool-input-available`` names the call only when the chunk names it otherwise
    than its start, so a carried ``toolCallName`` was an addition, even one other than the name the chunk shows (the
    AI SDK's reader renames the part to it). Now a carried name the reducer would take that is not the chunk's is
    not applied and said; the same name, or a placeholder the reducer never takes, is. The encoder shows an END's
    own name in the chunk, no longer carries it: the round trip keeps it, with no note."""
    rest = {"type": "data-agentmsg", "transient": True}
    call = {"toolCallId": "c", "toolName": "f"}
    stream: list[dict[str, Any]] = [
        {"type": "start", "messageId": "r"},
        {"type": "tool-input-start", **call},
        {**rest, "data": {"rest": "TOOL_CALL_END", "fields": {"toolCallName": "rm"}}},
        {"type": "tool-input-available", **call, "input": {}},
        {"type": "tool-input-start", "toolCallId": "d", "toolName": "f"},
        {**rest, "data": {"rest": "TOOL_CALL_END", "fields": {"toolCallName": "f"}}},
        {"type": "tool-input-available", "toolCallId": "d", "toolName": "f", "input": {}},
        {"type": "tool-input-start", "toolCallId": "e", "toolName": "f"},
        {**rest, "data": {"rest": "TOOL_CALL_END", "fields": {"toolCallName": "__pending__"}}},
        {"type": "tool-input-available", "toolCallId": "e", "toolName": "f", "input": {}},
    ]
    dec = ai_sdk.AiSdkDecoder(clock=lambda: AT)
    events = [e for c in stream for e in dec.feed(c)]
    ends = [(e["toolCallId"], e.get("toolCallName")) for e in events if e["type"] == "TOOL_CALL_END"]
    assert ends == [("c", None), ("d", "f"), ("e", "__pending__")]
    assert [(p.pointer, p.rule, p.message) for p in dec.notes] == [
        ("/3", "ui-carrier-conflict", 'data-agentmsg "toolCallName" "rm" contradicts TOOL_CALL_END "f": not applied'),
    ]
    assert [b["name"] for b in reduce(events)[0][0]["content"]] == ["f", "f", "f"]

    renamed = [
        ev(0, "AGENT_START"),
        ev(1, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev(2, "TOOL_CALL_END", toolCallId="c", toolCallName="g", input={}),
        ev(3, "AGENT_END"),
    ]
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in renamed for c in enc.feed(e)] + enc.close()
    assert [c.get("toolName") for c in chunks if c["type"].startswith("tool-input")] == ["f", "g"]
    assert not any(c["type"] == "data-agentmsg" and "toolCallName" in c["data"]["fields"] for c in chunks)
    back, _, dec = round_trip(renamed)
    assert [e.get("toolCallName") for e in back if e["type"] == "TOOL_CALL_END"] == ["g"]
    assert dec.notes == [] and reduce(back)[0] == reduce(renamed)[0]


@pytest.mark.timeout(60)
def test_a_grounding_sharing_its_members_gives_its_sources_in_linear_time() -> None:
    """A reply's grounding (MODEL_CALL_END's metadata, events fed as objects) that shares its members (a dict of the
    same dict twice, 30 levels down: 2**30 paths) was walked path by path for its URLs, to its depth of 32: hours. A
    member walked whole is not walked again deeper (it names no URL it did not): the sources, in order, at once."""
    shared: dict[str, Any] = {"url": "https://example.com/deep", "title": "D"}
    for _ in range(30):
        shared = {"a": shared, "b": shared}
    grounding = [{"uri": "https://example.com/first"}, shared, {"url": "https://example.com/last"}]
    events = [
        {"type": "MODEL_CALL_END", "id": "1", "createdAt": AT, "replyId": "r1", "metadata": {"grounding": grounding}}
    ]
    sources = [chunk for chunk in ai_sdk.encode(events) if chunk["type"] == "source-url"]
    assert sources == [
        {"type": "source-url", "sourceId": "source-1", "url": "https://example.com/first"},
        {"type": "source-url", "sourceId": "source-2", "url": "https://example.com/deep", "title": "D"},
        {"type": "source-url", "sourceId": "source-3", "url": "https://example.com/last"},
    ]


def test_a_tool_call_delta_s_other_name_round_trips_and_its_call_s_own_is_not_carried() -> None:
    """``tool-input-delta`` names no tool, so a TOOL_CALL_DELTA's ``toolCallName`` rides on the carrier when it
    differs from its call's (docs/ai-sdk.md). The condition was inverted: a differing name was dropped, no note,
    and the call's own name carried for nothing. Now the other name (a real one, or a Java placeholder) comes back
    on its delta, and the call's own is not carried."""

    events = [
        ev(0, "AGENT_START"),
        ev(1, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev(2, "TOOL_CALL_DELTA", toolCallId="c", toolCallName="f", delta='{"a":'),
        ev(3, "TOOL_CALL_DELTA", toolCallId="c", toolCallName="g", delta="1"),
        ev(4, "TOOL_CALL_DELTA", toolCallId="c", toolCallName="__fragment__", delta="}"),
        ev(5, "TOOL_CALL_END", toolCallId="c"),
        ev(6, "AGENT_END"),
    ]
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in events for c in enc.feed(e)] + enc.close()
    carried = [c["data"]["fields"] for c in chunks if c["type"] == "data-agentmsg" and "rest" in c["data"]]
    assert [f for f in carried if "toolCallName" in f] == [{"toolCallName": "g"}, {"toolCallName": "__fragment__"}]
    back, _, dec = round_trip(events)
    deltas = [(e["delta"], e.get("toolCallName")) for e in back if e["type"] == "TOOL_CALL_DELTA"]
    assert deltas == [('{"a":', None), ("1", "g"), ("}", "__fragment__")]
    assert dec.notes == [] and reduce(back)[0] == reduce(events)[0]


def test_a_call_gone_on_after_its_end_keeps_what_that_end_gave_it() -> None:
    """AgentScope Java ends every open call when another call's chunk comes and goes on with it at its next chunk;
    the reducer keeps what the END gave the call (an object ``input`` over the arguments, its ``metadata``). The
    encoder forgot that END when the call went on: with no END after, ``tool-input-available`` showed the arguments
    parsed, and the round trip lost the input, the metadata, silently. Now the call keeps it."""

    def ev(i: int, kind: str, reply: str = "m", **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": reply, **keys}

    events = [
        ev(0, "AGENT_START", "r"),
        ev(1, "MODEL_CALL_START"),
        ev(2, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev(3, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a":'),
        ev(4, "TOOL_CALL_END", toolCallId="c", input={"z": 9}, metadata={"k": 1}),
        ev(5, "TOOL_CALL_DELTA", toolCallId="c", delta="1}"),
        ev(6, "MODEL_CALL_END"),
        ev(7, "AGENT_END", "r"),
    ]
    expected, _ = reduce(events)
    assert [(b["input"], b["content"], b["metadata"]) for b in expected[0]["content"]] == [
        ({"z": 9}, '{"a":1}', {"k": 1})
    ]
    chunks = ai_sdk.encode(events)
    assert [c["input"] for c in chunks if c["type"] == "tool-input-available"] == [{"z": 9}]
    back, _, dec = round_trip(events)
    assert dec.notes == [] and reduce(back)[0] == expected


GONE_ON_ENDS = {
    "neither END gives anything": ({}, {}),
    "the first END gives state, input, metadata": ({"state": "allowed", "input": {"z": 9}, "metadata": {"k": 1}}, {}),
    "the second END gives them": ({}, {"state": "allowed", "input": {"z": 9}, "metadata": {"k": 1}}),
    "both give a state": ({"state": "asking", "metadata": {"k": 1}}, {"state": "allowed"}),
    "the second END's state is no state": ({"state": "allowed"}, {"state": "bogus"}),
    "the second END's state is null": ({"state": "allowed"}, {"state": None}),
    "the second END's input is no object": ({"input": {"z": 9}}, {"input": "x"}),
}


@pytest.mark.parametrize("placeholder", [False, True], ids=["named", "java-placeholder"])
@pytest.mark.parametrize("ends", GONE_ON_ENDS.values(), ids=GONE_ON_ENDS.keys())
def test_a_call_gone_on_keeps_of_each_end_what_the_reducer_keeps(
    ends: tuple[dict[str, Any], dict[str, Any]], placeholder: bool
) -> None:
    """END, DELTA, END of one call in one model call: the reducer keeps of each END what it takes (an object input,
    a state of the enum, metadata), and reports the call going on and each value it refuses. The encoder merged the
    ENDs into one, so a refused state on the second END replaced the first END's "allowed" (the round trip gave
    "pending"), and the decoded stream had no call going on. Now the first END goes whole at its place: the decoded
    events reduce to the same message with the same problems, and the UI part shows the last object input."""

    def ev(i: int, kind: str, reply: str = "m", **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": reply, **keys}

    name = {"toolCallName": "__fragment__"} if placeholder else {}
    first, second = ends
    events = [
        ev(0, "AGENT_START", "r"),
        ev(1, "MODEL_CALL_START"),
        *([] if placeholder else [ev(2, "TOOL_CALL_START", toolCallId="c", toolCallName="f")]),
        ev(3, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a":', **name),
        ev(4, "TOOL_CALL_END", toolCallId="c", **first),
        ev(5, "TOOL_CALL_DELTA", toolCallId="c", delta="1}", **name),
        ev(6, "TOOL_CALL_END", toolCallId="c", **second),
        ev(7, "MODEL_CALL_END"),
        ev(8, "AGENT_END", "r"),
    ]
    expected, r = reduce(events)
    (block,) = expected[0]["content"]
    kept_state = second.get("state") if second.get("state") in ("asking", "allowed") else first.get("state")
    assert block["state"] == (kept_state or "pending")
    back, _, dec = round_trip(events)
    got, r_back = reduce(back)
    assert dec.notes == [] and got == expected
    assert [(p.rule, p.message) for p in r_back.problems] == [(p.rule, p.message) for p in r.problems]
    (shown,) = [c for c in ai_sdk.encode(events) if c["type"] == "tool-input-available"]
    assert shown["input"] == block["input"]


@pytest.mark.parametrize("gone_on", [False, True], ids=["one-end", "gone-on"])
def test_a_java_placeholder_call_named_by_its_end_keeps_the_name(gone_on: bool) -> None:
    """A call whose deltas carry Java's placeholder name and whose END names it: the reducer names the block at
    that END. The encoder showed the name on the UI chunks (uiOnly) but carried it nowhere, since the decoder's call
    had it from them: the decoded END named nothing, and the round trip kept "__fragment__". Now it is carried."""

    def ev(i: int, kind: str, reply: str = "m", **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": reply, **keys}

    fragment = {"toolCallId": "c", "toolCallName": "__fragment__"}
    middle = [ev(4, "TOOL_CALL_END", toolCallId="c"), ev(5, "TOOL_CALL_DELTA", delta="1}", **fragment)]
    events = [
        ev(0, "AGENT_START", "r"),
        ev(1, "MODEL_CALL_START"),
        ev(3, "TOOL_CALL_DELTA", delta='{"a":' if gone_on else '{"a":1}', **fragment),
        *(middle if gone_on else []),
        ev(6, "TOOL_CALL_END", toolCallId="c", toolCallName="h"),
        ev(7, "MODEL_CALL_END"),
        ev(8, "AGENT_END", "r"),
    ]
    expected, _ = reduce(events)
    assert [(b["name"], b["input"]) for b in expected[0]["content"]] == [("h", {"a": 1})]
    (shown,) = [c for c in ai_sdk.encode(events) if c["type"] == "tool-input-available"]
    assert shown["toolName"] == "h"
    back, _, dec = round_trip(events)
    assert dec.notes == [] and reduce(back)[0] == expected


@pytest.mark.parametrize("gone_on", [False, True], ids=["ended", "gone-on"])
@pytest.mark.parametrize(
    ("kind", "state"), [("REQUIRE_USER_CONFIRM", "asking"), ("REQUIRE_EXTERNAL_EXECUTION", "submitted")]
)
def test_an_end_held_goes_before_an_event_carried_whole_after_it(kind: str, state: str, gone_on: bool) -> None:
    """A call's END is held until the model call ends or the call goes on (its final chunk stands for it). An
    event carried whole after the END (a REQUIRE_USER_CONFIRM naming the call) went before it in the decoded
    stream: the reducer took the END's state last, and the call came back "allowed" instead of the state the
    event gave it, silently. Now the END held goes whole before such an event (the final chunk then the UI's
    alone, unless the call goes on): the same message, the same problems, the UI part showing the input."""

    def ev(i: int, kind: str, reply: str = "m", **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, "replyId": reply, **keys}

    calls = [{"type": "tool_use", "id": "c", "name": "f", "input": {"a": 1}}]
    events = [
        ev(0, "AGENT_START", "r"),
        ev(1, "MODEL_CALL_START"),
        ev(2, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
        ev(3, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a":' if gone_on else '{"a":1}'),
        ev(4, "TOOL_CALL_END", toolCallId="c", state="allowed"),
        ev(5, kind, toolCalls=calls),
        *([ev(6, "TOOL_CALL_DELTA", toolCallId="c", delta="1}")] if gone_on else []),
        ev(7, "MODEL_CALL_END"),
        ev(8, "AGENT_END", "r"),
    ]
    expected, r = reduce(events)
    assert [(b["state"], b["input"]) for b in expected[0]["content"]] == [(state, {"a": 1})]
    back, _, dec = round_trip(events)
    got, r_back = reduce(back)
    assert dec.notes == [] and got == expected
    assert [(p.rule, p.message) for p in r_back.problems] == [(p.rule, p.message) for p in r.problems]
    chunks = ai_sdk.encode(events)
    (shown,) = [c for c in chunks if c["type"] == "tool-input-available"]
    assert shown["input"] == {"a": 1} and reader_refusals(chunks) == []


def _stepped(kind: str, second: dict[str, Any]) -> list[dict[str, Any]]:
    """A ``kind`` (TEXT or THINKING) block left open when its model call ends, then ``second`` (an event for it) in
    the next model call."""
    from tests._support.events import ev

    return [
        ev(0, "AGENT_START", replyId="r"),
        ev(1, "MODEL_CALL_START", replyId="m1"),
        ev(2, f"{kind}_BLOCK_START", replyId="m1", blockId="b"),
        ev(3, f"{kind}_BLOCK_DELTA", replyId="m1", blockId="b", delta="one "),
        ev(4, "MODEL_CALL_END", replyId="m1"),
        ev(5, "MODEL_CALL_START", replyId="m2"),
        second,
        ev(7, f"{kind}_BLOCK_DELTA", replyId="m2", blockId="b", delta="two"),
        ev(8, f"{kind}_BLOCK_END", replyId="m2", blockId="b"),
        ev(9, "MODEL_CALL_END", replyId="m2"),
        ev(10, "AGENT_END", replyId="r"),
    ]


@pytest.mark.parametrize("second", ["START", "END"])
def test_a_block_open_across_model_calls_round_trips_whole_and_its_new_part_is_said(second: str) -> None:
    """A UI step ends its parts, so the encoder ends a block left open at its model call's end; the reducer holds it
    open. A START for it in the next model call (a second START: the reducer ignores it, rule order, and its deltas
    go on in the same block) started a new part in silence: the round trip gave "one " and "two" where the events
    reduce to "one two". The new part is said (rule order, at the event), and now the round trip keeps the one
    block: the step's end and the new part's start are for the UI only (carriers say so), the START goes whole for
    the decoder's reducer to ignore. A thinking block's END there, whose metadata the reducer sets on the block, was
    left out (said, rule order): it now goes whole, its metadata kept, nothing to say. A block of that id in the
    next reply is a new one, said nothing."""
    from tests._support.events import ev

    if second == "START":
        kind, event = "TEXT", ev(6, "TEXT_BLOCK_START", replyId="m2", blockId="b")
    else:
        kind, event = "THINKING", ev(6, "THINKING_BLOCK_END", replyId="m2", blockId="b", metadata={"signature": "c2ln"})
    events = _stepped(kind, event)
    if second == "END":  # (the block ends there for the reducer: no delta or end of it follows)
        events = [e for e in events if e["id"] not in ("e7", "e8")]
    expected, _ = reduce(events)
    back, enc, _ = round_trip(events)
    got, _ = reduce(back)
    assert got == expected
    if second == "START":
        assert [b["text"] for b in expected[0]["content"]] == ["one two"]
    else:
        assert expected[0]["content"][0]["metadata"] == {"signature": "c2ln"}
    said = [("/6", "order")] if second == "START" else []  # (the UI's new part)
    assert [(n.pointer, n.rule) for n in enc.notes if n.rule == "order"] == said
    chunks = ai_sdk.encode(events)
    assert reader_refusals(chunks) == []
    again = [*events, *({**e, "id": f"{e['id']}-2", "replyId": e["replyId"] + "-2"} for e in events[:4])]
    _, enc, _ = round_trip([*again, ev(11, "AGENT_END", replyId="r-2")])
    assert [(n.pointer, n.rule) for n in enc.notes if n.rule == "order"] == said


@pytest.mark.parametrize("kind", ["TEXT", "THINKING"])
@pytest.mark.parametrize("calls", [1, 2])
def test_a_block_left_open_at_a_step_of_an_implicit_reply_stays_cut_in_the_round_trip(kind: str, calls: int) -> None:
    """An implicit reply (no AGENT_START or AGENT_END) whose text or thinking block is never ended, over one model
    call or two (its deltas going on in the second): the reducer ends the stream with the reply INTERRUPTED and
    says incomplete_stream. The encoder ends the block's UI part at each step (a UI step ends its parts), and the
    decoder read that end as the block's END: the decoded reply was complete, neither INTERRUPTED nor said. Now
    the step's end (and the next step's new part) is for the UI only: the round trip keeps the reply cut, the same
    problem said; the UI still gets each part started and ended."""
    from tests._support.events import ev

    events = [
        ev(0, "MODEL_CALL_START", replyId="m"),
        ev(1, f"{kind}_BLOCK_START", replyId="m", blockId="b"),
        ev(2, f"{kind}_BLOCK_DELTA", replyId="m", blockId="b", delta="one "),
        ev(3, "MODEL_CALL_END", replyId="m"),
    ]
    if calls == 2:
        events += [
            ev(4, "MODEL_CALL_START", replyId="m"),
            ev(5, f"{kind}_BLOCK_DELTA", replyId="m", blockId="b", delta="two"),
            ev(6, "MODEL_CALL_END", replyId="m"),
        ]
    expected, r = reduce(events)
    assert expected[0]["metadata"]["agentscope_generate_reason"] == "INTERRUPTED"
    assert [p.rule for p in r.problems] == ["incomplete_stream"]
    back, enc, dec = round_trip(events)
    got, r_back = reduce(back)
    assert got == expected and dec.notes == []
    assert [(p.rule, p.message) for p in r_back.problems] == [(p.rule, p.message) for p in r.problems]
    assert [n.rule for n in enc.notes if n.rule == "order"] == []
    chunks = ai_sdk.encode(events)
    part = "text" if kind == "TEXT" else "reasoning"
    assert [c["type"] for c in chunks if c["type"].startswith(part)] == [
        f"{part}-start",
        f"{part}-delta",
        f"{part}-end",
    ] * calls
    assert reader_refusals(chunks) == []


def test_a_start_naming_the_message_again_is_said_where_the_ai_sdk_reader_goes_on_with_it() -> None:
    """Two ``start`` chunks naming one message: the AI SDK's reader (``readUIMessageStream``) goes on with that
    UIMessage (it starts a new one only for another id), with or without a ``finish`` between; the decoder gives
    a second reply of that id, which the reducer makes a second message of. That was said nowhere; now it is
    (rule duplicate, at the second start), once per id; a start naming another message is said nothing."""

    def reply(message_id: str, text: str) -> list[dict[str, Any]]:
        return [
            {"type": "start", "messageId": message_id},
            {"type": "text-start", "id": text},
            {"type": "text-delta", "id": text, "delta": text},
            {"type": "text-end", "id": text},
            {"type": "finish"},
        ]

    chunks = [*reply("m", "a"), *reply("m", "b")[:-1], *reply("m", "c"), *reply("n", "d"), *reply("m", "e")]
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    events = [e for c in chunks for e in dec.feed(c)]
    assert [(n.pointer, n.rule) for n in dec.notes] == [("/5", "duplicate")]
    assert dec.notes[0].message == (
        'start names message "m" again: the AI SDK\'s reader goes on with that message (one UIMessage); decoded'
        " as another reply of that id (two messages)"
    )
    messages, _ = reduce(events)
    assert [m["id"] for m in messages] == ["m", "m", "m", "n", "m"]


def test_a_start_naming_no_message_after_a_start_is_said_where_the_ai_sdk_reader_goes_on_with_it() -> None:
    """A ``start`` with no messageId after another ``start``: the AI SDK's reader (``readUIMessageStream``) resets
    only for a messageId other than its message's, so it goes on with the message before (its parts join that
    UIMessage), with or without a ``finish`` between; the decoder gives another reply (the reducer another message).
    That was said nowhere (a second start naming the same id is said); now it is said the same way (rule duplicate,
    at the chunk), once per message it goes on with. A first start of no id, or one naming another id, says
    nothing; a start of no id leaves the reader's message as it was (a later start naming it is said too)."""

    def reply(message_id: str | None, text: str) -> list[dict[str, Any]]:
        start: dict[str, Any] = {"type": "start"} if message_id is None else {"type": "start", "messageId": message_id}
        return [
            start,
            {"type": "text-start", "id": text},
            {"type": "text-delta", "id": text, "delta": text},
            {"type": "text-end", "id": text},
            {"type": "finish"},
        ]

    chunks = [
        *reply(None, "a"),
        *reply(None, "b"),
        *reply("m", "c")[:-1],
        *reply(None, "d"),
        *reply(None, "e"),
        *reply("m", "f"),
    ]
    dec = ai_sdk.AiSdkDecoder(strict=True, clock=lambda: AT)
    events = [e for c in chunks for e in dec.feed(c)]
    reader = "the AI SDK's reader goes on with"
    assert [(n.pointer, n.rule, n.message) for n in dec.notes] == [
        (
            "/5",
            "duplicate",
            f"start names no message after a start: {reader} the message before it (one UIMessage); decoded as"
            " another reply (two messages)",
        ),
        (
            "/14",
            "duplicate",
            f'start names no message after a start: {reader} message "m" (one UIMessage); decoded as another reply'
            " (two messages)",
        ),
        (
            "/24",
            "duplicate",
            f'start names message "m" again: {reader} that message (one UIMessage); decoded as another reply of'
            " that id (two messages)",
        ),
    ]
    messages, _ = reduce(events)
    assert [m["content"][0]["text"] for m in messages] == ["a", "b", "c", "d", "e", "f"]


def test_a_model_call_end_without_its_start_opens_no_model_call_in_the_round_trip() -> None:
    """A MODEL_CALL_END with no MODEL_CALL_START before it (the reducer takes it, saying nothing) is written as a
    step, start-step and finish-step, as the UI needs one to end; the decoder read the start-step as a MODEL_CALL_START
    of its own, and in an implicit reply (events after an AGENT_END) that invented model call named the reply (docs/
    events.md rule 8): "m1" where the events reduce to "m2", the first model call that started. The start-step is
    now for the UI only (a carrier says so), and the decoder gives back the MODEL_CALL_END alone."""
    from tests._support.events import ev

    events = [
        ev(0, "AGENT_START", replyId="r"),
        ev(1, "MODEL_CALL_START", replyId="m1"),
        ev(2, "AGENT_END", replyId="r"),
        ev(3, "TEXT_BLOCK_START", replyId="m1", blockId="b"),
        ev(4, "TEXT_BLOCK_DELTA", replyId="m1", blockId="b", delta="hi"),
        ev(5, "TEXT_BLOCK_END", replyId="m1", blockId="b"),
        ev(6, "MODEL_CALL_END", replyId="m1"),
        ev(7, "MODEL_CALL_START", replyId="m2"),
        ev(8, "MODEL_CALL_END", replyId="m2"),
        ev(9, "AGENT_END", replyId="r"),
    ]
    expected, r = reduce(events)
    assert [m["id"] for m in expected] == ["r", "m2"] and r.problems == []
    back, _, _ = round_trip(events)
    assert [e["type"] for e in back].count("MODEL_CALL_START") == 2
    got, r = reduce(back)
    assert got == expected and r.problems == []


def test_a_tool_result_open_at_its_replys_end_stays_in_that_reply() -> None:
    """A tool result not ended when its reply ends (AGENT_END) is held by the encoder (a UI tool output is whole)
    and was carried whole only when the stream closed, after the reply's ``finish``: the decoder read its text as an
    implicit reply of its own, so the round trip gave the result empty in its reply and a second message holding its
    text, cut (incomplete_stream), where the events reduce to one message holding it. It is carried before the
    ``finish`` now, in its reply."""
    from tests._support.events import ev

    events = [
        ev(0, "AGENT_START", replyId="r"),
        ev(1, "MODEL_CALL_START", replyId="m"),
        ev(2, "TOOL_CALL_START", replyId="m", toolCallId="c", toolCallName="f"),
        ev(3, "TOOL_CALL_DELTA", replyId="m", toolCallId="c", delta='{"x":1}'),
        ev(4, "TOOL_CALL_END", replyId="m", toolCallId="c"),
        ev(5, "MODEL_CALL_END", replyId="m"),
        ev(6, "TOOL_RESULT_START", replyId="t", toolCallId="c", toolCallName="f"),
        ev(7, "TOOL_RESULT_TEXT_DELTA", replyId="t", toolCallId="c", delta="out"),
        ev(8, "AGENT_END", replyId="r"),
    ]
    expected, _ = reduce(events)
    assert len(expected) == 1
    back, _, _ = round_trip(events)
    got, r = reduce(back)
    assert got == expected
    assert "incomplete_stream" not in [p.rule for p in r.problems]


@pytest.mark.parametrize("error_text", [[], {}, 0, False, [1], "no", "", None])
def test_a_denied_output_has_no_text_and_an_error_text_on_it_is_said(error_text: Any) -> None:
    """A denied tool result has no output: the AI SDK's ``tool-output-denied`` chunk is ``{toolCallId}`` alone (ai 7,
    uiMessageChunkSchema), its reader sets the part's state ``output-denied`` and reads nothing else, and a UIMessage
    part in that state may hold neither ``output`` nor ``errorText``. Both decoders read an ``errorText`` there as
    the result's text (a value that is no text as its JSON), which no UI shows, where docs/ai-sdk.md says a denied
    result has none. The result is now START and END ``denied`` alone, and an ``errorText`` (but null) is not kept,
    said quoted with its call, once per call and value (rule ui-not-kept)."""
    dec = ai_sdk.AiSdkDecoder(clock=lambda: "2026-01-01T00:00:00Z")
    chunk = {"type": "tool-output-denied", "toolCallId": "a", "errorText": error_text}
    events = dec.feed(chunk) + dec.feed(chunk) + dec.close()
    assert [e["type"] for e in events] == ["TOOL_RESULT_START", "TOOL_RESULT_END"] * 2
    assert events[-1]["state"] == "denied"
    said = [(n.pointer, n.rule, n.message) for n in dec.notes if "errorText" in n.message]
    if error_text is None:
        assert said == []
    else:
        quote = json.dumps(error_text, separators=(",", ":"))
        assert said == [
            (
                "/0",
                "ui-not-kept",
                f'errorText {quote} of tool call "a": a denied tool output has no text (the AI SDK\'s'
                " tool-output-denied chunk has no errorText, its reader ignores one)",
            )
        ]


def _call_across_model_calls(first: str, second: str) -> list[dict[str, Any]]:
    """A tool call opened by ``first`` (its START, or a DELTA with no START) in model call m1, then ``second`` (a
    START, DELTA or END of it) in model call m2, which started with no MODEL_CALL_END of m1 before it."""
    from tests._support.events import ev

    events = [ev(0, "AGENT_START", replyId="r"), ev(1, "MODEL_CALL_START", replyId="m1")]
    if first == "START":
        events.append(ev(2, "TOOL_CALL_START", replyId="m1", toolCallId="c", toolCallName="f"))
    events += [
        ev(3, "TOOL_CALL_DELTA", replyId="m1", toolCallId="c", delta='{"a":'),
        ev(4, "MODEL_CALL_START", replyId="m2"),
    ]
    if second == "START":
        events.append(ev(5, "TOOL_CALL_START", replyId="m2", toolCallId="c", toolCallName="f"))
    if second != "END":
        events.append(ev(6, "TOOL_CALL_DELTA", replyId="m2", toolCallId="c", delta="1}"))
    events += [
        ev(7, "TOOL_CALL_END", replyId="m2", toolCallId="c", metadata={"k": 1}),
        ev(8, "MODEL_CALL_END", replyId="m2"),
        ev(9, "AGENT_END", replyId="r"),
    ]
    return events


@pytest.mark.parametrize(
    ("first", "second"), [("DELTA", "START"), ("START", "DELTA"), ("DELTA", "DELTA"), ("START", "END")]
)
def test_a_tool_call_open_across_model_calls_is_said_where_its_part_is_cut(first: str, second: str) -> None:
    """A UI step ends its tool parts, so the encoder finishes a call still open when the next model call starts
    (no MODEL_CALL_END before it); the reducer holds such a call open: a DELTA for it in the next model call goes on
    in it, and a START there is that call's (a call its deltas opened takes the START's name; an explicit one's
    second START is ignored). The round trip gave two calls, '{"a":' and '1}', where the events reduce to one,
    '{"a":1}', and no note said so (an END there, whose metadata the reducer sets on the call, was carried whole
    and left out). It is said now (rule order, at the event), and only there: the call's later events go on in
    the new part, and a call ended before the step ends, or a model call ended before the next starts, is said
    nothing."""
    events = _call_across_model_calls(first, second)
    expected, _ = reduce(events)
    ((call,),) = [m["content"] for m in expected]
    back, enc, _ = round_trip(events)
    got, _ = reduce(back)
    if second == "END":
        assert call["metadata"]["k"] == 1 and call["content"] == '{"a":'
        assert "k" not in got[0]["content"][0]["metadata"]  # (the call was finished with its step: the END left out)
    else:
        assert call["content"] == '{"a":1}' and call["input"] == {"a": 1}
        assert [b["content"] for b in got[0]["content"]] == ['{"a":', "1}"]
    at = next(i for i, e in enumerate(events) if e["replyId"] == "m2" and e["type"].startswith("TOOL_CALL"))
    assert [(n.pointer, n.rule) for n in enc.notes if n.rule == "order"] == [(f"/{at}", "order")]
    # a model call ended before the next one starts ends its calls for the reducer too: nothing to say
    from tests._support.events import ev

    step = next(i for i, e in enumerate(events) if e["id"] == "e4")
    _, enc, _ = round_trip([*events[:step], ev(10, "MODEL_CALL_END", replyId="m1"), *events[step:]])
    assert [n for n in enc.notes if n.rule == "order"] == []


@pytest.mark.parametrize(("kind", "part"), [("TEXT_BLOCK", "text"), ("THINKING_BLOCK", "reasoning")])
def test_an_end_naming_no_open_part_is_carried_as_it_is(kind: str, part: str) -> None:
    """An END naming another block than its START's: the reducer says it and ignores it, the AI SDK's reader refuses
    a ``*-end`` of a part it does not have. It was dropped unsaid, so the decoded stream's reducer said nothing; it is
    carried whole (a note, rule order, at its index): the UI stream has no such chunk, the reducer of the decoded
    events says what the reducer of the events said, and the message is the same."""

    def event(n: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{n}", "createdAt": AT, "replyId": "r", **keys}

    events = [
        event(0, "AGENT_START"),
        event(1, "MODEL_CALL_START"),
        event(2, f"{kind}_START", blockId="a"),
        event(3, f"{kind}_DELTA", blockId="a", delta="x"),
        event(4, f"{kind}_END", blockId="b"),
        event(5, "MODEL_CALL_END"),
        event(6, "AGENT_END"),
    ]
    expected, r = reduce(events)
    back, enc, _ = round_trip(events)
    got, r2 = reduce(back)
    assert got == expected
    said = [(p.rule, p.message) for p in r.problems]
    assert said == [("order", f"END for {kind.split('_')[0].lower()} block 'b' that is not open: ignored")]
    assert [(p.rule, p.message) for p in r2.problems] == said
    assert [(n.pointer, n.rule, n.message) for n in enc.notes if n.rule == "order"] == [
        ("/4", "order", f'{kind}_END for a {part} part not open ("b"): carried as it is')
    ]
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in events for c in enc.feed(e)] + enc.close()
    assert reader_refusals(chunks) == []


@pytest.mark.parametrize("missing", ["START", "DELTA"])
def test_a_call_gone_on_without_its_reply_id_is_said(missing: str) -> None:
    """A tool call's START, END, then a delta for it in the same reply: the reducer goes on with the call only when
    both the START and the delta name the model call (a replyId each); without one it adds a new call. The decoder
    gives every event the reply's replyId, so the decoded stream's reducer went on with the call: another message,
    unsaid. Said now (rule order, at the delta's index)."""

    def event(n: int, kind: str, reply: bool = True, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{n}", "createdAt": AT, **({"replyId": "r"} if reply else {}), **keys}

    events = [
        event(0, "AGENT_START"),
        event(1, "TOOL_CALL_START", missing != "START", toolCallId="t", toolCallName="f"),
        event(2, "TOOL_CALL_DELTA", toolCallId="t", delta='{"x":'),
        event(3, "TOOL_CALL_END", toolCallId="t"),
        event(4, "TOOL_CALL_DELTA", missing != "DELTA", toolCallId="t", delta="1}"),
        event(5, "TOOL_CALL_END", toolCallId="t"),
        event(6, "AGENT_END"),
    ]
    expected, _ = reduce(events)
    assert [b["content"] for b in expected[0]["content"]] == ['{"x":', "1}"]  # two calls
    back, enc, _ = round_trip(events)
    assert [b["content"] for b in reduce(back)[0][0]["content"]] == ['{"x":1}']  # one: said
    where = "its START" if missing == "START" else "it"
    assert [(n.pointer, n.rule, n.message) for n in enc.notes if n.rule == "order"] == [
        (
            "/4",
            "order",
            f'TOOL_CALL_DELTA for tool call "t" after its END, with no replyId on {where}: the reducer adds a new'
            " call; the UI stream goes on with the call, and so does its reader's reducer (the decoder gives its"
            " events the reply's replyId)",
        )
    ]


@pytest.mark.parametrize(("end", "delta"), [("x", "x"), ("m", "m"), ("m", None), (None, "m")])
def test_a_call_an_end_started_goes_on_as_the_reducer_goes_on(end: str | None, delta: str | None) -> None:
    """A TOOL_CALL_END for a call never started: the reducer starts the call there (rule order), with the END's
    replyId, and ends it; a delta for it goes on in that call when both name the same model call, else it adds a
    new call. The END was carried whole and forgotten, so the delta opened a new UI call, whose decoded START took the
    reply's replyId: the decoded stream's reducer had two calls where the events reduce to one (END and delta of
    replyId "x" in model call "m"), and lost the order problem of the call going on. The encoder now keeps the call
    the END started (its part opened and finished for the UI only) and goes on with it as the reducer does; where
    the decoded delta takes the reply's replyId in place of none, it says so (rule order, at the delta)."""

    def event(n: int, kind: str, reply: str | None, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{n}", "createdAt": AT, **({} if reply is None else {"replyId": reply}), **keys}

    events = [
        event(0, "AGENT_START", "r"),
        event(1, "MODEL_CALL_START", "m"),
        event(2, "TOOL_CALL_END", end, toolCallId="c", toolCallName="f"),
        event(3, "TOOL_CALL_DELTA", delta, toolCallId="c", toolCallName="f", delta='{"a":1}'),
        event(4, "MODEL_CALL_END", "m"),
        event(5, "AGENT_END", "r"),
    ]
    expected, r = reduce(events)
    goes_on = end is not None and end == delta
    assert [b["content"] for b in expected[0]["content"]] == (['{"a":1}'] if goes_on else [None, '{"a":1}'])
    back, enc, _ = round_trip(events)
    got, r2 = reduce(back)
    said = [(n.pointer, n.rule) for n in enc.notes if n.rule == "order"]
    if (end, delta) == ("m", None):  # (the decoded delta takes the reply's replyId "m": one call)
        assert said == [("/3", "order")]
        return
    assert got == expected
    if goes_on:  # the END's and the delta's order problems, said by the decoded stream's reducer too
        assert [p.rule for p in r2.problems] == [p.rule for p in r.problems] == ["order", "order"]
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in events for c in enc.feed(e)] + enc.close()
    assert reader_refusals(chunks) == []
    assert [c["type"] for c in chunks if c["type"].startswith("tool-")][:1] == ["tool-input-start"]


@pytest.mark.parametrize("ends", [1, 2])
def test_a_model_call_inside_an_open_one_nests_in_the_round_trip(ends: int) -> None:
    """A MODEL_CALL_START inside an open model call: the reducer nests it (the open one is not ended), so an implicit
    reply the stream ends after one MODEL_CALL_END still has a model call open: INTERRUPTED, and said (rule
    incomplete_stream). UI steps do not nest: the encoder ended the open step at the second start, its decoded
    MODEL_CALL_END closed the first model call, and the decoded reply came back complete, unsaid. That end of the
    step is for the UI only now: the decoded model calls nest as the events' do (and a second MODEL_CALL_END ends
    them both)."""

    def event(n: int, kind: str, reply: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{n}", "createdAt": AT, "replyId": reply, **keys}

    events = [
        event(0, "MODEL_CALL_START", "m1"),
        event(1, "MODEL_CALL_START", "m2"),
        event(2, "TEXT_BLOCK_START", "m2", blockId="b"),
        event(3, "TEXT_BLOCK_DELTA", "m2", blockId="b", delta="hi"),
        event(4, "TEXT_BLOCK_END", "m2", blockId="b"),
        *[event(5 + n, "MODEL_CALL_END", "m2") for n in range(ends)],
    ]
    expected, r = reduce(events)
    reason = expected[0]["metadata"].get("agentscope_generate_reason")
    assert reason == ("INTERRUPTED" if ends == 1 else None)
    back, _, _ = round_trip(events)
    got, r2 = reduce(back)
    assert got == expected
    assert [p.rule for p in r2.problems] == [p.rule for p in r.problems]
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in events for c in enc.feed(e)] + enc.close()
    assert reader_refusals(chunks) == []
    steps = [c["type"] for c in chunks if c["type"].endswith("-step")]
    assert steps == ["start-step", "finish-step"] * (1 + ends)  # (the UI's steps do not nest)


@pytest.mark.parametrize("then_start", [False, True])
def test_a_delta_for_a_call_not_open_is_carried_so_the_reducer_says_it(then_start: bool) -> None:
    """A TOOL_CALL_DELTA for a call never started: the reducer starts the call there and says it (rule order); a START
    for it after that names the call its delta opened (no problem). The encoder opened the call with a
    ``tool-input-start``, which the decoder reads as a TOOL_CALL_START: the decoded stream's reducer started the call
    unsaid (one order problem lost, 87 of 2,000 fuzzed sequences), and a later START was a second one ("started
    twice"). The delta goes whole now, the call's part opened for the UI only: the decoded stream's reducer says what
    the events' reducer says."""

    def event(n: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{n}", "createdAt": AT, "replyId": "m", **keys}

    events = [
        event(0, "AGENT_START", replyId="r"),
        event(1, "MODEL_CALL_START"),
        event(2, "TOOL_CALL_DELTA", toolCallId="c", toolCallName="f", delta='{"a":'),
        *([event(3, "TOOL_CALL_START", toolCallId="c", toolCallName="f")] if then_start else []),
        event(4, "TOOL_CALL_DELTA", toolCallId="c", delta="1}"),
        event(5, "MODEL_CALL_END"),
        event(6, "AGENT_END", replyId="r"),
    ]
    expected, r = reduce(events)
    assert [(b["name"], b["input"]) for b in expected[0]["content"]] == [("f", {"a": 1})]
    assert [(p.pointer, p.rule) for p in r.problems] == [("/2/toolCallId", "order")]
    back, enc, _ = round_trip(events)
    got, r2 = reduce(back)
    assert got == expected
    assert [(p.rule, p.message) for p in r2.problems] == [(p.rule, p.message) for p in r.problems]
    enc = ai_sdk.AiSdkEncoder()
    chunks = [c for e in events for c in enc.feed(e)] + enc.close()
    assert reader_refusals(chunks) == []
    tool_chunks = [c["type"] for c in chunks if c["type"].startswith("tool-")]
    assert tool_chunks == ["tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-available"]


@pytest.mark.parametrize("depth", [1025, 2000, 100_000])
def test_chunk_data_nested_deeper_than_json_text_may_be_is_refused_with_its_rule(depth: int) -> None:
    """Past orjson's 1,024 levels the fallback (``json.loads``, for a lone surrogate escape) raised a bare
    RecursionError. It is now ValidationError at the chunk, rule ``max-depth``; 1,024 levels are read (a tool output
    that deep is kept as its JSON text: test_a_tool_output_nested_as_deep_as_json_text_allows_is_read)."""
    from agentmsg import ValidationError
    from agentmsg.ui import ai_sdk

    with pytest.raises(ValidationError) as info:
        list(ai_sdk.iter_chunks(b"data: " + b"[" * depth + b"]" * depth + b"\n\n"))
    assert [(p.pointer, p.rule) for p in info.value.problems] == [("/0", "max-depth")]
    (kept,) = ai_sdk.iter_chunks(b"data: " + b"[" * 1024 + b"]" * 1024 + b"\n\n")
    assert isinstance(kept, list)


def _stream(*events: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": kind, "id": f"e{n}", "createdAt": AT, **keys} for n, (kind, keys) in enumerate(events)]


def test_a_call_going_on_in_a_later_model_call_is_carried_and_said() -> None:
    """A tool call's START, delta and END in a later model call that name the model call of a call whose part a
    step finished: the reducer goes on with that call (its arguments joined). The UI's part is final: its events go
    whole, said (rule ``order``), so that the round trip joins the arguments too. They went as a second part of the
    same id, which the decoded reducer took for another call's input, unsaid."""
    events = _stream(
        ("AGENT_START", {"replyId": "r"}),
        ("MODEL_CALL_START", {"replyId": "m1"}),
        ("TOOL_CALL_START", {"replyId": "m1", "toolCallId": "c1", "toolCallName": "f"}),
        ("TOOL_CALL_DELTA", {"replyId": "m1", "toolCallId": "c1", "delta": '{"a":'}),
        ("TOOL_CALL_END", {"replyId": "m1", "toolCallId": "c1"}),
        ("MODEL_CALL_END", {"replyId": "m1"}),
        ("MODEL_CALL_START", {"replyId": "m2"}),
        ("TOOL_CALL_START", {"replyId": "m1", "toolCallId": "c1", "toolCallName": "f"}),
        ("TOOL_CALL_DELTA", {"replyId": "m1", "toolCallId": "c1", "delta": "1}"}),
        ("TOOL_CALL_END", {"replyId": "m1", "toolCallId": "c1"}),
        ("MODEL_CALL_END", {"replyId": "m2"}),
        ("AGENT_END", {"replyId": "r"}),
    )
    expected, r = reduce(events)
    assert not r.problems
    (call,) = [b for b in expected[0]["content"] if b["type"] == "tool_use"]
    assert (call["input"], call["content"]) == ({"a": 1}, '{"a":1}')
    back, enc, _ = round_trip(events)
    got, _ = reduce(back)
    assert got == expected
    said = [(n.pointer, n.rule) for n in enc.notes if n.rule != "ui-wrapped"]
    assert said == [("/7", "order")], enc.notes


def test_a_data_blocks_replyid_carried_with_it_does_not_stick() -> None:
    """A data block's (or tool result's) replyId rides on its group's carrier, which the decoder applies to the
    group alone; the encoder took it as the replyId of the events after it, so a tool call after a data block of
    another model call's replyId came back in that model call (a second call of the same id then joined to it)."""
    events = _stream(
        ("AGENT_START", {"replyId": "r"}),
        ("MODEL_CALL_START", {"replyId": "m0"}),
        ("THINKING_BLOCK_START", {"replyId": "m1", "blockId": "t0"}),
        ("THINKING_BLOCK_END", {"replyId": "m1", "blockId": "t0"}),
        ("DATA_BLOCK_START", {"replyId": "m0", "blockId": "d1", "mediaType": "image/png"}),
        ("DATA_BLOCK_DELTA", {"replyId": "m0", "blockId": "d1", "delta": "QUJD"}),
        ("DATA_BLOCK_END", {"replyId": "m0", "blockId": "d1"}),
        ("TOOL_CALL_START", {"replyId": "m0", "toolCallId": "c0", "toolCallName": "g"}),
        ("TOOL_CALL_DELTA", {"replyId": "m0", "toolCallId": "c0", "delta": '{"s":1}'}),
        ("TOOL_CALL_END", {"replyId": "m0", "toolCallId": "c0"}),
        ("MODEL_CALL_END", {"replyId": "m0"}),
        ("MODEL_CALL_START", {"replyId": "m1"}),
        ("TOOL_CALL_START", {"replyId": "m1", "toolCallId": "c0", "toolCallName": "f"}),
        ("TOOL_CALL_DELTA", {"replyId": "m1", "toolCallId": "c0", "delta": '{"a":1}'}),
        ("TOOL_CALL_END", {"replyId": "m1", "toolCallId": "c0"}),
        ("MODEL_CALL_END", {"replyId": "m1"}),
        ("AGENT_END", {"replyId": "r"}),
    )
    expected, r = reduce(events)
    assert not r.problems
    assert [b["input"] for b in expected[0]["content"] if b["type"] == "tool_use"] == [{"s": 1}, {"a": 1}]
    back, _, _ = round_trip(events)
    assert reduce(back)[0] == expected
