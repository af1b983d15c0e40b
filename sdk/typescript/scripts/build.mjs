// Builds @agentmsg/client (sdk/typescript/dist) and the event viewer's script.
//
// Usage: node sdk/typescript/scripts/build.mjs [--viewer | --check | --if-stale]
//   (none)      dist/: what `npm install` of this folder runs (the package's `prepare` script).
//   --viewer    dist/ and sdk/agentmsg/web/static/viewer.js, which the Python package ships so that
//               `pip install agentmsg[web]` serves the viewer without Node (`make client`).
//   --check     build both into a temporary directory; exit 1 when the committed viewer.js differs
//               from a fresh build (`make client-check`, part of `make test`).
//   --if-stale  dist/ only when its sources changed since it was built (tests use this).
//
// Steps (deterministic: pinned tool versions, no timestamps):
// 1. tsc (strict) compiles src/ to ES modules with type declarations. The sources import what is
//    generated from the schemas from @agentmsg/schema (generated/typescript: the compiled validators,
//    wire shapes and types, `make codegen`); dist/ gets a copy of those files under dist/schema/ and
//    its imports point there, so the package has no dependencies and works from plain ES modules.
// 2. esbuild bundles viewer/viewer.ts (with the client) into one minified script; the page's other
//    files (index.html, viewer.css) live only in sdk/agentmsg/web/static/.
//
// Installs its pinned tooling (`npm ci` in sdk/typescript) when missing.
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, "..");
const root = path.resolve(pkgDir, "..", "..");
const schemaPkg = path.join(root, "generated", "typescript");
const staticDir = path.join(root, "sdk", "agentmsg", "web", "static");
const distDir = path.join(pkgDir, "dist");
const mode = process.argv[2] ?? "";
if (!["", "--viewer", "--check", "--if-stale"].includes(mode)) {
  console.error(`unknown option ${mode}; use --viewer, --check or --if-stale`);
  process.exit(2);
}

function npmCi() {
  const stamp = path.join(pkgDir, "node_modules", ".agentmsg-stamp");
  const want = ["package.json", "package-lock.json", ".npmrc"].map((f) => fs.readFileSync(path.join(pkgDir, f), "utf8")).join("\0");
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, "utf8") === want) return;
  // --ignore-scripts: not this package's own `prepare` (which is what may be running now).
  execFileSync("npm", ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: pkgDir, stdio: ["ignore", process.stderr, "inherit"] });
  fs.writeFileSync(stamp, want);
}

/** Every file below `dir` (relative paths, sorted). */
function listFiles(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile())
    .map((d) => path.relative(dir, path.join(d.parentPath ?? d.path, d.name))).sort();
}

/** What dist/ is built from: a hash of every input file. */
function inputsHash() {
  const hash = crypto.createHash("sha256");
  const inputs = [
    ...listFiles(path.join(pkgDir, "src")).map((f) => path.join(pkgDir, "src", f)),
    ...listFiles(path.join(schemaPkg, "compiled")).map((f) => path.join(schemaPkg, "compiled", f)),
    path.join(schemaPkg, "types.d.ts"),
    ...["package.json", "tsconfig.json", "scripts/build.mjs"].map((f) => path.join(pkgDir, f)),
  ];
  for (const f of inputs) hash.update(path.relative(root, f)).update("\0").update(fs.readFileSync(f)).update("\0");
  return hash.digest("hex");
}

function run(cmd, args) {
  execFileSync(cmd, args, { cwd: pkgDir, stdio: ["ignore", "inherit", "inherit"] });
}

const tsc = () => path.join(pkgDir, "node_modules", "typescript", "bin", "tsc");

/** What the sources import from @agentmsg/schema, and where dist/ keeps its copy. */
const SCHEMA_IMPORTS = { "@agentmsg/schema/compiled": "schema/compiled/index.js", "@agentmsg/schema/types": "schema/types.js" };

/** dist/ into `out`: tsc, then the generated files it imports copied in and the imports pointed at them. */
function buildDist(out) {
  fs.rmSync(out, { recursive: true, force: true });
  const tsconfig = path.join(os.tmpdir(), `agentmsg-client-tsconfig-${process.pid}.json`);
  fs.writeFileSync(tsconfig, JSON.stringify({ extends: path.join(pkgDir, "tsconfig.json"), compilerOptions: { outDir: out } }));
  try {
    run(process.execPath, [tsc(), "-p", tsconfig]);
  } finally {
    fs.rmSync(tsconfig, { force: true });
  }
  fs.cpSync(path.join(schemaPkg, "compiled"), path.join(out, "schema", "compiled"), { recursive: true });
  fs.copyFileSync(path.join(schemaPkg, "types.d.ts"), path.join(out, "schema", "types.d.ts"));
  for (const f of listFiles(out)) {
    if (f.startsWith("schema" + path.sep) || !/\.(js|d\.ts)$/.test(f)) continue;
    const file = path.join(out, f);
    let text = fs.readFileSync(file, "utf8");
    for (const [specifier, target] of Object.entries(SCHEMA_IMPORTS)) {
      let rel = path.relative(path.dirname(file), path.join(out, target)).split(path.sep).join("/");
      if (!rel.startsWith(".")) rel = `./${rel}`;
      text = text.replaceAll(`"${specifier}"`, JSON.stringify(rel));
    }
    if (/["']@agentmsg\/schema/.test(text)) throw new Error(`${f} still imports @agentmsg/schema`);
    fs.writeFileSync(file, text);
  }
}

/** viewer.js into `out` (a folder): the viewer type-checked (DOM lib) and bundled with the client. */
function buildViewer(out) {
  run(process.execPath, [tsc(), "-p", path.join(pkgDir, "viewer", "tsconfig.json"), "--noEmit"]);
  run(path.join(pkgDir, "node_modules", ".bin", "esbuild"), [
    path.join(pkgDir, "viewer", "viewer.ts"), "--bundle", "--format=esm", "--minify", "--target=es2022",
    "--legal-comments=none", "--charset=utf8", `--outfile=${path.join(out, "viewer.js")}`, "--log-level=warning",
    `--tsconfig=${path.join(pkgDir, "viewer", "tsconfig.json")}`,
  ]);
}

const stampFile = path.join(pkgDir, "node_modules", ".agentmsg-dist-inputs"); // what dist/ was built from
const fresh = () => fs.existsSync(stampFile) && fs.existsSync(path.join(distDir, "index.js")) && fs.readFileSync(stampFile, "utf8") === inputsHash();
if (mode === "--if-stale" && fresh()) process.exit(0);
npmCi();
if (mode === "--check") {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentmsg-client-"));
  try {
    buildDist(path.join(tmp, "dist"));
    buildViewer(tmp);
    const committed = path.join(staticDir, "viewer.js");
    if (!fs.existsSync(committed) || !fs.readFileSync(committed).equals(fs.readFileSync(path.join(tmp, "viewer.js")))) {
      console.error(`${path.relative(root, committed)} is stale: run \`make client\` and commit it`);
      process.exit(1);
    }
    console.log("@agentmsg/client builds; the committed viewer.js is up to date");
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
} else {
  const hash = inputsHash();
  buildDist(distDir);
  fs.writeFileSync(stampFile, hash);
  if (mode === "--viewer") buildViewer(staticDir);
  console.log(`@agentmsg/client: wrote ${path.relative(root, distDir)}${mode === "--viewer" ? `, ${path.relative(root, path.join(staticDir, "viewer.js"))}` : ""}`);
}
