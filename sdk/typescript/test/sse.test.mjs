// The SSE decoder: the cases Python's suite has (tests/wire/test_sse.py): LF/CRLF/CR line ends, BOM,
// comments, multi-line data, retry, id, chunks split anywhere (inside a CRLF or a UTF-8 sequence),
// empty chunks between CR and LF, an unterminated event at the end.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Reducer, SSEDecoder, encodeSSE, reduceEvents, reduceSSE } from "../dist/index.js";

const at = "2025-01-01T00:00:00Z";
export const EVENTS = [
  { type: "AGENT_START", id: "e1", createdAt: at, replyId: "r", name: "Friday" },
  { type: "TEXT_BLOCK_START", id: "e2", createdAt: at, replyId: "r", blockId: "text" },
  { type: "TEXT_BLOCK_DELTA", id: "e3", createdAt: at, replyId: "r", blockId: "text", delta: "héllo ☀️\nline2" },
  { type: "TEXT_BLOCK_DELTA", id: "e4", createdAt: at, replyId: "r", blockId: "text", delta: " world" },
  { type: "TEXT_BLOCK_END", id: "e5", createdAt: at, replyId: "r", blockId: "text" },
  { type: "AGENT_END", id: "e6", createdAt: at, replyId: "r" },
];
const body = (events) => events.map((e) => encodeSSE(JSON.stringify(e), { id: e.id, event: e.type })).join("");
const utf8 = (s) => new TextEncoder().encode(s);

function decodeAll(chunks) {
  const d = new SSEDecoder();
  return chunks.flatMap((c) => d.feed(c).map((e) => [e.id, e.event, e.data]));
}

test("encode writes id, event and data (multi-line data as several data lines)", () => {
  assert.ok(body(EVENTS.slice(0, 1)).startsWith('id: e1\nevent: AGENT_START\ndata: {'));
  assert.equal(encodeSSE("a\nb", { retry: 5 }), "retry: 5\ndata: a\ndata: b\n\n");
});

for (const [name, nl] of [["LF", "\n"], ["CRLF", "\r\n"], ["CR", "\r"]]) {
  test(`line ends ${name}, BOM, comments, multi-line data, retry, id`, () => {
    const raw = '\ufeff: a comment\nretry: 3000\nid: 7\nevent: custom\ndata: first\ndata:second\ndata:  third\n\n: keepalive\n\ndata: {"x": 1}\n\n'.replaceAll("\n", nl);
    const d = new SSEDecoder();
    const events = d.feed(utf8(raw));
    assert.deepEqual(events.map((e) => [e.id, e.event, e.data]), [["7", "custom", "first\nsecond\n third"], ["7", "message", '{"x": 1}']]);
    assert.equal(events[0].retry, 3000);
    assert.equal(events[1].retry, null);
    assert.equal(d.retry, 3000);
    assert.equal(d.lastEventId, "7");
  });
}

test("chunks split anywhere, even inside a CRLF or a UTF-8 sequence", () => {
  const bytes = utf8(body(EVENTS).replaceAll("\n", "\r\n"));
  const whole = decodeAll([bytes]);
  assert.equal(whole.length, EVENTS.length);
  let seed = 7;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  for (let k = 0; k < 200; k++) {
    const cuts = [...new Set(Array.from({ length: 1 + rand(30) }, () => 1 + rand(bytes.length - 1)))].sort((a, b) => a - b);
    const edges = [0, ...cuts, bytes.length];
    assert.deepEqual(decodeAll(edges.slice(0, -1).map((a, i) => bytes.subarray(a, edges[i + 1]))), whole);
  }
  assert.deepEqual(decodeAll([...bytes].map((b) => Uint8Array.of(b))), whole); // one byte at a time
  assert.equal(JSON.parse(whole[2][2]).delta, "héllo ☀️\nline2");
});

test("string chunks work too", () => {
  const text = body(EVENTS);
  const d = new SSEDecoder();
  assert.equal([...text].flatMap((ch) => d.feed(ch)).length, EVENTS.length);
});

