// JSON values as agentmsg's Python codec sees them (agentmsg/_codec/jsontext.py): what can be written back, and
// the one reader whose verdict decides "valid JSON" for tool-call arguments. JavaScript's JSON.parse
// accepts more (lone surrogate escapes, integers beyond 64 bits, numbers that overflow to Infinity):
// those are refused here, so both runtimes agree on what is valid.
import type { SchemaProblem } from "@agentmsg/schema/compiled";
import { pyRepr, shortRepr } from "./repr.js";

/** Nesting of arrays and objects a value may have (agentmsg.limits.max_depth; what JSON is written with). */
export const MAX_DEPTH = 254;
/** The largest JSON text read, in UTF-8 bytes (agentmsg.limits.max_bytes). */
export const MAX_BYTES = 256 * 1024 * 1024;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const SURROGATE = /[\ud800-\udfff]/; // a quick scan first: most text holds none at all
export const hasLoneSurrogate = (s: string): boolean => SURROGATE.test(s) && LONE_SURROGATE.test(s);

const escape = (key: string): string => key.replace(/~/g, "~0").replace(/\//g, "~1");
/** The JSON pointer of a path of keys and indices. */
export const pointerOf = (path: (string | number)[]): string => path.map((p) => `/${escape(String(p))}`).join("");

/** How a problem says that `text`, a string or an object key, holds a lone UTF-16 surrogate (jsontext.py
 * `surrogate_words`). */
const surrogateWords = (text: string): string => `string ${shortRepr(text, 60)} holds a lone UTF-16 surrogate (not encodable as UTF-8)`;

/** The rule and words of a value that is no array or object JSON cannot hold (jsontext.py `_scalar_problem`, in its
 * words: NaN is Python's `nan`), or null. */
function scalarProblem(value: unknown): [string, string] | null {
  switch (typeof value) {
    case "string":
      return hasLoneSurrogate(value) ? ["lone-surrogate", surrogateWords(value)] : null;
    case "number":
      return Number.isFinite(value) ? null : ["json-value", `${pyRepr(value)} is not a JSON number`];
    case "boolean":
      return null;
    default:
      return value === null ? null : ["json-value", `a ${typeof value} is not a JSON value`];
  }
}

/** Whether `value` nests arrays and objects more than `maxDepth` deep (jsontext.py `deeper_than`): iterative, and
 * it stops at the first node that deep, so it costs at most what the value holds. One that shares its members (an
 * array or object met twice: an array of the same array twice, 30 levels down, is 2**30 paths) is asked of
 * {@link deepPointer}, which costs its containers, not its paths. */
export function deeperThan(value: unknown, maxDepth = MAX_DEPTH): boolean {
  if (typeof value !== "object" || value === null) return false;
  const stack: [object, number][] = [[value, 0]];
  const seen = new Set<object>([value]);
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, depth] = top;
    if (depth >= maxDepth) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child !== "object" || child === null) continue;
      if (seen.has(child)) return maxDepth <= 0 || deepPointer(value, maxDepth) !== "";
      seen.add(child);
      stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** A path of keys and indices as a link to its parent's, spelled out only for a problem: a copy of the path per node
 * made a walk quadratic in depth (a million numbers 240 arrays deep: 64 s). */
type Path = { key: string | number; up: Path } | null;
const spelled = (path: Path): string => {
  const keys: (string | number)[] = [];
  for (let p = path; p; p = p.up) keys.push(p.key);
  return pointerOf(keys.reverse());
};

/** The pointer of the first array or object of `value` (document order) nested `maxDepth` levels deep, the one that
 * crosses the limit, or "" when it has none (jsontext.py `deep_value_pointer`; for text, `deep_pointer` names the
 * same one). Iterative, for the error path only: a container walked whole (nothing that deep in it) is not walked
 * again where it is met no deeper, so a value sharing its members costs its containers, not its paths. */
