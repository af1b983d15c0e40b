// Values quoted in problem messages as Python's reducer quotes them (agentmsg.errors.short_repr: reprlib's cut
// repr), so a problem says the same words in both runtimes (the reducer vectors' `problem_messages`).

/** A string as Python's `repr` writes it: single quotes (double when it holds a `'` and no `"`), a backslash, the
 * quote, `\n`, `\r`, `\t` and every character Python does not print (`str.isprintable`: categories C and Z but the
 * space) escaped as `\xNN`, `\uNNNN` or `\UNNNNNNNN`. */
export function pythonRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of s) {
    const code = c.codePointAt(0)!;
    if (c === "\\" || c === quote) out += `\\${c}`;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (c !== " " && /^[\p{C}\p{Z}]$/u.test(c)) {
      out +=
        code < 0x100
          ? `\\x${code.toString(16).padStart(2, "0")}`
          : code < 0x10000
            ? `\\u${code.toString(16).padStart(4, "0")}`
            : `\\U${code.toString(16).padStart(8, "0")}`;
    } else out += c;
  }
  return out + quote;
}

/** The name of a JSON value's type in Python (`type(value).__name__` of what Python's JSON reader makes of it): a
 * whole number is an `int` (JSON text of `1.0` is a float there, which a JS number cannot tell). */
export function pythonType(v: unknown): string {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return isPythonInt(v) ? "int" : "float";
  if (typeof v === "string") return "str";
  if (Array.isArray(v)) return "list";
  return typeof v === "object" ? "dict" : typeof v;
}

/** Whether Python reads the JSON text of this number as an `int`: a whole number within 64 bits (orjson reads a
 * longer integer as a float). */
const isPythonInt = (v: number): boolean => Number.isInteger(v) && v < 2 ** 64 && v >= -(2 ** 63);

/** Python's `repr` of a float: the shortest digits that read back, in fixed notation from 1e-4 up to 1e16 (with a
 * `.0` when whole), else as `1.5e+16` / `1e-05`. */
function floatRepr(v: number): string {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return Object.is(v, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = v.toExponential().split("e") as [string, string];
  const e = Number(exp);
  if (e >= -4 && e < 16) {
    const s = String(v); // (JS writes fixed notation in this range, the same shortest digits)
    return s.includes(".") ? s : `${s}.0`;
  }
  return `${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

const LEVELS = 6; // reprlib's maxlevel
const MAX_LIST = 6; // maxlist
const MAX_DICT = 4; // maxdict

const points = (s: string): string[] => Array.from(s);

/** reprlib's cut repr of a string (its first and last characters around `...` when the repr of its first `limit` is
 * longer than `limit`). */
function strRepr(text: string, limit: number): string {
  const all = points(text);
  const said = pythonRepr(all.slice(0, limit).join(""));
  if (points(said).length <= limit) return said;
  const i = Math.max(0, Math.floor((limit - 3) / 2));
  const j = Math.max(0, limit - 3 - i);
  const whole = points(pythonRepr(all.slice(0, i).join("") + all.slice(all.length - j).join("")));
  return whole.slice(0, i).join("") + "..." + whole.slice(whole.length - j).join("");
}

/** Pieces joined by `, `, made only until they are longer than `limit` (agentmsg.errors `_Quoter._joined`). */
function joined(pieces: Iterable<string>, more: boolean, limit: number): string {
  const said: string[] = [];
  let size = 0;
  for (const piece of pieces) {
    said.push(piece);
    size += points(piece).length + 2;
    if (size > limit) {
      more = true;
      break;
    }
  }
  return said.join(", ") + (more ? ", ..." : "");
}

function repr1(v: unknown, level: number, limit: number): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return strRepr(v, limit);
  if (typeof v === "number") {
    if (!isPythonInt(v)) return floatRepr(v);
    const text = BigInt(v).toString();
    return text.length <= limit ? text : `${text.slice(0, 20)}...(${text.length} digits)`;
  }
  if (Array.isArray(v)) {
    if (level <= 0 && v.length) return "[...]";
    const pieces = function* (): Generator<string> {
      for (const x of v.slice(0, MAX_LIST)) yield repr1(x, level - 1, limit);
    };
    return `[${joined(pieces(), v.length > MAX_LIST, limit)}]`;
  }
  if (typeof v === "object") {
    const keys = Object.keys(v);
    if (!keys.length) return "{}";
    if (level <= 0) return "{...}";
    const o = v as Record<string, unknown>;
    const pieces = function* (): Generator<string> {
      for (const k of keys.slice(0, MAX_DICT)) yield `${repr1(k, level - 1, limit)}: ${repr1(o[k], level - 1, limit)}`;
    };
    return `{${joined(pieces(), keys.length > MAX_DICT, limit)}}`;
  }
  return String(v);
}

/** Python's `short_repr(value, limit)` (agentmsg.errors) of a JSON value: reprlib's repr cut in depth (6 levels),
 * items (6 of a list, 4 of an object) and length, then at most `limit` code points (`...` for what is cut). */
export function shortRepr(value: unknown, limit = 80): string {
  let text: string;
  try {
    text = repr1(value, LEVELS, limit);
  } catch {
    text = `<${pythonType(value)}>`;
  }
  const all = points(text);
  return all.length <= limit ? text : `${all.slice(0, limit - 3).join("")}...`;
}

/** Python's `repr` of a JSON value, whole (`f"{value!r}"`), or its first `cut` code points (`f"{value!r:.80}"`, no
 * `...`): made only as far as the cut needs. */
export function pyRepr(value: unknown, cut?: number): string {
  // (made to twice the cut in UTF-16 units, then cut in code points: an astral character is two units)
  const out = wholeRepr(value, cut === undefined ? Infinity : 2 * cut + 2);
  if (cut === undefined || out.length <= cut) return out; // (UTF-16 units: never fewer than its code points)
  const all = points(out);
  return all.length <= cut ? out : all.slice(0, cut).join("");
}

function wholeRepr(v: unknown, budget: number): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return pythonRepr(budget === Infinity ? v : v.slice(0, Math.max(0, budget) + 1));
  if (typeof v === "number") return isPythonInt(v) ? BigInt(v).toString() : floatRepr(v);
  const isArray = Array.isArray(v);
  if (typeof v !== "object") return String(v);
  const o = v as Record<string, unknown>;
  const keys = isArray ? null : Object.keys(o);
  const n = isArray ? (v as unknown[]).length : keys!.length;
  let text = isArray ? "[" : "{";
  for (let k = 0; k < n && text.length <= budget; k++) {
    if (k) text += ", ";
    text += isArray ? wholeRepr((v as unknown[])[k], budget - text.length) : `${pythonRepr(keys![k]!)}: ${wholeRepr(o[keys![k]!], budget - text.length)}`;
  }
  return text + (isArray ? "]" : "}");
}

/** A JSON value as Python's reducer shows a usage value it replaces: its JSON text, cut after 80 code points with a
 * `...`. */
export function shownValue(value: unknown): string {
  const text = JSON.stringify(value) ?? "null";
  const all = points(text);
  return all.length <= 80 ? text : `${all.slice(0, 80).join("")}...`;
}
