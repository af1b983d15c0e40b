// Reducer behaviour beyond the shared vectors (tests/typescript runs those): salvage of invalid
// content, odd ids, the base64 rule, snapshots, the wire form of whole blocks, the compiled validators.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { Reducer, reduceEvents, isBase64Fragment, validateMessage, canonicalMessage, EVENT_TYPES, CUT_RULE } from "../dist/index.js";
import { validateEvent } from "../dist/strict.js";
import { dateTime } from "../dist/schema/compiled/index.js"; // the generated runtime the package carries

const at = "2025-01-01T00:00:00Z";
const ev = (type, id, extra = {}) => ({ type, id, createdAt: at, replyId: "m", ...extra });

test("what does not validate is left out (pruned, or the block), reported in problems and in agentmsg_reduce_errors", () => {
  const events = [
    ev("AGENT_START", "1"),
    ev("DATA_BLOCK_START", "2", { blockId: "b", mediaType: "image/png" }),
    ev("DATA_BLOCK_DELTA", "3", { blockId: "b", delta: "QQ==" }),
    ev("DATA_BLOCK_DELTA", "4", { blockId: "b", delta: "QQ==" }), // after the padding: dropped, the data stays valid
    ev("DATA_BLOCK_END", "5", { blockId: "b" }),
    ev("THINKING_BLOCK_START", "6", { blockId: "k" }),
    ev("THINKING_BLOCK_END", "7", { blockId: "k", metadata: { signature: 5, keep: 1 } }), // a wrong signature: pruned
    ev("DATA_BLOCK_START", "8", { blockId: "w", block: { type: "image", source: { type: "url" } } }), // no url: left out
    ev("TEXT_BLOCK_START", "9", { blockId: "t" }),
    ev("TEXT_BLOCK_DELTA", "10", { blockId: "t", delta: "kept" }),
    ev("TEXT_BLOCK_END", "11", { blockId: "t" }),
    ev("AGENT_END", "12"),
  ];
  const r = new Reducer();
  for (const e of events) r.feed(e);
  const [msg] = r.finish();
  assert.deepEqual(msg.content, [
    { type: "data", source: { type: "base64", media_type: "image/png", data: "QQ==" }, id: "b" },
    { type: "thinking", thinking: "", metadata: { keep: 1 } },
    { type: "text", text: "kept" },
  ]);
  assert.deepEqual(msg.metadata.agentmsg_reduce_errors, ["/content/1/metadata/signature [type]", "/content/2/source [required]"]);
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [["/3/delta", "pattern"], ["/7/block/source", "required"], ["/5", "type"], ["/7", "required"]]);
  assert.deepEqual(validateMessage(msg), []);
});

test("odd ids and names are reported, never thrown (same rule as Python)", () => {
  const r = new Reducer();
  r.feed({ type: "AGENT_START", id: { x: 1 }, createdAt: at, replyId: true, name: { a: 1 } });
  r.feed({ type: "TEXT_BLOCK_START", id: ["a"], createdAt: at, replyId: "r", blockId: "text" });
  r.feed({ type: "TEXT_BLOCK_DELTA", id: "3", createdAt: at, replyId: "r", blockId: "text", delta: "ok" });
  const [msg] = r.finish();
  assert.equal(msg.content[0].text, "ok");
  assert.equal(msg.name, null);
  assert.equal(msg.id, "msg-0"); // nothing names the reply, its first event has no string id: its index
  // (the stream ended inside the reply: said last, at its first event)
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [["/0/id", "type"], ["/0/name", "type"], ["/0/replyId", "type"], ["/1/id", "type"], ["/0", "incomplete_stream"]]);
});