test("an unterminated last event is not dispatched: close() says so (rule incomplete), as Python's decoder", () => {
  const d = new SSEDecoder();
  assert.deepEqual(d.feed(utf8("id: 1\nevent: x\ndata: partial")), []);
  const [cut, ...more] = d.close();
  assert.deepEqual([cut.data, cut.event, cut.id, cut.problem?.rule, more.length], ["", "x", "1", "incomplete", 0]);
  assert.deepEqual(d.close(), []); // said once
  for (const rest of ["data: a\n", "data: a\n\ndata: b", "data: a\n\n\xe2", "id: 2\ndata: x\ndata: y\r"]) {
    const e = new SSEDecoder();
    e.feed(rest === "data: a\n\n\xe2" ? Uint8Array.of(...utf8("data: a\n\n"), 0xe2) : utf8(rest));
    assert.deepEqual(e.close().map((x) => x.problem?.rule), ["incomplete"], JSON.stringify(rest));
  }
  // Nothing pending: nothing said (an event type or retry alone is no event yet).
  for (const done of ["data: a\n\n", "event: x\n", "retry: 5\n", ": c\n", ""]) {
    const e = new SSEDecoder();
    e.feed(utf8(done));
    assert.deepEqual(e.close(), [], JSON.stringify(done));
  }
});

test("invalid UTF-8 is replaced by U+FFFD and said on its event (rule utf-8), chunked anyhow", () => {
  const raw = Uint8Array.of(...utf8("data: a"), 0xff, ...utf8("b\n\nid: 7\ndata: ok \u00e9\n\n: c"), 0xc3, ...utf8("\nevent: "), 0xe2, 0x98, ...utf8("\ndata: {}\n\n"));
  const want = [["a\ufffdb", "message", "", "utf-8"], ["ok \u00e9", "message", "7", null], ["{}", "\ufffd", "7", "utf-8"]];
  const run = (chunks) => {
    const d = new SSEDecoder();
    return [...chunks.flatMap((c) => d.feed(c)), ...d.close()].map((e) => [e.data, e.event, e.id, e.problem?.rule ?? null]);
  };
  assert.deepEqual(run([raw]), want);
  assert.deepEqual(run([...raw].map((b) => Uint8Array.of(b))), want); // one byte at a time
  for (let cut = 0; cut <= raw.length; cut++) assert.deepEqual(run([raw.subarray(0, cut), raw.subarray(cut)]), want);
  // A U+FFFD that was sent as such is no problem; a split multi-byte character is none either.
  assert.deepEqual(run([utf8("data: \ufffd \u2600\n\n")]), [["\ufffd \u2600", "message", "", null]]);
  const sun = utf8("data: \u2600\n\n");
  assert.deepEqual(run([sun.subarray(0, 7), sun.subarray(7)]), [["\u2600", "message", "", null]]);
});

test("empty chunks between the CR and LF of a CRLF do not make a blank line", () => {
  const b = utf8("data: a\r\ndata: b\r\n\r\n");
  const d = new SSEDecoder();
  const chunks = [b.subarray(0, 8), new Uint8Array(), new Uint8Array(), b.subarray(8, 17), new Uint8Array(), b.subarray(17)];
  assert.deepEqual(chunks.flatMap((c) => d.feed(c).map((e) => e.data)), ["a\nb"]);
});

test("text after bytes that ended inside a UTF-8 sequence goes on from them, in order (as Python's decoder)", () => {
  const d = new SSEDecoder();
  const chunks = [Uint8Array.of(...utf8("data: "), 0xc3), "\n\n", "data: a\ud83d", Uint8Array.of(0xe2, 0x82), "\ude00", utf8("x\n\n")];
  const out = [...chunks.flatMap((c) => d.feed(c)), ...d.close()];
  // (The cut sequence was read after the text: an event "" without a problem, then an `incomplete` one.)
  assert.deepEqual(out.map((e) => [e.data, e.problem?.rule ?? null]), [["\ufffd", "utf-8"], ["a\ufffd\ufffd\ufffdx", "utf-8"]]);
});

