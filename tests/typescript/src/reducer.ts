// A small TypeScript port of agentmsg's event reducer (docs/events.md has the rules). It folds an
// AgentScope event stream into one assistant message per reply and passes every vector in
// tests/conformance/reducer/. Tolerant by default (problems are recorded); with `validate` given,
// strict mode checks each event against the schema and throws on the first problem. Every message
// built is validated against the msg schema; what the stream carried that does not make a valid
// message (e.g. data deltas that join to bad base64) is dropped and reported in metadata
// `agentmsg_reduce_errors`, as the Python reducer does.
import { createAjv, kinds } from "@agentmsg/schema";
import type { AgentEvent, Msg } from "@agentmsg/schema";
import type { ValidateFunction } from "ajv";

export interface Problem { pointer: string; rule: string; message: string }
type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
type Ev = Record<string, Json>;

const USAGE_KEYS = ["inputTokens", "outputTokens", "cachedTokens", "time", "totalTokens"] as const;

class Block {
  parts: string[] = [];
  open = true;
  meta: Json = undefined;
  extra: Record<string, Json> = {};
  whole: Json = undefined;
  name: string | null = null;
  signature: string[] | null = null;
  redacted: string[] | null = null;
  hadDelta = false;
  constructor(public kind: string) {}
  text(): string { return this.parts.join(""); }
}

class ToolResult {
  output: Json[] = [];
  text: string[] | null = null;
  open = true;
  state = "running";
  meta: Record<string, Json> = {};
  constructor(public id: string, public name: string | null) {}
  flush(): void { if (this.text !== null) { this.output.push({ type: "text", text: this.text.join("") }); this.text = null; } }
  outputs(): Json[] { return this.text === null ? [...this.output] : [...this.output, { type: "text", text: this.text.join("") }]; }
}

class Reply {
  blocks: (Block | ToolResult)[] = [];
  byBlock = new Map<string, Block>();
  byCall = new Map<string, Block>();
  byResult = new Map<string, ToolResult>();
  msgId: string | null = null;
  name: string | null = null;
  timestamp: string | null = null;
  usage: Record<string, number> | null = null;
  reason: string | null = null;
  meta: Record<string, Json> = {};
  hitl: Json[] = [];
  result: Json = null;
  modelOpen = 0;
  constructor(public explicit: boolean) {}
}

function javaTimestamp(createdAt: Json): string | null {
  if (typeof createdAt !== "string" || createdAt.length < 19 || !"Tt".includes(createdAt[10]) || !/[Zz]$/.test(createdAt)) return null;
  const frac = createdAt.length > 20 && createdAt[19] === "." ? createdAt.slice(20, -1) : "";
  return `${createdAt.slice(0, 10)} ${createdAt.slice(11, 19)}.${(frac + "000").slice(0, 3)}`;
}

const isBase64Fragment = (s: string): boolean => /^[A-Za-z0-9+/]*={0,2}$/.test(s) && (s.length + ((4 - (s.length % 4)) % 4)) % 4 === 0;

export interface ReducerOptions { source?: string | null; name?: string | null; dedupeWindow?: number | null; validate?: (event: Ev) => { pointer: string; rule: string; message: string }[] }

export class Reducer {
  problems: Problem[] = [];
  count = 0;
  private done: Msg[] = [];
  private reply: Reply | null = null;
  private seen = new Set<string>();
  private seenOld = new Set<string>();
  constructor(private options: ReducerOptions = {}) {}

  feed(event: AgentEvent | Ev): void {
    const e = event as Ev;
    const index = this.count++;
    if (this.options.validate) {
      const errors = this.options.validate(e);
      if (errors.length) throw Object.assign(new Error(errors[0].message), { problems: errors.map((p) => ({ ...p, pointer: `/${index}${p.pointer}` })) });
    }
    if ((e.source ?? null) !== (this.options.source ?? null)) return;
    const id = e.id;
    if (id !== undefined && id !== null && typeof id !== "string") {
      this.problem(index, "/id", "type", `event id ${JSON.stringify(id)} is not a string: not checked for duplicates`);
    } else if (typeof id === "string") {
      if (this.seen.has(id) || this.seenOld.has(id)) return;
      this.seen.add(id);
      const window = this.options.dedupeWindow === undefined ? 4096 : this.options.dedupeWindow;
      if (window !== null && this.seen.size >= window) { this.seenOld = this.seen; this.seen = new Set(); }
    }
    const handler = HANDLERS[e.type as string];
    if (!handler) { this.problem(index, "/type", "enum", `unknown event type ${JSON.stringify(e.type)}: event skipped`); return; }
    handler(this, e, index);
  }