test("a cut reply is said (incomplete_stream, Reducer.cut) and one AgentScope interrupted is not; strict does not throw at finish", () => {
  const stopped = [ev("AGENT_START", "0"), ev("MODEL_CALL_START", "1"), ev("TEXT_BLOCK_START", "2", { blockId: "t" }), ev("TEXT_BLOCK_DELTA", "3", { blockId: "t", delta: "hi" }), ev("TEXT_BLOCK_END", "4", { blockId: "t" }), ev("MODEL_CALL_END", "5"), { type: "REQUEST_STOP", id: "6", createdAt: at, generateReason: "INTERRUPTED" }];
  for (const options of [{}, { validate: validateEvent }]) {
    const whole = new Reducer(options);
    for (const e of [...stopped, ev("AGENT_END", "7")]) whole.feed(e);
    const [done] = whole.finish();
    assert.equal(done.metadata.agentscope_generate_reason, "INTERRUPTED");
    assert.deepEqual([whole.problems, whole.cut], [[], null]);
    const cut = new Reducer(options);
    for (const e of stopped) cut.feed(e);
    const [msg] = cut.finish();
    assert.equal(msg.metadata.agentscope_generate_reason, "INTERRUPTED");
    assert.equal(cut.cut, msg);
    assert.deepEqual(cut.problems, [{ pointer: "/0", rule: CUT_RULE, message: "the stream ended inside reply m (no AGENT_END): kept with what arrived, marked INTERRUPTED" }]);
    cut.finish();
    assert.equal(cut.problems.length, 1); // said once
  }
  const r = new Reducer();
  for (const e of [ev("MODEL_CALL_START", "0"), ev("TOOL_CALL_START", "1", { toolCallId: "c1", toolCallName: "search" }), ev("THINKING_BLOCK_START", "2", { blockId: "th" }), ev("TOOL_RESULT_START", "3", { toolCallId: "c0", toolCallName: "read" })]) r.feed(e);
  r.finish();
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule, p.message]), [
    ["/0", "incomplete_stream", "the stream ended inside reply m (open: a model call, tool call 'c1' ('search'), thinking block 'th', tool result 'c0' ('read')): kept with what arrived, marked INTERRUPTED"],
  ]);
});

test("the cut stream's problem names what was open word for word as Python's reducer (a shared vector)", () => {
  // tests/conformance/reducer/cut-stream-names-what-is-open.json: Python's reducer says its problem_messages too
  const file = new URL("../../../tests/conformance/reducer/cut-stream-names-what-is-open.json", import.meta.url);
  const c = JSON.parse(fs.readFileSync(file, "utf8"));
  const r = new Reducer();
  for (const e of c.events) r.feed(e);
  r.finish();
  assert.deepEqual(r.problems.map((p) => ({ pointer: p.pointer, rule: p.rule })), c.problems);
  assert.deepEqual(r.problems.map((p) => p.message), c.problem_messages);
});

test("malformed events are skipped with rule required/type; non-objects and inherited names are not events", () => {
  const r = new Reducer();
  for (const e of [null, [1], 5, { type: "toString", id: "x" }, ev("TEXT_BLOCK_START", "a"), ev("TEXT_BLOCK_DELTA", "b", { blockId: "t", delta: 5 }), ev("TEXT_BLOCK_START", "c", { blockId: { no: 1 } }), ev("AGENT_RESULT", "d", { result: [] })]) r.feed(e);
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [
    // (the delta of /5 is no string: skipped before its block is started, so no "never started" order problem)
    ["/0", "type"], ["/1", "type"], ["/2", "type"], ["/3/type", "enum"], ["/4", "required"], ["/5", "type"], ["/6/blockId", "type"], ["/6", "type"], ["/7/result", "type"], ["/7", "type"],
  ]);
  assert.equal(EVENT_TYPES.length, 31);
});

test("base64 fragments: exactly Python's base64.b64decode(padded, validate=True) verdicts", () => {
  // Every string of up to 8 characters over "Q=" that Python accepts (computed with CPython 3.11).
  const ok = new Set(["", "QQ", "QQQ", "QQ=", "QQQQ", "QQQ=", "QQ==", "QQQQ=", "QQQQQQ", "QQQQ==", "QQQQQQQ", "QQQQQQ=", "QQQQ===", "QQQQQQQQ", "QQQQQQQ=", "QQQQQQ==", "QQQQ===="]);
  const all = [""];
  for (let n = 1; n <= 8; n++) for (let i = 0; i < 2 ** n; i++) all.push([...i.toString(2).padStart(n, "0")].map((b) => (b === "0" ? "Q" : "=")).join(""));
  for (const s of all) assert.equal(isBase64Fragment(s), ok.has(s), JSON.stringify(s));
  for (const s of [" QQ", "QQ\n", "QQ-_", "Q"]) assert.equal(isBase64Fragment(s), false);
  assert.equal(isBase64Fragment("aGVsbG8/+w=="), true);
});

