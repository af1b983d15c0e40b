// Legacy keys (agentmsg/_codec/legacy.py, rule for rule): the shapes of AgentScope's seed documents read in their
// current form, each with a note (rule `legacy-key`, the key's pointer), never silently emptied. The reducer maps
// an event before anything else looks at it; strict mode refuses the first.
//
//   MODEL_CALL_END          inputTokens, outputTokens, ... on the event    -> usage.<key>
//   DATA_BLOCK_DELTA        data                                           -> delta
//   TOOL_RESULT_DATA_DELTA  data (base64 text), url, mediaType             -> data: a data block of that source
//   EXTERNAL_EXECUTION_RESULT toolResults: tool_result result / toolUseId, tool_use arguments -> output, id, input;
//                           AgentScope Python's text output and 2.x tool_call blocks -> [text block], tool_use
//   REQUIRE_USER_CONFIRM, REQUIRE_EXTERNAL_EXECUTION toolCalls, USER_CONFIRM_RESULT confirmResults[i].toolCall,
//   AGENT_RESULT result (a message): read as blocks and messages are
//   a message AgentScope Python wrote (AGENT_RESULT result with a lowercase role): the role uppercase (a "system"
//                           holding tool results is TOOL), 2.x created_at as timestamp, usage snake-case keys in
//                           camel case, structured_output / finished_reason into metadata, finished_at / error kept,
//                           2.x block keys (thinking signature, URL source media_type, ...); text content and null
//                           metadata in any message
//
// When the current key is there too: the same value, the legacy key is dropped (said); another value, it stays as
// an unknown key (said). A legacy value of no shape that maps stays as an unknown key (said). The input is never
// changed: a mapped object is a copy.
import { shapes } from "@agentmsg/schema/compiled";
import { MAX_DEPTH, deeperThan, jsonType, pointerOf, readJson } from "./json.js";
import { isObject, setOwn } from "./state.js";
import type { Json, Obj } from "./state.js";

export const RULE = "legacy-key";
const OCTETS = "application/octet-stream";
/** Every key the usage schema declares: a MODEL_CALL_END may carry any of them on itself. */
const USAGE_KEYS: readonly string[] = shapes.ChatUsage!.map((p) => p.key);
/** The event types that may hold a legacy key (anything else is never looked at). */
export const LEGACY_EVENT_TYPES: ReadonlySet<string> = new Set([
  "MODEL_CALL_END",
  "DATA_BLOCK_DELTA",
  "TOOL_RESULT_DATA_DELTA",
  "EXTERNAL_EXECUTION_RESULT",
  "REQUIRE_USER_CONFIRM",
  "REQUIRE_EXTERNAL_EXECUTION",
  "USER_CONFIRM_RESULT",
  "AGENT_RESULT",
]);

export interface Note {
  pointer: string;
  rule: string;
  message: string;
}

/** Whether two JSON values are the same value (a number is no boolean). Pair by pair, without recursion: a value
 * nested deeper than the stack (an event given as objects, once read before its depth was checked) threw a
 * RangeError out of the reducer. */
export function same(a: Json, b: Json): boolean {
  const pairs: [Json, Json][] = [[a, b]];
  for (let pair = pairs.pop(); pair !== undefined; pair = pairs.pop()) {
    const [x, y] = pair;
    if (Array.isArray(x) || Array.isArray(y)) {
      if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pairs.push([x[i], y[i]]);
    } else if (isObject(x) || isObject(y)) {
      if (!isObject(x) || !isObject(y)) return false;
      const keys = Object.keys(x);
      if (keys.length !== Object.keys(y).length) return false;
      for (const k of keys) {
        if (!Object.hasOwn(y, k)) return false;
        pairs.push([x[k], y[k]]);
      }
    } else if (x !== y) return false;
  }
  return true;
}

