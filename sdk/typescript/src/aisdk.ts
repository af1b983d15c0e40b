// The Vercel AI SDK's UI message stream (what useChat reads) -> agentmsg AgentEvents: the decoder of Python's
// agentmsg.ui.ai_sdk (AiSdkDecoder), rule for rule, so that a page reduces a UI message stream (agentmsg's endpoint
// with ?protocol=ai-sdk, whose transient data-agentmsg chunks give back what no chunk carries, or another
// producer's) with the one Reducer to the message Python reduces it to. The same events in both runtimes (ids
// `ui-<n>`, `createdAt` from the clock) and the same notes (pointer + rule): tests/jsclient/test_aisdk.py checks it.
// docs/ai-sdk.md has the mapping.

import { boundedProblem, keepNote, quoted, room } from "./notes.js";
import { assignOwn, sameJson, setOwn } from "./state.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Obj = Record<string, Json>;

export interface AiSdkProblem {
  pointer: string;
  rule: string;
  message: string;
}

/** Whether a carrier's `rest` may set `key` of a decoded `kind` event the decoder set already (Python's `_settable`):
 * what the decoder mints or takes from its context (`replyId`, but AGENT_START's), what the chunk holds only in part
 * (an error's `value`, a tool call's `input` that is no object); never what the chunk itself says. */
function settable(kind: string, key: string, carried: unknown, visible: unknown): boolean {
  if (key === "id" || key === "createdAt") return true;
  if (key === "replyId") return kind !== "AGENT_START";
  if (key === "value" && kind === "CUSTOM" && isObj(visible) && Object.keys(visible).length === 1 && Object.hasOwn(visible, "message")) {
    const message = isObj(carried) && Object.hasOwn(carried, "message") ? carried.message : undefined;
    return typeof message !== "string" || message === visible.message;
  }
  return key === "input" && kind === "TOOL_CALL_END" && !isObj(carried);
}

/** Whether the reducer names a call `name` (a non-empty string, no placeholder), which a carried tool name may then
 * not change from the one the chunk shows (Python's `_taken_name`). */
function takenName(name: unknown): boolean {
  return typeof name === "string" && name !== "" && !name.startsWith("__");
}

/** Thrown by a strict decoder at the first chunk the AI SDK's schema (uiMessageChunkSchema) refuses. */
export class AiSdkError extends Error {
  readonly problems: AiSdkProblem[];
  constructor(problems: AiSdkProblem[]) {
    const kept = problems.map(boundedProblem); // (each message at most MESSAGE_MAX characters, as Python's)
    super(kept.map((p) => `${p.pointer}: ${p.message} [${p.rule}]`).join("; "));
    this.name = "AiSdkError";
    this.problems = kept;
  }
}

export interface AiSdkDecoderOptions {
  /** Throw an AiSdkError at the first bad chunk (default: a note, and the chunk is skipped). */
  strict?: boolean;
  /** The prefix of the events' minted ids (default `ui-`). */
  idPrefix?: string;
  /** The events' `createdAt` (default: now). */
  clock?: () => string;
}

/** The chunk type of what only agentmsg reads (transient: never part of a UIMessage). */
export const AI_SDK_CARRIER = "data-agentmsg";
const NOT_KEPT = "ui-not-kept";
const STR = "string";
const OBJ = "object";
const ANY = "any";
const BOOL = "boolean";
const LIST = "array";

const REQUIRED: Record<string, Record<string, string>> = {
  start: {},
  "start-step": {},
  "finish-step": {},
  "reset-step": {},
  "text-start": { id: STR },
  "text-delta": { id: STR, delta: STR },
  "text-end": { id: STR },
  "reasoning-start": { id: STR },
  "reasoning-delta": { id: STR, delta: STR },
  "reasoning-end": { id: STR },
  "tool-input-start": { toolCallId: STR, toolName: STR },
  "tool-input-delta": { toolCallId: STR, inputTextDelta: STR },
  "tool-input-available": { toolCallId: STR, toolName: STR, input: ANY },
  "tool-input-error": { toolCallId: STR, toolName: STR, input: ANY, errorText: STR },
  "tool-approval-request": { approvalId: STR, toolCallId: STR },
  "tool-approval-response": { approvalId: STR, approved: BOOL },
  "tool-output-available": { toolCallId: STR, output: ANY },
  "tool-output-error": { toolCallId: STR, errorText: STR },
  "tool-output-denied": { toolCallId: STR },
  "source-url": { sourceId: STR, url: STR },
  "source-document": { sourceId: STR, mediaType: STR, title: STR },
  file: { url: STR, mediaType: STR },
  "reasoning-file": { url: STR, mediaType: STR },
  custom: { kind: STR },
  "steering-message": { id: STR, parts: LIST },
  "message-metadata": { messageMetadata: ANY },
  finish: {},
  abort: {},
  error: { errorText: STR },
};