test("snapshots are consistent at every step and show streaming tool input as {}", () => {
  const events = [
    ev("AGENT_START", "1", { name: "Friday" }),
    ev("TOOL_CALL_START", "2", { toolCallId: "c", toolCallName: "f" }),
    ev("TOOL_CALL_DELTA", "3", { toolCallId: "c", delta: '{"a":' }),
    ev("TOOL_CALL_DELTA", "4", { toolCallId: "c", delta: "1}" }),
    ev("TOOL_CALL_END", "5", { toolCallId: "c" }),
    ev("AGENT_END", "6"),
  ];
  const r = new Reducer();
  const snaps = [];
  for (const e of events) { r.feed(e); snaps.push(r.snapshot()); }
  assert.deepEqual(snaps[2].content[0].input, {});
  assert.equal(snaps[3].content[0].content, '{"a":1}');
  assert.deepEqual(snaps[4].content[0].input, { a: 1 });
  assert.equal(snaps[5], null);
  for (const s of snaps.slice(0, 5)) assert.deepEqual(validateMessage(s), []);
  assert.deepEqual(r.finish()[0].content[0], { type: "tool_use", id: "c", name: "f", input: { a: 1 }, content: '{"a":1}', metadata: {}, state: "pending" });
});

test("whole blocks from events come out in the wire form (defaults, nulls, camelCase sizing, key order)", () => {
  const [msg] = reduceEvents([
    ev("AGENT_START", "1"),
    ev("DATA_BLOCK_START", "2", { blockId: "i", block: { source: { url: "https://a.example/x.png", type: "url" }, type: "image", min_pixels: 10 } }),
    ev("DATA_BLOCK_END", "3", { blockId: "i" }),
    ev("TOOL_RESULT_START", "4", { toolCallId: "c", toolCallName: "f" }),
    ev("TOOL_RESULT_DATA_DELTA", "5", { toolCallId: "c", data: { type: "thinking", thinking: "t" } }),
    ev("TOOL_RESULT_END", "6", { toolCallId: "c", state: "success" }),
    ev("AGENT_END", "7"),
  ]);
  assert.equal(JSON.stringify(msg.content[0]), '{"type":"image","source":{"type":"url","url":"https://a.example/x.png"},"minPixels":10}');
  assert.equal(JSON.stringify(msg.content[1].output[0]), '{"type":"thinking","thinking":"t","metadata":null}');
  assert.deepEqual(Object.keys(msg), ["id", "name", "role", "content", "metadata", "timestamp", "usage"]);
  assert.equal(msg.timestamp, "2025-01-01 00:00:00.000");
  assert.deepEqual(canonicalMessage({ id: "m", role: "USER", content: [{ type: "hint", hint: "h" }] }), { id: "m", name: null, role: "USER", content: [{ type: "hint", id: null, hint: "h", source: null }], metadata: {}, timestamp: null, usage: null });
});

test("the compiled validators: role rules, event schema, date-time format", () => {
  assert.ok(validateMessage({ id: "m", role: "USER", content: [{ type: "thinking", thinking: "x" }] }).length > 0);
  assert.deepEqual(validateEvent(ev("TEXT_BLOCK_DELTA", "e", { blockId: "t", delta: "x" })), []);
  assert.ok(validateEvent({ type: "REPLY_START", id: "e", createdAt: at }).length > 0);
  for (const [s, ok] of [["2024-02-29T12:00:00Z", true], ["2023-02-29T12:00:00Z", false], ["2025-13-01T00:00:00Z", false], ["2025-01-01T24:00:00Z", false], ["2025-06-30T23:59:60Z", true], ["2025-06-30T22:59:60-01:00", true], ["2025-06-30T12:59:60Z", false], ["2025-01-01T00:00:00+24:00", false], ["2025-01-01", false],
    // RFC 3339 as Python's checker reads it: no space for the T, an offset with its colon.
    ["2025-01-01 12:00:00Z", false], ["2025-01-01T12:00:00+0530", false], ["2025-01-01t12:00:00+05:30", true]]) {
    assert.equal(dateTime(s), ok, s);
  }
  // A timestamp that is neither Java's form nor RFC 3339 is one problem with the schema's x-rule, as in Python.
  assert.deepEqual(validateMessage({ id: "m", role: "USER", content: [], timestamp: "2023-02-29T12:00:00Z" }).map((p) => [p.pointer, p.rule]), [["/timestamp", "timestamp"]]);
});

