// Prints the browser size of @agentmsg/client: each entry point bundled by esbuild (minified ESM,
// everything it imports included) and gzipped (level 9). `make client-size`; README quotes it.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const esbuild = createRequire(path.join(pkgDir, "package.json"))("esbuild");
const entries = {
  "@agentmsg/client (reducer with the msg and event validators, SSE reader)": "export * from './dist/index.js';",
  "@agentmsg/client, only streamSSE + SSEDecoder (tree-shaken)": "export { streamSSE, SSEDecoder } from './dist/index.js';",
  "@agentmsg/client/strict alone (validateEvent; nothing the client does not carry)": "export * from './dist/strict.js';",
};
const rows = {};
for (const [name, contents] of Object.entries(entries)) {
  const out = await esbuild.build({ stdin: { contents, resolveDir: pkgDir }, bundle: true, minify: true, format: "esm", write: false, legalComments: "none" });
  const code = out.outputFiles[0].contents;
  rows[name] = { minified: code.length, gzip: zlib.gzipSync(code, { level: 9 }).length };
}
if (process.argv.includes("--json")) console.log(JSON.stringify(rows));
else for (const [name, r] of Object.entries(rows)) console.log(`${name}: ${(r.minified / 1024).toFixed(1)} KiB minified, ${(r.gzip / 1024).toFixed(1)} KiB gzipped`);
