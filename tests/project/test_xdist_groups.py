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
    # pytest and xdist alone: the other installed plugins (langsmith, hypothesis, anyio, ...), loaded by the run and
    # each of its workers, took 7 s of the test's 8 and have no part in grouping (no cache either: tmp_path is new)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-q"],
        cwd=tmp_path,
        env={**os.environ, "WHERE": str(where), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = where.read_text().split()
    assert len(workers) == 12
    assert len(set(workers)) == 1, f"the group ran on {sorted(set(workers))}: --dist loadgroup does not group"


def test_the_browser_driver_is_installed_one_worker_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a --dist mode that does not group (plain ``-n 2``) each worker starts its own Chromium, and each ran
    ``npm ci`` in tests/browser at once: npm's ENOTEMPTY, or a driver started while the other's npm ci had removed
    playwright-core. The install holds a lock the other workers wait on, and is skipped by those that find it done."""
    import fcntl

    from tests._support.procs import lock_file
    from tests.browser import _env

    for name in ("package.json", "package-lock.json"):
        (tmp_path / name).write_bytes((_env.HERE / name).read_bytes())
    runs: list[bool] = []

    def npm(args: list[str], **kwargs: object) -> None:
        with open(lock_file(tmp_path), "w") as probe:  # (another open file: as another worker's process)
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                runs.append(True)  # held by the install
            else:
                runs.append(False)
        (tmp_path / "node_modules").mkdir()

    monkeypatch.setattr(subprocess, "run", npm)  # (the module _env runs npm through)
    _env.install_driver(tmp_path)
    _env.install_driver(tmp_path)  # (done: no second npm ci)
    assert runs == [True]
