// "@agentmsg/client/strict": the agent-event schema check for the Reducer's strict mode. (The tolerant
// reducer checks events against the same compiled schema, so this entry point adds no code.)
import { event } from "@agentmsg/schema/compiled";
import type { SchemaProblem } from "@agentmsg/schema/compiled";
import { schemaProblems } from "./validate.js";

export type { SchemaProblem } from "@agentmsg/schema/compiled";

/** Check an agent event against the event schema: [] when valid. Pass it as the Reducer's
 * `validate` option for strict mode: `new Reducer({ validate: validateEvent })`. */
export function validateEvent(value: unknown): SchemaProblem[] {
  return schemaProblems(event, value);
}
