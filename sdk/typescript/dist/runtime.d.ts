/** An ajv error, as the compiled validators report it. */
export interface ValidationErrorObject {
    instancePath: string;
    schemaPath: string;
    keyword: string;
    params: Record<string, unknown>;
    message?: string;
}
/** A compiled validator: true when valid; otherwise `errors` holds what failed. */
export interface ValidateFunction {
    (data: unknown): boolean;
    errors?: ValidationErrorObject[] | null;
}
/** Length in code points, as JSON Schema counts `minLength`/`maxLength` (a surrogate pair is one). */
export declare function ucs2length(s: string): number;
/** RFC 3339 `date-time` (a zone is required): real calendar dates, hours/minutes/seconds in range, a
 * leap second only at 23:59 UTC. */
export declare function dateTime(s: unknown): boolean;
/** The formats the schemas use, as the compiled validators look them up. */
export declare const formats: {
    "date-time": {
        validate: typeof dateTime;
    };
};