test("a value JSON cannot hold in several places: the first in document order is named, as Python names it", () => {
  const first = (metadata) => validateMessage({ id: "m", role: "USER", content: [], metadata }).map((p) => [p.pointer, p.rule]);
  let deep = [];
  for (let i = 0; i < 300; i++) deep = [deep];
  assert.deepEqual(first({ a: ["\ud800", "\udc00"] }), [["/metadata/a/0", "lone-surrogate"]]);
  assert.deepEqual(first({ a: [NaN, Infinity] }), [["/metadata/a/0", "json-value"]]);
  assert.deepEqual(first({ a: Infinity, "\ud800": 1 }), [["/metadata/a", "json-value"]]);
  assert.deepEqual(first({ "\ud800": Infinity }), [["/metadata", "lone-surrogate"]]); // (a key before its value)
  assert.deepEqual(first({ a: "\ud800", b: deep }), [["/metadata/a", "lone-surrogate"]]);
  assert.deepEqual(first({ a: [[1], deep], b: "\ud800" })[0][1], "max-depth");
  assert.equal(first({ a: [[1], deep], b: "\ud800" })[0][0], `/metadata/a/1${"/0".repeat(251)}`);
  // ... in Python's words (jsontext.py _scalar_problem: the string's repr, Python's nan and inf)
  const said = (metadata) => validateMessage({ id: "m", role: "USER", content: [], metadata }).map((p) => p.message);
  assert.deepEqual(said({ a: ["x\ud800", NaN] }), ["string 'x\\ud800' holds a lone UTF-16 surrogate (not encodable as UTF-8)"]);
  assert.deepEqual(said({ a: [-Infinity, NaN] }), ["-inf is not a JSON number"]);
  assert.deepEqual(said({ "\udc00": 1 }), ["object key: string '\\udc00' holds a lone UTF-16 surrogate (not encodable as UTF-8)"]);
});

test("ids that are no strings are quoted as Python's reducer quotes its keys: True, not 1", () => {
  const r = new Reducer({ maxOpenBlocks: 2 });
  r.feed(ev("AGENT_START", "1"));
  r.feed(ev("TEXT_BLOCK_START", "2", { blockId: true }));
  r.feed(ev("TEXT_BLOCK_START", "3", { blockId: 1 })); // (the same key in Python: True == 1)
  r.feed(ev("TOOL_CALL_START", "4", { toolCallId: false, toolCallName: "f" }));
  r.feed(ev("TOOL_RESULT_START", "5", { toolCallId: 2.5, toolCallName: "f" }));
  r.feed(ev("TEXT_BLOCK_END", "6", { blockId: [1] })); // (a list is no key: malformed)
  r.finish();
  // (what the schema check says, "must be string", is the validator's own wording: left out)
  const said = (reducer) => reducer.problems.filter((p) => !/must be string/.test(p.message)).map((p) => p.message);
  assert.deepEqual(said(r), [
    "text block 1 started twice: the second START is ignored",
    "more than 2 blocks, tool calls and tool results open in one reply: the block True opened first is closed as it is",
    "malformed TEXT_BLOCK_END event (TypeError: unhashable type: 'list'): event skipped",
    "the stream ended inside reply m (no AGENT_END; open: tool call False ('f'), tool result 2.5 ('f')): kept with what arrived, marked INTERRUPTED",
  ]);
  // Between replies nothing is open: an END for any id, a list too, is for nothing open.
  const between = new Reducer();
  between.feed(ev("TEXT_BLOCK_END", "1", { blockId: [1, true] }));
  assert.deepEqual(said(between), ["END for text block [1, True] that is not open: ignored"]);
});

