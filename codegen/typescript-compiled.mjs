// The `compiled/` part of generated/typescript (@agentmsg/schema/compiled), used by codegen/typescript.mjs:
// what a browser needs to check and write agentmsg JSON without ajv at run time and without `eval` or
// `new Function` (strict Content-Security-Policy). @agentmsg/client (sdk/typescript) is built on it.
//
// - validators.js: ajv *standalone* validators for msg, content-block and agent-event, compiled ahead of
//   time from a reporting view of the schemas (reportingView) in which ajv's errors are the problems
//   agentmsg's Python validate() reports (pointer and rule); runtime.js turns them into problems.
// - runtime.js: ajv's string-length helper, the date-time format and problemsOf() (from the hand-written
//   template codegen/templates/compiled-runtime.js).
// - shapes.js: the wire shape of every titled object a message holds (key order, defaults, null/omit
//   policy, accepted spellings), which the client writes messages in.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const TEMPLATES = path.join(here, "templates");

/** Annotation keywords: they do not change what validates, and the compiled code would carry them. */
const ANNOTATIONS = new Set(["description", "title", "examples", "$comment", "default", "deprecated", "readOnly", "writeOnly", "x-message", "x-agentmsg-map"]);
/** Keywords whose value is data, not a schema. */
const DATA = new Set(["enum", "const", "required", "type", "pattern", "format", "$ref", "$id", "$schema", "x-rule"]);
/** Keywords whose value maps names to schemas. */
const MAPS = new Set(["properties", "$defs", "patternProperties", "dependentSchemas"]);
/** Keywords an `x-rule` node may hold: they all apply at the node's own instance location, so the rule
 * replaces every problem the node can have. */
const LOCAL = new Set(["type", "enum", "const", "pattern", "format", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "not"]);
const FAIL = "x-agentmsg-fail";

function makeResolver(docs) {
  const byId = new Map(Object.values(docs).map((d) => [d.$id, d]));
  return (ref, docId) => {
    const [file, frag] = ref.split("#");
    const doc = file ? byId.get(new URL(file, docId).href) : byId.get(docId);
    if (!doc) throw new Error(`unresolved $ref ${ref} in ${docId}`);
    let node = doc;
    for (const part of (frag || "").split("/").filter(Boolean)) node = node?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (node === undefined) throw new Error(`unresolved $ref ${ref} in ${docId}`);
    return { node, docId: doc.$id };
  };
}

/**
 * The schema as the compiled validators see it: the same verdicts, and errors that are exactly the problems
 * Python's validate() reports (sdk/agentmsg/_codec/schemas.py: level by level, descending into the branch a union
 * selects; rule = the nearest `x-rule`, else the keyword):
 * - a discriminated union (an `anyOf` of `$ref`s whose targets fix `type` with `const`, beside a `type` enum
 *   and `required: ["type"]`) becomes one `if` (the tag) / `then` (the branch) per branch, plus an `anyOf`
 *   failure for a value that is not an object with a `type`: ajv then reports the selected branch's errors
 *   only, and nothing for an unknown tag (the enum beside reports it), as Python does;
 * - a nullable union (`anyOf: [{$ref}, {type: null}]`) becomes `if null / else $ref`;
 * - any other `anyOf`/`oneOf` is checked inside an `if`, and reports one failure of its keyword;
 * - a node with an `x-rule` is checked inside an `if` and reports one failure with that rule.
 * (The `if` keyword's own errors are dropped by problemsOf.) Annotations are left out.
 */
