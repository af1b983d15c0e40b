// @agentmsg/client's reducer in Node, side by side with its floor: JSON.parse of each line alone.
//
//   node bench/client_reducer.mjs EVENTS.jsonl [REPEATS]   -> one JSON object on stdout
//
// Both loops get the same pre-split lines; "reduce" parses each line and feeds the event to a Reducer,
// then finish() builds the message (validated, wire form). Best and median of REPEATS (interleaved).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
// dist/ is built, not committed: (re)build it when its sources changed.
execFileSync(process.execPath, [path.join(here, "..", "sdk", "typescript", "scripts", "build.mjs"), "--if-stale"], { stdio: ["ignore", process.stderr, "inherit"] });
const { Reducer } = await import(path.join(here, "..", "sdk", "typescript", "dist", "index.js"));
const [file, repeatsArg] = process.argv.slice(2);
const repeats = Number(repeatsArg ?? 5);
const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0);

function parseOnly() {
  let n = 0;
  for (let i = 0; i < lines.length; i++) n += JSON.parse(lines[i]).type.length;
  return n;
}
function reduce() {
  const r = new Reducer();
  for (let i = 0; i < lines.length; i++) r.feed(JSON.parse(lines[i]));
  return r.finish();
}
const time = (fn) => { const t = process.hrtime.bigint(); const out = fn(); return [Number(process.hrtime.bigint() - t) / 1e9, out]; };

const floor = [], ours = [];
let messages;
for (let k = 0; k < repeats; k++) {
  floor.push(time(parseOnly)[0]);
  const [t, out] = time(reduce);
  ours.push(t);
  messages = out;
}
const best = (xs) => Math.min(...xs);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const m = messages[0];
process.stdout.write(JSON.stringify({
  node: process.version,
  events: lines.length,
  floor_best: best(floor), floor_median: median(floor),
  reduce_best: best(ours), reduce_median: median(ours),
  messages: messages.length,
  text_chars: m.content.filter((b) => b.type === "text").reduce((n, b) => n + b.text.length, 0),
  tool_calls: m.content.filter((b) => b.type === "tool_use").length,
}) + "\n");
