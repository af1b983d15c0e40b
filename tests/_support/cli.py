"""The ``agentmsg`` command run as users run it: a subprocess of this interpreter."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m agentmsg ARGS`` with ``stdin`` as its input: its exit status, stdout and stderr (text)."""
    return subprocess.run(
        [sys.executable, "-m", "agentmsg", *args], input=stdin, capture_output=True, text=True, timeout=120
    )
