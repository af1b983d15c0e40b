"""Write tests/conformance/vectors.lock.json: the schema version and every vector's verdict.

Run by `make vectors-lock` when a vector is added (test_versioning says when one is not locked) and after a
deliberate, versioned change (see CHANGELOG.md). It refuses to lock a verdict that flipped, or a vector that went,
at the locked version: that needs the version bumped first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "tests" / "conformance" / "vectors.lock.json"


def current() -> dict[str, Any]:
    verdicts = {}
    for path in sorted((ROOT / "tests" / "conformance" / "vectors").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            verdicts[f"{doc['kind']}:{case['id']}"] = case["valid"]
    version = json.loads((ROOT / "schemas" / "VERSION.json").read_text(encoding="utf-8"))["version"]
    return {"version": version, "verdicts": verdicts}


def locked() -> dict[str, Any]:
    return dict(json.loads(LOCK.read_text(encoding="utf-8")))


def changed(lock: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The locked vectors whose verdict flipped, or that are gone."""
    return sorted(k for k, v in lock["verdicts"].items() if now["verdicts"].get(k) != v)


if __name__ == "__main__":
    now = current()
    lock = locked()
    flipped = changed(lock, now)
    if flipped and lock["version"] == now["version"]:
        raise SystemExit(
            f"not locked: these vectors changed verdict or disappeared at the locked version {now['version']}:"
            f" {flipped}. Bump schemas/VERSION.json and add a CHANGELOG.md entry first."
        )
    LOCK.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print("wrote tests/conformance/vectors.lock.json")