  snapshot(): Msg | null { return this.reply ? build(this.reply, false, this.options.name ?? null, false) : null; }

  finish(): Msg[] {
    const r = this.reply;
    if (r) {
      const cut = r.explicit || r.modelOpen > 0 || r.blocks.some((b) => b.open);
      this.close(r, cut);
    }
    return [...this.done];
  }

  problem(index: number, pointer: string, rule: string, message: string): void {
    const p = { pointer: `/${index}${pointer}`, rule, message };
    if (this.options.validate) throw Object.assign(new Error(message), { problems: [p] });
    this.problems.push(p);
  }

  current(): Reply { return (this.reply ??= new Reply(false)); }
  close(r: Reply, interrupted: boolean): void { this.done.push(build(r, interrupted, this.options.name ?? null, true)); this.reply = null; }
  get open(): Reply | null { return this.reply; }
  set open(r: Reply | null) { this.reply = r; }
}

type Handler = (r: Reducer, e: Ev, i: number) => void;

function blockStart(kind: string): Handler {
  return (r, e, i) => {
    const reply = r.current();
    const id = e.blockId;
    if (reply.byBlock.has(id)) { r.problem(i, "/blockId", "order", `${kind} block ${JSON.stringify(id)} started twice: the second START is ignored`); return; }
    const b = new Block(kind);
    if (kind === "thinking") { for (const k of ["provider", "model"]) if (e[k] !== undefined && e[k] !== null) b.extra[k] = e[k]; }
    else if (kind === "data") {
      if (e.block !== undefined && e.block !== null) { b.kind = "whole"; b.whole = e.block; }
      else { b.extra.mediaType = e.mediaType || "application/octet-stream"; if (e.name != null) b.name = e.name; b.extra.id = id; }
    }
    reply.byBlock.set(id, b);
    reply.blocks.push(b);
  };
}

function openBlock(r: Reducer, e: Ev, i: number, kind: string): Block {
  const reply = r.current();
  let b = reply.byBlock.get(e.blockId);
  if (!b || (b.kind !== kind && b.kind !== "whole")) {
    r.problem(i, "/blockId", "order", `${kind} delta for block ${JSON.stringify(e.blockId)} that was never started: the block is started here`);
    blockStart(kind)(r, e, i);
    b = reply.byBlock.get(e.blockId)!;
  }
  return b;
}

function blockEnd(kind: string): Handler {
  return (r, e, i) => {
    const reply = r.current();
    const b = reply.byBlock.get(e.blockId);
    if (!b) { r.problem(i, "/blockId", "order", `END for ${kind} block ${JSON.stringify(e.blockId)} that is not open: ignored`); return; }
    if ("metadata" in e) b.meta = e.metadata;
    b.open = false;
    reply.byBlock.delete(e.blockId);
  };
}

function callStart(r: Reducer, e: Ev, i: number): void {
  const reply = r.current();
  const existing = reply.byCall.get(e.toolCallId);
  if (existing) {
    if (existing.open) { r.problem(i, "/toolCallId", "order", `tool call ${JSON.stringify(e.toolCallId)} started twice: the second START is ignored`); return; }
    r.problem(i, "/toolCallId", "order", `tool call ${JSON.stringify(e.toolCallId)} started again after its END: a new call block is added`);
  }
  const b = new Block("tool_use");
  b.name = e.toolCallName ?? null;
  if (e.thoughtSignature != null) b.extra.thoughtSignature = e.thoughtSignature;
  b.extra.id = e.toolCallId;
  reply.byCall.set(e.toolCallId, b);
  reply.blocks.push(b);
}

function call(r: Reducer, e: Ev, i: number): Block {
  const reply = r.current();
  let b = reply.byCall.get(e.toolCallId);
  if (!b || !b.open) {
    r.problem(i, "/toolCallId", "order", `${e.type} for tool call ${JSON.stringify(e.toolCallId)} that is not open: the call is started here`);
    callStart(r, e, i);
    b = reply.byCall.get(e.toolCallId)!;
  }
  if (b.name === null && e.toolCallName) b.name = e.toolCallName;
  return b;
}