export function deepPointer(value: unknown, maxDepth = MAX_DEPTH): string {
  const stack: [unknown, number, Path, boolean][] = [[value, 0, null, false]];
  const walked = new Map<object, number>(); // (the containers walked whole: the least depth they were walked at)
  while (stack.length) {
    const [node, depth, path, done] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (done) {
      walked.set(node, Math.min(depth, walked.get(node) ?? maxDepth));
      continue;
    }
    if (depth >= maxDepth) return spelled(path);
    if ((walked.get(node) ?? maxDepth) <= depth) continue;
    stack.push([node, depth, path, true]);
    const entries: [string | number, unknown][] = Array.isArray(node) ? node.map((child, i) => [i, child]) : Object.entries(node);
    for (let k = entries.length - 1; k >= 0; k--) {
      const [key, child] = entries[k]!;
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1, { key, up: path }, false]);
    }
  }
  return "";
}

/**
 * The first reason `value` cannot be written back as JSON, in document order (an array's items and an object's
 * members in their order, depth first; an object key where it is, before its value), as Python's check_json_value
 * names it, or null: nested deeper than MAX_DEPTH (rule `max-depth`, at the array or object that crosses the limit),
 * a lone surrogate (`lone-surrogate`; in an object key, at the object's pointer), a number that is not finite or a
 * value JSON has no form for (`json-value`). (Integers beyond 64 bits cannot be told apart from floats once parsed.)
 * A value that shares its members (an array of the same array twice, 30 levels down: 30 arrays, 2**30 values as
 * JSON) and would be written longer than MAX_BYTES is refused first (`max-bytes`, at the deepest array or object
 * whose text is over the limit, jsontext.py `oversized_at`), unless it also nests past `maxDepth` (`max-depth`, as
 * the same value unshared); one within both takes the walk that names, by identity: each container walked whole is
 * not walked again where it is met no deeper.
 * A value that has none costs one walk that keeps no path ({@link holdsProblem}); only one that has takes the walk
 * that names it.
 */
export function jsonProblem(value: unknown, maxDepth = MAX_DEPTH, maxBytes = MAX_BYTES): SchemaProblem | null {
  const held = holdsProblem(value, maxDepth);
  if (held === false) return null;
  const shared = held === SHARED || sharesMembers(value); // (a problem met before a container met twice: asked)
  if (shared) {
    const over = oversizedAt(value, maxBytes, maxDepth);
    if (over !== null) {
      const message = `${over.size} bytes of JSON (a value sharing its members) exceeds the limit of ${maxBytes} (limits.max_bytes)`;
      return { pointer: pointerOf(over.path), rule: "max-bytes", message };
    }
  }
  return firstProblem(value, maxDepth, shared);
}

const SHARED = "shared";

/** Whether `value` holds anything {@link firstProblem} names (jsontext.py check_json_value's walk): iterative, the
 * scalars looked at where their array or object is, only arrays and objects stacked, no path kept; SHARED as soon as
 * an array or object is met twice (walked on, such a value would cost its paths, not its containers). */
function holdsProblem(value: unknown, maxDepth: number): boolean | typeof SHARED {
  if (typeof value !== "object" || value === null) return scalarProblem(value) !== null;
  const stack: [object, number][] = [[value, 0]];
  const seen = new Set<object>([value]);
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, depth] = top;
    if (depth >= maxDepth) return true;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (typeof child === "object" && child !== null) {
          if (seen.has(child)) return SHARED;
          seen.add(child);
          stack.push([child, depth + 1]);
        } else if (scalarProblem(child) !== null && (child !== undefined || i in node)) return true; // (a hole is none)
      }
    } else {
      const record = node as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        if (hasLoneSurrogate(key)) return true;
        const child = record[key];
        if (typeof child === "object" && child !== null) {
          if (seen.has(child)) return SHARED;
          seen.add(child);
          stack.push([child, depth + 1]);
        } else if (scalarProblem(child) !== null) return true;
      }
    }
  }
  return false;
}

/** The members of an array or object, in document order (an array's holes left out). */
const members = (node: object): [string | number, unknown][] =>
  Array.isArray(node) ? node.flatMap((child, i): [number, unknown][] => (i in node ? [[i, child]] : [])) : Object.entries(node);

/** Whether an array or object is met twice in `value` (shared by two parents, or held by itself): small as objects,
 * such a value may be vast as JSON text (jsontext.py `shares_members`). One walk of its containers. */
export function sharesMembers(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const seen = new Set<object>([value]);
  const stack: object[] = [value];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child !== "object" || child === null) continue;
      if (seen.has(child)) return true;
      seen.add(child);
      stack.push(child);
    }
  }
  return false;
}

/** UTF-8 length of a string. */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? (i++, 4) : 3;
  }
  return n;
}

