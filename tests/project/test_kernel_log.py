"""``make test``'s pure-Python pass leaves out what the first pass found reaching no read-side C kernel
(``tests/conftest.py``, ``AGENTMSG_KERNEL_LOG``): a test that reaches one, starts a process or is new since runs
again; one that reached none, outside the selection's paths or marked ``kernel_only`` is not written down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentmsg import _native

ROOT = Path(__file__).resolve().parents[2]

_CONFTEST = """
from tests.conftest import _no_kernel_is_true, pytest_collection_modifyitems, pytest_configure, pytest_terminal_summary
"""

_FILE = """
import subprocess
import sys

import pytest

from agentmsg.providers import get
from agentmsg import TextBlock, UserMessage

BODY = (
    b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"}}]}\\n\\ndata: [DONE]\\n\\n'
)


def test_reads_a_stream():
    assert list(get("openai").parse_stream(BODY))


def test_formats_a_request():
    assert get("openai").format_request([UserMessage([TextBlock(text="q")])]).body


def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.kernel_only
def test_compares_a_kernel():
    pass
"""

_OTHER = """
def test_elsewhere():
    pass
"""


def _pytest(where: Path, log: Path, *args: str, pure: bool = False) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "AGENTMSG_KERNEL_LOG": str(log),
        "AGENTMSG_KERNEL_LOG_PATHS": "test_selected.py",
        # pytest alone: the other installed plugins (hypothesis, anyio, langsmith...) have no part in this and took
        # half of each run's start
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    env.pop("AGENTMSG_PURE_PYTHON", None)
    if pure:
        env["AGENTMSG_PURE_PYTHON"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.skipif(_native.speedups is None, reason="agentmsg's C speed-ups are not built: nothing reaches a kernel")
def test_the_pure_pass_leaves_out_only_what_reached_no_kernel(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    kernel_only: a C kernel's test\n")
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    (tmp_path / "test_selected.py").write_text(_FILE)
    (tmp_path / "test_other.py").write_text(_OTHER)
    log = tmp_path / "log"
    log.mkdir()
    (log / "stale.txt").write_text("test_selected.py::test_reads_a_stream\n")  # (a previous run's: removed)

    _pytest(tmp_path, log, "-q")
    written = sorted(line for path in log.glob("*.txt") for line in path.read_text().splitlines())
    assert written == ["test_selected.py::test_formats_a_request"]

    (tmp_path / "test_selected.py").write_text(_FILE + "\n\ndef test_new_since():\n    pass\n")
    kept = _pytest(tmp_path, log, "--collect-only", "-q", "test_selected.py", pure=True)
    assert [line for line in kept.splitlines() if "::" in line] == [
        "test_selected.py::test_reads_a_stream",
        "test_selected.py::test_starts_a_process",
        "test_selected.py::test_compares_a_kernel",
        "test_selected.py::test_new_since",
    ]
    assert "pure-Python pass: 1 tests the first pass ran reached no C kernel" in kept
