"""Deep values for the depth and memory tests of the legacy-key readers: tool results nested in tool results'
output, their own size, and the memory a call allocates beyond what was held before it; arrays and objects nested
past the depth limit with what a pointer's scan of their text must pass over."""

from __future__ import annotations

import contextlib
import json
import sys
import tracemalloc
from collections.abc import Iterator
from typing import Any


def nested_arrays(depth: int, inner: Any = 1) -> Any:
    """``inner`` in ``depth`` arrays, one in another (``[[[1]]]`` for 3)."""
    value = inner
    for _ in range(depth):
        value = [value]
    return value


def nested_results(depth: int, uses: bool = False) -> Any:
    """A tool result nested ``depth`` deep in tool results' output, the innermost's output text (a legacy shape);
    ``uses``: each holds a legacy ``toolUseId`` too (a note per level)."""
    deep: Any = {"type": "tool_result", "id": "c", "name": "f", "output": "text"}
    for _ in range(depth):
        deep = {"type": "tool_result", "id": "c", "name": "f", "output": [deep]}
        if uses:
            deep["toolUseId"] = "c"
    return deep


def held_bytes(deep: Any) -> int:
    """What the dicts and lists of :func:`nested_results` hold (``sys.getsizeof``, level by level)."""
    size, node = 0, deep
    while type(node) is dict:
        size += sys.getsizeof(node) + sys.getsizeof(node["output"])
        node = node["output"][0] if type(node["output"]) is list else None
    return size


@contextlib.contextmanager
def allocated_peak() -> Iterator[list[int]]:
    """The most memory the ``with`` block held at once beyond what was held before it, in the list it gives (one
    number, once the block has ended: it may end by an exception, which goes on). tracemalloc is started here unless
    a caller traces already."""
    peak: list[int] = []
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        try:
            yield peak
        finally:
            peak.append(tracemalloc.get_traced_memory()[1] - before)
    finally:
        if not tracing:
            tracemalloc.stop()


# A key with the characters a pointer escapes, and strings of brackets and commas before each deeper member: what the
# scan of a text too deep for the parser (past about 1,000 levels) must pass over to name its pointer.
TRICKY_KEY = 'k/~"[{,'


def tricky_nest(levels: int) -> tuple[Any, str, list[str | int]]:
    """Arrays and objects nested ``levels`` deep, alternately, each after a string of brackets and commas: the value,
    its JSON text, and the steps from it to each level (the step into level ``i + 1`` is ``steps[i]``)."""
    nodes: list[Any] = [{"s": "}{,", TRICKY_KEY: None} if i % 2 == 0 else ["],[{", None] for i in range(levels)]
    steps: list[str | int] = [TRICKY_KEY if i % 2 == 0 else 1 for i in range(levels)]
    for i in range(levels):
        nodes[i][steps[i]] = nodes[i + 1] if i + 1 < levels else 1
    text = "1"
    for i in reversed(range(levels)):
        text = f'{{"s":"}}{{,",{json.dumps(TRICKY_KEY)}:{text}}}' if i % 2 == 0 else f'["],[{{",{text}]'
    return nodes[0], text, steps
