// The event reducer: folds an AgentScope event stream back into one assistant message per reply, rule
// for rule as agentmsg's Python reducer (agentmsg/events/reducer.py; docs/events.md has the rules) and
// checked against the same vectors (tests/conformance/reducer/) and against it on random streams. The
// same stream gives the same messages and problems (pointer + rule) in both runtimes.
//
// Tolerant by default: bad input is fixed by a documented rule and recorded in `problems`. With
// `validate` given (strict mode, e.g. `validateEvent` from "@agentmsg/client/strict"), each event is
// checked first and the first problem throws a ReducerError. Every message built is checked against the
// msg schema with a validator compiled ahead of time (no `eval`, no `new Function`); what the stream
// carried that does not make a valid message is left out and reported. Messages come out in the wire
// form (key order, defaults, nulls) that Python and Java write.
//
// The parts: state.ts (what is remembered), handlers.ts (one handler per event type), build.ts (the
// message and its salvage), check.ts (AGENT_RESULT coverage), json.ts (JSON as the codec reads it).
import type { AgentEvent, Msg } from "@agentmsg/schema/types";
import { build, closeReply } from "./build.js";
import { checkResults } from "./check.js";
import { apply } from "./handlers.js";
import { LEGACY_EVENT_TYPES, TooDeep, event as legacyEvent } from "./legacy.js";
import type { Note } from "./legacy.js";
import { shortRepr, pythonType } from "./repr.js";
import { ReducerError, State, isObject, short } from "./state.js";
import type { Json, Obj, Problem, Reply } from "./state.js";

export { ReducerError };
export type { Problem } from "./state.js";
export { EVENT_TYPES, isBase64Fragment } from "./handlers.js";

export interface ReducerOptions {
  /** Reduce the events forwarded from this subagent (`source`) instead of the top level. */
  source?: string | null;
  /** Default message name when neither AGENT_START nor AGENT_RESULT gives one. */
  name?: string | null;
  /** Duplicates are detected among the last 4,096 to 8,192 event ids (default 4096); null remembers all. */
  dedupeWindow?: number | null;
  /** Strict mode: check each event first (pointer relative to the event); the first problem throws. */
  validate?: (event: unknown) => { pointer: string; rule: string; message: string }[];
  /** Blocks, tool calls and tool results one reply may have open at once (default 1024, Python's
   * limits.max_open_blocks): beyond it the one opened first is closed (problem `max-open-blocks`). */
  maxOpenBlocks?: number;
  /** Problems kept (default 10,000); more are counted, and `problems` ends with one `max-problems`
   * entry saying how many were left out. A whole number of at least 0 (0 keeps none, counting them all);
   * null keeps all. */
  maxProblems?: number | null;
}

/** Incremental event → message reducer. */
export class Reducer {
  readonly #st: State;
  readonly #source: string | null;
  readonly #validate: ReducerOptions["validate"];
  readonly #window: number | null;
  #seen = new Set<string>();
  #seenOld = new Set<string>();
  #cut: Msg | null = null;