const has = (o: Obj, k: string): boolean => Object.hasOwn(o, k);
const get = (o: Obj, k: string): Json => (Object.hasOwn(o, k) ? o[k] : undefined);
const empty = (v: Json): boolean => v === undefined || v === null || (Array.isArray(v) ? v.length === 0 : isObject(v) && Object.keys(v).length === 0);
const typeOf = (v: Json): string => (isObject(v) ? "object" : jsonType(v));
const q = (s: string): string => `'${s}'`;

function without(o: Obj, ...keys: string[]): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(o)) if (!keys.includes(k)) setOwn(out, k, v);
  return out;
}

function note(notes: Note[], pointer: string, message: string): void {
  notes.push({ pointer, rule: RULE, message });
}

function unread(notes: Note[], here: string, key: string, value: Json, wanted: string): void {
  note(notes, here, `legacy key ${q(key)} (AgentScope's seed documents) is a JSON ${typeOf(value)}, not ${wanted}: kept as an unknown key`);
}

/** `obj` with legacy key `old` read as `key` = `value`, unless `key` holds something already. */
function move(obj: Obj, old: string, key: string, value: Json, at: string, notes: Note[], what: string): Obj {
  const here = at + pointerOf([old]);
  const have = get(obj, key);
  if (has(obj, key) && !empty(have)) {
    if (same(have, value)) {
      note(notes, here, `legacy key ${q(old)} (AgentScope's seed documents): dropped, ${q(key)} holds the same`);
      return without(obj, old);
    }
    note(notes, here, `legacy key ${q(old)} (AgentScope's seed documents): kept as an unknown key, ${q(key)} is set too, to something else`);
    return obj;
  }
  const out = without(obj, old);
  setOwn(out, key, value);
  note(notes, here, `legacy key ${q(old)} (AgentScope's seed documents): read as ${q(key)}${what}`);
  return out;
}

/** A block whose legacy keys nest past MAX_DEPTH in their current form (legacy.py `block`'s SizeLimitError): rule
 * `max-depth` at `pointer`, where the part that crosses the limit was read. The reducer skips the event. */
export class TooDeep extends Error {
  constructor(public pointer: string) {
    super(`nested deeper than ${MAX_DEPTH} levels (limits.max_depth)`);
    this.name = "TooDeep";
  }
}

/** A content block with its legacy keys, and those of the blocks it holds, in their current form (legacy.py
 * `block`; `python`: in a message AgentScope Python wrote, whose 2.x block keys are read too). A tool result's
 * output blocks are read with an explicit stack, not by recursion: a tool result nested in a tool result's output
 * thousands deep (an event given as objects, once read before its depth was checked) would overflow the stack.
 * The notes come in Python's order: a block's own, then those of its output blocks, in order.
 *
 * Each frame is a tool result and its output list, two levels: more frames than half MAX_DEPTH throw
 * {@link TooDeep} (as legacy.py `block` raises SizeLimitError, at the same pointer), before the notes, whose
 * pointers have a step per frame, grow quadratic in its depth: a legacy `result` object is one level where the
 * `output` it is read as is two, so the readers' depth check, made first, lets a chain of them by. */
