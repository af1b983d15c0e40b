// AG-UI 1.0 events -> agentmsg AgentEvents: the decoder of Python's agentmsg.ui.agui (AGUIDecoder), rule for rule,
// so that a page reads an AG-UI stream (agentmsg's endpoint with ?protocol=ag-ui, or any AG-UI producer) and
// reduces it with the one Reducer to the message Python reduces it to. The same events come out in both runtimes
// (ids `ag-ui-<n>`, `createdAt` from the last `timestamp` or the clock) and the same notes (pointer + rule; the
// sentences are each runtime's own): tests/jsclient/test_agui.py checks it on the same streams. docs/ag-ui.md has
// the mapping.

import { boundedProblem, cut, keepNote, quoted, room } from "./notes.js";
import { pointerOf, readJson } from "./json.js";
import { sameJson, setOwn } from "./state.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Obj = Record<string, Json>;

/** A note (`strict: false`) or the error (`strict: true`) about an AG-UI event: pointer `/<event index>/<key>`. */
export interface AGUIProblem {
  pointer: string;
  rule: string;
  message: string;
}

/** Thrown by a strict decoder at the first event that breaks AG-UI. */
export class AGUIError extends Error {
  readonly problems: AGUIProblem[];
  constructor(problems: AGUIProblem[]) {
    const kept = problems.map(boundedProblem); // (each message at most MESSAGE_MAX characters, as Python's)
    super(kept.map((p) => `${p.pointer}: ${p.message} [${p.rule}]`).join("; "));
    this.name = "AGUIError";
    this.problems = kept;
  }
}

export interface AGUIDecoderOptions {
  /** Throw an AGUIError at the first event that breaks AG-UI (default: a note, and the event is skipped). */
  strict?: boolean;
  /** `createdAt` of the events before any AG-UI event with a `timestamp` (default: now). */
  clock?: () => string;
}

/** The AG-UI CUSTOM event name of an AgentEvent agentmsg sent whole (its value: the event). */
export const AGUI_WRAPPED = "agentscope.event";
const CARRY = "agentmsg";
const ABSENT = "agentmsg.absent";
const IMPLICIT = "agentmsg.implicit";
const FOREIGN = "ag-ui.";

const STR = "string";
const ANY = "any";
const LIST = "array";
const OBJ = "object";

const REQUIRED: Record<string, Record<string, string>> = {
  RUN_STARTED: { threadId: STR, runId: STR },
  RUN_FINISHED: { threadId: STR, runId: STR },
  RUN_ERROR: { message: STR },
  STEP_STARTED: { stepName: STR },
  STEP_FINISHED: { stepName: STR },
  TEXT_MESSAGE_START: { messageId: STR },
  TEXT_MESSAGE_CONTENT: { messageId: STR, delta: STR },
  TEXT_MESSAGE_END: { messageId: STR },
  TEXT_MESSAGE_CHUNK: {},
  TOOL_CALL_START: { toolCallId: STR, toolCallName: STR },
  TOOL_CALL_ARGS: { toolCallId: STR, delta: STR },
  TOOL_CALL_END: { toolCallId: STR },
  TOOL_CALL_CHUNK: {},
  TOOL_CALL_RESULT: { messageId: STR, toolCallId: STR, content: ANY },
  REASONING_START: { messageId: STR },
  REASONING_END: { messageId: STR },
  REASONING_MESSAGE_START: { messageId: STR },
  REASONING_MESSAGE_CONTENT: { messageId: STR, delta: STR },
  REASONING_MESSAGE_END: { messageId: STR },
  REASONING_MESSAGE_CHUNK: {},
  REASONING_ENCRYPTED_VALUE: { subtype: STR, entityId: STR, encryptedValue: STR },
  STATE_SNAPSHOT: { snapshot: ANY },
  STATE_DELTA: { delta: LIST },
  MESSAGES_SNAPSHOT: { messages: LIST },
  ACTIVITY_SNAPSHOT: { messageId: STR, activityType: STR, content: OBJ },
  ACTIVITY_DELTA: { messageId: STR, activityType: STR, patch: LIST },
  RAW: { event: ANY },
  CUSTOM: { name: STR, value: ANY },
  SUBAGENT_STARTED: { subagentRunId: STR, name: STR },
  SUBAGENT_FINISHED: { subagentRunId: STR },
  SUBAGENT_ERROR: { subagentRunId: STR, message: STR },
  THINKING_START: {},
  THINKING_END: {},
  THINKING_TEXT_MESSAGE_START: {},
  THINKING_TEXT_MESSAGE_CONTENT: { delta: STR },
  THINKING_TEXT_MESSAGE_END: {},
};

const OPTIONAL: Record<string, string> = {
  role: STR,
  name: STR,
  parentMessageId: STR,
  code: STR,
  delta: STR,
  messageId: STR,
  toolCallId: STR,
  toolCallName: STR,
  metadata: OBJ,
  usage: LIST,
};

const STRUCTURAL = new Set(["type", "messageId", "toolCallId", "timestamp", "role", "delta"]);

const FOREIGN_TYPES = new Set([
  "STATE_SNAPSHOT",
  "STATE_DELTA",
  "MESSAGES_SNAPSHOT",
  "ACTIVITY_SNAPSHOT",
  "ACTIVITY_DELTA",
  "RAW",
  "SUBAGENT_STARTED",
  "SUBAGENT_FINISHED",
  "SUBAGENT_ERROR",
]);

const LEGACY: Record<string, string> = {
  THINKING_START: "REASONING_START",
  THINKING_END: "REASONING_END",
  THINKING_TEXT_MESSAGE_START: "REASONING_MESSAGE_START",
  THINKING_TEXT_MESSAGE_CONTENT: "REASONING_MESSAGE_CONTENT",
  THINKING_TEXT_MESSAGE_END: "REASONING_MESSAGE_END",
};

