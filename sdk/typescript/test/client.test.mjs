// streamSSE / streamEvents / reduceSSE over real HTTP on loopback (node:http): resume with
// Last-Event-ID after drops, backoff and retry, POST with headers and body, 204, fatal statuses,
// content type, abort, early exit.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { reduceEvents, reduceSSE, streamEvents, streamSSE, encodeSSE, StreamError } from "../dist/index.js";
import { EVENTS } from "./sse.test.mjs";

/** A server for one test: `handler(req, res, state)`; resolves to { url, state, close }. */
async function serve(handler) {
  const state = { requests: [], closed: 0 };
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      state.requests.push({ method: req.method, headers: req.headers, body });
      res.on("close", () => state.closed++);
      handler(req, res, state);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}/events`;
  return { url, state, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** Events after Last-Event-ID; closes after `dropEvery` events per connection; "end" at the end. */
function eventsHandler({ dropEvery = 0, retry = null } = {}) {
  return (req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store" });
    const last = req.headers["last-event-id"];
    let start = last ? EVENTS.findIndex((e) => e.id === last) + 1 : 0;
    if (retry !== null) res.write(`retry: ${retry}\n\n`);
    res.write(": hello\n\n");
    let sent = 0;
    for (let i = start; i < EVENTS.length; i++) {
      if (dropEvery && sent === dropEvery) return res.socket.end(); // cut the connection mid-stream (after what was written)
      res.write(encodeSSE(JSON.stringify(EVENTS[i]), { id: EVENTS[i].id, event: EVENTS[i].type }));
      sent++;
    }
    res.end("event: end\ndata: {}\n\n");
  };
}

const fast = { retry: { initialDelay: 5, maxDelay: 20 } };

test("a whole stream: every event once, then the end event ends the iteration", async () => {
  const s = await serve(eventsHandler());
  try {
    const got = [];
    for await (const e of streamEvents(s.url, fast)) got.push(e);
    assert.deepEqual(got, EVENTS);
    assert.equal(s.state.requests.length, 1);
    assert.equal(s.state.requests[0].headers.accept, "text/event-stream");
  } finally { await s.close(); }
});

for (const dropEvery of [1, 2, 4]) {
  test(`drops after every ${dropEvery} event(s): resumed with Last-Event-ID, nothing lost or repeated`, async () => {
    const s = await serve(eventsHandler({ dropEvery }));
    try {
      const retries = [];
      const messages = await reduceSSE(s.url, { ...fast, onRetry: (info) => retries.push(info) });
      assert.deepEqual(messages, reduceEvents(EVENTS));
      const sentIds = s.state.requests.map((r) => r.headers["last-event-id"] ?? null);
      const expected = [null];
      for (let i = dropEvery; i < EVENTS.length; i += dropEvery) expected.push(EVENTS[i - 1].id);
      assert.deepEqual(sentIds, expected);
      assert.equal(retries.length, expected.length - 1);
      assert.ok(retries.every((r) => r.attempt === 0 || r.delay <= 20));
    } finally { await s.close(); }
  });
}

test("the server's retry field sets the reconnect delay", async () => {
  const s = await serve(eventsHandler({ dropEvery: 3, retry: 150 }));
  try {
    const delays = [];
    const got = [];
    for await (const e of streamSSE(s.url, { retry: { initialDelay: 1000 }, onRetry: (i) => delays.push(i.delay) })) got.push(e.id);
    assert.deepEqual(got, EVENTS.map((e) => e.id));
    assert.deepEqual(delays, [150]);
  } finally { await s.close(); }
});

test("POST with headers and a body (what EventSource cannot do)", async () => {
  const s = await serve(eventsHandler());
  try {
    const got = [];
    for await (const e of streamEvents(s.url, { method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json" }, body: JSON.stringify({ q: "hi" }) })) got.push(e);
    assert.equal(got.length, EVENTS.length);
    const r = s.state.requests[0];
    assert.equal(r.method, "POST");
    assert.equal(r.headers.authorization, "Bearer t");
    assert.equal(r.body, '{"q":"hi"}');
  } finally { await s.close(); }
});

test("lastEventId option: the first request resumes", async () => {
  const s = await serve(eventsHandler());
  try {
    const got = [];
    for await (const e of streamEvents(s.url, { lastEventId: "e4" })) got.push(e.id);
    assert.deepEqual(got, ["e5", "e6"]);
    assert.equal(s.state.requests[0].headers["last-event-id"], "e4");
  } finally { await s.close(); }
});

test("HTTP 204 ends the stream without an event", async () => {
  const s = await serve((req, res) => { res.writeHead(204); res.end(); });
  try {
    const got = [];
    for await (const e of streamSSE(s.url, fast)) got.push(e);
    assert.deepEqual(got, []);
  } finally { await s.close(); }
});

test("HTTP 404 and a wrong content type are not retried", async () => {
  const s = await serve((req, res) => { res.writeHead(404); res.end("no"); });
  const t = await serve((req, res) => { res.writeHead(200, { "content-type": "application/json" }); res.end("{}"); });
  try {
    await assert.rejects(async () => { for await (const _ of streamSSE(s.url, fast)); }, (e) => e instanceof StreamError && e.status === 404);
    await assert.rejects(async () => { for await (const _ of streamSSE(t.url, fast)); }, (e) => e instanceof StreamError && /text\/event-stream/.test(e.message));
    assert.equal(s.state.requests.length, 1);
    assert.equal(t.state.requests.length, 1);
  } finally { await s.close(); await t.close(); }
});

test("HTTP 503 is retried with growing delays, then the stream goes on", async () => {
  const ok = eventsHandler();
  const s = await serve((req, res, state) => (state.requests.length <= 2 ? (res.writeHead(503), res.end()) : ok(req, res)));
  try {
    const delays = [];
    const got = [];
    for await (const e of streamEvents(s.url, { retry: { initialDelay: 5, maxDelay: 1000 }, onRetry: (i) => delays.push(i.delay) })) got.push(e);
    assert.equal(got.length, EVENTS.length);
    assert.deepEqual(delays, [5, 10]);
  } finally { await s.close(); }
});

test("gives up after maxAttempts attempts in a row without an event", async () => {
  const s = await serve((req, res) => { res.writeHead(500); res.end(); });
  try {
    await assert.rejects(async () => { for await (const _ of streamSSE(s.url, { retry: { initialDelay: 1, maxAttempts: 3 } })); }, (e) => e instanceof StreamError && /3 attempts/.test(e.message));
    assert.equal(s.state.requests.length, 3);
  } finally { await s.close(); }
});

test("endEvent null: a closed connection ends the stream; data that is not JSON is reported and skipped", async () => {
  const s = await serve((req, res) => { res.writeHead(200, { "content-type": "text/event-stream" }); res.end('data: {"a":1}\n\ndata: nope\n\ndata: {"b":2}\n\n'); });
  try {
    const bad = [];
    const got = [];
    for await (const e of streamEvents(s.url, { endEvent: null, onInvalid: (sse) => bad.push(sse.data) })) got.push(e);
    assert.deepEqual(got, [{ a: 1 }, { b: 2 }]);
    assert.deepEqual(bad, ["nope"]);
  } finally { await s.close(); }
});

test("abort stops a stream that waits for more; leaving the loop early closes the connection", async () => {
  const s = await serve((req, res) => { res.writeHead(200, { "content-type": "text/event-stream" }); res.write("id: 1\ndata: {}\n\n"); });
  try {
    const controller = new AbortController();
    const seen = [];
    await assert.rejects(async () => {
      for await (const e of streamSSE(s.url, { signal: controller.signal })) { seen.push(e.id); controller.abort(); }
    }, (e) => e.name === "AbortError");
    assert.deepEqual(seen, ["1"]);
    for await (const e of streamSSE(s.url)) { assert.equal(e.id, "1"); break; }
    for (let i = 0; i < 50 && s.state.closed < 2; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(s.state.closed, 2);
  } finally { await s.close(); }
});

test("an error event (the server's source failed) throws, without retrying", async () => {
  const s = await serve((req, res) => { res.writeHead(200, { "content-type": "text/event-stream" }); res.end('id: 1\ndata: {"a":1}\n\nevent: error\ndata: {"message": "RuntimeError: boom"}\n\n'); });
  try {
    const got = [];
    await assert.rejects(async () => { for await (const e of streamEvents(s.url, fast)) got.push(e); }, (e) => e instanceof StreamError && /RuntimeError: boom/.test(e.message));
    assert.deepEqual(got, [{ a: 1 }]);
    assert.equal(s.state.requests.length, 1);
  } finally { await s.close(); }
});

/** A server that cuts the first connection after `cut` events and answers a resume with 409 (its replay
 * buffer no longer holds the events after that id), as agentmsg's endpoint does. */
function goneHandler(cut = 3) {
  return (req, res, state) => {
    if (req.headers["last-event-id"]) {
      res.writeHead(409, { "content-type": "text/plain" });
      return res.end(`cannot resume after event ${req.headers["last-event-id"]}: only later events are still in the replay buffer\n`);
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const events = state.requests.length === 1 ? EVENTS.slice(0, cut) : EVENTS;
    for (const e of events) res.write(encodeSSE(JSON.stringify(e), { id: e.id, event: e.type }));
    if (state.requests.length === 1) return res.socket.end();
    res.end("event: end\ndata: {}\n\n");
  };
}

test("a resume the server refuses with 409 is fatal for streamSSE without onRestart", async () => {
  const s = await serve(goneHandler());
  try {
    const got = [];
    await assert.rejects(async () => { for await (const e of streamSSE(s.url, fast)) got.push(e.id); }, (e) => e instanceof StreamError && e.status === 409);
    assert.deepEqual(got, ["e1", "e2", "e3"]);
  } finally { await s.close(); }
});

test("with onRestart, a 409 to a resume starts the stream over without Last-Event-ID and says so", async () => {
  const s = await serve(goneHandler());
  try {
    const restarts = [];
    const got = [];
    for await (const e of streamSSE(s.url, { ...fast, onRestart: (info) => restarts.push(info) })) got.push(e.id);
    assert.deepEqual(got, ["e1", "e2", "e3", ...EVENTS.map((e) => e.id)]);
    assert.deepEqual(s.state.requests.map((r) => r.headers["last-event-id"] ?? null), [null, "e3", null]);
    assert.equal(restarts.length, 1);
    assert.equal(restarts[0].lastEventId, "e3");
    assert.equal(restarts[0].status, 409);
    assert.match(restarts[0].message, /replay buffer/);
  } finally { await s.close(); }
});

test("a server that refuses every resume: restarts back off and end after maxAttempts in a row (no endless loop)", async () => {
  // Each fresh connection delivers one event and drops; every resume gets 409. The client started over after
  // each drop forever, about twice a second with the default delays.
  const s = await serve((req, res, state) => {
    if (req.headers["last-event-id"]) {
      res.writeHead(409, { "content-type": "text/plain" });
      return res.end("cannot resume: no replay buffer\n");
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(`id: ${state.requests.length}\ndata: {}\n\n`);
    res.socket.end();
  });
  const controller = new AbortController();
  const restarts = [];
  const waits = [];
  const onRetry = (i) => {
    if (i.lastEventId === "") waits.push(i.delay); // the waits before a restarted request
    if (s.state.requests.length > 60) controller.abort(); // (the loop without a bound)
  };
  try {
    await assert.rejects(async () => {
      for await (const _ of streamSSE(s.url, { ...fast, signal: controller.signal, onRetry, onRestart: (i) => restarts.push(i) }));
    }, (e) => e instanceof StreamError && e.status === 409 && /refused 9 resumes in a row/.test(e.message));
    assert.equal(restarts.length, 8);
    assert.deepEqual(waits, [5, 10, 20, 20, 20, 20, 20]); // the first restart at once, then initialDelay doubling
    assert.equal(s.state.requests.length, 18);
  } finally { await s.close(); }
});

test("restarts in a row are counted only until the server takes a resume", async () => {
  // Every other resume is refused: each restart is the first in a row (at once, never giving up).
  let resumes = 0;
  const s = await serve((req, res, state) => {
    if (req.headers["last-event-id"] && ++resumes % 2 === 1) {
      res.writeHead(409);
      return res.end("gone");
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const n = state.requests.length;
    if (n >= 40) return res.end(`id: ${n}\ndata: {}\n\nevent: end\ndata: {}\n\n`);
    res.write(`id: ${n}\ndata: {}\n\n`);
    res.socket.end();
  });
  try {
    const restarts = [];
    const waits = [];
    for await (const _ of streamSSE(s.url, { ...fast, onRetry: (i) => { if (i.lastEventId === "") waits.push(i.delay); }, onRestart: (i) => restarts.push(i) }));
    assert.ok(restarts.length >= 10);
    assert.deepEqual(waits, []);
  } finally { await s.close(); }
});

test("reduceSSE starts over with a fresh reducer: the messages are those of the whole stream, once", async () => {
  const s = await serve(goneHandler(4));
  try {
    const restarts = [];
    const messages = await reduceSSE(s.url, { ...fast, onRestart: (info) => restarts.push(info) });
    assert.deepEqual(messages, reduceEvents(EVENTS));
    assert.equal(restarts.length, 1);
    const [{ reducer, previous, lastEventId }] = restarts;
    assert.notEqual(reducer, previous);
    assert.equal(lastEventId, "e4");
    assert.equal(previous.count, 4); // what the dropped reducer had: a reply cut short
    assert.equal(previous.snapshot().content[0].text, "héllo ☀️\nline2 world");
    assert.equal(reducer.count, EVENTS.length);
    assert.deepEqual(reducer.problems, []);
  } finally { await s.close(); }
});

test("reduceSSE with onGap 'fail', and a 409 to a request that is not a resume, throw StreamError", async () => {
  const s = await serve(goneHandler());
  const t = await serve((req, res) => { res.writeHead(409); res.end("no"); });
  try {
    await assert.rejects(reduceSSE(s.url, { ...fast, onGap: "fail" }), (e) => e instanceof StreamError && e.status === 409);
    await assert.rejects(reduceSSE(t.url, fast), (e) => e instanceof StreamError && e.status === 409);
    assert.equal(t.state.requests.length, 1);
  } finally { await s.close(); await t.close(); }
});

test("reduceSSE counts data that is not JSON as one event, rule json or lone-surrogate, as Python's reduce_stream does", async () => {
  // (data with two problems: the first in the text is said, as orjson stops there: a lone surrogate, then a number
  // that overflows, is lone-surrogate; the other way round, json)
  const two = ['{"blockId": "\\ud800", "delta": 1e999}', '{"blockId": 1e999, "delta": "\\ud800"}'];
  const events = [EVENTS[0], "not json", EVENTS[1], '{"type": "TEXT_BLOCK_DELTA", "id": "x", "blockId": "text", "delta": "\\ud800"}', ...two, ...EVENTS.slice(2)];
  const s = await serve((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(events.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`).join("") + "event: end\ndata: {}\n\n");
  });
  try {
    const invalid = [];
    let reducer;
    const messages = await reduceSSE(s.url, { onInvalid: (sse) => invalid.push(sse.data), onEvent: (_e, r) => (reducer = r) });
    assert.deepEqual(messages, reduceEvents(EVENTS));
    assert.equal(invalid.length, 4);
    assert.deepEqual(reducer.problems.map((p) => [p.pointer, p.rule]), [["/1", "json"], ["/3", "lone-surrogate"], ["/4", "lone-surrogate"], ["/5", "json"]]);
  } finally { await s.close(); }
});