export function block(data: Json, notes: Note[], at: string, python = false): Json {
  interface Frame {
    out: Obj;
    output: Json[];
    where: string[] | null;
    at: string;
    mapped: Json[];
  }
  const stack: Frame[] = [];
  let done: Json = ownKeys(data, notes, at, python, stack);
  const frames = Math.floor(MAX_DEPTH / 2);
  while (stack.length) {
    if (stack.length > frames) throw new TooDeep(pastLimit());
    const top = stack[stack.length - 1]!;
    if (top.mapped.length < top.output.length) {
      const i = top.mapped.length;
      const child = ownKeys(top.output[i], notes, top.where !== null ? top.where[i]! : `${top.at}/output/${i}`, python, stack);
      if (stack[stack.length - 1] === top) top.mapped.push(child); // else: a frame of its own, done below
      continue;
    }
    stack.pop();
    done = top.mapped.some((m, i) => m !== top.output[i]) ? { ...top.out, output: top.mapped } : top.out;
    if (stack.length) stack[stack.length - 1]!.mapped.push(done);
  }
  return done;

  /** Where the tool results on the stack (each in the output of the one before; the first read at `at`, as deep as
   * its pointer's steps) first cross MAX_DEPTH as they are read, named where that was read (legacy.py
   * `_past_limit`): a tool result (two levels below the one holding it) or its output, one level below it (its
   * `result` where it was read from that key). */
  function pastLimit(): string {
    const steps = MAX_DEPTH - (at.split("/").length - 1); // (levels past the first block to the one past)
    const [below, output] = [Math.floor(steps / 2), ((steps % 2) + 2) % 2];
    const top = stack[Math.min(below, stack.length - 1)]!;
    if (!output) return top.at;
    return top.at + (top.where === null ? "/output" : "/result");
  }

  /** One block's own legacy keys read (not its output's): the block as read, or, when it is a tool result with
   * output blocks, a frame pushed on `frames` for them (the block as read is then the frame's, once they are). */
  function ownKeys(data: Json, notes: Note[], at: string, python: boolean, frames: Frame[]): Json {
    if (!isObject(data)) return data;
    if (get(data, "type") === "tool_call") data = toolCall(data, notes, at);
    if (python) data = pythonBlock(data, notes, at);
    const kind = get(data, "type");
    if (kind === "tool_use" && has(data, "arguments")) return toolUse(data, notes, at);
    if (kind !== "tool_result") return data;
    let out = data;
    const text = get(out, "output");
    if (typeof text === "string") {
      out = { ...out, output: [{ type: "text", text }] };
      note(notes, `${at}/output`, "tool result output is text (AgentScope Python): read as a list of one text block");
    }
    if (has(out, "toolUseId")) {
      const value = out.toolUseId;
      if (typeof value !== "string") unread(notes, `${at}/toolUseId`, "toolUseId", value, "a string");
      else out = move(out, "toolUseId", "id", value, at, notes, " (the id of the call this is the result of)");
    }
    let where: string[] | null = null;
    if (has(out, "result")) [out, where] = result(out, notes, at);
    const output = get(out, "output");
    if (!Array.isArray(output) || output.length === 0) return out;
    frames.push({ out, output, where, at, mapped: [] });
    return out;
  }
}

const PY = "AgentScope Python";
const PY2 = "AgentScope Python 2.x";
const PYTHON_ROLES: ReadonlySet<Json> = new Set(["user", "assistant", "system"]);
/** The message keys of 2.x agentmsg's message lacks (`usage` is read for its snake-case keys). */
const PY_MSG_KEYS = ["created_at", "finished_at", "finished_reason", "structured_output", "error", "usage"] as const;
/** 2.x block keys with no home in agentmsg's block of that type (besides `created_at` and `finished_at`). */
const PY_BLOCK_KEYS: ReadonlyMap<string, readonly string[]> = new Map([
  ["text", ["id"]],
  ["thinking", ["id"]],
  ["tool_use", ["suggested_rules"]],
]);
const PY_USAGE: ReadonlyMap<string, string> = new Map([
  ["input_tokens", "inputTokens"],
  ["output_tokens", "outputTokens"],
  ["cache_input_tokens", "cachedTokens"],
  ["cache_creation_input_tokens", "cacheCreationInputTokens"],
]);
/** 2.x `finished_reason` values (`ReplyFinishedReason`) with a GenerateReason; `error` has none. */
const PY_REASONS: ReadonlyMap<string, string> = new Map([
  ["completed", "MODEL_STOP"],
  ["interrupted", "INTERRUPTED"],
  ["exceed_max_iters", "MAX_ITERATIONS"],
]);
/** 2.x's `created_at`: `datetime.now().isoformat()`, no zone. */
const NAIVE_ISO = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?$/;
// The timestamps agentmsg reads (agentmsg/_codec/timestamps.py parse_timestamp): Java's form (a fraction of 1-9
// digits), or RFC 3339 with a zone (a fraction of any length).
const JAVA_STAMP = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$/;
const RFC3339_STAMP = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:[Zz]|([+-])(\d\d):(\d\d))$/;
const MONTH_DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** Python's str.strip(): its whitespace (str.isspace), which is not JavaScript's trim() (U+001C-U+001F and U+0085
 * are, U+FEFF is not). */
