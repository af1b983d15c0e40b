// How each event type changes the reducer's state (agentmsg/events/_handlers.py, rule for rule): one
// handler per type, and `apply`, which picks the handler and makes sure bad input becomes a recorded
// problem, never an exception.
//
// Tolerant mode checks every event except the plain deltas against the event schema first and reports
// what breaks it (the schema's pointer and rule). The event is then applied as it is: handlers take
// only values of the right kind (a wrong one is left out; an event without a value it needs is
// skipped), and whatever reaches the message is checked when it is built (build.ts's salvage).
import { enums, event as checkEvent, shapes } from "@agentmsg/schema/compiled";
import { closeReply } from "./build.js";
import { Block, Malformed, ReducerError, Reply, THINKING_DELTA, ToolResult, assignOwn, isObject, keyOf, pyEqual, pyStr, req, setOwn, short } from "./state.js";
import type { Json, Obj, State } from "./state.js";
import { pointerOf } from "./json.js";
import { LEGACY_EVENT_TYPES, TooDeep, event as legacyEvent, readsAsTimestamp } from "./legacy.js";
import type { Note } from "./legacy.js";
import { pyRepr, pythonType, shortRepr, shownValue } from "./repr.js";
import { schemaProblems } from "./validate.js";

type Handler = (st: State, e: Obj, i: number) => void;

const MAX_INT = 2n ** 63n - 1n; // the largest 64-bit count: where a sum the schema bounds no lower stops
const MAX_INT_NUMBER = 2 ** 63; // the double nearest to it (what JSON.parse makes of 9223372036854775807)
/** The usage keys a reply sums over its model calls, in the schema's order: every count the usage schema
 * declares (an integer: true) and `time` (a number: false). A key added to the schema is summed with no change here. */
const SUMMED_USAGE: ReadonlyMap<string, boolean> = new Map(shapes.ChatUsage!.filter((p) => p.number !== undefined).map((p) => [p.key, p.number === "integer"]));
/** Where each summed count's sum stops: the schema's `maximum` (the counts AgentScope Java holds in an int: 2^31-1),
 * else 2^63-1 (agentmsg/events/_handlers.py USAGE_MAX). */
const USAGE_MAX: ReadonlyMap<string, bigint> = new Map(
  shapes.ChatUsage!.filter((p) => p.number === "integer").map((p) => [p.key, p.maximum !== undefined ? BigInt(p.maximum) : MAX_INT]),
);
const CALL_STATES: readonly unknown[] = enums.ToolCallState!;
const RESULT_STATES: readonly unknown[] = enums.ToolResultState!;
const OCTETS = "application/octet-stream";
/** CUSTOM event name of an error a producer reports in the stream (provider errors, cut streams). */
export const ERROR_EVENT = "agentmsg.error";
/** CUSTOM event name of a payload a provider parser could not read, or of a tool call's arguments that are no JSON
 * object (Python's agentmsg.events.PROBLEM_EVENT). */
export const PROBLEM_EVENT = "agentmsg.problem";
/** CUSTOM event name of provider data the message has no place for (Python's agentmsg.events.NOT_KEPT_EVENT). */
export const NOT_KEPT_EVENT = "agentmsg.not-kept";
/** Notes a reply's message keeps at most in metadata agentmsg_notes: the rest are counted, and said by one last
 * entry (rule max-problems), as Python's MAX_NOTES. */
export const MAX_NOTES = 100;

/** Python's truthiness (the Python reducer's `x or y`, `if x`). */
export const truthy = (v: unknown): boolean =>
  !(v === undefined || v === null || v === false || v === 0 || v === "" || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0));
const placeholder = (name: unknown): boolean => typeof name === "string" && name.startsWith("__");
const get = (e: Obj, key: string): Json => (Object.hasOwn(e, key) ? e[key] : null);

