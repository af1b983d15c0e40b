// An incremental text/event-stream parser, as the WHATWG HTML spec says and as agentmsg's Python
// SSEDecoder does (agentmsg/_wire/sse.py): LF, CRLF and CR line ends (also split across chunks), a leading
// BOM, comment lines, multi-line `data`, `event`, `id` (ignored when it holds NUL) and `retry`. Nothing
// changes silently: invalid UTF-8 is replaced by U+FFFD as the spec says and reported on the event (rule
// `utf-8`; in text chunks, a lone UTF-16 surrogate likewise), and `close()` reports an event the stream
// ended inside (rule `incomplete`), as Python's does. Its limits count UTF-8 bytes, as Python's do.

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
/** Python's default `limits.max_event_bytes` (64 MiB), in UTF-8 bytes. */
export const MAX_EVENT_LENGTH = 64 * 1024 * 1024;

/** Limits of one SSEDecoder, in UTF-8 bytes as the stream sends them (Python's SSEDecoder `max_line_bytes`
 * and `max_event_bytes`, counted the same way: a line without its line end; an event's data lines each
 * with one more for its line end; an invalid byte as one byte): a longer line, or an event's data beyond
 * `maxEventLength`, is dropped and reported (rules `max-line-bytes`, `max-event-bytes`), as Python's
 * decoder does; memory holds one line or one event's data at the most. */
export interface SSELimits {
  maxLineLength?: number;
  maxEventLength?: number;
  /** Say each line of no SSE field (the spec ignores it) as an event with no data and a problem (rule `sse`):
   * agent events read so (an event's JSON that lost its `data:` was lost without a word), as Python's readers. */
  sayUnknownLines?: boolean;
}

const NON_ASCII = /[^\x00-\x7f]/;

/** The length of `text` in UTF-8 bytes (a lone surrogate counts 3, as U+FFFD does), without a copy. */
export function utf8Length(text: string): number {
  const first = text.search(NON_ASCII);
  if (first < 0) return text.length;
  let n = text.length;
  for (let i = first; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++, (n += 2); // a pair: 4 bytes
    else n += 2;
  }
  return n;
}

const SURROGATE = /[\ud800-\udfff]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const encoder = new TextEncoder();

/** `text` as UTF-8, each lone surrogate written as the invalid byte 0xFF: decoded, it is one U+FFFD, reported
 * (rule `utf-8`), as Python's decoder does with a str chunk. */