const PY_STRIP = /^[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** Whether `value` is a timestamp agentmsg reads, as parse_timestamp decides: a real date and time (year 1 on;
 * second 60, a leap second, only in the minute that is 23:59 UTC, and not the last of 9999), an offset within 23:59. */
export function readsAsTimestamp(value: string): boolean {
  const text = value.replace(PY_STRIP, "");
  let m = JAVA_STAMP.exec(text);
  let offset = 0; // minutes east of UTC (Java's form is read as UTC)
  if (m === null) {
    m = RFC3339_STAMP.exec(text);
    if (m !== null && m[8] !== undefined) {
      if (Number(m[9]) > 23 || Number(m[10]) > 59) return false;
      offset = (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10]));
    }
  }
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : MONTH_DAYS[month]!)) return false;
  if (hour > 23 || minute > 59 || second > 60) return false;
  if (second < 60) return true;
  // a leap second falls in the minute that is 23:59 UTC, and is the next minute's first instant: after
  // 9999-12-31 23:59 there is none
  if ((((hour * 60 + minute - offset) % 1440) + 1440) % 1440 !== 23 * 60 + 59) return false;
  return !(year === 9999 && month === 12 && day === 31 && hour === 23 && minute === 59);
}

/** The keys of a block AgentScope Python wrote that agentmsg's block lacks (legacy.py `_python_block`, rule for
 * rule): mapped where there is a home, null ones dropped, the rest kept as unknown keys; each said. */
function pythonBlock(data: Obj, notes: Note[], at: string): Obj {
  const kind = get(data, "type");
  let out = data;
  const own = typeof kind === "string" ? (PY_BLOCK_KEYS.get(kind) ?? []) : []; // (a type that is no string: the schema says)
  for (const key of [...own, "created_at", "finished_at"]) {
    if (!has(data, key)) continue;
    const here = `${at}/${key}`;
    if (data[key] === null) {
      out = without(out, key);
      note(notes, here, `${PY} block key ${q(key)} is null: dropped, nothing to read`);
    } else note(notes, here, `${PY} block key ${q(key)}: kept as an unknown key (agentmsg's block has no home for it)`);
  }
  if (kind === "thinking") out = thinkingExtras(out, notes, at);
  else if (kind === "tool_use" && typeof get(out, "raw_input") === "string") out = move(out, "raw_input", "content", out.raw_input, at, notes, " (the raw arguments)");
  else if (kind === "data" || kind === "image" || kind === "audio" || kind === "video") {
    if (has(out, "name") && out.name === null) {
      out = without(out, "name");
      note(notes, `${at}/name`, `${PY} block key 'name' is null: dropped, nothing to read`);
    }
    const source = get(out, "source");
    if (isObject(source) && get(source, "type") === "url" && has(source, "media_type")) {
      const moved = move(source, "media_type", "mime_type", source.media_type, `${at}/source`, notes, "");
      if (moved !== source) out = { ...out, source: moved };
    }
  }
  return out;
}

/** 2.x's Anthropic extras of a thinking block into its metadata: `signature`, and `redacted_thinking_data` as
 * `redactedData` with `redacted` true. */
function thinkingExtras(data: Obj, notes: Note[], at: string): Obj {
  const meta = get(data, "metadata");
  if (!has(data, "signature") && !has(data, "redacted_thinking_data")) return data;
  if (meta !== undefined && meta !== null && !isObject(meta)) return data; // the schema reports the metadata
  const merged: Obj = isObject(meta) ? { ...meta } : {};
  let out: Obj = { ...data };
  for (const [key, target] of [["signature", "signature"], ["redacted_thinking_data", "redactedData"]] as const) {
    if (!has(data, key)) continue;
    const value = data[key];
    const here = `${at}/${key}`;
    if (typeof value !== "string" || (has(merged, target) && merged[target] !== value)) {
      note(notes, here, `${PY2} thinking key ${q(key)}: kept as an unknown key, metadata cannot take it`);
      continue;
    }
    out = without(out, key);
    setOwn(merged, target, value);
    const extra = key === "redacted_thinking_data" ? " and metadata redacted as true" : "";
    if (extra) merged.redacted = true;
    note(notes, here, `${PY2} thinking key ${q(key)}: read as metadata ${target}${extra}`);
  }
  out.metadata = merged;
  return out;
}

