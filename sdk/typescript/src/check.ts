// Does each reduced message cover its reply's AGENT_RESULT? (agentmsg/events/_check.py, Reducer.checkResults)
import type { Json, Obj, Problem } from "./state.js";
import { boundedProblem } from "./notes.js";
import { shortRepr } from "./repr.js";
import { isObject, pyEqual as same } from "./state.js";

/** One problem (rule `agent-result`) per disagreement between a completed message and its AGENT_RESULT: a
 * role other than ASSISTANT (pointer `/<message>/role`), text or thinking of the result missing from the
 * message's, a tool call missing or with another name or input (pointer `/<message>/content`). Replies
 * without AGENT_RESULT are not checked. */
export function checkResults(done: Json[], results: (Obj | null)[]): Problem[] {
  const problems: Problem[] = [];
  done.forEach((msg, index) => {
    const result = results[index];
    if (!result) return;
    const role = Object.hasOwn(result, "role") ? result.role : null;
    if (role !== null && role !== "ASSISTANT") {
      problems.push({ pointer: `/${index}/role`, rule: "agent-result", message: `AGENT_RESULT's role ${shortRepr(role, 40)} differs from the reduced message's 'ASSISTANT' (events carry assistant replies only)` });
    }
    const content = result.content;
    if (!Array.isArray(content)) return;
    const ours: Obj[] = msg.content;
    const pointer = `/${index}/content`;
    for (const kind of ["text", "thinking"]) {
      const mine = ours.filter((b) => b.type === kind).map((b) => b[kind]).join("");
      for (const b of content) {
        if (!isObject(b) || b.type !== kind) continue;
        const said = Object.hasOwn(b, kind) ? b[kind] : null;
        // (a text that is no string is in no text, as in Python, which never str()s it)
        if (typeof said !== "string" || !mine.includes(said)) {
          problems.push({ pointer, rule: "agent-result", message: `AGENT_RESULT's ${kind} ${shortRepr(said)} is not in the stream's` });
        }
      }
    }
    const calls = new Map<string, [Json, Json][]>();
    for (const b of ours) if (b.type === "tool_use") calls.set(b.id, [...(calls.get(b.id) ?? []), [b.name, b.input]]);
    for (const b of content) {
      if (!isObject(b) || b.type !== "tool_use") continue;
      const id = b.id;
      const mineCalls = typeof id === "string" ? calls.get(id) : undefined;
      const get = (k: string): Json => (Object.hasOwn(b, k) ? b[k] : null);
      if (mineCalls === undefined) {
        problems.push({ pointer, rule: "agent-result", message: `AGENT_RESULT's tool call ${shortRepr(id)} is not in the stream` });
      } else if (!mineCalls.some(([name, input]) => same(name, get("name")) && same(input, get("input")))) {
        const [name, input] = mineCalls[mineCalls.length - 1]!;
        problems.push({ pointer, rule: "agent-result", message: `tool call ${shortRepr(id)}: the stream gives ${shortRepr(name)} ${shortRepr(input)}, AGENT_RESULT ${shortRepr(get("name"))} ${shortRepr(get("input"))}` });
      }
    }
  });
  return problems.map(boundedProblem); // (as Python's Problem bounds its message)
}
