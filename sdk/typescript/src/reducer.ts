// The event reducer: folds an AgentScope event stream back into one assistant message per reply,
// rule for rule as agentmsg's Python reducer (agentmsg/events/reducer.py; docs/events.md has the
// rules) and checked against the same vectors (tests/conformance/reducer/). Tolerant by default:
// what the rules had to fix is recorded in `problems` (JSON pointer + rule). With `validate` given
// (strict mode, e.g. `validateEvent` from "@agentmsg/client/strict"), each event is checked first and
// the first problem throws a ReducerError. Every message built is checked against the msg schema
// with a validator compiled ahead of time (no `eval`, no `new Function`); what the stream carried
// that does not make a valid message is dropped and reported in metadata `agentmsg_reduce_errors`.
// Messages come out in the wire form (key order, defaults, nulls) that Python and Java write.
import type { AgentEvent, ContentBlock, Msg } from "@agentmsg/schema/types";
import { canonicalMessage } from "./canonical.js";
import { block as checkBlock, msg as checkMsg } from "@agentmsg/schema/compiled";
import type { ValidationErrorObject } from "@agentmsg/schema/compiled";

/** A problem the tolerant rules fixed (or, in strict mode, the one that stopped the reducer). */
export interface Problem {
  /** `/<event index><pointer into the event>` */
  pointer: string;
  /** A JSON Schema keyword (`required`, `type`, `enum`, `pattern`) or `order`. */
  rule: string;
  message: string;
}

/** Thrown in strict mode: the first problem (the reducer keeps what it had). */
export class ReducerError extends Error {
  constructor(public problems: Problem[]) {
    super(problems[0]?.message ?? "invalid event");
    this.name = "ReducerError";
  }
}

export interface ReducerOptions {
  /** Reduce the events forwarded from this subagent (`source`) instead of the top level. */
  source?: string | null;
  /** Default message name when neither AGENT_START nor AGENT_RESULT gives one. */
  name?: string | null;
  /** Duplicates are detected among the last 4,096 to 8,192 event ids (default 4096); null remembers all. */
  dedupeWindow?: number | null;
  /** Strict mode: check each event first (pointer relative to the event); the first problem throws. */
  validate?: (event: unknown) => { pointer: string; rule: string; message: string }[];
}

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
type Obj = Record<string, Json>;
type Key = string | number | boolean | null;

const USAGE_KEYS = ["inputTokens", "outputTokens", "cachedTokens", "time", "totalTokens"] as const;
const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
/** Python's truthiness (the Python reducer's `x or y`, `if x`). */
const truthy = (v: unknown): boolean =>
  !(v === undefined || v === null || v === false || v === 0 || v === "" || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0));
const pyStr = (v: unknown): string => (v === null || v === undefined ? "None" : v === true ? "True" : v === false ? "False" : typeof v === "string" ? v : JSON.stringify(v));
const placeholder = (name: unknown): boolean => typeof name === "string" && name.startsWith("__");

/** A malformed event: reported (rule `required` or `type`) and skipped, as Python's KeyError/TypeError. */
class Malformed extends Error {
  constructor(public rule: "required" | "type", message: string) {
    super(message);
  }
}
function req(e: Obj, key: string): Json {
  if (!(key in e)) throw new Malformed("required", `'${key}'`);
  return e[key];
}
function key(v: Json): Key {
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  throw new Malformed("type", `unhashable type: '${Array.isArray(v) ? "list" : "dict"}'`);
}
function str(v: Json, what: string): string {
  if (typeof v !== "string") throw new Malformed("type", `${what} is not a string`);
  return v;
}

class Block {
  text = "";
  open = true;
  meta: Json = undefined;
  extra: Obj = {};
  whole: Json = undefined;
  name: Json = null;
  signature: string | null = null;
  redacted: string | null = null;
  hadDelta = false;
  constructor(public kind: string) {}
}

