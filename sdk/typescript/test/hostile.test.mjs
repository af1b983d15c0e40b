// Hostile input the decoders and the Reducer take as Python's do (found by a hunt; each failed before its fix):
// a carried "__proto__" key stays a key, a value nested past the stack is a problem, tool-call arguments are read
// as orjson reads them, a usage of ever new keys is folded in linear time with true problems, and a run that ends
// 200,000 open AG-UI tool calls ends each (their events were spread as arguments: a RangeError), and a legacy key
// beside its current one holding the same value 100,000 deep, or tool results nested in tool results' output
// thousands deep, are refused for their depth without being read for legacy keys (a RangeError, then memory
// quadratic in the depth).
import { test } from "node:test";
import { Worker } from "node:worker_threads";
import assert from "node:assert/strict";
import { AGUIDecoder, AiSdkDecoder, Reducer, decodeAGUI } from "../dist/index.js";
import { validateEvent } from "../dist/strict.js";

const clock = () => "2026-01-01T00:00:00.000000Z";
const reduce = (events) => {
  const r = new Reducer();
  for (const e of events) r.feed(e);
  return [r.finish(), r.problems];
};

test("a carried __proto__ key stays a key: AG-UI and the AI SDK", () => {
  const agui = JSON.parse(`[
    {"type":"RUN_STARTED","threadId":"t","runId":"r","metadata":{"agentmsg":{"__proto__":{"source":"evil/sub"}}}},
    {"type":"TEXT_MESSAGE_START","messageId":"m","metadata":{"agentmsg":{"__proto__":{"source":"evil/sub"}}}},
    {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hello"},
    {"type":"TEXT_MESSAGE_END","messageId":"m"},
    {"type":"RUN_FINISHED","threadId":"t","runId":"r"}]`);
  const aisdk = JSON.parse(`[
    {"type":"data-agentmsg","data":{"rest":"AGENT_START","fields":{"replyId":"r","__proto__":{"source":"evil/sub"}}}},
    {"type":"start","messageId":"r"},
    {"type":"data-agentmsg","data":{"rest":"TEXT_BLOCK_START","fields":{"__proto__":{"source":"evil/sub"}}}},
    {"type":"text-start","id":"t"}, {"type":"text-delta","id":"t","delta":"hello"}, {"type":"text-end","id":"t"},
    {"type":"finish"}]`);
  for (const [decoder, stream] of [[new AGUIDecoder({ clock }), agui], [new AiSdkDecoder({ clock }), aisdk]]) {
    const events = stream.flatMap((e) => decoder.feed(e)).concat(decoder.close());
    for (const e of events) assert.equal(Object.getPrototypeOf(e), Object.prototype);
    const [msgs] = reduce(events);
    assert.equal(msgs.length, 1);
    assert.deepEqual(msgs[0].content, [{ type: "text", text: "hello" }]);
    assert.equal({}.source, undefined);
  }
});

test("an id or type nested past the stack is a problem, not a RangeError", () => {
  const deep = "[".repeat(6000) + "]".repeat(6000);
  // (too deep: said at the array that crosses the limit, as Python says it)
  for (const [key, want] of [["id", [["/0/id", "type"], [`/0/id${"/0".repeat(253)}`, "max-depth"]]], ["type", [["/0/type", "enum"]]]]) {
    const r = new Reducer();
    r.feed(JSON.parse(`{"type":"AGENT_START","${key}":${deep}}`));
    assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), want);
  }
});

test("AG-UI tool-call arguments JSON cannot hold are no input (as orjson reads them)", () => {
  for (const args of ['{"a": 1e999}', '{"a": "\\ud800"}', '{"a": -1e400}']) {
    const d = new AGUIDecoder({ clock });
    const stream = [
      { type: "RUN_STARTED", threadId: "t", runId: "r" },
      { type: "TOOL_CALL_START", toolCallId: "c", toolCallName: "f" },
      { type: "TOOL_CALL_ARGS", toolCallId: "c", delta: args },
      { type: "TOOL_CALL_END", toolCallId: "c" },
      { type: "RUN_FINISHED", threadId: "t", runId: "r", outcome: { type: "interrupt", interrupts: [{ toolCallId: "c" }] } },
    ];
    const events = stream.flatMap((e) => d.feed(e)).concat(d.close());
    const confirm = events.find((e) => e.type === "REQUIRE_USER_CONFIRM");
    assert.deepEqual(confirm.toolCalls[0].input, {}, args);
    assert.deepEqual(reduce(events)[1], [], args);
  }
});