  constructor(options: ReducerOptions = {}) {
    this.#source = options.source ?? null;
    this.#validate = options.validate;
    this.#window = options.dedupeWindow === undefined ? 4096 : options.dedupeWindow;
    if (this.#window !== null && !(this.#window >= 1)) throw new RangeError("dedupeWindow must be at least 1 (or null)");
    // (a negative bound made every START fail inside the reducer, every block lost, as in Python)
    if (options.maxOpenBlocks != null && !(Number.isInteger(options.maxOpenBlocks) && options.maxOpenBlocks >= 1)) {
      throw new RangeError("maxOpenBlocks must be a whole number of at least 1");
    }
    if (options.maxProblems != null && !(Number.isInteger(options.maxProblems) && options.maxProblems >= 0)) {
      throw new RangeError("maxProblems must be a whole number of at least 0");
    }
    this.#st = new State(options.validate !== undefined, options.name ?? null, options.maxOpenBlocks ?? 1024, options.maxProblems === undefined ? 10_000 : options.maxProblems);
  }

  /** What the tolerant rules had to fix, in order (JSON pointer `/<event index>/...` + rule). */
  get problems(): Problem[] {
    const st = this.#st;
    return st.omitted ? [...st.problems, { pointer: "", rule: "max-problems", message: `${st.omitted} more problems were not kept` }] : [...st.problems];
  }

  /** Events fed so far, skipped ones and unreadable input included (the next event's index). */
  get count(): number {
    return this.#st.count;
  }

  /** Reduce one event (a parsed JSON object). */
  feed(event: AgentEvent | Obj): void {
    const st = this.#st;
    const index = st.count++;
    if (!isObject(event)) {
      st.problem(index, "", "type", `not an event object: ${pythonType(event)}`);
      return;
    }
    const e = event as Obj;
    if (this.#validate) {
      if (typeof e.type === "string" && LEGACY_EVENT_TYPES.has(e.type)) {
        // refused with its own rule, before the schema says what the legacy shape breaks
        const notes: Note[] = [];
        try {
          legacyEvent(e, notes);
        } catch (x) {
          if (!(x instanceof TooDeep)) throw x;
          // (its legacy keys nest past the limit in their current form)
          throw new ReducerError([{ pointer: `/${index}${x.pointer}`, rule: "max-depth", message: x.message }]);
        }
        if (notes.length) throw new ReducerError([{ ...notes[0]!, pointer: `/${index}${notes[0]!.pointer}` }]);
      }
      const errors = this.#validate(e);
      if (errors.length) throw new ReducerError(errors.map((p) => ({ ...p, pointer: `/${index}${p.pointer}` })));
    }
    // (Plain property reads: "source" and "id" are no Object.prototype names, and JSON has no undefined.)
    const source = e.source;
    if ((source === undefined ? null : source) !== this.#source) return;
    const id = e.id === undefined ? null : e.id;
    if (typeof id === "string") {
      if (this.#isReplay(id)) return;
    } else if (id !== null) {
      st.problem(index, "/id", "type", `event id ${short(id)} is not a string: not checked for duplicates`);
    }
    apply(st, e, index);
  }

  /** Record input a transport could not read as an event (e.g. SSE data that is not JSON): one problem
   * with pointer `/<index>` (rule `json` unless given), counted as one event, as Python's reducer does.
   * `pointer`: where in the event (data nested too deep: the array or object that crosses the limit). */
  feedUnreadable(message: string, rule = "json", pointer = ""): void {
    const st = this.#st;
    st.problem(st.count++, pointer, rule, message);
  }

  /** Record a problem a transport found with the event it is about to feed (pointer `/<its index>`). */
  report(message: string, rule: string): void {
    this.#st.problem(this.#st.count, "", rule, message);
  }

  /** The message being assembled, as it stands (null between replies). Doesn't change state. */
  snapshot(): Msg | null {
    const reply = this.#st.reply;
    return reply === null ? null : build(reply, false, this.#st.defaultName, false);
  }

  /** The messages of the replies completed so far. */
  messages(): Msg[] {
    return [...this.#st.done];
  }

  /** End of stream: close an open reply; every message. A reply the stream cut short (no AGENT_END, or a
   * model call, block, tool call or tool result still open) is kept with what arrived, marked INTERRUPTED,
   * and said: one problem (rule `incomplete_stream`, pointer `/<index of the reply's first event>`, naming
   * what was open), and `cut` is its message. Strict mode records it too, without throwing: a cut stream is
   * a fact of the transport, not an event that breaks a rule, and the messages received are still returned. */
  finish(): Msg[] {
    const st = this.#st;
    const r = st.reply;
    if (r !== null) {
      const open = stillOpen(r);
      const cut = r.explicit || open.length > 0;
      closeReply(st, r, cut);
      if (cut) {
        const msg = st.done[st.done.length - 1] as Msg;
        this.#cut = msg;
        const what = [...(r.explicit ? ["no AGENT_END"] : []), ...(open.length ? [`open: ${open.join(", ")}`] : [])].join("; ");
        st.add({ pointer: `/${r.origin}`, rule: CUT_RULE, message: `the stream ended inside reply ${String(msg.id)} (${what}): kept with what arrived, marked INTERRUPTED` });
      }
    }
    return [...st.done];
  }

  /** The message `finish` closed because the stream ended inside its reply (the last such, when the reducer
   * was fed again after a finish), else null. Its generate reason is INTERRUPTED, as is that of a reply
   * AgentScope itself reports interrupted (REQUEST_STOP): this says the stream was cut. */
  get cut(): Msg | null {
    return this.#cut;
  }

  /** Whether each completed message covers its reply's AGENT_RESULT (replies without one are not
   * checked): one problem (rule `agent-result`) per disagreement. AGENT_RESULT is AgentScope Java's own
   * rebuild of the reply's last model call, so it is not expected to equal the message; what must hold:
   * its role is ASSISTANT, its text and thinking occur in the message's, each of its tool calls is in the
   * message with the same id, name and input. */
  checkResults(): Problem[] {
    return checkResults(this.#st.done, this.#st.results);
  }

  /** Whether an event id is among the recent ones (a replay); remembers it otherwise. */
  #isReplay(id: string): boolean {
    if (this.#seen.has(id) || this.#seenOld.has(id)) return true;
    this.#seen.add(id);
    if (this.#window !== null && this.#seen.size >= this.#window) {
      this.#seenOld = this.#seen;
      this.#seen = new Set();
    }
    return false;
  }
}

/** A key or name as Python's `short_repr(key, 40)` quotes it (a null is Python's `None`, a number its digits). */
const quote40 = (key: Json): string => shortRepr(key, 40);

/** The rule of the problem `Reducer.finish` records for a reply the stream cut short (Python's `CUT_RULE`). */
export const CUT_RULE = "incomplete_stream";
const MAX_NAMED = 10; // open things a cut problem names (the rest are counted)

/** What is still open in a reply, in the order it was started: its model calls, blocks, tool calls and tool
 * results (the first MAX_NAMED named, the rest counted), as Python's reducer words it. */
function stillOpen(r: Reply): string[] {
  const named: [number, string][] = [];
  for (const [key, b] of r.byBlock) named.push([b.origin, `${b.kind} block ${quote40(r.shown(r.byBlock, key))}`]);
  for (const key of r.calls.keys()) {
    const call = r.byCall.get(key)!;
    named.push([call.origin, `tool call ${quote40(r.shown(r.calls, key))} (${quote40(typeof call.name === "string" ? call.name : "")})`]);
  }
  for (const [key, t] of r.byResult) named.push([t.origin, `tool result ${quote40(r.shown(r.byResult, key))} (${quote40(t.name ?? "")})`]);
  named.sort((a, b) => a[0] - b[0]);
  const parts = named.slice(0, MAX_NAMED).map(([, text]) => text);
  if (named.length > MAX_NAMED) parts.push(`${named.length - MAX_NAMED} more`);
  if (r.modelOpen > 0) parts.unshift(r.modelOpen === 1 ? "a model call" : `${r.modelOpen} model calls`);
  return parts;
}

/** Reduce a whole event stream: one assistant message per agent reply. */
export function reduceEvents(events: Iterable<AgentEvent | Obj>, options: ReducerOptions = {}): Msg[] {
  const r = new Reducer(options);
  for (const e of events) r.feed(e);
  return r.finish();
}