test("the stream ends at the end event: events that came with it after it are said (rule order), not delivered", async () => {
  // (Python's readers say what a saved body has after the end event the same way: tests/events/test_sse.py)
  const later = { ...EVENTS[0], id: "z1", replyId: "other" };
  const s = await serve((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(EVENTS.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("") + `event: end\ndata: {}\n\nid: z1\ndata: ${JSON.stringify(later)}\n\ndata: x\n\n`);
  });
  try {
    const problems = [];
    let reducer;
    const messages = await reduceSSE(s.url, { onProblem: (e, p) => problems.push([e.event, p.rule, p.message]), onEvent: (_e, r) => (reducer = r) });
    assert.deepEqual(messages, reduceEvents(EVENTS)); // nothing after the end event is folded
    assert.equal(problems.length, 1);
    assert.deepEqual(problems[0].slice(0, 2), ["end", "order"]);
    assert.match(problems[0][2], /2 SSE events after it \(the first: id "z1"/);
    assert.deepEqual(reducer.problems.map((p) => [p.pointer, p.rule]), [[`/${EVENTS.length}`, "order"]]);
    assert.equal(reducer.count, EVENTS.length + 1);
    // nothing after it: nothing said
    const t = await serve((req, res) => { res.writeHead(200, { "content-type": "text/event-stream" }); res.end("data: " + JSON.stringify(EVENTS[0]) + "\n\nevent: end\ndata: {}\n\n\n: bye\n\n"); });
    try {
      const said = [];
      await reduceSSE(t.url, { onProblem: (e, p) => said.push(p.rule) });
      assert.deepEqual(said, []);
    } finally { await t.close(); }
    // an event cut short after it, in the same read, is said too (it was dropped silently; Python says it)
    const u = await serve((req, res) => { res.writeHead(200, { "content-type": "text/event-stream" }); res.end("data: " + JSON.stringify(EVENTS[0]) + '\n\nevent: end\ndata: {}\n\nid: z2\ndata: {"type"'); });
    try {
      const said = [];
      await reduceSSE(u.url, { onProblem: (e, p) => said.push([p.rule, p.message]) });
      assert.equal(said.length, 1);
      assert.equal(said[0][0], "order");
      assert.match(said[0][1], /1 SSE event after it \(the first: id "z2"/);
    } finally { await u.close(); }
  } finally { await s.close(); }
});

test("reduceSSE reports what the SSE reader fixed or could not finish, as Python's reduce_stream (utf-8, incomplete)", async () => {
  // EVENTS with invalid UTF-8 in the third event's delta, and a last event the stream ends inside.
  const enc = new TextEncoder();
  const parts = EVENTS.map((e) => enc.encode(encodeSSE(JSON.stringify(e), { id: e.id, event: e.type })));
  const third = parts[2];
  const at = third.indexOf(0xc3); // the "é" of "héllo": its lead byte replaced by an invalid one
  const bad = Uint8Array.from(third);
  bad[at] = 0xff;
  const body = [...parts.slice(0, 2), bad, ...parts.slice(3), enc.encode('id: e7\ndata: {"type": "AGENT_START"')];
  const s = await serve((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const p of body) res.write(p);
    res.end();
  });
  try {
    const problems = [];
    const reducers = [];
    const [msg] = await reduceSSE(s.url, { ...fast, endEvent: null, onProblem: (e, p) => problems.push([e.id, p.rule]), onEvent: (_, r) => reducers.push(r) });
    assert.deepEqual(problems, [["e3", "utf-8"], ["e7", "incomplete"]]);
    const r = reducers.at(-1);
    assert.deepEqual(r.problems.map((p) => [p.pointer, p.rule]), [["/2", "utf-8"], ["/6", "incomplete"]]);
    assert.equal(r.count, 7);
    assert.match(msg.content[0].text, /^h\ufffd\ufffdllo/); // replaced, kept (0xff and the lone continuation byte)
  } finally { await s.close(); }
});

test("a connection cut inside an event (its id line already read) resumes after the last whole event: nothing lost", async () => {
  const s = await serve((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const last = req.headers["last-event-id"];
    const start = last ? EVENTS.findIndex((e) => e.id === last) + 1 : 0;
    for (let i = start; i < EVENTS.length; i++) {
      const text = encodeSSE(JSON.stringify(EVENTS[i]), { id: EVENTS[i].id, event: EVENTS[i].type });
      if (!last && i === 3) return res.socket.end(text.slice(0, text.indexOf("data:") + 12)); // cut inside e4
      res.write(text);
    }
    res.end("event: end\ndata: {}\n\n");
  });
  try {
    const got = [];
    for await (const e of streamEvents(s.url, fast)) got.push(e);
    assert.deepEqual(got, EVENTS);
    assert.equal(s.state.requests[1].headers["last-event-id"], "e3");
  } finally { await s.close(); }
});

test("a server's retry: 0 does not make the client reconnect in a tight loop (at least 100 ms, or initialDelay when lower)", async () => {
  // Each connection delivers an event (so the backoff never grows) and closes: with retry 0 the client sent
  // hundreds of requests a second.
  const s = await serve((req, res, state) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(`retry: 0\nid: ${state.requests.length}\ndata: {}\n\n`);
  });
  /** The delays of the first `n` reconnects, and the requests made meanwhile. */
  async function delays(n, retry) {
    const controller = new AbortController();
    const out = [];
    const before = s.state.requests.length;
    const onRetry = (i) => { out.push(i.delay); if (out.length === n) controller.abort(); };
    await assert.rejects(async () => {
      for await (const _ of streamSSE(s.url, { signal: controller.signal, retry, onRetry }));
    }, (e) => e.name === "AbortError");
    return [out, s.state.requests.length - before];
  }
  try {
    const started = Date.now();
    assert.deepEqual(await delays(3), [[100, 100, 100], 3]);
    assert.ok(Date.now() - started >= 200);
    assert.deepEqual(await delays(2, { initialDelay: 5 }), [[5, 5], 2]); // the caller may go lower
  } finally { await s.close(); }
});

