// @agentmsg/client's reducer (sdk/typescript, installed from the repository as a front end would)
// against every reducer vector that Python runs too (tests/conformance/reducer/*.json). Strict mode
// checks events with the package's own ahead-of-time compiled event validator and, independently,
// with ajv over the schemas.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createAjv } from "@agentmsg/schema";
import { Reducer, reduceEvents, validateMessage } from "@agentmsg/client";
import { validateEvent } from "@agentmsg/client/strict";

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = path.resolve(here, "..", "conformance", "reducer");
const ajv = createAjv();
const checkEvent = ajv.getSchema("https://agentmsg.dev/schemas/v1/agent-event.schema.json");
const checkMsg = ajv.getSchema("https://agentmsg.dev/schemas/v1/msg.schema.json");
// A string that is not well-formed UTF-16 (a lone surrogate) cannot be written as UTF-8 JSON: reported first,
// as every agentmsg validator does (ajv itself has no such rule).
function loneSurrogate(value, pointer = "") {
  if (typeof value === "string") return value.isWellFormed() ? null : { pointer, rule: "lone-surrogate", message: "a lone surrogate" };
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const found = loneSurrogate(v, `${pointer}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`);
      if (found) return found;
    }
  }
  return null;
}
const validate = (event) => {
  const lone = loneSurrogate(event);
  if (lone) return [lone];
  return checkEvent(event) ? [] : checkEvent.errors.map((e) => ({ pointer: e.instancePath, rule: e.keyword, message: e.message }));
};

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
    for (const [i, m] of got.entries()) {
      assert.ok(checkMsg(m), `reduced message ${i} does not validate: ${JSON.stringify(checkMsg.errors)}`);
      assert.deepEqual(validateMessage(m), []);
    }
    // problems_javascript: where a JS number cannot hold a value (integers beyond 2^53), what this runtime reports.
    assert.deepEqual(r.problems.map((p) => ({ pointer: p.pointer, rule: p.rule })), c.problems_javascript ?? c.problems);
    // problem_messages: what every runtime says word for word (Python's reducer too)
    if (c.problem_messages !== undefined) assert.deepEqual(r.problems.map((p) => p.message), c.problem_messages);
    // checks: what checkResults says of the AGENT_RESULTs, word for word in every runtime
    if (c.checks !== undefined) assert.deepEqual(r.checkResults().map(({ pointer, rule, message }) => ({ pointer, rule, message })), c.checks);
  });
  for (const [how, check] of [["ajv", validate], ["compiled", validateEvent]]) {
    test(`strict (${how} event check): ${file}`, () => {
      if (c.strict === undefined) {
        const got = JSON.parse(JSON.stringify(reduceEvents(structuredClone(events), { validate: check })));
        assert.ok(matches(got, c.expected));
        return;
      }
      assert.throws(() => reduceEvents(structuredClone(events), { validate: check }), (err) =>
        err.problems.some((p) => p.pointer === c.strict.pointer && p.rule === c.strict.rule) || assert.fail(JSON.stringify(err.problems)));
    });
  }
}