test("a usage of ever new keys keeps each, and a count capped below 2^53 says no precision problem", () => {
  const at = { createdAt: "2026-01-01T00:00:00Z", replyId: "r" };
  const events = [{ ...at, type: "AGENT_START", id: "s", name: "F" }];
  for (let k = 0; k < 3000; k++) events.push({ ...at, type: "MODEL_CALL_END", id: `e${k}`, usage: { [`x${k}`]: k } });
  events.push({ ...at, type: "MODEL_CALL_END", id: "big", usage: { inputTokens: 2 ** 60 } });
  events.push({ ...at, type: "AGENT_END", id: "end" });
  const [msgs, problems] = reduce(events);
  assert.equal(Object.keys(msgs[0].usage).length, 3001);
  assert.equal(msgs[0].usage.x2999, 2999);
  assert.equal(msgs[0].usage.inputTokens, 2 ** 31 - 1);
  assert.ok(!problems.some((p) => p.rule === "precision"), JSON.stringify(problems)); // (2^31-1 is exact)
  assert.ok(problems.some((p) => p.rule === "maximum"));
});

test("tool-call arguments both deep and wide are checked in time linear in their size", () => {
  // The checks of a value (jsonProblem: can JSON hold it; the lone-surrogate walk of the built message) copied each
  // node's path, of its depth, so took depth x size: 2.2 MB of arguments (a million numbers 240 arrays deep) took
  // the reducer 64 s and crashed the viewer's tab. Counted here as the array elements the reducer's iterators step
  // over (each copy of a path steps over all of it).
  const depth = 200;
  const width = 5000;
  const args = `{"a":${"[".repeat(depth)}${Array(width).fill(1).join(",")}${"]".repeat(depth)}}`;
  const at = { createdAt: "2026-01-01T00:00:00Z", replyId: "r" };
  const events = [
    { ...at, type: "AGENT_START", id: "s", name: "F" },
    { ...at, type: "TOOL_CALL_START", id: "t0", toolCallId: "c", toolCallName: "f" },
    { ...at, type: "TOOL_CALL_DELTA", id: "t1", toolCallId: "c", toolCallName: "f", delta: args },
    { ...at, type: "TOOL_CALL_END", id: "t2", toolCallId: "c", toolCallName: "f" },
    { ...at, type: "AGENT_END", id: "end" },
  ];
  const iterator = Array.prototype[Symbol.iterator];
  let steps = 0;
  Array.prototype[Symbol.iterator] = function () {
    steps += this.length;
    return iterator.call(this);
  };
  let msgs, problems;
  try {
    [msgs, problems] = reduce(events);
  } finally {
    Array.prototype[Symbol.iterator] = iterator;
  }
  assert.deepEqual(problems, []);
  let input = msgs[0].content[0].input.a;
  for (let i = 1; i < depth; i++) input = input[0];
  assert.equal(input.length, width);
  assert.ok(steps < 20 * (depth + width), `${steps} elements stepped over for ${depth + width} nodes`);
});