function result(r: Reducer, e: Ev, i: number): ToolResult {
  const reply = r.current();
  let t = reply.byResult.get(e.toolCallId);
  if (!t) {
    r.problem(i, "/toolCallId", "order", `${e.type} for tool result ${JSON.stringify(e.toolCallId)} that was never started: the result is started here`);
    HANDLERS.TOOL_RESULT_START(r, e, i);
    t = reply.byResult.get(e.toolCallId)!;
  }
  return t;
}

function hitl(reason: string | null, state: string | null, metaKey: string | null): Handler {
  return (r, e) => {
    const reply = r.current();
    const kept: Ev = {};
    for (const [k, v] of Object.entries(e)) if (k !== "id" && k !== "createdAt") kept[k] = v;
    reply.hitl.push(kept);
    if (reason !== null) reply.reason = reason;
    if (metaKey !== null && e.replyId != null) reply.meta[metaKey] = e.replyId;
    for (const c of e.toolCalls ?? []) { const b = reply.byCall.get(String(c?.id)); if (b && state !== null) b.extra.state = state; }
    if (e.type === "USER_CONFIRM_RESULT") {
      reply.meta.agentscope_confirm_results = e.confirmResults ?? [];
      for (const res of e.confirmResults ?? []) { const b = reply.byCall.get(String(res?.toolCall?.id)); if (b && res.confirmed) b.extra.state = "allowed"; }
    } else if (e.type === "EXTERNAL_EXECUTION_RESULT") {
      for (const res of e.toolResults ?? []) { const t = new Block("whole"); t.whole = res; t.open = false; reply.blocks.push(t); }
    }
  };
}

