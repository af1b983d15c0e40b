"""Differential tests of the transports and of text: @agentmsg/client (TypeScript, in Node from its build) against
the Python SDK on the same input.

* SSE bytes: every reducer vector written as SSE with LF, CRLF and CR line ends, with and without a BOM, fed
  whole and in small chunks, and seeded byte-level mutations of them (line ends, empty and field-less data
  lines, comments, ids, BOMs and invalid UTF-8 inserted, bytes cut out, the stream cut short) go through
  ``reduceSSE`` and ``reduce_stream(sse=True)``: the same messages and problems; so does a body that ends with
  the end event agentmsg's endpoint sends (both stop at it), and one with events after it (both say them, rule
  ``order``, and fold none). The same bytes through the two SSE decoders alone give the same events.
* Lone surrogates: each string of each vector event (events given as objects) with a lone UTF-16 surrogate
  added: the same messages and problems.

What JavaScript cannot represent is left out as in test_reducer.py (the vectors' usage
counts beyond 2^53 are reported by the client alone, rule ``precision``: those problems are not compared).
"""

from __future__ import annotations

import base64
import copy
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import Reducer
from agentmsg._wire.sse import SSEDecoder
from agentmsg.events import reduce_stream
from tests._support.budget import SEED, examples, spread
from tests._support.jsclient import NODE, built_client, same_json
from tests._support.mutators import insert_bytes
from tests.conftest import ROOT

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run"),
]

VECTORS = sorted((ROOT / "tests" / "conformance" / "reducer").glob("*.json"))
SCRIPT = """
import fs from "node:fs";
const { Reducer, SSEDecoder, reduceSSE } = await import(%s);
const out = [];
const result = (r) => ({ messages: r.finish(), problems: r.problems.filter((p) => p.rule !== "precision").map((p) => [p.pointer, p.rule]) });
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\\n")) {
  if (!line) continue;
  const c = JSON.parse(line);
  if (c.events) {
    const r = new Reducer();
    for (const e of c.events) r.feed(e);
    out.push(result(r));
    continue;
  }
  const bytes = new Uint8Array(Buffer.from(c.bytes, "base64"));
  const n = c.chunk || bytes.length || 1;
  const chunks = [];
  for (let i = 0; i < bytes.length; i += n) chunks.push(bytes.slice(i, i + n));
  if (c.decoder) {
    const d = new SSEDecoder();
    const events = [...chunks.flatMap((x) => d.feed(x)), ...d.close()];
    out.push(events.map((e) => [e.data, e.event, e.id, e.retry, e.problem && e.problem.rule]));
    continue;
  }
  const body = new ReadableStream({ start(ctl) { for (const x of chunks) ctl.enqueue(x); ctl.close(); } });
  const fetch = async () => new Response(body, { headers: { "content-type": "text/event-stream" } });
  const r = new Reducer();
  await reduceSSE("http://localhost/", { fetch, reducer: r, endEvent: c.end ? "end" : null, reconnect: false });
  out.push(result(r));
}
process.stdout.write(JSON.stringify(out));
"""


def _typescript(tmp_path: Path, cases: list[dict[str, Any]]) -> list[Any]:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")  # (\\u escapes: lone surrogates)
    script = tmp_path / "run.mjs"
    script.write_text(SCRIPT % json.dumps(built_client().as_uri()), encoding="utf-8")
    done = subprocess.run([str(NODE), str(script), str(path)], capture_output=True, text=True, timeout=300, check=True)
    results: list[Any] = json.loads(done.stdout)
    return results


def _python(case: dict[str, Any]) -> Any:
    if "events" in case:
        r = Reducer()
        for e in case["events"]:
            r.feed(e)
    else:
        data = base64.b64decode(case["bytes"])
        n = case["chunk"] or len(data) or 1
        chunks = [data[i : i + n] for i in range(0, len(data), n)]
        if case.get("decoder"):
            d = SSEDecoder()
            events = [e for chunk in chunks for e in d.feed(chunk)] + d.close()
            texts = [e.data if isinstance(e.data, str) else e.data.decode() for e in events]
            return [
                [t, e.event, e.id, e.retry, e.problem and e.problem.rule] for t, e in zip(texts, events, strict=True)
            ]
        r = Reducer()
        reduce_stream(iter(chunks), sse=True, reducer=r)
    messages = [m.to_dict() for m in r.finish()]
    return json.loads(json.dumps({"messages": messages, "problems": [[p.pointer, p.rule] for p in r.problems]}))