/** Apply event `e` (index `i`), already checked for its source and for duplicates. */
export function apply(st: State, e: Obj, i: number): void {
  const kind = e.type;
  const reply = st.reply;
  if (reply !== null && typeof kind === "string") {
    // The common case first: a plain delta for an open block or call, through the routing table.
    const table = reply.route(kind);
    if (table !== undefined) {
      const id = table === reply.calls ? e.toolCallId : e.blockId;
      const delta = e.delta;
      if (typeof id === "string" && typeof delta === "string" && (kind !== THINKING_DELTA || (e.signature === undefined && e.redactedData === undefined))) {
        const b = table.get(id);
        if (b !== undefined) {
          b.add(delta);
          return;
        }
      }
    }
  }
  const handler = typeof kind === "string" && Object.hasOwn(HANDLERS, kind) ? HANDLERS[kind] : undefined;
  if (handler === undefined) {
    st.problem(i, "/type", "enum", `unknown event type ${short(kind)}: event skipped`);
    return;
  }
  if (LEGACY_EVENT_TYPES.has(kind as string)) {
    // The seed documents' shapes (a MODEL_CALL_END's own inputTokens, a DATA_BLOCK_DELTA's data, ...): read in
    // their current form, each said (rule legacy-key; strict mode stops at the first)
    const notes: Note[] = [];
    try {
      e = legacyEvent(e, notes);
    } catch (x) {
      if (!(x instanceof TooDeep)) throw x;
      // (its legacy keys nest past the limit in their current form: as a message's, as Python's reducer says it)
      st.problem(i, x.pointer, "max-depth", `${x.message}: event skipped`);
      return;
    }
    for (const n of notes) st.problem(i, n.pointer, n.rule, n.message);
  }
  if (!st.strict && !PLAIN_DELTAS.has(kind) && !schemaCheck(st, e, i)) return;
  const opened = st.reply === null;
  if (opened && st.ended !== null && (ONLY_EMPTY.has(kind as string) || (kind === "CUSTOM" && e.name === ERROR_EVENT))) {
    st.problem(i, "", "after-end", `${kind as string} after the reply ended (AGENT_END at /${st.ended}) would only open an empty reply: event skipped`);
    return;
  }
  st.eventId = get(e, "id"); // a reply this event opens is named after it when nothing else names it
  try {
    try {
      handler(st, e, i);
    } catch (x) {
      if (x instanceof ReducerError || !(x instanceof Error)) throw x; // bad input never escapes as a bare exception
      // (worded as Python's reducer words its KeyError and other exceptions)
      if (x instanceof Malformed && x.rule === "required") st.problem(i, "", "required", `${kind} event without ${x.message}: event skipped`);
      else st.problem(i, "", "type", `malformed ${kind} event (${x instanceof Malformed ? x.error : "TypeError"}: ${x.message}): event skipped`);
      if (opened) st.reply = null; // a skipped event opens no reply (an empty message was added for it)
    }
  } catch (x) {
    // strict: the reducer keeps what it had, not the implicit reply opened before the event was refused
    if (opened && x instanceof ReducerError) st.reply = null;
    throw x;
  }
}

/** Report what in the event breaks the event schema; the event is still applied as it is, unless it is
 * too deep, written too long (a value sharing its members) or not JSON at all (false: skipped). */
function schemaCheck(st: State, e: Obj, i: number): boolean {
  for (const p of schemaProblems(checkEvent, e)) {
    if (p.pointer === "/id" && typeof e.id !== "string") continue; // reported by the duplicate check
    if (p.pointer === "" && (p.rule === "required" || p.rule === "additionalProperties")) continue; // handlers report the keys they need
    if (p.pointer === "" || p.rule === "max-depth" || p.rule === "max-bytes") {
      // (too deep, too long: at the array or object that crosses the limit, as Python's _schema_check says it)
      st.problem(i, p.pointer, p.rule, `${p.message}: event skipped`);
      return false;
    }
    st.problem(i, p.pointer, p.rule, p.message);
  }
  return true;
}

/** Bound the open blocks, tool calls and tool results of a reply: beyond maxOpen the one opened first
 * is closed as it is (its content kept), with a problem. */
function makeRoom(st: State, reply: Reply, i: number): void {
  if (reply.openCount() < st.maxOpen) return;
  const [table, id] = reply.oldestOpen();
  const shown = reply.shown(table === "block" ? reply.byBlock : table === "call" ? reply.calls : reply.byResult, id);
  st.problem(i, "", "max-open-blocks", `more than ${st.maxOpen} blocks, tool calls and tool results open in one reply: the ${table} ${shortRepr(shown)} opened first is closed as it is`);
  if (table === "block") reply.closeBlock(id);
  else if (table === "call") {
    reply.closeCall(id);
    delete reply.byCall.get(id)!.extra.implicit;
  } else {
    const t = reply.byResult.get(id)!;
    t.flushText();
    t.state = "interrupted";
    reply.closeResult(id);
  }
}

// ---- replies and model calls ------------------------------------------------------------------------

function agentStart(st: State, e: Obj, i: number): void {
  const open = st.reply;
  if (open !== null) {
    if (open.explicit) st.problem(i, "/type", "order", "AGENT_START inside an open reply: the open reply is closed as interrupted");
    closeReply(st, open, open.explicit);
  }
  const reply = (st.reply = new Reply(true, i, get(e, "id")));
  reply.msgId = truthy(e.replyId) ? e.replyId : null;
  reply.name = get(e, "name");
  reply.timestamp = javaTimestamp(e.createdAt);
}

function agentEnd(st: State, e: Obj, i: number): void {
  const reply = st.reply;
  if (reply === null) {
    st.problem(i, "/type", "order", "AGENT_END without an open reply: ignored");
    return;
  }
  closeReply(st, reply, false);
  st.ended = i;
}

function agentResult(st: State, e: Obj, i: number): void {
  const result = req(e, "result");
  if (!isObject(result)) throw new Malformed("type", "result is not an object");
  const reply = st.current();
  reply.result = result;
  reply.resultAt = i;
}

