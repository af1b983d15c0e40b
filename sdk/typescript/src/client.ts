// Server-sent events over `fetch` and `ReadableStream` (any method, headers and body, unlike
// EventSource), with automatic reconnect: `Last-Event-ID` resumes where the stream broke, with
// exponential backoff between attempts. A resume the server can no longer serve (HTTP 409: agentmsg's
// endpoint no longer holds the events after that id, or never sent it) starts the stream over from its
// beginning when the caller can take it (`onRestart`; reduceSSE does, with a fresh Reducer).
// Browser-safe (no Node built-ins); runs in Node 20 too.
import type { AgentEvent, Msg } from "@agentmsg/schema/types";
import { Reducer } from "./reducer.js";
import type { ReducerOptions } from "./reducer.js";
import { MAX_DEPTH, readEventJson, readEventJsonOrRule } from "./json.js";
import { SSEDecoder } from "./sse.js";
import type { SSEEvent, SSELimits, SSEProblem } from "./sse.js";

export interface RetryOptions {
  /** First delay before reconnecting, in ms (default 500; a server's `retry:` field replaces it, but not
   * below 100 ms, or below this delay when it is lower). */
  initialDelay?: number;
  /** Longest delay, in ms (default 10,000). */
  maxDelay?: number;
  /** Give up after this many attempts in a row that deliver no event (default 8), and after this many
   * restarts in a row (`onRestart`: resumes refused with HTTP 409, none taken between them). */
  maxAttempts?: number;
}

export interface StreamOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: BodyInit | null;
  /** Resume after this event id (sent as `Last-Event-ID` on the first request too). */
  lastEventId?: string;
  signal?: AbortSignal;
  /** Reconnect when the connection breaks before the end event (default true). */
  reconnect?: boolean;
  retry?: RetryOptions;
  /** The SSE event type that marks the end of the stream (default "end", what agentmsg's endpoint
   * sends); null when the server has none (then a closed connection ends the stream). */
  endEvent?: string | null;
  /** The SSE event type with which the server reports that its source failed (default "error", what
   * agentmsg's endpoint sends, data `{"message": ...}`): the iteration throws a StreamError. */
  errorEvent?: string | null;
  /** Called before each reconnect attempt. */
  onRetry?: (info: { attempt: number; delay: number; lastEventId: string; error: unknown }) => void;
  /** A resume the server refuses with HTTP 409 (agentmsg's endpoint: the events after `lastEventId` are
   * no longer in its replay buffer, or the id is not one it sent, e.g. after a server restart): when
   * given, the stream starts over from its beginning (a request without `Last-Event-ID`, so the server
   * sends the oldest events it still holds) and this is called first, so the consumer can drop what it
   * built from the events before; the events that follow repeat or replace those. Restarts in a row (no
   * resume taken by the server between them) back off: the first is immediate, the next wait as failed
   * attempts do (`initialDelay`, doubling, at most `maxDelay`; `onRetry` says each wait), and after
   * `maxAttempts` of them the iteration throws a StreamError (status 409): a server that refuses every
   * resume would otherwise make the client start over after every drop, forever. Without `onRestart` such
   * a 409 throws a StreamError (status 409) at once, as any other 4xx. */
  onRestart?: (info: RestartInfo) => void;
  /** Milliseconds without a byte from the server (an event or a keepalive comment) after which the connection
   * is taken for dead and the stream resumes on a new one (a half-open connection, after a network change or a
   * proxy that drops it silently, would otherwise wait forever). Default 300,000 (5 minutes: what Node's own
   * fetch already allows a silent response body, so browsers and Node behave alike, and long enough for a
   * server that sends no keepalives while an agent thinks); 0 waits forever. agentmsg's endpoint sends a
   * keepalive after 15 s of silence, so 45,000 suits it (the viewer's). */
  idleTimeout?: number;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: typeof globalThis.fetch;
  /** The SSE reader's limits, in UTF-8 bytes (default 64 MiB each, Python's `limits.max_event_bytes`): set
   * them as the Python side's are, and the same events are dropped (and said) in both. */
  limits?: SSELimits;
}

/** Why a stream started over (`onRestart`). */
export interface RestartInfo {
  /** The id the refused resume was after. */
  lastEventId: string;
  /** The HTTP status (409). */
  status: number;
  /** What the server said (the response text, at most 300 characters). */
  message: string;
}

/** A response the client will not retry (a 4xx other than 408/429, or not text/event-stream). */
export class StreamError extends Error {
  constructor(message: string, public status: number | null = null) {
    super(message);
    this.name = "StreamError";
  }
}

function serverMessage(data: string): string {
  try {
    const value: unknown = JSON.parse(data);
    if (value && typeof value === "object" && typeof (value as { message?: unknown }).message === "string") return (value as { message: string }).message;
  } catch {
    // not JSON: the data as it is
  }
  return data;
}

