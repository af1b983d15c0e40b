import type { AgentEvent, Msg } from "./generated/types.js";
import { Reducer } from "./reducer.js";
import type { ReducerOptions } from "./reducer.js";
import type { SSEEvent } from "./sse.js";
export interface RetryOptions {
    /** First delay before reconnecting, in ms (default 500; a server's `retry:` field replaces it). */
    initialDelay?: number;
    /** Longest delay, in ms (default 10,000). */
    maxDelay?: number;
    /** Give up after this many attempts in a row that deliver no event (default 8). */
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
    onRetry?: (info: {
        attempt: number;
        delay: number;
        lastEventId: string;
        error: unknown;
    }) => void;
    /** The fetch to use (default globalThis.fetch). */
    fetch?: typeof globalThis.fetch;
}
/** A response the client will not retry (a 4xx other than 408/429, or not text/event-stream). */
export declare class StreamError extends Error {
    status: number | null;
    constructor(message: string, status?: number | null);
}
/**
 * The SSE events at `url`, across reconnects. Each connection after the first sends the last event
 * id seen as `Last-Event-ID`, so a server that keeps a replay buffer (agentmsg's ASGI endpoint)
 * resumes without loss; an attempt that delivers events resets the backoff. The iteration ends at
 * the end event (or, with `endEvent: null`, when a connection closes), on HTTP 204, or on abort.
 */
export declare function streamSSE(url: string | URL, options?: StreamOptions): AsyncGenerator<SSEEvent, void, undefined>;
export interface EventStreamOptions extends StreamOptions {
    /** Called for an SSE event whose data is not JSON (it is skipped). */
    onInvalid?: (event: SSEEvent, error: unknown) => void;
}
/** The agent events at `url` (each SSE event's data parsed as JSON), across reconnects. */
export declare function streamEvents(url: string | URL, options?: EventStreamOptions): AsyncGenerator<AgentEvent, void, undefined>;
export interface ReduceSSEOptions extends EventStreamOptions {
    /** Options for the Reducer created (ignored when `reducer` is given). */
    reducerOptions?: ReducerOptions;
    /** Feed this reducer instead of a new one. */
    reducer?: Reducer;
    /** Called after each event is fed: render `reducer.messages()` and `reducer.snapshot()`. */
    onEvent?: (event: AgentEvent, reducer: Reducer) => void;
}
/** Stream the events at `url` into a Reducer; resolves to every message once the stream ends. */
export declare function reduceSSE(url: string | URL, options?: ReduceSSEOptions): Promise<Msg[]>;