/** AgentScope Python 2.x's `tool_call` block as a `tool_use` block (legacy.py `_tool_call`, rule for rule). */
function toolCall(data: Obj, notes: Note[], at: string): Obj {
  const out: Obj = { ...data, type: "tool_use" };
  note(notes, `${at}/type`, "block type 'tool_call' (AgentScope Python 2.x): read as 'tool_use'");
  const args = get(data, "input");
  if (typeof args !== "string") return out;
  const content = get(data, "content");
  if (!empty(content) && content !== args) {
    const moved = without(out, "input");
    moved.arguments = args;
    return toolUse(moved, notes, at);
  }
  const error = readArguments(out, args);
  let how = "its JSON object as 'input'";
  if (error !== null) how = `'input' {} (${error}: metadata argumentsError says so)`;
  note(notes, `${at}/input`, `tool call input is text (AgentScope Python 2.x): read as 'content' (the raw arguments) and ${how}`);
  return out;
}

// A tool call's arguments text read into `out` as the reducer reads it (build.ts toolUse: the same texts in every
// runtime): the text as `content`, its JSON object as `input` ({} and metadata argumentsError when it is none).
// Returns that error, or null.
function readArguments(out: Obj, args: string): string | null {
  let parsed: Json = {};
  let error: string | null = null;
  if (args !== "") {
    const value = readJson(args);
    error = value === undefined ? "arguments are not valid JSON" : isObject(value) ? null : `arguments are JSON but not an object: ${jsonType(value)}`;
    if (error === null) parsed = value;
  }
  out.input = parsed;
  out.content = args;
  if (error !== null) {
    const meta = get(out, "metadata");
    out.metadata = { ...(isObject(meta) ? meta : {}), argumentsError: error };
  }
  return error;
}

function toolUse(data: Obj, notes: Note[], at: string): Obj {
  const args = data.arguments;
  const here = `${at}/arguments`;
  if (args === null) {
    note(notes, here, "legacy key 'arguments' (AgentScope's seed documents) is null: dropped, nothing to read");
    return without(data, "arguments");
  }
  if (isObject(args)) return move(data, "arguments", "input", args, at, notes, "");
  if (typeof args !== "string") {
    unread(notes, here, "arguments", args, "an object or text");
    return data;
  }
  const content = get(data, "content");
  if (!empty(get(data, "input")) || !(content === undefined || content === null || content === args)) return move(data, "arguments", "content", args, at, notes, "");
  const out = without(data, "arguments");
  const error = readArguments(out, args);
  let how = " (the raw arguments) and their JSON object as 'input'";
  if (error !== null) how = ` (the raw arguments; ${error}: 'input' is {} and metadata argumentsError says so)`;
  note(notes, here, `legacy key 'arguments' (AgentScope's seed documents) is text: read as 'content'${how}`);
  return out;
}

function result(data: Obj, notes: Note[], at: string): [Obj, string[] | null] {
  const value = data.result;
  const here = `${at}/result`;
  if (value === null) {
    note(notes, here, "legacy key 'result' (AgentScope's seed documents) is null: dropped, nothing to read");
    return [without(data, "result"), null];
  }
  let output: Json[];
  let where: string[];
  let what: string;
  if (isObject(value)) [output, where, what] = [[value], [here], " (a list of the one block)"];
  else if (Array.isArray(value)) [output, where, what] = [value, value.map((_, i) => `${here}/${i}`), ""];
  else if (typeof value === "string") [output, where, what] = [[{ type: "text", text: value }], [here], " (a list of one text block)"];
  else {
    unread(notes, here, "result", value, "a block, a list of blocks or text");
    return [data, null];
  }
  const out = move(data, "result", "output", output, at, notes, what);
  return [out, get(out, "output") === output ? where : null];
}

