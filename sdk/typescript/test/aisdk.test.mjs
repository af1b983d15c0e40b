// The AI SDK decoder's notes that quote a chunk's values (an abort's reason, a tool approval's reason, signature and
// other keys, a tool call's title, toolMetadata and inputEncoding "text"): the same notes, word for word, as
// Python's (tests/ui/test_ai_sdk.py; tests/jsclient/test_aisdk.py compares every note), and the same refusals.
import { test } from "node:test";
import assert from "node:assert/strict";
import { AiSdkDecoder, AiSdkError } from "../dist/index.js";

const clock = () => "2026-01-01T00:00:00Z";
const aborted = "abort: the stream was aborted (the reply stays cut: INTERRUPTED)";

test("the text of an abort, an approval and a text-encoded call is quoted in a note", () => {
  const long = "stop ".repeat(50);
  const smiles = "\u{1F600}".repeat(250);
  const chunks = [
    { type: "start", messageId: "m" },
    { type: "tool-input-start", toolCallId: "c", toolName: "shell", inputEncoding: "text" },
    { type: "tool-input-delta", toolCallId: "c", inputTextDelta: "ls -l" },
    { type: "tool-input-available", toolCallId: "c", toolName: "shell", input: "ls -l" },
    { type: "tool-approval-request", approvalId: "a", toolCallId: "c", reason: 'runs "ls"', signature: "c2ln" },
    { type: "tool-approval-response", approvalId: "a", approved: false, reason: "not now" },
    { type: "tool-input-start", toolCallId: "d", toolName: "f", inputEncoding: "json" },
    { type: "abort", reason: "user stop" },
    { type: "abort", reason: long },
    { type: "abort", reason: "user stop" },
    { type: "abort" },
    { type: "abort", reason: `\ud800${smiles}` }, // (a lone surrogate, then astral characters: cut by code points)
  ];
  const decoder = new AiSdkDecoder({ strict: true, clock });
  for (const chunk of chunks) decoder.feed(chunk);
  assert.deepEqual(decoder.notes, [
    {
      pointer: "/1",
      rule: "ui-not-kept",
      message: 'inputEncoding "text" of tool call "c": its input streamed as plain text, not JSON (no AgentEvent says so: the reducer reads the text as JSON arguments)',
    },
    { pointer: "/4", rule: "ui-not-kept", message: 'tool-approval-request: an approval the UI asks for; reason "runs \\"ls\\"", signature "c2ln"' },
    { pointer: "/5", rule: "ui-not-kept", message: 'tool-approval-response: an approval the UI gave; reason "not now"' },
    { pointer: "/7", rule: "ui-not-kept", message: `${aborted}; reason "user stop"` },
    { pointer: "/8", rule: "ui-not-kept", message: `${aborted}; reason "${long.slice(0, 200)}"...` },
    { pointer: "/10", rule: "ui-not-kept", message: aborted },
    { pointer: "/11", rule: "ui-not-kept", message: `${aborted}; reason "\\ud800${"\u{1F600}".repeat(199)}"...` },
  ]);
});

