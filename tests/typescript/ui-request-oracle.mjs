// The front ends' own schemas judging the bodies they POST (tests/ui/test_requests.py runs it; not a `node --test`
// file): the `ai` package's validateUIMessages (what a route handler checks useChat's messages with) and
// @ag-ui/core's RunAgentInputSchema (zod).
//
//   node ui-request-oracle.mjs BODIES.json   BODIES: {"ai": [body, ...], "agui": [body, ...]}; prints
//                                            {"ai": [[ok, error], ...], "agui": [[ok, issues], ...]}
import { readFileSync } from "node:fs";
import { safeValidateUIMessages } from "ai";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";

const bodies = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const ai = [];
for (const body of bodies.ai ?? []) {
  const result = await safeValidateUIMessages({ messages: body.messages });
  ai.push([result.success, result.success ? null : String(result.error?.message ?? result.error)]);
}
const agui = (bodies.agui ?? []).map((body) => {
  const parsed = RunAgentInputSchema.safeParse(body);
  return [parsed.success, parsed.success ? null : parsed.error.issues.map((i) => `${i.path.join("/")}: ${i.message}`)];
});
console.log(JSON.stringify({ ai, agui }));
