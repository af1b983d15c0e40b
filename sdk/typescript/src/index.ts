// @agentmsg/client: the agentmsg event reducer, an SSE reader over fetch with resume, typed
// AgentScope events and messages (the types @agentmsg/schema generates, shipped inside). No
// dependencies; browser-safe ESM (no Node built-ins, no eval); runs in Node 20 too.
export { Reducer, ReducerError, reduceEvents, isBase64Fragment, EVENT_TYPES, CUT_RULE } from "./reducer.js";
export type { Problem, ReducerOptions } from "./reducer.js";
export { SSEDecoder, encodeSSE, MAX_EVENT_LENGTH } from "./sse.js";
export type { SSEEvent, SSEProblem, SSELimits } from "./sse.js";
export { streamSSE, streamEvents, reduceSSE, StreamError } from "./client.js";
export type { StreamOptions, RetryOptions, RestartInfo, EventStreamOptions, ReduceSSEOptions } from "./client.js";
export { canonicalMessage } from "./canonical.js";
export { AGUIDecoder, AGUIError, AGUI_WRAPPED, decodeAGUI } from "./agui.js";
export type { AGUIDecoderOptions, AGUIProblem } from "./agui.js";
export { AiSdkDecoder, AiSdkError, AI_SDK_CARRIER, decodeAiSdk } from "./aisdk.js";
export type { AiSdkDecoderOptions, AiSdkProblem } from "./aisdk.js";
export { validateBlock, validateMessage } from "./validate.js";
export type { SchemaProblem } from "./validate.js";
export type { ValidateFunction, ValidationErrorObject } from "@agentmsg/schema/compiled";
export type { AgentEvent, Msg, ContentBlock, ChatUsage } from "@agentmsg/schema/types";