test("a reason, signature, inputEncoding or toolMetadata the AI SDK refuses is refused", () => {
  for (const [chunk, pointer, rule] of [
    [{ type: "tool-input-start", toolCallId: "c", toolName: "f", inputEncoding: "yaml" }, "/0/inputEncoding", "enum"],
    [{ type: "abort", reason: 5 }, "/0/reason", "type"],
    [{ type: "tool-approval-request", approvalId: "a", toolCallId: "c", signature: {} }, "/0/signature", "type"],
    [{ type: "tool-approval-response", approvalId: "a", approved: true, reason: ["x"] }, "/0/reason", "type"],
    // ai 7's toolMetadata is a record of JSON values: an object, on each tool chunk that has one
    [{ type: "tool-input-start", toolCallId: "c", toolName: "f", toolMetadata: "v" }, "/0/toolMetadata", "type"],
    [{ type: "tool-input-available", toolCallId: "c", toolName: "f", input: {}, toolMetadata: [1] }, "/0/toolMetadata", "type"],
    [{ type: "tool-input-error", toolCallId: "c", toolName: "f", input: "x", errorText: "e", toolMetadata: 1 }, "/0/toolMetadata", "type"],
    [{ type: "tool-output-available", toolCallId: "c", output: 1, toolMetadata: true }, "/0/toolMetadata", "type"],
    [{ type: "tool-output-error", toolCallId: "c", errorText: "e", toolMetadata: "v" }, "/0/toolMetadata", "type"],
  ]) {
    assert.throws(() => new AiSdkDecoder({ strict: true, clock }).feed(chunk), (e) => e instanceof AiSdkError && e.problems.length === 1 && e.problems[0].pointer === pointer && e.problems[0].rule === rule);
    const tolerant = new AiSdkDecoder({ clock });
    assert.deepEqual(tolerant.feed(chunk), []);
    assert.deepEqual(tolerant.notes.map((n) => [n.pointer, n.rule]), [[pointer, rule]]);
  }
});

