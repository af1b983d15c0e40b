/** An ajv error, as the compiled validators report it. */
export interface ValidationErrorObject {
  instancePath: string;
  schemaPath?: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}
/** A compiled validator: true when valid; otherwise `errors` holds what failed. */
export interface ValidateFunction {
  (data: unknown): boolean;
  errors?: ValidationErrorObject[] | null;
}
/** A problem found by a schema check: JSON pointer, rule (a JSON Schema keyword or an `x-rule`) and a sentence. */
export interface SchemaProblem {
  pointer: string;
  rule: string;
  message: string;
}
/** Length in code points, as JSON Schema counts `minLength`/`maxLength`. */
export declare function ucs2length(s: string): number;
/** RFC 3339 `date-time` (the format check the compiled validators run). */
export declare function dateTime(s: unknown): boolean;
/** The formats the compiled validators look up. */
export declare const formats: Record<string, { validate: (s: unknown) => boolean }>;
/** The problems a compiled validator found in `value` ([] when valid), as agentmsg's Python `validate()`
 * reports them (pointer and rule), sorted by pointer, rule and message. */
export declare function problemsOf(check: ValidateFunction, value: unknown): SchemaProblem[];
/** Compare strings by code points (the order Python sorts `str` in): negative, 0 or positive. */
export declare function compareCodePoints(a: string, b: string): number;
