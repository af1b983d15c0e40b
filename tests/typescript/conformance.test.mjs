// Every conformance vector through ajv (draft 2020-12, formats on) via the generated package.
// Python runs the same files (tests/conformance/test_schema_vectors.py) and asserts the same
// verdicts, so passing here means TypeScript and Python agree on every case.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const vectorsDir = path.join(root, "tests", "conformance", "vectors");

// The generated package is installed from the repository as a front end would (package.json:
// "@agentmsg/schema": "file:../../generated/typescript", copied by npm with install-links).
const require = createRequire(path.join(here, "package.json"));
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;
const pkg = await import("@agentmsg/schema");

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
ajv.addKeyword("x-rule");
ajv.addKeyword("x-agentmsg-map");
for (const doc of Object.values(pkg.schemas)) ajv.addSchema(doc);

const verdicts = {};
for (const file of fs.readdirSync(vectorsDir).filter((f) => f.endsWith(".json")).sort()) {
  const doc = JSON.parse(fs.readFileSync(path.join(vectorsDir, file), "utf8"));
  const check = ajv.getSchema(doc.schema);
  test(`${doc.kind}: schema ${doc.schema} compiles`, () => assert.ok(check));
  for (const c of doc.cases) {
    test(`${doc.kind}:${c.id}`, () => {
      const valid = check(c.instance);
      verdicts[`${doc.kind}:${c.id}`] = valid;
      assert.equal(valid, c.valid, `ajv says valid=${valid}: ${JSON.stringify(check.errors?.slice(0, 3))}`);
      if (!c.valid) {
        // ajv reports union failures at the union: the case's pointer, or a parent of it.
        const paths = check.errors.map((e) => e.instancePath);
        assert.ok(paths.some((p) => c.pointer === p || c.pointer.startsWith(p + "/") || p === ""), `no error at or above ${c.pointer}: ${paths}`);
      }
    });
  }
}

test("the package's validate() agrees with the raw ajv instance", () => {
  const good = { id: "m1", name: null, role: "USER", content: [{ type: "text", text: "hi" }], metadata: {}, timestamp: null, usage: null };
  assert.deepEqual(pkg.validate("msg", good), []);
  assert.ok(pkg.validate("msg", { ...good, role: "user" }).length > 0);
  assert.ok(pkg.validate("event", { type: "TEXT_BLOCK_DELTA", id: "e", createdAt: "2025-01-01T00:00:00Z", replyId: "r", blockId: "text", delta: "x" }).length === 0);
});

test.after(() => {
  if (process.env.AGENTMSG_TS_VERDICTS) fs.writeFileSync(process.env.AGENTMSG_TS_VERDICTS, JSON.stringify(verdicts, null, 1));
});
