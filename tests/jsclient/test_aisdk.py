"""@agentmsg/client's AI SDK UI message stream decoder (TypeScript, ``AiSdkDecoder`` in sdk/typescript/src/aisdk.ts,
run in Node from its build) against Python's (``agentmsg.ui.ai_sdk.AiSdkDecoder``), on the same chunk streams: what
agentmsg's encoder writes for every reducer vector and for random emitted streams, those streams with chunks
dropped, repeated and swapped (seeded), a stream of another producer, and chunks the AI SDK's schema refuses. The
AgentEvents (ids and ``createdAt`` included, key order too) and the notes (pointer + rule, in order) must be the
same, tolerant and strict."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentmsg import ValidationError
from agentmsg.ui import ai_sdk
from tests._support.events import CASES, base_streams, events_of, load
from tests._support.jsclient import NODE, built_client, same_json
from tests.ui.test_ai_sdk import FOREIGN

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run"),
]

CLOCK = "2026-01-01T00:00:00.000000Z"
SCRIPT = """
import fs from "node:fs";
const { AiSdkDecoder, AiSdkError } = await import(%s);
const out = [];
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\\n")) {
  if (!line) continue;
  const { stream, strict } = JSON.parse(line);
  const d = new AiSdkDecoder({ strict, clock: () => %s });
  const events = [];
  let error = null;
  try {
    for (const c of stream) events.push(...d.feed(c));
    events.push(...d.close());
  } catch (e) {
    if (!(e instanceof AiSdkError)) throw e;
    error = e.problems.map((p) => [p.pointer, p.rule]);
  }
  out.push({ events, notes: d.notes.map((p) => [p.pointer, p.rule]), error });
}
process.stdout.write(JSON.stringify(out));
"""

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
    {"type": "finish", "finishReason": "done"},
    {"type": "finish", "finishReason": "length"},
]


def mutated(stream: list[Any], rng: random.Random) -> list[Any]:
    out = list(stream)
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        i = rng.randrange(len(out))
        how = rng.random()
        if how < 0.4:
            del out[i]
        elif how < 0.7:
            out.insert(i, out[i])
        else:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
    return out


def streams() -> list[list[Any]]:
    out: list[list[Any]] = []
    for name in CASES:
        out.append(ai_sdk.encode([e for e in events_of(load(name)) if isinstance(e, dict)]))
    for seed in range(40):
        out.append(ai_sdk.encode(base_streams(random.Random(seed))))
    from tests.jsclient.test_reducer import random_stream  # garbled streams: every rule of the encoder and decoder

    out += [ai_sdk.encode(random_stream(random.Random(seed))) for seed in range(100)]
    rng = random.Random(4031)
    out += [mutated(s, rng) for s in list(out) for _ in range(2)]
    return [*out, FOREIGN, BAD]


def python_side(stream: list[Any], strict: bool) -> dict[str, Any]:
    d = ai_sdk.AiSdkDecoder(strict=strict, clock=lambda: CLOCK)
    events: list[Any] = []
    error = None
    try:
        for c in stream:
            events += d.feed(c)
        events += d.close()
    except ValidationError as exc:
        error = [[p.pointer, p.rule] for p in exc.problems]
    return {"events": events, "notes": [[p.pointer, p.rule] for p in d.notes], "error": error}


@pytest.mark.parametrize("strict", [False, True])
def test_the_typescript_decoder_gives_pythons_events_and_notes(strict: bool, tmp_path: Path) -> None:
    cases = streams()
    assert len(cases) > 200
    script = tmp_path / "aisdk.mjs"
    script.write_text(SCRIPT % (json.dumps(built_client().as_uri()), json.dumps(CLOCK)), encoding="utf-8")
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"stream": s, "strict": strict}) + "\n" for s in cases), encoding="utf-8")
    done = subprocess.run([str(NODE), str(script), str(data)], capture_output=True, text=True, timeout=600, check=True)
    got = json.loads(done.stdout)
    assert len(got) == len(cases)
    for n, (stream, ts) in enumerate(zip(cases, got, strict=True)):
        py = json.loads(json.dumps(python_side(stream, strict)))
        # what a JS number cannot hold (an integer beyond 2^53) compared as the double it becomes (docs/web.md)
        assert same_json(ts, py), (n, stream[:5], [k for k in ts if ts[k] != py[k]])
    if not strict:
        assert len(python_side(BAD, False)["notes"]) >= 20
