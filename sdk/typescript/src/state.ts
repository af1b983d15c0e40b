// What the reducer remembers (agentmsg/events/_state.py): blocks, tool calls and tool results being
// built, one reply, and the routing tables of the open ones. Every change to what is *open* goes
// through Reply's methods, which keep the tables in step.

import { bounded, boundedProblem } from "./notes.js";
import { pyRepr, pythonRepr, pythonType, shortRepr } from "./repr.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;
export type Obj = Record<string, Json>;
/** An id as a Map key, the way a Python dict tells ids apart (true and 1 are the same key there). */
export type Key = string | number | null;

export const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Python's `str(x)` of a JSON value (the Python reducer looks ids up and compares texts by it): a string as it
 * is, anything else its repr (`str` of a number, None, a bool, a list or a dict is its `repr`: `1.0`, `[1, 'a']`). */
export const pyStr = (v: unknown): string => (typeof v === "string" ? v : pyRepr(v));

/** A value for a problem message as Python's reducer quotes it (`short_repr`: its repr, at most 80 characters). */
export const short = (v: unknown): string => shortRepr(v, 80);

/** `o[k] = v` for a key that comes from the input: an own property even for "__proto__". */
export function setOwn(o: Obj, k: string, v: Json): void {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

/** `Object.assign(target, source)` as own properties: a `"__proto__"` key of parsed JSON (an own key there) stays a
 * key, where `Object.assign`'s assignment set the target's prototype (a carried `__proto__` made a decoded event
 * inherit `source`, and the reducer dropped it as a subagent's). */
export function assignOwn(target: Obj, source: Obj): Obj {
  for (const key of Object.keys(source)) setOwn(target, key, source[key] as Json);
  return target;
}

/** A malformed event: reported (rule `required` or `type`) and skipped, as Python's KeyError/TypeError (`error`:
 * the name of the Python exception, which the problem says as Python's reducer does). */
export class Malformed extends Error {
  constructor(
    public rule: "required" | "type",
    message: string,
    public error = "TypeError",
  ) {
    super(message);
  }
}

/** The value of a key the handler needs (a missing one is rule `required`; the message is the key's repr, as
 * Python's KeyError says it). */
export function req(e: Obj, key: string): Json {
  if (!Object.hasOwn(e, key)) throw new Malformed("required", pythonRepr(key), "KeyError");
  return e[key];
}

/** An id as a key (an object or array cannot be one: rule `type`). */
export function keyOf(v: Json): Key {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") return v;
  if (typeof v === "number") return v === 0 ? 0 : v; // -0 is 0
  if (typeof v === "boolean") return v ? 1 : 0;
  throw new Malformed("type", `unhashable type: '${pythonType(v)}'`);
}

export class Block {
  /** The text, thinking, arguments or base64 data received. */
  text = "";
  /** Whether any fragment (even an empty one) was received. */
  received = false;
  open = true;
  meta: Json = null;
  extra: Obj = {};
  /** A whole block (media delivered in one piece, a hint, an external execution result). */
  block: Json = null;
  name: Json = null;
  signature: string | null = null;
  redacted: string | null = null;
  /** Data blocks: '=' padding characters received (nothing may follow them). */
  pad = 0;
  /** kind: text | thinking | data | whole | tool_use | hint; origin: index of the event that started it. */
  constructor(public kind: string, public origin: number) {}
  add(s: string): void {
    this.text += s;
    this.received = true;
  }
}

export class ToolResult {
  output: Json[] = [];
  /** The text block being streamed. */
  text: string | null = null;
  open = true;
  state: Json = "running";
  meta: Obj = {};
  constructor(public id: Json, public name: string | null, public origin: number) {}
  flushText(): void {
    if (this.text !== null) {
      this.output.push({ type: "text", text: this.text });
      this.text = null;
    }
  }
  outputs(): Json[] {
    return this.text === null ? [...this.output] : [...this.output, { type: "text", text: this.text }];
  }
}

export const TEXT_DELTA = "TEXT_BLOCK_DELTA";
export const THINKING_DELTA = "THINKING_BLOCK_DELTA";
export const CALL_DELTA = "TOOL_CALL_DELTA";

/** One agent reply being reduced. byBlock: open text/thinking/data blocks; byCall: tool calls, open or
 * not (Java continues a call id within one model call); byResult: open tool results. texts, thinkings
 * and calls: the open blocks of that kind, where a plain delta goes. */
export class Reply {
  blocks: (Block | ToolResult)[] = [];
  byBlock = new Map<Key, Block>();
  byCall = new Map<Key, Block>();
  byResult = new Map<Key, ToolResult>();
  texts = new Map<Key, Block>();
  thinkings = new Map<Key, Block>();
  calls = new Map<Key, Block>();
  /** The keys of byBlock, calls and byResult set with a boolean id first (keyOf: `true` is the key 1, `false` 0),
   * and that id: Python's dict keeps the id a key was set with first (until it is deleted), and its messages
   * quote it (`True`, not `1`): {@link shown}. */
  #booleans = new Map<Map<Key, unknown>, Map<Key, boolean>>();
  msgId: Json = null;
  name: Json = null;
  timestamp: string | null = null;
  usage: Obj | null = null;
  reason: Json = null;
  meta: Obj = {};
  hitl: Json[] = [];
  /** AGENT_RESULT's message, and the index of the event that gave it. */
  result: Json = null;
  resultAt = -1;
  modelOpen = 0;
  finishReason: string | null = null;
  model: string | null = null;
  stopReason: string | null = null;
  refusal = false;
  errors: Obj[] = [];
  /** The producers' notes (CUSTOM agentmsg.problem / agentmsg.not-kept values): metadata agentmsg_notes. */
  notes: Obj[] = [];
  notesOmitted = 0;
  /** The message id when the stream names none: from the opening event's id, else its index. */
  readonly fallbackId: string;

  /** explicit: opened by AGENT_START; origin: index of the event that opened it; firstId: that event's id. */
  constructor(public explicit: boolean, public origin: number, firstId: unknown) {
    this.fallbackId = typeof firstId === "string" && firstId ? `msg-${firstId}` : `msg-${origin}`;
  }

  /** Where a plain delta of this type goes. */
  route(type: string): Map<Key, Block> | undefined {
    return type === TEXT_DELTA ? this.texts : type === THINKING_DELTA ? this.thinkings : type === CALL_DELTA ? this.calls : undefined;
  }

  openCount(): number {
    return this.byBlock.size + this.calls.size + this.byResult.size;
  }

  /** The id `key` of `table` (byBlock, calls or byResult) was set with, as Python's dict keeps and quotes it. */
  shown(table: Map<Key, unknown>, key: Key): Json {
    const id = this.#booleans.get(table)?.get(key);
    return id === undefined ? key : id;
  }

  #put<V>(table: Map<Key, V>, key: Key, raw: Json, value: V): void {
    if (typeof raw === "boolean" && !table.has(key)) {
      let ids = this.#booleans.get(table);
      if (ids === undefined) this.#booleans.set(table, (ids = new Map()));
      ids.set(key, raw);
    }
    table.set(key, value);
  }

  #delete(table: Map<Key, unknown>, key: Key): void {
    if (table.delete(key)) this.#booleans.get(table)?.delete(key);
  }

  /** Open block `b` under `id` (`keyOf(raw)`). */
  openBlock(id: Key, raw: Json, b: Block): void {
    this.#put(this.byBlock, id, raw, b);
    if (b.kind === "text") this.texts.set(id, b);
    else if (b.kind === "thinking") this.thinkings.set(id, b);
    this.blocks.push(b);
  }

  closeBlock(id: Key): void {
    const b = this.byBlock.get(id)!;
    this.#delete(this.byBlock, id);
    b.open = false;
    this.texts.delete(id);
    this.thinkings.delete(id);
  }

  /** (Re)open tool call `b` under `id` (`keyOf(raw)`). */
  openCall(id: Key, raw: Json, b: Block, isNew: boolean): void {
    b.open = true;
    this.#put(this.calls, id, raw, b);
    if (isNew) {
      this.byCall.set(id, b);
      this.blocks.push(b);
    }
  }

  closeCall(id: Key): void {
    this.byCall.get(id)!.open = false;
    this.#delete(this.calls, id);
  }

  openResult(t: ToolResult, id: Key): void {
    this.#put(this.byResult, id, t.id, t);
    this.blocks.push(t);
  }

  closeResult(id: Key): void {
    this.byResult.get(id)!.open = false;
    this.#delete(this.byResult, id);
  }

  /** [table, key] of the open block, tool call or tool result started first. */
  oldestOpen(): ["block" | "call" | "result", Key] {
    const firsts: [number, "block" | "call" | "result", Key][] = [];
    for (const [table, map, origin] of [
      ["block", this.byBlock, (k: Key) => this.byBlock.get(k)!.origin],
      ["call", this.calls, (k: Key) => this.byCall.get(k)!.origin],
      ["result", this.byResult, (k: Key) => this.byResult.get(k)!.origin],
    ] as const) {
      const first = map.keys().next();
      if (!first.done) firsts.push([origin(first.value), table, first.value]);
    }
    firsts.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    return [firsts[0]![1], firsts[0]![2]];
  }
}

