// Every conformance vector (tests/conformance/vectors/*.json) through ajv: draft 2020-12 (Ajv2020),
// formats on (ajv-formats), strict mode with agentmsg's annotation keywords declared, every schema
// added by its absolute $id so relative $refs resolve. Python runs the same files
// (tests/conformance/test_schema_vectors.py) and asserts the same verdicts (the case's `valid`), so
// passing here means TypeScript and Python agree on every case.
//
// Invalid cases: some ajv error must be at the case's `pointer` or above it (ajv reports a failed
// union at the union). Whether ajv's most specific such error sits exactly at the pointer and names
// the case's `rule` (a keyword, or the `x-rule` text of the failing schema) is reported as
// information only: validators legitimately differ there.
//
// Unknown keys (schemas 1.1): each valid case lists in `unknown_keys` the keys its schema does not
// declare. An independent closed variant of the schemas (every non-map `additionalProperties: true` read
// as `false`) must reject exactly those cases, at those keys; the package's unknownKeys() and
// validate(kind, value, { strict: true }) must agree.
//
// AGENTMSG_TS_VERDICTS=<path> writes {"<kind>:<case id>": true|false, ...} (ajv's verdicts) there.
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
// "@agentmsg/schema": "file:../../generated/typescript", copied by npm: .npmrc install-links).
const require = createRequire(path.join(here, "package.json"));
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;
const pkg = await import("@agentmsg/schema");

// An ajv set up here, independently of the package's createAjv(), so the package is tested too.
const ajv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
addFormats(ajv);
// RFC 3339 date-time as Python checks it (ajv-formats' own also accepts a space for the T and +0530).
const { dateTime } = await import("@agentmsg/schema/compiled");
ajv.addFormat("date-time", dateTime);
ajv.addKeyword("x-rule");
ajv.addKeyword("x-message");
ajv.addKeyword("x-agentmsg-map");
const schemaFiles = fs.readdirSync(path.join(root, "schemas")).filter((f) => f.endsWith(".schema.json")).sort();
for (const f of schemaFiles) ajv.addSchema(JSON.parse(fs.readFileSync(path.join(root, "schemas", f), "utf8")));