const CHUNK_KIND: Record<string, string> = { TEXT_MESSAGE_CHUNK: "text", TOOL_CALL_CHUNK: "tool", REASONING_MESSAGE_CHUNK: "reasoning" };

const KEPT: Record<string, Set<string>> = {
  RUN_STARTED: new Set(["threadId", "runId"]),
  RUN_FINISHED: new Set(["threadId", "runId", "usage", "outcome"]),
  RUN_ERROR: new Set(["message", "code"]),
  STEP_STARTED: new Set(["stepName"]),
  STEP_FINISHED: new Set(["stepName"]),
  TEXT_MESSAGE_START: new Set(),
  TEXT_MESSAGE_CONTENT: new Set(),
  TEXT_MESSAGE_END: new Set(),
  TEXT_MESSAGE_CHUNK: new Set(),
  TOOL_CALL_START: new Set(["toolCallName"]),
  TOOL_CALL_ARGS: new Set(),
  TOOL_CALL_END: new Set(),
  TOOL_CALL_CHUNK: new Set(["toolCallName"]),
  TOOL_CALL_RESULT: new Set(["content"]),
  REASONING_MESSAGE_START: new Set(),
  REASONING_MESSAGE_CONTENT: new Set(),
  REASONING_MESSAGE_END: new Set(),
  REASONING_MESSAGE_CHUNK: new Set(),
  REASONING_ENCRYPTED_VALUE: new Set(["subtype", "entityId", "encryptedValue"]),
  CUSTOM: new Set(["name", "value"]),
};

/** AG-UI TokenUsage key -> agentmsg usage key */
const USAGE_IN: Record<string, string> = {
  inputTokens: "inputTokens",
  outputTokens: "outputTokens",
  totalTokens: "totalTokens",
  cachedInputTokens: "cachedTokens",
  cacheWriteInputTokens: "cacheCreationInputTokens",
  reasoningTokens: "reasoningTokens",
};

/** AgentEvents whose `replyId` the AG-UI event itself says (`runId`, `stepName`): a carrier may set it only where the
 * encoder put a fallback in its place (the AgentEvent's was no non-empty string). Python's `_SAID_REPLY`. */
const SAID_REPLY = new Set(["AGENT_START", "AGENT_END", "MODEL_CALL_START", "MODEL_CALL_END"]);
const PLACEHOLDERS = new Set(["__fragment__", "__pending__"]); // AgentScope Java's tool-call names before the real one
const filled = (v: unknown): boolean => typeof v === "string" && v !== "";

/** Whether `visible` is the id the encoder made of `carried` for AG-UI: it, or it with `~<n>` (Python's `_renamed`). */
function renamed(visible: unknown, carried: unknown): boolean {
  if (typeof carried !== "string" || typeof visible !== "string") return false;
  const base = carried || "block";
  return visible === base || (visible.startsWith(base) && /^~[0-9]+$/.test(visible.slice(base.length)));
}

/** Whether a carrier may set `key` of a decoded `kind` event the decoder set to `visible` (Python's `_settable`):
 * what the decoder mints or takes from its context, a fallback the encoder wrote, an id it made unique; never what
 * the AG-UI event itself says. */
function settable(kind: string, key: string, carried: unknown, visible: unknown): boolean {
  if (key === "id" || key === "createdAt") return true;
  if (key === "replyId") return !SAID_REPLY.has(kind) || !filled(carried);
  if (key === "state") return kind === "TOOL_RESULT_END";
  if (key === "toolCallName") return kind === "TOOL_CALL_START" && (!filled(carried) || PLACEHOLDERS.has(carried as string));
  if (key === "toolCallId") return filled(carried) && renamed(visible, carried);
  if (key === "blockId") return (kind === "TEXT_BLOCK_START" || kind === "THINKING_BLOCK_START") && renamed(visible, carried);
  return false;
}

/** Whether a TOOL_CALL_END's carried `input` is what its call's arguments showed (`text`, read by the reducer's
 * rules as `parsed`): the same JSON value, or the very text the encoder wrote of it (what the reducer's reader
 * refuses: a lone surrogate); or no object, which the reducer never takes as an input (Python's `_shows`). */
function shows(carried: unknown, text: string, parsed: unknown): boolean {
  return !isObj(carried) || sameJson(carried, parsed) || JSON.stringify(carried) === text;
}

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);
const has = (o: Obj, k: string): boolean => Object.hasOwn(o, k);

function kindOk(value: unknown, want: string): boolean {
  if (want === STR) return typeof value === "string";
  if (want === LIST) return Array.isArray(value);
  if (want === OBJ) return isObj(value);
  return true;
}

const MAX_MS = 253402300799999; // 9999-12-31T23:59:59.999Z and 0001-01-01T00:00:00Z: what Python's datetime holds
const MIN_MS = -62135596800000;

/** Epoch milliseconds as a `createdAt`: UTC, `Z`, the milliseconds only when not 0 (Python's `_iso`; its year as
 * strftime's %Y writes it: no leading zeros); null: a time Python's datetime cannot hold. */
function iso(ms: number): string | null {
  if (ms > MAX_MS || ms < MIN_MS) return null;
  const d = new Date(ms);
  const pad = (n: number, w = 2): string => String(n).padStart(w, "0");
  const frac = ((ms % 1000) + 1000) % 1000;
  const text = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return frac ? `${text}.${pad(frac, 3)}Z` : `${text}Z`;
}

function nowIso(): string {
  const d = new Date().toISOString(); // ms precision; Python's clock writes microseconds
  return d.replace(/Z$/, "000Z");
}

/** The keys of an AG-UI content part, and of its source, that the block it becomes holds. */
const PART_KEPT = new Set(["type", "text", "source"]);
const SOURCE_KEPT = new Set(["type", "value", "mimeType"]);

