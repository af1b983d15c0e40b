"""Schema versioning: flipping or removing an existing vector needs a version bump and a changelog entry."""

from __future__ import annotations

import json
import re

from tests.conformance.lock_vectors import ROOT, current


def test_changed_vectors_need_a_version_bump_and_changelog() -> None:
    lock = json.loads((ROOT / "tests" / "conformance" / "vectors.lock.json").read_text(encoding="utf-8"))
    now = current()
    changed = sorted(k for k, v in lock["verdicts"].items() if now["verdicts"].get(k) != v)  # type: ignore[attr-defined]
    if not changed:
        return
    assert now["version"] != lock["version"], (
        f"these vectors changed verdict or disappeared: {changed}. That breaks existing readers/writers: bump "
        f"schemas/VERSION.json (now {now['version']}), add a CHANGELOG.md entry, then run `make vectors-lock`."
    )
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(str(now['version']))}\b", changelog, re.M), (
        f"CHANGELOG.md has no '## {now['version']}' entry"
    )


def test_version_is_semver_and_matches_the_ids() -> None:
    version = str(current()["version"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    for path in (ROOT / "schemas").glob("*.schema.json"):
        assert f"/schemas/v{version.split('.')[0]}/" in json.loads(path.read_text())["$id"]
