// An incremental text/event-stream parser, as the WHATWG HTML spec says and as agentmsg's Python
// SSEDecoder does (agentmsg/_sse.py): LF, CRLF and CR line ends (also split across chunks), a leading
// BOM, comment lines, multi-line `data`, `event`, `id` (ignored when it holds NUL) and `retry`. Nothing
// changes silently: invalid UTF-8 is replaced by U+FFFD as the spec says and reported on the event (rule
// `utf-8`), and `close()` reports an event the stream ended inside (rule `incomplete`), as Python's does.

/** What went wrong while reading an event (Python's SSEEvent.problem): rule `utf-8` (invalid UTF-8 in a
 * `data`, `event` or `id` field was replaced by U+FFFD; the event is otherwise whole) or `incomplete`
 * (the stream ended inside this event: `data` is empty, what had arrived of it is dropped). */
export interface SSEProblem {
  rule: string;
  message: string;
}

/** One dispatched SSE event. */
export interface SSEEvent {
  data: string;
  /** The `event` field, "message" when absent. */
  event: string;
  /** The last event id in effect when this event was dispatched. */
  id: string;
  /** The `retry` field of this event (milliseconds), if any. */
  retry: number | null;
  /** What went wrong while reading this event; null when nothing did. */
  problem: SSEProblem | null;
}

const LF = 10;
const CR = 13;
/** Python's default `limits.max_event_bytes` (64 MiB): here in UTF-16 code units, which a line of N UTF-8
 * bytes never exceeds (ASCII text counts the same in both). */
export const MAX_EVENT_LENGTH = 64 * 1024 * 1024;

/** Limits of one SSEDecoder: a longer line, or an event's data beyond `maxEventLength`, is dropped and
 * reported (rules `max-line-bytes`, `max-event-bytes`), as Python's decoder does; memory holds one line
 * or one event's data at the most. */
export interface SSELimits {
  maxLineLength?: number;
  maxEventLength?: number;
}

/** Where a UTF-8 sequence that `bytes` ends inside starts (bytes.length when it ends on a boundary). */
function unfinished(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let j = n - 1; j >= 0 && j >= n - 3; j--) {
    const b = bytes[j]!;
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: its lead is further back
    const need = b >= 0xf0 && b <= 0xf4 ? 4 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xc2 && b <= 0xdf ? 2 : 1;
    return n - j < need ? j : n;
  }
  return n;
}

/** Incremental parser: `feed(chunk)` returns the events the chunk completes. Chunks may split
 * anything, even a CRLF or a UTF-8 sequence (bytes are decoded with a streaming TextDecoder). */
export class SSEDecoder {
  /** The last event id seen (what a reconnect sends as `Last-Event-ID`). */
  lastEventId = "";
  /** The last `retry` value seen, in milliseconds. */
  retry: number | null = null;
  private strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  private lossy = new TextDecoder("utf-8", { ignoreBOM: true });
  private tail: Uint8Array | null = null; // the bytes of a UTF-8 sequence the last chunk ended inside
  private bad = false; // the line being read had invalid UTF-8 (replaced by U+FFFD)
  private problem: SSEProblem | null = null;
  private held: string[] = []; // the pieces of the line being read
  private heldLength = 0;
  private started = false;
  private pendingCR = false;
  private data: string[] = [];
  private eventType = "";
  private eventRetry: number | null = null;
  private skip = false; // dropping the rest of a line over the limit
  private size = 0; // the event's data so far (code units, a line end each)
  private readonly maxLine: number;
  private readonly maxEvent: number;

  constructor(limits: SSELimits = {}) {
    this.maxLine = limits.maxLineLength ?? MAX_EVENT_LENGTH;
    this.maxEvent = limits.maxEventLength ?? MAX_EVENT_LENGTH;
  }

  feed(chunk: string | Uint8Array): SSEEvent[] {
    if (typeof chunk === "string") return this.feedText(chunk);
    let bytes = chunk;
    if (this.tail !== null) {
      bytes = new Uint8Array(this.tail.length + chunk.length);
      bytes.set(this.tail);
      bytes.set(chunk, this.tail.length);
      this.tail = null;
    }
    const cut = unfinished(bytes);
    if (cut < bytes.length) {
      this.tail = bytes.slice(cut);
      bytes = bytes.subarray(0, cut);
    }
    try {
      return this.feedText(this.strict.decode(bytes));
    } catch {
      // Invalid UTF-8 somewhere in the chunk: line by line, so that the lines that hold it are known.
      const out: SSEEvent[] = [];
      let start = 0;
      for (let i = 0; i <= bytes.length; i++) {
        if (i < bytes.length && bytes[i] !== LF && bytes[i] !== CR) continue;
        const line = bytes.subarray(start, Math.min(i + 1, bytes.length));
        start = i + 1;
        if (!line.length) continue;
        let text: string;
        try {
          text = this.strict.decode(line);
        } catch {
          text = this.lossy.decode(line);
          this.bad = true; // the line this piece ends (or goes on with) holds the replacement
        }
        out.push(...this.feedText(text));
      }
      return out;
    }
  }