test("a run that ends 200,000 open AG-UI tool calls ends each, not a RangeError (Python's decoder too)", () => {
  const n = 200_000;
  const events = [{ type: "RUN_STARTED", threadId: "t", runId: "r" }];
  for (let i = 0; i < n; i++) events.push({ type: "TOOL_CALL_START", toolCallId: `c${i}`, toolCallName: "f" });
  events.push({ type: "RUN_STARTED", threadId: "t", runId: "r2" });
  const check = (out) => {
    // AGENT_START, n TOOL_CALL_START, then at the second RUN_STARTED n TOOL_CALL_END, AGENT_END, AGENT_START
    assert.equal(out.length, 2 * n + 3);
    assert.deepEqual(out.slice(n + 1, n + 3).map((e) => [e.type, e.toolCallId]), [["TOOL_CALL_END", "c0"], ["TOOL_CALL_END", "c1"]]);
    assert.deepEqual(out.slice(-2).map((e) => e.type), ["AGENT_END", "AGENT_START"]);
  };
  check(decodeAGUI(events, { clock }));
  const d = new AGUIDecoder({ clock });
  const out = [];
  for (const e of events) for (const x of d.feed(e)) out.push(x);
  check(out);
});

const deepAt = "2026-11-22T10:34:38.563248392Z";
const deepEv = (n, type, keys) => ({ type, id: `e${n}`, createdAt: deepAt, replyId: "r", ...keys });
/** A tool result nested `depth` deep in tool results' output, the innermost's output text (a legacy shape); `uses`:
 * each holds a legacy toolUseId too (a note per level, were it read). */
const nestedResults = (depth, uses = false) => {
  let deep = { type: "tool_result", id: "c", name: "f", output: "text" };
  for (let i = 0; i < depth; i++) {
    deep = { type: "tool_result", id: "c", name: "f", output: [deep] };
    if (uses) deep.toolUseId = "c";
  }
  return deep;
};

test("a legacy key holding the same value 100,000 deep is refused unread, strict or not (Python's too)", () => {
  // (tests/events/test_depth.py holds Python's reducer to the same problems) The comparison threw a RangeError; the
  // event is now refused for its depth before its legacy keys are read.
  let deep = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const results = [{ type: "tool_result", id: "c", name: "f", output: deep, result: deep }];
  const calls = [{ type: "tool_use", id: "c", name: "f", input: deep, arguments: deep }];
  for (const [at, event] of [
    ["/1/toolResults/0/output", deepEv(1, "EXTERNAL_EXECUTION_RESULT", { toolResults: results })],
    ["/1/toolCalls/0/input", deepEv(1, "REQUIRE_USER_CONFIRM", { toolCalls: calls })],
  ]) {
    const deepAt = at + "/0".repeat(251); // (the first list past the limit, in the key met first)
    const [, problems] = reduce([deepEv(0, "AGENT_START"), event]);
    assert.deepEqual(problems.map((p) => [p.pointer, p.rule]), [[deepAt, "max-depth"], ["/0", "incomplete_stream"]]);
    const strict = new Reducer({ validate: validateEvent });
    strict.feed(deepEv(0, "AGENT_START"));
    assert.throws(() => strict.feed(event), (e) => e.name === "ReducerError" && e.problems.map((p) => [p.pointer, p.rule]).join() === `${deepAt},max-depth`);
  }
});

test("tool results nested in tool results 3,000 deep are refused unread, without a RangeError (Python's too)", () => {
  // (tests/events/test_depth.py holds Python's reducer to the same problems) Read before the depth limit refused the
  // event, they threw a RangeError, then were read with a stack but a pointer per level; now no note is made (the
  // innermost's text output, the message's lowercase role).
  const deep = nestedResults(3000);
  const message = { id: "m", role: "assistant", content: [deep] };
  for (const [at, event] of [
    [`/1/toolResults/0${"/output/0".repeat(126)}`, deepEv(1, "EXTERNAL_EXECUTION_RESULT", { toolResults: [deep] })],
    [`/1/result/content/0${"/output/0".repeat(125)}/output`, deepEv(1, "AGENT_RESULT", { result: message })],
  ]) {
    const [, problems] = reduce([deepEv(0, "AGENT_START"), event]);
    assert.deepEqual(problems.map((p) => [p.pointer, p.rule]), [[at, "max-depth"], ["/0", "incomplete_stream"]]);
  }
});

