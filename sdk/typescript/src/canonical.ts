// Messages in the wire form Python's agentmsg (and AgentScope Java) writes: keys in schema order,
// defaults filled in, nullable keys written as null, other absent optional keys omitted, accepted
// alternative spellings (image/video `min_pixels`...) read as their canonical camelCase key, keys the
// schema does not declare kept after the declared ones (as Python and Java 1.1 readers keep them). The
// shapes are generated from the schemas (@agentmsg/schema/compiled), so this follows any schema change.
import { MSG, shapes } from "@agentmsg/schema/compiled";
import type { Shape } from "@agentmsg/schema/compiled";
import { isObject, setOwn } from "./state.js";
import type { Obj } from "./state.js";

/** A value (already valid against its schema) in canonical form. */
export function canonical(value: unknown, shape: Shape): unknown {
  if (shape === null || value === null || value === undefined) return value;
  if (typeof shape === "string") {
    if (!isObject(value)) return value;
    const out: Obj = {};
    const props = shapes[shape]!;
    for (const p of props) {
      let v = Object.hasOwn(value, p.key) ? value[p.key] : p.alt !== undefined ? value[p.alt] : undefined;
      if (v === undefined || v === null) {
        if (p.mode === "default") v = structuredCloneJson(p.default);
        else if (p.mode === "nullable" || (p.mode === "required" && v === null)) v = null;
        else continue;
      }
      out[p.key] = canonical(v, p.shape);
    }
    // Keys the schema does not declare (a newer producer's) are kept, after the declared ones, as they are.
    const known = new Set(props.flatMap((p) => (p.alt === undefined ? [p.key] : [p.key, p.alt])));
    for (const [k, v] of Object.entries(value)) if (!known.has(k) && v !== undefined) setOwn(out, k, v);
    return out;
  }
  if ("array" in shape) return Array.isArray(value) ? value.map((x) => canonical(x, shape.array)) : value;
  if (isObject(value) && typeof value.type === "string" && Object.hasOwn(shape.union, value.type)) {
    return canonical(value, shape.union[value.type]!);
  }
  return value;
}

const structuredCloneJson = (v: unknown): unknown => (v !== null && typeof v === "object" ? JSON.parse(JSON.stringify(v)) : v);

/** A whole message (valid against the msg schema) in canonical wire form. */
export function canonicalMessage<T>(msg: T): T {
  return canonical(msg, MSG) as T;
}