function modelStart(st: State, e: Obj): void {
  const reply = st.current();
  reply.modelOpen++;
  if (reply.msgId === null && !reply.explicit) reply.msgId = truthy(e.replyId) ? e.replyId : null; // named after its first model call
  if (typeof e.modelName === "string") reply.model = e.modelName; // a wrong one is reported by the schema check
}

/** A string from MODEL_CALL_END's envelope metadata (finishReason, model); another value is reported
 * (rule `type`) and not taken. */
function ending(st: State, e: Obj, i: number, key: string): string | null {
  const meta = e.metadata;
  const value = isObject(meta) && Object.hasOwn(meta, key) ? meta[key] : null;
  if (value === null || typeof value === "string") return value;
  st.problem(i, `/metadata/${key}`, "type", `${key} ${shortRepr(value)} is not a string: not taken`);
  return null;
}

/** A token count as an exact integer (a double of 2^63 is what JSON.parse makes of Long.MAX_VALUE). */
const exact = (n: number): bigint => (n >= MAX_INT_NUMBER ? (n === MAX_INT_NUMBER ? MAX_INT : BigInt(n)) : BigInt(n));

function modelEnd(st: State, e: Obj, i: number): void {
  const reply = st.current();
  // What the event says is read and checked whole first, then applied: strict mode throws at its first problem,
  // and the reducer keeps what it had (the model call and its tool calls still open: a cut stream stays cut).
  const finishReason = ending(st, e, i, "finishReason");
  const model = ending(st, e, i, "model");
  const meta = e.metadata;
  const refusal = isObject(meta) && Object.hasOwn(meta, "refusal") ? meta.refusal : null;
  if (refusal !== null && refusal !== true) st.problem(i, "/metadata/refusal", "type", `refusal ${shortRepr(refusal)} is not true: not taken`);
  // the reply's JSON (a provider parser reads it): the message's _structured_output
  const structured = isObject(meta) && Object.hasOwn(meta, "structuredOutput") ? meta.structuredOutput : null;
  if (structured !== null && !isObject(structured)) st.problem(i, "/metadata/structuredOutput", "type", `structuredOutput ${shortRepr(structured)} is no object: not taken`);
  // The provider's citation and grounding data of the whole reply (message metadata agentmsg_grounding): the last wins.
  const grounding = isObject(meta) && Object.hasOwn(meta, "grounding") ? meta.grounding : null;
  if (grounding !== null && !isObject(grounding)) st.problem(i, "/metadata/grounding", "type", `grounding ${shortRepr(grounding)} is not an object: not taken`);
  const usage = get(e, "usage");
  const changed = truthy(usage) && isObject(usage) ? usageSums(st, reply, usage, i) : null;
  if (reply.modelOpen > 0) reply.modelOpen--;
  // A model call's tool calls end with it. Java sends no TOOL_CALL_END for a call it never STARTed
  // (placeholder-named fragments), so such a call would otherwise stay open into the next model call.
  for (const id of [...reply.calls.keys()]) {
    reply.closeCall(id);
    delete reply.byCall.get(id)!.extra.implicit;
  }
  if (finishReason !== null) reply.finishReason = finishReason;
  if (model !== null) reply.model = model;
  if (refusal === true) reply.refusal = true;
  if (isObject(structured)) reply.meta._structured_output = structured;
  if (isObject(grounding)) reply.meta.agentmsg_grounding = grounding;
  if (truthy(usage) && !isObject(usage)) throw new Malformed("type", "usage is not an object");
  if (changed !== null && Object.keys(changed).length) reply.usage = assignOwn(reply.usage ?? {}, changed);
}

