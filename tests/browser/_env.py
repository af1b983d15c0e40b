"""What the browser tests need from the machine: a Chromium (Debian's package, or CHROMIUM=/path) and
Node.js; ``MISSING`` says what is not there (None when both are); ``install_driver()`` installs the driver's
playwright-core."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests._support.procs import one_at_a_time

HERE = Path(__file__).resolve().parent

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
NODE = shutil.which("node")
MISSING = (
    "no Chromium found (install Debian's: apt-get install chromium; or set CHROMIUM=/path)"
    if not CHROMIUM
    else "no Node.js found (the browser driver needs node 20+ and npm)"
    if not NODE
    else None
)


def install_driver(here: Path = HERE) -> None:
    """``npm ci`` in ``here`` when its package.json or package-lock.json changed since the last one. Each
    pytest-xdist worker that runs a browser test starts its own Chromium, so calls this: one at a time, the others
    find it done (two at once under --dist load failed: npm's ENOTEMPTY, and a driver started while the other
    worker's npm ci had removed playwright-core)."""
    stamp = here / "node_modules" / ".agentmsg-stamp"
    want = hashlib.sha256((here / "package.json").read_bytes() + (here / "package-lock.json").read_bytes()).hexdigest()
    with one_at_a_time(here):
        if stamp.exists() and stamp.read_text() == want:
            return
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=here,
            check=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        stamp.write_text(want)
