// An incremental text/event-stream parser, as the WHATWG HTML spec says and as agentmsg's Python
// SSEDecoder does (agentmsg/_sse.py): LF, CRLF and CR line ends (also split across chunks), a leading
// BOM, comment lines, multi-line `data`, `event`, `id` (ignored when it holds NUL) and `retry`.
/** Incremental parser: `feed(chunk)` returns the events the chunk completes. Chunks may split
 * anything, even a CRLF or a UTF-8 sequence (bytes are decoded with a streaming TextDecoder). */
export class SSEDecoder {
    /** The last event id seen (what a reconnect sends as `Last-Event-ID`). */
    lastEventId = "";
    /** The last `retry` value seen, in milliseconds. */
    retry = null;
    utf8 = new TextDecoder("utf-8", { ignoreBOM: true });
    buffer = "";
    started = false;
    pendingCR = false;
    data = [];
    eventType = "";
    eventRetry = null;
    feed(chunk) {
        let text = typeof chunk === "string" ? chunk : this.utf8.decode(chunk, { stream: true });
        if (!this.started && text) {
            this.started = true;
            if (text.charCodeAt(0) === 0xfeff)
                text = text.slice(1);
        }
        if (!text)
            return []; // nothing decoded yet: state unchanged (an empty chunk between CR and LF too)
        if (this.pendingCR && text.charCodeAt(0) === 10)
            text = text.slice(1); // the LF of a split CRLF
        this.pendingCR = false;
        const buffer = this.buffer + text;
        const out = [];
        let start = 0;
        const length = buffer.length;
        // The next CR and LF are looked up again only once passed (a chunk without CR is scanned once,
        // not once per line).
        let cr = buffer.indexOf("\r", start);
        let lf = buffer.indexOf("\n", start);
        for (;;) {
            if (cr >= 0 && cr < start)
                cr = buffer.indexOf("\r", start);
            if (lf >= 0 && lf < start)
                lf = buffer.indexOf("\n", start);
            if (cr < 0 && lf < 0)
                break;
            let end, next;
            if (cr < 0 || (lf >= 0 && lf < cr)) {
                end = lf;
                next = lf + 1;
            }
            else {
                end = cr;
                if (cr + 1 < length)
                    next = buffer.charCodeAt(cr + 1) === 10 ? cr + 2 : cr + 1;
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
    /** End of stream. As the spec says, an event not followed by a blank line is discarded. */
    close() {
        this.utf8.decode();
        this.buffer = "";
        this.data = [];
        this.eventType = "";
        this.eventRetry = null;
        this.started = false;
        this.pendingCR = false;
        return [];
    }
    line(line, out) {
        if (!line) {
            if (this.data.length)
                out.push({ data: this.data.join("\n"), event: this.eventType || "message", id: this.lastEventId, retry: this.eventRetry });
            this.data = [];
            this.eventType = "";
            this.eventRetry = null;
            return;
        }
        if (line.charCodeAt(0) === 58)
            return; // ":" comment
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.charCodeAt(0) === 32)
            value = value.slice(1);
        if (field === "data")
            this.data.push(value);
        else if (field === "event")
            this.eventType = value;
        else if (field === "id") {
            if (!value.includes("\0"))
                this.lastEventId = value;
        }
        else if (field === "retry" && /^[0-9]+$/.test(value)) {
            this.eventRetry = Number(value);
            this.retry = this.eventRetry;
        }
    }
}
/** One SSE event block (ends with a blank line); multi-line data becomes several `data:` lines. */
export function encodeSSE(data, options = {}) {
    let head = "";
    if (options.id)
        head += `id: ${options.id}\n`;
    if (options.event)
        head += `event: ${options.event}\n`;
    if (options.retry !== undefined && options.retry !== null)
        head += `retry: ${options.retry}\n`;
    return head + data.split("\n").map((l) => `data: ${l}\n`).join("") + "\n";
}
