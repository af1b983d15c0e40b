"""@agentmsg/client's AI SDK UI message stream decoder (TypeScript, ``AiSdkDecoder`` in sdk/typescript/src/aisdk.ts,
run in Node from its build) against Python's (``agentmsg.ui.ai_sdk.AiSdkDecoder``), on the same chunk streams: what
agentmsg's encoder writes for every reducer vector and for random emitted streams, those streams with chunks
dropped, repeated and swapped (seeded), a stream of another producer, chunks the AI SDK's schema refuses, and
streams Hypothesis generates (tests/_support/uistreams.py). The AgentEvents (ids and ``createdAt`` included, key
order too) and the notes (pointer, rule and message, in order) must be the same, tolerant and strict."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmsg.ui import ai_sdk
from tests._support.budget import examples
from tests._support.events import CASES, base_streams, events_of, load
from tests._support.jsclient import NODE, NodeDecoder, decoded, decoded_in_node, same_json
from tests._support.mutators import reordered
from tests._support.uistreams import AISDK_CONTRADICTED, ai_sdk_streams
from tests.ui.test_ai_sdk import FOREIGN

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run"),
]

CLOCK = "2026-01-01T00:00:00.000000Z"

BAD: list[Any] = [
    {"type": "start", "messageId": "m", "messageMetadata": {"a": 1}},
    {"type": "text-delta", "id": "t"},
    {"type": "text-delta", "id": "t", "delta": 5},
    {"type": "text-bogus", "id": "t"},
    {"id": "t"},
    {"type": 3},
    "text",
    {"type": "data-"},
    {"type": "data-x"},
    {"type": "data-agentmsg", "data": 1},
    {"type": "data-x", "data": 1, "id": "d1", "transient": "yes"},
    {"type": "tool-input-start", "toolCallId": "c"},
    {"type": "tool-approval-response", "approvalId": "a", "approved": "yes"},
    {"type": "text-start", "id": "t", "providerMetadata": {"x": {}}},
    {"type": "text-delta", "id": "t", "delta": "x", "providerMetadata": []},
    {"type": "text-end", "id": "t", "citations": [1]},
    {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": [1, 2]},
    {"type": "tool-input-error", "toolCallId": "e", "toolName": "f", "input": {"a": 1}, "errorText": "bad"},
    {"type": "tool-output-available", "toolCallId": "c", "output": 1, "preliminary": True},
    {"type": "tool-output-denied", "toolCallId": "zz"},
    {"type": "source-url", "sourceId": "s", "url": "https://x"},
    {"type": "source-document", "sourceId": "s", "mediaType": "a/b", "title": "t"},
    {"type": "file", "mediaType": "audio/wav", "url": "https://x/a.wav"},
    {"type": "file", "mediaType": "audio/*", "url": "https://x/b.wav"},
    {"type": "reset-step"},
    {"type": "custom", "kind": "a.b"},
    {"type": "abort"},
    {"type": "message-metadata", "messageMetadata": {}},
    # a tool result's carried fields of the wrong shape (they were a TypeError in Python, in JS for deltas: true)
    {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"deltas": True}}},
    {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"deltas": [5]}}},
    {"type": "data-agentmsg", "data": {"rest": "TOOL_RESULT", "fields": {"end": [1]}}},
    {"type": "tool-output-available", "toolCallId": "c", "output": "done"},
    # a null errorText, and a carried delta's createdAt of the wrong type: the two sides read them alike
    {"type": "tool-output-denied", "toolCallId": "c2", "errorText": None},
    # an errorText on a denied output, no text and falsy: said, quoted, in both (no text: a denied result has none)
    *({"type": "tool-output-denied", "toolCallId": f"f{k}", "errorText": v} for k, v in enumerate(([], {}, 0, False))),
    {
        "type": "data-agentmsg",
        "data": {
            "rest": "TOOL_RESULT",
            "fields": {
                "deltas": [{"type": "TOOL_RESULT_TEXT_DELTA", "toolCallId": "c3", "delta": "x", "createdAt": []}]
            },
        },
    },
    {"type": "tool-output-available", "toolCallId": "c3", "output": "x"},
    {"type": "finish", "finishReason": "done"},
    {"type": "finish", "finishReason": "length"},
]


# a tool's keys no AgentEvent keeps, on every kind of tool chunk (said once per stream and key)
TOOL_KEYS: list[dict[str, Any]] = [
    {"type": "start"},
    {"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "title": "Weather", "dynamic": False},
    {"type": "tool-input-available", "toolCallId": "c", "toolName": "f", "input": {}, "toolMetadata": {"v": 1}},
    {"type": "tool-output-available", "toolCallId": "c", "output": 1, "providerExecuted": True, "dynamic": True},
    {"type": "finish"},
]


# values no AgentEvent keeps, quoted in notes (once per value), and values of those keys the AI SDK's schema refuses
QUOTED: list[dict[str, Any]] = [
    {"type": "start"},
    {"type": "tool-input-start", "toolCallId": "c", "toolName": "f", "inputEncoding": "text"},
    {"type": "tool-input-start", "toolCallId": "d", "toolName": "f", "inputEncoding": "json"},
    {"type": "tool-input-start", "toolCallId": "e", "toolName": "f", "inputEncoding": "yaml"},
    {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c", "reason": "why", "signature": "s"},
    {"type": "tool-approval-request", "approvalId": "b", "toolCallId": "d", "signature": 5},
    {
        "type": "tool-approval-request",
        "approvalId": "c",
        "toolCallId": "e",
        "approvalDescriptor": {"a": [1, "x" * 300]},
    },
    {
        "type": "tool-approval-request",
        "approvalId": "c",
        "toolCallId": "e",
        "inputSchemaInput": "s",
        "isAutomatic": False,
    },
    {"type": "tool-approval-request", "approvalId": "c", "toolCallId": "e", "isAutomatic": "no"},
    {"type": "tool-input-start", "toolCallId": "\U0001f600" * 3, "toolName": "f", "title": "\U0001f600" * 201},
    {"type": "tool-output-available", "toolCallId": "c", "output": 1, "toolMetadata": {"t": "\ud800"}},
    # numbers and keys as JSON.stringify writes what JSON.parse read: 1, 0, 1e-7, the double, index keys first
    {
        "type": "tool-output-available",
        "toolCallId": "d",
        "output": 1,
        "toolMetadata": {"b": 1.0, "1": [-0.0, 1e-7, 2**64]},
    },
    {"type": "tool-output-available", "toolCallId": "d", "output": 1, "toolMetadata": "not an object"},
    {"type": "tool-input-start", "toolCallId": "g", "toolName": "f", "toolMetadata": [1]},
    {"type": "tool-approval-response", "approvalId": "a", "approved": True, "reason": "ok"},
    # a note past 400 characters (code points): cut in its middle, saying how many it leaves out, as Python's Problem
    # cuts every message (the client kept it whole: found by make fuzz)
    *(
        {"type": "tool-approval-request", "approvalId": "d", "toolCallId": "e", "reason": x, "approvalDescriptor": [x]}
        for x in ("0" * 195, "\U0001f600" * 195)
    ),
    {"type": "abort", "reason": "\ud800" + "\U0001f600" * 250},
    {"type": "abort", "reason": None},
    {"type": "abort", "reason": 1},
]

#: notes longer than a Problem's message holds (errors.MESSAGE_MAX, 400 characters): both cut them in the middle
#: alike, counted in code points (a quoted string of control characters is six times as long as JSON text)
LONG_NOTES = [
    {
        "type": "tool-approval-request",
        "approvalId": "a",
        "toolCallId": "a",
        "approvalDescriptor": "0" * 177 + "\x1f" * 8 + "\x0b" + "\x07" * 9,
        "isAutomatic": False,
    },
    {"type": "tool-approval-request", "approvalId": "b", "toolCallId": "b", "approvalDescriptor": "\x01" * 200},
    {"type": "tool-approval-request", "approvalId": "c", "toolCallId": "c", "signature": 1, "reason": "\x02" * 200},
    {
        "type": "tool-approval-request",
        "approvalId": "d",
        "toolCallId": "d",
        "approvalDescriptor": "\U0001f600\x01" * 150,
    },
]


def streams() -> list[list[Any]]:
    out: list[list[Any]] = []
    for name in CASES:
        out.append(ai_sdk.encode([e for e in events_of(load(name)) if isinstance(e, dict)]))
    for seed in range(40):
        out.append(ai_sdk.encode(base_streams(random.Random(seed))))
    from tests.jsclient.test_reducer import random_stream  # garbled streams: every rule of the encoder and decoder

    out += [ai_sdk.encode(random_stream(random.Random(seed))) for seed in range(100)]
    from tests.ui.test_ai_sdk import UNNAMED_MODEL_CALL  # (a replyId carried as null)

    out.append(ai_sdk.encode(UNNAMED_MODEL_CALL))
    rng = random.Random(4031)
    out += [reordered(s, rng) for s in list(out) for _ in range(2)]
    # more notes than a decoder keeps (10,000): both keep as many and count the rest in one last note, at the cap
    flood = [{"type": f"bogus-{k}"} for k in range(10_050)] + FOREIGN
    return [*out, FOREIGN, BAD, TOOL_KEYS, QUOTED, AISDK_CONTRADICTED, LONG_NOTES, flood]


def python_side(stream: list[Any], strict: bool) -> dict[str, Any]:
    return decoded(ai_sdk.AiSdkDecoder(strict=strict, clock=lambda: CLOCK), stream)


@pytest.mark.parametrize("strict", [False, True])
def test_the_typescript_decoder_gives_pythons_events_and_notes(strict: bool, tmp_path: Path) -> None:
    cases = streams()
    assert len(cases) > 200
    got = decoded_in_node(
        "AiSdkDecoder", "AiSdkError", [{"stream": s, "strict": strict} for s in cases], CLOCK, tmp_path
    )
    assert len(got) == len(cases)
    for n, (stream, ts) in enumerate(zip(cases, got, strict=True)):
        py = python_side(stream, strict)
        # what a JS number cannot hold (an integer beyond 2^53) compared as the double it becomes (docs/web.md)
        assert same_json(ts, py), (n, stream[:5], [k for k in ts if ts[k] != py[k]])
    if not strict:
        assert len(python_side(BAD, False)["notes"]) >= 20


@pytest.fixture(scope="module")
def node_decoder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeDecoder]:
    with NodeDecoder("AiSdkDecoder", "AiSdkError", CLOCK, tmp_path_factory.mktemp("node")) as node:
        yield node


@pytest.mark.fuzz
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ai_sdk_streams, st.booleans())
def test_both_decoders_read_any_stream_alike(node_decoder: NodeDecoder, stream: list[Any], strict: bool) -> None:
    """Streams of another producer, generated: the same events, notes (pointer, rule and message) and error."""
    py = python_side(stream, strict)
    ts = node_decoder.decode(stream, strict)
    assert same_json(ts, py), (ts, py)
