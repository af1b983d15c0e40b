"""The optional C speed-ups (``_speedups.c``: the JSON writer, the SSE event scanner, the
reducer's event loop), imported once.

:data:`speedups` is the module where it was built (a C compiler at install time) and
``AGENTMSG_PURE_PYTHON`` is not set, else None: every caller then runs its pure-Python path, which
defines the results (the C paths are tested against it, byte for byte).
"""

from __future__ import annotations

import os
import types

speedups: types.ModuleType | None
if os.environ.get("AGENTMSG_PURE_PYTHON"):
    speedups = None
else:
    try:
        from agentmsg import _speedups as speedups
    except ImportError:
        speedups = None