test("a tool call's title and metadata are quoted once per call and value, as Python's notes say", () => {
  // (tests/ui/test_ai_sdk.py, test_a_tool_call_s_title_and_metadata_are_quoted_once_per_call_and_value)
  const chunks = [
    { type: "start", messageId: "m" },
    { type: "tool-input-start", toolCallId: "c", toolName: "f", title: "Weather" },
    { type: "tool-input-available", toolCallId: "c", toolName: "f", input: {}, title: "Weather" },
    { type: "tool-input-start", toolCallId: "d", toolName: "f", title: "Weather" },
    { type: "tool-input-available", toolCallId: "d", toolName: "f", input: {}, title: 'Forecast "3 days"' },
    { type: "tool-output-available", toolCallId: "d", output: 1, toolMetadata: { doc: "x".repeat(300) } },
    { type: "tool-approval-request", approvalId: "a", toolCallId: "d", approvalDescriptor: { action: "rm", paths: ["/tmp"] }, inputSchemaInput: "s", isAutomatic: true },
    { type: "finish" },
  ];
  const decoder = new AiSdkDecoder({ strict: true, clock });
  for (const chunk of chunks) decoder.feed(chunk);
  const title = "a tool call's display title";
  assert.deepEqual(decoder.notes.map((n) => [n.pointer, n.rule, n.message]), [
    ["/1", "ui-not-kept", `title "Weather" of tool call "c": ${title}`],
    ["/3", "ui-not-kept", `title "Weather" of tool call "d": ${title}`],
    ["/4", "ui-not-kept", `title "Forecast \\"3 days\\"" of tool call "d": ${title}`],
    ["/5", "ui-not-kept", `toolMetadata ${`{"doc":"${"x".repeat(300)}`.slice(0, 200)}... of tool call "d": a tool's own data on a call`],
    ["/6", "ui-not-kept", 'tool-approval-request: an approval the UI asks for; approvalDescriptor {"action":"rm","paths":["/tmp"]}, inputSchemaInput "s", isAutomatic true'],
  ]);
  assert.throws(
    () => new AiSdkDecoder({ strict: true, clock }).feed({ ...chunks[6], isAutomatic: "yes" }),
    (e) => e instanceof AiSdkError && e.problems[0].pointer === "/0/isAutomatic" && e.problems[0].message === "isAutomatic must be a boolean",
  );
});

test("a denied tool output has no text: an errorText on it is said, quoted, as Python's notes say", () => {
  // (tests/ui/test_ai_sdk.py, test_a_denied_output_has_no_text_and_an_error_text_on_it_is_said): the AI SDK's
  // tool-output-denied chunk is {toolCallId} alone, and an output-denied part holds neither output nor errorText
  const chunks = [
    { type: "start", messageId: "m" },
    { type: "tool-output-denied", toolCallId: "a", errorText: "no" },
    { type: "tool-output-denied", toolCallId: "a", errorText: "no" },
    { type: "tool-output-denied", toolCallId: "b", errorText: 0 },
    { type: "tool-output-denied", toolCallId: "c", errorText: null },
    { type: "tool-output-denied", toolCallId: "d" },
  ];
  const decoder = new AiSdkDecoder({ clock });
  const events = chunks.flatMap((chunk) => decoder.feed(chunk));
  assert.deepEqual(events.filter((e) => e.type === "TOOL_RESULT_TEXT_DELTA"), []);
  assert.deepEqual(events.filter((e) => e.type === "TOOL_RESULT_END").map((e) => e.state), Array(5).fill("denied"));
  const why = "a denied tool output has no text (the AI SDK's tool-output-denied chunk has no errorText, its reader ignores one)";
  assert.deepEqual(decoder.notes.map((n) => [n.pointer, n.rule, n.message]), [
    ["/1", "ui-not-kept", `errorText "no" of tool call "a": ${why}`],
    ["/3", "ui-not-kept", `errorText 0 of tool call "b": ${why}`],
  ]);
});

test("a start naming the message again is said where the AI SDK's reader goes on with it, as Python's notes say", () => {
  const reply = (messageId, text) => [
    { type: "start", messageId },
    { type: "text-start", id: text },
    { type: "text-delta", id: text, delta: text },
    { type: "text-end", id: text },
    { type: "finish" },
  ];
  const chunks = [...reply("m", "a"), ...reply("m", "b").slice(0, -1), ...reply("m", "c"), ...reply("n", "d"), ...reply("m", "e")];
  const decoder = new AiSdkDecoder({ strict: true, clock });
  const events = chunks.flatMap((chunk) => decoder.feed(chunk));
  assert.deepEqual(decoder.notes, [
    {
      pointer: "/5",
      rule: "duplicate",
      message:
        'start names message "m" again: the AI SDK\'s reader goes on with that message (one UIMessage); decoded as another reply of that id (two messages)',
    },
  ]);
  assert.deepEqual(
    events.filter((e) => e.type === "AGENT_START").map((e) => e.replyId),
    ["m", "m", "m", "n", "m"],
  );
});

test("a start naming no message after a start is said where the AI SDK's reader goes on with it, as Python's notes say", () => {
  const reply = (messageId, text) => [
    messageId === null ? { type: "start" } : { type: "start", messageId },
    { type: "text-start", id: text },
    { type: "text-delta", id: text, delta: text },
    { type: "text-end", id: text },
    { type: "finish" },
  ];
  const chunks = [
    ...reply(null, "a"),
    ...reply(null, "b"),
    ...reply("m", "c").slice(0, -1),
    ...reply(null, "d"),
    ...reply(null, "e"),
    ...reply("m", "f"),
  ];
  const decoder = new AiSdkDecoder({ strict: true, clock });
  const events = chunks.flatMap((chunk) => decoder.feed(chunk));
  const reader = "the AI SDK's reader goes on with";
  assert.deepEqual(decoder.notes, [
    {
      pointer: "/5",
      rule: "duplicate",
      message: `start names no message after a start: ${reader} the message before it (one UIMessage); decoded as another reply (two messages)`,
    },
    {
      pointer: "/14",
      rule: "duplicate",
      message: `start names no message after a start: ${reader} message "m" (one UIMessage); decoded as another reply (two messages)`,
    },
    {
      pointer: "/24",
      rule: "duplicate",
      message: `start names message "m" again: ${reader} that message (one UIMessage); decoded as another reply of that id (two messages)`,
    },
  ]);
  assert.deepEqual(
    events.filter((e) => e.type === "TEXT_BLOCK_DELTA").map((e) => e.delta),
    ["a", "b", "c", "d", "e", "f"],
  );
  assert.equal(events.filter((e) => e.type === "AGENT_START").length, 6);
});
