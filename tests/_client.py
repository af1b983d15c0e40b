"""@agentmsg/client for the Python tests that run it in Node: its ``dist/`` is built (not committed), so
it is built here when its sources changed since the last build (``build.mjs --if-stale``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

NODE = shutil.which("node")
CLIENT_DIR = ROOT / "sdk" / "typescript"


def built_client() -> Path:
    """The client's ``dist/index.js``, built first when stale (needs Node and npm; the first build installs
    the pinned tooling with ``npm ci``)."""
    assert NODE is not None
    subprocess.run(
        [NODE, str(CLIENT_DIR / "scripts" / "build.mjs"), "--if-stale"],
        check=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    return CLIENT_DIR / "dist" / "index.js"
