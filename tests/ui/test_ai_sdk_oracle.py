"""The oracle: the ``ai`` npm package's own client (``DefaultChatTransport``, whose ``parseJsonEventStream`` checks
every chunk against ``uiMessageChunkSchema``, and ``readUIMessageStream``, what ``useChat`` builds its messages
with) reads agentmsg's endpoint (``EventEndpoint``, ``?protocol=ai-sdk``) over loopback HTTP, in Node. The UIMessage
it builds has the parts of the message agentmsg's reducer makes of the same events: text, reasoning, tool calls with
their input and output, files, in the same order, under the same id."""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from agentmsg import Reducer, emit_events
from agentmsg.ui import ai_sdk
from agentmsg.web import EventEndpoint
from tests._support.events import CASES, _random_message, ev, events_of, load, read_jsonl
from tests._support.jsclient import NODE
from tests.conftest import ROOT
from tests.web._http import serving

TS = ROOT / "tests" / "typescript"
pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(
        NODE is None or not (TS / "node_modules" / "ai").is_dir(),
        reason="node or tests/typescript/node_modules (ai) not installed: make ts-deps",
    ),
]


def reduced(events: list[Any]) -> tuple[list[dict[str, Any]], Reducer]:
    r = Reducer()
    for e in events:
        r.feed(e)
    return [m.to_dict() for m in r.finish()], r


def parts_of_message(msg: dict[str, Any]) -> list[Any]:
    """What the UIMessage of ``msg`` holds, part by part, as the encoder says it (docs/ai-sdk.md)."""
    out: list[Any] = []
    calls: dict[str, list[Any]] = {}
    for block in msg["content"]:
        kind = block["type"]
        if kind == "text":
            out.append(["text", block["text"]])
        elif kind == "thinking":
            out.append(["reasoning", block["thinking"]])
        elif kind == "tool_use":
            error = block["metadata"].get("argumentsError") if block["input"] == {} else None
            if error is not None:
                calls[block["id"]] = ["tool", block["id"], block["name"], "output-error", block["content"], error]
            else:
                calls[block["id"]] = ["tool", block["id"], block["name"], "input-available", block["input"], None]
            out.append(calls[block["id"]])
        elif kind == "tool_result":
            call = calls.get(block["id"])
            if call is None:
                continue  # a result of a call not in this stream: carried, not shown
            texts = [o["text"] for o in block["output"] if o["type"] == "text"]
            whole = texts[0] if len(block["output"]) == 1 and texts else (block["output"] or "")
            if block["state"] == "error":
                call[3:] = ["output-error", call[4], whole if isinstance(whole, str) else json.dumps(whole)]
            elif block["state"] == "denied" and not block["output"]:
                call[3:] = ["output-denied", call[4], None]
            else:
                call[3:] = ["output-available", call[4], whole]
        elif kind == "hint":
            continue  # carried (HINT_BLOCK has no chunk)
        else:
            chunk = ai_sdk._file_chunk(block)
            assert chunk is not None
            out.append(["file", chunk["mediaType"], chunk["url"]])
    return out


