import type { ValidationErrorObject } from "./runtime.js";
/** A problem found by a schema check: JSON pointer, rule (JSON Schema keyword) and message. */
export interface SchemaProblem {
    pointer: string;
    rule: string;
    message: string;
}
export declare const problems: (errors: ValidationErrorObject[] | null | undefined) => SchemaProblem[];
/** Check a message against the msg schema (role rules included): [] when valid. */
export declare function validateMessage(value: unknown): SchemaProblem[];