/** What a MODEL_CALL_END's `usage` changes in the reply's usage (each problem said; nothing changed yet). */
function usageSums(st: State, reply: Reply, usage: Obj, i: number): Obj {
  // This event's changes, applied once it is read whole (strict mode may throw half way); the reply's usage is not
  // copied per event (a key of each event's own made that quadratic: 8,000 events, 13 s)
  const before: Obj = reply.usage ?? {};
  const total: Obj = {};
  const had = (k: string): boolean => Object.hasOwn(total, k) || Object.hasOwn(before, k);
  const held = (k: string): Json => (Object.hasOwn(total, k) ? total[k] : before[k]) as Json;
  for (const [k, count] of SUMMED_USAGE) {
    const v = Object.hasOwn(usage, k) ? usage[k] : null;
    if (v === null) continue;
    const have = had(k) ? held(k) : 0;
    let sum: number;
    if (count) {
      // A double beyond 2^64 or below -2^63 is no 64-bit integer rounded (2^64 itself may be 2^64-1): JSON text
      // of an integer beyond 64 bits, which Python's reader reads as a float.
      if (typeof v !== "number" || !Number.isInteger(v) || v > 2 ** 64 || v < -(2 ** 63)) {
        st.problem(i, `/usage/${k}`, "type", `usage ${k} ${pyRepr(v, 40)} is not a 64-bit integer: value ignored`);
        continue;
      }
      if (v < 0) {
        // Counts are never negative (schema: minimum 0): not summed, so the sum stays a valid count.
        st.problem(i, `/usage/${k}`, "minimum", `usage ${k} ${pyRepr(v, 40)} is negative: value ignored`);
        continue;
      }
      const exactSum = exact(have) + exact(v);
      const top = USAGE_MAX.get(k)!;
      if (exactSum > top) {
        const why = top === MAX_INT ? "the largest 64-bit count" : "AgentScope Java's ChatUsage holds it in an int";
        st.problem(i, `/usage/${k}`, "maximum", `usage ${k} summed over the reply exceeds ${top} (${why}): kept at that value`);
        sum = top === MAX_INT ? MAX_INT_NUMBER : Number(top);
      } else sum = Number(exactSum);
      if (sum > Number.MAX_SAFE_INTEGER) {
        // JavaScript only: a number beyond 2^53 is a double, which may not hold the count's last digits
        // (JSON.parse may have rounded it already; Python keeps the exact integer). Said, never silent. (A value
        // beyond it capped below it, at Java's int, is kept exact: nothing to say.)
        st.problem(i, `/usage/${k}`, "precision", `usage ${k} ${sum === MAX_INT_NUMBER ? MAX_INT : sum} is beyond 2^53: a JavaScript number may not hold it exactly`);
      }
    } else {
      if (typeof v !== "number") {
        // (a boolean is no number: true was summed as 1; a string made the whole event skipped, the other counts lost)
        st.problem(i, `/usage/${k}`, "type", `usage ${k} ${pyRepr(v, 40)} is not a number: value ignored`);
        continue;
      }
      if (Number(v) < 0) {
        st.problem(i, `/usage/${k}`, "minimum", `usage ${k} ${pyRepr(v, 40)} is negative: value ignored`);
        continue;
      }
      sum = have + Number(v);
      if (sum >= MAX_INT_NUMBER) { // every double from 2^63 on is beyond 2^63-1
        st.problem(i, `/usage/${k}`, "maximum", `usage ${k} summed over the reply exceeds ${MAX_INT} (the largest 64-bit count): kept at that value`);
        sum = MAX_INT_NUMBER;
      }
    }
    total[k] = sum;
  }
  for (const [k, v] of Object.entries(usage)) {
    if (SUMMED_USAGE.has(k)) continue;
    // A key the usage schema declares no count (a newer producer's): kept as given and written back. It
    // cannot be summed, so a later model call's value replaces the earlier one, said.
    if (had(k)) {
      st.problem(i, pointerOf(["usage", k]), "usage-not-summed", `usage ${shortRepr(k)} is no count the usage schema declares, so it is not summed: this model call's value replaces the earlier one (${shownValue(held(k))})`);
    }
    setOwn(total, k, v);
  }
  return total;
}

/** `2026-11-22T10:34:38.563248392Z` -> `2026-11-22 10:34:38.563` (the written form, UTC). */
/** An RFC 3339 instant in UTC (Python's _time._RFC3339 with a Z): only such a createdAt, of a real date and time
 * (java_form_of_instant: not February 30, hour 24, second 60 but at 23:59), gives a timestamp. */
const INSTANT = /^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.(\d{1,9}))?[Zz]$/;

function javaTimestamp(createdAt: Json): string | null {
  const m = typeof createdAt === "string" ? INSTANT.exec(createdAt) : null;
  if (m === null || !readsAsTimestamp(createdAt as string)) return null;
  return `${(createdAt as string).slice(0, 10)} ${(createdAt as string).slice(11, 19)}.${((m[1] ?? "") + "000").slice(0, 3)}`;
}

// ---- text, thinking and data blocks ----------------------------------------------------------------------

function blockStart(kind: string): Handler {
  return (st, e, i) => {
    const reply = st.current();
    const raw = req(e, "blockId");
    const id = keyOf(raw);
    if (reply.byBlock.has(id)) {
      st.problem(i, "/blockId", "order", `${kind} block ${pyRepr(raw)} started twice: the second START is ignored`);
      return;
    }
    makeRoom(st, reply, i);
    const b = new Block(kind, i);
    if (kind === "thinking") {
      for (const k of ["provider", "model"]) if (typeof e[k] === "string") b.extra[k] = e[k]; // a wrong one is reported by the schema check
    } else if (kind === "data") {
      const whole = get(e, "block");
      if (whole !== null) {
        b.kind = "whole";
        b.block = whole;
      } else {
        const mediaType = e.mediaType;
        b.extra.mediaType = typeof mediaType === "string" && mediaType ? mediaType : OCTETS;
        if (typeof e.name === "string") b.name = e.name;
        b.extra.id = raw;
      }
    }
    reply.openBlock(id, raw, b);
  };
}

