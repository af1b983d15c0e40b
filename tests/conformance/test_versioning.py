"""Schema versioning: flipping or removing an existing vector needs a version bump and a changelog entry."""

from __future__ import annotations

import json
import re

from tests.conformance.lock_vectors import ROOT, changed, current, locked


def test_changed_vectors_need_a_version_bump_and_changelog() -> None:
    """A flip needs a bump (while the lock is the old version's), and the schemas' version its CHANGELOG.md entry
    always: the entry was checked only while a flip was unlocked, so a bump locked at once (`make vectors-lock`, as
    the message below says) passed without one."""
    lock = locked()
    now = current()
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(str(now['version']))}\b", changelog, re.M), (
        f"CHANGELOG.md has no '## {now['version']}' entry (schemas/VERSION.json): say what the version changed"
    )
    flipped = changed(lock, now)
    assert not flipped or now["version"] != lock["version"], (
        f"these vectors changed verdict or disappeared: {flipped}. That breaks existing readers/writers: bump "
        f"schemas/VERSION.json (now {now['version']}), add a CHANGELOG.md entry, then run `make vectors-lock`."
    )


def test_every_vector_is_locked() -> None:
    """A vector added after the lock was taken was guarded by nothing: a later change that flipped its verdict passed
    without a version bump (34 of 209 were not locked). Every vector's verdict is locked when it is added."""
    missing = sorted(set(current()["verdicts"]) - set(locked()["verdicts"]))
    assert not missing, (
        f"these vectors are not in tests/conformance/vectors.lock.json: {missing}. Run `make vectors-lock` and commit"
        " the lock (it pins their verdicts: a later flip needs a version bump)"
    )


def test_the_lock_is_of_the_schemas_version() -> None:
    """The lock guards the verdicts of the version it was taken at: with schemas/VERSION.json bumped and the lock left
    as it was, every later flip passed unguarded (the version differs from the lock's, whatever flips). A bump is
    locked with it."""
    lock = locked()
    now = current()
    assert lock["version"] == now["version"], (
        f"schemas/VERSION.json is {now['version']} but tests/conformance/vectors.lock.json was taken at "
        f"{lock['version']}: run `make vectors-lock` (after the CHANGELOG.md entry) and commit the lock"
    )


def test_version_is_semver_and_matches_the_ids() -> None:
    version = str(current()["version"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    for path in (ROOT / "schemas").glob("*.schema.json"):
        assert f"/schemas/v{version.split('.')[0]}/" in json.loads(path.read_text())["$id"]


def test_the_readme_names_the_tarballs_make_dist_packs() -> None:
    """README's install lines name dist/agentmsg-schema-<version>.tgz: a bump left them naming a file `make dist` no
    longer writes (and @agentmsg/client's, of sdk/typescript/package.json's version)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    client = json.loads((ROOT / "sdk" / "typescript" / "package.json").read_text(encoding="utf-8"))["version"]
    want = {"schema": str(current()["version"]), "client": client}
    named = re.findall(r"agentmsg-(schema|client)-(\d+\.\d+\.\d+)\.tgz", readme)
    assert named and all(version == want[package] for package, version in named), (named, want)