def _compare(tmp_path: Path, cases: list[dict[str, Any]]) -> None:
    mismatches = []
    for case, ts in zip(cases, _typescript(tmp_path, cases), strict=True):
        py = _python(case)
        if not same_json(ts, py):
            mismatches.append((case, py, ts))
    if mismatches:
        case, py, ts = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(cases)} cases differ; first ({case['name']}):\n"
            f" input  {json.dumps(case)[:3000]}\n python {json.dumps(py)[:3000]}\n ts     {json.dumps(ts)[:3000]}"
        )


def _events(path: Path) -> list[Any]:
    vector = json.loads(path.read_text(encoding="utf-8"))
    if "jsonl" in vector:  # read as JSON text is read (orjson: an integer beyond 64 bits is a float)
        return [orjson.loads(line) for line in vector["jsonl"].split("\n") if line.strip()]
    events: list[Any] = vector["events"]
    return events


def _sse(events: list[Any], eol: str, bom: bool) -> bytes:
    text = "\ufeff" if bom else ""
    for k, e in enumerate(events):
        text += f"id: {k + 1}{eol}" + "".join(f"data: {line}{eol}" for line in json.dumps(e).split("\n")) + eol
    return text.encode("utf-8")


INSERTS = [
    b"\r",
    b"\n",
    b"\r\n",
    b"data:\n",
    b"data\n",
    b": c\n",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xe2\x82",
    b"\xed\xa0\xbd",
]
INSERTS += [b"id: 9\n", b"event: x\n", b"retry: 5\n", b"\x00", " é😀".encode(), b"data: {}\n\n", b"\n\n"]
# lines of no SSE field (an event that lost its data:, an unknown field): said by both readers of agent events
INSERTS += [b'\n{"type": "TEXT_BLOCK_DELTA"}\n', b"\nfoo: bar\n"]


#: the line ends, BOM and chunkings (0: whole) of a vector's SSE body
GRID = [(eol, bom, chunk) for eol in ("\n", "\r\n", "\r") for bom in (False, True) for chunk in (0, 1, 7)]


@pytest.mark.fuzz
def test_sse_bytes_reduce_alike(tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}/sse")
    cases: list[dict[str, Any]] = []
    for i, path in enumerate(VECTORS):
        events = _events(path)
        # every line end, BOM and chunking with each vector in make fuzz; in make test 3 of the 18 per vector (its
        # three line ends), the next 3 with the next vector: any 6 vectors in a row take all 18
        for eol, bom, chunk in spread(GRID, i, 3):
            raw = _sse(events, eol, bom)
            name = f"{path.name} eol={eol!r} bom={bom} chunk={chunk}"
            cases.append({"name": name, "bytes": base64.b64encode(raw).decode(), "chunk": chunk})
        for eol in ("\n", "\r\n", "\r"):
            raw = _sse(events, eol, False)
            # A body saved from agentmsg's endpoint ends with its end event: the stream ends there in both (the
            # client stops reading, Python's readers read nothing after it into events); neither takes it for an
            # agent event. Events after it (here: the stream again, in the same read) are said in both (rule
            # order, counted as one event in the end event's place), never folded.
            end = f"event: end{eol}data: {{}}{eol}{eol}".encode()
            ended = base64.b64encode(raw + end).decode()
            cases.append({"name": f"{path.name} eol={eol!r} end event", "bytes": ended, "chunk": 0, "end": True})
            if events:
                more = base64.b64encode(raw + end + raw).decode()
                name = f"{path.name} eol={eol!r} events after the end event"
                cases.append({"name": name, "bytes": more, "chunk": 0, "end": True})
            for k in range(examples(3)):
                encoded = base64.b64encode(insert_bytes(rng, raw, INSERTS)).decode()
                name = f"{path.name} eol={eol!r} mutation {k}"
                cases.append({"name": name, "bytes": encoded, "chunk": rng.choice([0, 1, 5, 64])})
                cases.append(
                    {"name": name + " (decoder)", "bytes": encoded, "chunk": rng.choice([0, 1, 3]), "decoder": True}
                )
    _compare(tmp_path, cases)


def _strings(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, str):
        return [path]
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    return [p for key, child in items for p in _strings(child, (*path, key))]


@pytest.mark.fuzz
def test_lone_surrogates_in_any_string_reduce_alike(tmp_path: Path) -> None:
    """A lone surrogate added to any string of an event (but its type) is reduced alike by both reducers. In make
    fuzz every string place of every vector (4,024); in make test 12 places of each vector, spread evenly over
    its events and shifted by one with each vector (``spread``)."""
    cases: list[dict[str, Any]] = []
    for v, path in enumerate(VECTORS):
        events = _events(path)
        places = [
            (i, where)
            for i, event in enumerate(events)
            for where in (_strings(event) if isinstance(event, dict) else [])
            if where != ("type",)
        ]
        for k, (i, where) in enumerate(spread(places, v, 12), 1):
            mutated = [*events]  # (the other events are only read: the changed one alone is copied)
            node = mutated[i] = copy.deepcopy(events[i])
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] += ("\ud83d", "\ude00", "x\udbff")[k % 3]
            cases.append({"name": f"{path.name} event {i} {where}", "events": mutated})
    _compare(tmp_path, cases)