test("Last-Event-ID is sent as UTF-8 (an id beyond U+00FF made fetch throw at every reconnect)", async () => {
  const id = "é€😀";
  const s = await serve((req, res, state) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (state.requests.length === 1) return res.end(`id: ${id}\ndata: {"a":1}\n\n`);
    res.end('id: 2\ndata: {"b":2}\n\nevent: end\ndata: {}\n\n');
  });
  try {
    const got = [];
    for await (const e of streamSSE(s.url, { ...fast, retry: { ...fast.retry, maxAttempts: 2 } })) got.push(e.id);
    assert.deepEqual(got, [id, "2"]);
    assert.equal(s.state.requests.length, 2);
    // node:http gives header bytes as latin1 characters
    assert.equal(Buffer.from(s.state.requests[1].headers["last-event-id"], "latin1").toString("utf8"), id);
  } finally { await s.close(); }
});

test("the content type must be text/event-stream itself, not a type that starts with it", async () => {
  const s = await serve((req, res) => { res.writeHead(200, { "content-type": "text/event-streamy" }); res.end("data: 1\n\nevent: end\ndata: {}\n\n"); });
  try {
    await assert.rejects(async () => { for await (const _ of streamSSE(s.url, fast)); }, (e) => e instanceof StreamError && /event-streamy/.test(e.message));
  } finally { await s.close(); }
});