const OPTIONAL: Record<string, string> = {
  messageId: STR,
  finishReason: STR,
  providerMetadata: OBJ,
  providerExecuted: BOOL,
  preliminary: BOOL,
  transient: BOOL,
  title: STR,
  dynamic: BOOL,
};

/** Optional keys of one chunk kind that agentmsg reads (each quoted in a note): the type uiMessageChunkSchema gives them. */
const OPTIONAL_OF: Record<string, Record<string, string>> = {
  abort: { reason: STR },
  "tool-approval-request": { reason: STR, signature: STR, approvalDescriptor: ANY, inputSchemaInput: ANY, isAutomatic: BOOL },
  "tool-approval-response": { reason: STR },
  // (uiMessageChunkSchema's toolMetadata: a record of JSON values, an object)
  ...Object.fromEntries(
    ["tool-input-start", "tool-input-available", "tool-input-error", "tool-output-available", "tool-output-error"].map((k) => [k, { toolMetadata: OBJ }]),
  ),
};
const INPUT_ENCODINGS = new Set(["json", "text"]);
const FINISH_REASONS = new Set(["stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"]);
const FINISH_REASONS_SAID = [...FINISH_REASONS].sort().map((r) => quoted(r)).join(", ");
const GENERATE_REASONS: Record<string, string> = { "tool-calls": "TOOL_CALLS", interrupted: "INTERRUPTED" };
const NOT_KEPT_CHUNKS: Record<string, string> = {
  "reset-step": "reset-step (a step's parts withdrawn): agentmsg's events do not withdraw what was sent",
  "source-document": "source-document: a source that is no URL",
  "reasoning-file": "reasoning-file: a file in the reasoning",
  custom: "custom: a provider's own part",
  "steering-message": "steering-message: a user message mid-stream",
  "message-metadata": "messageMetadata: the app's message metadata",
  "tool-approval-request": "tool-approval-request: an approval the UI asks for",
  "tool-approval-response": "tool-approval-response: an approval the UI gave",
  abort: "abort: the stream was aborted (the reply stays cut: INTERRUPTED)",
};
/** keys of the tool chunks agentmsg has no place for whose value a note quotes (once per call and value) */
const TOOL_VALUES_NOT_KEPT: Record<string, string> = {
  title: "a tool call's display title",
  toolMetadata: "a tool's own data on a call",
};
const PARTS: Record<string, string> = {
  "text-start": "TEXT_BLOCK_START",
  "text-delta": "TEXT_BLOCK_DELTA",
  "text-end": "TEXT_BLOCK_END",
  "reasoning-start": "THINKING_BLOCK_START",
  "reasoning-delta": "THINKING_BLOCK_DELTA",
  "reasoning-end": "THINKING_BLOCK_END",
};
const NO_REPLY_ID = new Set(["AGENT_RESULT", "EXCEED_MAX_ITERS", "REQUEST_STOP", "CUSTOM"]);
const MEDIA_DEFAULT: Record<string, string> = { image: "image/*", audio: "audio/*", video: "video/*", data: "application/octet-stream" };
const DATA_URL = /^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$/s;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const has = (o: Obj, k: string): boolean => Object.hasOwn(o, k);

function kindOk(value: unknown, want: string): boolean {
  if (want === STR) return typeof value === "string";
  if (want === BOOL) return typeof value === "boolean";
  if (want === LIST) return Array.isArray(value);
  if (want === OBJ) return isObj(value);
  return true;
}

function typeName(value: unknown): string {
  if (value === null) return "NoneType";
  if (Array.isArray(value)) return "list";
  return { string: "str", number: Number.isInteger(value) ? "int" : "float", boolean: "bool" }[typeof value as string] ?? "dict";
}

function nowIso(): string {
  return new Date().toISOString().replace(/Z$/, "000Z");
}