def test_json_text_at_the_readers_edges_reduces_alike(tmp_path: Path) -> None:
    """Event JSON over SSE at the edges of what the readers take (orjson, and JSON.parse with the client's checks):
    nesting at limits.max_depth (254) and at 1,024 levels, and one more (in a plain delta too), numbers that overflow a double, duplicate keys, escapes (a lone surrogate
    escape), a BOM or a second value in the data, data that is no object, tool-call arguments at those edges. (What
    a JS number cannot tell apart is left out: docs/web.md.)"""
    at = "2026-11-28T10:00:00Z"
    ids = iter(range(10**6))

    def event(kind: str, rest: str) -> str:
        return f'{{"type":"{kind}","id":"e{next(ids)}","createdAt":"{at}","replyId":"m"{rest}}}'

    def call(arguments: str) -> list[str]:
        keys = ',"toolCallId":"c","toolCallName":"f"'
        return [
            event("TOOL_CALL_START", keys),
            event("TOOL_CALL_DELTA", keys + ',"delta":' + json.dumps(arguments)),
            event("TOOL_CALL_END", keys + ',"state":"pending"'),
        ]

    def nested(n: int) -> str:
        return "[" * n + "]" * n

    start = event("TEXT_BLOCK_START", ',"blockId":"t"')
    bodies: dict[str, list[str]] = {
        "usage 1e400": [event("MODEL_CALL_END", ',"usage":{"inputTokens":1e400}')],
        "time 1e-400 and 2e308": [event("MODEL_CALL_END", ',"usage":{"time":1e-400,"outputTokens":1}'), event("MODEL_CALL_END", ',"usage":{"time":2e308}')],
        "duplicate keys": [event("MODEL_CALL_END", ',"usage":{"inputTokens":1,"inputTokens":2}'), event("TEXT_BLOCK_START", "").replace('START"', 'START","type":"AGENT_START"', 1)],
        "escapes": [start, event("TEXT_BLOCK_DELTA", ',"blockId":"t","delta":"\\u0000\\ud83d\\ude00\\u2028\\/"')],
        "lone surrogate escape": [start, event("TEXT_BLOCK_DELTA", ',"blockId":"t","delta":"a\\ud83d"')],
        "data not an object": ["[1,2]", '"text"', "null", "5", ""],
        "data with a BOM, two values, blanks": ["\ufeff" + start, start + start, start + " \t"],
        "created at forms": [event("MODEL_CALL_START", "").replace(at, "2026-11-28t10:00:00z"), event("MODEL_CALL_START", "").replace(at, "2026-02-30T10:00:00Z")],
        "arguments at the edges": [
            *call('{"a": 1e400}'), *call('{"a": 18446744073709551616}'), *call('{"a": 1, "a": 2}'), *call('{"a": "\\ud83d"}'),
            *call("\ufeff{}"), *call('{"a": NaN}'), *call(' \t\n{"a": 1}\r\n '), *call("\u00a0{}"), *call('{"a": 1.0, "b": 1e2}'),
            *call('{"a": ' + nested(252) + "}"), *call('{"a": ' + nested(253) + "}"),
        ],
    }  # fmt: skip
    for depth in (252, 253, 254, 1023, 1024, 1025, 1026):
        bodies[f"custom value {depth} deep"] = [event("CUSTOM", f',"name":"x","value":{nested(depth)}')]
        # (too deep in two places: said at the first in document order, under a key with / ~ " and brackets)
        two = f'{{"k/~\\"[{{": [0, {nested(depth)}], "b": {nested(depth)}}}'
        bodies[f"custom value {depth} deep twice"] = [event("CUSTOM", f',"name":"x","value":{two}')]
        # (a plain delta, which no schema check reads: the reader alone holds it to limits.max_depth)
        bodies[f"delta with a key {depth} deep"] = [
            start,
            event("TEXT_BLOCK_DELTA", f',"blockId":"t","delta":"a","x":{nested(depth)}'),
        ]
    cases = []
    for name, lines in bodies.items():
        body = [event("AGENT_START", "").replace('"m"', '"r"'), *lines, event("AGENT_END", "").replace('"m"', '"r"')]
        raw = "".join(f"data: {line}\n\n" for line in body).encode()
        cases.append({"name": name, "bytes": base64.b64encode(raw).decode(), "chunk": 0})
    _compare(tmp_path, cases)