test("an id holding NUL is ignored; a field without colon; retry must be digits", () => {
  const d = new SSEDecoder();
  const out = d.feed("id: a\0b\nretry: 12x\ndata\n\nid\ndata: y\n\n");
  assert.deepEqual(out.map((e) => [e.id, e.data, e.retry]), [["", "", null], ["", "y", null]]);
});

test("resume: the last event id before a drop; a replayed overlap is dropped by the reducer", () => {
  const text = body(EVENTS);
  const d = new SSEDecoder();
  const first = d.feed(text.slice(0, text.indexOf("id: e4")));
  assert.equal(d.lastEventId, "e3");
  const replayed = [...first.map((e) => JSON.parse(e.data)), ...EVENTS.slice(1)];
  assert.deepEqual(reduceEvents(replayed)[0].content, reduceEvents(EVENTS)[0].content);
  assert.equal(reduceEvents(EVENTS)[0].content[0].text, "héllo ☀️\nline2 world");
});

test("a long line is scanned and joined once: time linear in it (the held line was joined and searched again at every chunk)", () => {
  // Work, not time: count the characters indexOf is asked to search, through a wrapped String.prototype.
  const original = String.prototype.indexOf;
  let searched = 0;
  String.prototype.indexOf = function (needle, from = 0) {
    searched += this.length - from;
    return original.call(this, needle, from);
  };
  try {
    for (const n of [256, 1024]) {
      searched = 0;
      const d = new SSEDecoder();
      d.feed(utf8("data: "));
      const chunk = utf8("x".repeat(4096));
      for (let i = 0; i < n; i++) d.feed(chunk);
      // held as its pieces, joined once at its end (a string joined at every chunk is copied every time)
      assert.equal(d.held.length, n + 1); // "data: " and the n chunks
      const [event] = d.feed(utf8("\n\n"));
      assert.equal(event.data.length, n * 4096);
      assert.ok(searched < 3 * (n * 4096 + 16), `searched ${searched} characters for a ${n * 4096}-character line`);
    }
  } finally {
    String.prototype.indexOf = original;
  }
});

test("limits: a line or an event's data over them is dropped and said, as Python's decoder says it", () => {
  const d = new SSEDecoder({ maxLineLength: 20, maxEventLength: 30 });
  const chunks = ["data: ", "x".repeat(15), "y".repeat(15), "\ndata: more\n\n", "data: ok\n\n"];
  const events = chunks.flatMap((c) => d.feed(utf8(c)));
  assert.deepEqual(events.map((e) => [e.data, e.problem?.rule ?? null]), [["", "max-line-bytes"], ["ok", null]]);
  const many = d.feed(utf8("data: 0123456789abc\ndata: 0123456789abc\ndata: 0123456789abc\n\n"));
  assert.deepEqual(many.map((e) => [e.data, e.problem?.rule ?? null]), [["", "max-event-bytes"]]);
  const whole = new SSEDecoder({ maxLineLength: 10 }).feed(utf8("data: 0123456789\n\ndata: a\n\n"));
  assert.deepEqual(whole.map((e) => [e.data, e.problem?.rule ?? null]), [["", "max-line-bytes"], ["a", null]]);
  const cut = new SSEDecoder({ maxLineLength: 10 });
  cut.feed(utf8("data: 0123456789"));
  assert.deepEqual(cut.close().map((e) => e.problem?.rule), ["incomplete"]);
});

test("reduceSSE reads with the limits it is given (UTF-8 bytes): an event over them is dropped and said", async () => {
  const text = body(EVENTS); // event 3's data (a delta with "héllo ☀️") is the longest
  const longest = Math.max(...EVENTS.map((e) => utf8(JSON.stringify(e)).length));
  const fetch = async () => new Response(utf8(text), { headers: { "content-type": "text/event-stream" } });
  const run = async (limits) => {
    const r = new Reducer();
    await reduceSSE("http://localhost/", { fetch, reducer: r, endEvent: null, reconnect: false, limits });
    return r;
  };
  assert.deepEqual((await run({ maxEventLength: longest + 1 })).problems, []);
  const cut = await run({ maxEventLength: longest });
  assert.deepEqual(cut.problems.map((p) => [p.pointer, p.rule]), [["/2", "max-event-bytes"]]);
});