/** An agent event with its legacy keys in their current form; `data` itself when it has none, or when it is nested
 * deeper than MAX_DEPTH: such an event is not read, the reducer refuses it (rule `max-depth`), as legacy.py `event`;
 * throws {@link TooDeep} when its legacy keys nest past MAX_DEPTH read in their current form (as legacy.py raises).
 * Read, tool results nested N deep in tool results' output gave N notes (a `toolUseId` at each level) of pointers up
 * to N steps long: time and memory quadratic in the event's size. */
export function event(data: Obj, notes: Note[]): Obj {
  const kind = data.type;
  if (typeof kind !== "string" || !LEGACY_EVENT_TYPES.has(kind) || deeperThan(data)) return data;
  switch (kind) {
    case "MODEL_CALL_END":
      return flatUsage(data, notes);
    case "DATA_BLOCK_DELTA": {
      if (!has(data, "data")) return data;
      const value = data.data;
      if (typeof value !== "string") {
        unread(notes, "/data", "data", value, "base64 text");
        return data;
      }
      return move(data, "data", "delta", value, "", notes, " (the next base64 fragment)");
    }
    case "TOOL_RESULT_DATA_DELTA":
      return toolResultData(data, notes);
    case "AGENT_RESULT": {
      const result = get(data, "result");
      const mapped = message(result, notes, "/result");
      return mapped === result ? data : { ...data, result: mapped };
    }
    case "USER_CONFIRM_RESULT":
      return blocks(data, "confirmResults", notes, "toolCall");
    default:
      // EXTERNAL_EXECUTION_RESULT's toolResults; REQUIRE_USER_CONFIRM's and REQUIRE_EXTERNAL_EXECUTION's toolCalls
      return blocks(data, kind === "EXTERNAL_EXECUTION_RESULT" ? "toolResults" : "toolCalls", notes, null);
  }
}

/** A message with its legacy keys, and those of its blocks, in their current form; `data` itself when there are
 * none (legacy.py `message`). A message of AgentScope Python (a lowercase role) has its 1.x / 2.x keys read too. */
export function message(data: Json, notes: Note[], at: string): Json {
  if (!isObject(data)) return data;
  let out = data;
  const role = get(data, "role");
  const python = typeof role === "string" && PYTHON_ROLES.has(role);
  if (python) {
    const tool = role === "system" && holdsToolResults(get(out, "content"));
    out = pythonMessage(out, notes, at, tool ? "TOOL" : role.toUpperCase());
  }
  const content = get(out, "content");
  if (typeof content === "string") {
    out = { ...out, content: [{ type: "text", text: content }] };
    note(notes, `${at}/content`, `content is text (${PY}): read as a list of one text block`);
  } else if (Array.isArray(content)) {
    const mapped = content.map((b, i) => block(b, notes, `${at}/content/${i}`, python));
    if (mapped.some((m, i) => m !== content[i])) out = { ...out, content: mapped };
  }
  if (has(out, "metadata") && out.metadata === null) {
    out = without(out, "metadata");
    note(notes, `${at}/metadata`, `metadata is null (${PY}): dropped, read as {}`);
  }
  return out;
}

const holdsToolResults = (content: Json): boolean => Array.isArray(content) && content.some((b) => isObject(b) && get(b, "type") === "tool_result");

/** A message AgentScope Python wrote (1.x `Msg.to_dict()`, 2.x `Msg.model_dump()`) with its keys read in agentmsg's
 * form (legacy.py `_python_message`, rule for rule): the role uppercase; 2.x `created_at` as `timestamp` (Java's
 * form), `usage` keys in camel case, `structured_output` and `finished_reason` into metadata; keys with no home stay
 * unknown keys (said), null ones are dropped (said). */
