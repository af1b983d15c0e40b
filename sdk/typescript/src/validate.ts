// Schema checks compiled ahead of time (@agentmsg/schema/compiled): no ajv at run time, no eval.
import { msg, problemsOf } from "@agentmsg/schema/compiled";
import type { SchemaProblem } from "@agentmsg/schema/compiled";

export type { SchemaProblem } from "@agentmsg/schema/compiled";

/** Check a message against the msg schema (role rules included): [] when valid, else every problem
 * (JSON pointer, rule, message) as agentmsg's Python `validate(value, "msg")` reports them. */
export function validateMessage(value: unknown): SchemaProblem[] {
  return problemsOf(msg, value);
}