/** An AG-UI content part as an agentmsg block (text, or a media block); null: not a part. */
function partIn(part: Json): Obj | null {
  if (!isObj(part)) return null;
  const kind = part.type;
  if (kind === "text" && typeof part.text === "string") return { type: "text", text: part.text };
  const source = part.source;
  if (!["image", "audio", "video", "document"].includes(kind) || !isObj(source)) return null;
  const ours = kind === "document" ? "data" : kind;
  const value = source.value;
  const mime = source.mimeType;
  if (typeof value !== "string") return null;
  if (source.type === "data") {
    return { type: ours, source: { type: "base64", media_type: mime || "application/octet-stream", data: value } };
  }
  if (source.type === "url" || source.type === "file") {
    const src: Obj = { type: "url", url: value };
    if (typeof mime === "string") src.mime_type = mime;
    return { type: ours, source: src };
  }
  return null;
}

/** AG-UI events -> AgentEvents, one stream (see agentmsg.ui.agui: the same rules). */
export class AGUIDecoder {
  readonly notes: AGUIProblem[] = [];
  readonly strict: boolean;
  #clock: () => string;
  #index = -1;
  #minted = 0;
  #created: string | null = null;
  #stamp: number | null = null; // the timestamp #created was made from
  #outside = false; // an event outside a run was said
  #said = new Set<string>();
  #run: string | null = null;
  #ours = false;
  #usageSeen = false;
  #step: string | null = null;
  #texts = new Map<string, Json>();
  #others = new Set<string>();
  #reasoning = new Map<string, Json>();
  #calls = new Map<string, string>();
  #knownCalls = new Map<string, Obj>();
  #args = new Map<string, string>(); // the open calls' argument text (never a key of the call's tool_use block)
  // the model call (reply) each open call began in; of the calls ended, that reply and their argument text: a call
  // started again in it goes on (as the reducer continues a call started again under its replyId, other model calls
  // between or not), its text with it
  #began = new Map<string, string>();
  #ended = new Map<string, [string, string]>();
  #shown: [string, Json] | null = null; // the ending call's argument text and input (TOOL_CALL_END's)
  #signatures = new Map<string, [string, number]>(); // tool-call encrypted values before the call: [value, index]
  #chunk: [string, string] | null = null;
  #thinking: string | null = null;
  #carry: Obj | null = null;
  #absent: Json = null;

  constructor(options: AGUIDecoderOptions = {}) {
    this.strict = options.strict ?? false;
    this.#clock = options.clock ?? nowIso;
  }

  /** The AgentEvents of one more AG-UI event. */
  feed(event: Json): Obj[] {
    this.#index++;
    if (!isObj(event)) {
      this.#problem("", "type", "an AG-UI event is a JSON object");
      return [];
    }
    const kind = event.type;
    if (typeof kind !== "string") {
      this.#problem("/type", kind === undefined || kind === null ? "required" : "type", "an AG-UI event has a string type");
      return [];
    }
    if (!has(REQUIRED, kind)) {
      this.#problem("/type", "enum", `${quoted(kind, 60)} is not an AG-UI 1.0 event type`);
      return [];
    }
    if (!this.#valid(event, kind)) return [];
    let out: Obj[] = [];
    if (this.#chunk !== null && !(kind.endsWith("_CHUNK") && CHUNK_KIND[kind] === this.#chunk[0])) out.push(...this.#closeChunk());
    const meta = event.metadata;
    const carry = isObj(meta) ? meta[CARRY] : undefined;
    this.#carry = isObj(carry) ? carry : null;
    this.#absent = isObj(meta) ? meta[ABSENT] : undefined;
    const implicit = isObj(meta) ? meta[IMPLICIT] : undefined;
    const stamp = event.timestamp;
    if (isInt(stamp) && stamp !== this.#stamp) {
      const when = iso(stamp);
      if (when === null) this.#problem("/timestamp", "maximum", "timestamp is not a time in milliseconds: not read");
      else {
        this.#created = when;
        this.#stamp = stamp;
      }
    }
    if (has(LEGACY, kind)) this.#sayOnce("legacy", `${kind} is AG-UI 0.0.x's, read as ${LEGACY[kind]}`, "ui-legacy");
    if (this.#carry === null && implicit === undefined) {
      this.#sayUnkept(event, kind);
      if (this.#run === null && kind !== "RUN_STARTED" && kind !== "RUN_ERROR" && !this.#outside) {
        this.#outside = true; // (said once per stretch outside a run: the events are read all the same)
        this.#problem("/type", "order", `${kind} outside a run: AG-UI's events come after RUN_STARTED`);
      }
    }
    if (implicit === true && kind === "REASONING_ENCRYPTED_VALUE") return out;
    let produced = this.#decode(kind, event);
    if (implicit === true) produced = [];
    else if (implicit === "end") produced = produced.slice(-1);
    out = out.concat(produced);
    return out;
  }

  /** The end of the stream: a message a `*_CHUNK` opened is ended. */
  close(): Obj[] {
    const out = this.#closeChunk();
    this.#unusedSignatures();
    return out;
  }

  #decode(kind: string, e: Obj): Obj[] {
    if (FOREIGN_TYPES.has(kind)) return this.#foreign(e);
    if (has(LEGACY, kind)) return this.#legacy(e);
    switch (kind) {
      case "RUN_STARTED": return this.#runStarted(e);
      case "RUN_FINISHED": return this.#runFinished(e);
      case "RUN_ERROR": return this.#runError(e);
      case "STEP_STARTED": return this.#stepStarted(e);
      case "STEP_FINISHED": return this.#stepFinished(e);
      case "TEXT_MESSAGE_START": return this.#textStart(e);
      case "TEXT_MESSAGE_CONTENT": return this.#textContent(e);
      case "TEXT_MESSAGE_END": return this.#textEnd(e);
      case "TEXT_MESSAGE_CHUNK": return this.#textChunk(e);
      case "TOOL_CALL_START": return this.#toolStart(e);
      case "TOOL_CALL_ARGS": return this.#toolArgs(e);
      case "TOOL_CALL_END": return this.#toolEnd(e);
      case "TOOL_CALL_CHUNK": return this.#toolChunk(e);
      case "TOOL_CALL_RESULT": return this.#toolResult(e);
      case "REASONING_START":
      case "REASONING_END":
        return []; // a span around reasoning messages, nothing of its own
      case "REASONING_MESSAGE_START": return this.#reasoningStart(e);
      case "REASONING_MESSAGE_CONTENT": return this.#reasoningContent(e);
      case "REASONING_MESSAGE_END": return this.#reasoningEnd(e);
      case "REASONING_MESSAGE_CHUNK": return this.#reasoningChunk(e);
      case "REASONING_ENCRYPTED_VALUE": return this.#encrypted(e);
      case "CUSTOM": return this.#custom(e);
    }
    return [];
  }

  // ---- helpers ----

  #problem(where: string, rule: string, message: string): void {
    const problem = { pointer: `/${this.#index}${where}`, rule, message };
    if (this.strict) throw new AGUIError([problem]);
    keepNote(this.notes, problem);
  }