test("an event at the depth limit has its legacy keys read, one level more has none (Python's too)", () => {
  // 254 levels: the event, toolResults, a tool result with its output list 125 deep, then metadata; 255 are refused
  for (const extra of [0, 1]) {
    let deep = { type: "tool_result", id: "c", name: "f", output: [], toolUseId: "c", metadata: extra ? { a: {} } : {} };
    for (let i = 0; i < 125; i++) deep = { type: "tool_result", id: "c", name: "f", output: [deep] };
    const r = new Reducer();
    r.feed(deepEv(0, "AGENT_START"));
    r.feed(deepEv(1, "EXTERNAL_EXECUTION_RESULT", { toolResults: [deep] }));
    const note = [`/1/toolResults/0${"/output/0".repeat(125)}/toolUseId`, "legacy-key"];
    const tooDeep = [`/1/toolResults/0${"/output/0".repeat(125)}/metadata/a`, "max-depth"];
    assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), extra ? [tooDeep] : [note]);
  }
});

test("tool results 10,000 deep, each with a legacy key, are refused in output linear in their size (Python's too)", () => {
  // Counted, not timed: read, they gave 10,000 notes whose pointers held 450 million characters (V8 keeps them as
  // ropes until something reads them: a JSON of the problems, the viewer).
  const depth = 10_000;
  const [, problems] = reduce([deepEv(0, "AGENT_START"), deepEv(1, "EXTERNAL_EXECUTION_RESULT", { toolResults: [nestedResults(depth, true)] })]);
  const chars = JSON.stringify(problems).length;
  assert.ok(chars < depth, `${problems.length} problems of ${chars} characters for an event ${depth} deep`);
});

test("a carrier adds what an AG-UI event lacks and never contradicts it: as Python's", () => {
  const d = new AGUIDecoder({ clock });
  const out = [
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "TEXT_MESSAGE_START", messageId: "m", role: "assistant" },
    {
      type: "TEXT_MESSAGE_CONTENT",
      messageId: "m",
      delta: "hi",
      metadata: { agentmsg: { type: "TOOL_CALL_DELTA", delta: "rm -rf", id: "e1", extra: 1 } },
    },
  ].flatMap((e) => d.feed(e));
  const last = out[out.length - 1];
  assert.deepEqual([last.type, last.delta, last.id, last.extra], ["TEXT_BLOCK_DELTA", "hi", "e1", 1]);
  assert.deepEqual(
    d.notes.map((n) => [n.pointer, n.rule, n.message]),
    [
      ["/2/metadata", "ui-carrier-conflict", 'agentmsg "type" "TOOL_CALL_DELTA" contradicts TEXT_BLOCK_DELTA "TEXT_BLOCK_DELTA": not applied'],
      ["/2/metadata", "ui-carrier-conflict", 'agentmsg "delta" "rm -rf" contradicts TEXT_BLOCK_DELTA "hi": not applied'],
    ],
  );
});

test("an AG-UI TOOL_CALL_END's carried input is the arguments shown or not applied: as Python's", () => {
  const d = new AGUIDecoder({ clock });
  const end = (id, input) => ({ type: "TOOL_CALL_END", toolCallId: id, metadata: { agentmsg: { input } } });
  const out = [
    { type: "RUN_STARTED", threadId: "t", runId: "r" },
    { type: "TOOL_CALL_START", toolCallId: "a", toolCallName: "f" },
    { type: "TOOL_CALL_ARGS", toolCallId: "a", delta: '{"path": "/tmp"}' },
    end("a", { path: "/" }),
    { type: "TOOL_CALL_START", toolCallId: "b", toolCallName: "f" },
    { type: "TOOL_CALL_ARGS", toolCallId: "b", delta: '{"n": 1.0}' },
    end("b", { n: 1 }),
  ].flatMap((e) => d.feed(e));
  assert.deepEqual(
    out.filter((e) => e.type === "TOOL_CALL_END").map((e) => e.input),
    [undefined, { n: 1 }],
  );
  assert.deepEqual(
    d.notes.map((n) => [n.pointer, n.rule, n.message]),
    [["/3/metadata", "ui-carrier-conflict", 'agentmsg "input" {"path":"/"} contradicts TOOL_CALL_END {"path":"/tmp"}: not applied']],
  );
});