test("a request fetch refuses at once (bad URL, method or header value) throws StreamError without retrying", async () => {
  for (const [url, options] of [["/relative", {}], ["http://127.0.0.1:9/x", { headers: { "x-a": "a\nb" } }], ["http://127.0.0.1:9/x", { method: "CONNECT" }]]) {
    const retries = [];
    await assert.rejects(async () => {
      for await (const _ of streamSSE(url, { ...options, onRetry: (i) => retries.push(i) }));
    }, (e) => e instanceof StreamError && /cannot request/.test(e.message), url);
    assert.equal(retries.length, 0);
  }
});

test("a 409 to a resume whose text never ends (or is huge) still starts the stream over: only its start is read", async () => {
  const s = await serve((req, res, state) => {
    if (req.headers["last-event-id"]) {
      res.writeHead(409, { "content-type": "text/plain" });
      res.write("cannot resume " + "x".repeat(2000));
      const timer = setInterval(() => res.write("x".repeat(1000)), 5); // and on, until the client hangs up
      return res.on("close", () => clearInterval(timer));
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    if (state.requests.length === 1) return res.end('id: 1\ndata: {"a":1}\n\n');
    res.end('id: 1\ndata: {"a":1}\n\nid: 2\ndata: {"b":2}\n\nevent: end\ndata: {}\n\n');
  });
  try {
    const restarts = [];
    const got = [];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 3000);
    for await (const e of streamSSE(s.url, { ...fast, signal: controller.signal, onRestart: (i) => restarts.push(i) })) got.push(e.id);
    clearTimeout(timer);
    assert.deepEqual(got, ["1", "1", "2"]);
    assert.equal(restarts.length, 1);
    assert.equal(restarts[0].message.length, 300);
    assert.ok(restarts[0].message.startsWith("cannot resume x"));
  } finally { await s.close(); }
});