  #sayOnce(key: string, message: string, rule = "ui-not-kept", where = "", index: number | null = null): void {
    if (this.#said.has(key)) return;
    if (room(this.notes)) this.#said.add(key); // (past it, not held: counted by the notes)
    keepNote(this.notes, { pointer: `/${index ?? this.#index}${where}`, rule, message });
  }

  /** The run ends (or the stream): a tool-call encrypted value whose call never started is said and forgotten. */
  #unusedSignatures(): void {
    if (this.#signatures.size === 0) return;
    let first = this.#index;
    for (const [, index] of this.#signatures.values()) first = Math.min(first, index); // (no spread: a flood of them)
    this.#sayOnce("encrypted-unused", "REASONING_ENCRYPTED_VALUE of a tool call that never started: left out", "ui-not-kept", "", first);
    this.#signatures.clear();
  }

  #valid(event: Obj, kind: string): boolean {
    for (const [key, value] of Object.entries(event)) {
      if (value === null) {
        this.#problem(`/${key}`, "type", `${key} is null: AG-UI omits an optional field, never nulls it`);
        return false;
      }
    }
    for (const [key, want] of Object.entries(REQUIRED[kind]!)) {
      if (!has(event, key)) {
        this.#problem(`/${key}`, "required", `${kind} needs ${key}`);
        return false;
      }
      if (want !== ANY && !kindOk(event[key], want)) {
        this.#problem(`/${key}`, "type", `${kind} ${key} is a JSON ${want}`);
        return false;
      }
    }
    const required = REQUIRED[kind]!;
    for (const [key, want] of Object.entries(OPTIONAL)) {
      // (a key the type requires has its own rule, above: STATE_DELTA's delta)
      if (has(event, key) && !has(required, key) && !kindOk(event[key], want)) {
        this.#problem(`/${key}`, "type", `${key} is a JSON ${want}`);
        return false;
      }
    }
    const stamp = event.timestamp;
    if (stamp !== undefined && !isInt(stamp)) {
      this.#problem("/timestamp", "type", "timestamp is an integer (milliseconds)");
      return false;
    }
    return true;
  }

