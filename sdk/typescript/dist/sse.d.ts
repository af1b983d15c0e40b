/** One dispatched SSE event. */
export interface SSEEvent {
    data: string;
    /** The `event` field, "message" when absent. */
    event: string;
    /** The last event id in effect when this event was dispatched. */
    id: string;
    /** The `retry` field of this event (milliseconds), if any. */
    retry: number | null;
}
/** Incremental parser: `feed(chunk)` returns the events the chunk completes. Chunks may split
 * anything, even a CRLF or a UTF-8 sequence (bytes are decoded with a streaming TextDecoder). */
export declare class SSEDecoder {
    /** The last event id seen (what a reconnect sends as `Last-Event-ID`). */
    lastEventId: string;
    /** The last `retry` value seen, in milliseconds. */
    retry: number | null;
    private utf8;
    private buffer;
    private started;
    private pendingCR;
    private data;
    private eventType;
    private eventRetry;
    feed(chunk: string | Uint8Array): SSEEvent[];
    /** End of stream. As the spec says, an event not followed by a blank line is discarded. */
    close(): SSEEvent[];
    private line;
}
/** One SSE event block (ends with a blank line); multi-line data becomes several `data:` lines. */
export declare function encodeSSE(data: string, options?: {
    id?: string | null;
    event?: string | null;
    retry?: number | null;
}): string;