// The closed variant, derived here independently of the package's closedSchema().
function close(node) {
  if (Array.isArray(node)) return node.map(close);
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) out[k] = close(v);
  if (node.additionalProperties === true && node["x-agentmsg-map"] !== true) out.additionalProperties = false;
  return out;
}
const closedAjv = new Ajv2020({ allErrors: true, strict: true, verbose: true });
addFormats(closedAjv);
closedAjv.addFormat("date-time", dateTime);
for (const k of ["x-rule", "x-message", "x-agentmsg-map"]) closedAjv.addKeyword(k);
for (const f of schemaFiles) closedAjv.addSchema(close(JSON.parse(fs.readFileSync(path.join(root, "schemas", f), "utf8"))));
const pointerKey = (k) => k.replace(/~/g, "~0").replace(/\//g, "~1");

const verdicts = {};
const ruleNotes = [];
let invalidCases = 0;

const atOrAbove = (p, pointer) => p === pointer || pointer.startsWith(p + "/");
// The rules an ajv error stands for: its keyword, and the x-rule of the schema holding it.
const rulesOf = (e) => [e.keyword, e.parentSchema?.["x-rule"]].filter(Boolean);

test("the package ships exactly the schemas in schemas/", () => {
  assert.deepEqual(Object.keys(pkg.schemas).sort(), schemaFiles);
  for (const f of schemaFiles) assert.deepEqual(pkg.schemas[f], JSON.parse(fs.readFileSync(path.join(root, "schemas", f), "utf8")));
});

for (const file of fs.readdirSync(vectorsDir).filter((f) => f.endsWith(".json")).sort()) {
  const doc = JSON.parse(fs.readFileSync(path.join(vectorsDir, file), "utf8"));
  const check = ajv.getSchema(doc.schema);
  const closedCheck = closedAjv.getSchema(doc.schema);
  test(`${file}: schema ${doc.schema} compiles; kind ${doc.kind} is a package kind`, () => {
    assert.ok(check, `no schema with $id ${doc.schema}`);
    assert.equal(pkg.kinds[doc.kind], doc.schema);
  });
  for (const c of doc.cases) {
    test(`${doc.kind}:${c.id}`, (t) => {
      const valid = check(c.instance);
      const errors = valid ? [] : [...check.errors];
      verdicts[`${doc.kind}:${c.id}`] = valid;
      assert.equal(valid, c.valid, `ajv says valid=${valid}, the vector (and Python) ${c.valid}: ${JSON.stringify(errors.slice(0, 3).map(({ instancePath, keyword, message }) => ({ instancePath, keyword, message })))}`);
      assert.equal(pkg.isValid(doc.kind, c.instance), c.valid, "the package's isValid() disagrees");
      const unknown = c.valid ? c.unknown_keys ?? [] : [];
      const closedValid = closedCheck(c.instance);
      assert.equal(closedValid, c.valid && unknown.length === 0, "the closed variant's verdict");
      assert.equal(pkg.isValid(doc.kind, c.instance, { strict: true }), closedValid, "the package's strict isValid()");
      if (c.valid) {
        // ajv reports every branch of a union; only the branch the object's `type` selects counts.
        const speaks = (e) => e.parentSchema?.properties?.type?.const === undefined || e.data?.type === e.parentSchema.properties.type.const;
        const errors = closedValid ? [] : closedCheck.errors.filter((e) => e.keyword === "additionalProperties" && speaks(e));
        const found = [...new Set(errors.map((e) => `${e.instancePath}/${pointerKey(e.params.additionalProperty)}`))].sort();
        assert.deepEqual(found, [...unknown].sort(), "unknown keys found by the closed variant");
        assert.deepEqual(pkg.unknownKeys(doc.kind, c.instance), [...unknown].sort(), "the package's unknownKeys()");
        return;
      }
      invalidCases++;
      const paths = errors.map((e) => e.instancePath);
      assert.ok(paths.some((p) => atOrAbove(p, c.pointer)), `no ajv error at or above ${c.pointer}: ${JSON.stringify(paths)}`);
      // The most specific errors at or above the pointer: do they sit at the pointer and name the rule?
      const near = errors.filter((e) => atOrAbove(e.instancePath, c.pointer));
      const depth = Math.max(...near.map((e) => e.instancePath.length));
      const best = near.filter((e) => e.instancePath.length === depth);
      if (depth !== c.pointer.length || !best.some((e) => rulesOf(e).includes(c.rule))) {
        const got = [...new Set(best.map((e) => `${e.instancePath || "(root)"} ${rulesOf(e).join("|")}`))].join("; ");
        ruleNotes.push(`${doc.kind}:${c.id}: vector ${JSON.stringify(c.rule)} at ${c.pointer}; ajv: ${got}`);
        t.diagnostic(`rule or pointer differs (information): vector ${c.rule} at ${c.pointer}; ajv ${got}`);
      }
    });
  }
}

test("the package's validate() returns ajv errors, [] when valid", () => {
  const good = { id: "m1", name: null, role: "USER", content: [{ type: "text", text: "hi" }], metadata: {}, timestamp: null, usage: null };
  assert.deepEqual(pkg.validate("msg", good), []);
  const errors = pkg.validate("msg", { ...good, role: "user" });
  assert.ok(errors.some((e) => e.instancePath === "/role" && e.keyword === "enum"), JSON.stringify(errors));
  assert.deepEqual(pkg.validate("event", { type: "TEXT_BLOCK_DELTA", id: "e", createdAt: "2025-01-01T00:00:00Z", replyId: "r", blockId: "text", delta: "x" }), []);
  assert.throws(() => pkg.validate("nope", {}), /unknown kind/);
});

test("summary (information)", (t) => {
  t.diagnostic(`ajv: ${Object.keys(verdicts).length} cases, verdicts as the vectors (and Python); ${invalidCases - ruleNotes.length} of ${invalidCases} invalid cases with an error exactly at the vector's pointer naming its rule`);
  if (ruleNotes.length) {
    t.diagnostic(`ajv's most specific error differs from the vector's pointer or rule in ${ruleNotes.length} invalid cases (information, not a failure):`);
    for (const n of ruleNotes) t.diagnostic(`  ${n}`);
  }
});

test.after(() => {
  if (process.env.AGENTMSG_TS_VERDICTS) {
    const sorted = Object.fromEntries(Object.keys(verdicts).sort().map((k) => [k, verdicts[k]]));
    fs.writeFileSync(process.env.AGENTMSG_TS_VERDICTS, JSON.stringify(sorted, null, 1) + "\n");
  }
});
