"""What the browser tests need from the machine: a Chromium (Debian's package, or CHROMIUM=/path) and
Node.js; ``MISSING`` says what is not there (None when both are)."""

from __future__ import annotations

import os
import shutil

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
NODE = shutil.which("node")
MISSING = (
    "no Chromium found (install Debian's: apt-get install chromium; or set CHROMIUM=/path)"
    if not CHROMIUM
    else "no Node.js found (the browser driver needs node 20+ and npm)"
    if not NODE
    else None
)
