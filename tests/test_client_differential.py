"""Differential test: @agentmsg/client's reducer (TypeScript, run in Node from its build)
against the Python reducer on thousands of random streams: every event type, interleavings, Java's
tool-call lifecycle, placeholders, duplicates, subagent events, whole blocks in other spellings, bad
keys and types. The messages (wire form) and the problems (pointer + rule) must be the same.

Texts that each runtime words itself (argumentsError, agentmsg_reduce_errors) and ids the reducer
has to mint are compared by shape only.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import Reducer
from tests._client import NODE, built_client

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run")

AT = "2026-11-22T10:34:38.563248392Z"
SCRIPT = """
import fs from "node:fs";
import { Reducer } from %s;
const out = [];
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\\n")) {
  if (!line) continue;
  const r = new Reducer();
  for (const e of JSON.parse(line)) r.feed(e);
  out.push({ messages: r.finish(), problems: r.problems.map((p) => [p.pointer, p.rule]) });
}
process.stdout.write(JSON.stringify(out));
"""


def random_stream(rng: random.Random) -> list[Any]:
    blocks, calls, replies = ["text", "thinking", "b1"], ["c1", "c2", "c3"], ["m1", "m2", "m3"]
    names = ["get_weather", "__fragment__", "__pending__", "", None, "search"]
    out: list[Any] = []

    def ev(kind: str, **keys: Any) -> None:
        e: dict[str, Any] = {"type": kind, "id": f"e{len(out)}", "createdAt": AT, "replyId": rng.choice(replies)}
        e.update(keys)
        if rng.random() < 0.03:  # a replayed event
            e["id"] = f"e{rng.randrange(len(out) + 1)}"
        if rng.random() < 0.02:
            e.pop(rng.choice(list(e)))  # a key missing
        if rng.random() < 0.02:
            e["source"] = "parent/child"
        out.append(e)

    fragments = ['{"city": ', '"Paris"', "}", "[1]", "not json", '{"a": 1.5e3}', "", '"x"', "null", "{}", " 12 "]
    b64 = ["QQ==", "QUJD", "QQ", "Q", "QUJDRA", "!!", "QQ=Q", ""]
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.05:
            ev("AGENT_START", name=rng.choice(["Friday", None, 5]))
        elif r < 0.08:
            ev("AGENT_END")
        elif r < 0.12:
            ev("MODEL_CALL_START")
        elif r < 0.16:
            usage = rng.choice([None, {}, {"inputTokens": 3, "outputTokens": 4}, {"time": 0.5, "totalTokens": 9}, [1]])
            ev("MODEL_CALL_END", **({"usage": usage} if usage is not None else {}))
        elif r < 0.30:
            kind = rng.choice(["TEXT", "THINKING", "DATA"])
            stage = rng.choice(["START", "DELTA", "DELTA", "DELTA", "END"])
            keys: dict[str, Any] = {"blockId": rng.choice(blocks)}
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
                        ]
                    )
                else:
                    keys.update(mediaType=rng.choice(["image/png", "", None]), name=rng.choice(["f.png", None]))
            elif stage == "START" and kind == "THINKING" and rng.random() < 0.3:
                keys.update(provider="anthropic", model="claude")
            elif stage == "END" and rng.random() < 0.2:
                keys["metadata"] = rng.choice([{"k": 1}, None, {}])
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
                keys.update(rng.choice([{"input": {"x": 1}}, {"state": "allowed"}, {"metadata": {"m": True}}]))
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
                    ]
                )
            elif stage == "END":
                keys["state"] = rng.choice(["success", "error", "interrupted"])
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
                    ]
                ),
            )
        elif r < 0.90:
            call = {"id": rng.choice(calls), "name": "get_weather", "input": {}}
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
                keys = {
                    "toolResults": [
                        {
                            "type": "tool_result",
                            "id": call["id"],
                            "name": "get_weather",
                            "output": [{"type": "text", "text": "ok"}],
                        }
                    ]
                }
            ev(kind, **keys)
        elif r < 0.93:
            ev(rng.choice(["EXCEED_MAX_ITERS", "REQUEST_STOP", "SUBAGENT_EXPOSED", "CUSTOM", "REPLY_START"]))
        elif r < 0.95:
            out.append(rng.choice([None, 5, [1], {"type": "toString", "id": "zz"}, {"type": ["x"]}]))
        else:
            ev("TEXT_BLOCK_DELTA", blockId=rng.choice([["l"], {"o": 1}, 3]), delta="x")
    return out


def _shape(messages: list[Any], minted: bool) -> list[Any]:
    out = orjson.loads(orjson.dumps(messages))
    for m in out:
        if minted:
            m["id"] = "*"
        meta = m["metadata"]
        if "agentmsg_reduce_errors" in meta:
            meta["agentmsg_reduce_errors"] = "*"
        for b in m["content"]:
            if isinstance(b.get("metadata"), dict) and "argumentsError" in b["metadata"]:
                b["metadata"]["argumentsError"] = b["metadata"]["argumentsError"].split(":")[0]
    return out  # type: ignore[no-any-return]


# Python drops a data delta that would follow the '=' padding of its block (the joined base64 stays
# valid: issue 8); the TypeScript reducer keeps it and its salvage then drops the whole block. Until it
# follows (tests/conformance/reducer/proposed/), such streams are compared by their problems only.
PADDING_RULE = "source.schema.json#/$defs/Base64Source/properties/data/pattern"


def _python(events: list[Any]) -> tuple[list[Any], list[list[str]], bool, bool]:
    runs = []
    padding = False
    for _ in range(2):
        r = Reducer()
        for e in events:
            r.feed(e)
        messages = [m.to_dict() for m in r.finish()]
        padding = any(p.schema_location == PADDING_RULE for p in r.problems)
        # Python also checks events other than the plain deltas against the event schema and reports
        # what breaks it, and reports what its salvage leaves out of a message (problems carrying a
        # schema location; docs/events.md, "Bad input"): the TypeScript reducer does not report those
        # yet (tests/conformance/reducer/proposed/), so they are left out here; all else must agree.
        runs.append((messages, [[p.pointer, p.rule] for p in r.problems if p.schema_location is None]))
    # Python names a reply no event names "msg-<first event's id or index>" (round-2 rule 1,
    # tests/conformance/reducer/proposed/fallback-message-id.json); the TypeScript reducer still mints a
    # random id until it follows (branch ts2): such ids are compared by shape only until then.
    minted = any(m["id"].startswith("msg-") for m in runs[0][0])
    return runs[0][0], runs[0][1], minted, padding


def test_typescript_reducer_agrees_with_python_on_random_streams(tmp_path: Path) -> None:
    rng = random.Random(20261123)
    streams = [random_stream(rng) for _ in range(3000)]
    path = tmp_path / "streams.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(s) for s in streams) + b"\n")
    script = tmp_path / "reduce.mjs"
    script.write_text(SCRIPT % json.dumps(built_client().as_uri()), encoding="utf-8")
    done = subprocess.run([str(NODE), str(script), str(path)], capture_output=True, text=True, timeout=300, check=True)
    results = json.loads(done.stdout)
    mismatches = []
    for index, (events, ts) in enumerate(zip(streams, results, strict=True)):
        messages, problems, minted, padding = _python(events)
        if (not padding and _shape(ts["messages"], minted) != _shape(messages, minted)) or ts["problems"] != problems:
            mismatches.append((index, events, messages, problems, ts))
    if mismatches:
        index, events, messages, problems, ts = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(streams)} streams differ; first (#{index}):\n events {json.dumps(events)}\n"
            f" python {json.dumps(messages)}\n   {problems}\n ts     {json.dumps(ts['messages'])}\n   {ts['problems']}"
        )