/** The media block a `file` chunk stands for (Python's `_block_of_file`). */
function blockOfFile(chunk: Obj): Obj {
  const media: string = chunk.mediaType;
  const major = media.split("/", 1)[0]!;
  const kind = ["image", "audio", "video"].includes(major) ? major : "data";
  const m = DATA_URL.exec(chunk.url);
  if (m) return { type: kind, source: { type: "base64", media_type: media, data: m[2] } };
  const source: Obj = { type: "url", url: chunk.url };
  if (media !== MEDIA_DEFAULT[kind]) source.mime_type = media;
  return { type: kind, source };
}

/** UI message chunks -> AgentEvents, one stream (see agentmsg.ui.ai_sdk: the same rules). */
export class AiSdkDecoder {
  readonly notes: AiSdkProblem[] = [];
  readonly strict: boolean;
  #noted = new Set<string>();
  #prefix: string;
  #clock: () => string;
  #count = 0;
  #minted = 0;
  #reply: Json = null;
  #carried = false;
  #rest = new Map<string, Obj>();
  #calls = new Map<string, Obj>();
  #sources: Obj[] = [];
  #stepOpen = false;
  #openResults = new Set<string>();
  #skip = false;
  #opener: string | null = null; // the id the next event takes (it opens an implicit reply)
  #uiMessage: string | null = null; // the messageId of the last `start` (the AI SDK reader's message)
  #uiStarted = false; // a `start` came (the AI SDK's reader builds a message a start names no other of)

  constructor(options: AiSdkDecoderOptions = {}) {
    this.strict = options.strict ?? false;
    this.#prefix = options.idPrefix ?? "ui-";
    this.#clock = options.clock ?? nowIso;
  }

