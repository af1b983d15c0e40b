"""JSON lines into the reducer: the reference (each line parsed and fed in turn) and the fast path that
gives the same result for a run of lines.

The fast path decodes a whole run in one msgspec call into small views (type, id, blockId,
toolCallId, delta). When the run is clean (one event object per line, known types, distinct ids none
of which is in the dedupe window, no subagent ``source``, no thinking ``signature``/``redactedData``),
its ids enter the window at once and every delta that the reply's routing table can place is appended
directly; any other line is parsed and applied as the reference does. A run that is not clean goes
through the reference. So messages and problems are exactly those of feeding the lines one by one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import orjson

from .._schemas import schema_documents
from ._handlers import apply
from ._state import CALL_DELTA, State, Text

Feed = Callable[[Any], None]


def parse_line(line: bytes, line_no: int) -> tuple[Any, str | None, str]:
    """``(event, rule, message)`` for one non-blank line. ``event`` is None when the line is not JSON
    (rule ``json``); a line that is JSON once its invalid UTF-8 is replaced by U+FFFD gives the event
    with rule ``utf-8`` (the change is reported, nothing else of the line is lost)."""
    try:
        return orjson.loads(line), None, ""
    except orjson.JSONDecodeError as exc:
        error = exc
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        try:
            event = orjson.loads(line.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            pass
        else:
            return event, "utf-8", f"line {line_no}: invalid UTF-8 at byte {bad.start}, replaced by U+FFFD"
    return None, "json", f"line {line_no}: not valid JSON: {error}"


def feed_lines(st: State, feed: Feed, lines: list[bytes], first_line: int) -> None:
    """The reference: each non-blank line parsed and fed (unparsable lines count as one event)."""
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        feed_line(st, feed, line, first_line + offset)


def feed_line(st: State, feed: Feed, line: bytes, line_no: int) -> None:
    event, rule, message = parse_line(line, line_no)
    if rule is not None:
        st.problem(st.count, "", rule, message)
        if event is None:
            st.count += 1
            return
    feed(event)


# A Literal of the schema's event types: msgspec returns the interned constant (no str allocation per
# event) and rejects unknown types, which sends the run through the reference path where they are
# reported. Derived from agent-event.schema.json, the one list of event types.
if TYPE_CHECKING:
    _EventType = str
else:
    _EventType = Literal[
        tuple(sys.intern(t) for t in schema_documents()["agent-event.schema.json"]["properties"]["type"]["enum"])
    ]


class _View(msgspec.Struct, gc=False):
    """The few keys of an event the fast path needs; the rest of a line is skipped by the decoder.
    Keys typed ``None`` make the decoder reject a run that sets them (a forwarded subagent event, a
    thinking delta carrying a signature or redacted data), which then takes the reference path: this
    costs nothing per event, where scanning the bytes for those keys cost more than the decoding."""

    type: _EventType
    id: str | None = None
    blockId: str | None = None
    toolCallId: str | None = None
    delta: str | None = None
    source: None = None
    signature: None = None
    redactedData: None = None


_views = msgspec.json.Decoder(_View)
_NO_ROUTES: dict[str, dict[str, Text]] = {}


def feed_run(st: State, feed: Feed, data: bytes, start: int, end: int, first_line: int) -> None:
    """Feed ``data[start:end]``, whole lines (the first one is line ``first_line``), as the reference does."""
    views: list[_View] | None = None
    if not st.strict and st.source is None:
        with memoryview(data) as view:
            try:
                views = _views.decode_lines(view[start:end])
            except (msgspec.DecodeError, UnicodeDecodeError, ValueError):
                views = None
        # decode_lines skips blank lines: their line numbers would not match.
        if views is not None and (
            len(views) != data.count(b"\n", start, end) + 1 or not st.window.add_fresh([v.id for v in views])  # type: ignore[misc]
        ):
            views = None
    if views is None:
        feed_lines(st, feed, data[start:end].split(b"\n"), first_line)
        return
    lines: list[bytes] | None = None
    base = st.count
    reply = st.reply
    routes = reply.routes if reply is not None else _NO_ROUTES
    calls = routes.get(CALL_DELTA)
    i = -1
    for v in views:
        i += 1
        table = routes.get(v.type)
        if table is not None:
            text = table.get(v.toolCallId if table is calls else v.blockId)  # type: ignore[arg-type]
            delta = v.delta
            if text is not None and delta is not None:
                text.append(delta)
                continue
        # Any other event: the full event, applied as feed() would (duplicates were checked above).
        if lines is None:
            lines = data[start:end].split(b"\n")
        st.count = base + i
        event, rule, message = parse_line(lines[i], first_line + i)
        if rule is not None:
            st.problem(base + i, "", rule, message)
        st.count = base + i + 1
        if type(event) is dict:  # msgspec decoded an object there, so orjson does too
            apply(st, event, base + i)
        reply = st.reply
        routes = reply.routes if reply is not None else _NO_ROUTES
        calls = routes.get(CALL_DELTA)
    st.count = base + len(views)
    if st.reply is not None:
        st.reply.sync()