test("idleTimeout: a connection silent past it (half-open) is taken for dead and the stream resumes on a new one", { timeout: 5000 }, async () => {
  // The first connection sends two events and then nothing (it stays open: a half-open connection looks so);
  // the next ones send the rest. Without idleTimeout the iteration waited forever.
  const s = await serve((req, res, state) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const last = req.headers["last-event-id"];
    const start = last ? EVENTS.findIndex((e) => e.id === last) + 1 : 0;
    const stop = state.requests.length === 1 ? 2 : EVENTS.length;
    for (let i = start; i < stop; i++) res.write(encodeSSE(JSON.stringify(EVENTS[i]), { id: EVENTS[i].id, event: EVENTS[i].type }));
    if (stop === EVENTS.length) res.end("event: end\ndata: {}\n\n");
  });
  try {
    const got = [];
    const retries = [];
    const options = { ...fast, idleTimeout: 150, onRetry: (info) => retries.push(info) };
    for await (const e of streamEvents(s.url, options)) got.push(e);
    assert.deepEqual(got, EVENTS);
    assert.equal(s.state.requests.length, 2);
    assert.equal(s.state.requests[1].headers["last-event-id"], EVENTS[1].id);
    assert.match(String(retries[0].error.message), /idleTimeout/);
  } finally { await s.close(); }
});

