// From a reply's state to an assistant message, and salvage when what the stream carried does not make
// a valid message (agentmsg/events/_build.py, rule for rule): every valid part is kept, every dropped
// part reported. Messages come out in the wire form (key order, defaults, nulls) Python and Java write.
import { block as checkBlock, compareCodePoints, msg as checkMsg } from "@agentmsg/schema/compiled";
import type { SchemaProblem } from "@agentmsg/schema/compiled";
import type { Msg } from "@agentmsg/schema/types";
import { canonicalMessage } from "./canonical.js";
import { hasLoneSurrogate, jsonType, pointerOf, readJson } from "./json.js";
import { Block, ToolResult, assignOwn, isObject, setOwn } from "./state.js";
import type { Json, Obj, Problem, Reply, State } from "./state.js";
import { pythonRepr } from "./repr.js";
import { schemaProblems } from "./validate.js";

/** Entries of metadata agentmsg_reduce_errors kept. */
const MAX_REDUCE_ERRORS = 20;

/** The reply is over: its message joins the completed ones; salvage problems are recorded. */
export function closeReply(st: State, reply: Reply, interrupted: boolean): void {
  st.done.push(build(reply, interrupted, st.defaultName, true, st));
  st.results.push(isObject(reply.result) ? reply.result : null);
  st.reply = null;
}

function toolUse(b: Block, closing: boolean): Obj {
  const raw = b.received ? b.text : null;
  const meta: Obj = isObject(b.meta) ? { ...b.meta } : {};
  if (Object.hasOwn(b.extra, "thoughtSignature") && !Object.hasOwn(meta, "thoughtSignature")) meta.thoughtSignature = b.extra.thoughtSignature;
  let args: Json;
  if (Object.hasOwn(b.extra, "input")) args = b.extra.input;
  else if (raw === null || raw === "") args = {};
  else if (b.open && !closing) args = {}; // still streaming: parsed when the call ends
  else {
    // The codec's reader: what it accepts can be written back, so no runtime's parser shows through.
    args = readJson(raw);
    const err = args === undefined ? "arguments are not valid JSON" : isObject(args) ? null : `arguments are JSON but not an object: ${jsonType(args)}`;
    if (err !== null) {
      args = {};
      meta.argumentsError = err;
    }
  }
  return { type: "tool_use", id: b.extra.id, name: b.name || "", input: args, content: raw, metadata: meta, state: Object.hasOwn(b.extra, "state") ? b.extra.state : "pending" };
}

