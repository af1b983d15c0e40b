"""Instruction counts for the bench's ``--instructions`` modes (bench_formatters.py, bench_live.py): valgrind's
callgrind runs a child Python process that does its setup and warm-up uncounted, then each measured phase
inside ``sys.call_tracing`` (:func:`measured`), the only function callgrind collects in
(``--toggle-collect``); a dump after each (``--dump-after``) gives each phase's own count.

Instructions are deterministic and blind to the other processes of a shared machine and to its memory
hierarchy (a cache miss is one instruction, as a hit is); CPU time is what a user's machine spends. The
benches show both. A valgrind run is slow (Python runs some 50x slower): the counts run in a thread pool,
one child process per worker and core.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

#: The C function ``sys.call_tracing`` runs its argument in: callgrind collects inside it only.
TOGGLE = "_PyEval_CallTracing"
_TOTALS = re.compile(r"^(?:totals|summary):\s*(\d+)", re.MULTILINE)

Job = TypeVar("Job")


def available() -> bool:
    """Whether valgrind is on PATH (the ``--instructions`` modes say so and skip without it)."""
    return shutil.which("valgrind") is not None


def traceable() -> bool:
    """Whether callgrind finds :data:`TOGGLE` in this Python (one short valgrind run): a stripped build (a
    distribution's ``python3``) has no symbol for it, and every count would be nothing."""
    global _TRACEABLE
    if _TRACEABLE is None:
        probe = [sys.executable, "-S", "-c", "import sys; sys.call_tracing(sum, ([1, 2],))"]  # (-S: no site, a second)
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={TOGGLE}"]
        done = subprocess.run([*cmd, "--callgrind-out-file=/dev/null", *probe], capture_output=True, text=True)
        found = re.search(r"Collected : (\d+)", done.stderr)
        _TRACEABLE = done.returncode == 0 and found is not None and int(found.group(1)) > 0
    return _TRACEABLE


_TRACEABLE: bool | None = None
#: What the benches say where :func:`traceable` is False
UNTRACEABLE = (
    f"this Python ({sys.executable}) has no symbol for {TOGGLE} (a stripped build, such as a distribution's"
    " python3): callgrind counts nothing in it; run the bench with a Python built with its symbols (pyenv,"
    " python.org's builds)"
)


def measured(fn: Callable[[], Any]) -> None:
    """In the child: one measured phase, ``fn()`` inside ``sys.call_tracing`` (counted), the collector off."""
    gc.collect()
    gc.disable()
    try:
        sys.call_tracing(fn, ())
    finally:
        gc.enable()


def count(args: list[str], phases: int = 1) -> list[float]:
    """``python *args`` under callgrind: the instructions of each of its first ``phases`` measured phases, in
    order (nan for each when valgrind fails or counts nothing: the child's stderr then goes to ours)."""
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            f"--toggle-collect={TOGGLE}",
            f"--dump-after={TOGGLE}",
            f"--callgrind-out-file={out}",
            sys.executable,
            *args,
        ]
        env = dict(os.environ, PYTHONHASHSEED="0")
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        counts = [_totals(f"{out}.{i}") for i in range(1, phases + 1)]
        if done.returncode != 0 or any(c != c or c == 0 for c in counts):
            if done.returncode == 0 and not traceable():
                print(f"valgrind gave no count for {' '.join(args)}: {UNTRACEABLE}", file=sys.stderr)
                return [float("nan")] * phases
            tail = "\n".join(done.stderr.splitlines()[-15:])
            print(f"valgrind gave no count for {' '.join(args)} (exit {done.returncode}):\n{tail}", file=sys.stderr)
            return [float("nan")] * phases
        return counts


def _totals(path: str) -> float:
    try:
        with open(path) as f:
            found = _TOTALS.search(f.read())
    except OSError:
        return float("nan")
    return float(found.group(1)) if found else float("nan")


def count_all(jobs: Iterable[Job], counter: Callable[[Job], Any]) -> dict[Job, Any]:
    """``counter(job)`` of every job, in a thread pool (one valgrind child per core at a time)."""
    listed = list(jobs)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(listed, pool.map(counter, listed), strict=True))
