// The TypeScript reducer (src/reducer.ts, compiled to dist/) against every reducer vector that Python
// runs too (tests/conformance/reducer/*.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createAjv } from "@agentmsg/schema";
import { Reducer, reduceEvents } from "./dist/reducer.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, "..", "conformance", "reducer");
const ajv = createAjv();
const checkEvent = ajv.getSchema("https://agentmsg.dev/schemas/v1/agent-event.schema.json");
const checkMsg = ajv.getSchema("https://agentmsg.dev/schemas/v1/msg.schema.json");
const validate = (event) => (checkEvent(event) ? [] : checkEvent.errors.map((e) => ({ pointer: e.instancePath, rule: e.keyword, message: e.message })));

function matches(actual, expected) {
  if (expected === "*") return typeof actual === "string";
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((x, i) => matches(actual[i], x));
  if (expected && typeof expected === "object") {
    return actual && typeof actual === "object" && !Array.isArray(actual) && Object.keys(actual).length === Object.keys(expected).length && Object.keys(expected).every((k) => matches(actual[k], expected[k]));
  }
  return actual === expected;
}

const files = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
test("there are reducer vectors", () => assert.ok(files.length >= 15));

for (const file of files) {
  const c = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
  // JSON.parse keeps the last of Java's duplicate "type" keys, as every JSON reader here does.
  const events = c.jsonl !== undefined ? c.jsonl.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l)) : c.events;
  test(`tolerant: ${file}`, () => {
    const r = new Reducer();
    for (const e of structuredClone(events)) r.feed(e);
    const got = JSON.parse(JSON.stringify(r.finish()));
    assert.ok(matches(got, c.expected), `got ${JSON.stringify(got)}\nexpected ${JSON.stringify(c.expected)}`);
    for (const [i, m] of got.entries()) assert.ok(checkMsg(m), `reduced message ${i} does not validate: ${JSON.stringify(checkMsg.errors)}`);
    assert.deepEqual(r.problems.map((p) => ({ pointer: p.pointer, rule: p.rule })), c.problems);
  });
  test(`strict: ${file}`, () => {
    if (c.strict === undefined) {
      const got = JSON.parse(JSON.stringify(reduceEvents(structuredClone(events), { validate })));
      assert.ok(matches(got, c.expected));
      return;
    }
    assert.throws(() => reduceEvents(structuredClone(events), { validate }), (err) =>
      err.problems.some((p) => p.pointer === c.strict.pointer && p.rule === c.strict.rule) || assert.fail(JSON.stringify(err.problems)));
  });
}

// Not a shared vector yet: deltas that are each base64 but join to invalid base64 (padding in the
// middle). Python's reducer drops the block and reports it in metadata; so does this one.
test("a block that does not validate is dropped and reported in agentmsg_reduce_errors", () => {
  const at = "2025-01-01T00:00:00Z";
  const events = [
    { type: "AGENT_START", id: "1", createdAt: at, replyId: "m" },
    { type: "DATA_BLOCK_START", id: "2", createdAt: at, replyId: "m", blockId: "b", mediaType: "image/png" },
    { type: "DATA_BLOCK_DELTA", id: "3", createdAt: at, replyId: "m", blockId: "b", delta: "QQ==" },
    { type: "DATA_BLOCK_DELTA", id: "4", createdAt: at, replyId: "m", blockId: "b", delta: "QQ==" },
    { type: "DATA_BLOCK_END", id: "5", createdAt: at, replyId: "m", blockId: "b" },
    { type: "TEXT_BLOCK_START", id: "6", createdAt: at, replyId: "m", blockId: "t" },
    { type: "TEXT_BLOCK_DELTA", id: "7", createdAt: at, replyId: "m", blockId: "t", delta: "kept" },
    { type: "TEXT_BLOCK_END", id: "8", createdAt: at, replyId: "m", blockId: "t" },
    { type: "AGENT_END", id: "9", createdAt: at, replyId: "m" },
  ];
  const [msg] = reduceEvents(events);
  assert.deepEqual(msg.content, [{ type: "text", text: "kept" }]);
  assert.ok(msg.metadata.agentmsg_reduce_errors.some((e) => e.startsWith("/content/0/source/data")), JSON.stringify(msg.metadata));
  assert.ok(checkMsg(msg));
});

test("odd ids and names are reported, never thrown (same rule as Python)", () => {
  const events = [
    { type: "AGENT_START", id: { x: 1 }, createdAt: "2025-01-01T00:00:00Z", replyId: true, name: { a: 1 } },
    { type: "TEXT_BLOCK_START", id: ["a"], createdAt: "2025-01-01T00:00:00Z", replyId: "r", blockId: "text" },
    { type: "TEXT_BLOCK_DELTA", id: "3", createdAt: "2025-01-01T00:00:00Z", replyId: "r", blockId: "text", delta: "ok" },
  ];
  const r = new Reducer();
  for (const e of events) r.feed(e);
  const [msg] = r.finish();
  assert.equal(msg.content[0].text, "ok");
  assert.equal(msg.name, null);
  assert.ok(typeof msg.id === "string" && msg.id.length > 0);
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [["/0/id", "type"], ["/1/id", "type"]]);
});