def parts_of_ui(message: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for part in message["parts"]:
        kind = part["type"]
        if kind in ("text", "reasoning"):
            out.append([kind, part["text"]])
        elif kind.startswith("tool-"):
            state = part["state"]
            if state == "output-error":
                out.append(["tool", part["toolCallId"], kind[5:], state, part.get("input"), part["errorText"]])
            elif state == "output-available":
                out.append(["tool", part["toolCallId"], kind[5:], state, part["input"], part["output"]])
            else:
                out.append(["tool", part["toolCallId"], kind[5:], state, part.get("input"), None])
        elif kind == "file":
            out.append(["file", part["mediaType"], part["url"]])
        else:
            assert kind in ("step-start", "source-url") or kind.startswith("data-"), part
    return out


def read_with_ai(streams: list[list[Any]]) -> list[dict[str, Any]]:
    """Each stream served by EventEndpoint and read by the ai package's client, all in one Node process."""
    endpoints = [EventEndpoint(events, replay=None) for events in streams]
    app = Starlette(routes=[Route(f"/s{i}", e, methods=["GET", "POST"]) for i, e in enumerate(endpoints)])
    with serving(app) as port:
        urls = [f"http://127.0.0.1:{port}/s{i}?protocol=ai-sdk" for i in range(len(streams))]
        done = subprocess.run(
            [str(NODE), "ai-sdk-read.mjs", *urls], cwd=TS, capture_output=True, text=True, timeout=600, check=True
        )
    return read_jsonl(done.stdout)  # (JSON.stringify writes U+2028 and U+2029 raw: no line ends there)


def one_reply_streams() -> list[tuple[str, list[Any]]]:
    """Clean streams of one reply: the conformance vectors the reducer reads without a problem, and random emitted
    messages (text, thinking, tool calls and results, media)."""
    out: list[tuple[str, list[Any]]] = []
    for name in CASES:
        events = events_of(load(name))
        messages, r = reduced(events)
        if (
            len(messages) == 1
            and not r.problems
            and messages[0]["metadata"].get("agentscope_generate_reason") != "INTERRUPTED"
        ):
            out.append((name, events))
    rng = random.Random(30)
    for n in range(12):
        counter = iter(range(10**6))
        events = emit_events(
            _random_message(rng, n),
            chunk_size=rng.choice([None, 1, 5]),
            id_factory=lambda counter=counter: f"e{next(counter)}",  # type: ignore[misc]
            clock=lambda: "2026-01-01T00:00:00.000000Z",
        )
        out.append((f"emitted-{n}", list(events)))
    return out


def test_the_ai_packages_reader_builds_the_message_agentmsg_reduces() -> None:
    streams = one_reply_streams()
    assert len(streams) >= 20
    results = read_with_ai([events for _, events in streams])
    assert len(results) == len(streams)
    for (name, events), got in zip(streams, results, strict=True):
        assert got["errors"] == [], (name, got["errors"])
        assert got["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
        assert got["headers"]["content-type"].startswith("text/event-stream")
        (msg,), _ = reduced(events)
        ui = got["message"]
        assert ui is not None, name
        assert ui["role"] == "assistant"
        start: dict[str, Any] = next((e for e in events if e["type"] in ("AGENT_START", "MODEL_CALL_START")), {})
        # the UIMessage is named at its start: an AGENT_RESULT naming the message otherwise is carried, not shown
        assert ui["id"] == start.get("replyId", msg["id"]), name
        assert parts_of_ui(ui) == parts_of_message(msg), name
        # the transient carriers reach the client's onData, never the message
        assert not any(p["type"] == ai_sdk.CARRIER for p in ui["parts"])
        assert got["chunks"][-1]["type"] == "finish", name
        if msg["usage"]:
            assert ui["metadata"]["usage"] == msg["usage"], name


def test_an_error_and_a_cut_stream_as_the_ai_package_reads_them() -> None:
    at = "2026-01-01T00:00:00Z"
    failing = [
        {"type": "AGENT_START", "id": "1", "createdAt": at, "replyId": "r"},
        {"type": "TEXT_BLOCK_DELTA", "id": "2", "createdAt": at, "replyId": "r", "blockId": "t", "delta": "par"},
        {"type": "CUSTOM", "id": "3", "createdAt": at, "name": "agentmsg.error", "value": {"message": "upstream 500"}},
    ]
    (got,) = read_with_ai([failing])
    assert got["errors"] == ["Error: upstream 500"]
    assert parts_of_ui(got["message"]) == [["text", "par"]]


def test_a_call_gone_on_after_its_end_as_the_ai_package_reads_it() -> None:
    """END, DELTA, END of one call in one model call (AgentScope Java): the ai package's reader builds the tool part
    of the call the reducer keeps (its last object input over the arguments), whichever END gives the input."""
    at = "2026-01-01T00:00:00Z"

    def stream(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
        def ev(i: int, kind: str, reply: str = "m", **keys: Any) -> dict[str, Any]:
            return {"type": kind, "id": f"e{i}", "createdAt": at, "replyId": reply, **keys}

        return [
            ev(0, "AGENT_START", "r"),
            ev(1, "MODEL_CALL_START"),
            ev(2, "TOOL_CALL_START", toolCallId="c", toolCallName="f"),
            ev(3, "TOOL_CALL_DELTA", toolCallId="c", delta='{"a":'),
            ev(4, "TOOL_CALL_END", toolCallId="c", **first),
            ev(5, "TOOL_CALL_DELTA", toolCallId="c", delta="1}"),
            ev(6, "TOOL_CALL_END", toolCallId="c", **second),
            ev(7, "MODEL_CALL_END"),
            ev(8, "AGENT_END", "r"),
        ]

    given = {"state": "allowed", "input": {"z": 9}, "metadata": {"k": 1}}
    streams = [stream({}, {}), stream(given, {}), stream({}, given), stream(given, {"state": "bogus", "input": "x"})]
    results = read_with_ai(streams)
    shown = [parts_of_ui(got["message"]) for got in results]
    assert [got["errors"] for got in results] == [[]] * 4
    assert shown == [parts_of_message(reduced(events)[0][0]) for events in streams]
    assert [parts[0][4] for parts in shown] == [{"a": 1}, {"z": 9}, {"z": 9}, {"z": 9}]


def test_a_reply_of_the_same_id_again_is_one_message_to_the_ai_package_and_said_by_the_decoder() -> None:
    """Two replies of one replyId, one after the other: the reducer makes two messages of that id, and the encoder
    writes a ``start`` naming it for each; the ai package's reader goes on with the one UIMessage (both texts in
    it). agentmsg's decoder of those chunks gives the two replies back and says where the reader merged them
    (rule duplicate, at the second ``start``)."""
    at = "2026-01-01T00:00:00Z"

    def reply(n: int, text: str) -> list[dict[str, Any]]:
        def ev(i: int, kind: str, **keys: Any) -> dict[str, Any]:
            return {"type": kind, "id": f"e{n}{i}", "createdAt": at, "replyId": "r", **keys}

        return [
            ev(0, "AGENT_START"),
            ev(1, "TEXT_BLOCK_START", blockId=f"b{n}"),
            ev(2, "TEXT_BLOCK_DELTA", blockId=f"b{n}", delta=text),
            ev(3, "TEXT_BLOCK_END", blockId=f"b{n}"),
            ev(4, "AGENT_END"),
        ]

    events = [*reply(1, "one"), *reply(2, "two")]
    messages, _ = reduced(events)
    assert [m["id"] for m in messages] == ["r", "r"]
    (got,) = read_with_ai([events])
    assert got["errors"] == [] and got["message"]["id"] == "r"
    assert parts_of_ui(got["message"]) == [["text", "one"], ["text", "two"]]
    dec = ai_sdk.AiSdkDecoder(strict=True)
    back = [e for c in got["chunks"] for e in dec.feed(c)]
    starts = [i for i, c in enumerate(got["chunks"]) if c["type"] == "start"]
    assert [(n.pointer, n.rule) for n in dec.notes] == [(f"/{starts[1]}", "duplicate")]
    assert [m["id"] for m in reduced(back)[0]] == ["r", "r"]


def test_an_implicit_reply_after_a_reply_is_one_message_to_the_ai_package_and_said_by_the_decoder() -> None:
    """A reply, then events outside any reply whose first is no model call's start (an implicit reply, named by no
    replyId the encoder can give its ``start``): the reducer makes two messages, the encoder writes a ``start`` with
    no messageId for the second, and the ai package's reader goes on with the first UIMessage (both texts in it).
    agentmsg's decoder gives the two replies back and says where the reader merged them (rule duplicate, at the
    second ``start``), as it says a start naming the message again."""
    events = [
        ev(0, "AGENT_START"),
        ev(1, "TEXT_BLOCK_START", blockId="b1"),
        ev(2, "TEXT_BLOCK_DELTA", blockId="b1", delta="one"),
        ev(3, "TEXT_BLOCK_END", blockId="b1"),
        ev(4, "AGENT_END"),
        ev(5, "TEXT_BLOCK_START", blockId="b2"),
        ev(6, "TEXT_BLOCK_DELTA", blockId="b2", delta="two"),
        ev(7, "TEXT_BLOCK_END", blockId="b2"),
    ]
    messages, _ = reduced(events)
    assert [m["id"] for m in messages] == ["r", "msg-e5"]
    (got,) = read_with_ai([events])
    assert got["errors"] == [] and got["message"]["id"] == "r"
    assert parts_of_ui(got["message"]) == [["text", "one"], ["text", "two"]]
    starts = [(i, c.get("messageId")) for i, c in enumerate(got["chunks"]) if c["type"] == "start"]
    assert [s[1] for s in starts] == ["r", None]
    dec = ai_sdk.AiSdkDecoder(strict=True)
    back = [e for c in got["chunks"] for e in dec.feed(c)]
    assert [(n.pointer, n.rule) for n in dec.notes] == [(f"/{starts[1][0]}", "duplicate")]
    assert [m["id"] for m in reduced(back)[0]] == ["r", "msg-e5"]