  private feedText(chunk: string): SSEEvent[] {
    let text = chunk;
    if (!this.started && text) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (!text) return []; // nothing decoded yet: state unchanged (an empty chunk between CR and LF too)
    if (this.pendingCR && text.charCodeAt(0) === 10) text = text.slice(1); // the LF of a split CRLF
    this.pendingCR = false;
    // What is held of the last chunks is the start of one line, with no line end in it: it is kept as its
    // pieces and joined once, when its line ends; only the new text is searched for line ends (joining and
    // searching the held line at every chunk was quadratic in a long line).
    const out: SSEEvent[] = [];
    let start = 0;
    const length = text.length;
    // The next CR and LF are looked up again only once passed (a chunk without CR is scanned once,
    // not once per line).
    let cr = text.indexOf("\r");
    let lf = text.indexOf("\n");
    for (;;) {
      if (cr >= 0 && cr < start) cr = text.indexOf("\r", start);
      if (lf >= 0 && lf < start) lf = text.indexOf("\n", start);
      if (cr < 0 && lf < 0) break;
      let end: number, next: number;
      if (cr < 0 || (lf >= 0 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else {
        end = cr;
        if (cr + 1 < length) next = text.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
        else {
          next = cr + 1;
          this.pendingCR = true;
        }
      }
      if (this.skip) this.skip = false; // the end of a line over the limit: dropped with it
      else if (this.held.length) {
        this.held.push(text.slice(start, end));
        const line = this.held.join("");
        this.held = [];
        this.heldLength = 0;
        this.line(line, out);
      } else this.line(text.slice(start, end), out);
      start = next;
    }
    if (start < length && !this.skip) {
      const rest = text.slice(start);
      this.heldLength += rest.length;
      if (this.heldLength > this.maxLine) {
        this.held = [];
        this.heldLength = 0;
        this.overlong();
        this.skip = true;
      } else this.held.push(rest);
    }
    return out;
  }

  /** End of stream. As the spec says, an event not followed by a blank line is not dispatched; so that
   * nothing is dropped silently, when such an event (or a part of a line) was pending the result is one
   * event with empty `data` and a `problem` (rule `incomplete`), as Python's decoder does; else []. */
  close(): SSEEvent[] {
    const pending = this.data.length > 0 || this.held.length > 0 || this.tail !== null || this.problem !== null || this.skip;
    const out: SSEEvent[] = [];
    if (pending) {
      const message = "the stream ended inside an event (what had arrived of it is dropped)";
      out.push({ data: "", event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry, problem: { rule: "incomplete", message } });
    }
    this.tail = null;
    this.bad = false;
    this.problem = null;
    this.held = [];
    this.heldLength = 0;
    this.data = [];
    this.eventType = "";
    this.eventRetry = null;
    this.started = false;
    this.pendingCR = false;
    this.skip = false;
    this.size = 0;
    return out;
  }

  /** A line over the limit: it is dropped with the event's data (Python: rule max-line-bytes). */
  private overlong(): void {
    this.data = [];
    this.size = 0;
    this.problem = { rule: "max-line-bytes", message: `a line longer than ${this.maxLine} characters was dropped with the event's data` };
  }

  private line(line: string, out: SSEEvent[]): void {
    const bad = this.bad;
    this.bad = false;
    if (!line) {
      if (this.data.length || this.problem !== null) out.push({ data: this.data.join("\n"), event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry, problem: this.problem });
      this.data = [];
      this.size = 0;
      this.problem = null;
      this.eventType = "";
      this.eventRetry = null;
      return;
    }
    if (line.length > this.maxLine) {
      this.overlong();
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (bad && this.problem === null && (field === "data" || field === "event" || field === "id") && value.includes("\ufffd")) {
      this.problem = { rule: "utf-8", message: `invalid UTF-8 (in the ${field} field) replaced by U+FFFD` };
    }
    if (field === "data") {
      if (this.problem !== null && this.problem.rule !== "utf-8") return; // this event's data was dropped
      this.size += value.length + 1;
      if (this.size > this.maxEvent) {
        this.data = [];
        this.size = 0;
        this.problem = { rule: "max-event-bytes", message: `the event's data is longer than ${this.maxEvent} characters: dropped` };
        return;
      }
      this.data.push(value);
    } else if (field === "event") this.eventType = value;
    else if (field === "id") {
      if (!value.includes("\0")) this.lastEventId = value;
    } else if (field === "retry" && /^[0-9]+$/.test(value)) {
      this.eventRetry = Number(value);
      this.retry = this.eventRetry;
    }
  }
}

/** One SSE event block (ends with a blank line); multi-line data becomes several `data:` lines. */
export function encodeSSE(data: string, options: { id?: string | null; event?: string | null; retry?: number | null } = {}): string {
  let head = "";
  if (options.id) head += `id: ${options.id}\n`;
  if (options.event) head += `event: ${options.event}\n`;
  if (options.retry !== undefined && options.retry !== null) head += `retry: ${options.retry}\n`;
  return head + data.split("\n").map((l) => `data: ${l}\n`).join("") + "\n";
}