/** The length of what Python's writer (orjson) writes of a string, a number (as JavaScript writes it: a float that
 * is a whole number is written without ".0"), a boolean or null; 0 for what JSON has no form for (the checks
 * refuse it). A string holding a lone surrogate counts 3 bytes a UTF-16 unit, as jsontext.py `_member_size`. */
function scalarSize(value: unknown): number {
  switch (typeof value) {
    case "string":
      return hasLoneSurrogate(value) ? 3 * value.length + 2 : utf8Length(JSON.stringify(value));
    case "number":
      return JSON.stringify(value).length; // (not finite: "null", as orjson writes it)
    case "boolean":
      return value ? 4 : 5;
    default:
      return value === null ? 4 : 0;
  }
}

/** Where `value` is written longer than `maxBytes` bytes of JSON, and how long (jsontext.py `oversized_at`): the path
 * of its deepest array or object whose text is over the limit (from the root, the first member so, as long as there
 * is one), with that text's length; null when it is within, or when it nests more than `maxDepth` levels (the depth
 * checks refuse it). Linear in its object graph: each container's length is counted once and reused where it is met
 * again; one met inside itself (a cycle, which the checks refuse) counts nothing there. */
export function oversizedAt(value: unknown, maxBytes = MAX_BYTES, maxDepth = MAX_DEPTH): { path: (string | number)[]; size: number } | null {
  if (typeof value !== "object" || value === null) return null;
  const sizes = new Map<object, number>();
  const levels = new Map<object, number>();
  const open = new Set<object>();
  const stack: [object, boolean][] = [[value, false]];
  while (stack.length) {
    const [node, ready] = stack.pop()!;
    if (!ready) {
      if (sizes.has(node) || open.has(node)) continue;
      open.add(node);
      stack.push([node, true]);
      for (const child of Array.isArray(node) ? node : Object.values(node)) {
        if (typeof child === "object" && child !== null) stack.push([child, false]);
      }
      continue;
    }
    open.delete(node);
    const entries = members(node);
    let total = 1 + Math.max(Array.isArray(node) ? node.length : entries.length, 1); // (brackets and commas)
    if (Array.isArray(node)) total += 4 * (node.length - entries.length); // (a hole is written null)
    let level = 0;
    for (const [key, child] of entries) {
      if (typeof key === "string") total += scalarSize(key) + 1;
      if (typeof child === "object" && child !== null) {
        total += sizes.get(child) ?? 0;
        level = Math.max(level, levels.get(child) ?? 0);
      } else total += scalarSize(child);
    }
    sizes.set(node, total);
    levels.set(node, level + 1);
  }
  if (sizes.get(value)! <= maxBytes || levels.get(value)! > maxDepth) return null;
  const path: (string | number)[] = [];
  for (let node: object = value; ; ) {
    const deeper = members(node).find(([, c]) => typeof c === "object" && c !== null && c !== node && sizes.get(c)! > maxBytes);
    if (deeper === undefined || path.length > maxDepth) return { path, size: sizes.get(node)! };
    path.push(deeper[0]);
    node = deeper[1] as object;
  }
}

/** The first problem of `value` in document order ({@link jsonProblem}), or null: a walk that keeps each node's path,
 * for the error path only. `memo` (a value sharing its members): an array or object walked whole is not walked again
 * where it is met no deeper (as {@link deepPointer}), so the walk costs its containers, not its paths. */
