import type { SchemaProblem } from "./validate.js";
export type { SchemaProblem } from "./validate.js";
/** Check an agent event against the event schema: [] when valid. Pass it as the Reducer's
 * `validate` option for strict mode: `new Reducer({ validate: validateEvent })`. */
export declare function validateEvent(value: unknown): SchemaProblem[];