test("an AI SDK carrier adds what a chunk lacks and never contradicts it: as Python's", () => {
  const d = new AiSdkDecoder({ clock });
  const rest = (kind, fields) => ({ type: "data-agentmsg", data: { rest: kind, fields }, transient: true });
  const out = [
    { type: "start", messageId: "r" },
    rest("TEXT_BLOCK_DELTA", { type: "TOOL_CALL_DELTA", delta: "rm -rf", id: "e1" }),
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "hi" },
    rest("CUSTOM", { value: { code: 5, message: "boom" } }),
    { type: "error", errorText: "boom" },
  ].flatMap((c) => d.feed(c));
  const delta = out.find((e) => e.type === "TEXT_BLOCK_DELTA");
  assert.deepEqual([delta.delta, delta.id], ["hi", "e1"]);
  assert.deepEqual(out[out.length - 1].value, { code: 5, message: "boom" });
  assert.deepEqual(
    d.notes.map((n) => [n.pointer, n.rule, n.message]),
    [
      ["/3", "ui-carrier-conflict", 'data-agentmsg "type" "TOOL_CALL_DELTA" contradicts TEXT_BLOCK_DELTA "TEXT_BLOCK_DELTA": not applied'],
      ["/3", "ui-carrier-conflict", 'data-agentmsg "delta" "rm -rf" contradicts TEXT_BLOCK_DELTA "hi": not applied'],
    ],
  );
});

test("an AI SDK carrier names a call only as its tool-input-available shows it: as Python's", () => {
  const d = new AiSdkDecoder({ clock });
  const rest = (fields) => ({ type: "data-agentmsg", data: { rest: "TOOL_CALL_END", fields }, transient: true });
  const out = [
    { type: "start", messageId: "r" },
    { type: "tool-input-start", toolCallId: "c", toolName: "f" },
    rest({ toolCallName: "rm" }),
    { type: "tool-input-available", toolCallId: "c", toolName: "f", input: {} },
    { type: "tool-input-start", toolCallId: "e", toolName: "f" },
    rest({ toolCallName: "__pending__" }),
    { type: "tool-input-available", toolCallId: "e", toolName: "f", input: {} },
  ].flatMap((c) => d.feed(c));
  assert.deepEqual(
    out.filter((e) => e.type === "TOOL_CALL_END").map((e) => e.toolCallName),
    [undefined, "__pending__"],
  );
  assert.deepEqual(
    d.notes.map((n) => [n.pointer, n.rule, n.message]),
    [["/3", "ui-carrier-conflict", 'data-agentmsg "toolCallName" "rm" contradicts TOOL_CALL_END "f": not applied']],
  );
});

