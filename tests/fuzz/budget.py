"""How much the fuzz and property suites run.

``make test`` runs them with a bounded budget (the numbers in the tests); ``make fuzz`` sets
``AGENTMSG_FUZZ_SCALE`` (default there: 25) to run every test that many times longer. Hypothesis picks a
new random seed each run (``--hypothesis-seed=N`` to replay one); a failure prints the example to reproduce.
"""

from __future__ import annotations

import os

SCALE = max(1, int(os.environ.get("AGENTMSG_FUZZ_SCALE", "1") or "1"))


def examples(n: int) -> int:
    """The example budget of a test: ``n`` in ``make test``, ``n * AGENTMSG_FUZZ_SCALE`` in ``make fuzz``."""
    return n * SCALE