test("idleTimeout: keepalive comments keep a quiet connection alive", async (t) => {
  // On a mocked clock, with a fetch of our own whose body the test feeds (a server's real 40 ms ticks came late
  // under load, and the test failed once): 400 ms pass between events, four times idleTimeout, but never
  // 120 ms without a byte, for a keepalive comment comes every 100 ms.
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let body;
  let requests = 0;
  const own = async () => {
    requests++;
    return new Response(new ReadableStream({ start: (c) => void (body = c) }), { headers: { "content-type": "text/event-stream" } });
  };
  const flush = async () => {
    for (let k = 0; k < 10; k++) await new Promise((r) => setImmediate(r));
  };
  const send = async (text) => {
    t.mock.timers.tick(100); // (below idleTimeout: its timer does not fire)
    body.enqueue(new TextEncoder().encode(text));
    await flush();
  };
  const got = [];
  const retries = [];
  const reading = (async () => {
    for await (const e of streamEvents("http://127.0.0.1:9/events", { ...fast, fetch: own, idleTimeout: 120, onRetry: (i) => retries.push(i) })) got.push(e);
  })();
  await flush();
  for (const e of EVENTS) {
    for (let k = 0; k < 3; k++) await send(": keepalive\n\n");
    await send(encodeSSE(JSON.stringify(e), { id: e.id, event: e.type }));
  }
  await send("event: end\ndata: {}\n\n"); // (the client cancels the body there)
  await reading;
  assert.deepEqual(got, EVENTS);
  assert.deepEqual(retries, []);
  assert.equal(requests, 1);
});