  #sayUnkept(event: Obj, kind: string): void {
    const kept = KEPT[kind];
    if (kept === undefined) return;
    for (const key of Object.keys(event)) {
      if (!kept.has(key) && !STRUCTURAL.has(key)) this.#sayOnce(`${kind}/${key}`, `${kind} ${cut(key, 40)}: no AgentEvent keeps it (left out)`);
    }
  }

  #ev(kind: string, primary: boolean, fields: Obj): Obj {
    this.#minted++;
    if (this.#created === null) this.#created = this.#clock();
    const out: Obj = { type: kind, id: `ag-ui-${this.#minted}`, createdAt: this.#created, ...fields };
    if (primary && this.#carry !== null) {
      for (const key of Object.keys(this.#carry)) {
        const value = this.#carry[key] as Json;
        if (key === "input" && this.#shown !== null && !shows(value, ...this.#shown)) this.#conflict(kind, key, value, this.#shown[1], false);
        else if (!has(out, key) || settable(kind, key, value, out[key])) setOwn(out, key, value);
        else if (!sameJson(value, out[key])) this.#conflict(kind, key, value, out[key], false);
      }
    }
    if (primary && Array.isArray(this.#absent)) {
      for (const key of this.#absent) {
        if (typeof key === "string" && has(out, key)) {
          if (settable(kind, key, null, out[key])) delete out[key];
          else this.#conflict(kind, key, null, out[key], true);
        }
      }
    }
    return out;
  }

  /** A carried key, or one listed absent, that would change what the AG-UI event itself says: not applied, said
   * (rule `ui-carrier-conflict`; Python's `_conflict`). */
  #conflict(kind: string, key: string, value: unknown, visible: unknown, absent: boolean): void {
    const said = absent ? `${ABSENT} ${quoted(key, 40)}` : `${CARRY} ${quoted(key, 40)} ${quoted(value, 60)}`;
    this.#problem("/metadata", "ui-carrier-conflict", `${said} contradicts ${kind} ${quoted(visible, 60)}: not applied`);
  }

  #reply(): string {
    return this.#step ?? this.#run ?? "ag-ui";
  }

  #closeChunk(): Obj[] {
    if (this.#chunk === null) return [];
    const [kind, mid] = this.#chunk;
    this.#chunk = null;
    if (kind === "text" && this.#texts.has(mid)) {
      const block = this.#texts.get(mid);
      this.#texts.delete(mid);
      return [this.#ev("TEXT_BLOCK_END", false, { replyId: this.#reply(), blockId: block })];
    }
    if (kind === "reasoning" && this.#reasoning.has(mid)) {
      const block = this.#reasoning.get(mid);
      this.#reasoning.delete(mid);
      return [this.#ev("THINKING_BLOCK_END", false, { replyId: this.#reply(), blockId: block })];
    }
    if (kind === "tool" && this.#calls.has(mid)) {
      this.#calls.delete(mid);
      return [this.#ev("TOOL_CALL_END", false, { replyId: this.#reply(), toolCallId: mid })];
    }
    return [];
  }

  #closeAll(why: string): Obj[] {
    const out: Obj[] = [];
    if (this.#texts.size || this.#reasoning.size || this.#calls.size || this.#others.size) {
      this.#problem("", "order", `${why} while a message or tool call is still open: ended there`);
    }
    for (const block of this.#texts.values()) out.push(this.#ev("TEXT_BLOCK_END", false, { replyId: this.#reply(), blockId: block }));
    for (const block of this.#reasoning.values()) out.push(this.#ev("THINKING_BLOCK_END", false, { replyId: this.#reply(), blockId: block }));
    for (const call of this.#calls.keys()) {
      this.#takeArguments(call); // (ended here: its input is what its arguments say, as at its own end)
      out.push(this.#ev("TOOL_CALL_END", false, { replyId: this.#reply(), toolCallId: call }));
    }
    this.#texts.clear();
    this.#reasoning.clear();
    this.#calls.clear();
    this.#others.clear();
    return out;
  }

  // ---- the events ----

  #runStarted(e: Obj): Obj[] {
    const out: Obj[] = [];
    if (this.#run !== null) {
      this.#problem("", "order", "RUN_STARTED while a run is open: the open one ends here");
      for (const ended of this.#closeAll("RUN_STARTED")) out.push(ended); // (not push(...): one argument each)
      this.#unusedSignatures();
      out.push(this.#ev("AGENT_END", false, { replyId: this.#run }));
    }
    this.#run = e.runId;
    this.#step = null;
    this.#usageSeen = false;
    this.#outside = false;
    const meta = e.metadata;
    this.#ours = this.#carry !== null || (isObj(meta) && has(meta, IMPLICIT));
    this.#knownCalls.clear();
    this.#args.clear();
    this.#began.clear();
    this.#ended.clear();
    const fields: Obj = { replyId: e.runId };
    if (e.threadId !== e.runId) fields.sessionId = e.threadId;
    out.push(this.#ev("AGENT_START", true, fields));
    return out;
  }

  #runFinished(e: Obj): Obj[] {
    if (this.#run === null) this.#problem("", "order", "RUN_FINISHED without a run started");
    const out = this.#closeAll("RUN_FINISHED");
    this.#unusedSignatures();
    const reply = e.runId;
    if (!this.#ours) out.push(...this.#runExtras(e, reply));
    out.push(this.#ev("AGENT_END", true, { replyId: reply }));
    this.#run = this.#step = null;
    return out;
  }

  #runExtras(e: Obj, reply: string): Obj[] {
    const out: Obj[] = [];
    const usage = e.usage;
    if (Array.isArray(usage) && usage.length && !this.#usageSeen) {
      const total: Obj = {};
      const models = new Set<string>();
      usage.forEach((entry: Json, i: number) => {
        if (!isObj(entry)) {
          this.#sayOnce("usage-entry", "RUN_FINISHED usage: an entry that is no object (left out)", "ui-not-kept", `/usage/${i}`);
          return;
        }
        for (const [theirs, ours] of Object.entries(USAGE_IN)) {
          const value = entry[theirs];
          if (isInt(value) && value >= 0) total[ours] = (total[ours] ?? 0) + value;
        }
        for (const [key, value] of Object.entries(entry)) {
          const counted = isInt(value) && value >= 0;
          if (has(USAGE_IN, key) ? counted : key === "model" && typeof value === "string") continue;
          const message = `RUN_FINISHED usage ${cut(key, 40)}: no AgentEvent keeps it (left out)`;
          this.#sayOnce(`usage/${key}`, message, "ui-not-kept", `/usage/${i}${pointerOf([key])}`);
        }
        if (typeof entry.model === "string") models.add(entry.model);
      });
      if (models.size > 1) this.#sayOnce("usage-models", "RUN_FINISHED usage of several models: no model kept", "ui-not-kept", "/usage");
      if (Object.keys(total).length) {
        out.push(this.#ev("MODEL_CALL_START", false, { replyId: reply }));
        const end = this.#ev("MODEL_CALL_END", false, { replyId: reply, usage: total });
        if (models.size === 1) end.metadata = { model: [...models][0] };
        out.push(end);
      }
    }
    const outcome = e.outcome;
    const kind = isObj(outcome) ? outcome.type : undefined;
    if (kind === "interrupt" && Array.isArray(outcome.interrupts)) {
      const calls: Obj[] = [];
      outcome.interrupts.forEach((item: Json, k: number) => {
        const wanted = isObj(item) ? item.toolCallId : undefined;
        const call = typeof wanted === "string" ? this.#knownCalls.get(wanted) : undefined;
        if (call === undefined) {
          this.#sayOnce("interrupt", "RUN_FINISHED interrupts without a known tool call: left out");
          return;
        }
        calls.push({ ...call }); // (a copy: the event handed out never changes with the decoder)
        for (const key of Object.keys(item)) {
          if (key === "toolCallId" || key === "reason") continue;
          const message = `RUN_FINISHED interrupt ${cut(key, 40)}: no AgentEvent keeps it (left out)`;
          this.#sayOnce(`interrupt/${key}`, message, "ui-not-kept", `/outcome/interrupts/${k}${pointerOf([key])}`);
        }
      });
      if (calls.length) out.push(this.#ev("REQUIRE_USER_CONFIRM", false, { replyId: reply, toolCalls: calls }));
    } else if (kind === "cancelled") {
      out.push(this.#ev("REQUEST_STOP", false, { generateReason: "INTERRUPTED", reason: "cancelled" }));
    } else if (isObj(outcome) && Array.isArray(outcome.pendingToolCallIds)) {
      const ids: Json[] = outcome.pendingToolCallIds;
      const calls = ids.filter((i: Json) => typeof i === "string" && this.#knownCalls.has(i)).map((i: string) => ({ ...this.#knownCalls.get(i)! }));
      if (calls.length < ids.length) {
        const message = "RUN_FINISHED pendingToolCallIds without a known tool call: left out";
        this.#sayOnce("pending", message, "ui-not-kept", "/outcome/pendingToolCallIds");
      }
      if (calls.length) out.push(this.#ev("REQUIRE_EXTERNAL_EXECUTION", false, { replyId: reply, toolCalls: calls }));
    } else if (outcome !== undefined && kind !== "success") {
      this.#sayOnce("outcome", "RUN_FINISHED outcome of no AG-UI 1.0 shape: not read (left out)", "ui-not-kept", "/outcome");
    }
    return out;
  }

  #runError(e: Obj): Obj[] {
    const value: Obj = { type: has(e, "code") ? e.code : "RUN_ERROR", message: e.message };
    const out = [this.#ev("CUSTOM", true, { name: "agentmsg.error", value })];
    this.#unusedSignatures();
    this.#texts.clear();
    this.#reasoning.clear();
    this.#calls.clear();
    this.#others.clear();
    this.#run = this.#step = null;
    return out;
  }

  #stepStarted(e: Obj): Obj[] {
    this.#step = e.stepName;
    return [this.#ev("MODEL_CALL_START", true, { replyId: e.stepName })];
  }

  #stepFinished(e: Obj): Obj[] {
    const out = [this.#ev("MODEL_CALL_END", true, { replyId: e.stepName })];
    if (has(out[0]!, "usage")) this.#usageSeen = true;
    this.#step = null;
    return out;
  }

  #textStart(e: Obj, mid?: string): Obj[] {
    mid = mid ?? e.messageId;
    if (this.#texts.has(mid!) || this.#others.has(mid!)) {
      this.#problem("/messageId", "order", `TEXT_MESSAGE_START of ${quoted(mid, 40)}, already open: ignored`);
      return [];
    }
    if ((has(e, "role") ? e.role : "assistant") !== "assistant") {
      this.#others.add(mid!);
      return [this.#ev("CUSTOM", true, { name: FOREIGN + "TEXT_MESSAGE_START", value: { ...e } })];
    }
    const carried = this.#carry !== null && has(this.#carry, "blockId") ? this.#carry.blockId : mid;
    const block = renamed(mid, carried) ? carried : mid; // (any other carried blockId: said by #ev, not applied)
    this.#texts.set(mid!, block);
    return [this.#ev("TEXT_BLOCK_START", true, { replyId: this.#reply(), blockId: block })];
  }

  #textContent(e: Obj): Obj[] {
    const mid: string = e.messageId;
    if (this.#others.has(mid)) return [this.#ev("CUSTOM", true, { name: FOREIGN + "TEXT_MESSAGE_CONTENT", value: { ...e } })];
    const out: Obj[] = [];
    if (!this.#texts.has(mid)) {
      this.#problem("/messageId", "order", `TEXT_MESSAGE_CONTENT of ${quoted(mid, 40)}, not started: started here`);
      out.push(...this.#textStart({ messageId: mid }, mid));
    }
    out.push(this.#ev("TEXT_BLOCK_DELTA", true, { replyId: this.#reply(), blockId: this.#texts.get(mid), delta: e.delta }));
    return out;
  }

  #textEnd(e: Obj): Obj[] {
    const mid: string = e.messageId;
    if (this.#others.has(mid)) {
      this.#others.delete(mid);
      return [this.#ev("CUSTOM", true, { name: FOREIGN + "TEXT_MESSAGE_END", value: { ...e } })];
    }
    if (!this.#texts.has(mid)) {
      this.#problem("/messageId", "order", `TEXT_MESSAGE_END of ${quoted(mid, 40)}, not open: ignored`);
      return [];
    }
    const block = this.#texts.get(mid);
    this.#texts.delete(mid);
    return [this.#ev("TEXT_BLOCK_END", true, { replyId: this.#reply(), blockId: block })];
  }

  #textChunk(e: Obj): Obj[] {
    const mid = e.messageId;
    const out: Obj[] = [];
    if (mid !== undefined && (this.#chunk === null || this.#chunk[1] !== mid)) {
      out.push(...this.#closeChunk());
      const start: Obj = { messageId: mid, ...(has(e, "role") ? { role: e.role } : {}) };
      out.push(...this.#textStart(start));
      this.#chunk = ["text", mid];
    } else if (this.#chunk === null) {
      this.#problem("/messageId", "required", "the first TEXT_MESSAGE_CHUNK of a message needs messageId");
      return out;
    }
    if (typeof e.delta === "string" && e.delta) out.push(...this.#textContent({ messageId: this.#chunk[1], delta: e.delta }));
    return out;
  }

  #reasoningStart(e: Obj, mid?: string): Obj[] {
    mid = mid ?? e.messageId;
    if (this.#reasoning.has(mid!)) {
      this.#problem("/messageId", "order", `REASONING_MESSAGE_START of ${quoted(mid, 40)}, already open: ignored`);
      return [];
    }
    const carried = this.#carry !== null && has(this.#carry, "blockId") ? this.#carry.blockId : mid;
    const block = renamed(mid, carried) ? carried : mid; // (any other carried blockId: said by #ev, not applied)
    this.#reasoning.set(mid!, block);
    return [this.#ev("THINKING_BLOCK_START", true, { replyId: this.#reply(), blockId: block })];
  }

  #reasoningContent(e: Obj): Obj[] {
    const mid: string = e.messageId;
    const out: Obj[] = [];
    if (!this.#reasoning.has(mid)) {
      this.#problem("/messageId", "order", `REASONING_MESSAGE_CONTENT of ${quoted(mid, 40)}, not started: started here`);
      out.push(...this.#reasoningStart({ messageId: mid }, mid));
    }
    out.push(this.#ev("THINKING_BLOCK_DELTA", true, { replyId: this.#reply(), blockId: this.#reasoning.get(mid), delta: e.delta }));
    return out;
  }

  #reasoningEnd(e: Obj): Obj[] {
    const mid: string = e.messageId;
    if (!this.#reasoning.has(mid)) {
      this.#problem("/messageId", "order", `REASONING_MESSAGE_END of ${quoted(mid, 40)}, not open: ignored`);
      return [];
    }
    const block = this.#reasoning.get(mid);
    this.#reasoning.delete(mid);
    return [this.#ev("THINKING_BLOCK_END", true, { replyId: this.#reply(), blockId: block })];
  }

  #reasoningChunk(e: Obj): Obj[] {
    const mid = e.messageId;
    const out: Obj[] = [];
    if (mid !== undefined && (this.#chunk === null || this.#chunk[1] !== mid)) {
      out.push(...this.#closeChunk());
      out.push(...this.#reasoningStart({ messageId: mid }));
      this.#chunk = ["reasoning", mid];
    } else if (this.#chunk === null) {
      this.#problem("/messageId", "required", "the first REASONING_MESSAGE_CHUNK of a message needs messageId");
      return out;
    }
    if (typeof e.delta === "string" && e.delta) out.push(...this.#reasoningContent({ messageId: this.#chunk[1], delta: e.delta }));
    return out;
  }

  #legacy(e: Obj): Obj[] {
    const kind = e.type;
    if (kind === "THINKING_TEXT_MESSAGE_START") {
      this.#minted++;
      this.#thinking = `thinking-${this.#minted}`;
      return this.#reasoningStart({ messageId: this.#thinking });
    }
    if (this.#thinking === null) {
      if (kind === "THINKING_TEXT_MESSAGE_CONTENT") return [...this.#legacy({ type: "THINKING_TEXT_MESSAGE_START" }), ...this.#legacy(e)];
      return [];
    }
    if (kind === "THINKING_TEXT_MESSAGE_CONTENT") return this.#reasoningContent({ messageId: this.#thinking, delta: e.delta });
    if (kind === "THINKING_TEXT_MESSAGE_END") {
      const mid = this.#thinking;
      this.#thinking = null;
      return this.#reasoningEnd({ messageId: mid });
    }
    return []; // THINKING_START / THINKING_END: the span
  }

  #encrypted(e: Obj): Obj[] {
    const entity: string = e.entityId;
    const value: string = e.encryptedValue;
    if (e.subtype === "message") {
      if (this.#reasoning.has(entity)) {
        return [this.#ev("THINKING_BLOCK_DELTA", true, { replyId: this.#reply(), blockId: this.#reasoning.get(entity), delta: "", signature: value })];
      }
      this.#sayOnce("encrypted-closed", "REASONING_ENCRYPTED_VALUE of a reasoning message not open: left out");
      return [];
    }
    if (e.subtype === "tool-call") {
      if (this.#calls.has(entity) || this.#knownCalls.has(entity)) {
        this.#sayOnce("encrypted-call", "REASONING_ENCRYPTED_VALUE of a tool call already started: left out");
        return [];
      }
      this.#signatures.set(entity, [value, this.#index]);
      return [];
    }
    this.#problem("/subtype", "enum", "REASONING_ENCRYPTED_VALUE subtype is 'message' or 'tool-call'");
    return [];
  }

  #toolStart(e: Obj): Obj[] {
    const call: string = e.toolCallId;
    const name: string = e.toolCallName;
    if (this.#calls.has(call)) {
      this.#problem("/toolCallId", "order", `TOOL_CALL_START of ${quoted(call, 40)}, already open: ignored`);
      return [];
    }
    this.#calls.set(call, name);
    this.#knownCalls.set(call, { type: "tool_use", id: call, name, input: {} });
    const reply = this.#reply();
    const ended = this.#ended.get(call);
    this.#ended.delete(call);
    if (ended !== undefined && ended[0] === reply) this.#args.set(call, ended[1]); // (the reducer continues it)
    this.#began.set(call, reply);
    const fields: Obj = { replyId: this.#reply(), toolCallId: call, toolCallName: name };
    if (this.#signatures.has(call)) {
      fields.thoughtSignature = this.#signatures.get(call)![0];
      this.#signatures.delete(call);
    }
    return [this.#ev("TOOL_CALL_START", true, fields)];
  }

  #toolArgs(e: Obj): Obj[] {
    const call: string = e.toolCallId;
    if (!this.#calls.has(call)) {
      this.#problem("/toolCallId", "order", `TOOL_CALL_ARGS of ${quoted(call, 40)}, not started: ignored`);
      return [];
    }
    if (this.#knownCalls.has(call)) this.#args.set(call, (this.#args.get(call) ?? "") + e.delta);
    return [this.#ev("TOOL_CALL_DELTA", true, { replyId: this.#reply(), toolCallId: call, delta: e.delta })];
  }

  #toolEnd(e: Obj): Obj[] {
    const call: string = e.toolCallId;
    if (!this.#calls.has(call)) {
      this.#problem("/toolCallId", "order", `TOOL_CALL_END of ${quoted(call, 40)}, not open: ignored`);
      return [];
    }
    this.#calls.delete(call);
    this.#shown = this.#takeArguments(call);
    try {
      return [this.#ev("TOOL_CALL_END", true, { replyId: this.#reply(), toolCallId: call })];
    } finally {
      this.#shown = null;
    }
  }

  /** A call of this run ends (its TOOL_CALL_END, or the run's end while it is open): its argument text (after that
   * before an end in the same model call: the reducer continues the call) is its input when it makes a JSON object,
   * read by the reducer's rules (`readJson`, build.ts toolUse; Python's `parse_arguments`: an integer past 64 bits,
   * a value nested deeper than 254 levels, no input; a byte-order mark skipped). Returns the text and that input ({}
   * when none): what an AG-UI client shows, what the reducer keeps (Python's `_take_arguments`). */
  #takeArguments(call: string): [string, Json] {
    const known = this.#knownCalls.get(call);
    const args = this.#args.get(call) ?? "";
    this.#args.delete(call);
    const read = args ? readJson(args) : {};
    if (known !== undefined) {
      if (isObj(read)) known.input = read;
      this.#ended.set(call, [this.#began.get(call) ?? this.#reply(), args]);
      this.#began.delete(call);
    }
    return [args, isObj(read) ? read : {}];
  }

  #toolChunk(e: Obj): Obj[] {
    const call = e.toolCallId;
    const out: Obj[] = [];
    if (call !== undefined && (this.#chunk === null || this.#chunk[1] !== call)) {
      out.push(...this.#closeChunk());
      const name = e.toolCallName;
      if (typeof name !== "string") {
        this.#problem("/toolCallName", "required", "the first TOOL_CALL_CHUNK of a call needs toolCallName");
        return out;
      }
      out.push(...this.#toolStart({ toolCallId: call, toolCallName: name }));
      this.#chunk = ["tool", call];
    } else if (this.#chunk === null) {
      this.#problem("/toolCallId", "required", "the first TOOL_CALL_CHUNK of a call needs toolCallId");
      return out;
    }
    if (typeof e.delta === "string" && e.delta) out.push(...this.#toolArgs({ toolCallId: this.#chunk[1], delta: e.delta }));
    return out;
  }

  #toolResult(e: Obj): Obj[] {
    const call: string = e.toolCallId;
    const content = e.content;
    const reply = this.#reply();
    const name = this.#knownCalls.get(call)?.name;
    const named: Obj = typeof name === "string" ? { toolCallName: name } : {};
    const out = [this.#ev("TOOL_RESULT_START", false, { replyId: reply, toolCallId: call, ...named })];
    let parts: Json[];
    if (typeof content === "string") parts = content ? [content] : [];
    else if (Array.isArray(content)) parts = content;
    else {
      this.#problem("/content", "type", "TOOL_CALL_RESULT content is a string or a list of content parts");
      parts = [];
    }
    parts.forEach((part, n) => {
      if (typeof part === "string") {
        out.push(this.#ev("TOOL_RESULT_TEXT_DELTA", false, { replyId: reply, toolCallId: call, delta: part }));
        return;
      }
      const block = partIn(part);
      if (block !== null) this.#sayPartUnkept(part, `/content/${n}`);
      if (block === null) this.#sayOnce(`part/${n}`, "a TOOL_CALL_RESULT content part of no known type: left out");
      else if (block.type === "text") out.push(this.#ev("TOOL_RESULT_TEXT_DELTA", false, { replyId: reply, toolCallId: call, delta: block.text }));
      else out.push(this.#ev("TOOL_RESULT_DATA_DELTA", false, { replyId: reply, toolCallId: call, data: block }));
    });
    out.push(this.#ev("TOOL_RESULT_END", true, { replyId: reply, toolCallId: call, state: "success" }));
    return out;
  }

  /** The keys of a TOOL_CALL_RESULT content part (and of its source) its block has no field for: said once each. */
  #sayPartUnkept(part: Obj, where: string): void {
    for (const key of Object.keys(part)) {
      if (PART_KEPT.has(key)) continue;
      this.#sayOnce(`part-key/${key}`, `TOOL_CALL_RESULT content part ${cut(key, 40)}: no block keeps it (left out)`, "ui-not-kept", where + pointerOf([key]));
    }
    const source = part.source;
    for (const key of isObj(source) ? Object.keys(source) : []) {
      if (SOURCE_KEPT.has(key)) continue;
      const message = `TOOL_CALL_RESULT content part source ${cut(key, 40)}: no block keeps it (left out)`;
      this.#sayOnce(`source-key/${key}`, message, "ui-not-kept", `${where}/source${pointerOf([key])}`);
    }
  }

  #custom(e: Obj): Obj[] {
    if (e.name === AGUI_WRAPPED) {
      const value = e.value;
      if (isObj(value) && value.type === "MODEL_CALL_END" && value.usage !== undefined && value.usage !== null) this.#usageSeen = true;
      return [value];
    }
    if (!isObj(e.value)) return this.#foreign(e);
    return [this.#ev("CUSTOM", true, { name: e.name, value: e.value })];
  }

  #foreign(e: Obj): Obj[] {
    return [this.#ev("CUSTOM", true, { name: FOREIGN + e.type, value: { ...e } })];
  }
}

/** The AgentEvents of a whole AG-UI stream (each event fed, then closed). */
export function decodeAGUI(events: Iterable<Json>, options: AGUIDecoderOptions = {}): Obj[] {
  const decoder = new AGUIDecoder(options);
  const out: Obj[] = [];
  // (Not out.push(...decoder.feed(event)): an event that ends a run ends each of its open tool calls, and the
  // spread of 200,000 of them as arguments overflowed the stack, a RangeError.)
  for (const event of events) for (const decoded of decoder.feed(event)) out.push(decoded);
  return out.concat(decoder.close());
}
