// Schema checks compiled ahead of time (generated/validators.js): no ajv at run time, no eval.
import { msg } from "./generated/validators.js";
import type { ValidationErrorObject } from "./runtime.js";

/** A problem found by a schema check: JSON pointer, rule (JSON Schema keyword) and message. */
export interface SchemaProblem {
  pointer: string;
  rule: string;
  message: string;
}

export const problems = (errors: ValidationErrorObject[] | null | undefined): SchemaProblem[] =>
  (errors ?? []).map((e) => ({ pointer: e.instancePath, rule: e.keyword, message: e.message ?? e.keyword }));

/** Check a message against the msg schema (role rules included): [] when valid. */
export function validateMessage(value: unknown): SchemaProblem[] {
  return msg(value) ? [] : problems(msg.errors);
}
