from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "conformance" / "vectors"
SHARED = ROOT.parent / "shared"


def load_vectors(kind_file: str) -> dict[str, Any]:
    return json.loads((VECTORS / kind_file).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def schema_registry() -> Any:
    """python-jsonschema registry of every schema: the independent oracle."""
    from referencing import Registry, Resource

    resources = []
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


def pytest_report_header() -> str:
    """Say which agentmsg the suite tests: the installed wheel (`make test`) or a source tree."""
    import agentmsg

    how = "installed wheel" if os.environ.get("AGENTMSG_TEST_WHEEL") else "source tree / editable install"
    return f"agentmsg under test: {Path(agentmsg.__file__ or '').parent} ({how})"
