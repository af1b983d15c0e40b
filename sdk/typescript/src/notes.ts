// The notes a decoder keeps, as Python's agentmsg.ui._protocol.Notes keeps them: at most MAX_NOTES, then one last
// note (rule `max-problems`, the reducer's) counting the rest. A page reading a remote stream of ever new events it
// cannot use held one note each, and its said-once key, for the stream's life.

/** Notes a decoder keeps at most (a stream's); a said-once key is held only while there is room (`room`). */
export const MAX_NOTES = 10_000;

interface Note {
  pointer: string;
  rule: string;
  message: string;
}

const omitted = new WeakMap<object, number>();

/** Whether `notes` keeps another note. */
export function room(notes: readonly Note[]): boolean {
  return notes.length < MAX_NOTES;
}

/** Characters a note's message has at most (Python's `errors.MESSAGE_MAX`, which every Problem's message keeps). */
export const MESSAGE_MAX = 400;

/** `text` when it has at most MESSAGE_MAX characters (code points, as Python counts them); else its first 280 and
 * last 80 around a note of how many are left out between them, as Python's `errors.bounded` cuts a message. */
export function bounded(text: string): string {
  if (text.length <= MESSAGE_MAX) return text; // (UTF-16 units: never fewer than its code points)
  const points = Array.from(text);
  if (points.length <= MESSAGE_MAX) return text;
  const left = (points.length - 360).toLocaleString("en-US");
  return `${points.slice(0, 280).join("")}...(${left} characters left out)...${points.slice(-80).join("")}`;
}

/** `problem` with its message bounded (`bounded`): what a note or a decoder's error keeps, as Python's Problem. */
export function boundedProblem<P extends Note>(problem: P): P {
  return problem.message.length > MESSAGE_MAX ? { ...problem, message: bounded(problem.message) } : problem;
}

/** Add `note` to `notes` (its message bounded); past MAX_NOTES, count it in the last note instead. */
export function keepNote<P extends Note>(notes: P[], note: P): void {
  if (notes.length < MAX_NOTES) {
    notes.push(boundedProblem(note));
    return;
  }
  const n = (omitted.get(notes) ?? 0) + 1;
  omitted.set(notes, n);
  const count = {
    pointer: "",
    rule: "max-problems",
    message: `${n.toLocaleString("en-US")} more notes were not kept (a stream keeps ${MAX_NOTES.toLocaleString("en-US")})`,
  } as P;
  if (n === 1) notes.push(count);
  else notes[notes.length - 1] = count;
}

/** Characters of a value a note quotes at most (`quoted`). */
export const QUOTED_CHARS = 200;

/** The first `limit` characters of `text`, counted in code points as Python counts them (not UTF-16 units). */
export function cut(text: string, limit: number): string {
  let shown = "";
  let n = 0;
  for (const ch of text) {
    if (n === limit) break;
    shown += ch;
    n++;
  }
  return shown;
}

/** A value of the input as a decoder's note quotes it (Python's `agentmsg.ui._protocol.quoted`): a string as the
 * JSON text of its first `limit` characters (code points), another value as its JSON text cut there, `...` after a
 * cut saying it. */
export function quoted(value: unknown, limit = QUOTED_CHARS): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const shown = cut(text, limit);
  const more = shown.length < text.length ? "..." : "";
  return (typeof value === "string" ? JSON.stringify(shown) : shown) + more;
}
