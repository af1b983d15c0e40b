// The notes the UI decoders keep (src/notes.ts): at most 10,000, then one last note counting the rest, as Python's
// agentmsg.ui._protocol.Notes (tests/jsclient checks the two on the same streams).
import { test } from "node:test";
import assert from "node:assert/strict";
import { AGUIDecoder, AiSdkDecoder } from "../dist/index.js";

for (const [name, make, bogus] of [
  ["AGUIDecoder", () => new AGUIDecoder(), (k) => ({ type: `BOGUS_${k}` })],
  ["AiSdkDecoder", () => new AiSdkDecoder(), (k) => ({ type: `bogus-${k}` })],
]) {
  test(`${name} keeps 10,000 notes and counts the rest in the last one`, () => {
    const decoder = make();
    for (let k = 0; k < 12_500; k++) decoder.feed(bogus(k));
    assert.equal(decoder.notes.length, 10_001);
    assert.deepEqual(decoder.notes.at(-1), {
      pointer: "",
      rule: "max-problems",
      message: "2,500 more notes were not kept (a stream keeps 10,000)",
    });
    assert.match(decoder.notes[9_999].pointer, /^\/9999(\/|$)/); // (the last one kept: event 9,999's)
  });
}

test("a note or error past 400 characters is cut in its middle, as Python cuts every Problem's message", () => {
  const x = "\u{1F600}".repeat(195); // (code points, as Python counts: 2 UTF-16 units each)
  const chunk = { type: "tool-approval-request", approvalId: "a", toolCallId: "c", reason: x, approvalDescriptor: [x] };
  const decoder = new AiSdkDecoder();
  decoder.feed(chunk);
  const message = decoder.notes[0].message;
  assert.equal([...message].length, 280 + 80 + "...(116 characters left out)...".length);
  assert.ok(message.startsWith("tool-approval-request: an approval the UI asks for; reason \"\u{1F600}"), message);
  assert.ok(message.includes(`approvalDescriptor ["\u{1F600}...(116 characters left out)...\u{1F600}`), message);
  assert.ok(message.endsWith(`${"\u{1F600}".repeat(77)}"]`), message); // (the last 80 characters)
  const strict = new AGUIDecoder({ strict: true });
  assert.throws(() => strict.feed({ type: "X".repeat(500) }), (e) => e.problems.every((p) => [...p.message].length <= 400));
});