export function reportingView(docs) {
  const resolve = makeResolver(docs);
  const unionTags = (branches, docId) => {
    if (!Array.isArray(branches) || !branches.length) return null;
    const out = [];
    for (const b of branches) {
      if (!b || typeof b.$ref !== "string") return null;
      const tag = resolve(b.$ref, docId).node?.properties?.type?.const;
      if (typeof tag !== "string") return null;
      out.push([tag, b.$ref]);
    }
    return out;
  };
  function view(node, docId) {
    if (Array.isArray(node)) return node.map((x) => view(x, docId));
    if (!node || typeof node !== "object") return node;
    if (typeof node["x-rule"] === "string") {
      const extra = Object.keys(node).filter((k) => !ANNOTATIONS.has(k) && k !== "x-rule" && !LOCAL.has(k));
      if (extra.length || !("x-message" in node)) {
        throw new Error(`x-rule ${node["x-rule"]} on a node with ${extra.join(", ") || "no x-message"}: the compiled validators cannot report it as Python does (see codegen/typescript-compiled.mjs)`);
      }
      const inner = view(Object.fromEntries(Object.entries(node).filter(([k]) => k !== "x-rule" && k !== "anyOf" && k !== "oneOf")), docId);
      for (const k of ["anyOf", "oneOf"]) if (node[k]) inner[k] = view(node[k], docId);
      return { if: inner, else: { [FAIL]: node["x-rule"] } };
    }
    const out = {};
    const allOf = [];
    for (const [k, v] of Object.entries(node)) {
      if (ANNOTATIONS.has(k)) continue;
      if (DATA.has(k)) out[k] = v;
      else if (MAPS.has(k)) out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, view(sub, docId)]));
      else if (k === "allOf") allOf.push(...view(v, docId));
      else if (k === "anyOf" || k === "oneOf") {
        if ("if" in node) throw new Error(`${k} beside if in ${docId}: cannot compile it for reporting`);
        const tags = unionTags(v, docId);
        if (tags) {
          const enumBeside = node.properties?.type?.enum;
          const closed = node.type === "object" && node.required?.includes("type") && Array.isArray(enumBeside)
            && enumBeside.length === tags.length && tags.every(([t]) => enumBeside.includes(t));
          if (!closed) throw new Error(`discriminated union in ${docId} without type: object, required type and a type enum of its tags`);
          for (const [tag, ref] of tags) allOf.push({ if: { type: "object", required: ["type"], properties: { type: { const: tag } } }, then: { $ref: ref } });
          allOf.push({ if: { type: "object", required: ["type"] }, else: { [FAIL]: k } });
          continue;
        }
        const rest = v.filter((b) => !(b && b.type === "null"));
        if (k === "anyOf" && v.length === 2 && rest.length === 1 && typeof rest[0].$ref === "string") {
          out.if = { type: "null" };
          out.else = { $ref: rest[0].$ref };
        } else {
          out.if = { [k]: view(v, docId) };
          out.else = { [FAIL]: k };
        }
      } else out[k] = view(v, docId);
    }
    if (allOf.length) out.allOf = allOf;
    return out;
  }
  return Object.fromEntries(Object.entries(docs).map(([file, doc]) => [file, view(doc, doc.$id)]));
}

/** Every `x-...` keyword the reporting view still holds (ajv's strict mode wants them declared). */
function annotationKeywords(docs) {
  const found = new Set();
  const walk = (n) => {
    if (Array.isArray(n)) n.forEach(walk);
    else if (n && typeof n === "object") for (const [k, v] of Object.entries(n)) { if (k.startsWith("x-") && k !== FAIL) found.add(k); walk(v); }
  };
  walk(Object.values(docs));
  return [...found].sort();
}