  /** The AgentEvents of one more chunk. */
  feed(chunk: Json): Obj[] {
    const index = this.#count;
    try {
      let kind: string;
      try {
        kind = this.#check(chunk, index);
        if (kind === AI_SDK_CARRIER) return this.#carrier(chunk, index);
      } catch (e) {
        if (!(e instanceof AiSdkError) || this.strict) throw e;
        for (const p of e.problems) keepNote(this.notes, p);
        return [];
      }
      if (kind === "start") this.#sameMessage(chunk);
      if (this.#skip) {
        // for the UI only: the start or finish of an implicit reply, a held call's chunks
        this.#skip = false;
        if (kind === "finish") {
          this.#reply = null;
          this.#carried = false;
        } else if (kind === "tool-input-start") {
          this.#calls.set(chunk.toolCallId, { name: chunk.toolName, streamed: true, open: true });
        }
        return [];
      }
      if (kind.startsWith("data-")) return this.#data(chunk, kind);
      if (has(chunk, "providerMetadata") && !this.#carried) this.#note("providerMetadata", "providerMetadata: a provider's own data on a part");
      if (kind.startsWith("tool-") && !this.#carried) this.#toolKeys(chunk);
      return this.#decode(kind, chunk);
    } finally {
      this.#count++;
    }
  }

  /** The end of the stream: nothing to add (a reply without its `finish` stays cut). */
  close(): Obj[] {
    return [];
  }

  /** The keys of a tool chunk from another producer that no AgentEvent keeps: said once per stream each, a `title`
   * or `toolMetadata` once per call and value, quoted. */
  #toolKeys(chunk: Obj): void {
    if (chunk.providerExecuted) this.#note("providerExecuted", "providerExecuted: a tool the provider ran, read as a call");
    if (chunk.dynamic !== undefined && chunk.dynamic !== null) this.#note("dynamic", "dynamic: a tool the app did not declare, read as a call");
    const ofCall = typeof chunk.toolCallId === "string" ? ` of tool call ${quoted(chunk.toolCallId)}` : "";
    for (const [key, what] of Object.entries(TOOL_VALUES_NOT_KEPT)) {
      if (chunk[key] === undefined || chunk[key] === null) continue;
      const said = `${key} ${quoted(chunk[key])}${ofCall}`;
      this.#note(said, `${said}: ${what}`);
    }
  }

  #decode(kind: string, chunk: Obj): Obj[] {
    if (has(PARTS, kind)) {
      const fields: Obj = { blockId: chunk.id };
      if (has(chunk, "delta")) fields.delta = chunk.delta;
      if (chunk.citations !== undefined && chunk.citations !== null) this.#note("citations", "citations on a text part");
      return [this.#event(PARTS[kind]!, fields)];
    }
    switch (kind) {
      case "start": return this.#start(chunk);
      case "start-step":
        this.#stepOpen = true;
        this.#sources = [];
        return [this.#event("MODEL_CALL_START")];
      case "finish-step": return this.#finishStep();
      case "finish": return this.#finish(chunk);
      case "tool-input-start":
        if (chunk.inputEncoding === "text") {
          // (`json`, the default, is how the decoder reads the deltas)
          const call = quoted(chunk.toolCallId);
          this.#note(`inputEncoding:${call}`, `inputEncoding "text" of tool call ${call}: its input streamed as plain text, not JSON (no AgentEvent says so: the reducer reads the text as JSON arguments)`);
        }
        return [this.#callStart(chunk.toolCallId, chunk.toolName)];
      case "tool-input-delta": {
        const call = this.#calls.get(chunk.toolCallId);
        if (call !== undefined) call.streamed = true;
        return [this.#event("TOOL_CALL_DELTA", {}, { toolCallId: chunk.toolCallId, delta: chunk.inputTextDelta })];
      }
      case "tool-input-available":
      case "tool-input-error":
        return this.#toolInputEnd(chunk);
      case "tool-output-available":
      case "tool-output-error":
      case "tool-output-denied":
        return this.#toolOutput(chunk);
      case "source-url": {
        const source: Obj = {};
        for (const [k, v] of Object.entries(chunk)) if (k === "sourceId" || k === "url" || k === "title") source[k] = v;
        this.#sources.push(source);
        if (!this.#stepOpen) this.#note("source-outside-step", "source-url outside a step: no model call to hold it");
        return [];
      }
      case "file": return this.#file(chunk);
      case "error": return [this.#event("CUSTOM", {}, { name: "agentmsg.error", value: { message: chunk.errorText } })];
      case "message-metadata":
        if (this.#carried) return [];
    }
    // a chunk no event stands for: said once per stream, or once per text it carries (quoted)
    const said = Object.keys(OPTIONAL_OF[kind] ?? {})
      .filter((k) => chunk[k] !== undefined && chunk[k] !== null)
      .map((k) => `${k} ${quoted(chunk[k])}`)
      .join(", ");
    if (said) this.#note(`${kind}; ${said}`, `${NOT_KEPT_CHUNKS[kind]!}; ${said}`);
    else this.#note(kind, NOT_KEPT_CHUNKS[kind]!);
    return [];
  }

  #note(key: string, message: string, rule = NOT_KEPT): void {
    if (this.#noted.has(key)) return;
    if (room(this.notes)) this.#noted.add(key); // (past it, not held: counted by the notes)
    keepNote(this.notes, { pointer: `/${this.#count}`, rule, message });
  }

  #mint(): string {
    this.#minted++;
    if (this.#opener !== null) {
      const opener = this.#opener;
      this.#opener = null;
      return opener;
    }
    return `${this.#prefix}${this.#minted}`;
  }

  /** An AgentEvent (Python's `_event`); `shown`: what the chunk shows of keys the event leaves out, which a carrier
   * may not contradict either (a tool-input-available's `toolName`). */
  #event(kind: string, fields: Obj = {}, more: Obj = {}, shown: Obj = {}): Obj {
    const out: Obj = { type: kind, id: this.#mint(), createdAt: this.#clock() };
    if (this.#reply !== null && this.#reply !== undefined && !NO_REPLY_ID.has(kind)) out.replyId = this.#reply;
    assignOwn(out, fields);
    for (const [k, v] of Object.entries(more)) if (v !== null && v !== undefined) out[k] = v;
    const rest = this.#rest.get(kind);
    this.#rest.delete(kind);
    if (rest !== undefined && Object.keys(rest).length) {
      for (const key of Object.keys(rest)) {
        const value = rest[key] as Json;
        if (has(shown, key) && takenName(value) && value !== shown[key]) this.#conflict(kind, key, value, shown[key]);
        else if (!has(out, key) || settable(kind, key, value, out[key])) setOwn(out, key, value);
        else if (!sameJson(value, out[key])) this.#conflict(kind, key, value, out[key]);
      }
      if (has(rest, "replyId") && kind !== "AGENT_START") {
        this.#reply = rest.replyId;
        if (this.#reply === null) delete out.replyId; // (carried null: the event had none)
      }
    }
    return out;
  }

  /** A carried key that would change what the chunk itself says: not applied, said (Python's `_conflict`). */
  #conflict(kind: string, key: string, value: unknown, visible: unknown): void {
    const message = `${AI_SDK_CARRIER} ${quoted(key, 40)} ${quoted(value, 60)} contradicts ${kind} ${quoted(visible, 60)}: not applied`;
    const problem = { pointer: `/${this.#count}`, rule: "ui-carrier-conflict", message };
    if (this.strict) throw new AiSdkError([problem]);
    keepNote(this.notes, problem);
  }

  #fail(pointer: string, rule: string, message: string): never {
    throw new AiSdkError([{ pointer, rule, message }]);
  }

  #check(chunk: Json, index: number): string {
    if (!isObj(chunk)) this.#fail(`/${index}`, "type", `a UI message chunk is an object, not ${typeName(chunk)}`);
    const kind = chunk.type;
    if (typeof kind !== "string") {
      this.#fail(has(chunk, "type") ? `/${index}/type` : `/${index}`, kind === undefined || kind === null ? "required" : "type", "a UI message chunk needs a string 'type'");
    }
    let required = REQUIRED[kind];
    if (!has(REQUIRED, kind)) {
      if (kind.startsWith("data-") && kind.length > 5) required = { data: ANY };
      else this.#fail(`/${index}/type`, "enum", `${quoted(kind)} is no UI message chunk type (ai 7: uiMessageChunkSchema)`);
    }
    for (const [key, want] of Object.entries(required!)) {
      if (!has(chunk, key)) this.#fail(`/${index}`, "required", `a ${kind} chunk needs ${quoted(key)}`);
      if (want !== ANY && !kindOk(chunk[key], want)) this.#fail(`/${index}/${key}`, "type", `${key} must be a ${want}`);
    }
    for (const [key, want] of [...Object.entries(OPTIONAL), ...Object.entries(OPTIONAL_OF[kind] ?? {})]) {
      if (has(chunk, key) && chunk[key] !== null && !has(required!, key) && !kindOk(chunk[key], want)) {
        this.#fail(`/${index}/${key}`, "type", `${key} must be a ${want}`);
      }
    }
    if (kind === "tool-input-start" && chunk.inputEncoding !== undefined && chunk.inputEncoding !== null && !INPUT_ENCODINGS.has(chunk.inputEncoding)) {
      this.#fail(`/${index}/inputEncoding`, "enum", 'inputEncoding must be "json" or "text"');
    }
    if (kind === "finish" && chunk.finishReason !== undefined && chunk.finishReason !== null && !FINISH_REASONS.has(chunk.finishReason)) {
      this.#fail(`/${index}/finishReason`, "enum", `finishReason ${quoted(chunk.finishReason)} is not one of ${FINISH_REASONS_SAID}`);
    }
    return kind;
  }

  #carrier(chunk: Obj, index: number): Obj[] {
    this.#carried = true;
    const data = chunk.data;
    if (isObj(data) && isObj(data.event)) {
      const event: Obj = { ...data.event };
      event.id = this.#mint();
      if (!has(event, "createdAt")) event.createdAt = this.#clock();
      if (event.type === "TOOL_RESULT_START" && typeof event.toolCallId === "string") this.#openResults.add(event.toolCallId);
      return [event];
    }
    if (isObj(data) && data.uiOnly === true) {
      this.#skip = true;
      if (typeof data.opener === "string") this.#opener = data.opener;
      return [];
    }
    if (isObj(data) && typeof data.rest === "string" && isObj(data.fields)) {
      const fields = data.fields;
      if (data.rest === "TOOL_RESULT") { // (its own shape: the result's events and its end's fields)
        const deltas = has(fields, "deltas") ? fields.deltas : [];
        const end = has(fields, "end") ? fields.end : {};
        if (!Array.isArray(deltas) || !deltas.every(isObj)) {
          this.#fail(`/${index}/data/fields/deltas`, "type", "a tool result's carried deltas are a list of events");
        }
        if (!isObj(end)) this.#fail(`/${index}/data/fields/end`, "type", "a tool result's carried end is an object of fields");
      }
      this.#rest.set(data.rest, fields);
      return [];
    }
    this.#fail(`/${index}/data`, "type", `a ${AI_SDK_CARRIER} chunk's data is {event} or {rest, fields}`);
  }

  #data(chunk: Obj, kind: string): Obj[] {
    if (has(chunk, "id")) this.#note("data-id", "a data chunk's id (a later one with the same id replaces it): CUSTOM events are not replaced");
    return [this.#event("CUSTOM", {}, { name: kind.slice(5), value: chunk.data })];
  }

  /** A `start` naming the message the one before it named, or no message after another `start`: the AI SDK's
   * reader goes on with that UIMessage (it starts a new one only for another id), where the decoder starts another
   * reply (two messages): said (rule `duplicate`, at the chunk), once per id (a start of no id, once per message it
   * goes on with). */
  #sameMessage(chunk: Obj): void {
    const messageId = chunk.messageId;
    const started = this.#uiStarted;
    this.#uiStarted = true;
    if (typeof messageId !== "string") {
      if (started) {
        // (a messageId of another type is said by #check, the chunk not read)
        const on = this.#uiMessage === null ? "the message before it" : `message ${quoted(this.#uiMessage)}`;
        this.#note(
          `start-none:${on}`,
          `start names no message after a start: the AI SDK's reader goes on with ${on} (one UIMessage); decoded as another reply (two messages)`,
          "duplicate",
        );
      }
      return;
    }
    if (messageId === this.#uiMessage) {
      const said = quoted(messageId);
      this.#note(
        `start:${said}`,
        `start names message ${said} again: the AI SDK's reader goes on with that message (one UIMessage); decoded as another reply of that id (two messages)`,
        "duplicate",
      );
    }
    this.#uiMessage = messageId;
  }

  #start(chunk: Obj): Obj[] {
    const rest = this.#rest.get("AGENT_START") ?? {};
    this.#reply = typeof chunk.messageId === "string" ? chunk.messageId : (rest.replyId ?? null);
    if (this.#reply === null && !this.#rest.has("AGENT_START")) this.#reply = `${this.#prefix}message-${this.#minted + 1}`;
    this.#calls.clear();
    this.#sources = [];
    if (chunk.messageMetadata !== undefined && chunk.messageMetadata !== null && !this.#carried) this.#note("messageMetadata", NOT_KEPT_CHUNKS["message-metadata"]!);
    return [this.#event("AGENT_START")];
  }

  #finishStep(): Obj[] {
    this.#stepOpen = false;
    const event = this.#event("MODEL_CALL_END");
    if (this.#sources.length && !has(event, "metadata")) event.metadata = { grounding: { provider: "ai-sdk", sources: this.#sources } };
    this.#sources = [];
    return [event];
  }

  #finish(chunk: Obj): Obj[] {
    const out: Obj[] = [];
    const reason = chunk.finishReason;
    if (chunk.messageMetadata !== undefined && chunk.messageMetadata !== null && !this.#carried) this.#note("messageMetadata", NOT_KEPT_CHUNKS["message-metadata"]!);
    if (this.#sources.length) this.#note("sources-after-step", "source-url after the last finish-step: no model call to hold it");
    if (typeof reason === "string" && !this.#carried) {
      if (has(GENERATE_REASONS, reason)) out.push(this.#event("REQUEST_STOP", {}, { generateReason: GENERATE_REASONS[reason] }));
      else if (reason !== "stop") this.#note(`finishReason:${reason}`, `finishReason ${quoted(reason)}: agentmsg's generate reasons have none for it`);
    }
    out.push(this.#event("AGENT_END"));
    this.#reply = null;
    this.#carried = false;
    return out;
  }

  #callStart(callId: string, name: string): Obj {
    this.#calls.set(callId, { name, streamed: false, open: true });
    return this.#event("TOOL_CALL_START", {}, { toolCallId: callId, toolCallName: name });
  }

  #toolInputEnd(chunk: Obj): Obj[] {
    const out: Obj[] = [];
    const callId: string = chunk.toolCallId;
    const name: string = chunk.toolName;
    let call = this.#calls.get(callId);
    if (call === undefined || !call.open) {
      out.push(this.#callStart(callId, name));
      call = this.#calls.get(callId)!;
    }
    const given = chunk.input;
    const end: Obj = { toolCallId: callId };
    const shown: Obj = {};
    if (name !== call.name) end.toolCallName = name;
    else shown.toolCallName = name; // (the name the call started with: a carrier may not name another)
    if (chunk.type === "tool-input-error") {
      if (!call.streamed) out.push(this.#event("TOOL_CALL_DELTA", {}, { toolCallId: callId, delta: typeof given === "string" ? given : JSON.stringify(given) }));
      if (!this.#carried) end.metadata = { argumentsError: chunk.errorText };
    } else if (isObj(given)) {
      end.input = given;
    } else if (!call.streamed) {
      out.push(this.#event("TOOL_CALL_DELTA", {}, { toolCallId: callId, delta: JSON.stringify(given) }));
    }
    call.open = false;
    out.push(this.#event("TOOL_CALL_END", end, {}, shown));
    return out;
  }

  #toolOutput(chunk: Obj): Obj[] {
    const out: Obj[] = [];
    if (chunk.preliminary) {
      this.#note("preliminary", "a preliminary tool output (the final one replaces it): not kept");
      return out;
    }
    const callId: string = chunk.toolCallId;
    const rest = this.#rest.get("TOOL_RESULT") ?? {};
    this.#rest.delete("TOOL_RESULT");
    const name = this.#calls.get(callId)?.name ?? null;
    if (this.#openResults.has(callId)) this.#openResults.delete(callId);
    else out.push(this.#event("TOOL_RESULT_START", {}, { toolCallId: callId, toolCallName: name }));
    const kind = chunk.type;
    if (kind === "tool-output-denied" && chunk.errorText !== undefined && chunk.errorText !== null) {
      // a denied result has no output: the AI SDK's chunk has no errorText, nor an output-denied part one
      const said = `errorText ${quoted(chunk.errorText)} of tool call ${quoted(callId)}`;
      this.#note(said, `${said}: a denied tool output has no text (the AI SDK's tool-output-denied chunk has no errorText, its reader ignores one)`);
    }
    if (has(rest, "deltas")) {
      // (createdAt absent, null or empty: now; anything else kept, the reducer judges it: as Python's)
      for (const d of rest.deltas) {
        const created = d.createdAt;
        out.push({ ...d, id: this.#mint(), createdAt: created === undefined || created === null || created === "" ? this.#clock() : created });
      }
    } else if (kind !== "tool-output-denied") {
      let text = kind === "tool-output-available" ? chunk.output : chunk.errorText;
      if (typeof text !== "string") text = JSON.stringify(text);
      if (text) out.push(this.#event("TOOL_RESULT_TEXT_DELTA", {}, { toolCallId: callId, toolCallName: name, delta: text }));
    }
    const state = { "tool-output-available": "success", "tool-output-error": "error", "tool-output-denied": "denied" }[kind as string];
    const end = this.#event("TOOL_RESULT_END", {}, { toolCallId: callId, toolCallName: name, state });
    assignOwn(end, (rest.end ?? {}) as Obj);
    if (has(end, "state") && end.state === null) delete end.state;
    out.push(end);
    return out;
  }

  #file(chunk: Obj): Obj[] {
    const built = this.#rest.get("DATA_BLOCK");
    if (built !== undefined) {
      this.#rest.delete("DATA_BLOCK");
      const out: Obj[] = [];
      const m = DATA_URL.exec(chunk.url);
      if (m) out.push(this.#event("DATA_BLOCK_DELTA", {}, { blockId: built.blockId, delta: m[2] }));
      out.push(this.#event("DATA_BLOCK_END", built));
      return out;
    }
    const rest = this.#rest.get("DATA_BLOCK_START");
    if (rest === undefined) {
      this.#minted++;
      const start = this.#event("DATA_BLOCK_START", {}, { blockId: `file-${this.#minted}`, block: blockOfFile(chunk) });
      return [start, this.#event("DATA_BLOCK_END", {}, { blockId: start.blockId })];
    }
    this.#rest.delete("DATA_BLOCK_START");
    const start = this.#event("DATA_BLOCK_START", rest);
    if (!has(start, "block")) start.block = blockOfFile(chunk);
    return [start];
  }
}

/** The AgentEvents of a whole UI message stream (each chunk fed, then closed). */
export function decodeAiSdk(chunks: Iterable<Json>, options: AiSdkDecoderOptions = {}): Obj[] {
  const decoder = new AiSdkDecoder(options);
  const out: Obj[] = [];
  for (const chunk of chunks) out.push(...decoder.feed(chunk));
  return out.concat(decoder.close());
}