// Events fed as objects whose value shares its members (an array of the same array twice, k levels down: k arrays,
// 2**k values as JSON), reduced in a worker: the walks went path by path (30 deep: never returned), so a reduction
// that does not end within a minute gives no result (the guard, not a timed assertion). Tolerant and strict.
const SHARED_REDUCTION = `
  const { parentPort, workerData: { dist, depth, where, kind, strict } } = require("node:worker_threads");
  (async () => {
    const { Reducer } = await import(dist + "/index.js");
    const { validateEvent } = await import(dist + "/strict.js");
    const TS = "2026-01-01T00:00:00.000000Z";
    const ev = (n, type, keys = {}) => ({ type, id: "e" + n, createdAt: TS, replyId: "r", ...keys });
    let d = kind === "lists" ? [] : {};
    for (let i = 0; i < depth; i++) d = kind === "lists" ? [d, d] : { a: d, b: d };
    const carrying = where === "input"
      ? [ev(1, "TOOL_CALL_START", { toolCallId: "c", toolCallName: "f" }), ev(2, "TOOL_CALL_END", { toolCallId: "c", input: { v: d } })]
      : [ev(1, "MODEL_CALL_END", { usage: { inputTokens: 3 }, metadata: { grounding: { v: d } } })];
    const events = [ev(0, "AGENT_START"), ...carrying, ev(3, "TEXT_BLOCK_START", { blockId: "t" }),
      ev(4, "TEXT_BLOCK_DELTA", { blockId: "t", delta: "kept" }), ev(5, "TEXT_BLOCK_END", { blockId: "t" }), ev(9, "AGENT_END")];
    const r = new Reducer(strict ? { validate: validateEvent } : {});
    try {
      for (const e of events) r.feed(e);
      const content = r.finish().map((m) => m.content.map((b) => b.type + (b.type === "text" ? ":" + b.text : "")));
      parentPort.postMessage({ content, problems: r.problems.map((p) => [p.pointer, p.rule, p.message]) });
    } catch (x) {
      parentPort.postMessage({ thrown: x.constructor.name, problems: x.problems.map((p) => [p.pointer, p.rule, p.message]) });
    }
  })();
`;
const reduceShared = (workerData) =>
  new Promise((resolve, reject) => {
    const worker = new Worker(SHARED_REDUCTION, { eval: true, workerData: { dist: new URL("../dist", import.meta.url).href, ...workerData } });
    const guard = setTimeout(() => worker.terminate().then(() => resolve("no result within a minute")), 60_000);
    worker.once("message", (out) => (clearTimeout(guard), worker.terminate(), resolve(out)));
    worker.once("error", (x) => (clearTimeout(guard), reject(x)));
  });

// Python's reducer (agentmsg.events.Reducer().feed of the same events, strict=True for strict: SizeLimitError), run
// on the same values as dicts and lists: its problems, copied here as literals.
const PY_LIMIT = "exceeds the limit of 268435456 (limits.max_bytes)";
const PY_SHARED = {
  lists: { 30: { size: 335544317, down: "/0/0/0/0" }, step: "/0" },
  dicts: { 30: { size: 436207605, down: "/a/a/a/a/a" }, step: "/a" },
};
for (const kind of ["lists", "dicts"]) {
  for (const where of ["input", "metadata"]) {
    const what = where === "input" ? "an input" : "metadata";
    const [at, content] = where === "input" ? ["/2/input/v", ["tool_use", "text:kept"]] : ["/1/metadata/grounding/v", ["text:kept"]];
    test(`${what} of ${kind} shared 30 deep (2**30 values) is refused past max_bytes, as Python says it`, async () => {
      const { size, down } = PY_SHARED[kind][30];
      const words = `${size} bytes of JSON (a value sharing its members) ${PY_LIMIT}`;
      assert.deepEqual(await reduceShared({ depth: 30, where, kind, strict: false }), {
        content: [content],
        problems: [[at + down, "max-bytes", `${words}: event skipped`]],
      });
      assert.deepEqual(await reduceShared({ depth: 30, where, kind, strict: true }), {
        thrown: "ReducerError",
        problems: [[at + down, "max-bytes", words]],
      });
    });
    if (where === "input") {
      test(`an input of ${kind} shared 20 deep (2**20 values, within max_bytes) is taken, as Python takes it`, async () => {
        for (const strict of [false, true]) assert.deepEqual(await reduceShared({ depth: 20, where, kind, strict }), { content: [content], problems: [] });
      });
    }
    test(`${what} of ${kind} shared 300 deep is refused past max_depth, as Python says it`, async () => {
      // (the array or object that crosses the limit: the 255th token of the pointer, as for a chain as deep)
      const pointer = at + PY_SHARED[kind].step.repeat(255 - at.split("/").length + 1);
      const words = "nested deeper than 254 levels (limits.max_depth)";
      assert.deepEqual(await reduceShared({ depth: 300, where, kind, strict: false }), {
        content: [content],
        problems: [[pointer, "max-depth", `${words}: event skipped`]],
      });
      assert.deepEqual(await reduceShared({ depth: 300, where, kind, strict: true }), { thrown: "ReducerError", problems: [[pointer, "max-depth", words]] });
    });
  }
}