function blockDict(b: Block | ToolResult, close: boolean): Json {
  if (b instanceof ToolResult) {
    const state = b.open ? (close ? "interrupted" : "running") : b.state;
    return { type: "tool_result", id: b.id, name: b.name, output: b.outputs(), metadata: b.meta, state };
  }
  switch (b.kind) {
    case "text":
      return { type: "text", text: b.text };
    case "thinking": {
      let meta: Obj | null = isObject(b.meta) ? { ...b.meta } : null;
      if (Object.keys(b.extra).length || b.signature !== null || b.redacted !== null) {
        meta ??= {};
        for (const [k, v] of Object.entries(b.extra)) if (!Object.hasOwn(meta, k)) meta[k] = v;
        if (b.signature !== null && !Object.hasOwn(meta, "signature")) meta.signature = b.signature;
        if (b.redacted !== null) {
          if (!Object.hasOwn(meta, "redacted")) meta.redacted = true;
          if (!Object.hasOwn(meta, "redactedData")) meta.redactedData = b.redacted;
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
      return b.block; // whole media blocks, hints, external execution results
  }
}

/** The keys AgentScope Java 2.0.0's ChatUsage writes (agentmsg/message.py JAVA_USAGE_KEYS). */
const JAVA_USAGE_KEYS: ReadonlySet<string> = new Set(["inputTokens", "outputTokens", "cachedTokens", "time", "totalTokens"]);
/** The counts a usage and its metadata copy must agree on for the copy to restore the usage (agentmsg/message.py
 * _USAGE_AGREEMENT: what Java keeps as it read it; it recomputes totalTokens). */
const USAGE_AGREEMENT = ["inputTokens", "outputTokens", "cachedTokens", "time"] as const;

/** The usage with the keys of its copy that a trip through Java drops (any but Java's) and the usage lacks, or
 * null when there are none or the copy is no copy of this usage (a count both hold differs). */
function restoredUsage(usage: Obj, copy: Obj): Obj | null {
  const missing = Object.keys(copy).filter((k) => !Object.hasOwn(usage, k) && !JAVA_USAGE_KEYS.has(k));
  if (!missing.length) return null;
  for (const k of USAGE_AGREEMENT) {
    if (Object.hasOwn(usage, k) && Object.hasOwn(copy, k) && !sameCount(usage[k], copy[k])) return null;
  }
  const out: Obj = { ...usage };
  for (const k of missing) setOwn(out, k, copy[k]);
  return out;
}

/** Two counts equal as Python compares them: numbers (and booleans, as 0 and 1) by value, else as their JSON. */
function sameCount(a: Json | undefined, b: Json | undefined): boolean {
  const num = (v: Json | undefined) => (typeof v === "number" ? v : typeof v === "boolean" ? Number(v) : null);
  const x = num(a);
  const y = num(b);
  return x !== null || y !== null ? x === y : JSON.stringify(a) === JSON.stringify(b);
}

/** The reply's message. `st` given (the reply is closing): salvage problems are recorded there. */
export function build(reply: Reply, interrupted: boolean, defaultName: string | null, close: boolean, st?: State): Msg {
  const origins: number[] = [];
  const content: Json[] = [];
  for (const b of reply.blocks) {
    const d = blockDict(b, close);
    if (d === null || d === undefined) continue; // an external execution result that is null
    content.push(d);
    origins.push(b.origin);
  }
  const result: Obj = isObject(reply.result) ? reply.result : {};
  const metadata: Obj = isObject(result.metadata) ? { ...result.metadata } : {};
  assignOwn(metadata, reply.meta);
  if (reply.hitl.length) metadata.agentmsg_hitl = [...reply.hitl];
  // What the reply ended with.
  if (reply.finishReason !== null) metadata.agentmsg_finish_reason = reply.finishReason;
  if (reply.model !== null) metadata.agentmsg_model = reply.model;
  if (reply.stopReason !== null) metadata.agentmsg_stop_reason = reply.stopReason;
  if (reply.refusal) metadata.agentmsg_refusal = true;
  if (reply.errors.length) metadata.agentmsg_errors = [...reply.errors];
  if (reply.notes.length) {
    const notes: Json[] = [...reply.notes];
    if (reply.notesOmitted) notes.push({ rule: "max-problems", message: `${reply.notesOmitted} more notes not kept` });
    metadata.agentmsg_notes = notes;
  }
  const reason = interrupted ? "INTERRUPTED" : reply.reason;
  if (reason !== null) metadata.agentscope_generate_reason = reason;
  let usage = reply.usage !== null ? { ...reply.usage } : Object.hasOwn(result, "usage") ? result.usage : null;
  if (reply.usage === null && isObject(usage)) {
    // AGENT_RESULT's usage reaches the message as it is: a count beyond 2^53 may have lost its last digits
    // in a JS number (Python keeps it exact), which is said, as for the counts MODEL_CALL_END gives (rule
    // precision, JavaScript only).
    for (const [key, count] of Object.entries(usage)) {
      if (key !== "time" && typeof count === "number" && Math.abs(count) > Number.MAX_SAFE_INTEGER) {
        st?.add({ pointer: `/${reply.resultAt}${pointerOf(["result", "usage", key])}`, rule: "precision", message: `usage ${key} ${count} is beyond 2^53: a JavaScript number may not hold it exactly` });
      }
    }
  }
  // A usage holding a key AgentScope Java 2.0.0's ChatUsage lacks keeps a copy of itself in metadata
  // _chat_usage, a map Java keeps whole: the key survives a trip through Java (docs/wire-format.md).
  if (isObject(usage) && Object.keys(usage).some((k) => !JAVA_USAGE_KEYS.has(k))) setOwn(metadata, "_chat_usage", { ...usage });
  // Then the usage is completed from the message's copy (the keys Java dropped from usage, which the copy carried
  // through it: an AGENT_RESULT re-written by Java), as every Python reader does (agentmsg/message.py restore_usage).
  const copy = Object.hasOwn(metadata, "_chat_usage") ? metadata._chat_usage : null;
  if (isObject(usage) && isObject(copy)) usage = restoredUsage(usage, copy) ?? usage;
  // Ids and names come from the stream: only non-empty strings (ids) and strings (names) are used.
  const id = [result.id, reply.msgId].find((v) => typeof v === "string" && v !== "") ?? reply.fallbackId;
  const name = [result.name, reply.name].find((v) => typeof v === "string") ?? defaultName;
  let data: Obj = {
    id,
    name,
    role: "ASSISTANT",
    content,
    metadata,
    timestamp: Object.hasOwn(result, "timestamp") ? result.timestamp : reply.timestamp,
    usage,
  };
  // A string with a lone surrogate (from events given as objects, not parsed JSON: a pair split across two
  // deltas is one character already, JavaScript strings being UTF-16) cannot be written as UTF-8: each
  // such surrogate is replaced by U+FFFD, reported (Python joins split pairs the same way, then does this).
  for (const path of deepestLastFirst(lonePaths(data))) {
    data = replaced(data, path, (valueAt(data, path) as string).replace(LONE_SURROGATES, "\ufffd")) as Obj;
    const at = path[0] === "content" && typeof path[1] === "number" ? origins[path[1]]! : reply.origin;
    st?.add({ pointer: `/${at}`, rule: "lone-surrogate", message: `the reduced message's ${pointerOf(path)} holds a lone UTF-16 surrogate (not encodable as UTF-8): replaced by U+FFFD` });
  }
  const problems = schemaProblems(checkMsg, data);
  return canonicalMessage((problems.length ? salvage(data, problems, origins, reply.origin, st) : data) as Msg);
}

const LONE_SURROGATES = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Paths of the string values holding a lone surrogate (object keys are left to the schema check). Each node's path
 * is a link to its parent's, spelled out only for such a string (a copy per node made the walk quadratic in depth). */
function lonePaths(data: Obj): (string | number)[][] {
  type Path = { key: string | number; up: Path } | null;
  const out: (string | number)[][] = [];
  const stack: [Json, Path][] = [[data, null]];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (Array.isArray(node)) node.forEach((child, i) => stack.push([child, { key: i, up: path }]));
    else if (isObject(node)) {
      for (const [key, child] of Object.entries(node)) stack.push([child, { key, up: path }]);
    } else if (typeof node === "string" && hasLoneSurrogate(node)) {
      const keys: (string | number)[] = [];
      for (let p = path; p; p = p.up) keys.push(p.key);
      out.push(keys.reverse());
    }
  }
  return out;
}

function valueAt(node: Json, path: (string | number)[]): Json {
  for (const key of path) node = (node as Record<string | number, Json>)[key]!;
  return node;
}

/** A copy of `node` with `value` at `path` (only the containers on the path are copied). */
function replaced(node: Json, path: (string | number)[], value: Json): Json {
  if (!path.length) return value;
  const [head, ...rest] = path;
  if (Array.isArray(node) && typeof head === "number") {
    const items = [...node];
    items[head] = replaced(node[head], rest, value);
    return items;
  }
  if (isObject(node)) {
    const copy: Obj = { ...node };
    setOwn(copy, String(head), replaced(node[String(head)], rest, value));
    return copy;
  }
  return node;
}

// ---- JSON pointers: leaving out the values a schema rejected (copy-on-write) ------------------------------


/** A JSON pointer's tokens: a plain decimal number (not "01") is an array index, anything else a key. */
function tokens(pointer: string): (string | number)[] {
  return pointer.split("/").slice(1).map((raw) => {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    return /^(0|[1-9][0-9]{0,17})$/.test(token) ? Number(token) : token;
  });
}

/** A copy of `node` without the value at `path` (only the containers on the path are copied); `node`
 * itself when there is nothing there. */
function without(node: Json, path: (string | number)[]): Json {
  const [head, ...rest] = path;
  if (isObject(node)) {
    const key = String(head);
    if (!Object.hasOwn(node, key)) return node;
    const copy: Obj = { ...node };
    if (rest.length) setOwn(copy, key, without(node[key], rest));
    else delete copy[key];
    return copy;
  }
  if (Array.isArray(node) && typeof head === "number" && head < node.length) {
    const items = [...node];
    if (rest.length) items[head] = without(node[head], rest);
    else items.splice(head, 1);
    return items;
  }
  return node; // already removed with its parent
}

/** Paths in the order to remove them: later items before earlier ones, children before parents. */
function deepestLastFirst(paths: (string | number)[][]): (string | number)[][] {
  const cmp = (a: (string | number)[], b: (string | number)[]): number => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const x = a[i]!, y = b[i]!;
      if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
      const c = typeof x === "number" ? x - (y as number) : compareCodePoints(x, y as string);
      if (c) return c;
    }
    return a.length - b.length;
  };
  return [...paths].sort((a, b) => cmp(b, a));
}

