"""How much the fuzz and property tests (marker ``fuzz``) run.

A bare ``pytest`` runs them with the budgets written in the tests, ``make test`` with a quarter of each (``SHARE``): a
fixed number of Hypothesis examples (``examples(n)``) or of seeded rounds (``rounds(n)``), so a run is the same run
on a loaded machine and on an idle one. ``make fuzz`` selects them by marker and runs them longer:

* ``AGENTMSG_FUZZ_SCALE`` (there: 25) multiplies every example budget;
* ``AGENTMSG_FUZZ_SECONDS`` (there: 300), when set, turns each seeded loop into a time box of that many
  seconds (at least its ``make test`` rounds);
* ``AGENTMSG_FUZZ_SEED`` (there: a fresh one each run; default 0) seeds the seeded loops. Hypothesis picks
  a new random seed each run (``--hypothesis-seed=N`` replays one); a failure prints what reproduces it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

SCALE = max(1, int(os.environ.get("AGENTMSG_FUZZ_SCALE", "1") or "1"))
SECONDS = float(os.environ["AGENTMSG_FUZZ_SECONDS"]) if os.environ.get("AGENTMSG_FUZZ_SECONDS") else None
SEED = int(os.environ.get("AGENTMSG_FUZZ_SEED", "0") or "0")
#: The share of those budgets a pass takes (``AGENTMSG_FUZZ_SHARE``, above 0 up to 1; default 1, a bare ``pytest``):
#: both passes of ``make test`` (the C speed-ups, then pure Python) run every test with a quarter of each budget
#: (``make fuzz`` runs them longer in both configurations), so that the suite stays within its five minutes.
SHARE = min(1.0, float(os.environ.get("AGENTMSG_FUZZ_SHARE", "1") or "1"))
if not SHARE > 0:
    raise ValueError(f"AGENTMSG_FUZZ_SHARE is a share above 0 up to 1, not {os.environ['AGENTMSG_FUZZ_SHARE']!r}")


def examples(n: int) -> int:
    """The example budget of a test: ``n`` under a bare ``pytest``, ``n * AGENTMSG_FUZZ_SHARE`` (at least 1) in both
    passes of ``make test``, ``n * AGENTMSG_FUZZ_SCALE`` in ``make fuzz``."""
    return n * SCALE if SHARE == 1 else max(1, round(n * SCALE * SHARE))


def rounds(n: int, share: float = 1.0) -> Iterator[int]:
    """The round numbers (0, 1, ...) of a seeded fuzz loop: ``examples(n)`` rounds; with
    ``AGENTMSG_FUZZ_SECONDS`` set, as many as ``share`` of those seconds allow, and never fewer than ``n``."""
    if SECONDS is None:
        yield from range(examples(n))
        return
    deadline = time.monotonic() + SECONDS * share
    k = 0
    while k < n or time.monotonic() < deadline:
        yield k
        k += 1


def spread(choices: Sequence[T], i: int, k: int) -> list[T]:
    """The variants item ``i`` of a loop over many items (every vector) is run in: in ``make test``, ``k`` of
    ``choices`` spread over them (``i``, ``i + n/k``, ``i + 2n/k``, ...), and the next ones for item ``i + 1``, so
    that any ``n/k`` items in a row take every choice, at ``k/n`` of the cost; in ``make fuzz``
    (``AGENTMSG_FUZZ_SCALE`` above 1), every choice for every item."""
    n = len(choices)
    if SCALE > 1 or k >= n:
        return list(choices)
    return [choices[(i + m * (n // k)) % n] for m in range(k)]