/** ajv standalone code for msg, block (content-block) and event (agent-event), one module. */
function validators(docs, require, header) {
  const Ajv2020 = require("ajv/dist/2020").default;
  const standaloneCode = require("ajv/dist/standalone").default;
  const { _ } = require("ajv");
  const view = reportingView(docs);
  const ajv = new Ajv2020({
    allErrors: true,
    messages: false, // runtime.js words the problems
    strict: true,
    strictTypes: false, // the reporting view's `if`s test properties without restating the type
    code: { source: true, esm: true, lines: false, optimize: true, formats: _`formats` }, // runtime.js's
  });
  for (const k of annotationKeywords(view)) ajv.addKeyword(k);
  ajv.addKeyword({
    keyword: FAIL,
    schemaType: "string",
    error: { message: "", params: ({ schemaCode }) => _`{rule: ${schemaCode}}` },
    code(cxt) {
      cxt.fail(_`true`);
    },
  });
  ajv.addFormat("date-time", { validate: () => true }); // the code that runs is runtime.js's dateTime
  for (const doc of Object.values(view)) ajv.addSchema(doc);
  const id = (file) => docs[file].$id;
  let code = standaloneCode(ajv, { msg: id("msg.schema.json"), block: id("content-block.schema.json"), event: id("agent-event.schema.json") });
  const swaps = [[/require\("ajv\/dist\/runtime\/ucs2length"\)\.default/g, "ucs2length"]];
  for (const [from, to] of swaps) {
    if (!from.test(code)) throw new Error(`standalone code changed shape: ${from} not found`);
    code = code.replace(from, to);
  }
  // Nothing reads an error's schemaPath (runtime.js reports instance pointers and rules): leave it out.
  code = code.replace(/schemaPath:"(?:[^"\\]|\\.)*",/g, "");
  code = pruneSchemaConstants(code);
  // ajv writes every error as \`const errN = {...};if(vErrors === null){vErrors = [errN];}else {vErrors.push(errN);}errors++;\`:
  // the same through one helper (a third of the bundle's size, the same errors in the same order).
  const before = code.length;
  code = code.replace(/const (err\d+) = (\{[^;]*?\});if\(vErrors === null\)\{vErrors = \[\1\];\}else \{vErrors\.push\(\1\);\}errors\+\+;/g, (_, name, error) => {
    const parts = /^\{instancePath(?::([^,]*))?,keyword:("[^"]*"),params:(.*)\}$/.exec(error);
    return parts ? `vErrors = addError(vErrors, ${parts[1] ?? "instancePath"}, ${parts[2]}, ${parts[3]});errors++;` : `vErrors = pushError(vErrors, ${error});errors++;`;
  });
  if (code.length === before) throw new Error("standalone code changed shape: no error push found");
  for (const bad of ["require(", "new Function", "eval(", "schemaPath"]) if (code.includes(bad)) throw new Error(`standalone code still has ${bad}`);
  // One validator per line for readable diffs.
  code = code.replace(/;function /g, ";\nfunction ").replace(/;export const /g, ";\nexport const ");
  return `${header}// ajv ${require("ajv/package.json").version} standalone output (allErrors, no messages) of the reporting view of the schemas.\n/* eslint-disable */\nimport { ucs2length, formats } from "./runtime.js";\nfunction pushError(errors, error) { if (errors === null) return [error]; errors.push(error); return errors; }\nconst addError = (errors, instancePath, keyword, params) => pushError(errors, { instancePath, keyword, params });\n${code}\n`;
}

/** The end (exclusive) of the JSON value that starts at `code[start]`. */
function jsonEnd(code, start) {
  let depth = 0;
  for (let i = start; i < code.length; i++) {
    const c = code[i];
    if (c === '"') {
      for (i++; code[i] !== '"'; i++) if (code[i] === "\\") i++;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (--depth === 0) return i + 1;
    } else if (depth === 0 && (c === ";" || c === ",")) return i;
  }
  throw new Error("unterminated JSON in standalone code");
}

/**
 * ajv's standalone code declares whole schema objects (`const schema31 = {...}`) where its error
 * parameters read a few values from them (`schema31.properties.role.enum`). Each is cut down to the
 * paths the code reads (or left out when nothing does), so the bundle does not carry the schemas.
 */