test("strict mode throws at the first problem and keeps what it had", () => {
  const r = new Reducer({ validate: validateEvent });
  r.feed(ev("AGENT_START", "1"));
  r.feed(ev("TEXT_BLOCK_START", "2", { blockId: "t" }));
  r.feed(ev("TEXT_BLOCK_DELTA", "3", { blockId: "t", delta: "kept" }));
  assert.throws(() => r.feed({ type: "REPLY_START", id: "4", createdAt: at }), (e) => e.name === "ReducerError" && e.problems[0].pointer.startsWith("/3"));
  assert.throws(() => r.feed(ev("TEXT_BLOCK_DELTA", "5", { blockId: "zz", delta: "x" })), (e) => e.problems[0].rule === "order");
  assert.equal(r.finish()[0].content[0].text, "kept");
});

test("only an RFC 3339 instant in UTC gives the message its timestamp, as in Python", () => {
  const cases = [
    ["2026-11-22T10:34:38.5Z", "2026-11-22 10:34:38.500"],
    ["2026-11-22t10:34:38.123456789z", "2026-11-22 10:34:38.123"],
    ["2026-11-22T10:34:38,5Z", null],
    ["2026-11-22T10:34:38.Z", null],
    ["2026-11-22T10:34:38.1234567890Z", null],
    ["2026-11-22T10:34:38.abcZ", null],
    ["2026-11-22T10:34:38.5 Z", null],
    ["2026-11-22T10:34:38.\u0661Z", null],
    // no real date and time (java_form_of_instant): none, as Python's test_timestamps.py
    ["2026-02-30T10:00:00.123456Z", null],
    ["2025-02-29T10:00:00.123456Z", null],
    ["2026-04-31T10:00:00Z", null],
    ["2026-01-10T24:00:00Z", null],
    ["2026-01-10T10:60:00Z", null],
    ["2026-01-10T10:00:60Z", null],
    ["2024-02-29T10:00:00.123456Z", "2024-02-29 10:00:00.123"],
    ["0000-01-01T10:00:00.123456Z", null], // no year 0 (Python took it by its quick pattern)
    ["2026-12-31T23:59:60.5Z", "2026-12-31 23:59:60.500"],
  ];
  for (const [createdAt, want] of cases) {
    const r = new Reducer();
    r.feed({ type: "AGENT_START", id: "1", createdAt, replyId: "m" });
    r.feed({ type: "AGENT_END", id: "2", createdAt: at, replyId: "m" });
    const [msg] = r.finish();
    assert.equal(msg.timestamp, want, createdAt);
    // (a date of none became a timestamp the message schema refuses: left out, the message blamed, rule timestamp)
    assert.ok(!r.problems.some((p) => p.rule === "timestamp"), createdAt);
  }
});

test("usage beyond 2^53: JavaScript cannot promise the digits, so it says so (rule precision); Python keeps exact ints", () => {
  // (the counts AgentScope Java lacks are 64-bit; those it holds in an int stop at 2^31-1: the next test)
  const at = "2025-01-01T00:00:00Z";
  const end = (id, usage) => ({ type: "MODEL_CALL_END", id, createdAt: at, replyId: "m", usage });
  const r = new Reducer();
  r.feed({ type: "AGENT_START", id: "a", createdAt: at, replyId: "r" });
  r.feed(end("b", { cacheCreationInputTokens: 2 ** 53 - 1, reasoningTokens: 4 }));
  r.feed(end("c", { cacheCreationInputTokens: 1, reasoningTokens: 2 ** 53 + 2 }));
  r.feed(end("d", { cacheCreationInputTokens: -1, reasoningTokens: 1 }));
  r.feed({ type: "AGENT_END", id: "e", createdAt: at, replyId: "r" });
  const [msg] = r.finish();
  // (the negative count is not summed; 4 + (2^53 + 2) + 1 = 2^53 + 7 is no double: it became 2^53 + 8)
  assert.deepEqual(msg.usage, { cacheCreationInputTokens: 2 ** 53, reasoningTokens: 2 ** 53 + 8 });
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [
    ["/2/usage/cacheCreationInputTokens", "precision"], // the sum 2^53 may not be exact
    ["/2/usage/reasoningTokens", "precision"],
    ["/3/usage/cacheCreationInputTokens", "minimum"], // the schema check
    ["/3/usage/cacheCreationInputTokens", "minimum"], // the sum leaves it out
    ["/3/usage/reasoningTokens", "precision"],
  ]);
});

