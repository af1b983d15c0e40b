"""The optional C kernels (``_speedups.c``: the JSON writer, the SSE event scanner, the reducer's delta loop, a
JSON string reader; ``_speedups.pyi`` states each one's contract), imported once.

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
