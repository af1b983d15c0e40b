// The SSE decoder vectors (tests/conformance/sse/*.json), which Python's decoder runs too
// (tests/conformance/test_sse_vectors.py): the same chunks give the same events (data, event, id, retry and
// the rule of the problem) in both runtimes. Bytes are also fed split at every byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SSEDecoder } from "@agentmsg/client";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, "..", "conformance", "sse");
const cases = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort()
  .flatMap((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")).cases.map((c) => [f, c]));

function decode(chunks, limits) {
  const d = new SSEDecoder(limits ? { maxLineLength: limits.line, maxEventLength: limits.event } : {});
  const events = [...chunks.flatMap((c) => d.feed(c)), ...d.close()];
  return events.map((e) => ({ data: e.data, event: e.event, id: e.id, retry: e.retry, problem: e.problem && e.problem.rule }));
}

test("there are SSE vectors", () => assert.ok(cases.length >= 10));

for (const [file, c] of cases) {
  test(`SSE vector ${file}:${c.id}`, () => {
    const chunks = c.chunks.map((x) => (typeof x === "string" ? x : new Uint8Array(Buffer.from(x.hex, "hex"))));
    assert.deepEqual(decode(chunks, c.limits), c.events);
    if (chunks.every((x) => typeof x !== "string")) {
      const whole = new Uint8Array(Buffer.concat(chunks));
      assert.deepEqual(decode([...whole].map((b) => new Uint8Array([b])), c.limits), c.events, "byte by byte");
      for (let cut = 0; cut <= whole.length; cut++) {
        assert.deepEqual(decode([whole.slice(0, cut), whole.slice(cut)], c.limits), c.events, `split at ${cut}`);
      }
    }
  });
}
