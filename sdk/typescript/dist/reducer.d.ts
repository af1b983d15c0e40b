import type { AgentEvent, Msg } from "./generated/types.js";
/** A problem the tolerant rules fixed (or, in strict mode, the one that stopped the reducer). */
export interface Problem {
    /** `/<event index><pointer into the event>` */
    pointer: string;
    /** A JSON Schema keyword (`required`, `type`, `enum`, `pattern`) or `order`. */
    rule: string;
    message: string;
}
/** Thrown in strict mode: the first problem (the reducer keeps what it had). */
export declare class ReducerError extends Error {
    problems: Problem[];
    constructor(problems: Problem[]);
}
export interface ReducerOptions {
    /** Reduce the events forwarded from this subagent (`source`) instead of the top level. */
    source?: string | null;
    /** Default message name when neither AGENT_START nor AGENT_RESULT gives one. */
    name?: string | null;
    /** Duplicates are detected among the last 4,096 to 8,192 event ids (default 4096); null remembers all. */
    dedupeWindow?: number | null;
    /** Strict mode: check each event first (pointer relative to the event); the first problem throws. */
    validate?: (event: unknown) => {
        pointer: string;
        rule: string;
        message: string;
    }[];
}
type Json = any;
type Obj = Record<string, Json>;
type Key = string | number | boolean | null;
declare class Block {
    kind: string;
    text: string;
    open: boolean;
    meta: Json;
    extra: Obj;
    whole: Json;
    name: Json;
    signature: string | null;
    redacted: string | null;
    hadDelta: boolean;
    constructor(kind: string);
}
declare class ToolResult {
    id: Json;
    name: Json;
    output: Json[];
    text: string | null;
    open: boolean;
    state: Json;
    meta: Obj;
    constructor(id: Json, name: Json);
    flush(): void;
    outputs(): Json[];
}
declare class Reply {
    explicit: boolean;
    blocks: (Block | ToolResult)[];
    byBlock: Map<Key, Block>;
    byCall: Map<Key, Block>;
    byResult: Map<Key, ToolResult>;
    msgId: Json;
    name: Json;
    timestamp: string | null;
    usage: Obj | null;
    reason: string | null;
    meta: Obj;
    hitl: Json[];
    result: Json;
    modelOpen: number;
    constructor(explicit: boolean);
}
/** Whether a data delta is base64 once padded to a multiple of 4, exactly as Python's
 * `base64.b64decode(s + "=" * (-len(s) % 4), validate=True)` decides (CPython's strict mode). */
export declare function isBase64Fragment(s: string): boolean;
/** Incremental event → message reducer. */
export declare class Reducer {
    private options;
    /** What the tolerant rules had to fix, in order. */
    problems: Problem[];
    /** Events fed (including skipped ones). */
    count: number;
    private done;
    private reply;
    private seen;
    private seenOld;
    private readonly window;
    constructor(options?: ReducerOptions);
    /** Reduce one event (a parsed JSON object). */
    feed(event: AgentEvent | Obj): void;
    /** The message being assembled, as it stands (null between replies). Doesn't change state. */
    snapshot(): Msg | null;
    /** The messages of the replies completed so far. */
    messages(): Msg[];
    /** End of stream: close an open reply (as interrupted if it was cut short); every message. */
    finish(): Msg[];
    /** @internal */
    problem(index: number, pointer: string, rule: string, message: string): void;
    /** @internal */
    current(): Reply;
    /** @internal */
    close(r: Reply, interrupted: boolean): void;
    /** @internal */
    get open(): Reply | null;
    set open(r: Reply | null);
}
/** The event types the reducer handles (every AgentScope Java 2.x type). */
export declare const EVENT_TYPES: readonly string[];
/** Reduce a whole event stream: one assistant message per agent reply. */
export declare function reduceEvents(events: Iterable<AgentEvent | Obj>, options?: ReducerOptions): Msg[];
export {};