test("idleTimeout defaults to 300,000 ms (Node's fetch's own bound): a half-open connection is not waited on forever", async (t) => {
  // A browser's fetch waits on a silent body forever: without a default the iteration never ended. (A fetch of
  // our own and mocked setTimeout: the body never sends a byte, and five minutes pass at once.)
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const controller = new AbortController();
  const silent = async () => new Response(new ReadableStream({ pull: () => new Promise(() => {}) }), { headers: { "content-type": "text/event-stream" } });
  const retries = [];
  const flush = () => new Promise((r) => setImmediate(r));
  const stream = streamSSE("http://127.0.0.1:9/events", { fetch: silent, signal: controller.signal, onRetry: (i) => { retries.push(i); controller.abort(); } });
  const ended = assert.rejects(stream.next(), (e) => e.name === "AbortError");
  for (let k = 0; k < 5; k++) await flush(); // the first read waits
  t.mock.timers.tick(299_999);
  for (let k = 0; k < 5; k++) await flush();
  assert.equal(retries.length, 0);
  t.mock.timers.tick(1);
  for (let k = 0; k < 5; k++) await flush();
  assert.equal(retries.length, 1);
  assert.match(String(retries[0].error.message), /no data for 300000 ms \(idleTimeout\)/);
  await ended;
});
