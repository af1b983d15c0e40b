"""The AgentScope Java harness run (tests/java/run.sh), once per session for every test that reads what it wrote
(test_java.py, test_java_formatters.py: both on one pytest-xdist worker, xdist_group "java")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def java_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The harness's output folder: it builds the harness unless `make deps` did (on a fresh machine Maven downloads
    for minutes; run.sh bounds it at 1,200 s), then runs every mode."""
    out = tmp_path_factory.mktemp("java")
    r = subprocess.run(
        ["bash", str(ROOT / "tests" / "java" / "run.sh"), str(out)], capture_output=True, text=True, timeout=1260
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out
