// "@agentmsg/client/strict": the agent-event schema check (compiled ahead of time) for the Reducer's
// strict mode. A separate entry point: the event validator is larger than the rest of the client.
import { event } from "./generated/event-validator.js";
import { problems } from "./validate.js";
/** Check an agent event against the event schema: [] when valid. Pass it as the Reducer's
 * `validate` option for strict mode: `new Reducer({ validate: validateEvent })`. */
export function validateEvent(value) {
    return event(value) ? [] : problems(event.errors);
}