/** The open block of `kind` a delta is for; started here (with a problem) when there is none. */
function openBlock(st: State, e: Obj, i: number, kind: string): Block {
  const reply = st.current();
  const raw = req(e, "blockId");
  const id = keyOf(raw);
  const b = reply.byBlock.get(id);
  if (b !== undefined && (b.kind === kind || (kind === "data" && b.kind === "whole"))) return b;
  if (b === undefined) {
    st.problem(i, "/blockId", "order", `${kind} delta for block ${shortRepr(raw)} that was never started: the block is started here`);
  } else {
    // The id belongs to an open block of another kind: that block keeps what it has and is closed, the
    // delta starts a block of its own kind under the id (never mixed into the other block).
    st.problem(i, "/blockId", "order", `${kind} delta for block ${shortRepr(raw)}, an open ${b.kind} block: that block is closed, a ${kind} block started`);
    reply.closeBlock(id);
  }
  blockStart(kind)(st, { blockId: raw }, i);
  return reply.byBlock.get(id)!;
}

function delta(e: Obj): string {
  const d = req(e, "delta");
  if (typeof d !== "string") throw new Malformed("type", "delta is not a string");
  return d;
}

function textDelta(st: State, e: Obj, i: number): void {
  const d = delta(e); // (before any block is started for it: a skipped event starts nothing)
  const reply = st.reply;
  let b = reply !== null ? reply.byBlock.get(keyOf(req(e, "blockId"))) : undefined;
  if (b === undefined || b.kind !== "text") b = openBlock(st, e, i, "text");
  b.add(d);
}

function thinkingDelta(st: State, e: Obj, i: number): void {
  const d = delta(e);
  const reply = st.reply;
  let b = reply !== null ? reply.byBlock.get(keyOf(req(e, "blockId"))) : undefined;
  if (b === undefined || b.kind !== "thinking") b = openBlock(st, e, i, "thinking");
  if (d) b.add(d);
  for (const k of ["signature", "redactedData"] as const) {
    const value = get(e, k);
    if (value === null) continue;
    if (typeof value !== "string") {
      st.problem(i, `/${k}`, "type", `${k} ${shortRepr(value)} is not a string: ignored`);
      continue;
    }
    if (k === "signature") b.signature = (b.signature ?? "") + value;
    else b.redacted = (b.redacted ?? "") + value;
  }
}

function dataDelta(st: State, e: Obj, i: number): void {
  const d = delta(e);
  const b = openBlock(st, e, i, "data");
  if (b.kind === "whole") {
    st.problem(i, "/delta", "order", "data delta for a block delivered whole: ignored");
    return;
  }
  if (!isBase64Fragment(d)) {
    st.problem(i, "/delta", "pattern", "data delta is not base64: delta dropped");
    return;
  }
  // The joined data must match the schema's base64 pattern: '=' padding only at the very end.
  const pad = d.length - d.replace(/=+$/, "").length;
  if ((b.pad && d) || b.pad + pad > 2) {
    st.problem(i, "/delta", "pattern", "data delta after the '=' padding of the data: delta dropped");
    return;
  }
  b.pad += pad;
  b.add(d);
}

const B64 = /^[A-Za-z0-9+/=]*$/;
/** Whether a data delta is base64 once padded to a multiple of 4, exactly as Python's
 * `base64.b64decode(s + "=" * (-len(s) % 4), validate=True)` decides (CPython's strict mode). */
export function isBase64Fragment(s: string): boolean {
  if (!B64.test(s)) return false;
  const padded = s + "=".repeat((4 - (s.length % 4)) % 4);
  if (padded[0] === "=") return false;
  let quad = 0, pads = 0, padding = false;
  for (let i = 0; i < padded.length; i++) {
    if (padded.charCodeAt(i) === 61) {
      padding = true;
      if (quad >= 2 && quad + ++pads >= 4) return i + 1 === padded.length;
      continue;
    }
    if (padding) return false;
    pads = 0;
    quad = (quad + 1) % 4;
  }
  return quad === 0;
}

function blockEnd(kind: string): Handler {
  return (st, e, i) => {
    const raw = req(e, "blockId");
    const reply = st.reply; // (between replies nothing is open: ignored, no implicit reply opened for it)
    const id = reply === null ? null : keyOf(raw); // (an object or array is no key: only where it is looked up)
    const b = reply === null ? undefined : reply.byBlock.get(id);
    if (reply === null || b === undefined) {
      st.problem(i, "/blockId", "order", `END for ${kind} block ${pyRepr(raw)} that is not open: ignored`);
      return;
    }
    if (Object.hasOwn(e, "metadata")) b.meta = e.metadata;
    reply.closeBlock(id);
  };
}

// ---- tool calls ----------------------------------------------------------------------------------------