class ToolResult {
  output: Json[] = [];
  text: string | null = null;
  open = true;
  state: Json = "running";
  meta: Obj = {};
  constructor(public id: Json, public name: Json) {}
  flush(): void {
    if (this.text !== null) {
      this.output.push({ type: "text", text: this.text });
      this.text = null;
    }
  }
  outputs(): Json[] {
    return this.text === null ? [...this.output] : [...this.output, { type: "text", text: this.text }];
  }
}

class Reply {
  blocks: (Block | ToolResult)[] = [];
  byBlock = new Map<Key, Block>();
  byCall = new Map<Key, Block>();
  byResult = new Map<Key, ToolResult>();
  msgId: Json = null;
  name: Json = null;
  timestamp: string | null = null;
  usage: Obj | null = null;
  reason: string | null = null;
  meta: Obj = {};
  hitl: Json[] = [];
  result: Json = null;
  modelOpen = 0;
  constructor(public explicit: boolean) {}
}

/** `2026-11-22T10:34:38.563248392Z` -> `2026-11-22 10:34:38.563` (the written form, UTC). */
function javaTimestamp(createdAt: Json): string | null {
  if (typeof createdAt !== "string" || createdAt.length < 19 || !"Tt".includes(createdAt[10]!) || !/[Zz]$/.test(createdAt)) return null;
  const frac = createdAt.length > 20 && createdAt[19] === "." ? createdAt.slice(20, -1) : "";
  return `${createdAt.slice(0, 10)} ${createdAt.slice(11, 19)}.${(frac + "000").slice(0, 3)}`;
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

/** Incremental event → message reducer. */
export class Reducer {
  /** What the tolerant rules had to fix, in order. */
  problems: Problem[] = [];
  /** Events fed (including skipped ones). */
  count = 0;
  private done: Msg[] = [];
  private reply: Reply | null = null;
  private seen = new Set<string>();
  private seenOld = new Set<string>();
  private readonly window: number | null;

  constructor(private options: ReducerOptions = {}) {
    this.window = options.dedupeWindow === undefined ? 4096 : options.dedupeWindow;
  }

  /** Reduce one event (a parsed JSON object). */
  feed(event: AgentEvent | Obj): void {
    const index = this.count++;
    if (!isObject(event)) {
      this.problem(index, "", "type", `not an event object: ${Array.isArray(event) ? "list" : typeof event}`);
      return;
    }
    const e = event as Obj;
    if (this.options.validate) {
      const errors = this.options.validate(e);
      if (errors.length) throw new ReducerError(errors.map((p) => ({ ...p, pointer: `/${index}${p.pointer}` })));
    }
    if ((e.source ?? null) !== (this.options.source ?? null)) return;
    const id = e.id;
    if (typeof id === "string") {
      if (this.seen.has(id) || this.seenOld.has(id)) return;
      this.seen.add(id);
      if (this.window !== null && this.seen.size >= this.window) {
        this.seenOld = this.seen;
        this.seen = new Set();
      }
    } else if (id !== undefined && id !== null) {
      this.problem(index, "/id", "type", `event id ${JSON.stringify(id)} is not a string: not checked for duplicates`);
    }
    const type = e.type;
    // Fast path for the deltas that make up almost all of a stream (the same as their handlers).
    const reply = this.reply;
    if (reply !== null) {
      if (type === "TEXT_BLOCK_DELTA" || (type === "THINKING_BLOCK_DELTA" && e.signature == null && e.redactedData == null)) {
        const b = reply.byBlock.get(e.blockId);
        const delta = e.delta;
        if (b !== undefined && typeof delta === "string" && b.kind === (type === "TEXT_BLOCK_DELTA" ? "text" : "thinking")) {
          b.text += delta;
          return;
        }
      } else if (type === "TOOL_CALL_DELTA") {
        const b = reply.byCall.get(e.toolCallId);
        const delta = e.delta;
        if (b !== undefined && b.open && typeof delta === "string") {
          b.text += delta;
          b.hadDelta = true;
          return;
        }
      }
    }
    const handler = typeof type === "string" ? HANDLERS.get(type) : undefined;
    if (!handler) {
      this.problem(index, "/type", "enum", `unknown event type ${JSON.stringify(e.type)}: event skipped`);
      return;
    }
    try {
      handler(this, e, index);
    } catch (x) {
      if (x instanceof Malformed || (x instanceof TypeError && !(x instanceof ReducerError))) {
        const rule = x instanceof Malformed ? x.rule : "type";
        this.problem(index, "", rule, `malformed ${e.type} event (${x.message}): event skipped`);
      } else throw x;
    }
  }

  /** The message being assembled, as it stands (null between replies). Doesn't change state. */
  snapshot(): Msg | null {
    return this.reply ? build(this.reply, false, this.options.name ?? null, false) : null;
  }

  /** The messages of the replies completed so far. */
  messages(): Msg[] {
    return [...this.done];
  }

  /** End of stream: close an open reply (as interrupted if it was cut short); every message. */
  finish(): Msg[] {
    const r = this.reply;
    if (r) this.close(r, r.explicit || r.modelOpen > 0 || r.blocks.some((b) => b.open));
    return [...this.done];
  }

  /** @internal */
  problem(index: number, pointer: string, rule: string, message: string): void {
    const p = { pointer: `/${index}${pointer}`, rule, message };
    if (this.options.validate) throw new ReducerError([p]);
    this.problems.push(p);
  }
  /** @internal */
  current(): Reply {
    return (this.reply ??= new Reply(false));
  }
  /** @internal */
  close(r: Reply, interrupted: boolean): void {
    this.done.push(build(r, interrupted, this.options.name ?? null, true));
    this.reply = null;
  }
  /** @internal */
  get open(): Reply | null {
    return this.reply;
  }
  set open(r: Reply | null) {
    this.reply = r;
  }
}

type Handler = (r: Reducer, e: Obj, i: number) => void;

function blockStart(kind: string): Handler {
  return (r, e, i) => {
    const reply = r.current();
    const id = key(req(e, "blockId"));
    if (reply.byBlock.has(id)) {
      r.problem(i, "/blockId", "order", `${kind} block ${JSON.stringify(id)} started twice: the second START is ignored`);
      return;
    }
    const b = new Block(kind);
    if (kind === "thinking") {
      for (const k of ["provider", "model"]) if (e[k] !== undefined && e[k] !== null) b.extra[k] = e[k];
    } else if (kind === "data") {
      if (e.block !== undefined && e.block !== null) {
        b.kind = "whole";
        b.whole = e.block;
      } else {
        b.extra.mediaType = truthy(e.mediaType) ? e.mediaType : "application/octet-stream";
        if (e.name !== undefined && e.name !== null) b.name = e.name;
        b.extra.id = id;
      }
    }
    reply.byBlock.set(id, b);
    reply.blocks.push(b);
  };
}

function openBlock(r: Reducer, e: Obj, i: number, kind: string): Block {
  const reply = r.current();
  const id = key(req(e, "blockId"));
  const b = reply.byBlock.get(id);
  if (b && (b.kind === kind || (kind === "data" && b.kind === "whole"))) return b;
  if (!b) {
    r.problem(i, "/blockId", "order", `${kind} delta for block ${JSON.stringify(id)} that was never started: the block is started here`);
  } else {
    // The id belongs to an open block of another kind: that block keeps what it has and is closed.
    r.problem(i, "/blockId", "order", `${kind} delta for block ${JSON.stringify(id)}, an open ${b.kind} block: that block is closed, a ${kind} block started`);
    b.open = false;
    reply.byBlock.delete(id);
  }
  blockStart(kind)(r, e, i);
  return reply.byBlock.get(id)!;
}

function blockEnd(kind: string): Handler {
  return (r, e, i) => {
    const reply = r.current();
    const id = key(req(e, "blockId"));
    const b = reply.byBlock.get(id);
    if (!b) {
      r.problem(i, "/blockId", "order", `END for ${kind} block ${JSON.stringify(id)} that is not open: ignored`);
      return;
    }
    if ("metadata" in e) b.meta = e.metadata;
    b.open = false;
    reply.byBlock.delete(id);
  };
}

const sameModelCall = (b: Block, e: Obj): boolean => b.extra.replyId !== undefined && b.extra.replyId !== null && b.extra.replyId === e.replyId;

function adoptName(b: Block, name: Json): void {
  if (typeof name === "string" && name && (b.name === null || b.name === undefined || (placeholder(b.name) && !placeholder(name)))) b.name = name;
}

function callStart(r: Reducer, e: Obj, i: number): void {
  const reply = r.current();
  const id = key(req(e, "toolCallId"));
  const existing = reply.byCall.get(id);
  if (existing) {
    if (existing.open && truthy(existing.extra.implicit)) {
      // A START for a call its deltas already opened (Java: placeholder-named fragments): that call.
      delete existing.extra.implicit;
      adoptName(existing, e.toolCallName);
      return;
    }
    if (existing.open) {
      r.problem(i, "/toolCallId", "order", `tool call ${JSON.stringify(id)} started twice: the second START is ignored`);
      return;
    }
    if (sameModelCall(existing, e)) {
      // Java ends every open call when another call's chunk arrives and starts it again at its next
      // chunk: within one model call (same replyId) it is the same call.
      existing.open = true;
      adoptName(existing, e.toolCallName);
      return;
    }
    if (existing.extra.replyId === undefined || existing.extra.replyId === null || e.replyId === undefined || e.replyId === null) {
      r.problem(i, "/toolCallId", "order", `tool call ${JSON.stringify(id)} started again after its END: a new call block is added`);
    }
    // else: a later model call reusing a call id: a new call.
  }
  const b = new Block("tool_use");
  b.name = e.toolCallName ?? null;
  if (e.thoughtSignature !== undefined && e.thoughtSignature !== null) b.extra.thoughtSignature = e.thoughtSignature;
  b.extra.id = id;
  b.extra.replyId = e.replyId ?? null;
  reply.byCall.set(id, b);
  reply.blocks.push(b);
}

/** The open call a TOOL_CALL_DELTA/END is for; null when the event is to be ignored. */
function call(r: Reducer, e: Obj, i: number): Block | null {
  const reply = r.current();
  const id = key(req(e, "toolCallId"));
  let b = reply.byCall.get(id);
  const name = e.toolCallName;
  if (b && !b.open) {
    if (e.type === "TOOL_CALL_END") {
      r.problem(i, "/toolCallId", "order", `END for tool call ${JSON.stringify(id)} that is not open: ignored`);
      return null;
    }
    if (sameModelCall(b, e)) {
      if (!placeholder(name)) r.problem(i, "/toolCallId", "order", `delta for tool call ${JSON.stringify(id)} after its END: the call goes on`);
      b.open = true;
      b.extra.implicit = true;
      adoptName(b, name);
      return b;
    }
  }
  if (!b || !b.open) {
    if (!(placeholder(name) && e.type === "TOOL_CALL_DELTA")) {
      r.problem(i, "/toolCallId", "order", `${e.type} for tool call ${JSON.stringify(id)} that is not open: the call is started here`);
    }
    callStart(r, e, i);
    b = reply.byCall.get(id)!;
    b.extra.implicit = true;
  }
  adoptName(b, name);
  return b;
}

function result(r: Reducer, e: Obj, i: number): ToolResult {
  const reply = r.current();
  const id = key(req(e, "toolCallId"));
  let t = reply.byResult.get(id);
  if (!t) {
    r.problem(i, "/toolCallId", "order", `${e.type} for tool result ${JSON.stringify(id)} that was never started: the result is started here`);
    resultStart(r, e, i);
    t = reply.byResult.get(id)!;
  }
  return t;
}

function resultStart(r: Reducer, e: Obj, i: number): void {
  const reply = r.current();
  const id = key(req(e, "toolCallId"));
  if (reply.byResult.has(id)) {
    r.problem(i, "/toolCallId", "order", `tool result ${JSON.stringify(id)} started twice: the second START is ignored`);
    return;
  }
  const t = new ToolResult(id, e.toolCallName ?? null);
  reply.byResult.set(id, t);
  reply.blocks.push(t);
}

const iterable = (v: Json): Json[] => {
  if (!truthy(v)) return [];
  if (Array.isArray(v)) return v;
  if (isObject(v)) return Object.keys(v);
  if (typeof v === "string") return [...v];
  throw new Malformed("type", `'${typeof v}' object is not iterable`);
};

function hitl(reason: string | null, state: string | null, metaKey: string | null): Handler {
  return (r, e) => {
    const reply = r.current();
    const kept: Obj = {};
    for (const [k, v] of Object.entries(e)) if (k !== "id" && k !== "createdAt") kept[k] = v;
    reply.hitl.push(kept);
    if (reason !== null) reply.reason = reason;
    if (metaKey !== null && e.replyId !== undefined && e.replyId !== null) reply.meta[metaKey] = e.replyId;
    for (const c of iterable(e.toolCalls)) {
      const b = isObject(c) ? reply.byCall.get(pyStr(c.id)) : undefined;
      if (b && state !== null) b.extra.state = state;
    }
    if (e.type === "USER_CONFIRM_RESULT") {
      reply.meta.agentscope_confirm_results = truthy(e.confirmResults) ? e.confirmResults : [];
      for (const res of iterable(e.confirmResults)) {
        const tc = isObject(res) ? res.toolCall : undefined;
        const b = isObject(tc) ? reply.byCall.get(pyStr(tc.id)) : undefined;
        if (b && truthy(res.confirmed)) b.extra.state = "allowed";
      }
    } else if (e.type === "EXTERNAL_EXECUTION_RESULT") {
      for (const res of iterable(e.toolResults)) {
        const t = new Block("whole");
        t.whole = res;
        t.open = false;
        reply.blocks.push(t);
      }
    }
  };
}

function addUsage(reply: Reply, usage: Json): void {
  if (!truthy(usage)) return;
  if (!isObject(usage)) throw new Malformed("type", "usage is not an object");
  const total = reply.usage;
  if (total === null) {
    const fresh: Obj = {};
    for (const k of USAGE_KEYS) if (usage[k] !== undefined && usage[k] !== null) fresh[k] = usage[k];
    reply.usage = fresh;
    return;
  }
  for (const k of USAGE_KEYS) {
    const v = usage[k];
    if (v === undefined || v === null) continue;
    const have = k in total ? total[k] : 0;
    const num = (x: Json): boolean => typeof x === "number" || typeof x === "boolean";
    if (num(have) && num(v)) total[k] = Number(have) + Number(v);
    else if (typeof have === "string" && typeof v === "string") total[k] = have + v;
    else throw new Malformed("type", "unsupported operand types for +");
  }
}

const HANDLERS = new Map<string, Handler>([
  ["AGENT_START", (r, e, i) => {
    const open = r.open;
    if (open) {
      if (open.explicit) r.problem(i, "/type", "order", "AGENT_START inside an open reply: the open reply is closed as interrupted");
      r.close(open, open.explicit);
    }
    const reply = new Reply(true);
    reply.msgId = truthy(e.replyId) ? e.replyId : null;
    reply.name = e.name ?? null;
    reply.timestamp = javaTimestamp(e.createdAt);
    r.open = reply;
  }],
  ["AGENT_END", (r, e, i) => {
    const open = r.open;
    if (!open) {
      r.problem(i, "/type", "order", "AGENT_END without an open reply: ignored");
      return;
    }
    r.close(open, false);
  }],
  ["AGENT_RESULT", (r, e) => {
    const res = req(e, "result");
    if (!isObject(res)) throw new Malformed("type", "result is not an object");
    r.current().result = res;
  }],
  ["MODEL_CALL_START", (r, e) => {
    const reply = r.current();
    reply.modelOpen++;
    if (reply.msgId === null && !reply.explicit) reply.msgId = truthy(e.replyId) ? e.replyId : null;
  }],
  ["MODEL_CALL_END", (r, e) => {
    const reply = r.current();
    if (reply.modelOpen > 0) reply.modelOpen--;
    // A model call's tool calls end with it (Java sends no END for calls it never STARTed).
    for (const b of reply.byCall.values()) {
      if (b.open) {
        b.open = false;
        delete b.extra.implicit;
      }
    }
    addUsage(reply, e.usage);
  }],
  ["TEXT_BLOCK_START", blockStart("text")],
  ["TEXT_BLOCK_DELTA", (r, e, i) => {
    const reply = r.open;
    let b = reply ? reply.byBlock.get(key(req(e, "blockId"))) : undefined;
    if (!b || b.kind !== "text") b = openBlock(r, e, i, "text");
    b.text += str(req(e, "delta"), "delta");
  }],
  ["TEXT_BLOCK_END", blockEnd("text")],
  ["THINKING_BLOCK_START", blockStart("thinking")],
  ["THINKING_BLOCK_DELTA", (r, e, i) => {
    const reply = r.open;
    let b = reply ? reply.byBlock.get(key(req(e, "blockId"))) : undefined;
    if (!b || b.kind !== "thinking") b = openBlock(r, e, i, "thinking");
    const delta = str(req(e, "delta"), "delta");
    if (delta) b.text += delta;
    if (e.signature !== undefined && e.signature !== null) b.signature = (b.signature ?? "") + e.signature;
    if (e.redactedData !== undefined && e.redactedData !== null) b.redacted = (b.redacted ?? "") + e.redactedData;
  }],
  ["THINKING_BLOCK_END", blockEnd("thinking")],
  ["DATA_BLOCK_START", blockStart("data")],
  ["DATA_BLOCK_DELTA", (r, e, i) => {
    const b = openBlock(r, e, i, "data");
    const delta = str(req(e, "delta"), "delta");
    if (b.kind === "whole") {
      r.problem(i, "/delta", "order", "data delta for a block delivered whole: ignored");
      return;
    }
    if (!isBase64Fragment(delta)) {
      r.problem(i, "/delta", "pattern", "data delta is not base64: delta dropped");
      return;
    }
    b.text += delta;
  }],
  ["DATA_BLOCK_END", blockEnd("data")],
  ["TOOL_CALL_START", callStart],
  ["TOOL_CALL_DELTA", (r, e, i) => {
    const reply = r.open;
    let b = reply ? reply.byCall.get(key(req(e, "toolCallId"))) : undefined;
    if (!b || !b.open) b = call(r, e, i)!; // only END is ever ignored
    b.text += str(req(e, "delta"), "delta");
    b.hadDelta = true;
  }],
  ["TOOL_CALL_END", (r, e, i) => {
    const b = call(r, e, i);
    if (!b) return;
    if ("input" in e) b.extra.input = e.input;
    if ("state" in e) b.extra.state = e.state;
    if ("metadata" in e) b.meta = e.metadata;
    b.open = false;
  }],
  ["TOOL_RESULT_START", resultStart],
  ["TOOL_RESULT_TEXT_DELTA", (r, e, i) => {
    const t = result(r, e, i);
    const delta = str(req(e, "delta"), "delta");
    t.text = (t.text ?? "") + delta;
  }],
  ["TOOL_RESULT_DATA_DELTA", (r, e, i) => {
    const t = result(r, e, i);
    const data = req(e, "data");
    if (!isObject(data) || typeof data.type !== "string") throw new Malformed("type", "data is not a content block");
    t.flush();
    t.output.push(data);
  }],
  ["TOOL_RESULT_END", (r, e, i) => {
    const t = result(r, e, i);
    t.flush();
    t.state = req(e, "state");
    if (truthy(e.metadata)) {
      if (!isObject(e.metadata)) throw new Malformed("type", "metadata is not an object");
      t.meta = { ...e.metadata };
    }
    t.open = false;
    r.current().byResult.delete(t.id);
  }],
  ["HINT_BLOCK", (r, e) => {
    const b = new Block("hint");
    b.whole = { type: "hint", id: e.blockId ?? null, hint: req(e, "hint"), source: e.hintSource ?? null };
    b.open = false;
    r.current().blocks.push(b);
  }],
  ["EXCEED_MAX_ITERS", (r) => {
    r.current().reason = "MAX_ITERATIONS";
  }],
  ["REQUEST_STOP", (r, e) => {
    r.current().reason = truthy(e.generateReason) ? e.generateReason : "MIDDLEWARE_STOP_REQUESTED";
  }],
  ["REQUIRE_USER_CONFIRM", hitl("PERMISSION_ASKING", "asking", "agentscope_confirm_request_reply_id")],
  ["REQUIRE_EXTERNAL_EXECUTION", hitl("TOOL_SUSPENDED", "submitted", "agentscope_external_execution_request_reply_id")],
  ["USER_CONFIRM_RESULT", hitl(null, null, null)],
  ["EXTERNAL_EXECUTION_RESULT", hitl(null, null, null)],
  ["ALL_TOOLS_DENIED", hitl("ALL_TOOLS_DENIED", null, null)],
  ["SUBAGENT_EXPOSED", () => {}],
  ["CUSTOM", () => {}],
]);

/** The event types the reducer handles (every AgentScope Java 2.x type). */
export const EVENT_TYPES: readonly string[] = [...HANDLERS.keys()];

/** Python's type names, for the argumentsError text. */
function pyType(v: Json, raw: string): string {
  if (v === null) return "NoneType";
  if (Array.isArray(v)) return "list";
  if (typeof v === "string") return "str";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return /^-?\d+$/.test(raw.trim()) ? "int" : "float";
  return "dict";
}

function toolUse(b: Block, closing: boolean): Obj {
  const raw = b.hadDelta ? b.text : null;
  const meta: Obj = isObject(b.meta) ? { ...b.meta } : {};
  if ("thoughtSignature" in b.extra && !("thoughtSignature" in meta)) meta.thoughtSignature = b.extra.thoughtSignature;
  let args: Json;
  if ("input" in b.extra) args = b.extra.input;
  else if (raw === null || raw === "") args = {};
  else if (b.open && !closing) args = {}; // still streaming: parsed when the call ends
  else {
    let err: string | null = null;
    try {
      args = JSON.parse(raw);
      if (!isObject(args)) err = `arguments are JSON but not an object: ${pyType(args, raw)}`;
    } catch (x) {
      err = `arguments are not valid JSON: ${(x as Error).message}`;
    }
    if (err !== null) {
      args = {};
      meta.argumentsError = err;
    }
  }
  return { type: "tool_use", id: b.extra.id, name: truthy(b.name) ? b.name : "", input: args, content: raw, metadata: meta, state: "state" in b.extra ? b.extra.state : "pending" };
}

function blockJson(b: Block | ToolResult, close: boolean): Json {
  if (b instanceof ToolResult) {
    return { type: "tool_result", id: b.id, name: b.name, output: b.outputs(), metadata: b.meta, state: b.open ? (close ? "interrupted" : "running") : b.state };
  }
  switch (b.kind) {
    case "text":
      return { type: "text", text: b.text };
    case "thinking": {
      let meta: Obj | null = isObject(b.meta) ? { ...b.meta } : null;
      if (Object.keys(b.extra).length || b.signature !== null || b.redacted !== null) {
        meta ??= {};
        for (const [k, v] of Object.entries(b.extra)) if (!(k in meta)) meta[k] = v;
        if (b.signature !== null && !("signature" in meta)) meta.signature = b.signature;
        if (b.redacted !== null) {
          if (!("redacted" in meta)) meta.redacted = true;
          if (!("redactedData" in meta)) meta.redactedData = b.redacted;
        }
      }
      return { type: "thinking", thinking: b.text, metadata: meta };
    }
    case "data": {
      const out: Obj = { type: "data", source: { type: "base64", media_type: b.extra.mediaType, data: b.text }, id: b.extra.id };
      if (b.name !== null) out.name = b.name;
      return out;
    }
    case "tool_use":
      return toolUse(b, close);
    default:
      return b.whole; // whole media blocks, hints, external execution results
  }
}

function newId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  const hex = Array.from({ length: 32 }, () => Math.floor(Math.random() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

function build(reply: Reply, interrupted: boolean, defaultName: string | null, close: boolean): Msg {
  const res: Obj = isObject(reply.result) ? reply.result : {};
  const metadata: Obj = { ...(isObject(res.metadata) ? res.metadata : {}), ...reply.meta };
  if (reply.hitl.length) metadata.agentmsg_hitl = [...reply.hitl];
  const reason = interrupted ? "INTERRUPTED" : reply.reason;
  if (reason !== null) metadata.agentscope_generate_reason = reason;
  // Ids and names come from the stream: only non-empty strings (ids) and strings (names) are used.
  let id = [res.id, reply.msgId].find((v) => typeof v === "string" && v !== "");
  if (id === undefined) id = reply.msgId = newId(); // minted once per reply
  const name = [res.name, reply.name].find((v) => typeof v === "string") ?? defaultName;
  const data: Obj = {
    id,
    name,
    role: "ASSISTANT",
    content: reply.blocks.map((b) => blockJson(b, close)),
    metadata,
    timestamp: "timestamp" in res ? res.timestamp : reply.timestamp,
    usage: reply.usage !== null ? { ...reply.usage } : "usage" in res ? res.usage : null,
  };
  return canonicalMessage((checkMsg(data) ? data : salvage(data, checkMsg.errors ?? [])) as Msg);
}

/** Keep every block, metadata key, usage and timestamp that is valid; report the schema errors. */
function salvage(data: Obj, errors: ValidationErrorObject[]): Obj {
  const alone = (extra: Obj): boolean => checkMsg({ id: "x", role: "ASSISTANT", content: [], ...extra });
  const metadata: Obj = {};
  for (const [k, v] of Object.entries(data.metadata as Obj)) if (alone({ metadata: { [k]: v } })) metadata[k] = v;
  // ajv reports every failed branch of a union: keep the most specific errors (the deepest pointers).
  const depth = (e: ValidationErrorObject): number => e.instancePath.split("/").length;
  const deepest = Math.max(...errors.map(depth));
  const texts = errors.filter((e) => depth(e) === deepest).map((e) => `${e.instancePath || "/"}: ${e.message ?? e.keyword} [${e.keyword}]`);
  metadata.agentmsg_reduce_errors = [...new Set(texts)].slice(0, 20);
  return {
    ...data,
    content: (data.content as ContentBlock[]).filter((b) => checkBlock(b)),
    metadata,
    usage: alone({ usage: data.usage }) ? data.usage : null,
    timestamp: alone({ timestamp: data.timestamp }) ? data.timestamp : null,
  };
}

/** Reduce a whole event stream: one assistant message per agent reply. */
export function reduceEvents(events: Iterable<AgentEvent | Obj>, options: ReducerOptions = {}): Msg[] {
  const r = new Reducer(options);
  for (const e of events) r.feed(e);
  return r.finish();
}