function pruneSchemaConstants(code) {
  const decl = /const (schema\d+) = /g;
  const found = [];
  for (let m; (m = decl.exec(code)); ) found.push({ name: m[1], at: m.index, start: m.index + m[0].length });
  let out = code;
  for (const { name, at, start } of found.reverse()) {
    const end = jsonEnd(out, start);
    const value = JSON.parse(out.slice(start, end));
    const uses = [...out.matchAll(new RegExp(`\\b${name}\\b((?:\\.[A-Za-z_$][\\w$]*|\\[\\d+\\])*)`, "g"))].filter((u) => u.index !== at + 6);
    if (uses.some((u) => u[1] === "")) continue; // used whole: kept whole
    const kept = Array.isArray(value) ? [] : {};
    for (const u of uses) {
      const keys = [...u[1].matchAll(/\.([A-Za-z_$][\w$]*)|\[(\d+)\]/g)].map((k) => k[1] ?? Number(k[2]));
      let from = value, to = kept;
      keys.forEach((k, i) => {
        if (from === undefined || from === null) throw new Error(`${name}${u[1]} does not exist`);
        if (i === keys.length - 1) to[k] = from[k];
        else to = to[k] ??= Array.isArray(from[k]) ? [] : {};
        from = from[k];
      });
    }
    const semicolon = out[end] === ";" ? 1 : 0;
    out = uses.length ? out.slice(0, start) + JSON.stringify(kept) + out.slice(end) : out.slice(0, at) + out.slice(end + semicolon);
  }
  return out;
}

const VALIDATORS_DTS = `import type { ValidateFunction } from "./runtime.js";
/** The Msg schema, compiled ahead of time. */
export declare const msg: ValidateFunction;
/** The ContentBlock schema, compiled ahead of time. */
export declare const block: ValidateFunction;
/** The AgentEvent schema, compiled ahead of time. */
export declare const event: ValidateFunction;
`;

/** Wire shapes: how Python's converter writes each titled object (docs/wire-format.md): keys in
 * schema order; required keys as they are; a key with a default gets it when missing or null; a
 * nullable key is written as null when missing; any other optional key is omitted when missing or
 * null; an accepted alternative spelling (patternProperties, e.g. min_pixels) is read when the
 * canonical key is absent. Free-form maps (x-agentmsg-map) and untyped values are kept as they are. */
function shapes(docs, header) {
  const resolve = makeResolver(docs);
  const msgId = docs["msg.schema.json"].$id;
  const snake = (s) => s.replace(/(?<!^)(?=[A-Z])/g, "_").toLowerCase();
  const table = {};
  const names = new Set();
  const nullable = (node, docId) => {
    if (Array.isArray(node.type) && node.type.includes("null")) return true;
    for (const alt of node.anyOf ?? node.oneOf ?? []) if (alt.type === "null") return true;
    if (node.$ref) { const r = resolve(node.$ref, docId); return nullable(r.node, r.docId); }
    return false;
  };
  function shapeOf(node, docId) {
    if (!node || typeof node !== "object") return null;
    if (node.$ref) { const r = resolve(node.$ref, docId); return shapeOf(r.node, r.docId); }
    const alts = (node.anyOf ?? node.oneOf ?? []).filter((a) => a.type !== "null");
    if (alts.length) {
      const members = alts.map((a) => (a.$ref ? resolve(a.$ref, docId) : { node: a, docId }));
      const tags = members.map((m) => m.node.properties?.type?.const);
      if (tags.every((t) => typeof t === "string")) {
        const byTag = {};
        members.forEach((m, i) => { byTag[tags[i]] = shapeOf(m.node, m.docId); });
        return { union: byTag };
      }
      if (alts.length === 1) return shapeOf(members[0].node, members[0].docId);
      return null;
    }
    if (node.items && (node.type === "array" || (Array.isArray(node.type) && node.type.includes("array")))) {
      const item = shapeOf(node.items, docId);
      return item === null ? null : { array: item };
    }
    if (node.properties && typeof node.title === "string" && !node["x-agentmsg-map"]) {
      if (names.has(node.title)) return node.title;
      names.add(node.title);
      const required = new Set(node.required ?? []);
      const patterns = Object.keys(node.patternProperties ?? {}).map((p) => new RegExp(p, "u"));
      const props = [];
      for (const [key, sub] of Object.entries(node.properties)) {
        const alt = snake(key) !== key && patterns.some((p) => p.test(snake(key))) ? snake(key) : null;
        let mode;
        if (required.has(key)) mode = "required";
        else if ("default" in sub) mode = "default";
        else if (nullable(sub, docId)) mode = "nullable";
        else mode = "optional";
        const prop = { key, mode, shape: shapeOf(sub, docId) };
        if (alt) prop.alt = alt;
        if (mode === "default") prop.default = sub.default;
        if (sub.type === "integer" || sub.type === "number") prop.number = sub.type;
        if (typeof sub.maximum === "number") prop.maximum = sub.maximum;
        props.push(prop);
      }
      table[node.title] = props;
      return node.title;
    }
    return null;
  }
  const msg = shapeOf(docs["msg.schema.json"], msgId);
  const ordered = Object.fromEntries(Object.keys(table).sort().map((k) => [k, table[k]]));
  // Every enumeration the schemas define in $defs (e.g. ToolCallState), by name.
  const enums = {};
  for (const doc of Object.values(docs)) {
    for (const [name, node] of Object.entries(doc.$defs ?? {})) {
      if (!Array.isArray(node.enum)) continue;
      if (name in enums && JSON.stringify(enums[name]) !== JSON.stringify(node.enum)) throw new Error(`two enums named ${name}`);
      enums[name] = node.enum;
    }
  }
  const sortedEnums = Object.fromEntries(Object.keys(enums).sort().map((k) => [k, enums[k]]));
  return `${header}/** Wire shape of every titled object a message holds (see codegen/typescript-compiled.mjs, shapes()). */
export const shapes = ${JSON.stringify(ordered, null, 1)};
/** The shape name of a whole message. */
export const MSG = ${JSON.stringify(msg)};
/** The values of every enumeration the schemas define (\`$defs\`), by name. */
export const enums = ${JSON.stringify(sortedEnums, null, 1)};
`;
}