/** A problem the tolerant rules fixed (or, in strict mode, the one that stopped the reducer). */
export interface Problem {
  /** `/<event index><pointer into the event>` */
  pointer: string;
  /** A JSON Schema keyword (`required`, `type`, `enum`, `pattern`, ...), an `x-rule`, or a reducer rule
   * (`order`, `max-open-blocks`, `json`, ...). */
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

/** The reducer's whole mutable state; handlers work on it. */
export class State {
  problems: Problem[] = [];
  /** Problems beyond maxProblems: counted, not kept. */
  omitted = 0;
  /** Events fed (including skipped ones and unreadable input): the next event's index. */
  count = 0;
  /** The messages of completed replies, and per completed reply its AGENT_RESULT message (or null). */
  done: Json[] = [];
  results: (Obj | null)[] = [];
  reply: Reply | null = null;
  /** The index of the AGENT_END that ended the last reply (null before any): between replies after it, an event
   * that would only open an empty reply is skipped (rule after-end). */
  ended: number | null = null;
  /** The id of the event being applied (names a reply it opens). */
  eventId: unknown = null;

  constructor(
    public strict: boolean,
    public defaultName: string | null,
    public maxOpen: number,
    public maxProblems: number | null,
  ) {}

  /** Record a problem with event `index` (strict mode: throw it), its message bounded as Python's Problem bounds it
   * (notes.ts `bounded`: 400 code points, its first 280 and last 80 around a count of those left out). */
  problem(index: number, pointer: string, rule: string, message: string): void {
    const p = { pointer: `/${index}${pointer}`, rule, message: bounded(message) };
    if (this.strict) throw new ReducerError([p]);
    this.add(p);
  }

  /** Keep problem `p` (its message bounded, as `problem`'s), or count it past `maxProblems`. */
  add(p: Problem): void {
    if (this.maxProblems !== null && this.problems.length >= this.maxProblems) this.omitted++;
    else this.problems.push(boundedProblem(p));
  }

  current(): Reply {
    return (this.reply ??= new Reply(false, this.count - 1, this.eventId));
  }
}

/** Python's `==` on JSON values (a boolean equals the number it stands for: True == 1; an object's keys in any
 * order). */
export function pyEqual(a: Json, b: Json): boolean {
  const scalar = (v: Json): boolean => typeof v === "number" || typeof v === "boolean";
  if (scalar(a) && scalar(b)) return Number(a) === Number(b);
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => pyEqual(x, b[i]));
  if (isObject(a) || isObject(b)) {
    if (!isObject(a) || !isObject(b)) return false;
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && pyEqual(a[k], b[k]));
  }
  return a === b;
}

/** Whether two JSON values are the same (Python's `agentmsg.ui._protocol.same_json`): a number by its value, never a
 * boolean; an object's keys in any order. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
  if (isObj(a) && isObj(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
  }
  return a === b;
}
