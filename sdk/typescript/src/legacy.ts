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
//
// When the current key is there too: the same value, the legacy key is dropped (said); another value, it stays as
// an unknown key (said). A legacy value of no shape that maps stays as an unknown key (said). The input is never
// changed: a mapped object is a copy.
import { shapes } from "@agentmsg/schema/compiled";
import { jsonType, pointerOf, readJson } from "./json.js";
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
 * nested deeper than the stack (an event given as objects, which the depth limit refuses after this) threw a
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

/** A content block with its legacy keys, and those of the blocks it holds, in their current form. */
export function block(data: Json, notes: Note[], at: string): Json {
  if (!isObject(data)) return data;
  if (get(data, "type") === "tool_call") data = toolCall(data, notes, at);
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
  if (!Array.isArray(output)) return out;
  const mapped = output.map((b, i) => block(b, notes, where !== null ? where[i]! : `${at}/output/${i}`));
  return mapped.some((m, i) => m !== output[i]) ? { ...out, output: mapped } : out;
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

/** An agent event with its legacy keys in their current form; `data` itself when it has none. */
export function event(data: Obj, notes: Note[]): Obj {
  const kind = data.type;
  if (typeof kind !== "string" || !LEGACY_EVENT_TYPES.has(kind)) return data;
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

/** A message with the legacy keys of its blocks in their current form; `data` itself when there are none. */
export function message(data: Json, notes: Note[], at: string): Json {
  if (!isObject(data)) return data;
  const content = get(data, "content");
  if (!Array.isArray(content)) return data;
  const mapped = content.map((b, i) => block(b, notes, `${at}/content/${i}`));
  return mapped.some((m, i) => m !== content[i]) ? { ...data, content: mapped } : data;
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