function pythonMessage(data: Obj, notes: Note[], at: string, role: string): Obj {
  let out: Obj = { ...data, role };
  // AgentScope Python 1.x's ReAct agent records tool results in "system" messages
  const why = role === "TOOL" ? " (it holds tool results: a SYSTEM message holds text only, TOOL is the role of tool results)" : "";
  note(notes, `${at}/role`, `role ${q(data.role as string)} (${PY}): read as ${q(role)}${why}`);
  for (const key of PY_MSG_KEYS) {
    if (!has(out, key)) continue;
    const value = out[key];
    const here = `${at}/${key}`;
    if (key === "usage") out = pythonUsage(out, value, notes, here); // null is agentmsg's too
    else if (value === null) {
      out = without(out, key);
      note(notes, here, `${PY2} key ${q(key)} is null: dropped, nothing to read`);
    } else if (key === "created_at") out = createdAt(out, value, notes, here);
    else if (key === "structured_output" || key === "finished_reason") out = intoMetadata(out, key, value, notes, here);
    else note(notes, here, `${PY2} key ${q(key)}: kept as an unknown key (agentmsg has no home for it)`);
  }
  return out;
}

function createdAt(out: Obj, value: Json, notes: Note[], here: string): Obj {
  const stamp = typeof value === "string" && NAIVE_ISO.test(value) ? value.replace("T", " ") : value;
  const ok = typeof stamp === "string" && readsAsTimestamp(stamp);
  if (!ok || !empty(get(out, "timestamp"))) {
    const why = !ok ? "it is no timestamp agentmsg reads" : "'timestamp' is set too";
    note(notes, here, `${PY2} key 'created_at': kept as an unknown key, ${why}`);
    return out;
  }
  const read = without(out, "created_at");
  setOwn(read, "timestamp", stamp);
  const how = stamp !== value ? " (Java's form: the 'T' as a space, the fraction as given)" : "";
  note(notes, here, `${PY2} key 'created_at': read as 'timestamp'${how}`);
  return read;
}

function pythonUsage(out: Obj, value: Json, notes: Note[], here: string): Obj {
  if (!isObject(value) || !Object.keys(value).some((k) => PY_USAGE.has(k))) return out;
  const usage: Obj = {};
  for (const [k, v] of Object.entries(value)) setOwn(usage, PY_USAGE.get(k) ?? k, v);
  if (Object.keys(usage).length !== Object.keys(value).length) {
    // a key in both spellings: nothing is merged, the usage stays as it is
    note(notes, here, `${PY2} usage has a key in both spellings: not read (the schema says what is wrong)`);
    return out;
  }
  const said = [...PY_USAGE].filter(([k]) => has(value, k)).map(([k, v]) => `${q(k)} as ${q(v)}`).join(", ");
  note(notes, here, `${PY2} usage keys read in camel case: ${said}`);
  return { ...out, usage };
}

function intoMetadata(out: Obj, key: "structured_output" | "finished_reason", value: Json, notes: Note[], here: string): Obj {
  let metaKey: string;
  let metaValue: Json;
  if (key === "structured_output") [metaKey, metaValue] = ["_structured_output", isObject(value) ? value : undefined];
  else [metaKey, metaValue] = ["agentscope_generate_reason", typeof value === "string" ? PY_REASONS.get(value) : undefined];
  const ok = metaValue !== undefined;
  const meta = get(out, "metadata");
  if (!ok || (meta !== undefined && meta !== null && !isObject(meta))) {
    let why = key === "finished_reason" ? "no GenerateReason says it" : "it is no object";
    if (ok) why = "the metadata is no object";
    note(notes, here, `${PY2} key ${q(key)}: kept as an unknown key, ${why}`);
    return out;
  }
  const have = isObject(meta) ? get(meta, metaKey) : undefined;
  if (have !== undefined && have !== null && !same(have, metaValue)) {
    note(notes, here, `${PY2} key ${q(key)}: kept as an unknown key, metadata ${metaKey} is set to something else`);
    return out;
  }
  const read = without(out, key);
  const merged: Obj = isObject(meta) ? { ...meta } : {};
  setOwn(merged, metaKey, metaValue);
  read.metadata = merged;
  const what = key === "finished_reason" ? ` (${q(value as string)} is ${q(metaValue as string)})` : "";
  note(notes, here, `${PY2} key ${q(key)}: read as metadata ${metaKey}${what}`);
  return read;
}

