"""@agentmsg/client for the Python tests that run it in Node: its ``dist/`` is built (not committed), so
it is built here when its sources changed since the last build (``build.mjs --if-stale``)."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

NODE = shutil.which("node")
CLIENT_DIR = ROOT / "sdk" / "typescript"


def built_client() -> Path:
    """The client's ``dist/index.js``, built first when stale (needs Node and npm; the first build installs
    the pinned tooling with ``npm ci``). One build at a time: under pytest-xdist the workers that need the client
    wait on a lock while one builds (a build empties ``dist/`` first), then find it fresh."""
    assert NODE is not None
    lock = Path(tempfile.gettempdir()) / f"agentmsg-client-build-{hashlib.sha256(bytes(CLIENT_DIR)).hexdigest()[:16]}"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file is closed
        subprocess.run(
            [NODE, str(CLIENT_DIR / "scripts" / "build.mjs"), "--if-stale"],
            check=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
    return CLIENT_DIR / "dist" / "index.js"


def same_json(a: Any, b: Any) -> bool:
    """Whether a message from the client (parsed from its JSON) equals Python's: the same values with the
    same key order. What JavaScript cannot represent is compared as it can: a number by value (1500 and
    1500.0: JS has one number type), an integer beyond 2^53 as the double it becomes (JS numbers are
    doubles). A boolean equals only a boolean."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (max(abs(a), abs(b)) >= 2**53 and float(a) == float(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
