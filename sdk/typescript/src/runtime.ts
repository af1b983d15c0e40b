// What the ahead-of-time compiled validators (generated/validators.js) need at run time: ajv's string
// length rule and the `date-time` format. Written here so the client ships no ajv code and no
// CommonJS, and validating needs neither `eval` nor `new Function` (strict CSP).

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
export function ucs2length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    n++;
  }
  return n;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;
const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** RFC 3339 `date-time` (a zone is required): real calendar dates, hours/minutes/seconds in range, a
 * leap second only at 23:59 UTC. */
export function dateTime(s: unknown): boolean {
  if (typeof s !== "string") return true; // formats apply to strings only
  const m = DATE_TIME.exec(s);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : DAYS[month]!)) return false;
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
