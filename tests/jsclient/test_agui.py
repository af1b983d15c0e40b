"""@agentmsg/client's AG-UI decoder (TypeScript, ``AGUIDecoder`` in sdk/typescript/src/agui.ts, run in Node from its
build) against Python's (``agentmsg.ui.agui.AGUIDecoder``), on the same AG-UI streams: what agentmsg's AG-UI
encoder writes for every reducer vector and for random emitted streams, those streams with events dropped, repeated
and swapped (seeded), and AG-UI streams of other producers (``*_CHUNK`` events, the 0.0.x ``THINKING_*`` events,
messages of other roles, a RUN_FINISHED's usage and outcome, content parts, encrypted values, events agentmsg has
no event for, events that break AG-UI) and streams Hypothesis generates (tests/_support/uistreams.py). The
AgentEvents (ids and ``createdAt`` included) and the notes (pointer, rule and message, in order) must be the same,
key order included, tolerant and strict (the reducers' agreement on the same events is
tests/jsclient/test_reducer.py's)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg.ui.agui import AGUIDecoder, AGUIEncoder
from tests._support.budget import examples
from tests._support.events import CASES, base_streams, events_of, load
from tests._support.jsclient import NODE, NodeDecoder, decoded, decoded_in_node, same_json
from tests._support.mutators import reordered
from tests._support.uistreams import AGUI_CONTRADICTED, AGUI_INPUTS, agui_streams

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run"),
]

CLOCK = "2026-01-01T00:00:00.000000Z"

AT = 1764633600000
FOREIGN: list[list[Any]] = [
    # the reference note's run, as @ag-ui/client accepted it
    [
        {"type": "RUN_STARTED", "threadId": "th1", "runId": "r1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Let me check."},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "get_weather", "parentMessageId": "m1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": '{"city":"Paris"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "call_1"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "call_1", "content": "18C"},
        {"type": "RUN_FINISHED", "threadId": "th1", "runId": "r1"},
    ],
    # chunks, timestamps, legacy thinking, other roles, usage, outcome, parts, encrypted values, foreign events
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": AT, "input": {"messages": []}},
        {"type": "STEP_STARTED", "stepName": "s1"},
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hmm"},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
        {"type": "REASONING_START", "messageId": "rs"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "plan"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "rm", "encryptedValue": "sig"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm"},
        {"type": "REASONING_END", "messageId": "rs"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "c1", "delta": "He", "timestamp": AT + 1500},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "llo"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "k1", "encryptedValue": "ts"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "k1", "toolCallName": "f", "delta": '{"a":'},
        {"type": "TOOL_CALL_CHUNK", "delta": "1}"},
        {"type": "TEXT_MESSAGE_START", "messageId": "u1", "role": "user"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "u1", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "u1"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"x": 1}},
        {"type": "CUSTOM", "name": "app.note", "value": {"n": 1}},
        {"type": "CUSTOM", "name": "app.scalar", "value": 3},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "t2",
            "toolCallId": "k1",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "image", "source": {"type": "data", "value": "iVBORw0KGgo=", "mimeType": "image/png"}},
                {"type": "document", "source": {"type": "url", "value": "https://e.x/d.pdf"}},
                {"type": "mystery"},
            ],
        },
        {"type": "STEP_FINISHED", "stepName": "s1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "usage": [{"model": "m", "inputTokens": 3, "outputTokens": 4, "cachedInputTokens": 1}],
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "toolCallId": "k1"}, {"id": "i2"}]},
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {"type": "TOOL_CALL_START", "toolCallId": "p1", "toolCallName": "g"},
        {"type": "TOOL_CALL_END", "toolCallId": "p1"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r2",
            "outcome": {"type": "success", "pendingToolCallIds": ["p1", "zz"]},
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r3"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r3", "outcome": {"type": "cancelled"}},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r4"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "cut"},
        {"type": "RUN_ERROR", "message": "boom", "code": "E1"},
    ],
    # what breaks AG-UI: each a note (strict: the first an error), the events around it read on
    [
        "not an object",
        {"delta": "no type"},
        {"type": 5},
        {"type": "NOT_A_TYPE"},
        {"type": "RUN_STARTED", "threadId": "t"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "parentRunId": None},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1.5},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 10**17},
        {"type": "TEXT_MESSAGE_START", "messageId": 7},
        {"type": "TEXT_MESSAGE_END", "messageId": "never"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a"},
        {"type": "TEXT_MESSAGE_START", "messageId": "a"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "nope", "delta": "x"},
        {"type": "TOOL_CALL_END", "toolCallId": "nope"},
        {"type": "TOOL_CALL_CHUNK", "delta": "x"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "x"},
        {"type": "REASONING_MESSAGE_CHUNK", "delta": "x"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "q"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "other", "entityId": "a", "encryptedValue": "v"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "gone", "encryptedValue": "v"},
        {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "q", "content": 5},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "open", "delta": "left open"},
        {"type": "CUSTOM", "name": "late", "value": {}, "timestamp": -86_400_001, "metadata": {"app": 1}},
        {"type": "CUSTOM", "name": "late", "value": {}, "timestamp": -62135596800001},
        {"type": "CUSTOM", "name": "late", "value": {}, "timestamp": -62135596800000},
        {"type": "CUSTOM", "name": "late", "value": {}, "timestamp": -62135596800000 + 999 * 31_557_600_000},
    ],
    # runs that end with calls still open: the run's end ends them, with the input their arguments say
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "k1", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "k1", "delta": '{"a":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "k1", "delta": "1}"},
        {"type": "TOOL_CALL_START", "toolCallId": "k2", "toolCallName": "g"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "k2", "delta": '{"b"'},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"id": "i1", "toolCallId": "k1"}, {"id": "i2", "toolCallId": "k2"}],
            },
        },
        {"type": "TOOL_CALL_END", "toolCallId": "k1"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {"type": "TOOL_CALL_START", "toolCallId": "p1", "toolCallName": "g"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "p1", "delta": '{"c":[1]}'},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r2",
            "outcome": {"type": "success", "pendingToolCallIds": ["p1"]},
        },
    ],
    # what the decoder keeps nowhere and says: a result part's own keys, a call's encrypted value it cannot place,
    # what a RUN_FINISHED's usage and outcome say beyond AgentEvents
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "m",
            "toolCallId": "c",
            "content": [
                {"type": "text", "text": "see", "id": "p1", "a/b": 1},
                {"type": "image", "metadata": {}, "source": {"type": "file", "value": "f", "provider": "openai"}},
            ],
        },
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "c", "encryptedValue": "late"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "no", "encryptedValue": "never"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "cut", "encryptedValue": "s"},
        {"type": "TOOL_CALL_START", "toolCallId": "k", "toolCallName": "rm"},
        {"type": "TOOL_CALL_END", "toolCallId": "k"},
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r2",
            "usage": [{"provider": "p", "model": "a", "inputTokens": 1}, 5, {"model": "b", "x/y": -1}],
            "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "x", "toolCallId": "k", "m": 1}]},
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r3"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r3", "outcome": {"pendingToolCallIds": ["k", 3]}},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r4"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r4", "outcome": {"type": "interrupt", "interrupts": "ab"}},
    ],
    # ids and types quoted in notes: as JSON, cut by characters (code points, not UTF-16 units)
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_END", "messageId": "it's"},
        {"type": "TOOL_CALL_END", "toolCallId": "\U0001f600" * 41},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "\ud800" + "x" * 50, "delta": "x"},
        {"type": "X\U0001f600" * 31},
        {"type": "CUSTOM", "name": "n", "value": 1, "\U0001f600" * 41: 1},
    ],
    # carriers that contradict the events (said, not applied), and the renames and fallbacks agentmsg's encoder
    # writes (applied)
    AGUI_CONTRADICTED,
    # carried inputs other than the arguments shown (said, not applied), and ones that are them (applied)
    AGUI_INPUTS,
    # paused calls' inputs read by the reducer's rules (no input for an integer past 64 bits or a value nested
    # deeper than 254 levels; a byte-order mark skipped), not as an event's JSON text is read
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        *(
            event
            for call, args in (
                ("big", '{"n": 36893488147419103232}'),
                ("low", '{"n": -9223372036854775809}'),
                ("max", '{"n": 18446744073709551615}'),
                ("bom", '\ufeff{"a": 1}'),
                ("deep", '{"a": ' + "[" * 300 + "]" * 300 + "}"),
            )
            for event in (
                {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "f"},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": args},
                {"type": "TOOL_CALL_END", "toolCallId": call},
            )
        ),
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {
                "type": "interrupt",
                "interrupts": [{"toolCallId": c} for c in ("big", "low", "max", "bom", "deep")],
            },
        },
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r2"},
        {"type": "TOOL_CALL_START", "toolCallId": "p", "toolCallName": "g"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "p", "delta": '{"n": [1, 1e2, 99999999999999999999]}'},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r2", "outcome": {"pendingToolCallIds": ["p"]}},
    ],
    [
        {"type": "RUN_STARTED", "threadId": "run", "runId": "run", "metadata": {"agentmsg": {"replyId": ""}}},
        {"type": "TEXT_MESSAGE_START", "messageId": "b~2", "metadata": {"agentmsg": {"blockId": "b", "replyId": "x"}}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "b~2", "delta": "a", "metadata": {"agentmsg": {"blockId": "c"}}},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "k~1",
            "toolCallName": "f",
            "metadata": {"agentmsg": {"toolCallId": "k", "toolCallName": "__pending__", "value": {"a": 1}}},
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "k~1", "delta": "{}", "metadata": {"agentmsg": {"toolCallId": "k~"}}},
        {
            "type": "TOOL_CALL_END",
            "toolCallId": "k~1",
            "metadata": {"agentmsg.absent": ["toolCallId", "replyId", "id"]},
        },
        {"type": "CUSTOM", "name": "n", "value": {"a": 1}, "metadata": {"agentmsg": {"value": {"a": 1}, "name": 1}}},
        {"type": "RUN_FINISHED", "threadId": "run", "runId": "run", "metadata": {"agentmsg.absent": ["replyId"]}},
    ],
    # a call started again in the step (model call) it began in, another step between: its arguments go on, as the
    # reducer continues the call (same replyId and toolCallId), so the input carried at its second end is shown
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STEP_STARTED", "stepName": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"a": '},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "STEP_FINISHED", "stepName": "m1"},
        {"type": "STEP_STARTED", "stepName": "m2"},
        {"type": "TOOL_CALL_START", "toolCallId": "d", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "d", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "d"},
        {"type": "STEP_FINISHED", "stepName": "m2"},
        {"type": "STEP_STARTED", "stepName": "m1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "1}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c", "metadata": {"agentmsg": {"input": {"a": 1}}}},
        {"type": "STEP_FINISHED", "stepName": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ],
    # a STATE_DELTA's delta is a list (a JSON Patch): CUSTOM ag-ui.STATE_DELTA in both (a string delta refused)
    [
        {"type": "RUN_STARTED", "threadId": "th1", "runId": "r1"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/step", "value": 2}]},
        {"type": "STATE_DELTA", "delta": "not a patch"},
        {"type": "RUN_FINISHED", "threadId": "th1", "runId": "r1"},
    ],
    # an empty step name, then an empty run id: the reply of the events inside them (Python took "" for none)
    [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STEP_STARTED", "stepName": ""},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "STEP_FINISHED", "stepName": ""},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": ""},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": ""},
    ],
]


def encoded(events: list[Any]) -> list[Any]:
    enc = AGUIEncoder()
    out: list[Any] = []
    for e in events:
        out += enc.feed(e)
    return out + enc.close()


def streams() -> list[list[Any]]:
    out: list[list[Any]] = []
    for name in CASES:
        events = [e for e in events_of(load(name)) if isinstance(e, dict)]
        out.append(encoded(events))
    for seed in range(40):
        out.append(encoded(base_streams(random.Random(seed))))
    rng = random.Random(4030)
    out += [reordered(s, rng) for s in list(out) for _ in range(2)]
    # more notes than a decoder keeps (10,000): both keep as many and count the rest in one last note, at the cap
    flood = [{"type": f"BOGUS_{k}"} for k in range(10_050)] + FOREIGN[0]
    return [*out, *FOREIGN, flood]


def python_side(stream: list[Any], strict: bool) -> dict[str, Any]:
    return decoded(AGUIDecoder(strict=strict, clock=lambda: CLOCK), stream)


@pytest.mark.parametrize("strict", [False, True])
def test_the_typescript_decoder_gives_pythons_events_and_notes(strict: bool, tmp_path: Path) -> None:
    cases = streams()
    assert len(cases) > 200
    got = decoded_in_node("AGUIDecoder", "AGUIError", [{"stream": s, "strict": strict} for s in cases], CLOCK, tmp_path)
    assert len(got) == len(cases)
    errors = 0
    for n, (stream, ts) in enumerate(zip(cases, got, strict=True)):
        py = python_side(stream, strict)
        # what a JS number cannot hold (an integer beyond 2^53) compared as the double it becomes (docs/web.md)
        assert same_json(ts, py), (n, stream[:5])
        errors += py["error"] is not None
    if strict:
        assert errors >= 3  # the breaking events are errors in both


@pytest.fixture(scope="module")
def node_decoder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeDecoder]:
    with NodeDecoder("AGUIDecoder", "AGUIError", CLOCK, tmp_path_factory.mktemp("node")) as node:
        yield node


@pytest.mark.fuzz
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(agui_streams, st.booleans())
def test_both_decoders_read_any_stream_alike(node_decoder: NodeDecoder, stream: list[Any], strict: bool) -> None:
    """Streams of another producer, generated: the same events, notes (pointer, rule and message) and error."""
    py = python_side(stream, strict)
    ts = node_decoder.decode(stream, strict)
    assert same_json(ts, py), (ts, py)