/** `data` with the blocks of its list `key` read as blocks are (`inner`: each item is an object holding the block
 * there, as a USER_CONFIRM_RESULT's confirmResults hold toolCall); `data` itself when none changes. */
function blocks(data: Obj, key: string, notes: Note[], inner: string | null): Obj {
  const items = get(data, key);
  if (!Array.isArray(items)) return data;
  const mapped = items.map((item, i): Json => {
    const here = `/${key}/${i}`;
    if (inner === null) return block(item, notes, here);
    if (!isObject(item) || !has(item, inner)) return item;
    const b = block(item[inner], notes, `${here}/${inner}`);
    return b === item[inner] ? item : { ...item, [inner]: b };
  });
  return mapped.some((m, i) => m !== items[i]) ? { ...data, [key]: mapped } : data;
}

function flatUsage(data: Obj, notes: Note[]): Obj {
  const keys = USAGE_KEYS.filter((k) => has(data, k));
  if (!keys.length) return data;
  const usage = get(data, "usage");
  if (usage !== undefined && usage !== null && !isObject(usage)) {
    for (const k of keys) note(notes, `/${k}`, `legacy key ${q(k)} (AgentScope's seed documents) on the event: not read, 'usage' is no object (it stays an unknown key of the event)`);
    return data;
  }
  const merged: Obj = isObject(usage) ? { ...usage } : {};
  let out: Obj = { ...data };
  for (const k of keys) {
    const value = data[k];
    if (has(merged, k)) {
      if (same(merged[k], value)) {
        out = without(out, k);
        note(notes, `/${k}`, `legacy key ${q(k)} on the event: dropped, usage.${k} holds the same`);
      } else note(notes, `/${k}`, `legacy key ${q(k)} on the event: not read, usage.${k} is set too, to something else (it stays an unknown key of the event)`);
      continue;
    }
    setOwn(merged, k, value);
    out = without(out, k);
    note(notes, `/${k}`, `legacy key ${q(k)} on the event (AgentScope's seed documents: MODEL_CALL_END carries the counts): read as usage.${k}`);
  }
  if (Object.keys(merged).length) out.usage = merged;
  return out;
}

function toolResultData(data: Obj, notes: Note[]): Obj {
  const value = get(data, "data");
  const url = get(data, "url");
  const mediaType = get(data, "mediaType");
  if (typeof value !== "string" && !((value === undefined || value === null) && typeof url === "string" && url !== "")) return data; // a block (the current form), or nothing to read
  const known = typeof mediaType === "string" && mediaType !== "";
  let out = known ? without(data, "mediaType") : { ...data };
  let what: string;
  if (typeof value === "string") {
    // base64 text: what the seed's getData() returns; no MIME type said is application/octet-stream
    out.data = { type: "data", source: { type: "base64", media_type: known ? mediaType : OCTETS, data: value } };
    note(notes, "/data", "legacy key 'data' (AgentScope's seed documents: base64 text): read as 'data', a data block with a base64 source");
    if (has(data, "url")) note(notes, "/url", "legacy key 'url' (AgentScope's seed documents): not read, 'data' is (it stays an unknown key of the event)");
    what = "media_type";
  } else {
    out = without(out, "url");
    const source: Obj = { type: "url", url };
    if (known) source.mime_type = mediaType;
    out.data = { type: "data", source };
    note(notes, "/url", "legacy key 'url' (AgentScope's seed documents): read as 'data', a data block with a url source");
    what = "mime_type";
  }
  if (known) note(notes, "/mediaType", `legacy key 'mediaType' (AgentScope's seed documents): read as its source's ${what}`);
  else if (has(data, "mediaType")) unread(notes, "/mediaType", "mediaType", mediaType, "a MIME type");
  return out;
}