// ---- salvage --------------------------------------------------------------------------------------------

const entry = (p: SchemaProblem): string => `${p.pointer} [${p.rule}]`;

/** Keep every block, metadata key and field that is valid on its own; report the rest (in the reducer's
 * problems when closing, one per part left out or pruned, and always in metadata agentmsg_reduce_errors:
 * every schema problem of those parts as "<pointer in the message> [<rule>]", sorted by code point, at
 * most 20, so the text is the same in every runtime). */
function salvage(data: Obj, failures: SchemaProblem[], origins: number[], origin: number, st?: State): Obj {
  const found: Problem[] = [];
  const entries = new Set<string>();
  const drop = (at: number, where: string, problems: SchemaProblem[], what: string): void => {
    for (const p of problems) entries.add(`${where}${entry(p)}`);
    const first = problems[0] ?? { pointer: "", rule: "schema", message: "invalid" };
    found.push({ pointer: `/${at}`, rule: first.rule, message: `the reduced message's ${where}${first.pointer} is invalid (${first.message}): ${what}` });
  };
  const alone = (key: string, value: Json): SchemaProblem[] => schemaProblems(checkMsg, { id: "x", role: "ASSISTANT", content: [], [key]: value });

  // Block `j` without the values `problems` name (pointers within it), when what is left is valid, or null: said
  // either way (value or block left out).
  const pruned = (block: Json, j: number, problems: SchemaProblem[]): Json | null => {
    let out = block;
    for (const path of deepestLastFirst(problems.filter((p) => p.pointer).map((p) => tokens(p.pointer)))) out = without(out, path);
    if (out !== block && !schemaProblems(checkBlock, out).length) {
      drop(origins[j]!, `/content/${j}`, problems, "value left out");
      return out;
    }
    drop(origins[j]!, `/content/${j}`, problems, "block left out");
    return null;
  };
  const content: Json[] = [];
  const kept: number[] = []; // (the index in data.content of each block kept)
  (data.content as Json[]).forEach((block, j) => {
    const problems = schemaProblems(checkBlock, block);
    // (a block the schema rejects: the values it names left out, the block kept when what is left is valid)
    const part = problems.length ? pruned(block, j, problems) : block;
    if (part !== null) {
      content.push(part);
      kept.push(j);
    }
  });
  const metadata: Obj = {};
  for (const [key, value] of Object.entries(data.metadata as Obj)) {
    const problems = alone("metadata", { [key]: value });
    if (problems.length) drop(origin, "", problems, `metadata key ${pythonRepr(key)} left out`);
    else setOwn(metadata, key, value);
  }
  const fixed: Obj = { ...data, content, metadata };
  for (const key of ["usage", "timestamp", "name"]) {
    const problems = alone(key, data[key]);
    if (problems.length) {
      drop(origin, "", problems, `${key} left out`);
      fixed[key] = null;
    }
  }
  // Said of the whole message (a rule across parts): it keeps its text and thinking blocks only.
  const whole = (problems: SchemaProblem[], what = ""): void => {
    for (const p of problems) {
      found.push({ pointer: `/${origin}`, rule: p.rule, message: `the reduced message: ${p.message}${what}` });
      entries.add(entry(p));
    }
    fixed.content = (fixed.content as Json[]).filter((b) => isObject(b) && (b.type === "text" || b.type === "thinking"));
  };
  let saidWhole = !found.length;
  if (saidWhole) whole(failures); // nothing singled out: a rule across parts; keep the text at least
  const built = (): SchemaProblem[] => {
    fixed.metadata = { ...metadata, agentmsg_reduce_errors: [...entries].sort(compareCodePoints).slice(0, MAX_REDUCE_ERRORS) };
    return schemaProblems(checkMsg, fixed);
  };
  let last = built();
  if (last.length && !saidWhole) {
    // The parts valid alone break a rule together (a block valid alone, nested too deep inside the message): the
    // values inside a block the message's check names are left out too, as above (the block when what is left is
    // invalid); what else it names is said of the whole message, which keeps its text and thinking.
    const inside = new Map<number, SchemaProblem[]>();
    const rest: SchemaProblem[] = [];
    for (const p of last) {
      const path = tokens(p.pointer);
      const at = path[1];
      if (path.length > 2 && path[0] === "content" && typeof at === "number" && at < kept.length) {
        inside.set(at, [...(inside.get(at) ?? []), { ...p, pointer: pointerOf(path.slice(2)) }]);
      } else rest.push(p);
    }
    fixed.content = (fixed.content as Json[])
      .map((block, i) => (inside.has(i) ? pruned(block, kept[i]!, inside.get(i)!) : block))
      .filter((block) => block !== null);
    if (rest.length) {
      whole(rest, TEXT_ONLY);
      saidWhole = true;
    }
    last = built();
  }
  if (last.length && !saidWhole) {
    // (the check names one of several values too deep: said of the whole)
    whole(last, TEXT_ONLY);
    last = built();
  }
  let out: Obj = fixed;
  if (last.length) {
    // The last resorts: the message without its blocks (each other part was valid alone), then of its id, name and
    // timestamp only; each says why and what it left out.
    for (const p of last) entries.add(entry(p));
    const errors = { agentmsg_reduce_errors: [...entries].sort(compareCodePoints).slice(0, MAX_REDUCE_ERRORS) };
    const bare: Obj = {
      id: typeof fixed.id === "string" && fixed.id ? fixed.id : `msg-${origin}`,
      name: fixed.name ?? null,
      role: "ASSISTANT",
      content: [],
      metadata: errors,
      timestamp: fixed.timestamp ?? null,
    };
    const blockless: Obj = { ...bare, metadata: { ...metadata, ...errors }, usage: fixed.usage ?? null };
    const fits = !schemaProblems(checkMsg, blockless).length;
    whole(last, fits ? ": its blocks left out" : ": its content, metadata and usage left out");
    out = fits ? blockless : bare;
  }
  if (st) for (const p of found) st.add(p);
  return out;
}

/** What salvage says it did when parts valid alone fail together (_build.py `_TEXT_ONLY`). */
const TEXT_ONLY = ": its blocks but text and thinking left out";
