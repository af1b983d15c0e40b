// The SSE vectors (tests/conformance/sse/*.json), which Python runs too (tests/conformance/test_sse_vectors.py):
// the same chunks give the same events (data, event, id, retry and the rule of the problem) in both runtimes'
// decoders (bytes are also fed split at every byte), and their encoders write the same text.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SSEDecoder, encodeSSE } from "@agentmsg/client";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, "..", "conformance", "sse");
const docs = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => [f, JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"))]);
const cases = docs.flatMap(([f, doc]) => (doc.cases ?? []).map((c) => [f, c]));
const encode = docs.flatMap(([f, doc]) => (doc.encode ?? []).map((c) => [f, c]));
const refuse = docs.flatMap(([f, doc]) => (doc.refuse ?? []).map((c) => [f, c]));

// the events of `chunks`, as the vectors write them; the decoder's `retry` after close() pushed onto `retry` when given
function decode(chunks, limits, retry) {
  const d = new SSEDecoder(limits ? { maxLineLength: limits.line, maxEventLength: limits.event } : {});
  const events = [...chunks.flatMap((c) => d.feed(c)), ...d.close()];
  if (retry) retry.push(d.retry);
  return events.map((e) => ({ data: e.data, event: e.event, id: e.id, retry: e.retry, problem: e.problem && e.problem.rule }));
}

test("there are SSE vectors", () => assert.ok(cases.length >= 10 && encode.length));

for (const [file, c] of encode) {
  test(`SSE encoder vector ${file}:${c.id}`, () => {
    assert.equal(encodeSSE(c.data, c.options), c.text);
    const [event] = new SSEDecoder().feed(c.text);
    assert.equal(event.data, c.data.replace(/\r\n?/g, "\n"));
  });
}

for (const [file, c] of refuse) {
  test(`SSE encoder refuses ${file}:${c.id}`, () => {
    assert.throws(() => encodeSSE(c.data, c.options), (e) => e instanceof RangeError && /line break/.test(e.message));
  });
}

for (const [file, c] of cases) {
  test(`SSE vector ${file}:${c.id}`, () => {
    const chunks = c.chunks.map((x) => (typeof x === "string" ? x : new Uint8Array(Buffer.from(x.hex, "hex"))));
    const retry = [];
    assert.deepEqual(decode(chunks, c.limits, retry), c.events);
    if (chunks.every((x) => typeof x !== "string")) {
      const whole = new Uint8Array(Buffer.concat(chunks));
      assert.deepEqual(decode([...whole].map((b) => new Uint8Array([b])), c.limits, retry), c.events, "byte by byte");
      for (let cut = 0; cut <= whole.length; cut++) {
        assert.deepEqual(decode([whole.slice(0, cut), whole.slice(cut)], c.limits, retry), c.events, `split at ${cut}`);
      }
    }
    if ("lastRetry" in c) assert.deepEqual(retry, retry.map(() => c.lastRetry), "the decoder's retry after close()");
  });
}
