"""@agentmsg/client's reducer (TypeScript, run in Node from its build) against the Python SDK's, on random streams
(1,000 in ``make test``; ``make fuzz`` runs 25 times as many, with a fresh seed): every event type, interleavings,
Java's tool-call lifecycle, placeholders, duplicates, subagent events, whole blocks in other spellings and with
unknown keys, values of the wrong kind, what a reply ended with (finish reason, model, stop reason, errors), a low
``max_open_blocks`` on a third of them. The whole messages (wire form: key order, ids, ``argumentsError`` and
``agentmsg_reduce_errors`` texts included), the problems (pointer + rule, in order; the legacy-key notes' texts too)
and ``check_results`` must be the same.

What is left out is what JavaScript cannot represent (docs/web.md, "Runtime-specific differences"):
the streams hold no integer beyond 2^53 (a JS number is a double) and no object key that looks like an
array index (JS objects put those first); a number is compared by value, not by how it is spelled
(JSON.stringify writes the float 1500.0 as 1500, Python as 1500.0).
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import Reducer
from tests._support.budget import SEED, examples
from tests._support.jsclient import NODE, built_client, same_json

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run"),
]

AT = "2026-11-22T10:34:38.563248392Z"
SCRIPT = """
import fs from "node:fs";
import { Reducer } from %s;
const out = [];
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\\n")) {
  if (!line) continue;
  const { events, maxOpen } = JSON.parse(line);
  const r = new Reducer(maxOpen === null ? {} : { maxOpenBlocks: maxOpen });
  for (const e of events) r.feed(e);
  const messages = r.finish();
  const problems = r.problems;
  const notes = problems.filter((p) => p.rule === "legacy-key").map((p) => [p.pointer, p.message]);
  out.push({ messages, problems: problems.map((p) => [p.pointer, p.rule]), notes, checks: r.checkResults().map((p) => [p.pointer, p.rule]) });
}
process.stdout.write(JSON.stringify(out));
"""


def random_stream(rng: random.Random) -> list[Any]:
    blocks, calls, replies = ["text", "thinking", "b1"], ["c1", "c2", "c3"], ["m1", "m2", "m3"]
    names = ["get_weather", "__fragment__", "__pending__", "", None, "search"]
    out: list[Any] = []

    def ev(kind: str, **keys: Any) -> None:
        e: dict[str, Any] = {"type": kind, "id": f"e{len(out)}", "createdAt": AT, "replyId": rng.choice(replies)}
        if rng.random() < 0.01:
            e["id"] = rng.choice(["", 5, None])
        e.update(keys)
        if rng.random() < 0.03:  # a replayed event
            e["id"] = f"e{rng.randrange(len(out) + 1)}"
        if rng.random() < 0.02:
            e.pop(rng.choice(list(e)))  # a key missing
        if rng.random() < 0.02:
            e["source"] = "parent/child"
        out.append(e)

    def legacy_args() -> dict[str, Any]:
        """A tool call's arguments: mostly ``input``, else in the seeds' legacy shape (``arguments``) of every kind."""
        if rng.random() < 0.6:
            return {"input": {}}
        return rng.choice(
            [
                {"arguments": {"city": "Paris"}},
                {"arguments": '{"city": "Paris"}'},
                {"arguments": "not json"},
                {"arguments": None},
                {"arguments": 5},
                {"input": {"city": "Paris"}, "arguments": {"city": "Paris"}},
                {"input": {"city": "Rome"}, "arguments": {"city": "Paris"}},
                {"input": {}, "arguments": '{"x": 1}', "content": "other"},
            ]
        )

    fragments = ['{"city": ', '"Paris"', "}", "[1]", "not json", '{"a": 1.5e3}', "", '"x"', "null", "{}", " 12 "]
    b64 = ["QQ==", "QUJD", "QQ", "Q", "QUJDRA", "!!", "QQ=Q", ""]
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.05:
            ev("AGENT_START", name=rng.choice(["Friday", None, 5]))
        elif r < 0.08:
            ev("AGENT_END")
        elif r < 0.12:
            model = rng.choice([None, None, "gpt-x", 5])
            ev("MODEL_CALL_START", **({"modelName": model} if model is not None else {}))
        elif r < 0.16:
            usage = rng.choice(
                [
                    None,
                    {},
                    {"inputTokens": 3, "outputTokens": 4},
                    {"time": 0.5, "totalTokens": 9},
                    [1],
                    {"inputTokens": 1.5, "cachedTokens": True},
                    {"time": "slow", "outputTokens": 2},
                    {"totalTokens": None, "time": 2},
                ]
            )
            meta = rng.choice(
                [
                    None,
                    None,
                    {"finishReason": "stop"},
                    {"finishReason": "length", "model": "m-1"},
                    {"finishReason": 3},
                    {"model": ["x"]},
                    "meta",
                ]
            )
            keys: dict[str, Any] = {"usage": usage} if usage is not None else {}
            ev("MODEL_CALL_END", **keys, **({"metadata": meta} if meta is not None else {}))
        elif r < 0.30:
            kind = rng.choice(["TEXT", "THINKING", "DATA"])
            stage = rng.choice(["START", "DELTA", "DELTA", "DELTA", "END"])
            keys = {"blockId": rng.choice(blocks)}
            if stage == "DELTA":
                keys["delta"] = rng.choice(b64) if kind == "DATA" else rng.choice(["hé", "llo ", "☀️", "", 7])
                if kind == "THINKING" and rng.random() < 0.2:
                    keys[rng.choice(["signature", "redactedData"])] = "sig"
            elif stage == "START" and kind == "DATA":
                if rng.random() < 0.5:
                    keys["block"] = rng.choice(
                        [
                            {
                                "type": "image",
                                "source": {"type": "url", "url": "https://a.example/x.png"},
                                "min_pixels": 9,
                            },
                            {"type": "audio", "source": {"type": "base64", "media_type": "audio/wav", "data": "UklG"}},
                            {"type": "text", "text": "whole"},
                            {"type": "image"},
                            {
                                "type": "video",
                                "source": {"type": "url", "url": "u", "future": 1},
                                "future": {"a": None},
                            },
                            {"type": "image", "source": {"type": "url", "url": "u"}, "minPixels": "x"},
                        ]
                    )
                else:
                    keys.update(mediaType=rng.choice(["image/png", "", None]), name=rng.choice(["f.png", None]))
            elif stage == "START" and kind == "THINKING" and rng.random() < 0.3:
                keys.update(provider="anthropic", model="claude")
            elif stage == "END" and rng.random() < 0.2:
                keys["metadata"] = rng.choice([{"k": 1}, None, {}, {"signature": 5, "k": 1}, "m"])
            ev(f"{kind}_BLOCK_{stage}", **keys)
        elif r < 0.55:
            stage = rng.choice(["START", "DELTA", "DELTA", "DELTA", "END"])
            keys = {"toolCallId": rng.choice(calls)}
            name = rng.choice(names)
            if name is not None:
                keys["toolCallName"] = name
            if stage == "DELTA":
                keys["delta"] = rng.choice(fragments)
            if stage == "START" and rng.random() < 0.2:
                keys["thoughtSignature"] = "ts"
            if stage == "END" and rng.random() < 0.3:
                keys.update(
                    rng.choice(
                        [
                            {"input": {"x": 1}},
                            {"state": "allowed"},
                            {"metadata": {"m": True}},
                            {"input": "oops"},
                            {"state": "bogus"},
                            {"metadata": 5},
                        ]
                    )
                )
            ev(f"TOOL_CALL_{stage}", **keys)
        elif r < 0.70:
            stage = rng.choice(["START", "TEXT_DELTA", "TEXT_DELTA", "DATA_DELTA", "END"])
            keys = {"toolCallId": rng.choice(calls), "toolCallName": "get_weather"}
            if stage == "TEXT_DELTA":
                keys["delta"] = rng.choice(["sunny", " 25°C", ""])
            elif stage == "DATA_DELTA":
                keys["data"] = rng.choice(
                    [
                        {"type": "text", "text": "t"},
                        {"type": "thinking", "thinking": "x"},
                        {"type": "hint", "hint": "h"},
                        "bad",
                        5,
                    ]
                )
            elif stage == "END":
                keys["state"] = rng.choice(["success", "error", "interrupted", "bogus"])
                if rng.random() < 0.3:
                    keys["metadata"] = {"took": 1}
            ev(f"TOOL_RESULT_{stage}", **keys)
        elif r < 0.75:
            ev("HINT_BLOCK", blockId="h", hint="be brief", **({"hintSource": "system"} if rng.random() < 0.5 else {}))
        elif r < 0.80:
            ev(
                "AGENT_RESULT",
                result=rng.choice(
                    [
                        {"id": "res-1", "name": "Friday", "role": "ASSISTANT", "content": [], "metadata": {"k": "v"}},
                        {"id": "", "timestamp": "2026-01-01 00:00:00.000", "usage": {"inputTokens": 1}},
                        {"timestamp": "not a time"},
                        "bad",
                        {
                            "id": "r2",
                            "role": "USER",
                            "timestamp": "2026-01-01T10:00:00+02:00",
                            "content": [],
                            "future": 1,
                        },
                        {
                            "id": "r3",
                            "role": "ASSISTANT",
                            "content": [
                                {"type": "text", "text": "hé"},
                                {"type": "thinking", "thinking": "x"},
                                {"type": "tool_use", "id": rng.choice(calls), "name": "get_weather", **legacy_args()},
                            ],
                            "metadata": {"agentmsg_finish_reason": "from result", "k": 2},
                        },
                    ]
                ),
            )
        elif r < 0.90:
            call = {"id": rng.choice(calls), "name": "get_weather", **legacy_args()}
            if rng.random() < 0.5:
                call = {"type": "tool_use", **call}
            kind = rng.choice(
                [
                    "REQUIRE_USER_CONFIRM",
                    "REQUIRE_EXTERNAL_EXECUTION",
                    "USER_CONFIRM_RESULT",
                    "EXTERNAL_EXECUTION_RESULT",
                    "ALL_TOOLS_DENIED",
                ]
            )
            keys = {"toolCalls": [call]}
            if kind == "USER_CONFIRM_RESULT":
                keys = {"confirmResults": [{"confirmed": rng.random() < 0.5, "toolCall": call}]}
            elif kind == "EXTERNAL_EXECUTION_RESULT":
                result: dict[str, Any] = {"type": "tool_result", "id": call["id"], "name": "get_weather"}
                result["output"] = [{"type": "text", "text": "ok"}]
                if rng.random() < 0.3:  # the seeds' toolUseId and result
                    result = {
                        "toolUseId" if k == "id" else "result" if k == "output" else k: v for k, v in result.items()
                    }
                    result["result"] = rng.choice([result["result"], "ok", {"type": "text", "text": "ok"}, 5])
                keys = {"toolResults": [result]}
            ev(kind, **keys)
        elif r < 0.93:
            kind = rng.choice(["EXCEED_MAX_ITERS", "REQUEST_STOP", "SUBAGENT_EXPOSED", "CUSTOM", "REPLY_START"])
            keys = {}
            if kind == "REQUEST_STOP":
                keys = rng.choice([{}, {"reason": "budget"}, {"reason": ""}, {"reason": 5, "generateReason": "BAD"}])
            elif kind == "CUSTOM":
                keys = rng.choice(
                    [
                        {"name": "agentmsg.error", "value": {"message": "HTTP 500", "provider": "openai"}},
                        {"name": "agentmsg.error", "value": "oops"},
                        {"name": "other", "value": 1},
                        {},
                    ]
                )
            ev(kind, **keys)
        elif r < 0.95:
            out.append(rng.choice([None, 5, [1], {"type": "toString", "id": "zz"}, {"type": ["x"]}]))
        else:
            ev("TEXT_BLOCK_DELTA", blockId=rng.choice([["l"], {"o": 1}, 3]), delta="x")
    return out


def _line(case: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(case)
    except TypeError:  # (nested past the 254 levels orjson writes: an event close to limits.max_depth)
        return json.dumps(case).encode()


def _typescript(
    tmp_path: Path, cases: Sequence[tuple[list[Any], int | None]], template: str | None = None
) -> list[dict[str, Any]]:
    """What the TypeScript reducer (@agentmsg/client, built) makes of each stream (events, max_open_blocks): its
    messages, problems and checks, as :func:`_python` gives Python's (``template``: the script, SCRIPT by
    default)."""
    path = tmp_path / "streams.jsonl"
    path.write_bytes(b"\n".join(_line({"events": s, "maxOpen": m}) for s, m in cases) + b"\n")
    script = tmp_path / "reduce.mjs"
    script.write_text((template or SCRIPT) % json.dumps(built_client().as_uri()), encoding="utf-8")
    done = subprocess.run([str(NODE), str(script), str(path)], capture_output=True, text=True, timeout=300, check=True)
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def _python(events: list[Any], max_open: int | None, said: bool = False) -> dict[str, Any]:
    """What Python's reducer makes of a stream, as :func:`_typescript` gives TypeScript's; ``said``: each problem's
    words too (but the event schema's check's, said in each runtime's validator's words: docs/web.md)."""
    r = Reducer(max_open_blocks=max_open)
    for e in events:
        r.feed(e)
    return {
        "messages": [orjson.loads(m.to_json_bytes()) for m in r.finish()],  # (each message alone: within 254 levels)
        "problems": [
            [p.pointer, p.rule, None if p.schema_location else p.message] if said else [p.pointer, p.rule]
            for p in r.problems
        ],
        "notes": [[p.pointer, p.message] for p in r.problems if p.rule == "legacy-key"],  # (the same text too)
        "checks": [[p.pointer, p.rule] for p in r.check_results()],
    }


@pytest.mark.fuzz
def test_typescript_reducer_agrees_with_python_on_random_streams(tmp_path: Path) -> None:
    """(Every rule and metadata key asserted below is reached by the first 500 streams.)"""
    rng = random.Random(f"{SEED}/reducer")
    cases = [(random_stream(rng), rng.choice([None, None, 3])) for _ in range(examples(1000))]
    results = _typescript(tmp_path, cases)
    mismatches = []
    for index, ((events, max_open), ts) in enumerate(zip(cases, results, strict=True)):
        py = _python(events, max_open)
        if not same_json(ts, py):
            mismatches.append((index, events, max_open, py, ts))
    if mismatches:
        index, events, max_open, py, ts = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(cases)} streams differ; first (#{index}, max_open_blocks={max_open}):\n"
            f" events {json.dumps(events)}\n python {json.dumps(py)}\n ts     {json.dumps(ts)}"
        )
    # The streams reach what the rules are about, so agreement means something.
    reached = {rule for r in results for _, rule in r["problems"]}
    # (a tool result's data delta of text is the seeds' legacy base64 shape: read with a note; a number, anyOf)
    rules = {"order", "type", "enum", "pattern", "required", "max-open-blocks", "anyOf", "legacy-key", "minLength"}
    assert rules <= reached
    # the seeds' legacy keys inside the events that carry whole tool calls and results, and AGENT_RESULT's message
    legacy = {
        p.split("/")[2] for r in results for p, rule in r["problems"] if rule == "legacy-key" and p.count("/") > 2
    }
    assert {"toolCalls", "confirmResults", "toolResults", "result"} <= legacy
    metadata = {k for r in results for m in r["messages"] for k in m["metadata"]}
    assert {"agentmsg_finish_reason", "agentmsg_model", "agentmsg_stop_reason", "agentmsg_errors"} <= metadata
    assert {"agentmsg_reduce_errors", "agentmsg_hitl"} <= metadata
    assert any(r["checks"] for r in results)
    assert any(m["id"].startswith("msg-") for r in results for m in r["messages"])


def test_a_usage_java_dropped_keys_from_comes_back_from_its_copy_alike(tmp_path: Path) -> None:
    """A reply whose model call's usage came through Java (its ChatUsage keys only) and whose AGENT_RESULT's metadata
    holds the usage's copy (``_chat_usage``, with a key Java drops): both reducers put the key back into the
    message's usage, as every Python reader does (docs/wire-format.md); the TypeScript one kept it in the copy only
    (found by make fuzz: a mutated key). A copy of another usage (a count differs) restores nothing, in both."""

    def stream(copy_input: int) -> list[Any]:
        def ev(kind: str, **keys: Any) -> dict[str, Any]:
            return {"type": kind, "id": f"e{kind}", "createdAt": AT, "replyId": "r1", **keys}

        usage = {"inputTokens": 7, "outputTokens": 3, "cachedTokens": 0, "time": 0.5, "totalTokens": 10}
        copy = {**usage, "inputTokens": copy_input, "reasoningTokens": 2}
        result = {"id": "m1", "name": "a", "role": "ASSISTANT", "content": [], "metadata": {"_chat_usage": copy}}
        return [
            ev("AGENT_START", role="assistant"),
            ev("MODEL_CALL_START"),
            ev("TEXT_BLOCK_START", blockId="t"),
            ev("TEXT_BLOCK_DELTA", blockId="t", delta="hi"),
            ev("TEXT_BLOCK_END", blockId="t"),
            ev("MODEL_CALL_END", usage=usage),
            ev("AGENT_RESULT", result=result),
        ]

    cases = [(stream(7), None), (stream(8), None)]
    agreeing, other = _typescript(tmp_path, cases)
    for (events, max_open), ts in zip(cases, (agreeing, other), strict=True):
        assert same_json(ts, _python(events, max_open))
    assert agreeing["messages"][0]["usage"]["reasoningTokens"] == 2
    assert "reasoningTokens" not in other["messages"][0]["usage"]


def test_a_byte_order_mark_before_a_calls_arguments_is_read_alike(tmp_path: Path) -> None:
    """A tool call's arguments text that starts with a byte-order mark: both reducers skip it, as every reader of
    JSON text does (docs/wire-format.md), and read the object after it; the TypeScript reducer said "arguments are
    not valid JSON" (found by make fuzz: an inserted BOM). A second mark, or one after a space, is a syntax error in
    both; the text itself is kept as it came. The seeds' legacy ``arguments`` key is read the same way."""

    def ev(kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{kind}{len(keys)}", "createdAt": AT, "replyId": "r1", **keys}

    def stream(arguments: str) -> list[Any]:
        return [
            ev("AGENT_START", role="assistant"),
            ev("TOOL_CALL_START", toolCallId="c1", toolCallName="f"),
            ev("TOOL_CALL_DELTA", toolCallId="c1", delta=arguments),
            ev("TOOL_CALL_END", toolCallId="c1"),
            ev("AGENT_END"),
        ]

    def legacy(arguments: str) -> list[Any]:  # (the call as the message's metadata agentmsg_hitl keeps it)
        call = {"type": "tool_use", "id": "c1", "name": "f", "arguments": arguments}
        return [
            ev("AGENT_START", role="assistant"),
            ev("REQUIRE_EXTERNAL_EXECUTION", toolCalls=[call]),
            ev("AGENT_END"),
        ]

    texts = ['\ufeff{"a": 1}', '\ufeff\ufeff{"a": 1}', ' \ufeff{"a": 1}']
    cases = [(make(t), None) for make in (stream, legacy) for t in texts]
    results = _typescript(tmp_path, cases)
    for (events, max_open), ts in zip(cases, results, strict=True):
        assert same_json(ts, _python(events, max_open)), (events, ts)
    calls = [r["messages"][0]["content"][0] for r in results[:3]]
    calls += [r["messages"][0]["metadata"]["agentmsg_hitl"][0]["toolCalls"][0] for r in results[3:]]
    for call, text in zip(calls, texts * 2, strict=True):
        assert call["content"] == text  # (kept as it came)
    assert [c["input"] for c in calls] == [{"a": 1}, {}, {}] * 2
    assert ["argumentsError" in c.get("metadata", {}) for c in calls] == [False, True, True] * 2


def test_a_message_valid_in_parts_but_too_deep_whole_is_salvaged_alike(tmp_path: Path) -> None:
    """Events each valid, whose message nests past limits.max_depth only whole (a block's metadata, valid alone, two
    levels deeper inside the message), or inside an AGENT_RESULT: both reducers take the same steps (_build.py
    ``_salvage``): the text and thinking kept, then the message without its blocks, keeping its name, timestamp,
    metadata and usage. The TypeScript reducer went straight to an empty message of its id (found by a
    differential fuzz of the two reducers)."""

    def ev(i: int, kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{i}", "createdAt": AT, **keys}

    def nested(n: int) -> Any:
        value: Any = 1
        for _ in range(n):
            value = [value]
        return value

    def stream(depth: int, kind: str) -> list[Any]:
        return [
            ev(0, "AGENT_START", replyId="r", name="n"),
            ev(1, "MODEL_CALL_START", replyId="m", modelName="g"),
            ev(2, f"{kind}_BLOCK_START", replyId="m", blockId="p"),
            ev(3, f"{kind}_BLOCK_DELTA", replyId="m", blockId="p", delta="kept?"),
            ev(4, f"{kind}_BLOCK_END", replyId="m", blockId="p", metadata={"x": nested(depth)}),
            ev(5, "MODEL_CALL_END", replyId="m", usage={"inputTokens": 3, "outputTokens": 4}),
            ev(6, "AGENT_END", replyId="r"),
        ]

    cases = [(stream(depth, kind), None) for depth in (249, 250, 251) for kind in ("THINKING", "TEXT")]
    results = _typescript(tmp_path, cases)
    for (events, max_open), ts in zip(cases, results, strict=True):
        assert same_json(ts, _python(events, max_open)), (events[4], ts)
    (deepest,) = results[-2]["messages"]  # (THINKING, 251: a thinking block keeps its metadata)
    assert (deepest["name"], deepest["usage"]["inputTokens"], deepest["content"]) == ("n", 3, [])
    assert deepest["metadata"]["agentmsg_model"] == "g" and deepest["timestamp"] is not None


def test_an_agentscope_python_message_in_agent_result_is_read_alike(tmp_path: Path) -> None:
    """The message of an AGENT_RESULT as AgentScope Python writes it (a lowercase role, 2.x ``created_at``, ``usage``,
    ``finished_reason``... and block keys; _codec/legacy.py ``message``): the TypeScript reducer said ``enum`` at
    the role and read none of it. Both now read it alike: messages, problems and each note's text, for the shapes
    below, the edges of ``created_at`` included (a trailing newline, Python's whitespace, no real date, a leap
    second, an offset out of range). The shared vectors (python-agent-result-*) pin the common shapes."""

    def ev(kind: str, **keys: Any) -> dict[str, Any]:
        return {"type": kind, "id": f"e{kind}", "createdAt": AT, "replyId": "r1", **keys}

    base: dict[str, Any] = {
        "id": "m1",
        "name": "agent",
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "metadata": {},
    }
    blocks: list[Any] = [
        {"type": "text", "text": "x", "id": "b1", "created_at": "2026-03-01T10:00:00", "finished_at": None},
        {"type": "thinking", "thinking": "t", "signature": "s", "redacted_thinking_data": "r", "metadata": {"k": 1}},
        {"type": "thinking", "thinking": "t", "signature": 5},
        {"type": "tool_call", "id": "c1", "name": "f", "input": '{"a":1}', "suggested_rules": None},
        {"type": "tool_call", "id": "c2", "name": "f", "input": "[1]", "content": "other"},
        {"type": "tool_use", "id": "c3", "name": "f", "input": {}, "raw_input": "{}"},
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png", "media_type": "image/png"}, "name": None},
        {"type": "tool_result", "id": "c1", "name": "f", "output": "ok", "created_at": "x"},
    ]
    results: list[dict[str, Any]] = [
        base,
        {**base, "role": "user", "content": "hello", "metadata": None},
        {**base, "role": "system", "content": [{"type": "tool_result", "id": "c", "name": "f", "output": "o"}]},
        {**base, "role": "ASSISTANT", "content": "plain", "metadata": None, "created_at": "2026-03-01T10:00:00"},
        {**base, "content": blocks, "usage": {"input_tokens": 3, "output_tokens": 4, "cache_input_tokens": 1}},
        {**base, "usage": {"input_tokens": 1, "inputTokens": 2}, "finished_reason": "error", "error": "boom"},
        {**base, "finished_reason": "exceed_max_iters", "structured_output": {"a": 1}, "finished_at": None},
        {**base, "finished_reason": "interrupted", "metadata": {"agentscope_generate_reason": "MODEL_STOP"}},
        {**base, "structured_output": [1], "metadata": 5, "finished_reason": "completed"},
        {**base, "timestamp": "2026-03-01 10:00:00.000", "created_at": "2026-03-01T10:00:00"},
    ]
    stamps: list[Any] = [
        "2026-03-01T10:00:00.123456",
        "2026-03-01T10:00:00+02:00",
        "2026-03-01T10:00:00\n",
        " 2026-03-01T10:00:00",
        "\x1c2026-03-01T10:00:00Z",
        "\ufeff2026-03-01T10:00:00Z",
        "0000-01-01T00:00:00",
        "2026-03-01T10:00:60",
        "2024-02-29T10:00:00.123456789",
        "2023-02-29T10:00:00",
        "2026-03-01t10:00:00+24:00",
        "2026-03-01 10:00:00",
        "2026-03-01T10:00:00.1234567890",
        "9999-12-31T23:59:60",
        "9999-12-31T23:59:59",
        "2026-03-01T10:00:00.1234567890123+02:00",
        "2026-03-01 10:00:00.1234567890",
        5,
    ]
    results += [{**base, "created_at": stamp} for stamp in stamps]
    cases: list[tuple[list[Any], int | None]] = [
        ([ev("AGENT_START"), ev("AGENT_RESULT", result=result), ev("AGENT_END")], None) for result in results
    ]
    for (events, max_open), ts in zip(cases, _typescript(tmp_path, cases), strict=True):
        py = _python(events, max_open)
        assert same_json(ts, py), (events, py, ts)
        assert py["problems"][0] == ["/1/result/role", "legacy-key"] or events[1]["result"]["role"] == "ASSISTANT"


#: What an event's ids (``id``, ``replyId``, ``blockId``, ``toolCallId``) are given, of every JSON type: the strings
#: the streams use, and what cannot be an id (no whole float: JSON.stringify writes 1.0 as 1)
ODD_IDS: list[Any] = [True, False, None, 0, 1, -7, 1.5, -2.25e-7, 1e300, "", [], ["l"], [1, True, None], {}, {"o": 1}]
ODD_IDS += [{"a": [1, {"b": "c"}]}, "it's", 'q"', "\n", "é" * 50, [[[[[[[1]]]]]]], list(range(9)), 2**53]
REPR_SCRIPT = SCRIPT.replace(
    "problems.map((p) => [p.pointer, p.rule])", "problems.map((p) => [p.pointer, p.rule, p.message])"
)


def odd_id_stream(rng: random.Random) -> list[Any]:
    """Events of every kind that carries an id, each id a string the stream uses or, one time in four, any JSON
    value (:data:`ODD_IDS`)."""
    pools = {"id": [], "replyId": ["m1", "m2"], "blockId": ["t", "b"], "toolCallId": ["c1", "c2"]}
    kinds = {
        "AGENT_START": (),
        "AGENT_END": (),
        "MODEL_CALL_START": (),
        "MODEL_CALL_END": (),
        "REPLY_START": (),
        "TEXT_BLOCK_START": ("blockId",),
        "TEXT_BLOCK_DELTA": ("blockId",),
        "TEXT_BLOCK_END": ("blockId",),
        "THINKING_BLOCK_START": ("blockId",),
        "THINKING_BLOCK_DELTA": ("blockId",),
        "THINKING_BLOCK_END": ("blockId",),
        "DATA_BLOCK_START": ("blockId",),
        "DATA_BLOCK_DELTA": ("blockId",),
        "DATA_BLOCK_END": ("blockId",),
        "HINT_BLOCK": ("blockId",),
        "TOOL_CALL_START": ("toolCallId",),
        "TOOL_CALL_DELTA": ("toolCallId",),
        "TOOL_CALL_END": ("toolCallId",),
        "TOOL_RESULT_START": ("toolCallId",),
        "TOOL_RESULT_TEXT_DELTA": ("toolCallId",),
        "TOOL_RESULT_END": ("toolCallId",),
    }
    extra: dict[str, dict[str, Any]] = {
        "TEXT_BLOCK_DELTA": {"delta": "x"},
        "THINKING_BLOCK_DELTA": {"delta": "y"},
        "DATA_BLOCK_START": {"mediaType": "image/png"},
        "DATA_BLOCK_DELTA": {"delta": "QQ=="},
        "HINT_BLOCK": {"hint": "h"},
        "TOOL_CALL_START": {"toolCallName": "f"},
        "TOOL_CALL_DELTA": {"delta": "{}"},
        "TOOL_RESULT_START": {"toolCallName": "f"},
        "TOOL_RESULT_TEXT_DELTA": {"delta": "ok"},
        "TOOL_RESULT_END": {"state": "success"},
    }
    out: list[Any] = []
    for n in range(rng.randint(1, 25)):
        kind = rng.choice(list(kinds))
        event: dict[str, Any] = {"type": kind, "id": f"e{n}", "createdAt": AT}
        for key in ("id", "replyId", *kinds[kind]):
            if rng.random() < 0.25:
                event[key] = rng.choice(ODD_IDS)
            elif key != "id":
                event[key] = rng.choice(pools[key])
        event.update(extra.get(kind, {}))
        out.append(event)
    return out


@pytest.mark.fuzz
def test_ids_of_every_json_type_are_said_alike(tmp_path: Path) -> None:
    """Events whose ids (``id``, ``replyId``, ``blockId``, ``toolCallId``) are booleans, numbers, null, objects,
    arrays or odd strings, through both reducers: the same messages and the same problems, pointer, rule and each
    message word for word (a value quoted as Python's ``short_repr`` quotes it) but for what the event schema's
    check found (pointer and rule: the words are each validator's own, docs/web.md)."""
    rng = random.Random(f"{SEED}/odd-ids")
    cases = [(odd_id_stream(rng), rng.choice([None, None, 2])) for _ in range(examples(1000))]
    results = _typescript(tmp_path, cases, REPR_SCRIPT)
    mismatches = []
    for (events, max_open), ts in zip(cases, results, strict=True):
        py = _python(events, max_open, said=True)
        for mine, theirs in zip(ts["problems"], py["problems"], strict=False):
            if theirs[2] is None and mine[:2] == theirs[:2]:
                mine[2] = None
        if not same_json(ts, py):
            mismatches.append((events, max_open, py, ts))
    if mismatches:
        events, max_open, py, ts = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(cases)} streams differ; first (max_open_blocks={max_open}):\n"
            f" events {json.dumps(events)}\n python {json.dumps(py)}\n ts     {json.dumps(ts)}"
        )
    said = {type(v).__name__ for events, _ in cases for e in events for k, v in e.items() if k != "createdAt"}
    assert {"bool", "int", "float", "NoneType", "list", "dict", "str"} <= said
    # (what quotes an id the reducer keeps, not the event's: a cut reply's open blocks, the one closed for room)
    quoted = [p[2] for r in results for p in r["problems"] if p[1] in ("incomplete_stream", "max-open-blocks")]
    assert any("True" in q for q in quoted) and any("max-open-blocks" in p[1] for r in results for p in r["problems"])
