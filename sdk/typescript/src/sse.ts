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
  private buffer = "";
  private started = false;
  private pendingCR = false;
  private data: string[] = [];
  private eventType = "";
  private eventRetry: number | null = null;

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
    const buffer = this.buffer + text;
    const out: SSEEvent[] = [];
    let start = 0;
    const length = buffer.length;
    // The next CR and LF are looked up again only once passed (a chunk without CR is scanned once,
    // not once per line).
    let cr = buffer.indexOf("\r", start);
    let lf = buffer.indexOf("\n", start);
    for (;;) {
      if (cr >= 0 && cr < start) cr = buffer.indexOf("\r", start);
      if (lf >= 0 && lf < start) lf = buffer.indexOf("\n", start);
      if (cr < 0 && lf < 0) break;
      let end: number, next: number;
      if (cr < 0 || (lf >= 0 && lf < cr)) {
        end = lf;
        next = lf + 1;
      } else {
        end = cr;
        if (cr + 1 < length) next = buffer.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
        else {
          next = cr + 1;
          this.pendingCR = true;
        }
      }
      this.line(buffer.slice(start, end), out);
      start = next;
    }
    this.buffer = buffer.slice(start);
    return out;
  }

  /** End of stream. As the spec says, an event not followed by a blank line is not dispatched; so that
   * nothing is dropped silently, when such an event (or a part of a line) was pending the result is one
   * event with empty `data` and a `problem` (rule `incomplete`), as Python's decoder does; else []. */
  close(): SSEEvent[] {
    const pending = this.data.length > 0 || this.buffer !== "" || this.tail !== null || this.problem !== null;
    const out: SSEEvent[] = [];
    if (pending) {
      const message = "the stream ended inside an event (what had arrived of it is dropped)";
      out.push({ data: "", event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry, problem: { rule: "incomplete", message } });
    }
    this.tail = null;
    this.bad = false;
    this.problem = null;
    this.buffer = "";
    this.data = [];
    this.eventType = "";
    this.eventRetry = null;
    this.started = false;
    this.pendingCR = false;
    return out;
  }

  private line(line: string, out: SSEEvent[]): void {
    const bad = this.bad;
    this.bad = false;
    if (!line) {
      if (this.data.length || this.problem !== null) out.push({ data: this.data.join("\n"), event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry, problem: this.problem });
      this.data = [];
      this.problem = null;
      this.eventType = "";
      this.eventRetry = null;
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
    if (field === "data") this.data.push(value);
    else if (field === "event") this.eventType = value;
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