const HANDLERS: Record<string, Handler> = {
  AGENT_START: (r, e, i) => {
    const open = r.open;
    if (open) { if (open.explicit) r.problem(i, "/type", "order", "AGENT_START inside an open reply: the open reply is closed as interrupted"); r.close(open, open.explicit); }
    const reply = new Reply(true);
    reply.msgId = e.replyId || null; reply.name = e.name ?? null; reply.timestamp = javaTimestamp(e.createdAt);
    r.open = reply;
  },
  AGENT_END: (r, e, i) => { const open = r.open; if (!open) { r.problem(i, "/type", "order", "AGENT_END without an open reply: ignored"); return; } r.close(open, false); },
  AGENT_RESULT: (r, e) => { r.current().result = e.result; },
  MODEL_CALL_START: (r, e) => { const reply = r.current(); reply.modelOpen++; if (reply.msgId === null && !reply.explicit) reply.msgId = e.replyId || null; },
  MODEL_CALL_END: (r, e) => {
    const reply = r.current();
    if (reply.modelOpen > 0) reply.modelOpen--;
    const u = e.usage;
    if (u && Object.keys(u).length) {
      if (reply.usage === null) { reply.usage = {}; for (const k of USAGE_KEYS) if (u[k] != null) reply.usage[k] = u[k]; }
      else for (const k of USAGE_KEYS) if (u[k] != null) reply.usage[k] = (reply.usage[k] ?? 0) + u[k];
    }
  },
  TEXT_BLOCK_START: blockStart("text"),
  TEXT_BLOCK_DELTA: (r, e, i) => { openBlock(r, e, i, "text").parts.push(e.delta); },
  TEXT_BLOCK_END: blockEnd("text"),
  THINKING_BLOCK_START: blockStart("thinking"),
  THINKING_BLOCK_DELTA: (r, e, i) => {
    const b = openBlock(r, e, i, "thinking");
    if (e.delta) b.parts.push(e.delta);
    if (e.signature != null) (b.signature ??= []).push(e.signature);
    if (e.redactedData != null) (b.redacted ??= []).push(e.redactedData);
  },
  THINKING_BLOCK_END: blockEnd("thinking"),
  DATA_BLOCK_START: blockStart("data"),
  DATA_BLOCK_DELTA: (r, e, i) => {
    const b = openBlock(r, e, i, "data");
    if (b.kind === "whole") { r.problem(i, "/delta", "order", "data delta for a block delivered whole: ignored"); return; }
    if (!isBase64Fragment(e.delta)) { r.problem(i, "/delta", "pattern", "data delta is not base64: delta dropped"); return; }
    b.parts.push(e.delta);
  },
  DATA_BLOCK_END: blockEnd("data"),
  TOOL_CALL_START: callStart,
  TOOL_CALL_DELTA: (r, e, i) => { const b = call(r, e, i); b.parts.push(e.delta); b.hadDelta = true; },
  TOOL_CALL_END: (r, e, i) => {
    const b = call(r, e, i);
    if ("input" in e) b.extra.input = e.input;
    if ("state" in e) b.extra.state = e.state;
    if ("metadata" in e) b.meta = e.metadata;
    b.open = false;
  },
  TOOL_RESULT_START: (r, e, i) => {
    const reply = r.current();
    if (reply.byResult.has(e.toolCallId)) { r.problem(i, "/toolCallId", "order", `tool result ${JSON.stringify(e.toolCallId)} started twice: the second START is ignored`); return; }
    const t = new ToolResult(e.toolCallId, e.toolCallName ?? null);
    reply.byResult.set(e.toolCallId, t);
    reply.blocks.push(t);
  },
  TOOL_RESULT_TEXT_DELTA: (r, e, i) => { const t = result(r, e, i); (t.text ??= []).push(e.delta); },
  TOOL_RESULT_DATA_DELTA: (r, e, i) => { const t = result(r, e, i); t.flush(); t.output.push(e.data); },
  TOOL_RESULT_END: (r, e, i) => {
    const t = result(r, e, i);
    t.flush(); t.state = e.state;
    if (e.metadata && Object.keys(e.metadata).length) t.meta = { ...e.metadata };
    t.open = false;
    r.current().byResult.delete(t.id);
  },
  HINT_BLOCK: (r, e) => { const b = new Block("hint"); b.whole = { type: "hint", id: e.blockId ?? null, hint: e.hint, source: e.hintSource ?? null }; b.open = false; r.current().blocks.push(b); },
  EXCEED_MAX_ITERS: (r) => { r.current().reason = "MAX_ITERATIONS"; },
  REQUEST_STOP: (r, e) => { r.current().reason = e.generateReason || "MIDDLEWARE_STOP_REQUESTED"; },
  REQUIRE_USER_CONFIRM: hitl("PERMISSION_ASKING", "asking", "agentscope_confirm_request_reply_id"),
  REQUIRE_EXTERNAL_EXECUTION: hitl("TOOL_SUSPENDED", "submitted", "agentscope_external_execution_request_reply_id"),
  USER_CONFIRM_RESULT: hitl(null, null, null),
  EXTERNAL_EXECUTION_RESULT: hitl(null, null, null),
  ALL_TOOLS_DENIED: hitl("ALL_TOOLS_DENIED", null, null),
  SUBAGENT_EXPOSED: () => {},
  CUSTOM: () => {},
};

function toolUse(b: Block, closing: boolean): Json {
  const raw = b.hadDelta ? b.text() : null;
  const meta: Record<string, Json> = b.meta && typeof b.meta === "object" ? { ...b.meta } : {};
  if ("thoughtSignature" in b.extra && !("thoughtSignature" in meta)) meta.thoughtSignature = b.extra.thoughtSignature;
  let args: Json;
  if ("input" in b.extra) args = b.extra.input;
  else if (raw === null || raw === "" || (b.open && !closing)) args = {};
  else {
    let err: string | null = null;
    try { args = JSON.parse(raw); if (args === null || typeof args !== "object" || Array.isArray(args)) err = "arguments are JSON but not an object"; }
    catch (x) { err = `arguments are not valid JSON: ${(x as Error).message}`; }
    if (err !== null) { args = {}; meta.argumentsError = err; }
  }
  return { type: "tool_use", id: b.extra.id, name: b.name || "", input: args, content: raw, metadata: meta, state: b.extra.state ?? "pending" };
}