function firstProblem(value: unknown, maxDepth: number, memo = false): SchemaProblem | null {
  // (what is left to walk, the next one last; an object key holding a lone surrogate is an entry of its own, `key`;
  // `done`: an array or object all of whose members were walked)
  const stack: [unknown, number, Path, boolean, boolean][] = [[value, 0, null, false, false]];
  const walked = new Map<object, number>(); // (the containers walked whole: the least depth they were walked at)
  while (stack.length) {
    const [node, depth, path, key, done] = stack.pop()!;
    if (key) return { pointer: spelled(path), rule: "lone-surrogate", message: `object key: ${surrogateWords(node as string)}` };
    if (typeof node === "object" && node !== null) {
      if (done) {
        walked.set(node, Math.min(depth, walked.get(node) ?? maxDepth));
        continue;
      }
      // (the first array or object that deep in document order: the one deepPointer names)
      if (depth >= maxDepth) return { pointer: spelled(path), rule: "max-depth", message: `nested deeper than ${maxDepth} levels (limits.max_depth)` };
      if (memo) {
        if ((walked.get(node) ?? maxDepth) <= depth) continue;
        stack.push([node, depth, path, false, true]);
      }
      if (Array.isArray(node)) {
        for (let i = node.length - 1; i >= 0; i--) if (i in node) stack.push([node[i], depth + 1, { key: i, up: path }, false, false]);
      } else {
        const record = node as Record<string, unknown>;
        const keys = Object.keys(record);
        for (let k = keys.length - 1; k >= 0; k--) {
          const name = keys[k]!;
          stack.push([record[name], depth + 1, { key: name, up: path }, false, false]);
          if (hasLoneSurrogate(name)) stack.push([name, depth, path, true, false]);
        }
      }
    } else {
      const bad = scalarProblem(node);
      if (bad) return { pointer: spelled(path), rule: bad[0], message: bad[1] };
    }
  }
  return null;
}

const INT_MIN = -(2n ** 63n);
const INT_MAX = 2n ** 64n - 1n;

/** Whether JSON text (already parsed by JSON.parse) holds an integer literal outside [-2^63, 2^64-1]. */
function hasIntegerBeyond64Bits(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      for (i++; text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92) i++;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j]!)) j++;
      const token = text.slice(i, j);
      if (token.length > 18 && !/[.eE]/.test(token)) {
        const n = BigInt(token);
        if (n < INT_MIN || n > INT_MAX) return true;
      }
      i = j - 1;
    }
  }
  return false;
}

/** UTF-8 length of a string, at most `limit + 1` counted. */
function utf8Beyond(s: string, limit: number): boolean {
  if (s.length * 3 <= limit) return false;
  let n = 0;
  for (let i = 0; i < s.length && n <= limit; i++) {
    const c = s.charCodeAt(i);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? (i++, 4) : 3;
  }
  return n > limit;
}

/** JSON text read as agentmsg's codec reads it: the value, or `undefined` when the text is not one JSON
 * value that can be written back as read (over the size or depth limit, a lone surrogate, an integer
 * outside [-2^63, 2^64-1], a number that overflows a double). A byte-order mark (U+FEFF) at the text's start is
 * skipped, as Python's codec skips it (docs/wire-format.md, "Byte-order mark: one policy"); a second one is not. */
export function readJson(text: string): unknown {
  if (utf8Beyond(text, MAX_BYTES)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return undefined;
  }
  if (jsonProblem(value) !== null || hasIntegerBeyond64Bits(text)) return undefined;
  return value;
}

/** The JSON type of a parsed value that is not an object. */
export function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value === "string" ? "string" : typeof value === "boolean" ? "boolean" : "number";
}

/** An event's JSON text (a JSONL line, an SSE event's data) read as Python's reducer reads it (orjson):
 * the value, or `undefined` when it is not JSON, holds a lone surrogate escape or a number that
 * overflows a double, or nests deeper than MAX_DEPTH (254) levels, as Python's readers refuse it (rule `max-depth`). */
export function readEventJson(text: string): unknown {
  const read = readEventJsonOrRule(text);
  return "value" in read ? read.value : undefined;
}

/** {@link readEventJson}, saying why it read nothing: the rule Python's readers give (`max-depth` for a value
 * nested deeper than MAX_DEPTH, as agentmsg's bounded reader says it; `lone-surrogate` for a lone surrogate
 * escape, which JSON.parse accepts and Python's readers refuse, as `agentmsg validate` says it; `json` otherwise),
 * and where in the event: `max-depth` at the first array or object that crosses MAX_DEPTH (as Python's `TooDeep`
 * names it), "" otherwise. */
export function readEventJsonOrRule(text: string): { value: unknown } | { rule: "json" | "max-depth" | "lone-surrogate"; pointer: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { rule: "json", pointer: "" };
  }
  const problem = jsonProblem(value); // held to MAX_DEPTH, as Python's event readers hold it (jsontext.py loads_bounded)
  if (problem === null) return { value };
  if (problem.rule === "max-depth") return { rule: "max-depth", pointer: deepPointer(value) };
  return { rule: problem.rule === "lone-surrogate" ? problem.rule : "json", pointer: "" };
}
