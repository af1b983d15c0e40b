"""Write tests/conformance/vectors.lock.json: the schema version and every vector's verdict.

Run by `make vectors-lock` after a deliberate, versioned change (see CHANGELOG.md)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def current() -> dict[str, object]:
    verdicts = {}
    for path in sorted((ROOT / "tests" / "conformance" / "vectors").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            verdicts[f"{doc['kind']}:{case['id']}"] = case["valid"]
    version = json.loads((ROOT / "schemas" / "VERSION.json").read_text(encoding="utf-8"))["version"]
    return {"version": version, "verdicts": verdicts}


if __name__ == "__main__":
    (ROOT / "tests" / "conformance" / "vectors.lock.json").write_text(
        json.dumps(current(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    print("wrote tests/conformance/vectors.lock.json")
