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
from tests._support.jsclient import NODE, built_client
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js not found: the TypeScript side cannot run")

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


def _mutate(rng: random.Random, value: Any) -> Any:
    """A copy of ``value`` with one random change somewhere: a key removed or added, a value replaced."""
    value = orjson.loads(orjson.dumps(value))
    containers: list[Any] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            containers.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    if not containers:
        return rng.choice(ODD_VALUES)
    node = rng.choice(containers)
    if isinstance(node, dict):
        action = rng.random()
        if node and action < 0.3:
            del node[rng.choice(list(node))]
        elif action < 0.45:
            node[rng.choice(["future", "type", "source", "metadata", "min_pixels", "id"])] = rng.choice(ODD_VALUES)
        elif node:
            node[rng.choice(list(node))] = rng.choice(ODD_VALUES)
    elif node:
        node[rng.randrange(len(node))] = rng.choice(ODD_VALUES)
    else:
        node.append(rng.choice(ODD_VALUES))
    return value


def _python_problems(instance: Any, kind: str) -> list[list[str]]:
    try:
        validate(instance, kind)
    except ValidationError as exc:
        return [[p.pointer, p.rule] for p in exc.problems]
    return []


def test_compiled_validators_report_what_python_reports(tmp_path: Path) -> None:
    """The client's validators (ajv standalone, compiled from the reporting view of the schemas in
    generated/typescript/compiled) give Python's problems, pointer and rule, in Python's order: on every
    schema vector and on 6,000 random mutations of them."""
    rng = random.Random(20261124)
    seeds = []
    for file in sorted(VECTORS.glob("*.json")):
        vectors = json.loads(file.read_text(encoding="utf-8"))
        seeds += [(vectors["kind"], case["instance"]) for case in vectors["cases"]]
    cases = list(seeds)
    for _ in range(6000):
        kind, instance = rng.choice(seeds)
        for _ in range(rng.randint(1, 3)):
            instance = _mutate(rng, instance)
        cases.append((kind, instance))
    path = tmp_path / "instances.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps({"kind": k, "instance": i}) for k, i in cases) + b"\n")
    client = built_client()
    script = tmp_path / "validate.mjs"
    strict = client.parent / "strict.js"
    script.write_text(VALIDATE_SCRIPT % (json.dumps(client.as_uri()), json.dumps(strict.as_uri())), encoding="utf-8")
    done = subprocess.run([str(NODE), str(script), str(path)], capture_output=True, text=True, timeout=300, check=True)
    results = json.loads(done.stdout)
    mismatches = [
        (kind, instance, _python_problems(instance, kind), ts)
        for (kind, instance), ts in zip(cases, results, strict=True)
        if _python_problems(instance, kind) != ts
    ]
    if mismatches:
        kind, instance, py, ts = mismatches[0]
        pytest.fail(
            f"{len(mismatches)} of {len(cases)} instances differ; first ({kind}): {json.dumps(instance)}\n"
            f" python {py}\n ts     {ts}"
        )
    assert sum(1 for r in results if r) > 3000  # most mutations break something
