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