const SHAPES_DTS = `/** How a property is written: required as it is; with its default when missing or null; null when
 * missing (nullable); otherwise omitted when missing or null. \`alt\`: an accepted other spelling. */
export interface PropShape {
  key: string;
  mode: "required" | "default" | "nullable" | "optional";
  shape: Shape;
  alt?: string;
  default?: unknown;
  /** The property is a number of this JSON Schema type (e.g. the usage counts a reducer sums). */
  number?: "integer" | "number";
  /** The property's \`maximum\` (e.g. a usage count AgentScope Java holds in an int). */
  maximum?: number;
}
/** A titled object's name, a tagged union by \`type\`, an array, or null: kept as it is. */
export type Shape = string | { union: Record<string, Shape> } | { array: Shape } | null;
export type Shapes = Record<string, PropShape[]>;
/** Wire shape of every titled object a message holds. */
export declare const shapes: Shapes;
/** The shape name of a whole message. */
export declare const MSG: Shape;
/** The values of every enumeration the schemas define (\`$defs\`), by name. */
export declare const enums: Record<string, readonly unknown[]>;
`;

const INDEX_JS = `export { msg, block, event } from "./validators.js";
export { problemsOf, compareCodePoints, dateTime, ucs2length } from "./runtime.js";
export { shapes, MSG, enums } from "./shapes.js";
`;
const INDEX_DTS = `export { msg, block, event } from "./validators.js";
export { problemsOf, compareCodePoints, dateTime, ucs2length } from "./runtime.js";
export type { ValidateFunction, ValidationErrorObject, SchemaProblem } from "./runtime.js";
export { shapes, MSG, enums } from "./shapes.js";
export type { PropShape, Shape, Shapes } from "./shapes.js";
`;

/** The files of compiled/ (name -> text), from the schema documents (file name -> document). */
export function compiledFiles(docs, require, header) {
  const template = (name) => header + fs.readFileSync(path.join(TEMPLATES, name), "utf8");
  return {
    "compiled/index.js": header + INDEX_JS,
    "compiled/index.d.ts": header + INDEX_DTS,
    "compiled/runtime.js": template("compiled-runtime.js"),
    "compiled/runtime.d.ts": template("compiled-runtime.d.ts"),
    "compiled/shapes.js": shapes(docs, header),
    "compiled/shapes.d.ts": header + SHAPES_DTS,
    "compiled/validators.js": validators(docs, require, header),
    "compiled/validators.d.ts": header + VALIDATORS_DTS,
  };
}