// (Python's ==: a replyId True is the model call 1's, an object one with the same keys and values the same)
const sameModelCall = (b: Block, e: Obj): boolean => b.extra.replyId !== null && pyEqual(b.extra.replyId, get(e, "replyId"));

function adoptName(b: Block, name: Json): void {
  if (typeof name === "string" && name && (b.name === null || (placeholder(b.name) && !placeholder(name)))) b.name = name;
}

function toolCallStart(st: State, e: Obj, i: number): void {
  const reply = st.current();
  const raw = req(e, "toolCallId");
  const id = keyOf(raw);
  const existing = reply.byCall.get(id);
  if (existing !== undefined) {
    if (existing.open && truthy(existing.extra.implicit)) {
      // A START for a call its deltas already opened (Java: they came under a placeholder name, or
      // reopened the call): it is that call, which gets its real name.
      delete existing.extra.implicit;
      adoptName(existing, get(e, "toolCallName"));
      return;
    }
    if (existing.open) {
      st.problem(i, "/toolCallId", "order", `tool call ${pyRepr(raw)} started twice: the second START is ignored`);
      return;
    }
    if (sameModelCall(existing, e)) {
      // Java ends every open call whenever a chunk of another call arrives and starts it again at its
      // next chunk: within one model call (same replyId) it is the same call.
      makeRoom(st, reply, i);
      reply.openCall(id, raw, existing, false);
      adoptName(existing, get(e, "toolCallName"));
      return;
    }
    if (existing.extra.replyId === null || get(e, "replyId") === null) {
      st.problem(i, "/toolCallId", "order", `tool call ${pyRepr(raw)} started again after its END: a new call block is added`);
    }
    // else: a later model call reusing a provider's call id: a new call.
  }
  makeRoom(st, reply, i);
  const b = new Block("tool_use", i);
  const name = get(e, "toolCallName");
  b.name = typeof name === "string" ? name : null; // a wrong one is reported by the schema check
  if (typeof e.thoughtSignature === "string") b.extra.thoughtSignature = e.thoughtSignature;
  b.extra.id = raw;
  b.extra.replyId = get(e, "replyId");
  reply.openCall(id, raw, b, true);
}

/** The open call a TOOL_CALL_DELTA/END is for; null when the event is to be ignored. */
function call(st: State, e: Obj, i: number): Block | null {
  const reply = st.current();
  const raw = req(e, "toolCallId");
  const id = keyOf(raw);
  const name = get(e, "toolCallName");
  let b = reply.byCall.get(id);
  if (b !== undefined && !b.open) {
    if (e.type === "TOOL_CALL_END") {
      st.problem(i, "/toolCallId", "order", `END for tool call ${pyRepr(raw)} that is not open: ignored`);
      return null;
    }
    if (sameModelCall(b, e)) {
      // Java: a fragment of a call it ended when another call's chunk arrived (see above).
      if (!placeholder(name)) st.problem(i, "/toolCallId", "order", `delta for tool call ${pyRepr(raw)} after its END: the call goes on`);
      makeRoom(st, reply, i);
      reply.openCall(id, raw, b, false);
      b.extra.implicit = true;
      adoptName(b, name);
      return b;
    }
  }
  if (b === undefined || !b.open) {
    if (!(placeholder(name) && e.type === "TOOL_CALL_DELTA")) {
      st.problem(i, "/toolCallId", "order", `${e.type} for tool call ${pyRepr(raw)} that is not open: the call is started here`);
    }
    toolCallStart(st, { toolCallId: raw, toolCallName: name, replyId: get(e, "replyId") }, i);
    b = reply.byCall.get(id)!;
    b.extra.implicit = true;
  }
  adoptName(b, name);
  return b;
}

function toolCallDelta(st: State, e: Obj, i: number): void {
  const d = delta(e);
  const reply = st.reply;
  let b = reply !== null ? reply.byCall.get(keyOf(req(e, "toolCallId"))) : undefined;
  if (b === undefined || !b.open) b = call(st, e, i)!; // only END is ever ignored
  b.add(d);
}

function toolCallEnd(st: State, e: Obj, i: number): void {
  const known = member(get(e, "state"), CALL_STATES); // (an object throws here, before the call is touched: event skipped)
  const b = call(st, e, i);
  if (b === null) return;
  const id = keyOf(e.toolCallId);
  // Values the schema check reported as wrong are not taken (the call keeps what it has).
  if (isObject(e.input)) b.extra.input = e.input;
  if (known) b.extra.state = e.state;
  if (Object.hasOwn(e, "metadata")) b.meta = e.metadata;
  st.current().closeCall(id);
}

/** `value in frozenset(...)` in Python: an object or array is not hashable (rule `type`). */
function member(value: Json, values: readonly unknown[]): boolean {
  if (typeof value === "object" && value !== null) throw new Malformed("type", `unhashable type: '${pythonType(value)}'`);
  return values.includes(value);
}

// ---- tool results ------------------------------------------------------------------------------------