test("a usage count AgentScope Java holds in an int stops at 2^31-1, as in Python (rule maximum)", () => {
  const at = "2025-01-01T00:00:00Z";
  const end = (id, usage) => ({ type: "MODEL_CALL_END", id, createdAt: at, replyId: "m", usage });
  const r = new Reducer();
  r.feed({ type: "AGENT_START", id: "a", createdAt: at, replyId: "r" });
  r.feed(end("b", { inputTokens: 2 ** 31 - 1, outputTokens: 2 }));
  r.feed(end("c", { inputTokens: 5, outputTokens: 3 }));
  r.feed({ type: "AGENT_END", id: "e", createdAt: at, replyId: "r" });
  const [msg] = r.finish();
  assert.deepEqual(msg.usage, { inputTokens: 2 ** 31 - 1, outputTokens: 5 });
  assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [["/2/usage/inputTokens", "maximum"]]);
});

test("maxProblems below 0 or not whole is refused, as Python's max_problems (-1 acted as 0)", () => {
  for (const v of [-1, 1.5]) assert.throws(() => new Reducer({ maxProblems: v }), RangeError);
  const bad = [{ id: "0", type: "AGENT_START" }, { id: "1", type: "NO_SUCH_EVENT" }, { id: "2", type: "NO_SUCH_EVENT" }];
  const none = new Reducer({ maxProblems: 0 });
  for (const e of bad) none.feed(e);
  assert.deepEqual(none.problems.map((p) => p.rule), ["max-problems"]);
  const all = new Reducer({ maxProblems: null });
  for (const e of bad) all.feed(e);
  assert.deepEqual(all.problems.map((p) => p.rule), ["enum", "enum"]);
});

test("maxOpenBlocks below 1 or not whole is refused, as Python's max_open_blocks (a negative one lost every block)", () => {
  for (const v of [0, -1, 1.5]) assert.throws(() => new Reducer({ maxOpenBlocks: v }), RangeError);
  const r = new Reducer({ maxOpenBlocks: 1 });
  for (const e of [ev("AGENT_START", "1"), ev("TEXT_BLOCK_START", "2", { blockId: "a" }), ev("TEXT_BLOCK_START", "3", { blockId: "b" })]) r.feed(e);
  assert.deepEqual(r.problems.map((p) => p.rule), ["max-open-blocks"]);
});

test("a problem's message is bounded as Python's Problem bounds it: 400 code points, its ends around a count", () => {
  // (Python's errors.bounded: past 400 characters, the first 280 and the last 80 around "...(N characters left
  // out)..."; the reducer cut at 300 UTF-16 units plus "...", and the cut stream's problem not at all)
  const r = new Reducer();
  const long = "x".repeat(300) + "\u{1F600}".repeat(300) + "y".repeat(100); // (700 code points, 1,000 UTF-16 units)
  r.feedUnreadable(long);
  r.feedUnreadable("\u{1F600}".repeat(400)); // (400 code points: whole)
  r.feed(ev("AGENT_START", "1"));
  for (let k = 0; k < 12; k++) r.feed(ev("TEXT_BLOCK_START", `b${k}`, { blockId: `block-${k}-${"z".repeat(60)}` }));
  r.finish();
  const [unreadable, whole, cut] = r.problems;
  assert.equal(unreadable.message, `${"x".repeat(280)}...(340 characters left out)...${"y".repeat(80)}`);
  assert.equal(whole.message, "\u{1F600}".repeat(400));
  assert.equal(cut.rule, CUT_RULE);
  // (the open things named as the reducer names them, 10 of 12, then the end: past 400, cut as Python cuts)
  // (each id quoted as Python's short_repr(id, 40) quotes it: its ends around "...")
  const named = Array.from({ length: 10 }, (_, k) => `text block 'block-${k}-${"z".repeat(9)}...${"z".repeat(18)}'`).join(", ");
  const full = `the stream ended inside reply m (no AGENT_END; open: ${named}, 2 more): kept with what arrived, marked INTERRUPTED`;
  const left = (full.length - 360).toLocaleString("en-US");
  assert.equal(cut.message, `${full.slice(0, 280)}...(${left} characters left out)...${full.slice(-80)}`);
  assert.ok(Array.from(cut.message).length <= 400);
  // strict mode (a validator given) throws the same bounded message
  assert.throws(() => new Reducer({ validate: validateEvent }).feedUnreadable(long), (e) => e.problems[0].message === unreadable.message);
});
