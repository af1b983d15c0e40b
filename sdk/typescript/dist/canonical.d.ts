/** How a property is written: see scripts/build.mjs (shapes). */
export interface PropShape {
    key: string;
    mode: "required" | "default" | "nullable" | "optional";
    shape: Shape;
    alt?: string;
    default?: unknown;
}
/** A titled object's name, a tagged union by `type`, an array, or null: kept as it is. */
export type Shape = string | {
    union: Record<string, Shape>;
} | {
    array: Shape;
} | null;
export type Shapes = Record<string, PropShape[]>;
/** A value (already valid against its schema) in canonical form. */
export declare function canonical(value: unknown, shape: Shape): unknown;
/** A whole message (valid against the msg schema) in canonical wire form. */
export declare function canonicalMessage<T>(msg: T): T;