function toolResultStart(st: State, e: Obj, i: number): void {
  const reply = st.current();
  const raw = req(e, "toolCallId");
  const id = keyOf(raw);
  if (reply.byResult.has(id)) {
    st.problem(i, "/toolCallId", "order", `tool result ${pyRepr(raw)} started twice: the second START is ignored`);
    return;
  }
  makeRoom(st, reply, i);
  const name = get(e, "toolCallName");
  reply.openResult(new ToolResult(raw, typeof name === "string" ? name : null, i), id);
}

function result(st: State, e: Obj, i: number): ToolResult {
  const reply = st.current();
  const raw = req(e, "toolCallId");
  const id = keyOf(raw);
  let t = reply.byResult.get(id);
  if (t === undefined) {
    st.problem(i, "/toolCallId", "order", `${e.type} for tool result ${pyRepr(raw)} that was never started: the result is started here`);
    toolResultStart(st, { toolCallId: raw, toolCallName: get(e, "toolCallName") }, i);
    t = reply.byResult.get(id)!;
  }
  return t;
}

function toolResultText(st: State, e: Obj, i: number): void {
  const d = delta(e);
  const t = result(st, e, i);
  t.text = (t.text ?? "") + d;
}

function toolResultData(st: State, e: Obj, i: number): void {
  const data = req(e, "data");
  if (!isObject(data) || typeof data.type !== "string") throw new Malformed("type", "data is not a content block");
  const t = result(st, e, i);
  t.flushText();
  t.output.push(data);
}

function toolResultEnd(st: State, e: Obj, i: number): void {
  // (what can make the event skipped is read first: a skipped event starts and ends nothing)
  const state = req(e, "state");
  const known = member(state, RESULT_STATES); // a wrong one is reported by the schema check; the result still ends
  const raw = get(e, "metadata");
  const meta = truthy(raw) ? asDict(raw) : null;
  const t = result(st, e, i);
  t.flushText();
  if (known) t.state = state;
  if (meta !== null) t.meta = meta;
  st.current().closeResult(keyOf(t.id));
}

/** Python's `dict(value)`: a copy of an object, or of a sequence of pairs (an array of [key, value] arrays, a string
 * of two characters a pair); what Python refuses is refused in its words. */
function asDict(value: Json): Obj {
  if (isObject(value)) return { ...value };
  if (typeof value !== "string" && !Array.isArray(value)) throw new Malformed("type", `'${pythonType(value)}' object is not iterable`);
  const out: Obj = {};
  const elements: Json[] = typeof value === "string" ? [...value] : value;
  elements.forEach((p, n) => {
    const pair: Json[] | null = typeof p === "string" ? [...p] : Array.isArray(p) ? p : isObject(p) ? Object.keys(p) : null;
    if (pair === null) throw new Malformed("type", `cannot convert dictionary update sequence element #${n} to a sequence`);
    if (pair.length !== 2) throw new Malformed("type", `dictionary update sequence element #${n} has length ${pair.length}; 2 is required`, "ValueError");
    if (typeof pair[0] !== "string") throw new Malformed("type", "metadata is not an object"); // (a key JSON cannot write)
    setOwn(out, pair[0], pair[1]);
  });
  return out;
}

// ---- everything else ------------------------------------------------------------------------------------

function hint(st: State, e: Obj, i: number): void {
  const b = new Block("hint", i);
  b.block = { type: "hint", id: get(e, "blockId"), hint: req(e, "hint"), source: get(e, "hintSource") };
  b.open = false;
  st.current().blocks.push(b);
}

function requestStop(st: State, e: Obj): void {
  const reply = st.current();
  reply.reason = truthy(e.generateReason) ? e.generateReason : "MIDDLEWARE_STOP_REQUESTED";
  if (typeof e.reason === "string" && e.reason) reply.stopReason = e.reason; // a wrong one is reported by the schema check
}

function custom(st: State, e: Obj): void {
  if (e.name === ERROR_EVENT) {
    if (isObject(e.value)) st.current().errors.push(e.value); // a wrong one is reported by the schema check
  } else if (e.name === PROBLEM_EVENT || e.name === NOT_KEPT_EVENT) {
    // A wrong value is reported by the schema check. Between replies, before the first or after an AGENT_END (a
    // payload a reader skipped after the reply's end), a note opens no reply, as a CUSTOM event of another name opens
    // none: it stays in the events.
    if (isObject(e.value) && st.reply !== null) {
      const reply = st.current();
      if (reply.notes.length < MAX_NOTES) reply.notes.push(e.value);
      else reply.notesOmitted++;
    }
  }
}

/** Python's iteration of `x or ()`: an array's items, an object's keys, a string's characters. */
const items = (v: Json): Json[] => {
  if (!truthy(v)) return [];
  if (Array.isArray(v)) return v;
  if (isObject(v)) return Object.keys(v);
  if (typeof v === "string") return [...v];
  throw new Malformed("type", `'${pythonType(v)}' object is not iterable`);
};

