// Schema checks compiled ahead of time (@agentmsg/schema/compiled): no ajv at run time, no eval. The
// problems are those agentmsg's Python validate() reports (pointer and rule): first whether the value
// can be written back as JSON at all, then the schema.
import { block, msg, problemsOf } from "@agentmsg/schema/compiled";
import type { SchemaProblem, ValidateFunction } from "@agentmsg/schema/compiled";
import { jsonProblem } from "./json.js";

export type { SchemaProblem } from "@agentmsg/schema/compiled";

/** The problems of `value` against a compiled schema: [] when valid; a value that cannot be written as
 * JSON (too deep, a lone surrogate, a number that is not finite) is one problem saying so. */
export function schemaProblems(check: ValidateFunction, value: unknown): SchemaProblem[] {
  const bad = jsonProblem(value);
  return bad ? [bad] : problemsOf(check, value);
}

/** Check a message against the msg schema (role rules included): [] when valid, else every problem
 * (JSON pointer, rule, message) as agentmsg's Python `validate(value, "msg")` reports them. */
export function validateMessage(value: unknown): SchemaProblem[] {
  return schemaProblems(msg, value);
}

/** Check a content block against the content-block schema: [] when valid, else every problem. */
export function validateBlock(value: unknown): SchemaProblem[] {
  return schemaProblems(block, value);
}
