"""The optional C kernels (``_speedups.c``: the JSON writer, the SSE event scanner, the reducer's delta loop, a
JSON string reader; ``_speedups.pyi`` states each one's contract), imported once.

:data:`speedups` is the module where it was built (a C compiler at install time) and
``AGENTMSG_PURE_PYTHON`` does not turn it off (:data:`PURE_PYTHON`), else None: every caller then runs its
pure-Python path, which defines the results (the C paths are tested against it, byte for byte).
"""

from __future__ import annotations

import os
import types

#: Whether ``AGENTMSG_PURE_PYTHON`` turns the C kernels off: set to anything but nothing, ``0``, ``false``, ``no`` or
#: ``off`` (in any case; ``AGENTMSG_PURE_PYTHON=0`` turned them off too)
PURE_PYTHON: bool = os.environ.get("AGENTMSG_PURE_PYTHON", "").strip().lower() not in ("", "0", "false", "no", "off")

speedups: types.ModuleType | None
if PURE_PYTHON:
    speedups = None
else:
    try:
        from agentmsg import _speedups as speedups
    except ImportError:
        speedups = None