function hitl(reason: string | null, state: string | null, metaKey: string | null): Handler {
  return (st, e, i) => {
    const reply = st.current();
    const kept: Obj = {};
    for (const [k, v] of Object.entries(e)) if (k !== "id" && k !== "createdAt") setOwn(kept, k, v);
    reply.hitl.push(kept);
    if (reason !== null) reply.reason = reason;
    if (metaKey !== null && get(e, "replyId") !== null) reply.meta[metaKey] = e.replyId;
    for (const c of items(get(e, "toolCalls"))) {
      const b = isObject(c) ? reply.byCall.get(pyStr(get(c, "id"))) : undefined;
      if (b !== undefined && state !== null) b.extra.state = state;
    }
    if (e.type === "USER_CONFIRM_RESULT") {
      reply.meta.agentscope_confirm_results = truthy(e.confirmResults) ? e.confirmResults : [];
      for (const res of items(get(e, "confirmResults"))) {
        const tc = isObject(res) ? get(res, "toolCall") : null;
        const b = isObject(tc) ? reply.byCall.get(pyStr(get(tc, "id"))) : undefined;
        if (b !== undefined && truthy(res.confirmed)) b.extra.state = "allowed";
      }
    } else if (e.type === "EXTERNAL_EXECUTION_RESULT") {
      for (const res of items(get(e, "toolResults"))) {
        const t = new Block("whole", i);
        t.block = res;
        t.open = false;
        reply.blocks.push(t);
      }
    }
  };
}

const ignore: Handler = () => {};

/** Events that bring a reply no content (no block, tool call or tool result) and open no model call: between replies
 * after an AGENT_END, where they would open an implicit reply (rule 1) with nothing in it (an AGENT_RESULT: a second,
 * empty message under the same id), they are skipped (rule after-end); so is a CUSTOM agentmsg.error there. */
const ONLY_EMPTY = new Set([
  "AGENT_RESULT",
  "MODEL_CALL_END",
  "EXCEED_MAX_ITERS",
  "REQUEST_STOP",
  "ALL_TOOLS_DENIED",
  "REQUIRE_USER_CONFIRM",
  "REQUIRE_EXTERNAL_EXECUTION",
  "USER_CONFIRM_RESULT",
]);

/** Deltas whose handlers check every key they use: not validated against the schema in tolerant mode. */
const PLAIN_DELTAS = new Set(["TEXT_BLOCK_DELTA", "THINKING_BLOCK_DELTA", "TOOL_CALL_DELTA", "DATA_BLOCK_DELTA", "TOOL_RESULT_TEXT_DELTA"]);

const HANDLERS: Record<string, Handler> = {
  AGENT_START: agentStart,
  AGENT_END: agentEnd,
  AGENT_RESULT: agentResult,
  MODEL_CALL_START: modelStart,
  MODEL_CALL_END: modelEnd,
  TEXT_BLOCK_START: blockStart("text"),
  TEXT_BLOCK_DELTA: textDelta,
  TEXT_BLOCK_END: blockEnd("text"),
  THINKING_BLOCK_START: blockStart("thinking"),
  THINKING_BLOCK_DELTA: thinkingDelta,
  THINKING_BLOCK_END: blockEnd("thinking"),
  DATA_BLOCK_START: blockStart("data"),
  DATA_BLOCK_DELTA: dataDelta,
  DATA_BLOCK_END: blockEnd("data"),
  TOOL_CALL_START: toolCallStart,
  TOOL_CALL_DELTA: toolCallDelta,
  TOOL_CALL_END: toolCallEnd,
  TOOL_RESULT_START: toolResultStart,
  TOOL_RESULT_TEXT_DELTA: toolResultText,
  TOOL_RESULT_DATA_DELTA: toolResultData,
  TOOL_RESULT_END: toolResultEnd,
  HINT_BLOCK: hint,
  EXCEED_MAX_ITERS: (st) => {
    st.current().reason = "MAX_ITERATIONS";
  },
  REQUEST_STOP: requestStop,
  REQUIRE_USER_CONFIRM: hitl("PERMISSION_ASKING", "asking", "agentscope_confirm_request_reply_id"),
  REQUIRE_EXTERNAL_EXECUTION: hitl("TOOL_SUSPENDED", "submitted", "agentscope_external_execution_request_reply_id"),
  USER_CONFIRM_RESULT: hitl(null, null, null),
  EXTERNAL_EXECUTION_RESULT: hitl(null, null, null),
  ALL_TOOLS_DENIED: hitl("ALL_TOOLS_DENIED", null, null),
  SUBAGENT_EXPOSED: ignore,
  CUSTOM: custom,
};

/** The event types the reducer handles (every AgentScope Java 2.x type). */
export const EVENT_TYPES: readonly string[] = Object.keys(HANDLERS);
