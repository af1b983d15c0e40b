// What the ahead-of-time compiled validators (validators.js) need at run time, and how their errors
// become problems. Copied into generated/typescript/compiled/ by codegen/typescript.mjs (this file is
// its hand-written template): ajv's string length rule and the `date-time` format are written here
// so the compiled code imports no ajv module and no CommonJS, and validating needs neither `eval` nor
// `new Function` (strict Content-Security-Policy).

/** Length in code points, as JSON Schema counts `minLength`/`maxLength` (a surrogate pair is one). */
export function ucs2length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    n++;
  }
  return n;
}

// RFC 3339 section 5.6, as Python's checker (jsonschema-rs) reads it: a `T` (or `t`) between date and
// time, never a space, and an offset with its colon (`+05:30`, not `+0530`).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** RFC 3339 `date-time` (a zone is required): real calendar dates, hours/minutes/seconds in range, a
 * leap second only at 23:59 UTC. */
export function dateTime(s) {
  if (typeof s !== "string") return true; // formats apply to strings only
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : DAYS[month])) return false;
  const sign = m[7] === "-" ? -1 : 1;
  const tzHour = Number(m[8] ?? 0), tzMinute = Number(m[9] ?? 0);
  if (tzHour > 23 || tzMinute > 59 || hour > 23 || minute > 59) return false;
  if (second <= 59) return true;
  if (second > 60) return false;
  // Leap second: 23:59:60 in UTC.
  const utc = hour * 60 + minute - sign * (tzHour * 60 + tzMinute);
  return ((utc % 1440) + 1440) % 1440 === 23 * 60 + 59;
}

/** The formats the schemas use, as the compiled validators look them up. */
export const formats = { "date-time": { validate: dateTime } };

const quote = (v) => JSON.stringify(v);

/** A short sentence for a compiled validator's error (they are compiled without ajv's messages). */
function describe(e) {
  const p = e.params ?? {};
  switch (e.keyword) {
    case "required": return `missing required key ${quote(p.missingProperty)}`;
    case "type": return `must be ${p.type}`;
    case "enum": return `must be one of ${(p.allowedValues ?? []).map(quote).join(", ")}`;
    case "const": return `must be ${quote(p.allowedValue)}`;
    case "pattern": return `must match the pattern ${quote(p.pattern)}`;
    case "format": return `must be a ${p.format}`;
    case "minLength": case "minItems": case "minProperties": case "minimum": return `must be at least ${p.limit}`;
    case "maxLength": case "maxItems": case "maxProperties": case "maximum": return `must be at most ${p.limit}`;
    case "additionalProperties": return `key ${quote(p.additionalProperty)} is not allowed`;
    case "not": return "must not match the schema in `not`";
    case "x-agentmsg-fail": return p.rule === "anyOf" ? "matches none of the schemas in `anyOf`" : `breaks the rule ${quote(p.rule)}`;
    default: return `fails ${e.keyword}`;
  }
}

/** Compare strings by code points (the order Python sorts `str` in), not UTF-16 code units. */
export function compareCodePoints(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i), y = b.charCodeAt(i);
    if (x === y) continue;
    const cx = a.codePointAt(i), cy = b.codePointAt(i);
    // A lead surrogate starts a code point above U+FFFF; a lone trail surrogate is its own value.
    const vx = x >= 0xd800 && x <= 0xdbff ? cx : x, vy = y >= 0xd800 && y <= 0xdbff ? cy : y;
    return vx < vy ? -1 : vx > vy ? 1 : 0;
  }
  return a.length - b.length;
}

/**
 * The problems a compiled validator found in `value` ([] when valid), as agentmsg's Python `validate()`
 * reports them: a discriminated union (`type` tag) reports the problems of the branch the tag selects
 * (nothing when the tag is unknown: the `enum` beside it says so), a nullable union those of its
 * non-null branch, any other union one `anyOf` problem; a schema node with an `x-rule` annotation
 * reports that rule. The schemas are compiled in a form that makes ajv report exactly this
 * (codegen/typescript.mjs, `reportingView`). Sorted by pointer, rule, message; duplicates dropped.
 */
export function problemsOf(check, value) {
  if (check(value)) return [];
  const out = [];
  const seen = new Set();
  for (const e of check.errors ?? []) {
    if (e.keyword === "if") continue; // the branch's own problems are reported
    const rule = e.keyword === "x-agentmsg-fail" ? e.params.rule : e.keyword;
    const p = { pointer: e.instancePath, rule, message: describe(e) };
    const key = `${p.pointer}\u0000${p.rule}\u0000${p.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(p);
    }
  }
  return out.sort((a, b) => compareCodePoints(a.pointer, b.pointer) || compareCodePoints(a.rule, b.rule) || compareCodePoints(a.message, b.message));
}
