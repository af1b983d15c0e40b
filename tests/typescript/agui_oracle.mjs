// AG-UI's own TypeScript packages as oracles of agentmsg.ui.agui (driven by tests/ui/test_agui_typescript.py;
// not a node --test file).
//
//   node agui_oracle.mjs validate EVENTS.json   @ag-ui/core's zod schema (EventSchemas) on each event of the array;
//                                               prints {"count": N, "invalid": [[index, type, issues], ...]}
//   node agui_oracle.mjs run URL...             @ag-ui/client's HttpAgent runs against each URL (POST, RunAgentInput,
//                                               its SSE reader, its verifier and its message builder); prints an
//                                               array of {"types": [...], "messages": [...], "errors": [...], "result"}
import { readFileSync } from "node:fs";
import { EventSchemas } from "@ag-ui/core/schemas";
import { HttpAgent } from "@ag-ui/client";

const [mode, arg] = process.argv.slice(2);

if (mode === "validate") {
  const events = JSON.parse(readFileSync(arg, "utf-8"));
  const invalid = [];
  events.forEach((event, index) => {
    const parsed = EventSchemas.safeParse(event);
    if (!parsed.success) invalid.push([index, event.type, parsed.error.issues.map((i) => `${i.path.join("/")}: ${i.message}`)]);
  });
  console.log(JSON.stringify({ count: events.length, invalid }));
} else if (mode === "run") {
  const runs = [];
  for (const url of process.argv.slice(3)) {
    const agent = new HttpAgent({ url, threadId: "th1" });
    const types = [];
    const errors = [];
    let result = null;
    try {
      const run = await agent.runAgent(
        { runId: "r1" },
        {
          onEvent: ({ event }) => {
            types.push(event.type);
          },
          onRunErrorEvent: ({ event }) => {
            errors.push(event.message);
          },
        },
      );
      result = run.result ?? null;
    } catch (error) {
      errors.push(`thrown: ${error?.message ?? error}`);
    }
    runs.push({ types, messages: agent.messages, errors, result });
  }
  console.log(JSON.stringify(runs));
} else {
  console.error("usage: node agui_oracle.mjs validate EVENTS.json | run URL...");
  process.exit(2);
}