function withInvalidBytes(text: string): Uint8Array {
  const parts = text.split(LONE_SURROGATE).map((part) => encoder.encode(part));
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, parts.length - 1));
  let at = 0;
  parts.forEach((part, k) => {
    if (k) out[at++] = 0xff;
    out.set(part, at);
    at += part.length;
  });
  return out;
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
  private heldLength = 0; // their UTF-8 bytes
  private excess = 0; // what U+FFFD replacing invalid bytes adds to the UTF-8 length of the line being read
  private high: string | null = null; // a high surrogate that ended a text chunk: the next one may end its pair
  private started = false;
  private pendingCR = false;
  private data: string[] = [];
  private eventType = "";
  private eventRetry: number | null = null;
  private skip = false; // dropping the rest of a line over the limit
  // The event's data so far, a line end each: in UTF-8 bytes once it may be near the limit (`exact`), before
  // that in code units (which 3 times bound its bytes, so that most text is never counted byte by byte).
  private size = 0;
  private exact = false;
  private dataExcess = 0; // what U+FFFD for invalid bytes adds to the UTF-8 length of the data lines
  private readonly maxLine: number;
  private readonly maxEvent: number;
  private readonly sayUnknown: boolean;

  constructor(limits: SSELimits = {}) {
    // (0 is the default too, as in Python's decoder.)
    this.maxLine = limits.maxLineLength || MAX_EVENT_LENGTH;
    this.maxEvent = limits.maxEventLength || MAX_EVENT_LENGTH;
    this.sayUnknown = limits.sayUnknownLines === true;
  }

  feed(chunk: string | Uint8Array): SSEEvent[] {
    if (typeof chunk === "string") {
      // Text: a surrogate pair split across two chunks is one character (UTF-16 text); a surrogate still
      // alone cannot be UTF-8: it goes through the bytes path as an invalid byte (U+FFFD, reported).
      let text = chunk;
      if (this.high !== null) {
        text = this.high + text;
        this.high = null;
      }
      // (After bytes that ended inside a UTF-8 sequence, the text goes on from them: as bytes, in order. Read
      // as text, it came before them, and the sequence was read after it, in the wrong line or event.)
      if (this.tail === null && !SURROGATE.test(text)) return this.feedText(text);
      const last = text.charCodeAt(text.length - 1);
      let high: string | null = null;
      if (last >= 0xd800 && last <= 0xdbff) {
        high = text.slice(-1);
        text = text.slice(0, -1);
      }
      const out = this.tail !== null || LONE_SURROGATE.test(text) ? this.feed(withInvalidBytes(text)) : this.feedText(text);
      // held after this chunk is read (held before, the bytes path took it as this chunk's first byte: its
      // first line began with U+FFFD, a field no more, and was lost)
      this.high = high;
      return out;
    }
    let bytes = chunk;
    if (this.high !== null) {
      this.high = null;
      bytes = new Uint8Array(chunk.length + 1);
      bytes[0] = 0xff; // the high surrogate the last text chunk ended with stays alone
      bytes.set(chunk, 1);
    }
    if (this.tail !== null) {
      const joined = new Uint8Array(this.tail.length + bytes.length);
      joined.set(this.tail);
      joined.set(bytes, this.tail.length); // (with the 0xFF of a held high surrogate, which came after the tail)
      bytes = joined;
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
        let excess = 0;
        try {
          text = this.strict.decode(line);
        } catch {
          text = this.lossy.decode(line);
          this.bad = true; // the line this piece ends (or goes on with) holds the replacement
          excess = utf8Length(text) - line.length; // the limits count the bytes sent
        }
        out.push(...this.feedText(text, excess));
      }
      return out;
    }
  }

  /** `excess`: how many more UTF-8 bytes `chunk` has than the bytes it was decoded from (U+FFFD for invalid
   * bytes); such a chunk holds at most one line end, at its end. */
  private feedText(chunk: string, excess = 0): SSEEvent[] {
    this.excess += excess;
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
      const excess = this.excess;
      this.excess = 0;
      if (this.skip) this.skip = false; // the end of a line over the limit: dropped with it
      else if (this.held.length) {
        this.held.push(text.slice(start, end));
        const line = this.held.join("");
        this.held = [];
        this.heldLength = 0;
        this.line(line, out, excess);
      } else this.line(text.slice(start, end), out, excess);
      start = next;
    }
    if (start < length && !this.skip) {
      const rest = text.slice(start);
      this.heldLength += utf8Length(rest);
      if (this.heldLength - this.excess > this.maxLine) {
        this.held = [];
        this.heldLength = 0;
        this.excess = 0;
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
    const early = this.high !== null ? this.feed(new Uint8Array(0)) : []; // a high surrogate held: alone
    const pending = this.data.length > 0 || this.held.length > 0 || this.tail !== null || this.problem !== null || this.skip;
    const out: SSEEvent[] = early;
    if (pending) {
      const message = "the stream ended inside an event (what had arrived of it is dropped)";
      out.push({ data: "", event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry, problem: { rule: "incomplete", message } });
    }
    this.tail = null;
    this.bad = false;
    this.problem = null;
    this.held = [];
    this.heldLength = 0;
    this.excess = 0;
    this.clearData();
    this.eventType = "";
    this.eventRetry = null;
    this.started = false;
    this.pendingCR = false;
    this.skip = false;
    return out;
  }

  /** A line over the limit: it is dropped with the event's data (Python: rule max-line-bytes). */
  private overlong(): void {
    this.clearData();
    this.problem = { rule: "max-line-bytes", message: `a line longer than ${this.maxLine} bytes was dropped with the event's data` };
  }

  private clearData(): void {
    this.data = [];
    this.size = 0;
    this.exact = false;
    this.dataExcess = 0;
  }

  /** One line, without its line end; `excess`: what U+FFFD for invalid bytes adds to its UTF-8 length. */
  private line(line: string, out: SSEEvent[], excess: number): void {
    const bad = this.bad;
    this.bad = false;
    if (!line) {
      if (this.data.length || this.problem !== null) out.push({ data: this.data.join("\n"), event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry, problem: this.problem });
      this.clearData();
      this.problem = null;
      this.eventType = "";
      this.eventRetry = null;
      return;
    }
    if (line.length > this.maxLine || (line.length * 3 > this.maxLine && utf8Length(line) - excess > this.maxLine)) {
      this.overlong();
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" comment
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    if (this.sayUnknown && field !== "data" && field !== "event" && field !== "id" && field !== "retry") {
      const why = `a line of no SSE field (no \`data:\`) is skipped, as the SSE spec reads it: ${JSON.stringify(line.slice(0, 80))}`;
      out.push({ data: "", event: "message", id: this.lastEventId, retry: null, problem: { rule: "sse", message: why } });
      return;
    }
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (bad && this.problem === null && (field === "data" || field === "event" || field === "id") && value.includes("\ufffd")) {
      this.problem = { rule: "utf-8", message: `invalid UTF-8 (in the ${field} field) replaced by U+FFFD` };
    }
    if (field === "data") {
      if (this.problem !== null && this.problem.rule !== "utf-8") return; // this event's data was dropped
      // (The invalid bytes of a data line are in its value.)
      if (this.exact) this.size += utf8Length(value) - excess + 1;
      else {
        this.size += value.length + 1;
        this.dataExcess += excess;
        if (this.size * 3 > this.maxEvent) {
          this.exact = true; // it may be near the limit: its bytes
          this.size = this.data.reduce((n, d) => n + utf8Length(d) + 1, utf8Length(value) + 1) - this.dataExcess;
        }
      }
      if (this.size > this.maxEvent) {
        this.clearData();
        this.problem = { rule: "max-event-bytes", message: `the event's data is longer than ${this.maxEvent} bytes: dropped` };
        return;
      }
      this.data.push(value);
    } else if (field === "event") this.eventType = value;
    else if (field === "id") {
      if (!value.includes("\0")) this.lastEventId = value;
    } else if (field === "retry" && /^[0-9]{1,15}$/.test(value)) { // (Python's reader takes at most 15 digits)
      this.eventRetry = Number(value);
      this.retry = this.eventRetry;
    }
  }
}

/** One SSE event block (ends with a blank line); multi-line data becomes several `data:` lines: a line end in
 * it (LF, CRLF or CR: SSE's) starts the next one, so the data reads back with LF line ends, nothing lost. An
 * id or event type holding a line break (or an id holding NUL) throws a RangeError. */
export function encodeSSE(data: string, options: { id?: string | null; event?: string | null; retry?: number | null } = {}): string {
  // An id or event type holding a line break would end its field there and start another (the rest read as a
  // field of its own: a forged event); a decoder ignores an id holding NUL. Refused, as Python's encode_event does.
  const badId = !!options.id && /[\r\n\0]/.test(options.id);
  if (badId || (!!options.event && /[\r\n]/.test(options.event))) {
    throw new RangeError(`an SSE ${badId ? "id" : "event"} cannot hold a line break (CR or LF)${badId ? " or NUL" : ""}`);
  }
  let head = "";
  if (options.id) head += `id: ${options.id}\n`;
  if (options.event) head += `event: ${options.event}\n`;
  if (options.retry !== undefined && options.retry !== null) head += `retry: ${options.retry}\n`;
  return head + data.split(/\r\n|\r|\n/).map((l) => `data: ${l}\n`).join("") + "\n";
}