function blockJson(b: Block | ToolResult, close: boolean): Json {
  if (b instanceof ToolResult) return { type: "tool_result", id: b.id, name: b.name, output: b.outputs(), metadata: b.meta, state: b.open ? (close ? "interrupted" : "running") : b.state };
  switch (b.kind) {
    case "text": return { type: "text", text: b.text() };
    case "thinking": {
      let meta: Json = b.meta && typeof b.meta === "object" ? { ...b.meta } : null;
      if (Object.keys(b.extra).length || b.signature || b.redacted) {
        meta ??= {};
        for (const [k, v] of Object.entries(b.extra)) if (!(k in meta)) meta[k] = v;
        if (b.signature && !("signature" in meta)) meta.signature = b.signature.join("");
        if (b.redacted) { if (!("redacted" in meta)) meta.redacted = true; if (!("redactedData" in meta)) meta.redactedData = b.redacted.join(""); }
      }
      return { type: "thinking", thinking: b.text(), metadata: meta };
    }
    case "data": {
      const out: Json = { type: "data", source: { type: "base64", media_type: b.extra.mediaType, data: b.text() }, id: b.extra.id };
      if (b.name !== null) out.name = b.name;
      return out;
    }
    case "tool_use": return toolUse(b, close);
    default: return b.whole;
  }
}

function build(reply: Reply, interrupted: boolean, defaultName: string | null, close: boolean): Msg {
  const result = reply.result && typeof reply.result === "object" ? reply.result : {};
  const metadata: Record<string, Json> = { ...(result.metadata ?? {}), ...reply.meta };
  if (reply.hitl.length) metadata.agentmsg_hitl = [...reply.hitl];
  const reason = interrupted ? "INTERRUPTED" : reply.reason;
  if (reason !== null) metadata.agentscope_generate_reason = reason;
  // Ids and names come from the stream: only non-empty strings (ids) and strings (names) are used.
  const streamId = [result.id, reply.msgId].find((v) => typeof v === "string" && v !== "");
  if (streamId === undefined) reply.msgId = globalThis.crypto?.randomUUID?.() ?? `reply-${Date.now()}`;
  const name = [result.name, reply.name].find((v) => typeof v === "string") ?? defaultName;
  const data = {
    id: streamId ?? reply.msgId,
    name,
    role: "ASSISTANT",
    content: reply.blocks.map((b) => blockJson(b, close)),
    metadata,
    timestamp: "timestamp" in result ? result.timestamp : reply.timestamp,
    usage: reply.usage !== null ? { ...reply.usage } : "usage" in result ? result.usage : null,
  };
  const { msg } = validators();
  return (msg(data) ? data : salvage(data, msg.errors ?? [])) as Msg;
}

let checks: { msg: ValidateFunction; block: ValidateFunction } | undefined;
function validators(): { msg: ValidateFunction; block: ValidateFunction } {
  if (!checks) {
    const ajv = createAjv();
    checks = { msg: ajv.getSchema(kinds.msg)!, block: ajv.getSchema(kinds["content-block"])! };
  }
  return checks;
}

/** Keep every block, metadata key, usage and timestamp that is valid; report the schema errors. */
function salvage(data: Record<string, Json>, errors: { instancePath: string; message?: string; keyword: string }[]): Record<string, Json> {
  const { msg, block } = validators();
  const alone = (extra: Record<string, Json>): boolean => msg({ id: "x", role: "ASSISTANT", content: [], ...extra });
  const metadata: Record<string, Json> = {};
  for (const [k, v] of Object.entries(data.metadata as Record<string, Json>)) if (alone({ metadata: { [k]: v } })) metadata[k] = v;
  // ajv reports every failed union branch: keep the most specific errors (the deepest pointers).
  const depth = (e: { instancePath: string }): number => e.instancePath.split("/").length;
  const deepest = Math.max(...errors.map(depth));
  const texts = errors.filter((e) => depth(e) === deepest).map((e) => `${e.instancePath}: ${e.message ?? e.keyword} [${e.keyword}]`);
  metadata.agentmsg_reduce_errors = [...new Set(texts)].slice(0, 20);
  return {
    ...data,
    content: (data.content as Json[]).filter((b) => block(b)),
    metadata,
    usage: alone({ usage: data.usage }) ? data.usage : null,
    timestamp: alone({ timestamp: data.timestamp }) ? data.timestamp : null,
  };
}

export function reduceEvents(events: Iterable<AgentEvent | Ev>, options: ReducerOptions = {}): Msg[] {
  const r = new Reducer(options);
  for (const e of events) r.feed(e);
  return r.finish();
}
