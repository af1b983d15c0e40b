"""The npm tarballs of ``make dist`` (@agentmsg/schema and @agentmsg/client, `npm pack`ed) install into a project
that is not this repository, as a JavaScript user installs them, and work there: every schema vector gets
agentmsg's verdict from the schema package's validate, from the client's validators and from the user's
own ajv in strict mode with the package's ajv-keywords.

Under ``make wheel-test`` AGENTMSG_TEST_NPM_DIST names make dist's folder (its tarballs are tested);
elsewhere the test packs them itself, as make dist does. npm installs offline from its cache (``make
ts-deps`` puts what the tarballs need there); where the cache lacks something, it says so and fetches it.
Skips only without Node.js and npm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import agentmsg
from tests._support.jsclient import built_client
from tests.conftest import ROOT, VECTORS, load_vectors

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="the npm tarballs need Node.js 20+ and npm on PATH (make dist skips them without)",
)

PACKAGES = {"@agentmsg/schema": ROOT / "generated" / "typescript", "@agentmsg/client": ROOT / "sdk" / "typescript"}

SCRIPT = r"""
import fs from "node:fs";
import { createRequire } from "node:module";
import { isValid, schemas, kinds } from "@agentmsg/schema";
import { validateMessage, validateBlock, reduceEvents } from "@agentmsg/client";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const require = createRequire(import.meta.url);
const ajv = new Ajv2020({ allErrors: true });  // ajv's defaults: strict mode
addFormats(ajv);
require("@agentmsg/schema/ajv-keywords")(ajv);
for (const doc of Object.values(schemas)) ajv.addSchema(doc);
const client = { msg: validateMessage, "content-block": validateBlock };
const out = JSON.parse(fs.readFileSync(process.argv[2], "utf8")).map((c) => ({
  schema: isValid(c.kind, c.instance),
  ajv: ajv.getSchema(kinds[c.kind])(c.instance),
  client: client[c.kind] ? client[c.kind](c.instance).length === 0 : null,
}));
console.log(JSON.stringify({ out, reducer: typeof reduceEvents }));
"""


def _tarballs(tmp_path: Path) -> dict[str, Path]:
    given = os.environ.get("AGENTMSG_TEST_NPM_DIST")
    folder = Path(given) if given else tmp_path / "packed"
    if not given:
        folder.mkdir()
        built_client()  # dist/ built when stale, one worker at a time (the tarball holds it)
        r = subprocess.run(
            ["npm", "pack", "--ignore-scripts", "--pack-destination", str(folder), *map(str, PACKAGES.values())],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
    found = {}
    for name, source in PACKAGES.items():
        version = json.loads((source / "package.json").read_text(encoding="utf-8"))["version"]
        path = folder / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
        assert path.is_file(), f"{path} missing: make dist packs it"
        found[name] = path
    return found


def test_the_npm_tarballs_install_into_a_scratch_project_and_validate(tmp_path: Path) -> None:
    tarballs = _tarballs(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text('{"name": "scratch", "private": true, "type": "module"}\n')
    install = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *map(str, tarballs.values())]
    r = subprocess.run([*install, "--offline"], cwd=project, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        assert "ENOTCACHED" in r.stderr, r.stderr
        print(f"npm's cache lacks what the tarballs need (make ts-deps puts it there); fetching:\n{r.stderr[-500:]}")
        r = subprocess.run([*install, "--prefer-offline"], cwd=project, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    manifest = json.loads((project / "package.json").read_text(encoding="utf-8"))
    for name, tarball in tarballs.items():
        assert manifest["dependencies"][name] == f"file:{os.path.relpath(tarball, project)}"
        installed = project / "node_modules" / name
        assert installed.is_dir() and not installed.is_symlink(), name  # a copy, not a link to the checkout
    assert (project / "node_modules" / "@agentmsg" / "client" / "dist" / "index.js").is_file()
    cases = [
        {"kind": doc["kind"], "instance": case["instance"], "id": case["id"]}
        for doc in (load_vectors(p.name) for p in sorted(VECTORS.glob("*.json")))
        for case in doc["cases"]
    ]
    (project / "cases.json").write_text(json.dumps(cases))
    (project / "check.mjs").write_text(SCRIPT)
    r = subprocess.run(["node", "check.mjs", "cases.json"], cwd=project, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["reducer"] == "function"
    for case, got in zip(cases, result["out"], strict=True):
        want = agentmsg.is_valid(case["instance"], case["kind"])
        assert got["schema"] is want and got["ajv"] is want, (case["kind"], case["id"], got)
        assert got["client"] in (None, want), (case["kind"], case["id"], got)
    assert any(got["client"] is not None for got in result["out"])
    assert any(not got["schema"] for got in result["out"])
