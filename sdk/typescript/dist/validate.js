// Schema checks compiled ahead of time (generated/validators.js): no ajv at run time, no eval.
import { msg } from "./generated/validators.js";
export const problems = (errors) => (errors ?? []).map((e) => ({ pointer: e.instancePath, rule: e.keyword, message: e.message ?? e.keyword }));
/** Check a message against the msg schema (role rules included): [] when valid. */
export function validateMessage(value) {
    return msg(value) ? [] : problems(msg.errors);
}
