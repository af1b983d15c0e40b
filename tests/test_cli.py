"""The agentmsg command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GOOD = {
    "id": "m1",
    "name": None,
    "role": "USER",
    "content": [{"type": "text", "text": "hi"}],
    "metadata": {},
    "timestamp": None,
    "usage": None,
}
BAD = {"id": "m2", "role": "SYSTEM", "content": [{"type": "thinking", "thinking": "x"}]}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentmsg", *args], input=stdin, capture_output=True, text=True, timeout=120
    )


def test_validate_object_array_jsonl_and_stdin(tmp_path: Path) -> None:
    good, arr, jsonl = tmp_path / "good.json", tmp_path / "arr.json", tmp_path / "msgs.jsonl"
    good.write_text(json.dumps(GOOD))
    arr.write_text(json.dumps([GOOD, BAD]))
    jsonl.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(BAD) + "\n")
    r = run("validate", str(good))
    assert (r.returncode, r.stdout) == (0, "")
    r = run("validate", str(arr))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{arr}:/1/content/0/type: SYSTEM messages may only contain text blocks, got 'thinking' [role-content]"
    ]
    r = run("validate", str(jsonl), str(good))
    assert r.returncode == 1 and r.stdout.startswith(f"{jsonl}:/1/content/0/type:")
    r = run("validate", "-", stdin=json.dumps(BAD))
    assert r.returncode == 1 and r.stdout.startswith("-:/content/0/type:")
    r = run("validate", "--kind", "content-block", "-", stdin='{"type":"text"}')
    assert r.returncode == 1 and r.stdout.strip() == '-: "text" is a required property [required]'


def test_validate_bad_json_and_usage_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": ')
    r = run("validate", str(broken))
    assert r.returncode == 1 and "not valid JSON" in r.stdout
    r = run("validate", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read" in r.stderr
    assert run("validate").returncode == 2
    assert run("validate", "--kind", "nope", str(broken)).returncode == 2
    assert run("frobnicate").returncode == 2


def test_schema_listing_single_and_bundle() -> None:
    r = run("schema")
    assert r.returncode == 0 and "msg\thttps://agentmsg.dev/schemas/v1/msg.schema.json" in r.stdout
    doc = json.loads(run("schema", "content-block").stdout)
    assert doc["$id"].endswith("content-block.schema.json")
    bundle = json.loads(run("schema", "msg", "--bundle").stdout)
    assert bundle["$ref"] == "https://agentmsg.dev/schemas/v1/msg.schema.json"
    # The bundle is self-contained: python-jsonschema validates with it and no registry.
    import jsonschema

    validator = jsonschema.Draft202012Validator(bundle)
    assert validator.is_valid(GOOD) and not validator.is_valid(BAD)
    assert run("schema", "nope").returncode == 2
