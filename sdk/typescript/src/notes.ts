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

/** Characters a note's message holds at most, as Python's `agentmsg.errors.MESSAGE_MAX` (a Problem's message). */
export const MESSAGE_MAX = 400;
const HEAD = 280; // characters kept at a cut message's start (Python's errors._HEAD) ...
const TAIL = 80; // ... and at its end (errors._TAIL)

/** `text` when it has at most MESSAGE_MAX characters; else its start and end around a note of how many are left
 * out: Python's `agentmsg.errors.bounded`, which every Problem's message goes through, counted in code points. */
export function bounded(text: string): string {
  if (text.length <= MESSAGE_MAX) return text; // (UTF-16 units: never fewer than the code points)
  const points = Array.from(text);
  if (points.length <= MESSAGE_MAX) return text;
  const left = (points.length - HEAD - TAIL).toLocaleString("en-US");
  return `${points.slice(0, HEAD).join("")}...(${left} characters left out)...${points.slice(-TAIL).join("")}`;
}

/** Add `note` to `notes`, its message bounded as Python's; past MAX_NOTES, count it in the last note instead. */
export function keepNote<P extends Note>(notes: P[], note: P): void {
  if (notes.length < MAX_NOTES) {
    const message = bounded(note.message);
    notes.push(message === note.message ? note : { ...note, message });
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