/** `idleTimeout`'s default, in ms: a half-open connection was waited on forever in a browser (Node's fetch gives
 * up on a body silent for 300 s). */
const DEFAULT_IDLE_TIMEOUT = 300_000;

/** The shortest reconnect delay a server's `retry:` field can set, in ms (unless `initialDelay` is lower). */
const MIN_SERVER_RETRY = 100;

/** `text` as UTF-8, one character per byte (a header value for fetch, which takes characters up to U+00FF as
 * the bytes they are). */
function utf8ByteString(text: string): string {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  const bytes = new TextEncoder().encode(text);
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return out;
}

/** Why fetch would refuse this request at once (a URL it cannot parse, a method or header value it does not
 * take), or null: such a TypeError looks like a network error, and was retried until the client gave up
 * (35 s with the default delays). (The body is left out: checking it could use up a stream.) */
function badRequest(url: string | URL, method: string, headers: Record<string, string>): string | null {
  if (typeof Request !== "function") return null;
  try {
    new Request(url, { method, headers });
    return null;
  } catch (x) {
    return String((x as Error)?.message ?? x);
  }
}

/** The start of a response's text, at most about `limit` bytes read ("" if it fails); the rest is not read (a
 * 409's whole text was read to keep 300 characters of it: memory without bound, and no restart at all while
 * a server kept sending it). */
async function leadingText(response: Response, limit: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (let n = 0; n < limit; ) {
      const { value, done } = await reader.read();
      if (done) break;
      n += value.length;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // what arrived is enough
  } finally {
    reader.cancel().catch(() => {});
  }
  return text;
}

/** The next read, or an error when nothing arrives within `ms` (the caller's finally cancels the reader, which
 * closes the connection and settles the read still pending). */
function readWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<ReadableStreamReadResult<Uint8Array>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no data for ${ms} ms (idleTimeout): the connection is taken for dead`)), ms);
  });
  return Promise.race([reader.read(), silent]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/**
 * The SSE events at `url`, across reconnects. Each connection after the first sends the last event
 * id seen as `Last-Event-ID`, so a server that keeps a replay buffer (agentmsg's ASGI endpoint)
 * resumes without loss; an attempt that delivers events resets the backoff. The iteration ends at
 * the end event (or, with `endEvent: null`, when a connection closes), on HTTP 204, or on abort. SSE events
 * that came with the end event after it (one cut short there too) are not delivered: one event in the end event's
 * place says them (`problem.rule` "order", with their count); no more is read.
 */
export async function* streamSSE(url: string | URL, options: StreamOptions = {}): AsyncGenerator<SSEEvent, void, undefined> {
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const endEvent = options.endEvent === undefined ? "end" : options.endEvent;
  const errorEvent = options.errorEvent === undefined ? "error" : options.errorEvent;
  const initial = options.retry?.initialDelay ?? 500;
  const maxDelay = options.retry?.maxDelay ?? 10_000;
  const maxAttempts = options.retry?.maxAttempts ?? 8;
  const idle = options.idleTimeout ?? DEFAULT_IDLE_TIMEOUT;
  let lastEventId = options.lastEventId ?? "";
  // A server's `retry:` is not taken below this: `retry: 0` on connections that each deliver an event (so
  // the backoff never grows) reconnected in a tight loop, hundreds of requests a second.
  const floor = Math.min(initial, MIN_SERVER_RETRY);
  let base = initial;
  let failures = 0;
  let restarts = 0; // resumes refused with 409 since the server last took one
  for (;;) {
    let error: unknown = null;
    let delivered = false;
    try {
      const headers: Record<string, string> = { accept: "text/event-stream", "cache-control": "no-cache", ...options.headers };
      // As UTF-8 (what the SSE spec sends and Python's readers decode); fetch takes a header value as bytes,
      // one per character up to U+00FF, and refused any other id with a TypeError (retried until it gave up).
      if (lastEventId) headers["last-event-id"] = utf8ByteString(lastEventId);
      const method = options.method ?? "GET";
      const request = options.fetch ? null : badRequest(url, method, headers); // (a fetch of its own may take more)
      if (request !== null) throw new StreamError(`cannot request ${String(url)}: ${request}`);
      const response = await doFetch(url, { method, headers, body: options.body ?? null, signal: options.signal ?? null, cache: "no-store" });
      if (response.status === 204) return;
      if (response.status === 409 && lastEventId && options.onRestart) {
        // The server cannot resume after lastEventId: start over from the beginning (no Last-Event-ID).
        const message = (await leadingText(response, 1200)).trim().slice(0, 300);
        // A server that refuses every resume (no replay buffer, or one that never holds the events) made the
        // client start over after every drop, forever, about twice a second: restarts in a row back off as
        // failed attempts do, and maxAttempts of them end the stream.
        restarts++;
        if (restarts > maxAttempts) {
          throw new StreamError(`gave up after the server refused ${restarts} resumes in a row (HTTP 409): ${message}`, response.status);
        }
        const info = { lastEventId, status: response.status, message };
        lastEventId = "";
        options.onRestart(info);
        if (restarts > 1) {
          const delay = Math.min(maxDelay, base * 2 ** (restarts - 2));
          options.onRetry?.({ attempt: restarts, delay, lastEventId, error: new StreamError(`HTTP 409 to ${restarts} resumes in a row: ${message}`, 409) });
          await sleep(delay, options.signal);
        }
        continue;
      }
      if (!response.ok) {
        const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
        await response.body?.cancel();
        if (!retryable) throw new StreamError(`HTTP ${response.status} from ${String(url)}`, response.status);
        throw new Error(`HTTP ${response.status}`);
      }
      const type = response.headers.get("content-type") ?? "";
      if (type.split(";")[0]!.trim().toLowerCase() !== "text/event-stream") {
        await response.body?.cancel();
        throw new StreamError(`expected text/event-stream from ${String(url)}, got ${type || "no content type"}`, response.status);
      }
      if (!response.body) throw new Error("response has no body");
      if (lastEventId) restarts = 0; // the server took this resume
      const reader = response.body.getReader();
      const decoder = new SSEDecoder(options.limits);
      decoder.lastEventId = lastEventId;
      try {
        for (;;) {
          const { value, done } = idle > 0 ? await readWithin(reader, idle) : await reader.read();
          if (done) break;
          const batch = decoder.feed(value);
          for (let k = 0; k < batch.length; k++) {
            const event = batch[k]!;
            lastEventId = event.id;
            if (decoder.retry !== null) base = Math.max(decoder.retry, floor);
            if (endEvent !== null && event.event === endEvent) {
              // The stream ends here: nothing after it is read (the client waits for no more). Events that came
              // with it are said, not dropped silently (as Python's readers say what a saved body has after it),
              // and so is an event that came in part (the decoder holds it: the end of what was read is inside it).
              const rest = [...batch.slice(k + 1), ...decoder.close()];
              if (rest.length > 0) yield afterEnd(event, rest[0]!, rest.length);
              return;
            }
            if (errorEvent !== null && event.event === errorEvent) throw new StreamError(`the server's event source failed: ${serverMessage(event.data)}`);
            delivered = true;
            failures = 0;
            yield event;
          }
          if (decoder.retry !== null) base = Math.max(decoder.retry, floor);
          // (Not the decoder's lastEventId: an event the connection breaks inside may have had its `id`
          // line already; a resume after it would skip that event. Only a dispatched event's id counts.)
        }
      } finally {
        await reader.cancel().catch(() => {}); // closes the connection when iteration stops early
      }
      if (endEvent === null || options.reconnect === false) {
        // The stream is over: an event it ended inside is said (rule `incomplete`), not dropped silently.
        // (With a reconnect instead, the resume after the last whole event sends that event again.)
        yield* decoder.close();
        return;
      }
      error = new Error("the connection closed before the end of the stream");
    } catch (x) {
      if (x instanceof StreamError || options.signal?.aborted) throw x;
      if (options.reconnect === false) throw x;
      error = x;
    }
    if (!delivered) failures++;
    if (failures >= maxAttempts) throw new StreamError(`gave up after ${failures} attempts without an event: ${String((error as Error)?.message ?? error)}`);
    const delay = Math.min(maxDelay, base * 2 ** Math.max(0, failures - 1));
    options.onRetry?.({ attempt: failures, delay, lastEventId, error });
    await sleep(delay, options.signal);
  }
}

/** The problem event for `count` SSE events that came after the end event (`first` the first of them): rule
 * `order`, in the end event's place (reduceSSE counts it as one event, as Python's reduce_stream does). */
function afterEnd(end: SSEEvent, first: SSEEvent, count: number): SSEEvent {
  const what = count === 1 ? "1 SSE event" : `${count} SSE events`;
  const message = `the stream ended here (the end event); ${what} after it (the first: id ${JSON.stringify(first.id).slice(0, 80)}, type ${JSON.stringify(first.event).slice(0, 80)}) not read`;
  return { data: "", event: end.event, id: end.id, retry: null, problem: { rule: "order", message } };
}

export interface EventStreamOptions extends StreamOptions {
  /** Called for an SSE event whose data is not JSON (it is skipped): not JSON.parse's, or JSON Python's
   * reader refuses too (a lone surrogate escape, a number beyond a double, nested deeper than MAX_DEPTH, 254 levels). */
  onInvalid?: (event: SSEEvent, error: unknown) => void;
  /** Called for an SSE event the reader had to fix or could not finish (`event.problem`): rule `utf-8`
   * (invalid UTF-8 replaced by U+FFFD; the event is kept) or `incomplete` (the stream ended inside it;
   * skipped). */
  onProblem?: (event: SSEEvent, problem: SSEProblem) => void;
}

