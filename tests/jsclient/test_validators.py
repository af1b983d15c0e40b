"""@agentmsg/client's compiled validators (ajv standalone, TypeScript, run in Node from its build) against the
Python SDK's ``validate``, on every schema vector and random mutations of them: the same problems (pointer + rule),
in the same order.

What is left out is what JavaScript cannot represent (docs/web.md, "Runtime-specific differences"), as in
test_reducer.py.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentmsg import ValidationError, validate
from tests._support.budget import SEED, examples
from tests._support.jsclient import NODE, built_client
from tests._support.mutators import mutate_json
from tests.conftest import ROOT

pytestmark = [
    pytest.mark.differential,
    pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run"),
]

VALIDATE_SCRIPT = """
import fs from "node:fs";
import { validateBlock, validateMessage } from %s;
import { validateEvent } from %s;
const check = { msg: validateMessage, "content-block": validateBlock, event: validateEvent };
const out = [];
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\\n")) {
  if (!line) continue;
  const { kind, instance } = JSON.parse(line);
  out.push(check[kind](instance).map((p) => [p.pointer, p.rule]));
}
process.stdout.write(JSON.stringify(out));
"""


VECTORS = ROOT / "tests" / "conformance" / "vectors"
ODD_VALUES: list[Any] = [
    None,
    5,
    -1,
    1.5,
    "",
    "x",
    True,
    [],
    {},
    [1, "a"],
    {"type": "zz"},
    {"type": "text"},
    "2026-13-01",
]
#: Keys a mutation adds or sets: an unknown one, declared ones, a near miss of one.
KEYS = ["future", "type", "source", "metadata", "min_pixels", "id"]


def _python_problems(instance: Any, kind: str) -> list[list[str]]:
    try:
        validate(instance, kind)
    except ValidationError as exc:
        return [[p.pointer, p.rule] for p in exc.problems]
    return []


@pytest.mark.fuzz
def test_compiled_validators_report_what_python_reports(tmp_path: Path) -> None:
    """The client's validators (ajv standalone, compiled from the reporting view of the schemas in
    generated/typescript/compiled) give Python's problems, pointer and rule, in Python's order: on every
    schema vector and on 2,000 random mutations of them (50,000 in make fuzz)."""
    rng = random.Random(f"{SEED}/validators")
    seeds = []
    for file in sorted(VECTORS.glob("*.json")):
        vectors = json.loads(file.read_text(encoding="utf-8"))
        seeds += [(vectors["kind"], case["instance"]) for case in vectors["cases"]]
    cases = list(seeds)
    mutations = examples(2000)
    for _ in range(mutations):
        kind, instance = rng.choice(seeds)
        cases.append(
            (kind, mutate_json(instance, rng, values=ODD_VALUES, edits=(1, 2, 3), delete=0.3, add=0.15, keys=KEYS))
        )
    path = tmp_path / "instances.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps({"kind": k, "instance": i}) for k, i in cases) + b"\n")
    client = built_client()
    script = tmp_path / "validate.mjs"
    strict = client.parent / "strict.js"
    script.write_text(VALIDATE_SCRIPT % (json.dumps(client.as_uri()), json.dumps(strict.as_uri())), encoding="utf-8")
    done = subprocess.run([str(NODE), str(script), str(path)], capture_output=True, text=True, timeout=300, check=True)
    results = json.loads(done.stdout)
    python = [_python_problems(instance, kind) for kind, instance in cases]
    mismatches = [
        (kind, instance, py, ts) for (kind, instance), py, ts in zip(cases, python, results, strict=True) if py != ts
    ]
    if mismatches:
        kind, instance, py, ts = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(cases)} instances differ; first ({kind}): {json.dumps(instance)}\n"
            f" python {py}\n ts     {ts}"
        )
    assert sum(1 for r in results[len(seeds) :] if r) > mutations // 2  # most mutations break something
