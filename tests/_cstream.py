"""The whole-body fast paths (agentmsg._speedups.<provider>_stream, sdk/agentmsg/_csrc) against the Python
parsers, which define the results: the same events, key for key and in the same order, or the fast path gives
up (None). Both get the same event-id prefix and createdAt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from agentmsg.providers._builder import _id_counter, arguments_problem
from agentmsg.providers._stream import BaseStreamParser, run_parser

PREFIX = "0123456789abcdef012345"
STAMP = "2026-01-02T03:04:05.678901Z"


def python_events(parser: Callable[..., BaseStreamParser], body: bytes) -> list[dict[str, Any]]:
    return list(run_parser(parser(id_factory=_id_counter(PREFIX), clock=lambda: STAMP), body))


def fast_events(fast: Callable[..., Any], body: bytes) -> list[dict[str, Any]] | None:
    out = fast(body, PREFIX, STAMP, orjson.loads, arguments_problem)
    assert out is None or type(out) is list
    return out


def exact(value: Any) -> Any:
    """``value`` as nested lists in which every dict is its (key, value) pairs in order and every other value is
    (type, value): equal only when the values are, key order and types too, at every depth (``==`` tells neither
    a usage's key order nor ``True`` from ``1`` or ``2.0`` from ``2``)."""
    kind = type(value)
    if kind is dict:
        return [(k, exact(v)) for k, v in value.items()]
    if kind is list:
        return [exact(v) for v in value]
    return (kind, value)


def same_or_gives_up(parser: Callable[..., BaseStreamParser], fast: Callable[..., Any], body: bytes) -> bool:
    """The fast path's events are the parser's (True), or it gave up (False)."""
    got = fast_events(fast, body)
    if got is None:
        return False
    want = python_events(parser, body)
    assert [list(e.items()) for e in got] == [list(e.items()) for e in want]
    assert exact(got) == exact(want)
    return True
