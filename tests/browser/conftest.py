"""Says plainly, at the end of any pytest run that collected tests/browser, whether the browser tests
ran (and in which Chromium) or were skipped (and why)."""

from __future__ import annotations

import subprocess
from typing import Any

from tests.browser._env import CHROMIUM, MISSING


def pytest_terminal_summary(terminalreporter: Any) -> None:
    ours = [r for key in ("passed", "failed", "skipped") for r in terminalreporter.stats.get(key, [])]
    ours = [
        r
        for r in ours
        if str(getattr(r, "nodeid", "")).startswith("tests/browser/") or "tests/browser/" in str(r.location[0])
    ]
    passed = [r for r in ours if r.outcome == "passed" and r.when == "call"]
    if MISSING:
        terminalreporter.write_line(f"browser tests SKIPPED: {MISSING}", yellow=True, bold=True)
    elif ours and not passed:
        terminalreporter.write_line("browser tests: none passed (see above)", red=True, bold=True)
    elif passed:
        try:
            version = subprocess.run(
                [str(CHROMIUM), "--version"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            version = ""
        terminalreporter.write_line(f"browser tests: {len(passed)} passed in {version or CHROMIUM} (headless)")