/** Agent events are read saying each line of no SSE field (`problem.rule` "sse"), unless the limits say otherwise. */
const sayingUnknownLines = <T extends StreamOptions>(options: T): T => ({
  ...options,
  limits: { ...options.limits, sayUnknownLines: options.limits?.sayUnknownLines ?? true },
});

/** The agent events at `url` (each SSE event's data parsed as JSON), across reconnects. */
export async function* streamEvents(url: string | URL, options: EventStreamOptions = {}): AsyncGenerator<AgentEvent, void, undefined> {
  for await (const sse of streamSSE(url, sayingUnknownLines(options))) {
    if (sse.problem !== null) {
      options.onProblem?.(sse, sse.problem);
      if (sse.problem.rule !== "utf-8") continue;
    }
    const value = readEventJson(sse.data);
    if (value === undefined) {
      options.onInvalid?.(sse, new SyntaxError("data is not JSON"));
      continue;
    }
    yield value as AgentEvent;
  }
}

export interface ReduceSSEOptions extends Omit<EventStreamOptions, "onRestart"> {
  /** Options for the Reducers created (the first one unless `reducer` is given, and one per restart). */
  reducerOptions?: ReducerOptions;
  /** Feed this reducer first instead of a new one. */
  reducer?: Reducer;
  /** Called after each event is fed: render `reducer.messages()` and `reducer.snapshot()`. */
  onEvent?: (event: AgentEvent, reducer: Reducer) => void;
  /** What to do when the server can no longer resume the stream (HTTP 409 to a resume): "restart"
   * (the default) starts over from the beginning of the stream with a fresh Reducer, after calling
   * `onRestart`; "fail" throws a StreamError. */
  onGap?: "restart" | "fail";
  /** Called when the stream starts over: `reducer` is the fresh Reducer the events now go to,
   * `previous` the one that is dropped (what it built is superseded: render from `reducer`). */
  onRestart?: (info: RestartInfo & { reducer: Reducer; previous: Reducer }) => void;
}

/**
 * Stream the events at `url` into a Reducer; resolves to every message once the stream ends. A resume
 * the server can no longer serve starts over with a fresh Reducer (see `onGap`), so the messages are
 * never built from a stream with a hole in it: with a replay buffer that still holds the whole stream
 * they are complete; if the buffer has moved on, the restarted stream begins at the oldest event the
 * server holds and the Reducer reports the blocks it sees no start of (rule `order`).
 */
export async function reduceSSE(url: string | URL, options: ReduceSSEOptions = {}): Promise<Msg[]> {
  let reducer = options.reducer ?? new Reducer(options.reducerOptions);
  const restart = (info: RestartInfo): void => {
    const previous = reducer;
    reducer = new Reducer(options.reducerOptions);
    options.onRestart?.({ ...info, reducer, previous });
  };
  const { onRestart: _, onGap, ...rest } = options;
  for await (const sse of streamSSE(url, sayingUnknownLines({ ...rest, onRestart: onGap === "fail" ? undefined : restart }))) {
    const problem = sse.problem;
    if (problem !== null) {
      // As Python's reduce_stream: invalid UTF-8 is reported with the event it was replaced in; an event
      // that could not be read counts as one event.
      options.onProblem?.(sse, problem);
      const where = `SSE event ${JSON.stringify(sse.id)} (${sse.event})`;
      if (problem.rule !== "utf-8") {
        reducer.feedUnreadable(`${where}: ${problem.message}: event skipped`, problem.rule);
        continue;
      }
      reducer.report(`${where}: ${problem.message}`, problem.rule);
    }
    const read = readEventJsonOrRule(sse.data);
    if (!("value" in read)) {
      // Counted as one event, as Python's reduce_stream counts it: problem pointers stay the same. (Too deep: said
      // at the array or object that crosses the limit, as Python says it.)
      const why =
        read.rule === "max-depth"
          ? `data is nested deeper than ${MAX_DEPTH} levels (limits.max_depth)`
          : read.rule === "lone-surrogate"
            ? "data is not JSON: a lone UTF-16 surrogate escape"
            : "data is not JSON";
      reducer.feedUnreadable(`SSE event ${JSON.stringify(sse.id)} (${sse.event}): ${why}: event skipped`, read.rule, read.pointer);
      options.onInvalid?.(sse, new SyntaxError(why));
      continue;
    }
    const event = read.value;
    reducer.feed(event as AgentEvent);
    options.onEvent?.(event as AgentEvent, reducer);
  }
  return reducer.finish();
}
