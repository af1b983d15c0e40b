"""``make test`` runs pytest with ``-n auto --dist loadgroup``: the tests of one ``xdist_group`` (the browser's one
Chromium, the AgentScope Java harness, the pre-commit store, the packaging builds) must run on one worker. pytest 9.2
with pytest-xdist 3.8 stopped grouping without a word (pytest-dev/pytest-xdist#1386: xdist marks a group in a node
id field pytest no longer reads): each worker started its own Chromium and loaded the reducer vectors' pages twice.
pyproject.toml keeps pytest below 9.2; this test says when the pair in use groups no longer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="pytest-xdist is not installed: nothing groups tests across workers")

_FILE = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(6))
def test_where(i):
    with open(os.environ["WHERE"], "a") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("i", range(6))
def test_elsewhere(i):
    pass
"""


def test_the_tests_of_an_xdist_group_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # (not this repository's configuration and conftest)
    (tmp_path / "test_a.py").write_text(_FILE)
    (tmp_path / "test_b.py").write_text(_FILE)
    where = tmp_path / "where.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        env={**os.environ, "WHERE": str(where)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = where.read_text().split()
    assert len(workers) == 12
    assert len(set(workers)) == 1, f"the group ran on {sorted(set(workers))}: --dist loadgroup does not group"
